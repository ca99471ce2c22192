import ShrinkwrapIR

/// The sorted key → value table of a tensor bundle's `.index` file: LevelDB's
/// table format, as TensorFlow's table builder writes it.
///
///     [data block][trailer] … [metaindex block][trailer] [index block][trailer] [footer]
///
/// - footer (last 48 bytes): two block handles (metaindex, index; each a varint64
///   offset and a varint64 size), zero padding to 40 bytes, then the magic number
///   0xdb4775248b80fb57 as 8 little-endian bytes.
/// - trailer (after each block's `size` bytes): a compression type byte (0: none,
///   1: snappy) and the masked CRC-32C of the block and that byte, little-endian.
/// - block: entries, then restart offsets (uint32 each) and their count (uint32).
///   An entry is varint32 shared, varint32 non_shared, varint32 value_length, the
///   key's last non_shared bytes (the first `shared` are the previous key's), the
///   value. A restart point is an entry with a whole key (shared = 0).
/// - the index block maps a key at or after each data block's last key to that
///   block's handle; the metaindex block (filters) is not needed here.
///
/// The whole table is read at once: every block's checksum is verified, blocks
/// must come in order without overlapping, and keys must strictly increase.
/// TensorFlow writes bundle indexes uncompressed; a snappy block is refused.
struct BundleTable {
    struct Entry {
        var key: [UInt8]
        /// Where the value lies in `bytes`.
        var value: Range<Int>
    }

    static let footerSize = 48
    static let magic: UInt64 = 0xDB47_7524_8B80_FB57
    static let trailerSize = 5

    let bytes: [UInt8]
    let file: String
    /// In key order.
    private(set) var entries: [Entry] = []
    /// The contents of every block read (the data blocks in order, then the index block), without trailers.
    private(set) var blocks: [Range<Int>] = []

    init(bytes: [UInt8], file: String) throws {
        self.bytes = bytes
        self.file = file
        let footerStart = bytes.count - Self.footerSize
        guard footerStart >= 0 else {
            throw failure("footer", "\(bytes.count) bytes, shorter than the \(Self.footerSize)-byte table footer")
        }
        guard Self.littleEndian64(bytes, at: bytes.count - 8) == Self.magic else {
            throw failure("byte \(bytes.count - 8)", "no table magic number (not a tensor bundle index)")
        }
        var footer = ByteCursor(bytes, footerStart..<(bytes.count - 8))
        _ = try handle(&footer, place: "metaindex handle in the footer", limit: footerStart)
        let indexHandle = try handle(&footer, place: "index handle in the footer", limit: footerStart)
        let index = try blockContents(indexHandle, what: "index block")
        // Each key is materialized whole: bound the bytes copied (a hostile block of
        // entries sharing long prefixes would otherwise take quadratic time).
        var keyBudget = min(bytes.count, Int.max / 128) * 64 + (1 << 20)
        var nextFree = 0
        for pointer in try blockEntries(index, keyBudget: &keyBudget) {
            var cursor = ByteCursor(bytes, pointer.value)
            let place = "index entry '\(Self.describe(pointer.key))'"
            let h = try handle(&cursor, place: place, limit: indexHandle.offset)
            guard cursor.atEnd else { throw failure(place, "\(cursor.remaining) bytes after its block handle") }
            guard h.offset >= nextFree else {
                throw failure(place, "block at offset \(h.offset) overlaps or precedes the previous block (which ends at \(nextFree))")
            }
            let contents = try blockContents(h, what: "block")
            blocks.append(contents)
            nextFree = contents.upperBound + Self.trailerSize
            entries += try blockEntries(contents, keyBudget: &keyBudget)
        }
        blocks.append(index)
        try checkOrder()
    }

    // MARK: - Blocks

    struct BlockHandle {
        var offset: Int
        var size: Int
    }

    /// A block handle, checked to leave room for the block and its trailer before `limit`.
    private func handle(_ cursor: inout ByteCursor, place: String, limit: Int) throws -> BlockHandle {
        guard let rawOffset = cursor.varint64(), let rawSize = cursor.varint64() else {
            throw failure(place, "truncated or overlong varint")
        }
        guard rawOffset <= UInt64(limit), rawSize <= UInt64(limit) else {
            throw failure(place, "block at offset \(rawOffset) of \(rawSize) bytes lies beyond byte \(limit)")
        }
        let h = BlockHandle(offset: Int(rawOffset), size: Int(rawSize))
        guard h.offset + h.size + Self.trailerSize <= limit else {
            throw failure(place, "block at offset \(h.offset) of \(h.size) bytes + its \(Self.trailerSize)-byte trailer runs past byte \(limit)")
        }
        return h
    }

    /// The block's contents, once its trailer's checksum and compression type are checked.
    private func blockContents(_ h: BlockHandle, what: String) throws -> Range<Int> {
        let place = "\(what) at offset \(h.offset)"
        let end = h.offset + h.size
        let stored = Self.littleEndian32(bytes, at: end + 1)
        let computed = CRC32C.checksum(bytes[h.offset...end])
        guard CRC32C.unmask(stored) == computed else {
            throw failure(place, "checksum mismatch (stored 0x\(String(CRC32C.unmask(stored), radix: 16)), computed 0x\(String(computed, radix: 16)))")
        }
        switch bytes[end] {
        case 0:
            return h.offset..<end
        case 1:
            throw ImportError.unsupported(SourceLocation(file: file, place: place),
                                          what: "a snappy-compressed block (TensorFlow writes bundle indexes uncompressed; only those are read)")
        case let type:
            throw failure(place, "unknown compression type \(type)")
        }
    }

    /// The entries of one block, with their keys made whole.
    private func blockEntries(_ contents: Range<Int>, keyBudget: inout Int) throws -> [Entry] {
        let place = "block at offset \(contents.lowerBound)"
        guard contents.count >= 4 else { throw failure(place, "\(contents.count) bytes, too short for its restart count") }
        let restartCount = Int(Self.littleEndian32(bytes, at: contents.upperBound - 4))
        guard restartCount <= (contents.count - 4) / 4 else {
            throw failure(place, "\(restartCount) restart points do not fit in its \(contents.count) bytes")
        }
        let entriesEnd = contents.upperBound - 4 - 4 * restartCount
        var cursor = ByteCursor(bytes, contents.lowerBound..<entriesEnd)
        var entries: [Entry] = []
        var wholeKeys = Set<Int>()
        var key: [UInt8] = []
        while !cursor.atEnd {
            let start = cursor.position - contents.lowerBound
            let entryPlace = "entry at byte \(start) of the \(place)"
            guard let shared = cursor.varint32(), let unshared = cursor.varint32(), let valueLength = cursor.varint32() else {
                throw failure(entryPlace, "truncated or overlong length varint")
            }
            guard Int(shared) <= key.count else {
                throw failure(entryPlace, "shares \(shared) bytes with a previous key of \(key.count)")
            }
            guard let suffix = cursor.take(Int(unshared)), let value = cursor.take(Int(valueLength)) else {
                throw failure(entryPlace, "key suffix of \(unshared) and value of \(valueLength) bytes run past the block's entries")
            }
            keyBudget -= Int(shared) + Int(unshared)
            guard keyBudget >= 0 else { throw failure(entryPlace, "keys longer in total than a tensor bundle index holds") }
            key.removeSubrange(Int(shared)...)
            key += bytes[suffix]
            if shared == 0 { wholeKeys.insert(start) }
            entries.append(Entry(key: key, value: value))
        }
        for r in 0..<restartCount {
            let restart = Int(Self.littleEndian32(bytes, at: entriesEnd + 4 * r))
            guard wholeKeys.contains(restart) || (entries.isEmpty && restart == 0) else {
                throw failure(place, "restart point \(r) (byte \(restart)) is not the start of an entry with a whole key")
            }
        }
        return entries
    }

    private func checkOrder() throws {
        for i in entries.indices.dropFirst() where !entries[i - 1].key.lexicographicallyPrecedes(entries[i].key) {
            throw failure("entry '\(Self.describe(entries[i].key))'",
                          "keys out of order or repeated (after '\(Self.describe(entries[i - 1].key))')")
        }
    }

    // MARK: - Helpers

    private func failure(_ place: String, _ reason: String) -> ImportError {
        .malformed(SourceLocation(file: file, place: place), reason: reason)
    }

    /// A key as text for messages: UTF-8 (invalid bytes replaced), cut after 120 characters.
    static func describe<Bytes: Collection>(_ key: Bytes) -> String where Bytes.Element == UInt8 {
        let text = String(decoding: key, as: UTF8.self)
        return text.count > 120 ? String(text.prefix(120)) + "…" : text
    }

    static func littleEndian32(_ bytes: [UInt8], at i: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[i + $1]) << (8 * UInt32($1)) }
    }

    static func littleEndian64(_ bytes: [UInt8], at i: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[i + $1]) << (8 * UInt64($1)) }
    }
}

/// A bounds-checked reader of varints and byte runs over part of a byte array.
struct ByteCursor {
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int

    /// `range` must lie within `bytes`.
    init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.bytes = bytes
        position = range.lowerBound
        end = range.upperBound
    }

    var atEnd: Bool { position >= end }
    var remaining: Int { end - position }

    /// A little-endian base-128 varint of at most `maxBytes` bytes whose value fits
    /// in `bits` bits; nil when it is truncated, longer or larger.
    mutating func varint(maxBytes: Int, bits: Int) -> UInt64? {
        var value: UInt64 = 0
        for i in 0..<maxBytes {
            guard position < end else { return nil }
            let byte = bytes[position]
            position += 1
            let payload = UInt64(byte & 0x7F)
            let shift = 7 * i
            guard shift + (64 - payload.leadingZeroBitCount) <= bits else { return nil }
            value |= payload << UInt64(shift)
            if byte < 0x80 { return value }
        }
        return nil
    }

    mutating func varint32() -> UInt32? { varint(maxBytes: 5, bits: 32).map { UInt32($0) } }
    mutating func varint64() -> UInt64? { varint(maxBytes: 10, bits: 64) }

    /// The next `count` bytes' range, or nil when fewer remain.
    mutating func take(_ count: Int) -> Range<Int>? {
        guard count >= 0, count <= remaining else { return nil }
        defer { position += count }
        return position..<(position + count)
    }
}
