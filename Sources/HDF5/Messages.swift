/// Parsers for the smaller header messages: links, link info, attribute info,
/// symbol table, fill values, filter pipelines and the shared-message wrapper.

/// Where a link points.
enum LinkTarget: Equatable {
    case hard(UInt64)
    case soft(String)
    case external(file: String, path: String)
    case userDefined(Int)
}

struct Link: Equatable {
    let name: String
    let target: LinkTarget
}

enum Messages {
    /// Link message (version 1).
    static func link(_ c: inout Cursor) throws -> Link {
        _ = try c.version("link message", 1...1)
        let flags = try c.u8("link flags")
        var type = 0
        if flags & 0x08 != 0 { type = try c.u8("link type") }
        if flags & 0x04 != 0 { try c.skip(8, "link creation order") }
        if flags & 0x10 != 0 { _ = try c.u8("link name character set") }
        let nameLength = try c.int(1 << (flags & 3), "link name length", max: 1 << 20)
        guard nameLength > 0 else { throw c.fail("link name is empty") }
        let name = String(decoding: try c.bytes(nameLength, "link name"), as: UTF8.self)
        switch type {
        case 0:
            let at = c.pos
            guard let address = try c.address("link target address") else {
                throw c.fail(at: at, "hard link '\(name)' has an undefined address")
            }
            return Link(name: name, target: .hard(address))
        case 1:
            let length = try c.u16("soft link length")
            return Link(name: name, target: .soft(String(decoding: try c.bytes(length, "soft link value"), as: UTF8.self)))
        case 64:
            let length = try c.u16("external link length")
            let value = try c.bytes(length, "external link value")
            // A version/flags byte, then the file name and the object path, each NUL-terminated.
            let parts = value.dropFirst().split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            return Link(name: name, target: .external(file: parts.first ?? "", path: parts.count > 1 ? parts[1] : ""))
        default:
            return Link(name: name, target: .userDefined(type))
        }
    }

    /// Link info (links) or attribute info (attributes) message: where dense storage is, if anywhere.
    struct DenseInfo {
        let heap: UInt64?
        let nameIndex: UInt64?
    }

    static func linkInfo(_ c: inout Cursor) throws -> DenseInfo {
        _ = try c.version("link info message", 0...0)
        let flags = try c.u8("link info flags")
        if flags & 1 != 0 { try c.skip(8, "maximum creation index") }
        return DenseInfo(heap: try c.address("fractal heap address"), nameIndex: try c.address("name index address"))
    }

    static func attributeInfo(_ c: inout Cursor) throws -> DenseInfo {
        _ = try c.version("attribute info message", 0...0)
        let flags = try c.u8("attribute info flags")
        if flags & 1 != 0 { try c.skip(2, "maximum creation index") }
        return DenseInfo(heap: try c.address("fractal heap address"), nameIndex: try c.address("name index address"))
    }

    /// Symbol table message: the v1 B-tree and the local heap of an old-style group.
    static func symbolTable(_ c: inout Cursor) throws -> (btree: UInt64, heap: UInt64) {
        let at = c.pos
        let btree = try c.address("symbol table B-tree address")
        let heap = try c.address("symbol table local heap address")
        guard let btree, let heap else { throw c.fail(at: at, "symbol table message has an undefined address") }
        return (btree, heap)
    }

    /// The fill value of the new (0x05, versions 1-3) or old (0x04) fill value message: nil when
    /// undefined (reads as zeros).
    static func fillValue(_ c: inout Cursor, old: Bool) throws -> ArraySlice<UInt8>? {
        if old {
            let size = try c.int(4, "fill value size")
            return size == 0 ? nil : try c.bytes(size, "fill value")
        }
        let version = try c.version("fill value message", 1...3)
        var defined: Bool
        if version < 3 {
            try c.skip(2, "allocation and write times")
            defined = try c.u8("fill value defined") != 0
            if version == 1 { defined = true }  // version 1 always has the size field
        } else {
            let flags = try c.u8("fill value flags")
            defined = flags & 0x20 != 0
        }
        guard defined, c.remaining > 0 || version >= 3 else { return nil }
        let size = try c.int(4, "fill value size")
        return size == 0 ? nil : try c.bytes(size, "fill value")
    }

    /// The object header address a shared message (versions 1-3) points to.
    static func sharedAddress(_ c: inout Cursor, what: String) throws -> UInt64 {
        let at = c.pos
        let version = try c.version("shared message", 1...3)
        let type = try c.u8("shared message type")
        if version == 1 {
            try c.skip(6)
            try c.skip(c.file.lengthSize, "shared message reserved field")
        } else if version == 3 && type == 1 {
            throw c.fail(at: at, "\(what) is stored in the file's shared object header message heap, which is not supported")
        }
        guard let address = try c.address("shared message address") else {
            throw c.fail(at: at, "shared \(what) has an undefined address")
        }
        return address
    }
}

/// One filter of a filter pipeline.
struct Filter: Equatable {
    let id: Int
    let name: String
    let optional: Bool
    let clientData: [UInt32]

    static let deflate = 1, shuffle = 2, fletcher32 = 3

    /// The name errors use: the stored one, or the registered name of a well-known filter.
    var displayName: String {
        if !name.isEmpty { return "\(id) '\(name)'" }
        let known = [1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset",
                     32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32015: "zstd", 32026: "blosc2"]
        return known[id].map { "\(id) '\($0)'" } ?? "\(id)"
    }

    /// Filter pipeline message, versions 1 and 2.
    static func pipeline(_ c: inout Cursor) throws -> [Filter] {
        let version = try c.version("filter pipeline message", 1...2)
        let count = try c.u8("number of filters")
        guard count <= 32 else { throw c.fail("filter pipeline lists \(count) filters (at most 32)") }
        if version == 1 { try c.skip(6) }
        var filters: [Filter] = []
        for _ in 0..<count {
            let id = try c.u16("filter id")
            var nameLength = 0
            if version == 1 || id >= 256 { nameLength = try c.u16("filter name length") }
            let flags = try c.u16("filter flags")
            let values = try c.u16("number of client data values")
            var name = ""
            if nameLength > 0 {
                let raw = try c.bytes(version == 1 ? (nameLength + 7) / 8 * 8 : nameLength, "filter name")
                name = String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            var data: [UInt32] = []
            try c.need(values * 4, "filter client data")
            for _ in 0..<values { data.append(UInt32(try c.u32("client data"))) }
            if version == 1 && values % 2 == 1 { try c.skip(4, "client data padding") }
            filters.append(Filter(id: id, name: name, optional: flags & 1 != 0, clientData: data))
        }
        return filters
    }
}
