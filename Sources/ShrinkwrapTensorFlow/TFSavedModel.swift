import Foundation
import ShrinkwrapIR
import TensorFlowSchema

/// A SavedModel: the MetaGraph tagged "serve" (else the first), one of its
/// signatures, and the variables in `variables/variables.*` beside saved_model.pb.
///
/// Variables are VarHandleOp nodes of the MetaGraph's graph, passed to the
/// signature's function as captured inputs. Which checkpoint entry holds one:
/// the object graph's concrete function lists the objects its captured inputs
/// are (`bound_inputs`), and node k of the checkpoint's own object graph
/// (`_CHECKPOINTABLE_OBJECT_GRAPH`, numbered as the SavedObjectGraph is) names
/// the entry of its VARIABLE_VALUE. Failing that, the variable's name
/// (shared_name) is looked up among the entries' full names, then as an entry
/// itself (TF1 checkpoints).
enum TFSavedModel {
    static func importModel(pb: URL, bytes: [UInt8], inputs: [String]?, outputs: [String]?, signature: String,
                            evaluate: ImportEvaluator? = nil) throws -> Graph {
        let file = pb.path
        let model: Tensorflow_SavedModel = try TensorBundle.message(bytes, file: file, place: "SavedModel")
        guard let meta = model.metaGraphs.first(where: { $0.metaInfoDef.tags.contains("serve") }) ?? model.metaGraphs.first else {
            throw ImportError.malformed(SourceLocation(file: file, place: "meta_graphs"), reason: "no MetaGraph")
        }
        let flat = try TFFlatGraph(graph: meta.graphDef, file: file)
        let (sigInputs, sigOutputs) = try signatureTensors(meta, signature, file: file)
        let ins = try inputs.map { try $0.map { name in (name, try sigInputs.first { $0.0 == name }?.1 ?? TensorFlowImporter.ref(name, flat)) } }
        let outs = try outputs.map { try $0.map { name in (name, try sigOutputs.first { $0.0 == name }?.1 ?? TensorFlowImporter.ref(name, flat)) } }
        let variables = Variables(folder: pb.deletingLastPathComponent(), meta: meta, file: file)
        var declared: [String: Tensorflow_TensorInfo] = [:]
        for (key, info) in meta.signatureDef[signature]?.outputs ?? [:] { declared[key] = info }
        return try TFGraphBuilder.build(flat, inputs: ins ?? sigInputs, outputs: outs ?? sigOutputs, declared: declared,
                                        variable: { try variables.tensor($0) }, evaluate: evaluate, version: "\(meta.graphDef.versions.producer)")
    }

    /// The signature's inputs and outputs, sorted by key, as (key, reference).
    static func signatureTensors(_ meta: Tensorflow_MetaGraphDef, _ name: String, file: String) throws -> ([(String, String)], [(String, String)]) {
        guard let sig = meta.signatureDef[name] else {
            let names = meta.signatureDef.keys.filter { !$0.hasPrefix("__") }.sorted()
            throw ImportError.unsupported(SourceLocation(file: file, place: "signature_def"),
                                          what: "no signature '\(name)' (the SavedModel has: \(names.isEmpty ? "none" : names.joined(separator: ", ")))")
        }
        func tensors(_ map: [String: Tensorflow_TensorInfo], _ what: String) throws -> [(String, String)] {
            try map.keys.sorted().compactMap { key in
                guard case .name(let t)? = map[key]?.encoding, let (node, k) = TFFlatGraph.split(t) else {
                    throw ImportError.unsupported(SourceLocation(file: file, place: "signature '\(name)' \(what) '\(key)'"), what: "a sparse or composite tensor")
                }
                return (key, "\(node):\(k)")
            }
        }
        let outs = try tensors(sig.outputs, "output")
        guard !outs.isEmpty else {
            throw ImportError.malformed(SourceLocation(file: file, place: "signature '\(name)'"), reason: "no outputs")
        }
        return (try tensors(sig.inputs, "input"), outs)
    }

    /// The SavedModel's variables, read when a VarHandleOp is translated.
    final class Variables {
        let folder: URL
        let meta: Tensorflow_MetaGraphDef
        let file: String
        private var bundle: TensorBundle?
        private var objects: Tensorflow_TrackableObjectGraph?
        /// VarHandleOp node name → object id, from the calls' bound inputs.
        private let boundIDs: [String: Int]

        init(folder: URL, meta: Tensorflow_MetaGraphDef, file: String) {
            self.folder = folder; self.meta = meta; self.file = file
            var ids: [String: Int] = [:]
            for node in meta.graphDef.node where TFFlatGraph.callOps.contains(node.op) {
                guard case .func(let f)? = node.attr["f"]?.value, let bound = meta.objectGraphDef.concreteFunctions[f.name]?.boundInputs,
                      !bound.isEmpty else { continue }
                let data = node.input.filter { !$0.hasPrefix("^") }
                guard data.count >= bound.count else { continue }
                for (input, id) in zip(data.suffix(bound.count), bound) {
                    if let (name, _) = TFFlatGraph.split(input) { ids[name] = Int(id) }
                }
            }
            boundIDs = ids
        }

        func tensor(_ op: TFOp) throws -> Tensor {
            let bundle = try openBundle()
            let key = try checkpointKey(op, bundle)
            return try bundle.tensor(key)
        }

        private func openBundle() throws -> TensorBundle {
            if let bundle { return bundle }
            let prefix = folder.appendingPathComponent("variables/variables")
            guard FileManager.default.fileExists(atPath: prefix.path + ".index") else {
                throw ImportError.unreadable(file: prefix.path + ".index", reason: "the SavedModel has variables but no variables/variables.index beside saved_model.pb")
            }
            let opened = try TensorBundle(prefix: prefix)
            bundle = opened
            objects = try opened.objectGraph()
            return opened
        }

        private func checkpointKey(_ op: TFOp, _ bundle: TensorBundle) throws -> String {
            let nodes = objects?.nodes ?? []
            if let id = boundIDs[op.name], id >= 0, id < nodes.count,
               let key = nodes[id].attributes.first(where: { $0.name == "VARIABLE_VALUE" })?.checkpointKey, bundle.contains(key) {
                return key
            }
            var shared = op.name
            if case .s(let s)? = op.attrs["shared_name"]?.value, !s.isEmpty { shared = String(decoding: s, as: UTF8.self) }
            for node in nodes {
                if let a = node.attributes.first(where: { $0.name == "VARIABLE_VALUE" && $0.fullName == shared }), bundle.contains(a.checkpointKey) {
                    return a.checkpointKey
                }
            }
            if bundle.contains(shared) { return shared }
            throw ImportError.unsupported(SourceLocation(file: file, place: "\(op.place) (VarHandleOp)"),
                                          what: "variable '\(shared)' has no entry in \(bundle.indexFile)")
        }
    }
}
