/// Element storage of a tensor: one of three compute classes (see `DType`).
public enum TensorStorage: Sendable, Equatable {
    case float([Float])
    case int([Int64])
    case bool([Bool])

    public var count: Int {
        switch self {
        case .float(let a): return a.count
        case .int(let a): return a.count
        case .bool(let a): return a.count
        }
    }
}

/// A dense, row-major tensor with a static shape.
public struct Tensor: Sendable, Equatable, CustomStringConvertible {
    public var dtype: DType
    public var shape: [Int]
    public var storage: TensorStorage

    /// Number of elements the shape describes (1 for a scalar).
    public var count: Int { shape.reduce(1, *) }
    public var rank: Int { shape.count }

    /// Builds a tensor; the storage class must fit the dtype and the element
    /// count must match the shape (a programming error otherwise).
    public init(dtype: DType, shape: [Int], storage: TensorStorage) {
        precondition(shape.reduce(1, *) == storage.count, "tensor shape \(shape) does not match \(storage.count) elements")
        self.dtype = dtype
        self.shape = shape
        self.storage = storage
    }

    public init(_ values: [Float], shape: [Int], dtype: DType = .float32) {
        self.init(dtype: dtype, shape: shape, storage: .float(values))
    }

    public init(ints values: [Int64], shape: [Int], dtype: DType = .int64) {
        self.init(dtype: dtype, shape: shape, storage: .int(values))
    }

    public init(bools values: [Bool], shape: [Int]) {
        self.init(dtype: .bool, shape: shape, storage: .bool(values))
    }

    public static func scalar(_ v: Float) -> Tensor { Tensor([v], shape: []) }
    public static func scalar(int v: Int64, dtype: DType = .int64) -> Tensor { Tensor(ints: [v], shape: [], dtype: dtype) }

    public static func zeros(_ shape: [Int], dtype: DType = .float32) -> Tensor {
        let n = shape.reduce(1, *)
        if dtype.isFloatingPoint { return Tensor(dtype: dtype, shape: shape, storage: .float(Array(repeating: 0, count: n))) }
        if dtype == .bool { return Tensor(dtype: dtype, shape: shape, storage: .bool(Array(repeating: false, count: n))) }
        return Tensor(dtype: dtype, shape: shape, storage: .int(Array(repeating: 0, count: n)))
    }

    /// The float elements, or nil when the storage is not floating point.
    public var floats: [Float]? { if case .float(let a) = storage { return a } else { return nil } }
    public var ints: [Int64]? { if case .int(let a) = storage { return a } else { return nil } }
    public var bools: [Bool]? { if case .bool(let a) = storage { return a } else { return nil } }

    /// Elements as Double whatever the storage class (for reports and tests).
    public var doubles: [Double] {
        switch storage {
        case .float(let a): return a.map(Double.init)
        case .int(let a): return a.map(Double.init)
        case .bool(let a): return a.map { $0 ? 1 : 0 }
        }
    }

    public func reshaped(_ newShape: [Int]) -> Tensor {
        var t = self
        t.shape = newShape
        precondition(t.count == storage.count)
        return t
    }

    public var description: String {
        let n = storage.count
        let head = doubles.prefix(8).map { String(describing: $0) }.joined(separator: ", ")
        return "Tensor<\(dtype)>\(shape)[\(head)\(n > 8 ? ", …" : "")]"
    }
}

/// Row-major strides for a shape.
@inlinable
public func stridesOf(_ shape: [Int]) -> [Int] {
    var s = Array(repeating: 1, count: shape.count)
    var acc = 1
    for i in stride(from: shape.count - 1, through: 0, by: -1) {
        s[i] = acc
        acc *= shape[i]
    }
    return s
}

/// Element count of a shape, or nil when a dimension is negative or the
/// product overflows `limit` (default 2^34 elements: 64 GiB of float32).
public func checkedElementCount(_ shape: [Int], limit: Int = 1 << 34) -> Int? {
    var n = 1
    for d in shape {
        if d < 0 { return nil }
        let (p, o) = n.multipliedReportingOverflow(by: d)
        if o || p > limit { return nil }
        n = p
    }
    return n
}

extension Tensor {
    /// The elements as files store them: little-endian, the dtype's width
    /// (.npy data, ONNX raw_data); float16 / bfloat16 rounded to nearest even.
    public func appendLittleEndianBytes(to out: inout [UInt8]) {
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        out.reserveCapacity(out.count + storage.count * dtype.byteWidth)
        switch storage {
        case .float(let a):
            switch dtype {
            case .float16: for v in a { put(Half.bits(from: v)) }
            case .bfloat16: for v in a { put(Half.bfloatBits(from: v)) }
            case .float64: for v in a { put(Double(v).bitPattern) }
            default: for v in a { put(v.bitPattern) }
            }
        case .int(let a):
            switch dtype.byteWidth {
            case 1: for v in a { out.append(UInt8(truncatingIfNeeded: v)) }
            case 2: for v in a { put(UInt16(truncatingIfNeeded: v)) }
            case 4: for v in a { put(UInt32(truncatingIfNeeded: v)) }
            default: for v in a { put(UInt64(bitPattern: v)) }
            }
        case .bool(let a):
            for v in a { out.append(v ? 1 : 0) }
        }
    }
}
