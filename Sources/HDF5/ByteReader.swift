/// The file's bytes and what the superblock says about reading them: where
/// address 0 is, how wide addresses and lengths are, and the limit on a
/// dataset's size. Every structure reader goes through `Cursor`, which checks
/// each read against the end of the file and of the structure.
struct FileData: Sendable {
    let bytes: [UInt8]
    let name: String
    /// The absolute position of file address 0 (where the superblock's signature is).
    let base: Int
    /// Size of Offsets / Size of Lengths from the superblock (2, 4 or 8).
    let offsetSize: Int
    let lengthSize: Int
    /// The largest dataset or attribute value (in bytes, as stored) a read may produce.
    let limit: Int

    var size: Int { bytes.count }

    func error(_ offset: Int, _ context: String?, _ reason: String) -> HDF5Error {
        HDF5Error(file: name, offset: offset, context: context, reason: reason)
    }

    /// The absolute position of file address `address`, checked to leave at least `need` bytes before the end.
    func position(_ address: UInt64, need: Int, at offset: Int, _ context: String?) throws -> Int {
        guard address <= UInt64(Int.max - base) else {
            throw error(offset, context, "address \(address) is past the end of the file (size \(size))")
        }
        let pos = base + Int(address)
        guard pos <= size, need <= size - pos else {
            if pos >= size { throw error(offset, context, "address \(address) is past the end of the file (size \(size))") }
            throw error(pos, context, "\(need) bytes at address \(address) run past the end of the file (size \(size))")
        }
        return pos
    }

    /// The undefined address ("all bits set") for this file's Size of Offsets.
    var undefinedAddress: UInt64 { offsetSize >= 8 ? UInt64.max : (UInt64(1) << UInt64(offsetSize * 8)) - 1 }

    /// A cursor over `[start, start + length)` (or to the end of the file), checked against the file.
    func cursor(at start: Int, length: Int? = nil, _ context: String?) throws -> Cursor {
        guard start >= 0, start <= size else {
            throw error(start, context, "structure starts past the end of the file (size \(size))")
        }
        var end = size
        if let length {
            guard length >= 0, length <= size - start else {
                throw error(start, context, "\(length)-byte structure runs past the end of the file (size \(size))")
            }
            end = start + length
        }
        return Cursor(file: self, pos: start, end: end, context: context)
    }

    /// The structure at file address `address` (read at `offset`): checks its signature and version (when
    /// it has one), and returns a cursor after them (bounded by the end of the file) and where it starts.
    func structure(_ address: UInt64, _ signature: StaticString, _ what: String, versions: ClosedRange<Int>?,
                   from offset: Int = 0, _ context: String?) throws -> (cursor: Cursor, start: Int) {
        let start = try position(address, need: 4, at: offset, context)
        var c = try cursor(at: start, context)
        try c.signature(signature, what)
        if let versions { _ = try c.version(what, versions) }
        return (c, start)
    }

    /// The stored lookup3 checksum after `[start, checksumAt)` matches.
    func verifyChecksum(from start: Int, checksumAt: Int, _ context: String?) throws {
        guard start >= 0, start <= checksumAt, checksumAt <= size, size - checksumAt >= 4 else {
            throw error(checksumAt, context, "checksum runs past the end of the file (size \(size))")
        }
        let stored = UInt32(bytes[checksumAt]) | UInt32(bytes[checksumAt + 1]) << 8
            | UInt32(bytes[checksumAt + 2]) << 16 | UInt32(bytes[checksumAt + 3]) << 24
        let computed = Checksum.lookup3(bytes[start..<checksumAt])
        guard stored == computed else {
            throw error(checksumAt, context, "checksum mismatch (stored 0x\(hex(stored)), computed 0x\(hex(computed)))")
        }
    }
}

func hex(_ v: UInt32) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: max(0, 8 - s.count)) + s
}

/// A position in the file and the end of the structure being read; every read
/// is checked against that end and throws an `HDF5Error` naming the offset.
struct Cursor {
    let file: FileData
    var pos: Int
    let end: Int
    let context: String?

    var remaining: Int { end - pos }

    func fail(_ reason: String) -> HDF5Error { file.error(pos, context, reason) }

    func fail(at offset: Int, _ reason: String) -> HDF5Error { file.error(offset, context, reason) }

    mutating func need(_ n: Int, _ what: String) throws {
        guard n >= 0, n <= end - pos else {
            if end == file.size {
                throw fail("\(what) (\(n) bytes) runs past the end of the file (size \(file.size))")
            }
            throw fail("\(what) (\(n) bytes) runs past the end of the structure (at offset \(end))")
        }
    }

    mutating func u8(_ what: String = "field") throws -> Int {
        try need(1, what)
        defer { pos += 1 }
        return Int(file.bytes[pos])
    }

    mutating func u16(_ what: String = "field") throws -> Int { Int(try uint(2, what)) }

    mutating func u32(_ what: String = "field") throws -> Int { Int(try uint(4, what)) }

    /// An unsigned little-endian integer of `n` bytes (1...8).
    mutating func uint(_ n: Int, _ what: String = "field") throws -> UInt64 {
        guard (1...8).contains(n) else { throw fail("\(what) has an unsupported size of \(n) bytes") }
        try need(n, what)
        var v: UInt64 = 0
        for k in 0..<n { v |= UInt64(file.bytes[pos + k]) << UInt64(8 * k) }
        pos += n
        return v
    }

    /// An unsigned integer of `n` bytes that must fit an Int (and `max` when given).
    mutating func int(_ n: Int, _ what: String, max: Int = Int.max) throws -> Int {
        let at = pos
        let v = try uint(n, what)
        guard v <= UInt64(max) else { throw fail(at: at, "\(what) \(v) is too large (at most \(max))") }
        return Int(v)
    }

    /// A file address; nil for the undefined address.
    mutating func address(_ what: String = "address") throws -> UInt64? {
        let v = try uint(file.offsetSize, what)
        return v == file.undefinedAddress ? nil : v
    }

    /// A "Size of Lengths" field that must fit an Int.
    mutating func length(_ what: String) throws -> Int { try int(file.lengthSize, what) }

    mutating func skip(_ n: Int, _ what: String = "reserved bytes") throws {
        try need(n, what)
        pos += n
    }

    mutating func bytes(_ n: Int, _ what: String) throws -> ArraySlice<UInt8> {
        try need(n, what)
        defer { pos += n }
        return file.bytes[pos..<(pos + n)]
    }

    mutating func signature(_ s: StaticString, _ what: String) throws {
        let at = pos
        let expected = Array(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        let got = try bytes(expected.count, "\(what) signature")
        guard got.elementsEqual(expected) else {
            throw fail(at: at, "expected the \(what) signature '\(s)', found \(printable(got))")
        }
    }

    /// `version` is one of `allowed`, else an error naming the structure.
    mutating func version(_ what: String, _ allowed: ClosedRange<Int>) throws -> Int {
        let at = pos
        let v = try u8("\(what) version")
        guard allowed.contains(v) else { throw fail(at: at, "\(what) version \(v) is not supported") }
        return v
    }
}

/// Bytes for an error message: ASCII as text, anything else as hex.
func printable(_ bytes: ArraySlice<UInt8>) -> String {
    if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return "'" + String(decoding: bytes, as: UTF8.self) + "'" }
    return "0x" + bytes.map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined()
}

/// Checked arithmetic on values derived from the file.
enum Checked {
    static func mul(_ a: Int, _ b: Int) -> Int? {
        let (p, o) = a.multipliedReportingOverflow(by: b)
        return o ? nil : p
    }

    static func add(_ a: Int, _ b: Int) -> Int? {
        let (s, o) = a.addingReportingOverflow(b)
        return o ? nil : s
    }

    /// The product of `values`, nil on overflow.
    static func product(_ values: [Int]) -> Int? {
        var p = 1
        for v in values {
            guard let q = mul(p, v) else { return nil }
            p = q
        }
        return p
    }
}
