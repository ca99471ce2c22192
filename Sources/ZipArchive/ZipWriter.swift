/// Writes small ZIP archives of stored (method 0, uncompressed) members, byte
/// for byte the same for the same input: members in the order given, every
/// timestamp 1980-01-01 00:00 (DOS date 0x0021, time 0), no extra fields, no
/// comments, "version made by / needed" 2.0, external attributes 0, the UTF-8
/// flag (bit 11) only on names that are not ASCII. No ZIP64: the archive and
/// its offsets must stay below 4 GiB.
///
/// `offsetBase` is the number of bytes that will come before the archive in
/// its file. A ZIP appended to a .tflite model counts its offsets from the
/// model's first byte, as tflite-support's MetadataPopulator (Python's
/// `zipfile` in append mode) writes them; pass the model's size then, and 0
/// for a standalone .zip.
public enum ZipWriter {
    public static func stored(_ members: [(name: String, data: [UInt8])], offsetBase: Int = 0,
                              file: String = "ZIP archive") throws -> [UInt8] {
        func fail(_ member: String?, _ reason: String) -> ZipArchive.Error { ZipArchive.Error(file: file, member: member, reason: reason) }
        guard offsetBase >= 0, offsetBase < 0xFFFF_FFFF else { throw fail(nil, "offset base \(offsetBase) is outside 0 ..< 4 GiB") }
        guard members.count < 0xFFFF else { throw fail(nil, "\(members.count) members is more than a ZIP without ZIP64 holds") }
        var seen = Set<String>()
        for m in members {
            let parts = m.name.split(separator: "/", omittingEmptySubsequences: false)
            guard !m.name.isEmpty, !m.name.hasPrefix("/"), !m.name.contains("\\"), !parts.contains(".."), !m.name.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                throw fail(m.name, "not a relative member name (empty, absolute, with '..', '\\' or control characters)")
            }
            guard m.name.utf8.count <= 0xFFFF else { throw fail(m.name, "name is longer than 65535 bytes") }
            guard seen.insert(m.name).inserted else { throw fail(m.name, "given twice") }
        }
        var out: [UInt8] = []
        func u16(_ v: Int) { out.append(UInt8(v & 0xFF)); out.append(UInt8(v >> 8 & 0xFF)) }
        func u32(_ v: Int) { u16(v & 0xFFFF); u16(v >> 16 & 0xFFFF) }
        let limit = 0xFFFF_FFFF
        func fits(_ v: Int) -> Bool { v >= 0 && v < limit }

        var local: [(offset: Int, crc: UInt32, flags: Int)] = []
        for m in members {
            let offset = offsetBase + out.count
            guard fits(offset), fits(m.data.count) else { throw fail(m.name, "the archive would pass 4 GiB (ZIP64 is not written)") }
            let crc = CRC32.checksum(m.data)
            let flags = m.name.utf8.allSatisfy { $0 < 0x80 } ? 0 : 0x800
            local.append((offset, crc, flags))
            u32(0x0403_4B50); u16(20); u16(flags); u16(0); u16(0); u16(0x21)
            u32(Int(crc)); u32(m.data.count); u32(m.data.count)
            u16(m.name.utf8.count); u16(0)
            out.append(contentsOf: m.name.utf8)
            out.append(contentsOf: m.data)
        }
        let cdOffset = offsetBase + out.count
        for (m, l) in zip(members, local) {
            u32(0x0201_4B50); u16(20); u16(20); u16(l.flags); u16(0); u16(0); u16(0x21)
            u32(Int(l.crc)); u32(m.data.count); u32(m.data.count)
            u16(m.name.utf8.count); u16(0); u16(0); u16(0); u16(0); u32(0)
            u32(l.offset)
            out.append(contentsOf: m.name.utf8)
        }
        let cdSize = offsetBase + out.count - cdOffset
        guard fits(cdOffset), fits(offsetBase + out.count) else { throw fail(nil, "the archive would pass 4 GiB (ZIP64 is not written)") }
        u32(0x0605_4B50); u16(0); u16(0); u16(members.count); u16(members.count)
        u32(cdSize); u32(cdOffset); u16(0)
        return out
    }
}
