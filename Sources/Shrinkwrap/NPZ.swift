import Foundation
import ShrinkwrapIR

/// NumPy `.npz` archives: a ZIP file of `NAME.npy` members, as `np.savez`
/// (stored) and `np.savez_compressed` (deflate) write them.
///
/// The reader walks the central directory (found through the
/// end-of-central-directory record, and the ZIP64 end record when the classic
/// one points there), takes each member's sizes, CRC and offset from its
/// central entry (ZIP64 extra fields included, which numpy always writes in
/// local headers), and checks every offset and length against the file size
/// before reading. Members keep their archive order.
enum NPZ {
    struct Error: UserFacingError, Equatable {
        let file: String
        let member: String?
        let reason: String
        var description: String {
            (member.map { "\(file): member '\($0)': \(reason)" } ?? "\(file): \(reason)").escapingControlCharacters
        }
    }

    /// The largest member (uncompressed) read: 4 GiB.
    static let memberLimit = 1 << 32

    static func read(_ url: URL) throws -> [(name: String, tensor: Tensor)] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw Error(file: url.path, member: nil, reason: "cannot read: \((error as NSError).localizedDescription)")
        }
        return try decode([UInt8](data), file: url.path)
    }

    struct Entry {
        var name: String
        var nameBytes: [UInt8]
        var method: Int
        var flags: Int
        var crc: UInt32
        var compressedSize: Int
        var uncompressedSize: Int
        var localHeaderOffset: Int
    }

    static func decode(_ bytes: [UInt8], file: String) throws -> [(name: String, tensor: Tensor)] {
        let entries = try centralDirectory(bytes, file: file)
        var out: [(name: String, tensor: Tensor)] = []
        var seen = Set<String>()
        for e in entries {
            func fail(_ r: String) -> Error { Error(file: file, member: e.name, reason: r) }
            if e.name.hasSuffix("/") && e.uncompressedSize == 0 { continue }  // a directory entry
            guard e.name.hasSuffix(".npy") else { throw fail("not a .npy member (an .npz holds only NAME.npy files)") }
            let name = String(e.name.dropLast(4))
            guard !name.isEmpty else { throw fail("empty array name") }
            guard seen.insert(name).inserted else { throw fail("appears twice in the archive") }
            let content = try memberBytes(e, in: bytes, fail: fail)
            let tensor: Tensor
            do { tensor = try NPY.decode(Data(content), file: "\(file)[\(e.name)]") } catch let npy as NPY.Error {
                throw fail(npy.reason)
            }
            out.append((name: name, tensor: tensor))
        }
        return out
    }

    // MARK: - ZIP structures

    static func u16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }
    static func u32(_ b: [UInt8], _ at: Int) -> Int { u16(b, at) | u16(b, at + 2) << 16 }
    static func u64(_ b: [UInt8], _ at: Int) -> UInt64 { UInt64(u32(b, at)) | UInt64(u32(b, at + 4)) << 32 }

    /// A 64-bit size or offset from the file as an Int, or nil when it cannot
    /// describe a place in a file of `fileSize` bytes.
    static func fit(_ v: UInt64, within fileSize: Int) -> Int? { v <= UInt64(fileSize) ? Int(v) : nil }

    static func centralDirectory(_ b: [UInt8], file: String) throws -> [Entry] {
        func fail(_ r: String) -> Error { Error(file: file, member: nil, reason: r) }
        let size = b.count
        guard size >= 22 else {
            throw fail(size >= 4 && u32(b, 0) == 0x0403_4B50 ? "truncated ZIP archive (no end of central directory)" : "not a ZIP archive (too short)")
        }
        // Find the end-of-central-directory record: searching backwards over at most a 65535-byte comment.
        var eocd: Int?
        var fallback: Int?
        var i = size - 22
        let lowest = max(0, size - 22 - 65535)
        while i >= lowest {
            if b[i] == 0x50 && b[i + 1] == 0x4B && b[i + 2] == 0x05 && b[i + 3] == 0x06 {
                let commentLength = u16(b, i + 20)
                if i + 22 + commentLength == size { eocd = i; break }
                if fallback == nil && i + 22 + commentLength <= size { fallback = i }
            }
            i -= 1
        }
        guard let end = eocd ?? fallback else {
            throw fail(u32(b, 0) == 0x0403_4B50 ? "truncated or damaged ZIP archive (no end of central directory record)"
                                                : "not a ZIP archive (no end of central directory record)")
        }
        let disk = u16(b, end + 4), cdDisk = u16(b, end + 6)
        var entriesOnDisk = u16(b, end + 8)
        var entryCount = u16(b, end + 10)
        var cdSize = u32(b, end + 12)
        var cdOffset = u32(b, end + 16)
        guard disk == 0 && cdDisk == 0 && entriesOnDisk == entryCount else { throw fail("multi-disk ZIP archives are not supported") }

        if entryCount == 0xFFFF || cdSize == 0xFFFF_FFFF || cdOffset == 0xFFFF_FFFF {
            // ZIP64: the locator sits just before the classic record and points at the ZIP64 end record.
            guard end >= 20, u32(b, end - 20) == 0x0706_4B50 else {
                throw fail("ZIP64 archive without a ZIP64 end of central directory locator")
            }
            guard let recordOffset = fit(u64(b, end - 20 + 8), within: size), recordOffset <= end - 20 - 56,
                  u32(b, recordOffset) == 0x0606_4B50 else {
                throw fail("ZIP64 end of central directory record is missing or out of range")
            }
            guard u32(b, end - 20 + 4) == 0, u32(b, recordOffset + 16) == 0, u32(b, recordOffset + 20) == 0 else {
                throw fail("multi-disk ZIP archives are not supported")
            }
            guard let n = fit(u64(b, recordOffset + 32), within: size), let nDisk = fit(u64(b, recordOffset + 24), within: size),
                  let s = fit(u64(b, recordOffset + 40), within: size), let o = fit(u64(b, recordOffset + 48), within: size) else {
                throw fail("ZIP64 end of central directory has sizes larger than the file")
            }
            entriesOnDisk = nDisk
            entryCount = n
            cdSize = s
            cdOffset = o
            guard entriesOnDisk == entryCount else { throw fail("multi-disk ZIP archives are not supported") }
        }
        guard cdOffset <= size, cdSize <= size - cdOffset else {
            throw fail("central directory (\(cdSize) bytes at offset \(cdOffset)) runs past the end of the file (\(size) bytes)")
        }
        // Each central entry takes at least 46 bytes: a count beyond that is a lie, refuse before reserving.
        guard entryCount <= cdSize / 46 else { throw fail("central directory claims \(entryCount) entries in \(cdSize) bytes") }

        var entries: [Entry] = []
        entries.reserveCapacity(entryCount)
        var p = cdOffset
        let cdEnd = cdOffset + cdSize
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
                : (String(bytes: nameBytes, encoding: .utf8) ?? String(bytes: nameBytes, encoding: .isoLatin1) ?? "?")
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
                        func next(_ what: String) throws -> Int {
                            guard rEnd - r >= 8 else { throw failEntry("ZIP64 extra field has no \(what)") }
                            defer { r += 8 }
                            guard let v = fit(u64(b, r), within: memberLimit) else {
                                throw failEntry("ZIP64 \(what) \(u64(b, r)) is too large")
                            }
                            return v
                        }
                        if uncompressed == 0xFFFF_FFFF { uncompressed = try next("uncompressed size") }
                        if compressed == 0xFFFF_FFFF { compressed = try next("compressed size") }
                        if localOffset == 0xFFFF_FFFF { localOffset = try next("local header offset") }
                        break
                    }
                    q += 4 + len
                }
                guard found else { throw failEntry("sizes are marked ZIP64 but the entry has no ZIP64 extra field") }
                guard diskStart != 0xFFFF else { throw failEntry("multi-disk ZIP archives are not supported") }
            }
            guard diskStart == 0 || diskStart == 0xFFFF else { throw failEntry("multi-disk ZIP archives are not supported") }
            entries.append(Entry(name: name, nameBytes: nameBytes, method: method, flags: flags, crc: crc, compressedSize: compressed,
                                 uncompressedSize: uncompressed, localHeaderOffset: localOffset))
            p += 46 + nameLength + extraLength + commentLength
        }
        return entries
    }

    /// The member's uncompressed bytes, checked against its CRC-32.
    static func memberBytes(_ e: Entry, in b: [UInt8], fail: (String) -> Error) throws -> [UInt8] {
        let size = b.count
        guard e.flags & 0x1 == 0 else { throw fail("encrypted members are not supported") }
        guard e.method == 0 || e.method == 8 else {
            throw fail("compression method \(e.method) is not supported (only stored and deflate, as numpy writes)")
        }
        guard e.uncompressedSize <= memberLimit else { throw fail("uncompressed size \(e.uncompressedSize) bytes is too large") }
        let p = e.localHeaderOffset
        guard p <= size, size - p >= 30 else { throw fail("local header at offset \(p) runs past the end of the file (\(size) bytes)") }
        guard u32(b, p) == 0x0403_4B50 else { throw fail("bad local header signature at offset \(p)") }
        let nameLength = u16(b, p + 26), extraLength = u16(b, p + 28)
        guard size - p - 30 >= nameLength + extraLength else { throw fail("local header at offset \(p) runs past the end of the file") }
        let localName = Array(b[(p + 30)..<(p + 30 + nameLength)])
        guard localName == e.nameBytes else {
            throw fail("local header names a different member")
        }
        let start = p + 30 + nameLength + extraLength
        guard e.compressedSize <= size - start else {
            throw fail("data (\(e.compressedSize) bytes at offset \(start)) runs past the end of the file (\(size) bytes)")
        }
        let raw = Array(b[start..<(start + e.compressedSize)])
        let content: [UInt8]
        if e.method == 0 {
            guard e.compressedSize == e.uncompressedSize else {
                throw fail("stored member has compressed size \(e.compressedSize) but uncompressed size \(e.uncompressedSize)")
            }
            content = raw
        } else {
            do {
                content = try Inflate.decompress(raw, expectedSize: e.uncompressedSize, limit: memberLimit)
            } catch let err as Inflate.Error {
                throw fail("corrupt deflate data: \(err.reason)")
            }
        }
        let crc = CRC32.checksum(content)
        guard crc == e.crc else {
            throw fail(String(format: "CRC-32 mismatch (stored %08x, computed %08x): the archive is damaged", e.crc, crc))
        }
        return content
    }
}
