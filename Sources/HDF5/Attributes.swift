/// A named value attached to a group or dataset.
public struct HDF5Attribute: Sendable, Equatable {
    public let name: String
    /// [] for scalar (one value) and null (no value) dataspaces.
    public let shape: [Int]
    public let type: HDF5Datatype
    public let value: HDF5Value
}

/// Attribute messages (versions 1-3), in the object header or, for dense
/// storage, in a fractal heap indexed by a v2 B-tree of name hashes (records
/// of type 8). Names are read first; values are decoded only for the
/// attributes asked for.
enum Attributes {
    /// One attribute message, parsed up to its data.
    struct Raw {
        let name: String
        let type: HDF5Datatype
        let space: Dataspace
        let data: Range<Int>
        let position: Int
    }

    /// Every attribute message of the object, sorted by name; with `named`, dense storage resolves only the
    /// records whose name hash matches.
    static func raw(_ file: FileData, header: ObjectHeader, path: String, named: String? = nil) throws -> [Raw] {
        let context = describe("attributes", path)
        var out: [Raw] = []
        for message in header.all(ObjectHeader.attribute) {
            out.append(try parse(file, message.range, context: context))
        }
        if let info = header.first(ObjectHeader.attributeInfo) {
            var c = try file.cursor(at: info.start, length: info.size, describe("object header", path))
            let denseContext = describe("dense attribute storage", path)
            try HeapRecords.dense(file, try Messages.attributeInfo(&c), at: info.start, links: false, named: named, context: denseContext) { object, _ in
                out.append(try parse(file, object.startIndex..<object.endIndex, context: denseContext))
            }
        }
        return out.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// The attribute's value.
    static func decode(_ file: FileData, _ raw: Raw, context: String) throws -> HDF5Attribute {
        guard let count = raw.space.count else { throw file.error(raw.position, context, "attribute '\(raw.name)' has too many elements") }
        var decoder = ValueDecoder(heap: GlobalHeap(file, context: "\(context), attribute '\(raw.name)'", budget: file.limit))
        let value = try decoder.decode(raw.type, count: count, file.bytes[raw.data], at: raw.data.lowerBound)
        return HDF5Attribute(name: raw.name, shape: raw.space.shape, type: raw.type, value: value)
    }

    private static func parse(_ file: FileData, _ range: Range<Int>, context: String) throws -> Raw {
        var c = try file.cursor(at: range.lowerBound, length: range.count, context)
        let version = try c.version("attribute message", 1...3)
        let flags = try c.u8("attribute flags")
        let nameSize = try c.u16("attribute name size")
        let typeSize = try c.u16("attribute datatype size")
        let spaceSize = try c.u16("attribute dataspace size")
        if version == 3 { _ = try c.u8("attribute name character set") }
        func padded(_ n: Int) -> Int { version == 1 ? (n + 7) / 8 * 8 : n }
        let nameBytes = try c.bytes(padded(nameSize), "attribute name")
        let name = String(decoding: nameBytes.prefix(nameSize).prefix { $0 != 0 }, as: UTF8.self)
        let typeStart = c.pos
        try c.skip(padded(typeSize), "attribute datatype")
        let spaceStart = c.pos
        try c.skip(padded(spaceSize), "attribute dataspace")
        let context = "\(context), attribute '\(name)'"
        let type = try Datatypes.read(file, typeStart..<(typeStart + typeSize), shared: flags & 0x01 != 0, context: context)
        guard flags & 0x02 == 0 else { throw file.error(spaceStart, context, "shared dataspaces are not supported") }
        var s = try file.cursor(at: spaceStart, length: spaceSize, context)
        let space = try Dataspace.parse(&s)
        guard let count = space.count, count <= file.limit, let bytes = Checked.mul(count, type.storageSize(file)) else {
            throw file.error(spaceStart, context, "attribute of \(space.dims) elements exceeds the limit of \(file.limit)")
        }
        guard bytes <= file.limit else {
            throw file.error(c.pos, context, "attribute value of \(bytes) bytes exceeds the limit of \(file.limit) bytes")
        }
        try c.need(bytes, "attribute value")
        return Raw(name: name, type: type, space: space, data: c.pos..<(c.pos + bytes), position: range.lowerBound)
    }
}

/// Datatype messages, possibly shared (a committed datatype in another object header).
enum Datatypes {
    static func read(_ file: FileData, _ range: Range<Int>, shared: Bool, context: String, depth: Int = 0) throws -> HDF5Datatype {
        var c = try file.cursor(at: range.lowerBound, length: range.count, context)
        guard shared else { return try DatatypeParser.parse(&c) }
        guard depth < 4 else { throw c.fail("shared datatype refers to another shared datatype too many times") }
        let address = try Messages.sharedAddress(&c, what: "datatype")
        let committed = try ObjectHeader.read(file, address: address, path: nil)
        guard let message = committed.first(ObjectHeader.datatype) else {
            throw file.error(committed.position, context, "shared datatype's object header has no datatype message")
        }
        return try read(file, message.range, shared: message.flags & 0x02 != 0, context: context, depth: depth + 1)
    }
}
