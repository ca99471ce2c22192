import FlatBuffers
import Foundation

/// Small .tflite files written with our FlatBufferBuilder, field ids from
/// Schemas/tflite/tflite.fbs, for importer tests.
struct TestTFLite {
    struct T {
        var name: String
        var shape: [Int32]
        var type: Int8 = 0
        var data: [UInt8]? = nil
        var quant: (scale: [Float], zeroPoint: [Int64], axis: Int32)? = nil
        var signature: [Int32]? = nil
        /// Writes a SparsityParameters table (Tensor field 6).
        var sparsity: ((FlatBufferBuilder) -> FlatBufferOffset)? = nil
    }

    struct O {
        /// BuiltinOperator code (32 = CUSTOM).
        var code: Int32
        var custom: String? = nil
        var inputs: [Int32]
        var outputs: [Int32]
        var optionsType: UInt8 = 0
        var options: ((FlatBufferBuilder) -> FlatBufferOffset)? = nil
        /// Operator.custom_options bytes.
        var customOptions: [UInt8]? = nil
    }

    var tensors: [T] = []
    var ops: [O] = []
    var inputs: [Int32] = []
    var outputs: [Int32] = []
    var identifier = "TFL3"
    /// Model.metadata entries, each with its own buffer.
    var metadata: [(name: String, data: [UInt8])] = []
    /// Bytes appended after the FlatBuffer, given its size (a ZIP of associated files).
    var trailer: ((Int) throws -> [UInt8])? = nil

    static func floats(_ v: [Float]) -> [UInt8] { v.flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) } }
    static func ints(_ v: [Int32]) -> [UInt8] { v.flatMap { withUnsafeBytes(of: $0.littleEndian, Array.init) } }

    func bytes() throws -> [UInt8] {
        let b = FlatBufferBuilder()
        // Buffers: 0 is the empty sentinel, then one per tensor with data.
        var bufferIndex: [Int] = []
        var bufferTables: [FlatBufferOffset] = [b.table { _ in }]
        for t in tensors {
            if let d = t.data {
                let v = b.createVector(bytes: d, alignment: 16)
                bufferTables.append(b.table { $0.add(0, v) })
                bufferIndex.append(bufferTables.count - 1)
            } else {
                bufferIndex.append(0)
            }
        }
        var metadataTables: [FlatBufferOffset] = []
        for m in metadata {
            let v = b.createVector(bytes: m.data, alignment: 16)
            bufferTables.append(b.table { $0.add(0, v) })
            let name = b.createString(m.name)
            let index = UInt32(bufferTables.count - 1)
            metadataTables.append(b.table { t in t.add(0, name); t.add(1, index, default: 0) })
        }
        let buffers = b.createVector(offsets: bufferTables)
        var tensorTables: [FlatBufferOffset] = []
        for (i, t) in tensors.enumerated() {
            let name = b.createString(t.name)
            let shape = b.createVector(t.shape)
            let sig = t.signature.map { b.createVector($0) }
            let sparsity = t.sparsity?(b)
            var q: FlatBufferOffset?
            if let quant = t.quant {
                let s = b.createVector(quant.scale), z = b.createVector(quant.zeroPoint)
                q = b.table { $0.add(2, s); $0.add(3, z); $0.add(6, quant.axis, default: 0) }
            }
            tensorTables.append(b.table { tb in
                tb.add(0, shape); tb.add(1, t.type, default: 0); tb.add(2, UInt32(bufferIndex[i]), default: 0)
                tb.add(3, name); tb.add(4, q); tb.add(6, sparsity); tb.add(7, sig)
            })
        }
        var codes: [(Int32, String?)] = []
        var opcodeIndex: [Int] = []
        for o in ops {
            if let k = codes.firstIndex(where: { $0.0 == o.code && $0.1 == o.custom }) {
                opcodeIndex.append(k)
            } else {
                codes.append((o.code, o.custom))
                opcodeIndex.append(codes.count - 1)
            }
        }
        let codeTables = codes.map { code, custom -> FlatBufferOffset in
            let c = custom.map { b.createString($0) }
            return b.table { tb in
                tb.add(0, Int8(clamping: min(code, 127)), default: 0); tb.add(1, c); tb.add(2, Int32(1), default: 1); tb.add(3, code, default: 0)
            }
        }
        var opTables: [FlatBufferOffset] = []
        for (k, o) in ops.enumerated() {
            let ins = b.createVector(o.inputs), outs = b.createVector(o.outputs)
            let opts = o.options?(b)
            let custom = o.customOptions.map { b.createVector(bytes: $0, alignment: 4) }
            opTables.append(b.table { tb in
                tb.add(0, UInt32(opcodeIndex[k]), default: 0); tb.add(1, ins); tb.add(2, outs)
                if let opts { tb.addUnion(4, type: o.optionsType, value: opts) }
                tb.add(5, custom)
            })
        }
        let tv = b.createVector(offsets: tensorTables), ov = b.createVector(offsets: opTables)
        let iv = b.createVector(inputs), outv = b.createVector(outputs), sgName = b.createString("main")
        let sg = b.table { tb in tb.add(0, tv); tb.add(1, iv); tb.add(2, outv); tb.add(3, ov); tb.add(4, sgName) }
        let sgs = b.createVector(offsets: [sg]), cv = b.createVector(offsets: codeTables), desc = b.createString("test")
        let mv = metadataTables.isEmpty ? nil : b.createVector(offsets: metadataTables)
        let model = b.table { tb in tb.add(0, UInt32(3), default: 0); tb.add(1, cv); tb.add(2, sgs); tb.add(3, desc); tb.add(4, buffers); tb.add(6, mv) }
        let flatbuffer = try b.finish(root: model, fileIdentifier: identifier)
        return try flatbuffer + (trailer?(flatbuffer.count) ?? [])
    }
}
