import Foundation
import ONNXSchema
import ShrinkwrapIR
import SwiftProtobuf

/// Writes a graph as an ONNX model.
///
/// IR op semantics are ONNX's, so nodes map one to one; the opset is the
/// lowest (at least 17) that has every node's form (`OpTable`'s `onnxOpset`), or 21
/// when a weight needs 4-bit storage or per-block scales. Compressed weights
/// stay compressed in the file and are decoded by standard ops at run time
/// (`ONNXWeightWriter`): fp16 → Cast, linear → DequantizeLinear, palettes →
/// Gather over their lookup tables. Shapes stay as they are (a free batch
/// axis stays free), names, doc strings and metadata are kept.
public enum ONNXExporter {
    /// The opset written when nothing in the graph needs a newer one.
    public static let defaultOpset = 17

    /// IR ops the exporter can write: ONNX's own, and the IR ops it expands.
    public static var supportedOps: [String] { Set(ONNXOps.translators.keys).union(ONNXOps.expanded.keys).sorted() }

    /// How compressed weights are stored in a written file (for the README's tables).
    public static let weightStorage = "every mode and width: fp16 → float16 + Cast; linear → DequantizeLinear (int4 / per block at opset 21); palettes → indices + Gather; 1–3, 5–7-bit codes bit-packed"
    /// Every form: what ONNX has no tensor type for is decoded by standard ops.
    public static let storedWeights = StoredWeightForms.everything

    /// What the written file is made of, for the size report.
    public struct Layout: Sendable, Equatable {
        public var opset: Int
        /// Bytes of the file.
        public var fileBytes: Int
        /// Payload bytes of the weight data as stored (codes, scales, zero
        /// points, biases, tables, float weights).
        public var storedWeightBytes: Int
        /// What the graph's weight encodings take (`WeightEncoding.storageBytes`):
        /// the compressed size the file should match.
        public var encodedWeightBytes: Int
        /// Everything else: nodes, names, metadata, tensor headers, and the
        /// small constants of the decoding ops (shapes, axes, shifts).
        public var graphBytes: Int

        /// File bytes beyond `encodedWeightBytes + graphBytes`, as a fraction of it.
        public var overhead: Double {
            let base = encodedWeightBytes + graphBytes
            return base == 0 ? 0 : Double(fileBytes - base) / Double(base)
        }

        /// One line: "1234 bytes = 1200 weight bytes + 34 graph bytes (+0.0 %)".
        public var summary: String {
            let pct = String(format: "%+.2f", overhead * 100)
            var s = "\(fileBytes) bytes = \(encodedWeightBytes) compressed weight bytes + \(graphBytes) graph bytes (\(pct) %), opset \(opset)"
            if storedWeightBytes != encodedWeightBytes { s += "; weights as stored: \(storedWeightBytes) bytes" }
            return s
        }
    }

    /// The model bytes.
    public static func export(_ graph: Graph) throws -> Data { try exportWithLayout(graph).data }

    /// The model bytes and what they are made of.
    public static func exportWithLayout(_ graph: Graph) throws -> (data: Data, layout: Layout) {
        try checkExportable(graph)
        var names = NameAllocator(reserving: graph)
        var weights = ONNXWeightWriter()
        for c in graph.constants { try weights.add(c, names: &names) }

        // A protobuf message cannot exceed 2 GiB; larger models need ONNX external data.
        guard weights.payloadBytes < Int(Int32.max) - (64 << 20) else {
            throw ExportError.unsupported(format: "ONNX", what: "\(weights.payloadBytes) bytes of weights: files over 2 GiB need external data, which the exporter does not write; compress the weights (e.g. --mode fp16) first")
        }
        var opset = max(defaultOpset, weights.minimumOpset, try subgraphWeightOpset(graph))
        // Each node's form sets a lowest opset (the op table says which); an op written as an
        // expansion (Swish) counts as the older ops it becomes, all at most 13. Subgraph nodes count too.
        for n in graph.allNodes where ONNXOps.expanded[n.opType] == nil {
            guard let minimum = OpTable[n.opType]?.onnxOpset else { throw ExportError.unsupportedOps(format: "ONNX", ops: [n.opType]) }
            opset = max(opset, minimum(n))
        }

        var g = Onnx_GraphProto()
        g.name = graph.name.isEmpty ? "shrinkwrap" : graph.name
        g.initializer = weights.initializers
        g.node = weights.nodes
        for n in graph.nodes { g.node += try nodes(for: n, opset: opset, names: &names) }
        uniquifyNodeNames(&g.node)
        let constants = Set(graph.constants.map(\.name))
        g.input = graph.inputs.filter { !constants.contains($0.name) }.map(valueInfo)
        g.output = graph.outputs.map(valueInfo)
        let listed = Set(graph.inputs.map(\.name) + graph.outputs.map(\.name)).union(constants)
        let produced = Set(graph.nodes.flatMap(\.outputs))
        for key in graph.valueInfo.keys.sorted() where !listed.contains(key) && produced.contains(key) {
            if let v = graph.valueInfo[key], v.dtype != nil, v.shape != nil { g.valueInfo.append(valueInfo(v)) }
        }

        var m = Onnx_ModelProto()
        m.irVersion = Int64(irVersion(forOpset: opset))
        var op = Onnx_OperatorSetIdProto()
        op.domain = ""
        op.version = Int64(opset)
        m.opsetImport = [op]
        m.producerName = "shrinkwrap"
        m.producerVersion = shrinkwrapVersion
        let meta = graph.metadata
        if !meta.docString.isEmpty { m.docString = meta.docString }
        if !meta.domain.isEmpty { m.domain = meta.domain }
        if meta.modelVersion != 0 { m.modelVersion = Int64(meta.modelVersion) }
        m.metadataProps = metadataProps(meta)
        m.graph = g

        let data: Data = try m.serializedBytes()
        // Graph bytes: the same model with the weight data taken out (shapes
        // and the constants of the decoding ops stay: they are structure).
        var bare = m
        for i in bare.graph.initializer.indices where weights.weightData.contains(bare.graph.initializer[i].name) {
            bare.graph.initializer[i].rawData = Data()
        }
        bare.graph.node = bare.graph.node.map(blankingSubgraphInitializers)
        let graphBytes = (try bare.serializedBytes() as Data).count
        // Subgraph weights (If branches, Loop bodies) are stored as imported: dense, their bytes as encoded.
        let inner = graph.allSubgraphs.flatMap(\.constants).reduce(0) { $0 + $1.encoding.storageBytes }
        let encoded = graph.constants.reduce(0) { $0 + $1.encoding.storageBytes } + inner
        let layout = Layout(opset: opset, fileBytes: data.count, storedWeightBytes: weights.payloadBytes + inner,
                            encodedWeightBytes: encoded, graphBytes: graphBytes)
        return (data, layout)
    }

    /// IR version that goes with an opset (onnx/helper.py's VERSION_TABLE).
    static func irVersion(forOpset opset: Int) -> Int {
        switch opset {
        case ...18: return 8
        case 19...20: return 9
        case 21...22: return 10
        default: return 11
        }
    }

    /// Refuses, all at once, what ONNX cannot express: IR-only attributes
    /// (a TFLite-style LSTM cell clip) and ops ONNX has not got.
    static func checkExportable(_ graph: Graph) throws {
        var unknown: [String] = []
        var problems: [String] = []
        for n in graph.allNodes {
            if ONNXOps.translators[n.opType] == nil && ONNXOps.expanded[n.opType] == nil {
                if !unknown.contains(n.opType) { unknown.append(n.opType) }
            }
            if n.attributes["shrinkwrap_cell_clip"] != nil {
                problems.append("\(n.opType) '\(n.label)' clips its cell state (a TFLite LSTM's cell_clip); ONNX LSTM's clip bounds the gate inputs instead, so the model would compute something else")
            }
            for key in n.attributes.keys.sorted() where key.hasPrefix("shrinkwrap_") && key != "shrinkwrap_cell_clip" {
                problems.append("\(n.opType) '\(n.label)' has the Shrinkwrap-only attribute '\(key)'")
            }
        }
        if !unknown.isEmpty { throw ExportError.unsupportedOps(format: "ONNX", ops: unknown) }
        if !problems.isEmpty { throw ExportError.unsupported(format: "ONNX", what: problems.joined(separator: "; ")) }
    }

    /// The ONNX nodes for one IR node: itself, or its expansion when the op
    /// is newer than the opsets runtimes run (Swish).
    static func nodes(for n: Node, opset: Int, names: inout NameAllocator) throws -> [Onnx_NodeProto] {
        if let expand = ONNXOps.expanded[n.opType] { return try expand(n, &names).map { try proto($0, opset: opset, names: &names) } }
        var n = n
        // The IR's Split always says num_outputs; with a split input ONNX wants only the input.
        if n.opType == "Split", n.input(1) != nil { n.attributes["num_outputs"] = nil }
        // Resize-19 dropped tf_half_pixel_for_nn (TFLite's nearest resize): with nearest_mode floor it
        // picks floor((x + 0.5) / scale), which is half_pixel with round_prefer_ceil.
        if opset >= 19, n.opType == "Resize", n.string("coordinate_transformation_mode", "") == "tf_half_pixel_for_nn",
           n.string("nearest_mode", "round_prefer_floor") == "floor" {
            n.attributes["coordinate_transformation_mode"] = .string("half_pixel")
            n.attributes["nearest_mode"] = .string("round_prefer_ceil")
        }
        return [try proto(n, opset: opset, names: &names)]
    }

    static func proto(_ n: Node, opset: Int, names: inout NameAllocator) throws -> Onnx_NodeProto {
        var p = Onnx_NodeProto()
        p.name = n.name
        p.opType = n.opType
        p.input = n.inputs
        p.output = n.outputs
        if !n.docString.isEmpty { p.docString = n.docString }
        for key in n.attributes.keys.sorted() {
            guard let value = n.attributes[key] else { continue }
            if case .graph(let sub) = value {
                var a = Onnx_AttributeProto()
                a.name = key
                a.type = .graph
                a.g = try graphProto(sub, opset: opset, names: &names)
                p.attribute.append(a)
            } else {
                p.attribute.append(try attribute(key, value, node: n))
            }
        }
        return p
    }

    /// A non-graph attribute (graphs need the opset and names: `proto`).
    static func attribute(_ name: String, _ value: Attribute, node: Node) throws -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto()
        a.name = name
        switch value {
        case .int(let v): a.type = .int; a.i = Int64(v)
        case .float(let v): a.type = .float; a.f = v
        case .string(let v): a.type = .string; a.s = Data(v.utf8)
        case .ints(let v): a.type = .ints; a.ints = v.map(Int64.init)
        case .floats(let v): a.type = .floats; a.floats = v
        case .strings(let v): a.type = .strings; a.strings = v.map { Data($0.utf8) }
        case .tensor(let t): a.type = .tensor; a.t = ONNXWeightWriter.tensorProto(t, name: "")
        case .graph: throw ExportError.unsupported(format: "ONNX", what: "subgraph attribute '\(name)' of \(node.opType) '\(node.label)' outside a node")
        }
        return a
    }

    static func valueInfo(_ v: ValueInfo) -> Onnx_ValueInfoProto {
        var p = Onnx_ValueInfoProto()
        p.name = v.name
        if !v.docString.isEmpty { p.docString = v.docString }
        guard let dtype = v.dtype else { return p }
        var tt = Onnx_TypeProto.Tensor()
        tt.elemType = Int32(dtype.onnxDataType)
        if let shape = v.shape {
            var s = Onnx_TensorShapeProto()
            s.dim = shape.map { d in
                var dim = Onnx_TensorShapeProto.Dimension()
                switch d {
                case .fixed(let x): dim.dimValue = Int64(x)
                case .symbolic(let name): dim.dimParam = name
                case .unknown: break
                }
                return dim
            }
            tt.shape = s
        }
        var t = Onnx_TypeProto()
        t.tensorType = tt
        p.type = t
        return p
    }

    /// metadata_props: the file's own properties in order, then labels
    /// (one per line), author and license when no property holds them.
    static func metadataProps(_ meta: Metadata) -> [Onnx_StringStringEntryProto] {
        func entry(_ k: String, _ v: String) -> Onnx_StringStringEntryProto {
            var e = Onnx_StringStringEntryProto()
            e.key = k; e.value = v
            return e
        }
        let labelKeys: Set<String> = ["labels", "classes", "class_labels"]
        var out: [Onnx_StringStringEntryProto] = []
        for p in meta.properties where !labelKeys.contains(p.key.lowercased()) { out.append(entry(p.key, p.value)) }
        let keys = Set(meta.properties.map { $0.key.lowercased() })
        if !meta.author.isEmpty && !keys.contains("author") { out.append(entry("author", meta.author)) }
        if !meta.license.isEmpty && !keys.contains("license") { out.append(entry("license", meta.license)) }
        if !meta.labels.isEmpty { out.append(entry("labels", meta.labels.joined(separator: "\n"))) }
        return out
    }
}

extension ONNXOps {
    /// IR ops written as a few older ONNX ops: their own opset is newer than
    /// runtimes commonly run (Swish is opset 24).
    static let expanded: [String: (Node, inout NameAllocator) throws -> [Node]] = [
        "Swish": { n, names in
            // Swish(x) = x · sigmoid(alpha · x)
            guard let x = n.input(0), let y = n.outputs.first else {
                throw ExportError.unsupported(format: "ONNX", what: "Swish '\(n.label)' without an input or output")
            }
            let alpha = n.float("alpha", 1)
            var out: [Node] = []
            var arg = x
            if alpha != 1 {
                let a = names.fresh("\(y)_alpha"), ax = names.fresh("\(y)_scaled")
                out.append(Node(name: names.fresh("\(n.label)_alpha"), opType: "Constant", inputs: [], outputs: [a],
                                attributes: ["value": .tensor(Tensor([alpha], shape: []))]))
                out.append(Node(name: names.fresh("\(n.label)_scale"), opType: "Mul", inputs: [x, a], outputs: [ax]))
                arg = ax
            }
            let s = names.fresh("\(y)_sigmoid")
            out.append(Node(name: names.fresh("\(n.label)_sigmoid"), opType: "Sigmoid", inputs: [arg], outputs: [s]))
            out.append(Node(name: n.name, opType: "Mul", inputs: [x, s], outputs: [y], docString: n.docString))
            return out
        },
    ]
}
