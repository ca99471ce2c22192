import FlatBuffers
import Foundation
import ShrinkwrapIR

/// Reads TensorFlow Lite flatbuffers (.tflite): subgraph 0 (and the subgraphs its WHILEs run, as Loops) of float32,
/// float16 (FLOAT16 constants behind DEQUANTIZE) and dynamic-range int8
/// models (int8 weights become affine-encoded weights, not dequantized away).
///
/// TFLite computes in NHWC; the IR's ops are ONNX's, so layout-sensitive ops
/// (convolutions, pooling, resizing) are wrapped in Transposes to NCHW and
/// back, their weights transposed at import, and Transpose pairs that cancel
/// are removed afterwards. Graph inputs and outputs keep the file's shapes.
public enum TFLiteImporter {
    public static func importModel(at url: URL) throws -> Graph {
        let data: Data
        do { data = try Data(contentsOf: url, options: .mappedIfSafe) } catch {
            throw ImportError.unreadable(file: url.path, reason: (error as NSError).localizedDescription)
        }
        return try importModel(bytes: Array(data), file: url.path)
    }

    public static func importModel(bytes: [UInt8], file: String) throws -> Graph {
        let model = try TFLiteModel(bytes: bytes, file: file)
        var ctx = TFLiteContext(model: model)
        return try ctx.build().checkedAgainstOpTable(file: file)
    }

    /// The builtin ops the importer translates, sorted.
    public static var supportedOps: [String] { TFLiteOps.table.keys.sorted() }
}

/// Importer state: the model, the graph being built, and value names.
struct TFLiteContext {
    let model: TFLiteModel
    var file: String { model.file }
    var nodes: [Node] = []
    var constants: [String: Constant] = [:]
    var constantOrder: [String] = []
    /// Tensor index → value name in the graph.
    var names: [String] = []
    var used = NameAllocator()
    var counter = 0
    /// Tensors whose value is a constant (weights, shapes, and DEQUANTIZE outputs of constants).
    var constantTensors: [Int: WeightEncoding] = [:]
    /// How many operator inputs read each tensor.
    var readers: [Int: Int] = [:]
    /// The subgraphs being translated, outermost first (WHILE inlines its condition and body; a cycle is an error).
    var subgraphStack: [Int] = [0]
    /// Operators translated so far over every inlined subgraph (WHILE nests may inline a subgraph many times).
    var inlinedOps = 0

    init(model: TFLiteModel) { self.model = model }

    func loc(_ op: TFLiteModel.Op) -> SourceLocation {
        let out = op.outputs.first.map { model.tensors[$0].name } ?? "?"
        let prefix = model.current == 0 ? "" : "subgraphs[\(model.current)]."
        return SourceLocation(file: file, place: prefix + "operators[\(op.index)] \(op.name) → '\(out.escapingControlCharacters)'")
    }

    func loc(tensor i: Int) -> SourceLocation {
        let prefix = model.current == 0 ? "" : "subgraphs[\(model.current)]."
        return SourceLocation(file: file, place: prefix + "tensor[\(i)] '\(model.tensors[i].name.escapingControlCharacters)'")
    }

    // MARK: - Names

    mutating func unique(_ base: String) -> String { used.fresh(base.isEmpty ? "t" : base) }

    /// A fresh name for an intermediate value.
    mutating func fresh(_ base: String) -> String {
        counter += 1
        return unique("\(base)__\(counter)")
    }

    func value(_ i: Int) -> String { i >= 0 && i < names.count ? names[i] : "" }

    // MARK: - Emitting

    mutating func emit(_ opType: String, _ inputs: [String], _ outputs: [String], _ attrs: [String: Attribute] = [:], name: String = "") {
        nodes.append(Node(name: name.isEmpty ? (outputs.first ?? opType) : name, opType: opType, inputs: inputs, outputs: outputs, attributes: attrs))
    }

    /// Adds a constant and returns its name.
    mutating func addConstant(_ base: String, _ e: WeightEncoding) -> String {
        let name = unique(base)
        constants[name] = Constant(name: name, encoding: e)
        constantOrder.append(name)
        return name
    }

    mutating func int64Constant(_ base: String, _ values: [Int], shape: [Int]? = nil) -> String {
        addConstant(base, .dense(Tensor(ints: values.map(Int64.init), shape: shape ?? [values.count])))
    }

    mutating func floatConstant(_ base: String, _ v: Float) -> String {
        addConstant(base, .dense(Tensor([v], shape: [])))
    }

    /// NHWC value → a new NCHW value.
    mutating func toNCHW(_ v: String) -> String {
        let out = fresh(v + "_nchw")
        emit("Transpose", [v], [out], ["perm": .ints([0, 3, 1, 2])])
        return out
    }

    /// NCHW value → the NHWC output name.
    mutating func toNHWC(_ v: String, into out: String) {
        emit("Transpose", [v], [out], ["perm": .ints([0, 2, 3, 1])])
    }

    /// The fused activation (TFLite ActivationFunctionType) from `input` to `output`.
    mutating func activation(_ code: Int8, _ input: String, _ output: String, op: TFLiteModel.Op) throws {
        switch code {
        case 0: emit("Identity", [input], [output])
        case 1: emit("Relu", [input], [output])
        case 2: emit("Clip", [input, floatConstant("minus_one", -1), floatConstant("one", 1)], [output])
        case 3: emit("Clip", [input, floatConstant("zero", 0), floatConstant("six", 6)], [output])
        case 4: emit("Tanh", [input], [output])
        default: throw ImportError.unsupported(loc(op), what: "fused activation \(code) (SIGN_BIT)")
        }
    }

    /// Runs `body` into a fresh value, then applies the fused activation into `output`.
    mutating func withActivation(_ code: Int8, output: String, op: TFLiteModel.Op, _ body: (inout TFLiteContext, String) throws -> Void) throws {
        if code == 0 { try body(&self, output); return }
        let pre = fresh(output + "_pre")
        try body(&self, pre)
        try activation(code, pre, output, op: op)
    }

    // MARK: - Tensors

    /// The tensor's constant value as the IR stores it, or nil when it is computed at run time.
    func constantEncoding(_ i: Int) -> WeightEncoding? { i >= 0 ? constantTensors[i] : nil }

    /// A constant input that must be present (e.g. a shape or an axis).
    func requireConstant(_ op: TFLiteModel.Op, _ k: Int, _ what: String) throws -> Tensor {
        guard k < op.inputs.count, let e = constantEncoding(op.inputs[k]) else {
            throw ImportError.unsupported(loc(op), what: "\(what) (input \(k)) computed at run time; only constant \(what) is supported")
        }
        return e.decoded()
    }

    func requireInts(_ op: TFLiteModel.Op, _ k: Int, _ what: String) throws -> [Int] {
        let t = try requireConstant(op, k, what)
        guard let a = t.ints else { throw ImportError.unsupported(loc(op), what: "\(what) of type \(t.dtype)") }
        return a.map { Int(clamping: $0) }
    }

    /// The static shape of tensor `i` as the file declares it.
    func shape(_ i: Int) -> [Int] { i >= 0 && i < model.tensors.count ? model.tensors[i].shape : [] }

    func options(_ op: TFLiteModel.Op, _ expected: String) throws -> Table? {
        guard let t = op.options else { return nil }
        let name = TFLiteSchemaTables.builtinOptions[op.optionsType] ?? "type \(op.optionsType)"
        guard name == expected else {
            throw ImportError.malformed(loc(op), reason: "builtin_options is \(name), expected \(expected)")
        }
        return t
    }

    func option<T: FlatBufferScalar>(_ t: Table?, _ id: Int, _ d: T, _ op: TFLiteModel.Op) throws -> T {
        guard let t else { return d }
        do { return try t.scalar(id, default: d) } catch let e as FlatBufferError {
            throw ImportError.malformed(loc(op), reason: "builtin_options: \(e.description)")
        }
    }

    func optionInts(_ t: Table?, _ id: Int, _ op: TFLiteModel.Op) throws -> [Int]? {
        guard let t else { return nil }
        do { return try t.scalars(id, as: Int32.self)?.map(Int.init) } catch let e as FlatBufferError {
            throw ImportError.malformed(loc(op), reason: "builtin_options: \(e.description)")
        }
    }

    /// Decodes a tensor's buffer into a weight encoding (nil when it has no data).
    func decodeConstant(_ i: Int) throws -> WeightEncoding? {
        let t = model.tensors[i]
        guard t.buffer > 0, t.buffer < model.buffers.count, !t.isVariable else { return nil }
        guard !model.buffers[t.buffer].isEmpty else { return nil }
        guard let width = TFLiteModel.elementSize(t.type) else {
            throw ImportError.unsupported(loc(tensor: i), what: "constant of type \(TFLiteModel.typeName(t.type))")
        }
        let data = try denseBytes(i, width: width)
        var count = 1
        for d in t.shape {
            let (m, o) = count.multipliedReportingOverflow(by: d)
            guard !o else { throw ImportError.badTensor(loc(tensor: i), reason: "shape \(t.shape) overflows") }
            count = m
        }
        let (bytes, overflow) = count.multipliedReportingOverflow(by: width)
        guard !overflow, bytes == data.count else {
            throw ImportError.badTensor(loc(tensor: i), reason: "shape \(t.shape) × \(width) bytes = \(overflow ? "too many" : String(bytes)) bytes, but the buffer holds \(data.count)")
        }
        let base = data.startIndex
        func u16(_ k: Int) -> UInt16 { UInt16(data[base + 2 * k]) | UInt16(data[base + 2 * k + 1]) << 8 }
        func u32(_ k: Int) -> UInt32 {
            var v: UInt32 = 0
            for b in 0..<4 { v |= UInt32(data[base + 4 * k + b]) << (8 * b) }
            return v
        }
        func u64(_ k: Int) -> UInt64 {
            var v: UInt64 = 0
            for b in 0..<8 { v |= UInt64(data[base + 8 * k + b]) << (8 * b) }
            return v
        }
        let shape = t.shape
        do {
            switch t.type {
            case 0:
                return .dense(Tensor((0..<count).map { Float(bitPattern: u32($0)) }, shape: shape))
            case 1:
                return .float16(try Float16Weights(shape: shape, bits: (0..<count).map(u16)))
            case 10:
                return .dense(Tensor((0..<count).map { Float(Double(bitPattern: u64($0))) }, shape: shape, dtype: .float64))
            case 2:
                return .dense(Tensor(ints: (0..<count).map { Int64(Int32(bitPattern: u32($0))) }, shape: shape, dtype: .int32))
            case 4:
                return .dense(Tensor(ints: (0..<count).map { Int64(bitPattern: u64($0)) }, shape: shape, dtype: .int64))
            case 6:
                return .dense(Tensor(bools: (0..<count).map { data[base + $0] != 0 }, shape: shape))
            case 9, 3:
                let signed = t.type == 9
                let codes: [Int16] = (0..<count).map { signed ? Int16(Int8(bitPattern: data[base + $0])) : Int16(data[base + $0]) }
                if let q = t.quantization {
                    return .affine(try affine(codes, signed: signed, shape: shape, q: q, tensor: i))
                }
                return .dense(Tensor(ints: codes.map(Int64.init), shape: shape, dtype: signed ? .int8 : .uint8))
            case 7:
                return .dense(Tensor(ints: (0..<count).map { Int64(Int16(bitPattern: u16($0))) }, shape: shape, dtype: .int16))
            default:
                throw ImportError.unsupported(loc(tensor: i), what: "constant of type \(TFLiteModel.typeName(t.type))")
            }
        } catch let e as WeightLayoutError {
            throw ImportError.badTensor(loc(tensor: i), reason: e.reason)
        }
    }

    /// real = scale × (q − zero_point), per tensor or per `quantized_dimension`.
    func affine(_ codes: [Int16], signed: Bool, shape: [Int], q: TFLiteModel.Quantization, tensor i: Int) throws -> AffineWeights {
        let n = q.scale.count
        let zps = q.zeroPoint.isEmpty ? [Int64](repeating: 0, count: n) : q.zeroPoint
        guard zps.count == n else {
            throw ImportError.badTensor(loc(tensor: i), reason: "\(n) scales but \(zps.count) zero points")
        }
        var block = shape
        if n > 1 {
            guard q.axis >= 0, q.axis < shape.count, shape[q.axis] == n else {
                throw ImportError.badTensor(loc(tensor: i), reason: "\(n) scales for quantized_dimension \(q.axis) of shape \(shape)")
            }
            block[q.axis] = 1
        } else {
            block = shape.map { max($0, 1) }
        }
        let bias = zip(q.scale, zps).map { s, z in -s * Float(z) }
        do {
            return try AffineWeights(shape: shape, bits: 8, signed: signed, q: codes, blockShape: block, scale: q.scale, bias: bias)
        } catch let e {
            throw ImportError.badTensor(loc(tensor: i), reason: e.reason)
        }
    }

    // MARK: - Building

    mutating func build() throws -> Graph {
        let m = model
        // Every unsupported op, all at once (in every subgraph: WHILE's condition and body too).
        var missing: [String] = []
        for sg in m.subgraphs {
            for op in sg.ops where TFLiteOps.translator(op.name) == nil && op.name != "DEQUANTIZE" && op.name != "DENSIFY" {
                if !missing.contains(op.name) { missing.append(op.name) }
            }
        }
        if !missing.isEmpty { throw ImportError.unsupportedOps(file: file, ops: missing) }
        let (folded, dequantizedRows) = try prepareTensors()

        // Graph inputs and outputs keep the file's shapes (−1 in the signature: a symbolic dimension).
        func info(_ i: Int) throws -> ValueInfo {
            let t = m.tensors[i]
            guard let dtype = TFLiteContext.dtype(t.type) else {
                throw ImportError.unsupported(loc(tensor: i), what: "graph input / output of type \(TFLiteModel.typeName(t.type))")
            }
            if t.quantization != nil, t.type == 9 || t.type == 3 {
                throw ImportError.unsupported(loc(tensor: i), what: "quantized \(TFLiteModel.typeName(t.type)) graph input / output (fully quantized models are not supported yet)")
            }
            var dims: [Dim] = t.shape.map { .fixed($0) }
            if let sig = t.signature, sig.count == dims.count {
                for (k, s) in sig.enumerated() where s < 0 { dims[k] = .symbolic(k == 0 ? "batch" : "\(names[i])_d\(k)") }
            }
            return ValueInfo(name: names[i], dtype: dtype, shape: dims)
        }
        let inputs = try m.inputs.filter { constantTensors[$0] == nil }.map(info)
        let outputs = try m.outputs.map(info)

        try translateOps(folded: folded, dequantizedRows: dequantizedRows)

        // Constants the nodes read: a tensor constant read under its own name.
        var graph = Graph(name: m.subgraphName, inputs: inputs, outputs: outputs, nodes: [], constants: [],
                          metadata: Metadata(), sourceFormat: "tflite", sourceVersion: "schema \(m.version)")
        let read = Set(nodes.flatMap(\.inputs))
        let outputNames = Set(outputs.map(\.name))
        for (i, e) in constantTensors.sorted(by: { $0.key < $1.key }) where read.contains(names[i]) || outputNames.contains(names[i]) {
            graph.setConstant(Constant(name: names[i], encoding: e))
        }
        for name in constantOrder where read.contains(name) {
            if let c = constants[name] { graph.setConstant(c) }
        }
        graph.nodes = nodes.cancellingInverseTransposes(keeping: outputNames)
        graph.metadata.docString = m.description
        for (key, b) in m.metadata where key == "min_runtime_version" && b < m.buffers.count {
            let text = String(decoding: m.buffers[b].prefix { $0 != 0 }, as: UTF8.self)
            graph.metadata.properties.append((key: key, value: text))
        }
        // tflite-support metadata (name, description, labels, input normalization, vocabulary).
        try TFLiteMetadata.read(m, into: &graph, inputs: m.inputs.map { constantTensors[$0] == nil ? names[$0] : nil }, outputs: m.outputs.map { names[$0] })
        return graph
    }

    /// The current subgraph's value names (input tensors bound to `bound`'s names when it is inlined), readers and
    /// constants, DENSIFY and DEQUANTIZE of constants folded: the folded ops and the rows gathered from quantized tables.
    mutating func prepareTensors(bound: [Int: String] = [:]) throws -> (folded: Set<Int>, rows: Set<Int>) {
        let m = model
        // Names: the file's, made unique.
        names = m.tensors.map { _ in "" }
        for t in m.tensors { names[t.index] = bound[t.index] ?? unique(t.name.isEmpty ? "tensor\(t.index)" : t.name) }
        for op in m.ops { for i in op.inputs where i >= 0 { readers[i, default: 0] += 1 } }

        // Constants, then DEQUANTIZE of constants folded into encoded constants.
        for t in m.tensors {
            if let e = try decodeConstant(t.index) { constantTensors[t.index] = e }
        }
        var folded = try foldDensify()
        // Rows gathered from a quantized table (dynamic-range embeddings: GATHER then DEQUANTIZE):
        // the table is an affine-encoded constant, so the gathered rows are already float.
        var dequantizedRows = Set<Int>()
        for op in m.ops where op.name == "GATHER" {
            if let p = op.inputs.first, case .affine? = constantEncoding(p), let out = op.outputs.first { dequantizedRows.insert(out) }
        }
        for op in m.ops where op.name == "DEQUANTIZE" {
            if let x = op.inputs.first, dequantizedRows.contains(x), let out = op.outputs.first {
                _ = out
                continue
            }
            guard let x = op.inputs.first, let out = op.outputs.first, let e = constantEncoding(x) else {
                throw ImportError.unsupported(loc(op), what: "DEQUANTIZE of a value computed at run time (fully quantized models are not supported; float, float16 and dynamic-range int8 models are)")
            }
            switch e {
            case .float16, .affine: constantTensors[out] = e
            case .dense(let d):
                guard let values = d.ints.map({ $0.map(Float.init) }) ?? d.floats else {
                    throw ImportError.unsupported(loc(op), what: "DEQUANTIZE of a \(d.dtype) constant")
                }
                constantTensors[out] = .dense(Tensor(values, shape: d.shape))
            case .palette: constantTensors[out] = e
            }
            folded.insert(op.index)
        }
        return (folded, dequantizedRows)
    }

    /// Translates the current subgraph's operators (but the folded ones) into nodes.
    mutating func translateOps(folded: Set<Int>, dequantizedRows: Set<Int>) throws {
        let m = model
        for op in m.ops where !folded.contains(op.index) {
            if op.name == "DEQUANTIZE", let x = op.inputs.first, let out = op.outputs.first, dequantizedRows.contains(x) {
                emit("Identity", [value(x)], [value(out)])
                continue
            }
            guard let translate = TFLiteOps.translator(op.name) else { continue }
            for i in op.inputs where i >= 0 && !dequantizedRows.contains(i) {
                let t = m.tensors[i]
                if constantTensors[i] == nil, t.quantization != nil, t.type == 9 || t.type == 3 {
                    throw ImportError.unsupported(loc(op), what: "quantized \(TFLiteModel.typeName(t.type)) activation '\(t.name)' (fully quantized models are not supported yet; float, float16 and dynamic-range int8 models are)")
                }
            }
            try translate(&self, op)
        }
    }

    static func dtype(_ t: Int8) -> DType? {
        switch t {
        case 0: return .float32
        case 1: return .float16
        case 2: return .int32
        case 3: return .uint8
        case 4: return .int64
        case 6: return .bool
        case 7: return .int16
        case 9: return .int8
        case 10: return .float64
        default: return nil
        }
    }
}
