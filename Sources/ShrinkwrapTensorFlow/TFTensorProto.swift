import ShrinkwrapIR
import TensorFlowSchema

/// A Const node's TensorProto as a tensor: `tensor_content` (little-endian
/// elements), or the typed value fields, where fewer values than elements
/// repeat the last one (TensorFlow's rule; none at all means zeros).
enum TFTensorProto {
    /// Constants larger than this many elements are refused: 2^28 (1 GiB of
    /// float32, 2 GiB of int64). The typed value fields repeat their last value,
    /// so a few bytes of file can ask for all of them. The fuzzer lowers it to
    /// keep its memory small; nothing else should change it.
    nonisolated(unsafe) static var elementLimit = 1 << 28

    static func tensor(_ p: Tensorflow_TensorProto, at location: SourceLocation) throws -> Tensor {
        guard let dtype = DType(tensorFlow: p.dtype) else {
            throw ImportError.unsupported(location, what: p.dtype == .dtString ? "a string constant" : "a constant of type \(p.dtype)")
        }
        guard !p.tensorShape.unknownRank, p.tensorShape.dim.count <= 254 else {
            throw ImportError.badTensor(location, reason: "shape of unknown or too high rank")
        }
        let shape = try p.tensorShape.dim.map { d -> Int in
            guard d.size >= 0, d.size <= Int64(elementLimit) else { throw ImportError.badTensor(location, reason: "dimension of size \(d.size)") }
            return Int(d.size)
        }
        guard let count = checkedElementCount(shape), count <= elementLimit else {
            throw ImportError.badTensor(location, reason: "shape \(shape) has more than \(elementLimit) elements")
        }
        if !p.tensorContent.isEmpty {
            guard p.tensorContent.count == count * dtype.byteWidth else {
                throw ImportError.badTensor(location, reason: "\(p.tensorContent.count) bytes of content for shape \(shape) of \(dtype)")
            }
            return TensorBundle.decode(littleEndian: [UInt8](p.tensorContent), dtype: dtype, shape: shape)
        }
        let storage: TensorStorage
        switch dtype {
        // The values are converted before they are repeated: one array of `count` elements, not two.
        case .float32: storage = .float(try filled(p.floatVal, count, 0, location))
        case .float64: storage = .float(try filled(p.doubleVal.map { Float($0) }, count, 0, location))
        case .float16: storage = .float(try filled(p.halfVal.map { Half.float(fromBits: UInt16(truncatingIfNeeded: $0)) }, count, 0, location))
        case .bfloat16: storage = .float(try filled(p.halfVal.map { Half.float(fromBFloatBits: UInt16(truncatingIfNeeded: $0)) }, count, 0, location))
        case .int64: storage = .int(try filled(p.int64Val, count, 0, location))
        case .uint32: storage = .int(try filled(p.uint32Val.map { Int64($0) }, count, 0, location))
        case .uint64: storage = .int(try filled(p.uint64Val.map { Int64(bitPattern: $0) }, count, 0, location))
        case .bool: storage = .bool(try filled(p.boolVal, count, false, location))
        case .int8, .int16, .int32, .uint8, .uint16: storage = .int(try filled(p.intVal.map { dtype.wrap(Int64($0)) }, count, 0, location))
        }
        return Tensor(dtype: dtype, shape: shape, storage: storage)
    }

    /// `values` stretched to `count` elements by repeating the last.
    private static func filled<T>(_ values: [T], _ count: Int, _ zero: T, _ location: SourceLocation) throws -> [T] {
        guard values.count <= count else {
            throw ImportError.badTensor(location, reason: "\(values.count) values for \(count) elements")
        }
        guard let last = values.last else { return Array(repeating: zero, count: count) }
        return values + Array(repeating: last, count: count - values.count)
    }
}
