import Foundation
import HDF5
import ShrinkwrapIR
import ZipArchive

/// Imports Keras models: Keras 2 `.h5` (HDF5 with the `model_config` attribute and
/// `model_weights`) and Keras 3 `.keras` (a ZIP of `config.json`, `metadata.json`
/// and `model.weights.h5`), Sequential and Functional, nested models included.
public enum KerasImporter {
    static let hdf5Signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

    public static func importModel(at url: URL) throws -> Graph {
        let data: Data
        do { data = try Data(contentsOf: url, options: .mappedIfSafe) } catch {
            throw ImportError.unreadable(file: url.path, reason: (error as NSError).localizedDescription)
        }
        return try importModel(bytes: Array(data), file: url.path)
    }

    /// Whether `bytes` start like a file this importer reads (HDF5, or a ZIP holding config.json).
    public static func recognizes(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: hdf5Signature) || (bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) && (try? ZipArchive(bytes: bytes, file: "").entry(named: "config.json")) != nil)
    }

    /// `limit`: the most bytes one HDF5 dataset or attribute may take once read (and inflated).
    public static func importModel(bytes: [UInt8], file: String, limit: Int = HDF5File.defaultLimit) throws -> Graph {
        if bytes.starts(with: [0x50, 0x4B]) { return try importKeras3(bytes: bytes, file: file, limit: limit) }
        return try importKeras2(bytes: bytes, file: file, limit: limit)
    }

    /// Layer classes the importer translates (nested Functional / Sequential models too), sorted.
    public static var supportedLayers: [String] { (Array(KerasLayers.table.keys) + KerasTopology.modelClasses).sorted() }

    // MARK: - Keras 2 .h5

    static func importKeras2(bytes: [UInt8], file: String, limit: Int) throws -> Graph {
        let h5 = try openHDF5(bytes, file: file, place: "", limit: limit)
        let root = h5.root
        func text(_ name: String) throws -> String? {
            let a: HDF5Attribute?
            do { a = try root.attribute(name) } catch let e as HDF5Error { throw ImportError.malformed(SourceLocation(file: file, place: "attribute '\(name)'"), reason: "\(e)") }
            guard let a else { return nil }
            guard case .strings(let s) = a.value, s.count == 1, let t = s.first else {
                throw ImportError.malformed(SourceLocation(file: file, place: "attribute '\(name)'"), reason: "not a string")
            }
            return t
        }
        guard let configText = try text("model_config") else {
            let weightsOnly = (try? root.attribute("layer_names")) != nil
            throw ImportError.unsupported(SourceLocation(file: file, place: "root group"),
                                          what: weightsOnly ? "a weights-only file (save_weights) without the model's configuration: save the model itself"
                                                            : "an HDF5 file without a Keras model_config attribute")
        }
        let version = try text("keras_version") ?? "2"
        let config = try KerasJSON.parse(Array(configText.utf8), file: file, place: "attribute 'model_config'")
        let hasWeights = (try? h5.object(at: "model_weights")) != nil
        let weights = hasWeights ? KerasWeights(h5: h5, layout: .keras2(root: "model_weights"), file: file) : nil
        return try build(config: config, weights: weights, version: version, file: file, format: "keras-h5")
    }

    // MARK: - Keras 3 .keras

    static func importKeras3(bytes: [UInt8], file: String, limit: Int) throws -> Graph {
        let zip: ZipArchive
        do { zip = try ZipArchive(bytes: bytes, file: file) } catch let e as ZipArchive.Error {
            throw ImportError.malformed(SourceLocation(file: file), reason: "\(e)")
        }
        func member(_ name: String) throws -> [UInt8]? {
            guard zip.entry(named: name) != nil else { return nil }
            do { return try zip.contents(ofMember: name) } catch let e as ZipArchive.Error {
                throw ImportError.malformed(SourceLocation(file: file, place: name), reason: "\(e)")
            }
        }
        guard let configBytes = try member("config.json") else {
            throw ImportError.malformed(SourceLocation(file: file), reason: "a ZIP without config.json (not a .keras model)")
        }
        let config = try KerasJSON.parse(configBytes, file: file, place: "config.json")
        var version = "3"
        if let meta = try member("metadata.json"), let v = try KerasJSON.parse(meta, file: file, place: "metadata.json")["keras_version"]?.string {
            version = v
        }
        var weights: KerasWeights?
        if let w = try member("model.weights.h5") {
            weights = KerasWeights(h5: try openHDF5(w, file: file, place: "model.weights.h5", limit: limit), layout: .keras3, file: file + ":model.weights.h5")
        }
        return try build(config: config, weights: weights, version: version, file: file, format: "keras")
    }

    static func openHDF5(_ bytes: [UInt8], file: String, place: String, limit: Int) throws -> HDF5File {
        do { return try HDF5File(bytes: bytes, file: place.isEmpty ? file : file + ":" + place, limit: limit) } catch let e as HDF5Error {
            throw ImportError.malformed(SourceLocation(file: file, place: place), reason: "\(e)")
        }
    }

    // MARK: - Graph

    static func build(config: KerasJSON, weights: KerasWeights?, version: String, file: String, format: String) throws -> Graph {
        let topology = try KerasTopology.parse(config, file: file, place: "model")
        let unknown = try KerasContext.unknownLayers(topology, file: file)
        if !unknown.isEmpty { throw ImportError.unsupportedOps(file: file, ops: unknown) }
        var c = KerasContext(file: file, weights: weights, kerasVersion: version)
        var inputs: [ValueInfo] = []
        let outs = try c.translate(topology, inputs: nil, scope: [], graphInputs: &inputs)
        // Outputs under the output layers' names (a value that is an input, or another output too, gets an Identity).
        var taken = Set(inputs.map(\.name)).union(c.nodes.flatMap { $0.inputs + $0.outputs }).union(c.constants.map(\.name))
        var outputs: [ValueInfo] = []
        var renamed: [String: String] = [:]
        for (i, o) in outs.enumerated() {
            var v = o
            v.name = renamed[o.name] ?? o.name
            var want = topology.outputs[i].layer
            var k = 1
            while taken.contains(want) && !(want == v.name) { want = "\(topology.outputs[i].layer)_\(k)"; k += 1 }
            var name = v.name
            if inputs.contains(where: { $0.name == v.name }) || renamed[o.name] != nil {
                c.nodes.append(Node(name: want, opType: "Identity", inputs: [v.name], outputs: [want]))
                c.names.reserve(want)
                name = want
            } else if want != v.name {
                for j in c.nodes.indices {
                    c.nodes[j].inputs = c.nodes[j].inputs.map { $0 == v.name ? want : $0 }
                    c.nodes[j].outputs = c.nodes[j].outputs.map { $0 == v.name ? want : $0 }
                }
                name = want
                renamed[o.name] = want
            }
            taken.insert(name)
            outputs.append(ValueInfo(name: name, dtype: .float32, shape: v.shape.enumerated().map { k, d in
                d.map(Dim.fixed) ?? .symbolic(k == 0 ? "batch" : "\(name)_d\(k)")
            }))
        }
        var g = Graph(name: topology.name, inputs: inputs, outputs: outputs, nodes: c.nodes.cancellingInverseTransposes(keeping: Set(outputs.map(\.name))),
                      constants: [], sourceFormat: format, sourceVersion: "Keras \(version)")
        let read = Set(g.nodes.flatMap(\.inputs))
        for k in c.constants where read.contains(k.name) { g.setConstant(k) }
        g.metadata.producerName = "Keras"
        g.metadata.producerVersion = version
        return try g.validatedAndSorted().checkedAgainstOpTable(file: file)
    }
}
