import Foundation
import ShrinkwrapCoreML
import ShrinkwrapIR

/// What `shrinkwrap inspect` reports about a model.
public struct Inspection: Codable, Sendable {
    public struct Value: Codable, Sendable {
        public var name: String
        public var dtype: String
        public var shape: [String]
        /// "image RGB / BGR / GRAY" for an input apps feed as an image.
        public var image: String?
        /// "(x − mean) / std" with the values, for an input the file says apps normalize (TFLite metadata).
        public var normalization: String?
    }
    public struct Weight: Codable, Sendable {
        public var name: String
        public var dtype: String
        public var encoding: String
        public var shape: [Int]
        public var bytes: Int
        /// Scales or tables of a compressed weight (`WeightEncoding.layout`).
        public var layout: String?
        /// The file's own form of it, when the format has several (an ML Program's constexpr op).
        public var storedAs: String?
    }
    public var file: String
    public var format: String
    public var formatVersion: String
    public var producer: String
    public var graphName: String
    public var inputs: [Value]
    public var outputs: [Value]
    public var nodeCount: Int
    /// Op → count, sorted by count then name.
    public var ops: [OpCount]
    public var weightCount: Int
    public var weightBytes: Int
    public var largestWeights: [Weight]
    public var metadata: [String: String]
    public var labels: [String]

    public struct OpCount: Codable, Sendable { public var op: String; public var count: Int }
    /// What If branches and Loop bodies hold, at any depth (nil without control flow).
    public struct Subgraphs: Codable, Sendable {
        public var count: Int
        public var nodeCount: Int
        public var ops: [OpCount]
        public var weightCount: Int
        public var weightBytes: Int
    }
    public var subgraphs: Subgraphs?
    /// The file's own program, when its ops are not the IR's (an ML Program's MIL ops, at any depth).
    public struct Program: Codable, Sendable {
        public var opset: String
        public var ops: [OpCount]
        /// Compressed weight name → the op that stores it.
        public var weightOps: [String: String]
        public init(opset: String, ops: [String: Int], weightOps: [String: String]) {
            self.opset = opset
            self.ops = ops.map { OpCount(op: $0.key, count: $0.value) }.sorted { ($0.count, $1.op) > ($1.count, $0.op) }
            self.weightOps = weightOps
        }
    }
    public var program: Program?

    public init(graph g: Graph, file: String, program: Program? = nil, largest: Int = 5) {
        func value(_ v: ValueInfo) -> Value {
            let image = g.metadata.imageInputs.first { $0.name == v.name }.map { "image \($0.color.rawValue.uppercased())" }
            let norm = g.metadata.normalization(of: v.name).map { n -> String in
                func list(_ a: [Float]) -> String { a.count == 1 ? "\(a[0])" : "[" + a.map { "\($0)" }.joined(separator: ", ") + "]" }
                return "(x − \(list(n.mean))) / \(list(n.std))"
            }
            return Value(name: v.name, dtype: v.dtype?.rawValue ?? "?", shape: v.shape?.map(\.description) ?? ["?"], image: image,
                         normalization: norm)
        }
        self.file = file
        format = g.sourceFormat
        formatVersion = g.sourceVersion
        producer = [g.metadata.producerName, g.metadata.producerVersion].filter { !$0.isEmpty }.joined(separator: " ")
        graphName = g.name
        inputs = g.runtimeInputs.map(value)
        outputs = g.outputs.map(value)
        nodeCount = g.nodes.count
        var hist: [String: Int] = [:]
        for n in g.nodes { hist[n.opType, default: 0] += 1 }
        ops = hist.map { OpCount(op: $0.key, count: $0.value) }.sorted { ($0.count, $1.op) > ($1.count, $0.op) }
        let subs = g.allSubgraphs
        if !subs.isEmpty {
            var inner: [String: Int] = [:]
            for s in subs { for n in s.nodes { inner[n.opType, default: 0] += 1 } }
            let constants = subs.flatMap(\.constants)
            subgraphs = Subgraphs(count: subs.count, nodeCount: subs.reduce(0) { $0 + $1.nodes.count },
                                  ops: inner.map { OpCount(op: $0.key, count: $0.value) }.sorted { ($0.count, $1.op) > ($1.count, $0.op) },
                                  weightCount: constants.count, weightBytes: constants.reduce(0) { $0 + $1.encoding.storageBytes })
        }
        self.program = program
        let weights = g.constants.map {
            Weight(name: $0.name, dtype: $0.encoding.dtype.rawValue, encoding: $0.encoding.kind,
                   shape: $0.encoding.shape, bytes: $0.encoding.storageBytes, layout: $0.encoding.layout, storedAs: program?.weightOps[$0.name])
        }
        weightCount = weights.count
        weightBytes = weights.reduce(0) { $0 + $1.bytes }
        largestWeights = Array(weights.sorted { ($0.bytes, $1.name) > ($1.bytes, $0.name) }.prefix(largest))
        var md: [String: String] = [:]
        if !g.metadata.docString.isEmpty { md["doc_string"] = g.metadata.docString }
        if !g.metadata.domain.isEmpty { md["domain"] = g.metadata.domain }
        if g.metadata.modelVersion != 0 { md["model_version"] = String(g.metadata.modelVersion) }
        if !g.metadata.author.isEmpty { md["author"] = g.metadata.author }
        if !g.metadata.license.isEmpty { md["license"] = g.metadata.license }
        if !g.metadata.updatableNodes.isEmpty { md["updatable_layers"] = g.metadata.updatableNodes.joined(separator: ", ") }
        for p in g.metadata.properties { md[p.key] = p.value }
        metadata = md
        labels = g.metadata.labels
    }

    /// Human-readable text.
    public var text: String {
        var s = ""
        s += "\(file)\n"
        s += "  format:    \(format) (\(formatVersion))\n"
        if !producer.isEmpty { s += "  producer:  \(producer)\n" }
        if !graphName.isEmpty { s += "  graph:     \(graphName)\n" }
        s += "  inputs:\n"
        for v in inputs {
            s += "    \(v.name): \(v.dtype) [\(v.shape.joined(separator: ", "))]\(v.image.map { " (\($0))" } ?? "")"
            s += "\(v.normalization.map { " (normalized: \($0))" } ?? "")\n"
        }
        s += "  outputs:\n"
        for v in outputs { s += "    \(v.name): \(v.dtype) [\(v.shape.joined(separator: ", "))]\n" }
        s += "  nodes:     \(nodeCount)\n"
        s += "  ops:       " + ops.map { "\($0.op)×\($0.count)" }.joined(separator: ", ") + "\n"
        if let program { s += "  program:   \(program.opset): " + program.ops.map { "\($0.op)×\($0.count)" }.joined(separator: ", ") + "\n" }
        s += "  weights:   \(weightCount) tensors, \(Inspection.formatBytes(weightBytes))\n"
        for w in largestWeights {
            let form = [w.layout, w.storedAs].compactMap { $0 }.joined(separator: "; ")
            s += "    \(w.name): \(w.encoding) [\(w.shape.map(String.init).joined(separator: ", "))] \(Inspection.formatBytes(w.bytes))"
                + (form.isEmpty ? "" : " (\(form))") + "\n"
        }
        if let sub = subgraphs {
            s += "  subgraphs: \(sub.count) (If branches, Loop bodies) with \(sub.nodeCount) nodes, "
                + "\(sub.weightCount) weight tensors, \(Inspection.formatBytes(sub.weightBytes))\n"
            s += "    ops:     " + sub.ops.map { "\($0.op)×\($0.count)" }.joined(separator: ", ") + "\n"
        }
        if !metadata.isEmpty {
            s += "  metadata:\n"
            for k in metadata.keys.sorted() { s += "    \(k): \(metadata[k] ?? "")\n" }
        }
        if !labels.isEmpty { s += "  labels:    \(labels.count) (\(labels.prefix(5).joined(separator: ", "))\(labels.count > 5 ? ", …" : ""))\n" }
        return s
    }

    public var json: String { prettyJSON(self) }

    public static func formatBytes(_ n: Int) -> String {
        if n < 1024 { return "\(n) B" }
        if n < 1 << 20 { return String(format: "%.1f KiB", Double(n) / 1024) }
        if n < 1 << 30 { return String(format: "%.1f MiB", Double(n) / 1048576) }
        return String(format: "%.2f GiB", Double(n) / 1073741824)
    }
}

/// Pretty JSON with sorted keys, the form every `--json` output uses.
func prettyJSON<T: Encodable>(_ value: T) -> String {
    let enc = JSONEncoder()
    enc.outputFormatting = [.prettyPrinted, .sortedKeys]
    guard let d = try? enc.encode(value) else { return "{}" }
    return String(decoding: d, as: UTF8.self)
}

extension Inspection {
    /// The inputs and outputs as an iOS app declares them: TensorFlowLiteSwift's
    /// `Tensor.DataType` and shape, and ML Kit's `ModelInputOutputOptions`
    /// (dimensions not fixed in the file are written as 1 and marked).
    public static func swiftDeclarations(_ graph: Graph) -> String {
        func tflite(_ d: DType?) -> String {
            switch d {
            case .float32?: return ".float32"
            case .float16?: return ".float16"
            case .float64?: return ".float64"
            case .int8?: return ".int8"
            case .uint8?: return ".uInt8"
            case .int16?: return ".int16"
            case .int32?: return ".int32"
            case .int64?: return ".int64"
            case .bool?: return ".bool"
            default: return "/* \(d?.rawValue ?? "unknown") */"
            }
        }
        func mlkit(_ d: DType?) -> String? {
            switch d {
            case .float32?: return ".float32"
            case .uint8?: return ".uInt8"
            case .int32?: return ".int32"
            case .int64?: return ".long"
            default: return nil
            }
        }
        func dims(_ v: ValueInfo) -> (String, Bool) {
            guard let shape = v.shape else { return ("[] /* unknown rank */", true) }
            let free = shape.contains { $0.value == nil }
            return ("[" + shape.map { String($0.value ?? 1) }.joined(separator: ", ") + "]", free)
        }
        var lines = ["// TensorFlowLiteSwift: interpreter.input(at:) / output(at:) — dataType, shape"]
        let inputs = graph.runtimeInputs
        for (k, v) in inputs.enumerated() {
            let (d, free) = dims(v)
            lines.append("// input \(k) '\(v.name.escapingControlCharacters)': \(tflite(v.dtype)), \(d)\(free ? "  (1 = not fixed in the model)" : "")")
        }
        for (k, v) in graph.outputs.enumerated() {
            let (d, free) = dims(v)
            lines.append("// output \(k) '\(v.name.escapingControlCharacters)': \(tflite(v.dtype)), \(d)\(free ? "  (1 = not fixed in the model)" : "")")
        }
        lines.append("")
        lines.append("// ML Kit custom model (FirebaseMLModelInterpreter):")
        lines.append("let ioOptions = ModelInputOutputOptions()")
        lines.append("do {")
        for (kind, values) in [("Input", inputs), ("Output", graph.outputs)] {
            for (k, v) in values.enumerated() {
                if let t = mlkit(v.dtype) {
                    lines.append("    try ioOptions.set\(kind)Format(index: \(k), type: \(t), dimensions: \(dims(v).0))")
                } else {
                    lines.append("    // \(kind.lowercased()) \(k): \(v.dtype?.rawValue ?? "unknown") has no ML Kit ModelElementType")
                }
            }
        }
        lines.append("} catch {")
        lines.append("    print(\"invalid input/output format: \\(error)\")")
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }
}

extension Models {
    /// The file's own program for `inspect`: an ML Program's MIL ops and the
    /// constexpr op of each compressed weight (nil for other formats).
    public static func program(of path: String) -> Inspection.Program? {
        let url = URL(fileURLWithPath: path)
        guard let f = ModelFormats.format(for: url), f.name == "mlpackage" || f.name == "coreml",
              let s = try? MILImporter.programSummary(at: url) else { return nil }
        return Inspection.Program(opset: s.opset, ops: s.ops, weightOps: s.weightOps)
    }
}
