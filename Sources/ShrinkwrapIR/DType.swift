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
