import Foundation
import ShrinkwrapIR
import TensorFlowSchema

/// Reads TensorFlow models: a frozen GraphDef (`.pb`, weights in Const nodes)
/// or a SavedModel folder (`saved_model.pb` + `variables/`), whose signature
/// names the graph's inputs and outputs. TF2 SavedModels run their
/// computation in library functions called by (Stateful)PartitionedCall
/// nodes: the bodies are inlined, and the variables they read become
/// constants from the tensor bundle.
///
/// TensorFlow computes NHWC: values keep TensorFlow's layout, and the ops
/// whose IR form is channels-first (convolutions, pooling, resizing) are
/// wrapped in Transposes, the pairs that cancel removed at the end.
public enum TensorFlowImporter {
    /// Imports a frozen GraphDef file or a SavedModel (its folder, or its saved_model.pb).
    /// `inputs` / `outputs` name tensors ("name" or "name:0"; for a SavedModel also
    /// signature keys) to use instead of the placeholders / the signature's outputs.
    /// `evaluate` computes values the graph derives from input shapes (loops'
    /// trip counts); without it, loops whose trip count is not a constant are refused.
    public static func importModel(at url: URL, inputs: [String]? = nil, outputs: [String]? = nil,
                                   signature: String = "serving_default", evaluate: ImportEvaluator? = nil) throws -> Graph {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) else {
            throw ImportError.unreadable(file: url.path, reason: "no such file or folder")
        }
        if isDir.boolValue {
            let pb = url.appendingPathComponent("saved_model.pb")
            guard FileManager.default.fileExists(atPath: pb.path) else {
                throw ImportError.unreadable(file: url.path, reason: "a folder without saved_model.pb (not a SavedModel)")
            }
            return try TFSavedModel.importModel(pb: pb, bytes: try read(pb), inputs: inputs, outputs: outputs, signature: signature, evaluate: evaluate)
        }
        let bytes = try read(url)
        if url.lastPathComponent == "saved_model.pb" {
            return try TFSavedModel.importModel(pb: url, bytes: bytes, inputs: inputs, outputs: outputs, signature: signature, evaluate: evaluate)
        }
        return try importGraphDef(bytes: bytes, file: url.path, inputs: inputs, outputs: outputs, evaluate: evaluate)
    }

    /// A frozen GraphDef's bytes.
    public static func importGraphDef(bytes: [UInt8], file: String, inputs: [String]? = nil, outputs: [String]? = nil,
                                      evaluate: ImportEvaluator? = nil) throws -> Graph {
        let def: Tensorflow_GraphDef = try TensorBundle.message(bytes, file: file, place: "GraphDef")
        let flat = try TFFlatGraph(graph: def, file: file)
        let outs = try outputs.map { try $0.map { ($0, try ref($0, flat)) } } ?? unreadOutputs(flat)
        let ins = try inputs.map { try $0.map { ($0, try ref($0, flat)) } }
        return try TFGraphBuilder.build(flat, inputs: ins, outputs: outs, found: outputs == nil, variable: { op in
            throw ImportError.unsupported(SourceLocation(file: file, place: op.place), what: "a variable in a GraphDef (freeze the graph first)")
        }, evaluate: evaluate, version: "\(def.versions.producer)")
    }

    /// The ops the importer translates, sorted (not its own `_TF1Loop`, which stands for a TF1 frame).
    public static var supportedOps: [String] { TFOps.table.keys.filter { !$0.hasPrefix("_") }.sorted() }

    // MARK: - Helpers

    static func read(_ url: URL) throws -> [UInt8] {
        do { return [UInt8](try Data(contentsOf: url, options: .mappedIfSafe)) } catch {
            throw ImportError.unreadable(file: url.path, reason: (error as NSError).localizedDescription)
        }
    }

    /// "name" or "name:k" as a reference "name:k" to an existing node.
    static func ref(_ name: String, _ flat: TFFlatGraph) throws -> String {
        guard let (node, k) = TFFlatGraph.split(name), flat.producer(of: "\(node):\(k)") != nil else {
            throw ImportError.malformed(SourceLocation(file: flat.file, place: "tensor '\(name)'"), reason: "no node of this name")
        }
        return "\(node):\(k)"
    }

    /// Ops that read nothing useful to anyone: never outputs.
    static let notOutputs: Set<String> = ["Const", "NoOp", "Assert", "Placeholder", "VarHandleOp", "Print", "PrintV2", "SaveV2",
                                          "RestoreV2", "AssignVariableOp", "MergeV2Checkpoints", "ShardedFilename", "StringJoin"]

    /// Output 0 of every op whose outputs no op reads, nor waits for (in file order), named after the node;
    /// ops that read no Placeholder (directly or not: a frozen variable's leftover
    /// Identity) are not outputs unless nothing else is.
    static func unreadOutputs(_ flat: TFFlatGraph) throws -> [(String, String)] {
        var read = flat.controlRead
        var readers: [String: [Int]] = [:]
        for (k, op) in flat.ops.enumerated() {
            for i in op.inputs {
                guard let (name, _) = TFFlatGraph.split(flat.resolve(i)) else { continue }
                read.insert(name)
                readers[name, default: []].append(k)
            }
        }
        var fed = Set(flat.ops.indices.filter { flat.ops[$0].op == "Placeholder" })
        var pending = Array(fed)
        while let k = pending.popLast() {
            for r in readers[flat.ops[k].name] ?? [] where fed.insert(r).inserted { pending.append(r) }
        }
        // A TF1 cond's pivots (switch_t / switch_f: Identities of a Switch that only control inputs wait for) are not outputs.
        func pivot(_ op: TFOp) -> Bool {
            !op.inputs.isEmpty && op.inputs.allSatisfy { ["Switch", "RefSwitch"].contains(flat.producer(of: $0)?.op.op ?? "") }
        }
        let unread = flat.ops.indices.filter { !read.contains(flat.ops[$0].name) && !notOutputs.contains(flat.ops[$0].op) && !pivot(flat.ops[$0]) }
        let chosen = unread.contains(where: fed.contains) ? unread.filter(fed.contains) : unread
        guard !chosen.isEmpty else {
            throw ImportError.malformed(SourceLocation(file: flat.file, place: "GraphDef"), reason: "no output: every node's result is read by another")
        }
        return chosen.map { (flat.ops[$0].name, "\(flat.ops[$0].name):0") }
    }
}
