import Foundation
import ShrinkwrapIR
import SwiftProtobuf
import TensorFlowSchema

/// A TensorFlow tensor bundle: a SavedModel's `variables/variables`, or any TF2
/// checkpoint prefix. `<prefix>.index` is a `BundleTable` whose empty key holds
/// the BundleHeaderProto and whose other keys (the tensors' names, e.g.
/// "dense/kernel/.ATTRIBUTES/VARIABLE_VALUE") hold BundleEntryProtos: dtype,
/// shape, and where the bytes lie in the data files
/// `<prefix>.data-NNNNN-of-MMMMM` (shard NNNNN of MMMMM, numbered from 0).
///
/// The index is read and checked whole when the bundle opens. A data file is
/// opened only when a tensor in it is asked for, and only that tensor's bytes
/// are read; they must match the entry's CRC-32C.
struct TensorBundle {
    let prefix: URL
    /// `<prefix>.index`, as errors name it.
    let indexFile: String
    let header: Tensorflow_BundleHeaderProto
    /// The tensors' names in the index's (bytewise) order; the header is not one of them.
    let names: [String]
    private let entries: [String: [UInt8]]

    /// The bundle's version this reader understands (TensorFlow's kTensorBundleVersion).
    static let readerVersion: Int32 = 1
    /// The key of a TF2 checkpoint's TrackableObjectGraph (a DT_STRING scalar).
    static let objectGraphKey = "_CHECKPOINTABLE_OBJECT_GRAPH"

    /// Opens `<prefix>.index`.
    init(prefix: URL) throws {
        let indexFile = prefix.path + ".index"
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: indexFile))
        } catch {
            throw ImportError.unreadable(file: indexFile, reason: (error as NSError).localizedDescription)
        }
        try self.init(index: [UInt8](data), prefix: prefix)
    }

    /// A bundle whose index holds `index`; data files are looked for beside `prefix`.
    init(index: [UInt8], prefix: URL) throws {
        self.prefix = prefix
        indexFile = prefix.path + ".index"
        let table = try BundleTable(bytes: index, file: indexFile)
        guard let first = table.entries.first, first.key.isEmpty else {
            throw ImportError.malformed(SourceLocation(file: indexFile, place: "header"), reason: "no header entry (the empty key comes first)")
        }
        header = try Self.message(Array(index[first.value]), file: indexFile, place: "header")
        try Self.check(header, file: indexFile)
        var entries: [String: [UInt8]] = [:]
        var names: [String] = []
        for e in table.entries.dropFirst() {
            let name = String(decoding: e.key, as: UTF8.self)
            guard entries.updateValue(Array(index[e.value]), forKey: name) == nil else {
                throw ImportError.malformed(SourceLocation(file: indexFile, place: Self.place(name)),
                                            reason: "two keys read as this name (invalid UTF-8)")
            }
            names.append(name)
        }
        self.entries = entries
        self.names = names
    }

    /// The path of data file `shard`.
    func dataFile(shard: Int) -> String {
        func fiveDigits(_ n: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
        }
        return prefix.path + ".data-\(fiveDigits(shard))-of-\(fiveDigits(Int(header.numShards)))"
    }

    // MARK: - Entries

    func contains(_ name: String) -> Bool { entries[name] != nil }

    /// The entry of tensor `name`, decoded.
    func entry(_ name: String) throws -> Tensorflow_BundleEntryProto {
        guard let bytes = entries[name] else {
            throw ImportError.badTensor(location(name), reason: "no such tensor in the bundle")
        }
        let entry: Tensorflow_BundleEntryProto = try Self.message(bytes, file: indexFile, place: Self.place(name))
        guard entry.slices.isEmpty else {
            throw ImportError.unsupported(location(name), what: "a partitioned tensor (\(entry.slices.count) slices saved as entries of their own)")
        }
        return entry
    }

    /// The entry's shape: known rank, no negative dimension, at most TensorFlow's 254 dimensions.
    func shape(of entry: Tensorflow_BundleEntryProto, name: String) throws -> [Int] {
        let proto = entry.shape
        guard !proto.unknownRank else { throw ImportError.badTensor(location(name), reason: "shape of unknown rank") }
        guard proto.dim.count <= 254 else { throw ImportError.badTensor(location(name), reason: "rank \(proto.dim.count) (TensorFlow's limit is 254)") }
        let shape = try proto.dim.map { d in
            guard d.size >= 0 else { throw ImportError.badTensor(location(name), reason: "dimension of size \(d.size)") }
            return Int(d.size)
        }
        // Beside an empty dimension the others must still multiply without overflow (strides do).
        guard checkedElementCount(shape.map { max($0, 1) }) != nil else {
            throw ImportError.badTensor(location(name), reason: "shape \(shape) has too many elements")
        }
        return shape
    }

    /// The entry's bytes in its data file (not yet checked against its CRC).
    func bytes(of entry: Tensorflow_BundleEntryProto, name: String) throws -> [UInt8] {
        guard entry.shardID >= 0, entry.shardID < header.numShards else {
            throw ImportError.malformed(location(name), reason: "shard \(entry.shardID), but the bundle has \(header.numShards) data files")
        }
        guard entry.offset >= 0, entry.size >= 0 else {
            throw ImportError.malformed(location(name), reason: "\(entry.size) bytes at offset \(entry.offset)")
        }
        if entry.size == 0 { return [] }
        return try Self.read(file: dataFile(shard: Int(entry.shardID)), offset: UInt64(entry.offset), count: UInt64(entry.size),
                             place: Self.place(name))
    }

    /// Checks `crc` (of the bytes as TensorFlow checksums them) against the entry's masked CRC-32C.
    func checkCRC(_ crc: UInt32, of entry: Tensorflow_BundleEntryProto, name: String) throws {
        let stored = CRC32C.unmask(entry.crc32C)
        guard stored == crc else {
            throw ImportError.badTensor(dataLocation(entry, name: name),
                                        reason: "checksum mismatch (entry says 0x\(String(stored, radix: 16)), data gives 0x\(String(crc, radix: 16)))")
        }
    }

    func location(_ name: String) -> SourceLocation { SourceLocation(file: indexFile, place: Self.place(name)) }

    func dataLocation(_ entry: Tensorflow_BundleEntryProto, name: String) -> SourceLocation {
        SourceLocation(file: dataFile(shard: Int(entry.shardID)), place: "\(Self.place(name)), \(entry.size) bytes at offset \(entry.offset)")
    }

    static func place(_ name: String) -> String { "entry '\(BundleTable.describe(name.utf8))'" }

    // MARK: - Helpers

    /// The header must be one this reader understands (TensorFlow's own version check).
    private static func check(_ header: Tensorflow_BundleHeaderProto, file: String) throws {
        let location = SourceLocation(file: file, place: "header")
        guard header.numShards >= 1 else {
            throw ImportError.malformed(location, reason: "num_shards \(header.numShards) (a bundle has at least one data file)")
        }
        switch header.endianness {
        case .little: break
        case .big: throw ImportError.unsupported(location, what: "big-endian tensor data")
        case .UNRECOGNIZED(let n): throw ImportError.malformed(location, reason: "endianness \(n) (0 little, 1 big)")
        }
        let version = header.version
        guard version.producer >= 0, version.minConsumer <= readerVersion, !version.badConsumers.contains(readerVersion) else {
            throw ImportError.unsupported(location, what: "bundle format version \(version.producer) (needs a reader of version \(version.minConsumer)"
                                          + " or later, excludes \(version.badConsumers); this one reads version \(readerVersion))")
        }
    }

    static func message<M: SwiftProtobuf.Message>(_ bytes: [UInt8], file: String, place: String) throws -> M {
        var options = BinaryDecodingOptions()
        options.messageDepthLimit = 64
        do {
            return try M(serializedBytes: bytes, options: options)
        } catch {
            throw ImportError.malformed(SourceLocation(file: file, place: place), reason: "not a \(M.protoMessageName) (\(error))")
        }
    }

    /// `count` bytes at `offset` of `file`, read without reading the rest.
    private static func read(file: String, offset: UInt64, count: UInt64, place: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: file) else {
            throw ImportError.unreadable(file: file, reason: "cannot open the data file")
        }
        defer { try? handle.close() }
        let length: UInt64
        let data: Data?
        do {
            length = try handle.seekToEnd()
            guard offset <= length, count <= length - offset else {
                throw ImportError.malformed(SourceLocation(file: file, place: place),
                                            reason: "\(count) bytes at offset \(offset) run past the end of the \(length)-byte data file")
            }
            try handle.seek(toOffset: offset)
            data = try handle.read(upToCount: Int(count))
        } catch let error as ImportError {
            throw error
        } catch {
            throw ImportError.unreadable(file: file, reason: (error as NSError).localizedDescription)
        }
        guard let data, data.count == Int(count) else {
            throw ImportError.malformed(SourceLocation(file: file, place: place), reason: "the data file ended early")
        }
        return [UInt8](data)
    }
}
