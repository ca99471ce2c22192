import FlatBuffers
import Foundation
import ShrinkwrapIR

/// Writes a graph as a TensorFlow Lite flatbuffer (schema 3): subgraph 0, plus a condition and a
/// body subgraph per Loop, written as WHILE (TFLiteExportOps+Loop.swift).
///
/// The graph must be prepared (static shapes, every value annotated; the
/// facade runs `ExportPreparation` first). Layout: `TFLiteLowering` turns the
/// IR's NCHW convolutions, pools and resizes into TFLite's NHWC ops with as
/// few Transposes as the graph allows (none for a graph that came from
/// TFLite). Weights keep their encoding where TFLite has one:
///
/// - float32 → FLOAT32 buffers;
/// - float16 → a FLOAT16 constant + DEQUANTIZE, as TFLite's converter writes
///   them (compute stays float32);
/// - 8-bit affine → INT8 with scale / zero point per tensor or per channel:
///   symmetric weights of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED are
///   read by the kernels directly (TFLite's dynamic-range form: the kernel
///   quantizes its input on the fly), any other int8 constant goes through
///   DEQUANTIZE;
/// - palettes (LUT modes) and fewer than 8 bits are refused: TFLite has no
///   such weights, Core ML does.
///
/// Every op without a TFLite form is collected and reported at once.
public enum TFLiteExporter {
    public static let format = "TensorFlow Lite"

    /// IR ops the exporter can write (some only for certain attributes or
    /// shapes): its writer table's, and those its lowering passes rewrite.
    public static var supportedOps: [String] {
        Set(TFLiteExportOps.table.keys.map { $0.hasPrefix("NHWC.") ? String($0.dropFirst(5)) : $0 })
            .union(TFLiteLowering.pipeline.loweredOps).sorted()
    }

    /// How compressed weights are stored in a written file (for the README's tables).
    public static let weightStorage = "fp16 (FLOAT16 + DEQUANTIZE) and 8-bit linear (INT8 per tensor / channel); LUT modes and fewer bits are refused"
    /// FLOAT16 tensors, and INT8 codes with integer zero points per tensor or channel.
    public static let storedWeights = StoredWeightForms(
        float16: true, affineBits: [8], affineGranularities: [.perTensor, .perChannel], affineNeedsIntegerZeroPoint: true,
        paletteBits: nil, paletteGranularities: [])

    /// Serialized `.tflite` bytes.
    public static func export(_ graph: Graph) throws -> Data {
        Data(try exportBytes(graph))
    }

    static func exportBytes(_ graph: Graph) throws -> [UInt8] {
        try checkWeights(graph)
        var g = LoweringGraph(graph)
        try TFLiteLowering.pipeline.run(&g)
        var e = TFLiteEmitter(graph: g, source: graph)
        try e.run()
        let description = graph.metadata.docString.isEmpty ? "Shrinkwrap" : graph.metadata.docString
        // Labels, description, normalization, vocabulary: tflite-support metadata + the zip of its files after the model.
        var encoded: TFLiteMetadata.Encoded?
        if TFLiteMetadata.worthWriting(graph.metadata) {
            let m = try TFLiteMetadata.encode(graph.metadata, inputs: graph.runtimeInputs, outputs: graph.outputs)
            e.metadataBuffers.append((TFLiteMetadata.bufferName, m.metadataBuffer))
            encoded = m
        }
        var bytes: [UInt8]
        do {
            bytes = try e.file.serialize(subgraphName: graph.name.isEmpty ? "main" : graph.name, description: description,
                                         metadata: e.metadataBuffers)
        } catch let err as FlatBufferBuilderError {
            throw ExportError.unsupported(format: format, what: "cannot serialize the model: \(err)")
        }
        if let encoded { bytes += try encoded.appendedZip(modelSize: bytes.count) }
        return bytes
    }
}

extension TFLiteExporter {
    /// Every weight TFLite cannot store, listed at once with the way out.
    static func checkWeights(_ graph: Graph) throws {
        var lut: [String] = [], narrow: [String] = [], blocked: [String] = [], asymmetric: [String] = []
        for c in graph.constants {
            switch c.encoding {
            case .palette(let p): lut.append("\(c.name) (\(p.bits)-bit)")
            case .affine(let a):
                let varying = a.shape.indices.filter { a.blockShape[$0] < a.shape[$0] }
                if a.bits != 8 {
                    narrow.append("\(c.name) (\(a.bits)-bit)")
                } else if varying.count > 1 || varying.contains(where: { a.blockShape[$0] != 1 }) {
                    blocked.append(c.name)
                } else if a.integerZeroPoints == nil {
                    asymmetric.append(c.name)
                }
            default: break
            }
        }
        var parts: [String] = []
        func list(_ names: [String]) -> String { names.prefix(5).joined(separator: ", ") + (names.count > 5 ? ", … (\(names.count) in all)" : "") }
        if !lut.isEmpty {
            parts.append("\(lut.count) palette (LUT) weight\(lut.count == 1 ? "" : "s"): \(list(lut)) — TFLite has no lookup-table weights; write Core ML (.mlmodel) for LUT modes, or use --mode fp16 / --mode linear --bits 8 --symmetric for TFLite")
        }
        if !narrow.isEmpty {
            parts.append("\(narrow.count) weight\(narrow.count == 1 ? "" : "s") with fewer than 8 bits: \(list(narrow)) — TFLite stores integer weights as 8-bit; compress with --bits 8 for TFLite, or write Core ML for fewer bits")
        }
        if !blocked.isEmpty {
            parts.append("\(blocked.count) weight\(blocked.count == 1 ? "" : "s") quantized in blocks: \(list(blocked)) — TFLite has one scale per tensor or per channel; use --granularity per-channel or per-tensor")
        }
        if !asymmetric.isEmpty {
            parts.append("\(asymmetric.count) asymmetric linear weight\(asymmetric.count == 1 ? "" : "s") whose zero points are not integers: \(list(asymmetric)) — TFLite stores integer zero points; compress with --symmetric for TFLite")
        }
        if !parts.isEmpty { throw ExportError.unsupported(format: format, what: parts.joined(separator: "; ")) }
    }
}

/// Why one op cannot be written (collected with the op's name).
struct TFLiteOpError: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Translates the rewritten graph into TFLite tensors and operators.
struct TFLiteEmitter {
    var g: LoweringGraph
    let source: Graph
    var file = TFLiteFileBuilder()
    /// Value name → tensor index (runtime values, and constants as float inputs).
    var tensorOf: [String: Int] = [:]
    /// Values that are another value under a new name (Identity, Dropout).
    var alias: [String: String] = [:]
    /// Weight tensors by (value, layout, form).
    var weightCache: [String: Int] = [:]
    var unsupported: [String] = []
    /// Outputs of ops that could not be written.
    var failed = Set<String>()
    var metadataBuffers: [(name: String, data: [UInt8])] = []
    var format: String { TFLiteExporter.format }

    static let opCodes: [String: Int32] = Dictionary(uniqueKeysWithValues: TFLiteSchemaTables.builtinOperators.map { ($1, $0) })
    static let optionTypes: [String: UInt8] = Dictionary(uniqueKeysWithValues: TFLiteSchemaTables.builtinOptions.map { ($1, $0) })

    init(graph: LoweringGraph, source: Graph) {
        g = graph
        self.source = source
    }

    mutating func run() throws {
        for i in source.runtimeInputs {
            let t = try valueTensor(i.name)
            file.inputs.append(t)
        }
        try emitNodes()
        file.outputs += try outputTensors(source.outputs.map(\.name))
    }

    /// Every node through its writer; the ops without a TFLite form listed at once.
    mutating func emitNodes() throws {
        for n in g.nodes {
            guard let writer = TFLiteExportOps.table[n.opType] else {
                let why = TFLiteLowering.spatialOps.contains(n.opType) ? ": only 2-D (rank-4) inputs have a TFLite op" : ""
                unsupported.append("\(n.opType) (node '\(n.label)'\(why))")
                failed.formUnion(n.outputs)
                continue
            }
            // Downstream of an op that failed: nothing to add to the list.
            if n.inputs.contains(where: { failed.contains(resolve($0)) }) {
                failed.formUnion(n.outputs)
                continue
            }
            do { try writer(&self, n) } catch let e as TFLiteOpError {
                let op = n.opType.hasPrefix("NHWC.") ? String(n.opType.dropFirst(5)) : n.opType
                unsupported.append("\(op) (node '\(n.label)': \(e.reason))")
                failed.formUnion(n.outputs)
            }
        }
        if !unsupported.isEmpty { throw ExportError.unsupportedOps(format: format, ops: unsupported) }
    }

    /// The tensors of the graph's outputs `names`: the one a node writes, or (for an input, a constant,
    /// an alias, or a value already given as an earlier output) a copy under the output's own name.
    mutating func outputTensors(_ names: [String]) throws -> [Int] {
        var out: [Int] = []
        for o in names {
            if let t = tensorOf[o], file.tensors[t].name == o, !g.isConstant(o), !out.contains(t) {
                out.append(t)
                continue
            }
            do {
                let x = try input(o)
                let y = try valueTensor(o, fresh: true)
                try reshape(x, to: file.tensors[y].shape, into: y)
                out.append(y)
            } catch let e as TFLiteOpError {
                throw ExportError.unsupported(format: format, what: "output '\(o)': \(e.reason)")
            }
        }
        return out
    }

    // MARK: values

    func resolve(_ v: String) -> String {
        var v = v
        var hops = 0
        while let a = alias[v], hops < 1_000_000 { v = a; hops += 1 }
        return v
    }

    func shape(_ v: String) throws -> [Int] {
        guard let s = g.shapes[resolve(v)] ?? g.shapes[v] else { throw TFLiteOpError("the shape of '\(v)' is unknown") }
        return s
    }

    func dtype(_ v: String) -> DType { g.dtypes[resolve(v)] ?? g.dtypes[v] ?? .float32 }

    /// The tensor holding runtime value `v` (created on first use).
    mutating func valueTensor(_ v: String, fresh: Bool = false) throws -> Int {
        if !fresh, let t = tensorOf[v] { return t }
        let s = try shape(v)
        let d = dtype(v)
        guard let type = TFLiteFileBuilder.tensorType(d) else { throw TFLiteOpError("'\(v)' has element type \(d), which TFLite has no tensor type for") }
        let t = file.addTensor(v, shape: s, type: type)
        tensorOf[v] = t
        return t
    }

    /// An intermediate tensor of the exporter's own.
    mutating func temp(_ base: String, shape: [Int], dtype: DType = .float32) throws -> Int {
        guard let type = TFLiteFileBuilder.tensorType(dtype) else { throw TFLiteOpError("no TFLite tensor type for \(dtype)") }
        return file.addTensor(g.fresh(base), shape: shape, type: type)
    }

    /// A node input as a tensor: a runtime value, or a constant as float (or
    /// integer) data, through DEQUANTIZE when it is stored compressed.
    mutating func input(_ v: String) throws -> Int {
        let r = resolve(v)
        if let t = tensorOf[r] { return t }
        if let c = g.constants[r] { return try constantTensor(r, c, hybrid: nil) }
        throw TFLiteOpError("'\(v)' is read before any op writes it")
    }

    /// Output `k` of node `n` as a tensor.
    mutating func output(_ n: Node, _ k: Int = 0) throws -> Int {
        guard k < n.outputs.count, !n.outputs[k].isEmpty else { throw TFLiteOpError("output \(k) is missing") }
        return try valueTensor(n.outputs[k], fresh: true)
    }

    mutating func int32Constant(_ base: String, _ values: [Int], shape: [Int]? = nil) throws -> Int {
        var out: [Int32] = []
        for v in values {
            guard let x = Int32(exactly: v) else { throw TFLiteOpError("\(base) value \(v) does not fit int32") }
            out.append(x)
        }
        return file.addTensor(g.fresh(base), shape: shape ?? [values.count], type: 2, data: .littleEndian(out))
    }

    mutating func floatConstant(_ base: String, _ values: [Float], shape: [Int]) -> Int {
        file.addTensor(g.fresh(base), shape: shape, type: 0, data: .littleEndian(floats: values))
    }

    /// RESHAPE with the shape both as input 1 and in ReshapeOptions, as TFLite's converter writes it
    /// (XNNPACK's delegate reads the options).
    mutating func reshape(_ x: Int, to shape: [Int], into y: Int) throws {
        let dims = shape.map { Int32(clamping: $0) }
        try op("RESHAPE", [x, try int32Constant("shape", shape)], [y], options: "ReshapeOptions") { b in
            let v = b.createVector(dims)
            return b.table { t in t.add(0, v) }
        }
    }

    // MARK: weights

    /// Where an int8 weight may stay int8 for the kernel reading it (dynamic range):
    /// the quantized axis the kernel accepts (per-tensor is always accepted).
    struct Hybrid {
        var axis: Int
        /// False where TFLite 2.12's kernel misreads per-channel scales (FULLY_CONNECTED gives wrong results).
        var perChannel = true
    }

    /// Constant `name` (already in TFLite's layout) as a tensor. With `hybrid`,
    /// a symmetric 8-bit weight quantized per tensor or along `hybrid.axis`
    /// stays int8 for the kernel; otherwise compressed weights are decoded by
    /// a DEQUANTIZE op.
    mutating func constantTensor(_ name: String, _ e: WeightEncoding, hybrid: Hybrid?, cacheKey: String? = nil) throws -> Int {
        let key = cacheKey ?? "\(name)|-|\(hybrid.map { "\($0.axis)\($0.perChannel)" } ?? "-")"
        if let t = weightCache[key] { return t }
        let t: Int
        switch e {
        case .dense(let x):
            t = try denseTensor(name, x)
        case .float16(let h):
            let half = file.addTensor(g.fresh(name + "_fp16"), shape: h.shape, type: 1, data: .littleEndian(h.bits))
            t = file.addTensor(name, shape: h.shape, type: 0)
            try op("DEQUANTIZE", [half], [t])
        case .affine(let a):
            let form = try TFLiteEmitter.int8Form(a, weight: name)
            if let hybrid, form.zeroPoint.allSatisfy({ $0 == 0 }), form.scale.count == 1 || (hybrid.perChannel && form.axis == hybrid.axis) {
                t = file.addTensor(name, shape: a.shape, type: 9, data: form.codes.map { UInt8(bitPattern: $0) },
                                   quantization: .init(scale: form.scale, zeroPoint: form.zeroPoint, axis: form.scale.count == 1 ? 0 : form.axis))
            } else {
                let q = file.addTensor(g.fresh(name + "_int8"), shape: a.shape, type: 9, data: form.codes.map { UInt8(bitPattern: $0) },
                                       quantization: .init(scale: form.scale, zeroPoint: form.zeroPoint, axis: form.scale.count == 1 ? 0 : form.axis))
                t = file.addTensor(name, shape: a.shape, type: 0)
                try op("DEQUANTIZE", [q], [t])
            }
        case .palette(let p):
            throw TFLiteOpError("weight '\(name)' is a \(p.bits)-bit palette (LUT); TFLite has no lookup-table weights — write Core ML (.mlmodel) for LUT modes, or use fp16 / 8-bit --symmetric linear for TFLite")
        }
        weightCache[key] = t
        return t
    }

    mutating func denseTensor(_ name: String, _ x: Tensor) throws -> Int {
        switch x.storage {
        case .float(let a):
            if x.dtype == .float64 {
                return file.addTensor(name, shape: x.shape, type: 10, data: .littleEndian(a.map { Double($0).bitPattern }))
            }
            if x.dtype == .float16 {
                return file.addTensor(name, shape: x.shape, type: 1, data: .littleEndian(a.map { Half.bits(from: $0) }))
            }
            return file.addTensor(name, shape: x.shape, type: 0, data: .littleEndian(floats: a))
        case .int(let a):
            switch x.dtype {
            case .int32: return file.addTensor(name, shape: x.shape, type: 2, data: .littleEndian(a.map { Int32(clamping: $0) }))
            case .int8: return file.addTensor(name, shape: x.shape, type: 9, data: a.map { UInt8(bitPattern: Int8(clamping: $0)) })
            case .uint8: return file.addTensor(name, shape: x.shape, type: 3, data: a.map { UInt8(clamping: $0) })
            case .int16: return file.addTensor(name, shape: x.shape, type: 7, data: .littleEndian(a.map { Int16(clamping: $0) }))
            default: return file.addTensor(name, shape: x.shape, type: 4, data: .littleEndian(a))
            }
        case .bool(let a):
            return file.addTensor(name, shape: x.shape, type: 6, data: a.map { $0 ? 1 : 0 })
        }
    }

    /// A weight input of node `n` in TFLite's layout (`perm` applied to the IR's).
    mutating func weight(_ v: String, perm: [Int]? = nil, hybrid: Hybrid? = nil) throws -> Int {
        let r = resolve(v)
        guard let e = g.constants[r] else { throw TFLiteOpError("weight '\(v)' is computed at run time; only constant weights are supported") }
        guard let perm else { return try constantTensor(r, e, hybrid: hybrid) }
        let t: WeightEncoding
        do { t = try e.transposed(perm) } catch { throw TFLiteOpError("weight '\(v)': \(error.reason)") }
        // The weight keeps its name in TFLite's layout, unless that name already holds another layout.
        let key = "\(r)|\(perm)|\(hybrid.map { "\($0.axis)\($0.perChannel)" } ?? "-")"
        if let cached = weightCache[key] { return cached }
        return try constantTensor(file.names.contains(r) ? g.fresh(r + "_tfl") : r, t, hybrid: hybrid, cacheKey: key)
    }

    /// An 8-bit affine weight as int8 codes with TFLite's quantization
    /// parameters (scale and integer zero point per tensor or along one axis).
    static func int8Form(_ a: AffineWeights, weight: String) throws -> (codes: [Int8], scale: [Float], zeroPoint: [Int64], axis: Int) {
        guard a.bits == 8 else {
            throw TFLiteOpError("weight '\(weight)' has \(a.bits)-bit codes; TFLite stores integer weights as 8-bit — compress with --bits 8 for TFLite, or write Core ML / ONNX for fewer bits")
        }
        var axis = 0
        if a.scale.count > 1 {
            let varying = a.shape.indices.filter { a.blockShape[$0] < a.shape[$0] }
            guard varying.count == 1, let v = varying.first, a.blockShape[v] == 1 else {
                throw TFLiteOpError("weight '\(weight)' is quantized in blocks \(a.blockShape); TFLite has one scale per tensor or per channel — use --granularity per-channel or per-tensor")
            }
            axis = v
        }
        guard let zps = a.integerZeroPoints else {
            throw TFLiteOpError("weight '\(weight)' has zero points that are not integers (asymmetric linear); TFLite stores integer zero points — compress with --symmetric for TFLite")
        }
        if a.signed {
            return (a.q.map { Int8(clamping: $0) }, a.scale, zps.map(Int64.init), axis)
        }
        // Unsigned codes 0…255 → int8 by shifting codes and zero points by 128.
        return (a.q.map { Int8(clamping: Int($0) - 128) }, a.scale, zps.map { Int64($0 - 128) }, axis)
    }

    // MARK: ops

    /// Appends an operator. `options` names the BuiltinOptions table its writer builds.
    mutating func op(_ name: String, _ inputs: [Int], _ outputs: [Int], options: String? = nil, version: Int32 = 1,
                     _ body: ((FlatBufferBuilder) -> FlatBufferOffset)? = nil) throws {
        guard let code = TFLiteEmitter.opCodes[name] else { throw TFLiteOpError("no builtin op \(name) in the schema") }
        var type: UInt8 = 0
        if let options {
            guard let t = TFLiteEmitter.optionTypes[options] else { throw TFLiteOpError("no options table \(options) in the schema") }
            type = t
        }
        let opcode = file.opcode(code, version: version)
        file.operators.append(.init(opcode: opcode, inputs: inputs, outputs: outputs, optionsType: type,
                                    options: options == nil ? nil : (body ?? { b in b.table { _ in } })))
    }

}
