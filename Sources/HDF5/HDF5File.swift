/// An HDF5 file held in memory, read-only: groups, datasets and attributes by
/// path. Everything read from the bytes is bounds-checked; a damaged or
/// unsupported file throws an `HDF5Error` naming the offset and the object.
///
///     let file = try HDF5File(bytes: bytes, file: "model.h5")
///     let config = try file.root.attribute("model_config")?.value.stringArray?.first
///     guard case .dataset(let kernel) = try file.object(at: "model_weights/dense/dense/kernel:0") else { … }
///     let weights = try kernel.read().floatArray
public struct HDF5File: Sendable {
    /// The default limit on the bytes one dataset or attribute value may take: 4 GiB.
    public static let defaultLimit = 1 << 32

    let data: FileData
    let rootAddress: UInt64

    /// Reads the superblock. `file` names the file in error messages; `limit` bounds the bytes one dataset's
    /// or attribute's values may take as stored (and so what a read allocates).
    public init(bytes: [UInt8], file: String, limit: Int = HDF5File.defaultLimit) throws {
        let superblock = try Superblock.read(bytes, name: file)
        data = FileData(bytes: bytes, name: file, base: superblock.base, offsetSize: superblock.offsetSize,
                        lengthSize: superblock.lengthSize, limit: max(0, limit))
        rootAddress = superblock.rootAddress
    }

    /// The superblock version (0-3).
    public var superblockVersion: Int { Int(data.bytes[data.base + 8]) }

    public var root: HDF5Group { HDF5Group(file: data, path: "", headerAddress: rootAddress) }

    /// The object at `path` ("a/b/c"; a leading "/" is optional; "" or "/" is the root group).
    public func object(at path: String) throws -> HDF5Object {
        var current = HDF5Object.group(root)
        for name in path.split(separator: "/") where name != "." {
            guard case .group(let group) = current else {
                throw data.error(current.address, describe("object header", current.path), "'\(current.path)' is a dataset, not a group")
            }
            current = try group.member(String(name))
        }
        return current
    }
}

/// A group or a dataset.
public enum HDF5Object: Sendable {
    case group(HDF5Group)
    case dataset(HDF5Dataset)

    public var path: String {
        switch self {
        case .group(let g): return g.path
        case .dataset(let d): return d.path
        }
    }

    /// Absolute position of the object header: equal for two paths hard-linked to one object.
    public var address: Int {
        switch self {
        case .group(let g): return g.address
        case .dataset(let d): return d.address
        }
    }

    public func attributes() throws -> [HDF5Attribute] {
        switch self {
        case .group(let g): return try g.attributes()
        case .dataset(let d): return try d.attributes()
        }
    }

    /// Opens the object whose header is at file address `address`: a dataset when it has a data layout
    /// message, a group when it has a symbol table, links or link info.
    static func open(_ file: FileData, address: UInt64, path: String) throws -> HDF5Object {
        let header = try ObjectHeader.read(file, address: address, path: path)
        let context = describe("object header", path)
        if header.first(ObjectHeader.layout) != nil {
            return .dataset(try HDF5Dataset(file: file, path: path, header: header))
        }
        let groupTypes = [ObjectHeader.symbolTable, ObjectHeader.linkInfo, ObjectHeader.link, ObjectHeader.groupInfo]
        if header.messages.contains(where: { groupTypes.contains($0.type) }) {
            return .group(HDF5Group(file: file, path: path, headerAddress: address))
        }
        if header.first(ObjectHeader.datatype) != nil {
            throw file.error(header.position, context, "'\(path)' is a committed datatype, not a group or dataset")
        }
        throw file.error(header.position, context, "object header has neither a data layout nor group messages")
    }
}

public struct HDF5Group: Sendable {
    let file: FileData
    /// "" for the root group, else "a/b".
    public let path: String
    let headerAddress: UInt64

    init(file: FileData, path: String, headerAddress: UInt64) {
        self.file = file
        self.path = path
        self.headerAddress = headerAddress
    }

    /// Absolute position of the object header.
    public var address: Int { file.base + Int(clamping: min(headerAddress, UInt64(Int.max - file.base))) }

    private func header() throws -> ObjectHeader { try ObjectHeader.read(file, address: headerAddress, path: path) }

    private func links() throws -> [Link] { try Links.of(file, header: try header(), path: path) }

    /// The names of the group's links, sorted by their UTF-8 bytes.
    public func members() throws -> [String] {
        try links().map(\.name).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The object a hard link called `name` points to. Soft and external links are not followed.
    public func member(_ name: String) throws -> HDF5Object {
        let childPath = path.isEmpty ? name : "\(path)/\(name)"
        let context = describe("object header", path)
        let links = try Links.of(file, header: try header(), path: path, named: name)
        guard let link = links.first(where: { $0.name == name }) else {
            throw file.error(address, context, "no member '\(name)'")
        }
        switch link.target {
        case .hard(let address):
            return try HDF5Object.open(file, address: address, path: childPath)
        case .soft(let target):
            throw file.error(address, context, "'\(childPath)' is a soft link to '\(target)', which is not followed")
        case .external(let otherFile, let otherPath):
            throw file.error(address, context, "'\(childPath)' is an external link to '\(otherPath)' in '\(otherFile)', which is not followed")
        case .userDefined(let type):
            throw file.error(address, context, "'\(childPath)' is a user-defined link (type \(type)), which is not followed")
        }
    }

    /// Every attribute, sorted by name.
    public func attributes() throws -> [HDF5Attribute] {
        let context = describe("attributes", path)
        return try Attributes.raw(file, header: try header(), path: path).map { try Attributes.decode(file, $0, context: context) }
    }

    /// The attribute called `name`, nil when there is none.
    public func attribute(_ name: String) throws -> HDF5Attribute? {
        try HDF5Group.attribute(name, file: file, header: try header(), path: path)
    }

    static func attribute(_ name: String, file: FileData, header: ObjectHeader, path: String) throws -> HDF5Attribute? {
        guard let raw = try Attributes.raw(file, header: header, path: path, named: name).first(where: { $0.name == name }) else { return nil }
        return try Attributes.decode(file, raw, context: describe("attributes", path))
    }
}

public struct HDF5Dataset: Sendable {
    let file: FileData
    public let path: String
    /// Absolute position of the object header.
    public let address: Int
    /// [] for scalar and null dataspaces.
    public let shape: [Int]
    public let type: HDF5Datatype
    /// Maximum dimensions (nil entries are unlimited).
    public let maxShape: [Int?]
    let space: Dataspace
    let headerAddress: Int

    init(file: FileData, path: String, header: ObjectHeader) throws {
        let context = describe("object header", path)
        guard let spaceMessage = header.first(ObjectHeader.dataspace) else {
            throw file.error(header.position, context, "dataset has no dataspace message")
        }
        guard let typeMessage = header.first(ObjectHeader.datatype) else {
            throw file.error(header.position, context, "dataset has no datatype message")
        }
        guard spaceMessage.flags & 0x02 == 0 else { throw file.error(spaceMessage.start, context, "shared dataspaces are not supported") }
        var c = try file.cursor(at: spaceMessage.start, length: spaceMessage.size, context)
        space = try Dataspace.parse(&c)
        type = try Datatypes.read(file, typeMessage.range, shared: typeMessage.flags & 0x02 != 0, context: context)
        self.file = file
        self.path = path
        address = header.position
        headerAddress = header.position
        shape = space.shape
        maxShape = space.kind == .simple ? space.maxDims : []
    }

    private func header() throws -> ObjectHeader {
        try ObjectHeader.read(file, address: UInt64(headerAddress - file.base), path: path)
    }

    /// All values, row-major. Missing chunks and unallocated storage read as the fill value (or zeros).
    public func read() throws -> HDF5Value {
        try DatasetReader.read(file, header: try header(), space: space, type: type, path: path)
    }

    public func attributes() throws -> [HDF5Attribute] {
        let context = describe("attributes", path)
        return try Attributes.raw(file, header: try header(), path: path).map { try Attributes.decode(file, $0, context: context) }
    }

    public func attribute(_ name: String) throws -> HDF5Attribute? {
        try HDF5Group.attribute(name, file: file, header: try header(), path: path)
    }
}
