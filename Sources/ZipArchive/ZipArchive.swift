/// A ZIP archive held in memory: its central directory, and each member's
/// bytes on request (stored or deflate, checked against the member's CRC-32).
///
/// The archive may follow other bytes, as the ZIP that tflite-support's
/// MetadataPopulator appends to a .tflite model does: the end-of-central-
/// directory record is searched from the end of the bytes (over at most a
/// 65535-byte comment), and the ZIP64 end record is used when the classic one
/// points there. Offsets may count from the first byte of `bytes` (Python's
/// `zipfile` in append mode, MetadataPopulator) or from the start of the
/// archive (an archive concatenated after other data, `cat model zip`); the
/// difference is found where the central directory really ends, as Python's
/// `zipfile` and minizip do.
///
/// Every offset and length is checked against the bytes before it is used;
/// nothing is allocated from a size read from the archive before that size was
/// checked. Errors name the file and, where one is concerned, the member.
import ShrinkwrapIR

public struct ZipArchive: Sendable {
    /// A damaged or unsupported archive: one line naming the file and member.
    public struct Error: Swift.Error, CustomStringConvertible, Equatable, Sendable {
        public let file: String
        public let member: String?
        public let reason: String

        public init(file: String, member: String?, reason: String) {
            self.file = file; self.member = member; self.reason = reason
        }

        public var description: String {
            (member.map { "\(file): member '\($0)': \(reason)" } ?? "\(file): \(reason)").escapingControlCharacters
        }
    }

    /// One central directory entry. Offsets are positions in `bytes`.
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var nameBytes: [UInt8]
        /// 0 stored, 8 deflate (others are refused when the member is read).
        public var method: Int
        public var flags: Int
        public var crc: UInt32
        public var compressedSize: Int
        public var uncompressedSize: Int
        /// Where the member's local header starts in `bytes`.
        public var localHeaderOffset: Int
        /// A folder entry ("name/" with no data).
        public var isDirectory: Bool { name.hasSuffix("/") && uncompressedSize == 0 }
    }

    /// The largest member (uncompressed) read by default: 4 GiB.
    public static let defaultMemberLimit = 1 << 32

    /// The name errors use.
    public let file: String
    /// The bytes the archive was read from (including anything before it).
    public let bytes: [UInt8]
    /// The central directory in archive order.
    public let entries: [Entry]
    /// How many bytes come before the archive's first byte as its offsets count
    /// them: 0 when offsets count from the start of `bytes`.
    public let offsetBase: Int
    /// Members whose uncompressed size is larger are refused when read.
    public let memberLimit: Int

    /// Reads the central directory (members are read by `contents(of:)`).
    public init(bytes: [UInt8], file: String, memberLimit: Int = ZipArchive.defaultMemberLimit) throws {
        self.bytes = bytes
        self.file = file
        self.memberLimit = max(0, memberLimit)
        let directory = try ZipArchive.centralDirectory(bytes, file: file, memberLimit: self.memberLimit)
        entries = directory.entries
        offsetBase = directory.base
    }

    /// True when the bytes end with a ZIP end-of-central-directory record
    /// (possibly followed by its comment): the archive may still be damaged.
    public static func hasEndRecord(_ bytes: [UInt8]) -> Bool { findEndRecord(bytes) != nil }

    /// The first entry called `name` (exact bytes of the UTF-8 name).
    public func entry(named name: String) -> Entry? { entries.first { $0.name == name } }

    /// The member called `name`, or an error naming it when the archive has no such member.
    public func contents(ofMember name: String) throws -> [UInt8] {
        guard let e = entry(named: name) else {
            let names = entries.filter { !$0.isDirectory }.map { "'\($0.name)'" }
            let listed = names.isEmpty ? "it has no members" : "it has \(names.prefix(8).joined(separator: ", "))\(names.count > 8 ? ", …" : "")"
            throw Error(file: file, member: name, reason: "not in the archive (\(listed))")
        }
        return try contents(of: e)
    }

    /// A member's uncompressed bytes, checked against its CRC-32.
    public func contents(of e: Entry) throws -> [UInt8] {
        func fail(_ r: String) -> Error { Error(file: file, member: e.name, reason: r) }
        let b = bytes
        let size = b.count
        guard e.flags & 0x1 == 0 else { throw fail("encrypted members are not supported") }
        guard e.method == 0 || e.method == 8 else {
            throw fail("compression method \(e.method) is not supported (only stored and deflate)")
        }
        guard e.uncompressedSize <= memberLimit else {
            throw fail("uncompressed size \(e.uncompressedSize) bytes is over the limit of \(memberLimit) bytes")
        }
        let p = e.localHeaderOffset
        guard p >= 0, p <= size, size - p >= 30 else {
            throw fail("local header at offset \(p) runs past the end of the file (\(size) bytes)")
        }
        guard ZipArchive.u32(b, p) == 0x0403_4B50 else { throw fail("bad local header signature at offset \(p)") }
        let nameLength = ZipArchive.u16(b, p + 26), extraLength = ZipArchive.u16(b, p + 28)
        guard size - p - 30 >= nameLength + extraLength else { throw fail("local header at offset \(p) runs past the end of the file") }
        guard b[(p + 30)..<(p + 30 + nameLength)].elementsEqual(e.nameBytes) else {
            throw fail("local header at offset \(p) names a different member")
        }
        let start = p + 30 + nameLength + extraLength
        guard e.compressedSize >= 0, e.compressedSize <= size - start else {
            throw fail("data (\(e.compressedSize) bytes at offset \(start)) runs past the end of the file (\(size) bytes)")
        }
        let raw = b[start..<(start + e.compressedSize)]
        let content: [UInt8]
        if e.method == 0 {
            guard e.compressedSize == e.uncompressedSize else {
                throw fail("stored member has compressed size \(e.compressedSize) but uncompressed size \(e.uncompressedSize)")
            }
            content = Array(raw)
        } else {
            do {
                content = try Inflate.decompress(Array(raw), expectedSize: e.uncompressedSize, limit: memberLimit)
            } catch let err as Inflate.Error {
                throw fail("corrupt deflate data: \(err.reason)")
            }
        }
        let crc = CRC32.checksum(content)
        guard crc == e.crc else {
            throw fail("CRC-32 mismatch (stored \(ZipArchive.hex8(e.crc)), computed \(ZipArchive.hex8(crc))): the archive is damaged")
        }
        return content
    }

    // MARK: - Little-endian fields (callers check the bounds)

    public static func u16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }
    public static func u32(_ b: [UInt8], _ at: Int) -> Int { u16(b, at) | u16(b, at + 2) << 16 }
    public static func u64(_ b: [UInt8], _ at: Int) -> UInt64 { UInt64(u32(b, at)) | UInt64(u32(b, at + 4)) << 32 }

    /// A 64-bit size or offset as an Int, or nil when it exceeds `limit`.
    static func fit(_ v: UInt64, within limit: Int) -> Int? { v <= UInt64(max(0, limit)) ? Int(v) : nil }

    static func hex8(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 8 - s.count)) + s
    }


    // MARK: - Central directory

    /// Where the end-of-central-directory record is: the last one whose
    /// comment ends exactly at the end of the bytes, else the last one whose
    /// comment fits. Nil when there is none.
    static func findEndRecord(_ b: [UInt8]) -> Int? {
        let size = b.count
        guard size >= 22 else { return nil }
        var fallback: Int?
        var i = size - 22
        let lowest = max(0, size - 22 - 65535)
        while i >= lowest {
            if b[i] == 0x50 && b[i + 1] == 0x4B && b[i + 2] == 0x05 && b[i + 3] == 0x06 {
                let commentLength = u16(b, i + 20)
                if i + 22 + commentLength == size { return i }
                if fallback == nil && i + 22 + commentLength <= size { fallback = i }
            }
            i -= 1
        }
        return fallback
    }

    /// ZIP64: a locator just before the classic end record (at `end`) points at the ZIP64 end
    /// record, which holds the entry count, the directory's size and offset; and the record's
    /// own offset, where the directory ends.
    static func zip64EndRecord(_ b: [UInt8], end: Int, fail: (String) -> Error) throws -> (entries: Int, size: Int, offset: Int, cdEnd: Int) {
        let size = b.count
        guard end >= 20, u32(b, end - 20) == 0x0706_4B50 else {
            throw fail("ZIP64 archive without a ZIP64 end of central directory locator")
        }
        guard u32(b, end - 20 + 4) == 0 else { throw fail("multi-disk ZIP archives are not supported") }
        // The record sits right before the locator (its offset there counts from the archive's start,
        // which may not be the start of the bytes), or where the locator says.
        var record: Int?
        if end - 20 >= 56, u32(b, end - 20 - 56) == 0x0606_4B50 {
            record = end - 20 - 56
        } else if let r = fit(u64(b, end - 20 + 8), within: size), r <= end - 20 - 56, end - 20 >= 56, u32(b, r) == 0x0606_4B50 {
            record = r
        }
        guard let recordOffset = record else { throw fail("ZIP64 end of central directory record is missing or out of range") }
        guard u32(b, recordOffset + 16) == 0, u32(b, recordOffset + 20) == 0 else {
            throw fail("multi-disk ZIP archives are not supported")
        }
        guard let n = fit(u64(b, recordOffset + 32), within: size), let nDisk = fit(u64(b, recordOffset + 24), within: size),
              let s = fit(u64(b, recordOffset + 40), within: size), let o = fit(u64(b, recordOffset + 48), within: size) else {
            throw fail("ZIP64 end of central directory has sizes larger than the file")
        }
        guard nDisk == n else { throw fail("multi-disk ZIP archives are not supported") }
        return (n, s, o, recordOffset)
    }

    static func centralDirectory(_ b: [UInt8], file: String, memberLimit: Int) throws -> (entries: [Entry], base: Int) {
        func fail(_ r: String) -> Error { Error(file: file, member: nil, reason: r) }
        let size = b.count
        let startsLikeZip = size >= 4 && u32(b, 0) == 0x0403_4B50
        guard size >= 22 else {
            throw fail(startsLikeZip ? "truncated ZIP archive (no end of central directory)" : "not a ZIP archive (too short)")
        }
        guard let end = findEndRecord(b) else {
            throw fail(startsLikeZip ? "truncated or damaged ZIP archive (no end of central directory record)"
                                     : "not a ZIP archive (no end of central directory record)")
        }
        let disk = u16(b, end + 4), cdDisk = u16(b, end + 6)
        let entriesOnDisk = u16(b, end + 8)
        var entryCount = u16(b, end + 10)
        var cdSize = u32(b, end + 12)
        var cdOffset = u32(b, end + 16)
        guard disk == 0 && cdDisk == 0 && entriesOnDisk == entryCount else { throw fail("multi-disk ZIP archives are not supported") }
        // The central directory ends where the (ZIP64) end record begins.
        var cdEnd = end

        if entryCount == 0xFFFF || cdSize == 0xFFFF_FFFF || cdOffset == 0xFFFF_FFFF {
            (entryCount, cdSize, cdOffset, cdEnd) = try zip64EndRecord(b, end: end, fail: fail)
        }
        guard cdOffset <= size, cdSize <= size - cdOffset else {
            throw fail("central directory (\(cdSize) bytes at offset \(cdOffset)) runs past the end of the file (\(size) bytes)")
        }
        // Where the directory really starts, and so how far the archive's offsets are shifted.
        guard cdSize <= cdEnd else {
            throw fail("central directory (\(cdSize) bytes) is longer than the \(cdEnd) bytes before its end record")
        }
        let cdStart = cdEnd - cdSize
        guard cdStart >= cdOffset else {
            throw fail("central directory (\(cdSize) bytes at offset \(cdOffset)) runs past its end record at offset \(cdEnd)")
        }
        let base = cdStart - cdOffset
        // Each central entry takes at least 46 bytes: a count beyond that is a lie, refuse before reserving.
        guard entryCount <= cdSize / 46 else { throw fail("central directory claims \(entryCount) entries in \(cdSize) bytes") }

        var entries: [Entry] = []
        entries.reserveCapacity(entryCount)
        var p = cdStart
        for index in 0..<entryCount {
            guard cdEnd - p >= 46 else { throw fail("central directory entry \(index) is truncated") }
            guard u32(b, p) == 0x0201_4B50 else { throw fail("central directory entry \(index) has a bad signature") }
            let flags = u16(b, p + 8)
            let method = u16(b, p + 10)
            let crc = UInt32(truncatingIfNeeded: u32(b, p + 16))
            var compressed = u32(b, p + 20)
            var uncompressed = u32(b, p + 24)
            let nameLength = u16(b, p + 28), extraLength = u16(b, p + 30), commentLength = u16(b, p + 32)
            let diskStart = u16(b, p + 34)
            var localOffset = u32(b, p + 42)
            guard cdEnd - p - 46 >= nameLength + extraLength + commentLength else {
                throw fail("central directory entry \(index) runs past the end of the directory")
            }
            let nameBytes = Array(b[(p + 46)..<(p + 46 + nameLength)])
            let name = flags & 0x800 != 0
                ? String(decoding: nameBytes, as: UTF8.self)
                : (String(validatingUTF8Bytes: nameBytes) ?? String(nameBytes.map { Character(Unicode.Scalar($0)) }))
            func failEntry(_ r: String) -> Error { Error(file: file, member: name, reason: r) }
            // ZIP64 extended information: 8-byte values for exactly the fields that read 0xFFFFFFFF, in this order.
            if compressed == 0xFFFF_FFFF || uncompressed == 0xFFFF_FFFF || localOffset == 0xFFFF_FFFF || diskStart == 0xFFFF {
                var q = p + 46 + nameLength
                let extraEnd = q + extraLength
                var found = false
                while extraEnd - q >= 4 {
                    let id = u16(b, q), len = u16(b, q + 2)
                    guard extraEnd - q - 4 >= len else { throw failEntry("extra field runs past its end") }
                    if id == 0x0001 {
                        found = true
                        var r = q + 4
                        let rEnd = r + len
                        func next(_ what: String, limit: Int) throws -> Int {
                            guard rEnd - r >= 8 else { throw failEntry("ZIP64 extra field has no \(what)") }
                            defer { r += 8 }
                            guard let v = fit(u64(b, r), within: limit) else { throw failEntry("ZIP64 \(what) \(u64(b, r)) is too large") }
                            return v
                        }
                        if uncompressed == 0xFFFF_FFFF { uncompressed = try next("uncompressed size", limit: max(memberLimit, size)) }
                        if compressed == 0xFFFF_FFFF { compressed = try next("compressed size", limit: size) }
                        if localOffset == 0xFFFF_FFFF { localOffset = try next("local header offset", limit: size) }
                        break
                    }
                    q += 4 + len
                }
                guard found else { throw failEntry("sizes are marked ZIP64 but the entry has no ZIP64 extra field") }
                guard diskStart != 0xFFFF else { throw failEntry("multi-disk ZIP archives are not supported") }
            }
            guard diskStart == 0 || diskStart == 0xFFFF else { throw failEntry("multi-disk ZIP archives are not supported") }
            // localOffset ≤ 2^32 and base ≤ size: no overflow; the bounds are checked when the member is read.
            entries.append(Entry(name: name, nameBytes: nameBytes, method: method, flags: flags, crc: crc, compressedSize: compressed,
                                 uncompressedSize: uncompressed, localHeaderOffset: localOffset + base))
            p += 46 + nameLength + extraLength + commentLength
        }
        return (entries, base)
    }
}

extension String {
    /// The bytes as UTF-8, or nil when they are not valid UTF-8.
    fileprivate init?(validatingUTF8Bytes bytes: [UInt8]) {
        var it = bytes.makeIterator()
        var codec = UTF8()
        var scalars = String.UnicodeScalarView()
        while true {
            switch codec.decode(&it) {
            case .scalarValue(let s): scalars.append(s)
            case .emptyInput: self = String(scalars); return
            case .error: return nil
            }
        }
    }
}
