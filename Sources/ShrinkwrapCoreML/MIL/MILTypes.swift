import CoreMLSchema
import Foundation
import ShrinkwrapIR

public typealias MILDataType = CoreML_Specification_MILSpec_DataType

/// Facts about ML Program (MIL) data types and literal values, shared by the
/// importer and the exporter: how a MIL type maps to an IR dtype and to a
/// blob storage type, and how a literal (an immediate value or a blob) is
/// laid out. Every layout below is the one coremltools 9.0 writes
/// (`converters/mil/backend/mil/helper.py`, `_tensor_field_by_type`):
///
/// | MIL type | immediate value field | element layout |
/// |---|---|---|
/// | fp32 | `floats` | one float each |
/// | fp64 | `doubles` | one double each |
/// | fp16 | `bytes` | little-endian binary16 |
/// | int8, uint8, uint32 | `bytes` | one little-endian element each |
/// | int4, uint1/2/3/4/6 | `bytes` | packed least-significant bit first |
/// | int16, uint16, int32 | `ints` | one int32 each |
/// | int64, uint64 | `longInts` | one int64 each |
/// | bool | `bools` | one bool each |
/// | string | `strings` | one string each |
public enum MILTypes {
    /// The IR dtype holding a MIL tensor type's values. Sub-byte integers
    /// widen to int8 / uint8; fp16 is a float32 value stored as binary16
    /// (`WeightEncoding.float16`); strings have none.
    public static func dtype(_ t: MILDataType) -> DType? {
        switch t {
        case .float32, .float16, .bfloat16: return .float32
        case .float64: return .float64
        case .int8, .int4: return .int8
        case .int16: return .int16
        case .int32: return .int32
        case .int64: return .int64
        case .uint8, .uint1, .uint2, .uint3, .uint4, .uint6: return .uint8
        case .uint16: return .uint16
        case .uint32: return .uint32
        case .uint64: return .uint64
        case .bool: return .bool
        default: return nil
        }
    }

    /// The MIL type an IR dtype is written as (nil: none).
    public static func milType(_ d: DType) -> MILDataType? {
        switch d {
        case .float32: return .float32
        case .float16: return .float16
        case .bfloat16: return .bfloat16
        case .float64: return .float64
        case .int8: return .int8
        case .int16: return .int16
        case .int32: return .int32
        case .int64: return .int64
        case .uint8: return .uint8
        case .uint16: return .uint16
        case .uint32: return .uint32
        case .uint64: return .uint64
        case .bool: return .bool
        }
    }

    /// Bits per element of an integer or float MIL type (nil for string, bool, unknown).
    public static func bits(_ t: MILDataType) -> Int? {
        switch t {
        case .uint1: return 1
        case .uint2: return 2
        case .uint3: return 3
        case .int4, .uint4: return 4
        case .uint6: return 6
        case .int8, .uint8, .float8E4M3Fn, .float8E5M2: return 8
        case .int16, .uint16, .float16, .bfloat16: return 16
        case .int32, .uint32, .float32: return 32
        case .int64, .uint64, .float64: return 64
        default: return nil
        }
    }

    /// Whether a MIL integer type is signed.
    public static func isSigned(_ t: MILDataType) -> Bool { [.int4, .int8, .int16, .int32, .int64].contains(t) }

    /// The blob storage type of a MIL type (nil: blobs cannot hold it).
    public static func blobType(_ t: MILDataType) -> MILBlobDataType? {
        switch t {
        case .float16: return .float16
        case .float32: return .float32
        case .bfloat16: return .bfloat16
        case .uint8: return .uint8
        case .int8: return .int8
        case .int16: return .int16
        case .uint16: return .uint16
        case .int4: return .int4
        case .uint1: return .uint1
        case .uint2: return .uint2
        case .uint3: return .uint3
        case .uint4: return .uint4
        case .uint6: return .uint6
        case .int32: return .int32
        case .uint32: return .uint32
        case .float8E4M3Fn: return .float8E4M3FN
        case .float8E5M2: return .float8E5M2
        default: return nil
        }
    }

    /// The short name coremltools prints for a type ("fp16", "int4", "uint3").
    public static func name(_ t: MILDataType) -> String {
        switch t {
        case .float16: return "fp16"
        case .float32: return "fp32"
        case .float64: return "fp64"
        case .bfloat16: return "bf16"
        case .bool: return "bool"
        case .string: return "string"
        default: return "\(t)"
        }
    }

    /// The fixed shape of a tensor type, or nil when a dimension is unknown.
    public static func fixedShape(_ t: CoreML_Specification_MILSpec_TensorType) -> [Int]? {
        var out: [Int] = []
        for d in t.dimensions {
            guard case .constant(let c)? = d.dimension, c.size <= UInt64(Int32.max) else { return nil }
            out.append(Int(c.size))
        }
        return out
    }
}

/// A constant MIL value decoded from an immediate value or a blob: its MIL
/// type, shape and elements (kept in the widest exact form).
public struct MILLiteral: Sendable, Equatable {
    public enum Elements: Sendable, Equatable {
        case floats([Float])
        /// binary16 bit patterns (fp16).
        case half([UInt16])
        case ints([Int64])
        case bools([Bool])
        case strings([String])
    }

    public var type: MILDataType
    public var shape: [Int]
    public var elements: Elements

    public init(type: MILDataType, shape: [Int], elements: Elements) {
        self.type = type; self.shape = shape; self.elements = elements
    }

    public var count: Int {
        switch elements {
        case .floats(let a): return a.count
        case .half(let a): return a.count
        case .ints(let a): return a.count
        case .bools(let a): return a.count
        case .strings(let a): return a.count
        }
    }

    /// The values as a dense IR tensor (fp16 widened to float32, sub-byte
    /// integers to int8 / uint8); nil for strings.
    public var tensor: Tensor? {
        switch elements {
        case .floats(let a): return Tensor(a, shape: shape, dtype: MILTypes.dtype(type) ?? .float32)
        case .half(let a): return Tensor(a.map(Half.float(fromBits:)), shape: shape)
        case .ints(let a): return Tensor(ints: a, shape: shape, dtype: MILTypes.dtype(type) ?? .int64)
        case .bools(let a): return Tensor(bools: a, shape: shape)
        case .strings: return nil
        }
    }

    /// How the IR stores the value: fp16 as `.float16` (a float32 weight
    /// stored as binary16), everything else dense; nil for strings.
    public var encoding: WeightEncoding? {
        if case .half(let bits) = elements, let h = try? Float16Weights(shape: shape, bits: bits) { return .float16(h) }
        return tensor.map(WeightEncoding.dense)
    }

    /// The strings of a string literal.
    public var strings: [String]? { if case .strings(let s) = elements { return s }; return nil }

    /// Why a literal could not be decoded.
    public struct DecodeError: Error, Sendable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
        init(_ reason: String) { self.reason = reason }
    }

    /// Decodes an immediate tensor value of `type` and `shape` (laid out as
    /// `MILTypes` says), checking the element count.
    public init(immediate v: CoreML_Specification_MILSpec_TensorValue, type: MILDataType, shape: [Int]) throws(DecodeError) {
        guard let n = checkedElementCount(shape, limit: 1 << 31) else { throw DecodeError("shape \(shape) is negative or too large") }
        self.type = type; self.shape = shape
        func check(_ count: Int) throws(DecodeError) {
            guard count == n else { throw DecodeError("\(count) values for shape \(shape) (\(n) elements) of type \(MILTypes.name(type))") }
        }
        switch (type, v.value) {
        case (.float32, .floats(let f)?): try check(f.values.count); elements = .floats(f.values)
        case (.float64, .doubles(let d)?): try check(d.values.count); elements = .floats(d.values.map { Float($0) })
        case (.bool, .bools(let b)?): try check(b.values.count); elements = .bools(b.values)
        case (.string, .strings(let s)?): try check(s.values.count); elements = .strings(s.values)
        case (.int16, .ints(let i)?), (.uint16, .ints(let i)?), (.int32, .ints(let i)?):
            try check(i.values.count); elements = .ints(i.values.map { Int64($0) })
        case (.int64, .longInts(let i)?), (.uint64, .longInts(let i)?): try check(i.values.count); elements = .ints(i.values)
        case (_, .bytes(let b)?):
            elements = try Self.fromBytes([UInt8](b.values), type: type, count: n)
        case (_, nil) where n == 0:
            elements = type == .float32 ? .floats([]) : .ints([])
        default:
            throw DecodeError("an immediate \(MILTypes.name(type)) value stored as \(v.value.map { "\($0)".prefix(while: { $0 != "(" }) } ?? "nothing")")
        }
    }

    /// Decodes a blob's data as `type` and `shape`.
    public init(blob: MILBlob, type: MILDataType, shape: [Int]) throws(DecodeError) {
        guard let n = checkedElementCount(shape, limit: 1 << 34) else { throw DecodeError("shape \(shape) is negative or too large") }
        guard MILTypes.blobType(type) == blob.dataType else {
            throw DecodeError("the blob holds \(blob.dataType) data, the value is declared \(MILTypes.name(type))")
        }
        guard blob.elementCount == n else {
            throw DecodeError("the blob holds \(blob.elementCount) elements, shape \(shape) has \(n)")
        }
        self.type = type; self.shape = shape
        elements = try Self.fromBytes(blob.bytes, type: type, count: n)
    }

    /// Elements of a byte-laid-out value: fp16, 8-, 16- and 32-bit integers, fp32, and packed sub-byte integers.
    static func fromBytes(_ b: [UInt8], type: MILDataType, count n: Int) throws(DecodeError) -> Elements {
        guard let bits = MILTypes.bits(type) else { throw DecodeError("a \(MILTypes.name(type)) value cannot be stored as bytes") }
        let needed = BitPacking.byteCount(count: n, bits: bits)
        guard b.count == needed else {
            throw DecodeError("\(b.count) bytes for \(n) \(MILTypes.name(type)) elements (\(needed) needed)")
        }
        func le(_ i: Int, _ width: Int) -> UInt64 { (0..<width).reduce(UInt64(0)) { $0 | UInt64(b[i * width + $1]) << (8 * UInt64($1)) } }
        switch type {
        case .float16: return .half((0..<n).map { UInt16(le($0, 2)) })
        case .float32: return .floats((0..<n).map { Float(bitPattern: UInt32(le($0, 4))) })
        case .bfloat16: return .floats((0..<n).map { Half.float(fromBFloatBits: UInt16(le($0, 2))) })
        case .int8: return .ints(b.prefix(n).map { Int64(Int8(bitPattern: $0)) })
        case .uint8: return .ints(b.prefix(n).map { Int64($0) })
        case .int16: return .ints((0..<n).map { Int64(Int16(bitPattern: UInt16(le($0, 2)))) })
        case .uint16: return .ints((0..<n).map { Int64(le($0, 2)) })
        case .int32: return .ints((0..<n).map { Int64(Int32(bitPattern: UInt32(le($0, 4)))) })
        case .uint32: return .ints((0..<n).map { Int64(le($0, 4)) })
        case .int4, .uint1, .uint2, .uint3, .uint4, .uint6:
            guard let codes = BitPacking.unpack(b, bits: bits, count: n, order: .lsbFirst) else {
                throw DecodeError("\(b.count) bytes do not hold \(n) packed \(bits)-bit codes")
            }
            if type == .int4 { return .ints(BitPacking.signExtend(codes, bits: 4).map { Int64($0) }) }
            return .ints(codes.map { Int64($0) })
        default:
            throw DecodeError("\(MILTypes.name(type)) values are not read")
        }
    }
}
