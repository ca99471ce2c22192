import Foundation
import SwiftProtobuf
import TensorFlowSchema
@testable import ShrinkwrapTensorFlow

/// Builds tensor bundle indexes by hand, entry by entry, so that tests can
/// write what TensorFlow never would (bad restarts, repeated keys, blocks that
/// overlap, hostile entries) next to well-formed ones.
struct BundleIndexWriter {
    /// One block entry as stored: `shared` bytes of the previous key, then `suffix`.
    struct Raw {
        var shared: Int
        var suffix: [UInt8]
        var value: [UInt8]
    }

    private(set) var bytes: [UInt8] = []
    private var index: [Raw] = []

    static func varint(_ value: Int) -> [UInt8] {
        var v = UInt64(value)
        var out: [UInt8] = []
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        return out + [UInt8(v)]
    }

    /// A block's contents: the entries, then the restart offsets and their count. Restarts are the
    /// entries numbered `restartEntries` (default: the first), or the byte offsets `restartBytes`.
    static func block(_ entries: [Raw], restartEntries: [Int] = [0], restartBytes: [Int]? = nil) -> [UInt8] {
        var out: [UInt8] = []
        var starts: [Int] = []
        for e in entries {
            starts.append(out.count)
            out += varint(e.shared) + varint(e.suffix.count) + varint(e.value.count) + e.suffix + e.value
        }
        let restarts = restartBytes ?? (entries.isEmpty ? [0] : restartEntries.map { starts[$0] })
        for r in restarts + [restarts.count] {
            out += withUnsafeBytes(of: UInt32(r).littleEndian) { Array($0) }
        }
        return out
    }

    /// Whole keys (no prefix sharing), each a restart point.
    static func plain(_ pairs: [(String, [UInt8])]) -> [Raw] {
        pairs.map { Raw(shared: 0, suffix: Array($0.0.utf8), value: $0.1) }
    }

    /// Appends a block with its trailer; returns its handle's bytes.
    @discardableResult
    mutating func append(block contents: [UInt8], type: UInt8 = 0) -> [UInt8] {
        let handle = Self.varint(bytes.count) + Self.varint(contents.count)
        bytes += contents + [type]
        let crc = CRC32C.mask(CRC32C.checksum((contents + [type])[...]))
        bytes += withUnsafeBytes(of: crc.littleEndian) { Array($0) }
        return handle
    }

    /// Appends a data block of `entries` and indexes it under `indexKey`.
    mutating func appendData(_ entries: [Raw], restartBytes: [Int]? = nil, indexKey: String = "~") {
        index.append(Raw(shared: 0, suffix: Array(indexKey.utf8), value: append(block: Self.block(entries, restartBytes: restartBytes))))
    }

    /// Adds an index entry pointing at a handle of your choosing.
    mutating func appendIndex(key: String, handle: [UInt8]) {
        index.append(Raw(shared: 0, suffix: Array(key.utf8), value: handle))
    }

    /// The finished file: an empty metaindex block, the index block (restart interval 1), the footer.
    mutating func finish() -> [UInt8] {
        let metaindex = append(block: Self.block([]))
        let indexHandle = append(block: Self.block(index, restartEntries: Array(index.indices)))
        var footer = metaindex + indexHandle
        footer += [UInt8](repeating: 0, count: 40 - footer.count)
        footer += withUnsafeBytes(of: BundleTable.magic.littleEndian) { Array($0) }
        return bytes + footer
    }

    // MARK: - Bundle values

    static func header(shards: Int32 = 1, endianness: Tensorflow_BundleHeaderProto.Endianness = .little,
                       minConsumer: Int32 = 0) -> [UInt8] {
        let h = Tensorflow_BundleHeaderProto.with {
            $0.numShards = shards
            $0.endianness = endianness
            $0.version = .with { $0.producer = 1; $0.minConsumer = minConsumer }
        }
        return (try? h.serializedBytes()) ?? []
    }

    static func entry(_ dtype: Tensorflow_DataType, shape: [Int64], offset: Int64, data: [UInt8],
                      edit: (inout Tensorflow_BundleEntryProto) -> Void = { _ in }) -> [UInt8] {
        var e = Tensorflow_BundleEntryProto.with {
            $0.dtype = dtype
            $0.shape = .with { s in s.dim = shape.map { d in .with { $0.size = d } } }
            $0.offset = offset
            $0.size = Int64(data.count)
            $0.crc32C = CRC32C.mask(CRC32C.checksum(data[...]))
        }
        edit(&e)
        return (try? e.serializedBytes()) ?? []
    }
}
