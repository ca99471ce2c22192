import FlatBuffers
import Foundation
import ShrinkwrapIR

/// The parts of a .tflite file the importer reads, decoded from the
/// FlatBuffer with every index checked (field ids: Schemas/tflite/tflite.fbs).
struct TFLiteModel {
    struct Quantization {
        var scale: [Float]
        var zeroPoint: [Int64]
        /// quantized_dimension (only meaningful with several scales).
        var axis: Int
    }

    struct TensorInfo {
        var index: Int
        var name: String
        /// TensorType value.
        var type: Int8
        var shape: [Int]
        /// shape_signature: −1 marks a dimension only known at run time.
        var signature: [Int]?
        var buffer: Int
        var quantization: Quantization?
        var isVariable: Bool
        /// How a sparse constant's buffer is laid out (TFLiteSparsity.swift); nil for a dense tensor.
        var sparsity: Sparsity? = nil
    }

    struct Op {
        var index: Int
        /// BuiltinOperator name ("CONV_2D"), or "CUSTOM(name)".
        var name: String
        var version: Int32
        /// Tensor indices; −1 = an omitted optional input.
        var inputs: [Int]
        var outputs: [Int]
        var optionsType: UInt8
        var options: Table?
        /// custom_options bytes (a CUSTOM op's parameters), empty when absent.
        var customOptions: ArraySlice<UInt8> = []
    }

    var file: String
    /// The whole file (the metadata's associated files are in a ZIP appended after the model).
    var bytes: [UInt8]
    var version: UInt32
    var description: String
    var subgraphName: String
    var tensors: [TensorInfo]
    var inputs: [Int]
    var outputs: [Int]
    var ops: [Op]
    /// Each buffer's bytes (empty when it holds none).
    var buffers: [ArraySlice<UInt8>]
    var metadata: [(name: String, buffer: Int)]
    var subgraphCount: Int { subgraphs.count }

    /// One subgraph's tables (subgraph 0 is the model; WHILE's condition and body are others).
    struct Subgraph {
        var name: String
        var tensors: [TensorInfo]
        var inputs: [Int]
        var outputs: [Int]
        var ops: [Op]
    }

    /// Every subgraph, each read and checked like subgraph 0.
    var subgraphs: [Subgraph]
    /// Which subgraph `tensors`, `inputs`, `outputs` and `ops` are (0 unless `viewing(_:)` chose another).
    var current = 0

    /// The model with subgraph `k`'s tables as its tensors, inputs, outputs and operators.
    func viewing(_ k: Int) -> TFLiteModel {
        var m = self
        let s = subgraphs[k]
        m.current = k
        m.subgraphName = s.name
        m.tensors = s.tensors
        m.inputs = s.inputs
        m.outputs = s.outputs
        m.ops = s.ops
        return m
    }

    static func typeName(_ t: Int8) -> String { TFLiteSchemaTables.tensorTypes[t] ?? "type \(t)" }

    /// Bytes per element of the types the importer reads as data.
    static func elementSize(_ t: Int8) -> Int? {
        switch t {
        case 0, 2, 15: return 4  // FLOAT32, INT32, UINT32
        case 1, 7, 16: return 2  // FLOAT16, INT16, UINT16
        case 3, 6, 9: return 1  // UINT8, BOOL, INT8
        case 4, 10, 12: return 8  // INT64, FLOAT64, UINT64
        default: return nil
        }
    }

    init(bytes: [UInt8], file: String) throws {
        self.file = file
        self.bytes = bytes
        let r = FieldReader(file: file)
        let fb = FlatBuffer(bytes: bytes)
        guard bytes.count >= 8 else { throw ImportError.malformed(r.loc("byte 0"), reason: "\(bytes.count) bytes is too short for a TFLite file") }
        guard fb.hasFileIdentifier("TFL3") else {
            let id = fb.fileIdentifierBytes.map { String(decoding: $0, as: UTF8.self) } ?? "?"
            throw ImportError.malformed(r.loc("byte 4"), reason: "file identifier is '\(id.escapingControlCharacters)', not 'TFL3' (not a TFLite model)")
        }
        let root = try r.wrap("Model") { try fb.root() }
        version = try r.wrap("Model.version") { try root.scalar(0, default: UInt32(0)) }
        description = try r.wrap("Model.description") { try root.string(3) ?? "" }
        let opNames = try Self.readOperatorCodes(root, r)
        let buffers = try Self.readBuffers(root, bytes, r)
        self.buffers = buffers
        let metas = try r.wrap("Model.metadata") { try root.tables(6) ?? [] }
        metadata = try metas.enumerated().map { i, m in
            try r.wrap("metadata[\(i)]") { (try m.string(0) ?? "", Int(try m.scalar(1, default: UInt32(0)))) }
        }
        let tables = try r.wrap("Model.subgraphs") { try root.tables(2) ?? [] }
        guard !tables.isEmpty else { throw ImportError.malformed(r.loc("Model.subgraphs"), reason: "the model has no subgraph") }
        let subgraphs = try tables.enumerated().map { k, sg in try Self.readSubgraph(sg, k, opNames: opNames, bufferCount: buffers.count, r) }
        self.subgraphs = subgraphs
        subgraphName = subgraphs[0].name
        tensors = subgraphs[0].tensors
        inputs = subgraphs[0].inputs
        outputs = subgraphs[0].outputs
        ops = subgraphs[0].ops
    }

    /// Subgraph `k`: its name, tensors, inputs, outputs and operators, every index checked.
    private static func readSubgraph(_ sg: Table, _ k: Int, opNames: [(name: String, version: Int32)], bufferCount: Int,
                                     _ r: FieldReader) throws -> Subgraph {
        let place = "subgraphs[\(k)]"
        let name = try r.wrap(place + ".name") { try sg.string(4) ?? "" }
        let tensors = try readTensors(sg, k, bufferCount: bufferCount, r)
        let inputs = try r.indices(try r.wrap(place + ".inputs") { try sg.scalars(1, as: Int32.self) ?? [] }, place + ".inputs",
                                   optional: false, tensorCount: tensors.count)
        let outputs = try r.indices(try r.wrap(place + ".outputs") { try sg.scalars(2, as: Int32.self) ?? [] }, place + ".outputs",
                                    optional: false, tensorCount: tensors.count)
        let ops = try readOperators(sg, k, opNames: opNames, tensorCount: tensors.count, r)
        return Subgraph(name: name, tensors: tensors, inputs: inputs, outputs: outputs, ops: ops)
    }

    /// Each operator code's name ("CONV_2D", "CUSTOM(name)", "BUILTIN_<code>" for one this schema does not name) and version.
    private static func readOperatorCodes(_ root: Table, _ r: FieldReader) throws -> [(name: String, version: Int32)] {
        let codes = try r.wrap("Model.operator_codes") { try root.tables(1) ?? [] }
        var opNames: [(name: String, version: Int32)] = []
        for (i, c) in codes.enumerated() {
            let place = "operator_codes[\(i)]"
            let deprecated = try r.wrap(place) { Int32(try c.scalar(0, default: Int8(0))) }
            let builtin = try r.wrap(place) { try c.scalar(3, default: Int32(0)) }
            let version = try r.wrap(place) { try c.scalar(2, default: Int32(1)) }
            // Files from before builtin_code existed only set the deprecated byte.
            let code = max(builtin, deprecated)
            if code == 32 {  // CUSTOM
                let custom = try r.wrap(place) { try c.string(1) ?? "?" }
                opNames.append(("CUSTOM(\(custom))", version))
            } else {
                opNames.append((TFLiteSchemaTables.builtinOperators[code] ?? "BUILTIN_\(code)", version))
            }
        }
        return opNames
    }

    /// Each buffer's bytes: its data vector, or the range of the file an offset and size name (checked against its end).
    private static func readBuffers(_ root: Table, _ bytes: [UInt8], _ r: FieldReader) throws -> [ArraySlice<UInt8>] {
        let bufferTables = try r.wrap("Model.buffers") { try root.tables(4) ?? [] }
        var buffers: [ArraySlice<UInt8>] = []
        buffers.reserveCapacity(bufferTables.count)
        for (i, b) in bufferTables.enumerated() {
            let place = "buffers[\(i)]"
            let offset = try r.wrap(place) { try b.scalar(1, default: UInt64(0)) }
            if offset > 1 {
                let size = try r.wrap(place) { try b.scalar(2, default: UInt64(0)) }
                guard offset <= UInt64(bytes.count), size <= UInt64(bytes.count) - offset else {
                    throw ImportError.malformed(r.loc(place), reason: "data at offset \(offset), \(size) bytes, runs past the end of the \(bytes.count)-byte file")
                }
                buffers.append(bytes[Int(offset)..<Int(offset + size)])
            } else {
                buffers.append(try r.wrap(place) { try b.bytes(0) ?? [] })
            }
        }
        return buffers
    }

    /// Subgraph `k`'s tensors: name, shape (no negative dimension), signature, type, buffer (checked against
    /// `bufferCount`), quantization and whether it is a variable.
    private static func readTensors(_ sg: Table, _ k: Int, bufferCount: Int, _ r: FieldReader) throws -> [TensorInfo] {
        // Subgraph 0's places are unprefixed, as before the other subgraphs were read.
        let prefix = k == 0 ? "" : "subgraphs[\(k)]."
        let tensorTables = try r.wrap("subgraphs[\(k)].tensors") { try sg.tables(0) ?? [] }
        var tensors: [TensorInfo] = []
        tensors.reserveCapacity(tensorTables.count)
        for (i, t) in tensorTables.enumerated() {
            let place = prefix + "tensors[\(i)]"
            let name = try r.wrap(place) { try t.string(3) ?? "" }
            let tplace = prefix + "tensor[\(i)] '\(name)'"
            let shape = try r.wrap(tplace) { (try t.scalars(0, as: Int32.self) ?? []).map(Int.init) }
            if let bad = shape.first(where: { $0 < 0 }) {
                throw ImportError.badTensor(r.loc(tplace), reason: "negative dimension \(bad) in shape \(shape)")
            }
            let signature = try r.wrap(tplace) { try t.scalars(7, as: Int32.self)?.map(Int.init) }
            let type = try r.wrap(tplace) { try t.scalar(1, default: Int8(0)) }
            let buffer = Int(try r.wrap(tplace) { try t.scalar(2, default: UInt32(0)) })
            guard buffer < max(bufferCount, 1) else {
                throw ImportError.malformed(r.loc(tplace), reason: "buffer index \(buffer) is past the \(bufferCount) buffers")
            }
            var quant: Quantization?
            if let q = try r.wrap(tplace, { try t.table(4) }) {
                let scale = try r.wrap(tplace + ".quantization") { try q.scalars(2, as: Float.self) ?? [] }
                let zp = try r.wrap(tplace + ".quantization") { try q.scalars(3, as: Int64.self) ?? [] }
                let axis = Int(try r.wrap(tplace + ".quantization") { try q.scalar(6, default: Int32(0)) })
                if !scale.isEmpty { quant = Quantization(scale: scale, zeroPoint: zp, axis: axis) }
            }
            let variable = try r.wrap(tplace) { try t.scalar(5, default: false) }
            let sparsity = try r.wrap(tplace + ".sparsity") { try t.table(6) }.map { try Sparsity(table: $0, rank: shape.count, place: tplace + ".sparsity", r) }
            tensors.append(TensorInfo(index: i, name: name, type: type, shape: shape, signature: signature, buffer: buffer,
                                      quantization: quant, isVariable: variable, sparsity: sparsity))
        }
        return tensors
    }

    /// Subgraph `k`'s operators, their operator codes and tensor indices checked.
    private static func readOperators(_ sg: Table, _ k: Int, opNames: [(name: String, version: Int32)], tensorCount: Int,
                                      _ r: FieldReader) throws -> [Op] {
        let prefix = k == 0 ? "" : "subgraphs[\(k)]."
        let opTables = try r.wrap("subgraphs[\(k)].operators") { try sg.tables(3) ?? [] }
        var ops: [Op] = []
        ops.reserveCapacity(opTables.count)
        for (i, o) in opTables.enumerated() {
            let place = prefix + "operators[\(i)]"
            let code = Int(try r.wrap(place) { try o.scalar(0, default: UInt32(0)) })
            guard code < opNames.count else {
                throw ImportError.malformed(r.loc(place), reason: "opcode_index \(code) is past the \(opNames.count) operator codes")
            }
            let ins = try r.indices(try r.wrap(place) { try o.scalars(1, as: Int32.self) ?? [] }, place + ".inputs", optional: true, tensorCount: tensorCount)
            let outs = try r.indices(try r.wrap(place) { try o.scalars(2, as: Int32.self) ?? [] }, place + ".outputs", optional: false, tensorCount: tensorCount)
            let union = try r.wrap(place) { try o.union(4) }
            let custom = try r.wrap(place + ".custom_options") { try o.bytes(5) ?? [] }
            ops.append(Op(index: i, name: opNames[code].name, version: opNames[code].version, inputs: ins, outputs: outs,
                          optionsType: union?.type ?? 0, options: union?.table, customOptions: custom))
        }
        return ops
    }

    /// The file's name for error places, and FlatBuffer errors turned into import errors there.
    struct FieldReader {
        let file: String

        func loc(_ place: String) -> SourceLocation { SourceLocation(file: file, place: place) }

        func wrap<T>(_ place: String, _ body: () throws -> T) throws -> T {
            do { return try body() } catch let e as FlatBufferError {
                throw ImportError.malformed(loc(place), reason: e.description)
            }
        }

        /// Tensor indices, each within the `tensorCount` tensors (−1 allowed when `optional`).
        func indices(_ v: [Int32], _ place: String, optional: Bool, tensorCount: Int) throws -> [Int] {
            try v.map { x in
                if x == -1 && optional { return -1 }
                guard x >= 0, Int(x) < tensorCount else {
                    throw ImportError.malformed(loc(place), reason: "tensor index \(x) is outside the \(tensorCount) tensors")
                }
                return Int(x)
            }
        }
    }
}
