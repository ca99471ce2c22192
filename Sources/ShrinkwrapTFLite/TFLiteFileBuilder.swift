import FlatBuffers
import ShrinkwrapIR

/// The tables of one TFLite model file, collected in the order the exporter
/// emits them and serialized in one go: subgraph 0's tensors and operators
/// (then those of the further subgraphs WHILE runs, `extraSubgraphs`),
/// buffers (buffer 0 is the empty sentinel) and operator codes in first-use
/// order, shared by all subgraphs. Nothing depends on hashing or the clock,
/// so the same graph gives the same bytes.
struct TFLiteFileBuilder {
    struct Quantization: Equatable {
        var scale: [Float]
        var zeroPoint: [Int64]
        var axis: Int
    }

    struct TensorRecord {
        var name: String
        var shape: [Int]
        var type: Int8
        /// Index into `buffers`; 0 = no data.
        var buffer: Int
        var quantization: Quantization?
        /// State the interpreter keeps between invocations (an LSTM's output and cell state).
        var isVariable = false
    }

    struct OperatorRecord {
        var opcode: Int
        var inputs: [Int]
        var outputs: [Int]
        /// BuiltinOptions union type (0 = none) and the table writer.
        var optionsType: UInt8
        var options: ((FlatBufferBuilder) -> FlatBufferOffset)?
    }

    /// A finished subgraph past subgraph 0 (a WHILE's condition or body).
    struct SubgraphRecord {
        var name: String
        var tensors: [TensorRecord]
        var operators: [OperatorRecord]
        var inputs: [Int]
        var outputs: [Int]
    }

    var tensors: [TensorRecord] = []
    var buffers: [[UInt8]] = [[]]
    /// (builtin code, version) in first-use order.
    var opcodes: [(code: Int32, version: Int32)] = []
    var operators: [OperatorRecord] = []
    var inputs: [Int] = []
    var outputs: [Int] = []
    /// Tensor names in use.
    var names = Set<String>()
    /// Subgraphs 1, 2, … in index order.
    var extraSubgraphs: [SubgraphRecord] = []

    /// A builder for another subgraph of the same file: the buffers, operator codes and finished
    /// subgraphs so far, no tensors or operators (`finishSubgraph` hands them back).
    func subgraphBuilder() -> TFLiteFileBuilder {
        var f = TFLiteFileBuilder()
        f.buffers = buffers
        f.opcodes = opcodes
        f.extraSubgraphs = extraSubgraphs
        return f
    }

    /// Takes back what `sub` (from `subgraphBuilder`) added and appends its tables as the next subgraph; returns its index.
    mutating func finishSubgraph(_ sub: TFLiteFileBuilder, name: String) -> Int {
        buffers = sub.buffers
        opcodes = sub.opcodes
        extraSubgraphs = sub.extraSubgraphs
        extraSubgraphs.append(SubgraphRecord(name: name, tensors: sub.tensors, operators: sub.operators, inputs: sub.inputs, outputs: sub.outputs))
        return extraSubgraphs.count
    }

    /// TensorType values of the schema.
    static func tensorType(_ d: DType) -> Int8? {
        switch d {
        case .float32: return 0
        case .float16: return 1
        case .int32: return 2
        case .uint8: return 3
        case .int64: return 4
        case .bool: return 6
        case .int16: return 7
        case .int8: return 9
        case .float64: return 10
        default: return nil
        }
    }

    mutating func addTensor(_ name: String, shape: [Int], type: Int8, data: [UInt8]? = nil, quantization: Quantization? = nil) -> Int {
        var buffer = 0
        if let data {
            buffers.append(data)
            buffer = buffers.count - 1
        }
        tensors.append(TensorRecord(name: name, shape: shape, type: type, buffer: buffer, quantization: quantization))
        names.insert(name)
        return tensors.count - 1
    }

    mutating func opcode(_ code: Int32, version: Int32) -> Int {
        if let k = opcodes.firstIndex(where: { $0.code == code && $0.version == version }) { return k }
        opcodes.append((code, version))
        return opcodes.count - 1
    }

    /// The model file: identifier "TFL3", schema version 3.
    func serialize(subgraphName: String, description: String, metadata: [(name: String, data: [UInt8])]) throws -> [UInt8] {
        let b = FlatBufferBuilder(initialCapacity: 1 << 16)
        // Buffers: data vectors 16-byte aligned (the schema's force_align).
        var allBuffers = buffers
        var metadataEntries: [(name: String, buffer: Int)] = []
        for m in metadata {
            allBuffers.append(m.data)
            metadataEntries.append((m.name, allBuffers.count - 1))
        }
        let bufferTables: [FlatBufferOffset] = allBuffers.map { data in
            let vec: FlatBufferOffset? = data.isEmpty ? nil : b.createVector(bytes: data, alignment: 16)
            return b.table { t in t.add(0, vec) }
        }
        let bufferVector = b.createVector(offsets: bufferTables)

        var subgraphTables = [Self.subgraphTable(b, name: subgraphName, tensors: tensors, operators: operators, inputs: inputs, outputs: outputs)]
        for x in extraSubgraphs {
            subgraphTables.append(Self.subgraphTable(b, name: x.name, tensors: x.tensors, operators: x.operators, inputs: x.inputs, outputs: x.outputs))
        }
        let subgraphs = b.createVector(offsets: subgraphTables)
        let codes: [FlatBufferOffset] = opcodes.map { c in
            b.table { x in
                // Readers take max(deprecated_builtin_code, builtin_code); codes past 126 use the placeholder 127.
                x.add(0, Int8(clamping: min(c.code, 127)), default: 0)
                x.add(2, c.version, default: 1)
                x.add(3, c.code, default: 0)
            }
        }
        let codeVector = b.createVector(offsets: codes)
        let desc = b.createString(description)
        let metaTables: [FlatBufferOffset] = metadataEntries.map { m in
            let n = b.createString(m.name)
            return b.table { x in
                x.add(0, n)
                x.add(1, UInt32(m.buffer), default: 0)
            }
        }
        let metaVector: FlatBufferOffset? = metaTables.isEmpty ? nil : b.createVector(offsets: metaTables)
        let model = b.table { x in
            x.add(0, UInt32(3), default: 0)
            x.add(1, codeVector)
            x.add(2, subgraphs)
            x.add(3, desc)
            x.add(4, bufferVector)
            x.add(6, metaVector)
        }
        return try b.finish(root: model, fileIdentifier: "TFL3")
    }

    /// One subgraph's table: tensors, inputs, outputs, operators, name (in this order, as subgraph 0 always was).
    private static func subgraphTable(_ b: FlatBufferBuilder, name: String, tensors: [TensorRecord], operators: [OperatorRecord],
                                      inputs: [Int], outputs: [Int]) -> FlatBufferOffset {
        let tensorTables: [FlatBufferOffset] = tensors.map { t in
            let shape = b.createVector(t.shape.map { Int32(clamping: $0) })
            let name = b.createString(t.name)
            var quant: FlatBufferOffset?
            if let q = t.quantization {
                let scale = b.createVector(q.scale)
                let zp = b.createVector(q.zeroPoint)
                quant = b.table { x in
                    x.add(2, scale)
                    x.add(3, zp)
                    x.add(6, Int32(q.axis), default: 0)
                }
            }
            return b.table { x in
                x.add(0, shape)
                x.add(1, t.type, default: 0)
                x.add(2, UInt32(t.buffer), default: 0)
                x.add(3, name)
                x.add(4, quant)
                x.add(5, t.isVariable, default: false)
            }
        }
        let tensorVector = b.createVector(offsets: tensorTables)
        let operatorTables: [FlatBufferOffset] = operators.map { op in
            let ins = b.createVector(op.inputs.map { Int32($0) })
            let outs = b.createVector(op.outputs.map { Int32($0) })
            let options = op.options.map { $0(b) }
            return b.table { x in
                x.add(0, UInt32(op.opcode), default: 0)
                x.add(1, ins)
                x.add(2, outs)
                if let options { x.addUnion(4, type: op.optionsType, value: options) }
            }
        }
        let operatorVector = b.createVector(offsets: operatorTables)
        let inputVector = b.createVector(inputs.map { Int32($0) })
        let outputVector = b.createVector(outputs.map { Int32($0) })
        let nameString = b.createString(name)
        let subgraph = b.table { x in
            x.add(0, tensorVector)
            x.add(1, inputVector)
            x.add(2, outputVector)
            x.add(3, operatorVector)
            x.add(4, nameString)
        }
        return subgraph
    }
}

extension Array where Element == UInt8 {
    /// Little-endian bytes of scalars, as TFLite buffers hold them.
    static func littleEndian(floats: [Float]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(floats.count * 4)
        for f in floats { let v = f.bitPattern; for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        return out
    }

    static func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * T.bitWidth / 8)
        for v in values { for k in 0..<(T.bitWidth / 8) { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        return out
    }
}
