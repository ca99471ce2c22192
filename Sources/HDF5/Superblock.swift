/// The superblock (format signature, versions 0-3): where the file's
/// addresses start, how wide they are, and the root group's object header.
struct Superblock {
    let version: Int
    /// Absolute position of the signature, which is file address 0.
    let base: Int
    let offsetSize: Int
    let lengthSize: Int
    /// File address of the root group's object header.
    let rootAddress: UInt64

    static let signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Finds the signature at 0, 512, 1024, 2048, … and reads the superblock there.
    static func read(_ bytes: [UInt8], name: String) throws -> Superblock {
        var at = 0
        while true {
            if bytes.count - at >= 8, bytes[at..<(at + 8)].elementsEqual(signature) { break }
            let next = at == 0 ? 512 : at * 2
            guard next < bytes.count else {
                throw HDF5Error(file: name, offset: 0, context: "superblock",
                                reason: "no HDF5 signature at offset 0, 512, 1024, … (\(bytes.count) bytes): not an HDF5 file")
            }
            at = next
        }
        // Sizes are not known yet: read the fixed part with a provisional 8-byte layout.
        let probe = FileData(bytes: bytes, name: name, base: at, offsetSize: 8, lengthSize: 8, limit: 0)
        var c = try probe.cursor(at: at + 8, "superblock")
        let version = try c.u8("superblock version")
        switch version {
        case 0, 1: return try readV0(&c, version: version, base: at)
        case 2, 3: return try readV2(&c, version: version, base: at)
        default: throw c.fail(at: at + 8, "superblock version \(version) is not supported (0-3 are)")
        }
    }

    private static func sizes(_ c: inout Cursor) throws -> (Int, Int) {
        let at = c.pos
        let offsets = try c.u8("size of offsets")
        let lengths = try c.u8("size of lengths")
        guard [2, 4, 8].contains(offsets), [2, 4, 8].contains(lengths) else {
            throw c.fail(at: at, "size of offsets \(offsets) / size of lengths \(lengths) is not supported (2, 4 or 8 bytes are)")
        }
        return (offsets, lengths)
    }

    /// Versions 0 and 1: the root group's symbol table entry holds its object header address.
    private static func readV0(_ c: inout Cursor, version: Int, base: Int) throws -> Superblock {
        try c.skip(3)  // free-space, root symbol table entry versions, reserved
        let sharedVersion = try c.u8("shared header message format version")
        _ = sharedVersion
        let (offsetSize, lengthSize) = try sizes(&c)
        try c.skip(1)
        try c.skip(4, "group B-tree K values")
        try c.skip(4, "file consistency flags")
        if version == 1 { try c.skip(4, "indexed storage K") }
        let file = FileData(bytes: c.file.bytes, name: c.file.name, base: base, offsetSize: offsetSize, lengthSize: lengthSize, limit: 0)
        var r = Cursor(file: file, pos: c.pos, end: c.end, context: "superblock")
        _ = try r.address("base address")
        _ = try r.address("free-space info address")
        try checkEndOfFile(&r, base: base)
        _ = try r.address("driver information block address")
        // Root group symbol table entry: link name offset, object header address, cache type, reserved, scratch.
        _ = try r.uint(offsetSize, "root link name offset")
        let at = r.pos
        guard let root = try r.address("root object header address") else {
            throw r.fail(at: at, "the root group's object header address is undefined")
        }
        try r.skip(8 + 16, "root symbol table entry")
        return Superblock(version: version, base: base, offsetSize: offsetSize, lengthSize: lengthSize, rootAddress: root)
    }

    /// Versions 2 and 3: a compact layout with a checksum.
    private static func readV2(_ c: inout Cursor, version: Int, base: Int) throws -> Superblock {
        let (offsetSize, lengthSize) = try sizes(&c)
        try c.skip(1, "file consistency flags")
        let file = FileData(bytes: c.file.bytes, name: c.file.name, base: base, offsetSize: offsetSize, lengthSize: lengthSize, limit: 0)
        var r = Cursor(file: file, pos: c.pos, end: c.end, context: "superblock")
        _ = try r.address("base address")
        _ = try r.address("superblock extension address")
        try checkEndOfFile(&r, base: base)
        let at = r.pos
        let root = try r.address("root object header address")
        try r.need(4, "superblock checksum")
        try file.verifyChecksum(from: base, checksumAt: r.pos, "superblock")
        guard let root else { throw r.fail(at: at, "the root group's object header address is undefined") }
        return Superblock(version: version, base: base, offsetSize: offsetSize, lengthSize: lengthSize, rootAddress: root)
    }

    /// The end-of-file address: a file shorter than it is truncated (libhdf5 refuses it too), even
    /// when what was cut off is not needed to reach the objects. h5py's files with a user block
    /// count it in (the address is the whole file's size).
    private static func checkEndOfFile(_ r: inout Cursor, base: Int) throws {
        let at = r.pos
        guard let eof = try r.address("end of file address") else { return }
        let have = r.file.bytes.count
        if eof > UInt64(have) {
            throw r.fail(at: at, "the file is truncated: its superblock says it ends at byte \(eof), past the end of the file (\(have) bytes)")
        }
    }
}
