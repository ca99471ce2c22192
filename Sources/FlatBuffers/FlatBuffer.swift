/// Limits that stop a reader from walking a crafted buffer for ever.
///
/// Offsets to sub-tables are unsigned, so a chain of tables can only move
/// forward through the buffer, but tables may be *shared*: a table whose two
/// fields both point to the same child, repeated 40 levels deep, makes a
/// naive recursive walk visit 2⁴⁰ tables from a few hundred bytes. Both
/// limits below turn such a buffer into a `FlatBufferError`.
public struct ReadLimits: Sendable, Equatable {
    /// The deepest sub-table nesting allowed below the root (root = depth 0).
    public var maxDepth: Int
    /// How many sub-table lookups (fields, vector elements, union values) all
    /// tables reached from one root may perform together.
    public var maxTableVisits: Int

    /// The defaults match the official verifier's: depth 64, one million tables.
    public init(maxDepth: Int = 64, maxTableVisits: Int = 1_000_000) {
        self.maxDepth = maxDepth
        self.maxTableVisits = maxTableVisits
    }
}

/// The sub-table lookups left for the tables reached from one root. Shared by
/// reference between those tables; not thread-safe (give each thread its own root).
final class VisitBudget {
    var remaining: Int
    init(_ limit: Int) { remaining = limit }
}

/// A FlatBuffer to read: the bytes plus the limits that apply to walking them.
///
/// Nothing is validated up front; every accessor checks the offsets and
/// lengths it follows and throws a `FlatBufferError` naming the byte offset,
/// so a malformed buffer is an error, never a crash or a hang. Reads are
/// little-endian and do not require alignment.
public struct FlatBuffer: Sendable {
    /// The whole buffer. Byte vectors read from it are slices of this array (no copy).
    public let bytes: [UInt8]
    /// Depth and visit limits for tables reached from `root`.
    public let limits: ReadLimits

    /// Wraps `bytes`; nothing is read yet.
    public init(bytes: [UInt8], limits: ReadLimits = ReadLimits()) {
        self.bytes = bytes
        self.limits = limits
    }

    /// The buffer's size in bytes.
    public var count: Int { bytes.count }

    /// The 4 bytes at offset 4, or nil when the buffer is shorter than 8 bytes.
    /// (Whether a buffer has an identifier at all is up to its schema.)
    public var fileIdentifierBytes: [UInt8]? {
        bytes.count >= 8 ? Array(bytes[4..<8]) : nil
    }

    /// True when the buffer carries `identifier` (4 ASCII characters) at offset 4.
    public func hasFileIdentifier(_ identifier: String) -> Bool {
        fileIdentifierBytes == Array(identifier.utf8)
    }

    /// The root table, found through the unsigned offset at byte 0.
    ///
    /// - Parameter fileIdentifier: when given (e.g. `"TFL3"`), the 4 bytes at
    ///   offset 4 must equal it, or this throws `.wrongFileIdentifier`.
    /// - Returns: the root table at depth 0, with a fresh visit budget.
    public func root(fileIdentifier: String? = nil) throws -> Table {
        let needed = 8
        guard bytes.count >= needed else { throw FlatBufferError.bufferTooShort(size: bytes.count, needed: needed) }
        if let fileIdentifier {
            let found = Array(bytes[4..<8])
            guard found == Array(fileIdentifier.utf8) else {
                throw FlatBufferError.wrongFileIdentifier(expected: fileIdentifier, found: found)
            }
        }
        let position = try followOffset(at: 0, what: "root table offset", minimumTargetSize: 4)
        return try Table(buffer: self, position: position, depth: 0, budget: VisitBudget(limits.maxTableVisits))
    }

    // MARK: - Checked primitives (internal)

    /// True when `length` bytes starting at `position` lie inside the buffer.
    @inline(__always)
    func contains(_ position: Int, _ length: Int) -> Bool {
        position >= 0 && length >= 0 && position <= bytes.count && length <= bytes.count - position
    }

    /// Throws unless `length` bytes at `position` lie inside the buffer.
    @inline(__always)
    func require(_ position: Int, _ length: Int, _ what: @autoclosure () -> String) throws {
        guard contains(position, length) else {
            throw FlatBufferError.outOfBounds(offset: position, length: length, what: what(), bufferSize: bytes.count)
        }
    }

    /// Reads a scalar whose bytes were already checked to be inside the buffer.
    @inline(__always)
    func load<T: FlatBufferScalar>(_: T.Type, at position: Int) -> T {
        bytes.withUnsafeBytes { T.readLittleEndian(from: $0, at: position) }
    }

    /// Reads a scalar after checking its bytes are inside the buffer.
    @inline(__always)
    func checkedLoad<T: FlatBufferScalar>(_: T.Type, at position: Int, _ what: @autoclosure () -> String) throws -> T {
        try require(position, T.byteWidth, what())
        return load(T.self, at: position)
    }

    /// Follows the unsigned 32-bit offset stored at `position`; the target must
    /// leave at least `minimumTargetSize` bytes before the end of the buffer.
    func followOffset(at position: Int, what: @autoclosure () -> String, minimumTargetSize: Int) throws -> Int {
        let offset = try checkedLoad(UInt32.self, at: position, what())
        let target = position + Int(offset)
        guard contains(target, minimumTargetSize) else {
            throw FlatBufferError.offsetOutOfBounds(offset: position, target: target, what: what(), bufferSize: bytes.count)
        }
        return target
    }

    /// The elements of the vector whose length field is at `position`:
    /// start of the first element and the count, after checking that
    /// `count × elementSize` bytes (overflow-checked) fit in the buffer.
    func vectorSpan(at position: Int, elementSize: Int) throws -> (start: Int, count: Int) {
        let count = try checkedLoad(UInt32.self, at: position, "vector length")
        let start = position + 4
        let (byteCount, overflow) = Int(count).multipliedReportingOverflow(by: elementSize)
        guard elementSize > 0, !overflow, contains(start, byteCount) else {
            throw FlatBufferError.vectorTooLong(offset: position, count: count, elementSize: elementSize, bufferSize: bytes.count)
        }
        return (start, Int(count))
    }

    /// The string whose length field is at `position`: its 0 terminator must be
    /// inside the buffer and its bytes valid UTF-8.
    func string(at position: Int) throws -> String {
        let range = try stringRange(at: position)
        let utf8 = bytes[range]
        let s = String(decoding: utf8, as: UTF8.self)
        // String(decoding:) repairs invalid UTF-8 with U+FFFD; a repair changes the bytes.
        guard s.utf8.elementsEqual(utf8) else {
            throw FlatBufferError.invalidUTF8(offset: position, length: range.count)
        }
        return s
    }

    /// The byte range of the string whose length field is at `position`
    /// (without the terminator), after checking length and terminator.
    func stringRange(at position: Int) throws -> Range<Int> {
        let length = try checkedLoad(UInt32.self, at: position, "string length")
        let start = position + 4
        let n = Int(length)
        guard contains(start, n) else {
            throw FlatBufferError.outOfBounds(offset: position, length: n, what: "string of length \(n)", bufferSize: bytes.count)
        }
        guard contains(start + n, 1) else {
            throw FlatBufferError.unterminatedString(offset: position, length: n, reason: "its 0 terminator would be past the end of the \(bytes.count)-byte buffer")
        }
        let terminator = load(UInt8.self, at: start + n)
        guard terminator == 0 else {
            throw FlatBufferError.unterminatedString(offset: position, length: n, reason: "the byte after it is \(terminator), not 0")
        }
        return start..<(start + n)
    }
}
