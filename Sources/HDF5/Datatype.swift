/// How fixed-length strings fill their bytes.
public enum HDF5StringPadding: Sendable, Equatable {
    case nullTerminated, nullPadded, spacePadded
}

/// An element type, as the datatype message describes it. Classes the reader
/// cannot turn into values (compound, array, reference, time, bitfield,
/// complex, non-IEEE floats) are `unsupported`: the object still opens, and
/// reading its values throws an error that says why.
public indirect enum HDF5Datatype: Sendable, Equatable, CustomStringConvertible {
    case integer(size: Int, signed: Bool, bigEndian: Bool)
    /// IEEE 754 binary16, binary32 or binary64.
    case float(size: Int, bigEndian: Bool)
    case string(size: Int, padding: HDF5StringPadding, utf8: Bool)
    case variableLengthString(padding: HDF5StringPadding, utf8: Bool)
    case variableLengthSequence(HDF5Datatype)
    /// Values are read as the base integer type's values (h5py stores bool as an int8 enum FALSE = 0, TRUE = 1).
    case enumeration(base: HDF5Datatype, names: [String])
    case opaque(size: Int, tag: String)
    case unsupported(typeClass: Int, size: Int, reason: String)

    public var description: String {
        switch self {
        case .integer(let s, let signed, let be): return "\(signed ? "int" : "uint")\(s * 8)\(be ? " big-endian" : "")"
        case .float(let s, let be): return "float\(s * 8)\(be ? " big-endian" : "")"
        case .string(let s, _, let utf8): return "\(utf8 ? "UTF-8" : "ASCII") string of \(s) bytes"
        case .variableLengthString(_, let utf8): return "variable-length \(utf8 ? "UTF-8" : "ASCII") string"
        case .variableLengthSequence(let base): return "variable-length sequence of \(base)"
        case .enumeration(let base, let names): return "enum of \(base) (\(names.count) members)"
        case .opaque(let s, _): return "opaque (\(s) bytes)"
        case .unsupported(_, _, let reason): return reason
        }
    }

    static let classNames = ["fixed-point", "floating-point", "time", "string", "bitfield", "opaque", "compound",
                             "reference", "enumeration", "variable-length", "array", "complex"]
}

/// The datatype message (versions 1-5).
enum DatatypeParser {
    /// How deeply base types may nest (variable-length of enum of …).
    static let maxDepth = 8

    static func parse(_ c: inout Cursor, depth: Int = 0) throws -> HDF5Datatype {
        let at = c.pos
        guard depth <= maxDepth else { throw c.fail("datatype nests more than \(maxDepth) levels deep") }
        let classAndVersion = try c.u8("datatype class and version")
        let typeClass = classAndVersion & 0x0F
        let version = classAndVersion >> 4
        guard (1...5).contains(version) else { throw c.fail(at: at, "datatype version \(version) is not supported") }
        let bits = Int(try c.uint(3, "datatype class bit field"))
        let size = try c.int(4, "datatype size")
        switch typeClass {
        case 0:
            try c.skip(4, "fixed-point properties")
            guard [1, 2, 4, 8].contains(size) else {
                return .unsupported(typeClass: 0, size: size, reason: "\(size)-byte integers are not supported (1, 2, 4 or 8 bytes are)")
            }
            return .integer(size: size, signed: bits & 0x08 != 0, bigEndian: bits & 0x01 != 0)
        case 1:
            return try floatingPoint(&c, bits: bits, size: size)
        case 3:
            return .string(size: size, padding: try padding(bits & 0x0F, &c, at), utf8: (bits >> 4) & 0x0F == 1)
        case 5:
            let tag = try c.bytes(min(c.remaining, (bits & 0xFF)), "opaque tag")
            return .opaque(size: size, tag: String(decoding: tag.prefix { $0 != 0 }, as: UTF8.self))
        case 8:
            return try enumeration(&c, version: version, members: bits & 0xFFFF, size: size, depth: depth)
        case 9:
            let base = try parse(&c, depth: depth + 1)
            if bits & 0x0F == 1 {
                return .variableLengthString(padding: try padding((bits >> 4) & 0x0F, &c, at), utf8: (bits >> 8) & 0x0F == 1)
            }
            guard bits & 0x0F == 0 else { throw c.fail(at: at, "variable-length type \(bits & 0x0F) is not a sequence (0) or string (1)") }
            return .variableLengthSequence(base)
        case 2, 4, 6, 7, 10, 11:
            // Their properties are not needed: the type is reported, and its values refused.
            return .unsupported(typeClass: typeClass, size: size,
                                reason: "\(HDF5Datatype.classNames[typeClass]) datatypes (class \(typeClass)) are not supported")
        default:
            throw c.fail(at: at, "datatype class \(typeClass) is not defined")
        }
    }

    private static func padding(_ v: Int, _ c: inout Cursor, _ at: Int) throws -> HDF5StringPadding {
        switch v {
        case 0: return .nullTerminated
        case 1: return .nullPadded
        case 2: return .spacePadded
        default: throw c.fail(at: at, "string padding type \(v) is not defined")
        }
    }

    /// IEEE layouts only: (precision, exponent location, exponent size, mantissa location, mantissa size, bias).
    private static let ieee: [Int: (Int, Int, Int, Int, Int, Int)] = [
        2: (16, 10, 5, 0, 10, 15), 4: (32, 23, 8, 0, 23, 127), 8: (64, 52, 11, 0, 52, 1023),
    ]

    private static func floatingPoint(_ c: inout Cursor, bits: Int, size: Int) throws -> HDF5Datatype {
        let offset = try c.u16("bit offset")
        let precision = try c.u16("bit precision")
        let exponentLocation = try c.u8("exponent location")
        let exponentSize = try c.u8("exponent size")
        let mantissaLocation = try c.u8("mantissa location")
        let mantissaSize = try c.u8("mantissa size")
        let bias = try c.u32("exponent bias")
        let order = (bits & 0x01) | (bits >> 5 & 0x02)  // bits 0 and 6
        guard order <= 1 else {
            return .unsupported(typeClass: 1, size: size, reason: "floating-point byte order \(order == 3 ? "VAX" : "\(order)") is not supported")
        }
        guard let l = ieee[size], offset == 0, precision == l.0, exponentLocation == l.1, exponentSize == l.2,
              mantissaLocation == l.3, mantissaSize == l.4, bias == l.5, (bits >> 8) & 0xFF == size * 8 - 1 else {
            return .unsupported(typeClass: 1, size: size,
                                reason: "\(size)-byte floating-point type with a non-IEEE layout (precision \(precision), exponent \(exponentSize) bits, mantissa \(mantissaSize) bits) is not supported")
        }
        return .float(size: size, bigEndian: order == 1)
    }

    private static func enumeration(_ c: inout Cursor, version: Int, members: Int, size: Int, depth: Int) throws -> HDF5Datatype {
        let at = c.pos
        let base = try parse(&c, depth: depth + 1)
        guard case .integer(let baseSize, _, _) = base, baseSize == size else {
            return .unsupported(typeClass: 8, size: size, reason: "enumeration of \(base) is not supported (integer bases are)")
        }
        var names: [String] = []
        for _ in 0..<members {
            let start = c.pos
            guard let nul = c.file.bytes[start..<c.end].firstIndex(of: 0) else {
                throw c.fail(at: start, "enumeration member name has no terminating NUL")
            }
            names.append(String(decoding: c.file.bytes[start..<nul], as: UTF8.self))
            var length = nul - start + 1
            if version < 3 { length = (length + 7) / 8 * 8 }  // padded to a multiple of 8
            try c.skip(length, "enumeration member name")
        }
        guard let valuesSize = Checked.mul(members, size) else { throw c.fail(at: at, "enumeration values overflow") }
        try c.skip(valuesSize, "enumeration values")
        return .enumeration(base: base, names: names)
    }
}

extension HDF5Datatype {
    /// Bytes one element takes in a dataset or attribute (a variable-length element is its
    /// length, a global heap collection address and an object index).
    func storageSize(_ file: FileData) -> Int {
        switch self {
        case .integer(let s, _, _), .float(let s, _), .string(let s, _, _), .opaque(let s, _), .unsupported(_, let s, _): return s
        case .enumeration(let base, _): return base.storageSize(file)
        case .variableLengthString, .variableLengthSequence: return 4 + file.offsetSize + 4
        }
    }
}
