import Foundation
import ShrinkwrapIR

/// NumPy `.npy` files: format versions 1.0, 2.0 and 3.0, C order,
/// little-endian (or byte-order-free) element types.
public enum NPY {
    public struct Error: UserFacingError, Equatable {
        public let file: String
        public let reason: String
        public var description: String { "\(file): \(reason)" }
    }

    static let magic: [UInt8] = [0x93, 0x4E, 0x55, 0x4D, 0x50, 0x59]  // \x93NUMPY

    /// NumPy `descr` strings and the dtype each maps to.
    static let descrs: [String: DType] = [
        "<f4": .float32, "<f2": .float16, "<f8": .float64,
        "|i1": .int8, "<i2": .int16, "<i4": .int32, "<i8": .int64,
        "|u1": .uint8, "<u2": .uint16, "<u4": .uint32, "<u8": .uint64,
        "|b1": .bool,
    ]

    public static func read(_ url: URL) throws -> Tensor {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw Error(file: url.path, reason: "cannot read: \((error as NSError).localizedDescription)")
        }
        return try decode(data, file: url.path)
    }

    public static func decode(_ data: Data, file: String) throws -> Tensor {
        let bytes = [UInt8](data)
        func fail(_ r: String) -> Error { Error(file: file, reason: r) }
        guard bytes.count >= 10, Array(bytes[0..<6]) == magic else { throw fail("not a .npy file (bad magic)") }
        let major = bytes[6]
        let headerLength: Int
        let headerStart: Int
        switch major {
        case 1:
            headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
            headerStart = 10
        case 2, 3:
            guard bytes.count >= 12 else { throw fail("truncated header") }
            headerLength = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24
            headerStart = 12
        default:
            throw fail("unsupported .npy format version \(major).\(bytes[7])")
        }
        guard headerLength <= bytes.count - headerStart else { throw fail("header length \(headerLength) runs past the end of the file") }
        guard let header = String(bytes: bytes[headerStart..<(headerStart + headerLength)], encoding: major == 3 ? .utf8 : .isoLatin1) else {
            throw fail("header is not text")
        }
        let fields = try parseHeader(header, fail: fail)
        guard let dtype = descrs[fields.descr] else {
            throw fail("unsupported dtype '\(fields.descr)' (little-endian float16/32/64, int8–64, uint8–64, bool only)")
        }
        if fields.fortranOrder { throw fail("Fortran-order arrays are not supported; save with C order") }
        guard let count = checkedElementCount(fields.shape, limit: 1 << 32) else { throw fail("shape \(fields.shape) is too large") }
        let start = headerStart + headerLength
        let need = count * dtype.byteWidth
        guard bytes.count - start == need else {
            throw fail("data has \(bytes.count - start) bytes, shape \(fields.shape) of \(fields.descr) needs \(need)")
        }
        return bytes.withUnsafeBytes { raw -> Tensor in
            func ld<T: FixedWidthInteger>(_: T.Type, _ i: Int) -> T {
                T(littleEndian: raw.loadUnaligned(fromByteOffset: start + i * MemoryLayout<T>.size, as: T.self))
            }
            let shape = fields.shape
            switch dtype {
            case .float32: return Tensor((0..<count).map { Float(bitPattern: ld(UInt32.self, $0)) }, shape: shape)
            case .float16: return Tensor((0..<count).map { Half.float(fromBits: ld(UInt16.self, $0)) }, shape: shape, dtype: .float16)
            case .float64: return Tensor((0..<count).map { Float(Double(bitPattern: ld(UInt64.self, $0))) }, shape: shape, dtype: .float64)
            case .bfloat16: return Tensor((0..<count).map { Half.float(fromBFloatBits: ld(UInt16.self, $0)) }, shape: shape, dtype: .bfloat16)
            case .int8: return Tensor(ints: (0..<count).map { Int64(Int8(bitPattern: raw[start + $0])) }, shape: shape, dtype: dtype)
            case .uint8: return Tensor(ints: (0..<count).map { Int64(raw[start + $0]) }, shape: shape, dtype: dtype)
            case .int16: return Tensor(ints: (0..<count).map { Int64(ld(Int16.self, $0)) }, shape: shape, dtype: dtype)
            case .uint16: return Tensor(ints: (0..<count).map { Int64(ld(UInt16.self, $0)) }, shape: shape, dtype: dtype)
            case .int32: return Tensor(ints: (0..<count).map { Int64(ld(Int32.self, $0)) }, shape: shape, dtype: dtype)
            case .uint32: return Tensor(ints: (0..<count).map { Int64(ld(UInt32.self, $0)) }, shape: shape, dtype: dtype)
            case .int64: return Tensor(ints: (0..<count).map { ld(Int64.self, $0) }, shape: shape, dtype: dtype)
            case .uint64: return Tensor(ints: (0..<count).map { Int64(bitPattern: ld(UInt64.self, $0)) }, shape: shape, dtype: dtype)
            case .bool: return Tensor(bools: (0..<count).map { raw[start + $0] != 0 }, shape: shape)
            }
        }
    }

    struct Header { var descr: String; var fortranOrder: Bool; var shape: [Int] }

    /// Parses the Python dict literal of a .npy header.
    static func parseHeader(_ h: String, fail: (String) -> Error) throws -> Header {
        func value(of key: String) -> Substring? {
            guard let r = h.range(of: "'\(key)'") ?? h.range(of: "\"\(key)\"") else { return nil }
            var rest = h[r.upperBound...].drop { $0 == " " }
            guard rest.first == ":" else { return nil }
            rest = rest.dropFirst().drop { $0 == " " }
            return rest
        }
        guard let d = value(of: "descr"), let q = d.first, q == "'" || q == "\"" else { throw fail("header has no descr") }
        let dBody = d.dropFirst()
        guard let dEnd = dBody.firstIndex(of: q) else { throw fail("header descr is not terminated") }
        let descr = String(dBody[..<dEnd])
        guard let f = value(of: "fortran_order") else { throw fail("header has no fortran_order") }
        let fortran = f.hasPrefix("True")
        guard f.hasPrefix("True") || f.hasPrefix("False") else { throw fail("bad fortran_order") }
        guard let s = value(of: "shape"), s.first == "(" else { throw fail("header has no shape") }
        guard let close = s.firstIndex(of: ")") else { throw fail("header shape is not terminated") }
        var shape: [Int] = []
        for part in s[s.index(after: s.startIndex)..<close].split(separator: ",") {
            let p = part.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "L", with: "")
            if p.isEmpty { continue }
            guard let v = Int(p), v >= 0 else { throw fail("bad shape dimension '\(p)'") }
            shape.append(v)
        }
        return Header(descr: descr, fortranOrder: fortran, shape: shape)
    }

    /// Encodes a tensor as a version 1.0 .npy (header padded to 64 bytes).
    public static func encode(_ t: Tensor) -> Data {
        let descr = descrs.first { $0.value == t.dtype && t.dtype != .bfloat16 }?.key ?? "<f4"
        let shapeText = t.shape.isEmpty ? "()" : t.shape.count == 1 ? "(\(t.shape[0]),)" : "(" + t.shape.map(String.init).joined(separator: ", ") + ")"
        var header = "{'descr': '\(descr)', 'fortran_order': False, 'shape': \(shapeText), }"
        let unpadded = 10 + header.utf8.count + 1
        header += String(repeating: " ", count: (64 - unpadded % 64) % 64) + "\n"
        var out = Data(magic)
        out.append(contentsOf: [1, 0, UInt8(header.utf8.count & 0xFF), UInt8(header.utf8.count >> 8)])
        out.append(contentsOf: Array(header.utf8))
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        let isBFloat = t.dtype == .bfloat16
        switch t.storage {
        case .float(let a):
            switch isBFloat ? .float32 : t.dtype {
            case .float16: for v in a { put(Half.bits(from: v)) }
            case .float64: for v in a { put(Double(v).bitPattern) }
            default: for v in a { put(v.bitPattern) }
            }
        case .int(let a):
            for v in a {
                switch t.dtype {
                case .int8, .uint8: out.append(UInt8(truncatingIfNeeded: v))
                case .int16, .uint16: put(UInt16(truncatingIfNeeded: v))
                case .int32, .uint32: put(UInt32(truncatingIfNeeded: v))
                default: put(UInt64(bitPattern: v))
                }
            }
        case .bool(let a):
            out.append(contentsOf: a.map { $0 ? 1 : 0 })
        }
        return out
    }
}
