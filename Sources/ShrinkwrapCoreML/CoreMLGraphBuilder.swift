import CoreMLSchema
import ShrinkwrapIR

/// The graph under construction while layers are read, with the helpers the
/// layer readers share (constants, helper nodes, ranks, blob names).
struct GraphBuilderState {
    let file: String
    var graph = Graph()
    /// Rank-5 mapping (see `CoreMLImporter`): every blob is an IR value [1, C, H, W].
    var rank5 = true
    /// Core ML blob → the IR value that holds it.
    var blobs: [String: String] = [:]
    /// Rank of every IR value made so far (nil: unknown).
    var ranks: [String: Int] = [:]
    /// The last layer's first output (a classifier's default probability blob).
    var lastBlob = ""
    /// Every value and node name taken (shared with loop bodies, whose names must not clash).
    var usedNames = NameAllocator()
    private var unsupported: [String] = []
    /// int32 inputs cast to float (`asFloat`).
    private var floatInputs: [String: String] = [:]

    init(file: String) { self.file = file }

    func loc(_ place: String) -> SourceLocation { SourceLocation(file: file, place: place) }

    mutating func begin(graph g: Graph) {
        graph = g
        for i in g.inputs { usedNames.reserve(i.name); blobs[i.name] = i.name; ranks[i.name] = i.shape?.count }
    }

    // MARK: names, constants, nodes

    /// A value or node name not used yet.
    mutating func fresh(_ base: String) -> String { usedNames.fresh(base) }

    mutating func constant(_ base: String, _ e: WeightEncoding) -> String {
        let name = fresh(base)
        graph.setConstant(Constant(name: name, encoding: e))
        ranks[name] = e.shape.count
        return name
    }

    mutating func ints(_ base: String, _ v: [Int]) -> String {
        constant(base, .dense(Tensor(ints: v.map { Int64($0) }, shape: [v.count])))
    }

    mutating func floats(_ base: String, _ v: [Float], shape: [Int]? = nil) -> String {
        constant(base, .dense(Tensor(v, shape: shape ?? [v.count])))
    }

    /// Appends a node; returns its first output.
    @discardableResult
    mutating func node(_ op: String, _ name: String, _ inputs: [String], _ outputs: [String],
                       _ attributes: [String: Attribute] = [:], rank: Int?) -> String {
        graph.nodes.append(Node(name: fresh(name), opType: op, inputs: inputs, outputs: outputs, attributes: attributes))
        for o in outputs { ranks[o] = rank }
        return outputs.first ?? ""
    }

    /// A helper value (not a blob) for intermediate results.
    mutating func temp(_ base: String) -> String { fresh(base) }

    /// The IR value a layer input names.
    func value(_ blob: String, place: String) throws -> String {
        guard let v = blobs[blob] else {
            throw ImportError.malformed(loc(place), reason: "reads blob '\(blob.escapingControlCharacters)', which no earlier layer or input produces")
        }
        return v
    }

    /// Value `v` as float: an int32 model input (Core ML computes on floats) is cast once, for
    /// layers that mix it with float values; anything else is returned as it is.
    mutating func asFloat(_ v: String) -> String {
        guard graph.inputs.contains(where: { $0.name == v && $0.dtype == .int32 }) else { return v }
        if let c = floatInputs[v] { return c }
        let c = node("Cast", "\(v)_as_float", [v], [temp("\(v)_float")], ["to": .int(1)], rank: ranks[v])
        floatInputs[v] = c
        return c
    }

    /// Claims blob `name` as the output of a layer; returns the IR value name to write.
    mutating func define(_ blob: String, place: String) throws -> String {
        guard !blob.isEmpty else { throw ImportError.malformed(loc(place), reason: "empty output name") }
        let v = blobs[blob] == nil && !usedNames.isTaken(blob) ? blob : fresh(blob)
        usedNames.reserve(v)
        blobs[blob] = v
        return v
    }

    /// The weight encoding of `p` for `shape`; a wrong count is an error naming the place.
    func weight(_ p: CoreML_Specification_WeightParams, shape: [Int], place: String, axis: Int = 0) throws -> WeightEncoding {
        try CoreMLWeights.encoding(p, shape: shape, at: loc(place), axis: axis)
    }

    // MARK: network

    mutating func network(layers: [CoreML_Specification_NeuralNetworkLayer], preprocessing: [CoreML_Specification_NeuralNetworkPreprocessing],
                          exact: Bool, rank4Images: Bool, place: String) throws {
        rank5 = !exact
        if exact, !rank4Images, !graph.metadata.imageInputs.isEmpty {
            throw ImportError.unsupported(loc(place), what: "exact array mapping with rank-5 image mapping")
        }
        if rank5 { try rank5Inputs(place: place) }
        for (k, p) in preprocessing.enumerated() { try preprocess(p, place: "\(place).preprocessing[\(k)]") }
        try readLayers(layers, place: place)
    }

    /// Reads `layers` in order (a network's, or a loop's body or condition network).
    mutating func readLayers(_ layers: [CoreML_Specification_NeuralNetworkLayer], place: String) throws {
        // Outputs of layers that could not be read: layers reading them are skipped quietly,
        // so the error lists the layers that are actually unsupported.
        var unavailable = Set<String>()
        for (k, layer) in layers.enumerated() {
            let lp = "\(place).layers[\(k)] '\(layer.name.escapingControlCharacters)'"
            if layer.input.contains(where: unavailable.contains) { unavailable.formUnion(layer.output); continue }
            guard let kind = layer.layer else {
                unsupported.append("\(CoreMLLayerReaders.unknownKind(layer)) (layer '\(layer.name.escapingControlCharacters)'; unknown layer type)")
                _ = lp
                unavailable.formUnion(layer.output)
                continue
            }
            let key = CoreMLLayerReaders.kindName(kind)
            guard let reader = CoreMLLayerReaders.table[key] else {
                unsupported.append("\(key) (layer '\(layer.name.escapingControlCharacters)')")
                unavailable.formUnion(layer.output)
                continue
            }
            do {
                try reader(&self, layer, lp)
                if layer.isUpdatable { graph.metadata.updatableNodes.append(layer.name) }
                if let o = layer.output.first { lastBlob = o }
            } catch let e as LayerReaderError {
                unsupported.append("\(key) (layer '\(layer.name.escapingControlCharacters)': \(e.reason))")
                unavailable.formUnion(layer.output)
            }
        }
        if !unsupported.isEmpty { throw ImportError.unsupportedOps(file: file, ops: unsupported) }
    }

    /// Rank-5 mapping: [C] inputs become [1, C] values, seen by layers as [1, C, 1, 1] blobs;
    /// [C, H, W] inputs become [1, C, H, W].
    mutating func rank5Inputs(place: String) throws {
        let images = Set(graph.metadata.imageInputs.map(\.name))
        for (k, i) in graph.inputs.enumerated() where !images.contains(i.name) && blobs[i.name] == i.name && ranks[i.name] != 2 && ranks[i.name] != 4 {
            guard let s = i.staticShape else { continue }
            switch s.count {
            case 1:
                graph.inputs[k].shape = [.fixed(1), .fixed(s[0])]
                ranks[i.name] = 2
                let v = temp("\(i.name)_blob")
                node("Reshape", "\(i.name)_to_blob", [i.name, ints("\(i.name)_blob_shape", [1, s[0], 1, 1])], [v], rank: 4)
                blobs[i.name] = v
            case 3:
                graph.inputs[k].shape = [.fixed(1)] + s.map { .fixed($0) }
                ranks[i.name] = 4
            default:
                throw ImportError.unsupported(loc("\(place) input '\(i.name)'"),
                                              what: "rank-\(s.count) input with the rank-5 mapping (expected [C] or [C, H, W])")
            }
        }
    }

    /// Image scaler / mean image as nodes after the input.
    mutating func preprocess(_ p: CoreML_Specification_NeuralNetworkPreprocessing, place: String) throws {
        guard let image = graph.metadata.imageInputs.first(where: { $0.name == p.featureName }), let src = blobs[p.featureName] else {
            throw ImportError.malformed(loc(place), reason: "preprocessing for '\(p.featureName)', which is not an image input")
        }
        let c = image.color.channels
        switch p.preprocessor {
        case .scaler(let s)?:
            var v = src
            if s.channelScale != 1 {
                let o = temp("\(p.featureName)_scaled")
                v = node("Mul", "\(p.featureName)_scale", [v, floats("\(p.featureName)_channel_scale", [s.channelScale], shape: [])], [o], rank: 4)
            }
            let bias: [Float]
            switch image.color {
            case .gray: bias = [s.grayBias]
            case .rgb: bias = [s.redBias, s.greenBias, s.blueBias]
            case .bgr: bias = [s.blueBias, s.greenBias, s.redBias]
            }
            if bias.contains(where: { $0 != 0 }) {
                let o = temp("\(p.featureName)_biased")
                v = node("Add", "\(p.featureName)_bias", [v, floats("\(p.featureName)_channel_bias", bias, shape: [1, c, 1, 1])], [o], rank: 4)
            }
            blobs[p.featureName] = v
        case .meanImage(let m)?:
            guard let s = graph.inputs.first(where: { $0.name == p.featureName })?.staticShape, m.meanImage.count == s.reduce(1, *) else {
                throw ImportError.malformed(loc(place), reason: "mean image has \(m.meanImage.count) values; the image has a different size")
            }
            let o = temp("\(p.featureName)_centered")
            blobs[p.featureName] = node("Sub", "\(p.featureName)_mean", [src, floats("\(p.featureName)_mean_image", m.meanImage, shape: s)], [o], rank: 4)
        case nil:
            break
        }
    }

    // MARK: outputs

    /// The IR value for a multi-array output. Rank-5 blobs are reshaped to [1] + the declared shape.
    mutating func output(_ name: String, declared: [Int], place: String) throws -> String {
        let v = try value(name, place: place)
        if rank5, !declared.isEmpty {
            guard declared.allSatisfy({ $0 > 0 }), checkedElementCount(declared) != nil else {
                throw ImportError.malformed(loc(place), reason: "declared shape \(declared)")
            }
            if declared.count == 3, ranks[v] == 4 { return try renameOutput(v, to: name) }
            let o = v == name ? fresh("\(name)_out") : name
            if v == name { try rename(value: v, to: o) }
            usedNames.reserve(name)
            node("Reshape", "\(name)_declared_shape", [v == name ? o : v, ints("\(name)_shape", [1] + declared)], [name], rank: declared.count + 1)
            return name
        }
        return try renameOutput(v, to: name)
    }

    /// A classifier's probabilities (blob of any rank-5/ND shape) as a [1, classes] output named `name`.
    mutating func probabilities(_ name: String, blob: String, classes: Int, place: String) throws -> String {
        let v = try value(blob, place: place)
        let shaped: String
        if rank5 || (ranks[v] ?? 2) != 2 {
            let t = v == name ? fresh("\(name)_tensor") : name
            if v == name { try rename(value: v, to: t) }
            usedNames.reserve(name)
            node("Reshape", "\(name)_vector", [v == name ? t : v, ints("\(name)_shape", [1, classes > 0 ? classes : -1])], [name], rank: 2)
            shaped = name
        } else {
            shaped = try renameOutput(v, to: name)
        }
        return shaped
    }

    /// Makes value `v` available under `name` (an Identity when the names differ).
    mutating func renameOutput(_ v: String, to name: String) throws -> String {
        if v == name { return v }
        if graph.nodes.contains(where: { $0.opType == "Loop" && $0.outputs.contains(v) }), graph.nodes.contains(where: { $0.outputs.contains(name) }) {
            // A loop's final value of a blob first made before the loop: the earlier value is renamed.
            try rename(value: name, to: fresh("\(name)_initial"))
            node("Identity", "\(name)_output", [v], [name], rank: ranks[v])
            return name
        }
        if usedNames.isTaken(name), graph.nodes.contains(where: { $0.outputs.contains(name) }) || graph.isConstant(name) {
            return v
        }
        usedNames.reserve(name)
        node("Identity", "\(name)_output", [v], [name], rank: ranks[v])
        return name
    }

    /// Renames an existing node output (so an output name can be taken by a final reshape).
    mutating func rename(value old: String, to new: String) throws {
        for k in graph.nodes.indices {
            for (j, o) in graph.nodes[k].outputs.enumerated() where o == old { graph.nodes[k].outputs[j] = new }
            for (j, i) in graph.nodes[k].inputs.enumerated() where i == old { graph.nodes[k].inputs[j] = new }
            for (key, sub) in graph.nodes[k].subgraphs { graph.nodes[k].attributes[key] = .graph(sub.renamingCaptures([old: new])) }
        }
        for (b, v) in blobs where v == old { blobs[b] = new }
        ranks[new] = ranks[old]
    }
}

/// A layer the importer cannot express, with the reason (collected, then reported together).
struct LayerReaderError: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
