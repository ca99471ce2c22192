/// Element types a graph value or constant can have.
///
/// Compute happens in three storage classes (see `TensorStorage`): every
/// floating type is held as `Float` (float16 / bfloat16 values are exactly
/// representable, float64 is narrowed), every integer type as `Int64`
/// (values kept in the type's range), and `bool` as `Bool`.
public enum DType: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
    case float32, float16, bfloat16, float64
    case int8, int16, int32, int64
    case uint8, uint16, uint32, uint64
    case bool

    public var description: String { rawValue }

    public var isFloatingPoint: Bool {
        switch self {
        case .float32, .float16, .bfloat16, .float64: return true
        default: return false
        }
    }

    public var isInteger: Bool { !isFloatingPoint && self != .bool }

    /// Bytes one element occupies in a file.
    public var byteWidth: Int {
        switch self {
        case .bool, .int8, .uint8: return 1
        case .float16, .bfloat16, .int16, .uint16: return 2
        case .float32, .int32, .uint32: return 4
        case .float64, .int64, .uint64: return 8
        }
    }

    /// Wraps an integer into this type's range, as a C cast does.
    @inlinable
    public func wrap(_ v: Int64) -> Int64 {
        switch self {
        case .int8: return Int64(Int8(truncatingIfNeeded: v))
        case .int16: return Int64(Int16(truncatingIfNeeded: v))
        case .int32: return Int64(Int32(truncatingIfNeeded: v))
        case .uint8: return Int64(UInt8(truncatingIfNeeded: v))
        case .uint16: return Int64(UInt16(truncatingIfNeeded: v))
        case .uint32: return Int64(UInt32(truncatingIfNeeded: v))
        default: return v
        }
    }
}

extension DType {
    /// `value` rounded to a value of this type, for the float types narrower
    /// than the `Float` that holds them: float16 (IEEE binary16) and bfloat16
    /// round to nearest, ties to even (beyond float16's range: ±inf; NaN
    /// stays NaN, quieted). Every other type returns `value` unchanged:
    /// float32 and float64 (held as Float) as they are, and integer and bool
    /// types too — turning a float into an integer (truncation, wrapping) is
    /// Cast's work, not this.
    @inlinable
    public func rounded(_ value: Float) -> Float {
        switch self {
        case .float16: return Half.round(value)
        case .bfloat16: return Half.float(fromBFloatBits: Half.bfloatBits(from: value))
        default: return value
        }
    }

    /// Rounds every element in place, as `rounded(_:)` does; the types it
    /// leaves unchanged are not looped over.
    @inlinable
    public func round(_ values: inout [Float]) {
        switch self {
        case .float16, .bfloat16:
            values.withUnsafeMutableBufferPointer { p in
                for i in p.indices { p[i] = rounded(p[i]) }
            }
        default:
            return
        }
    }

    /// `values` rounded element by element, as `rounded(_:)` does.
    @inlinable
    public func rounded(_ values: [Float]) -> [Float] {
        var v = values
        round(&v)
        return v
    }
}

extension DType {
    /// The ONNX `TensorProto.DataType` numbers. ONNX op attributes that name a
    /// type (Cast's `to`, EyeLike's `dtype`, RandomNormal's `dtype`, …) carry
    /// these numbers, and op semantics in the IR are ONNX's, so kernels use
    /// this mapping too.
    public init?(onnxDataType code: Int) {
        switch code {
        case 1: self = .float32
        case 2: self = .uint8
        case 3: self = .int8
        case 4: self = .uint16
        case 5: self = .int16
        case 6: self = .int32
        case 7: self = .int64
        case 9: self = .bool
        case 10: self = .float16
        case 11: self = .float64
        case 12: self = .uint32
        case 13: self = .uint64
        case 16: self = .bfloat16
        default: return nil
        }
    }

    public var onnxDataType: Int {
        switch self {
        case .float32: return 1
        case .uint8: return 2
        case .int8: return 3
        case .uint16: return 4
        case .int16: return 5
        case .int32: return 6
        case .int64: return 7
        case .bool: return 9
        case .float16: return 10
        case .float64: return 11
        case .uint32: return 12
        case .uint64: return 13
        case .bfloat16: return 16
        }
    }
}
