/// A FlatBuffer that cannot be read: every case names the byte offset where
/// the problem sits and what is wrong there.
///
/// The description is one line starting with `offset N:`, e.g.
/// `offset 1234: vector length 4294967295 × 4 bytes runs past the end of the 2048-byte buffer`.
/// This target depends on nothing, so the type does not conform to
/// `ShrinkwrapIR.UserFacingError` itself; a format target that does depend on
/// `ShrinkwrapIR` can add the conformance (`extension FlatBufferError: UserFacingError {}`)
/// or wrap the description in its own `ImportError`.
public enum FlatBufferError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The buffer is too short to be a FlatBuffer at all.
    case bufferTooShort(size: Int, needed: Int)
    /// The 4-byte file identifier at offset 4 is not the expected one.
    case wrongFileIdentifier(expected: String, found: [UInt8])
    /// `length` bytes of `what`, starting at `offset`, run past the end of the buffer.
    case outOfBounds(offset: Int, length: Int, what: String, bufferSize: Int)
    /// The offset stored at `offset` points to `target`, outside the buffer.
    case offsetOutOfBounds(offset: Int, target: Int, what: String, bufferSize: Int)
    /// The vtable of the table at `table` is malformed; `offset` is where the bad value sits.
    case badVTable(offset: Int, table: Int, reason: String)
    /// A field's vtable entry puts it outside its table's inline bytes.
    case fieldOutsideTable(offset: Int, field: Int, fieldOffset: Int, fieldSize: Int, tableSize: Int)
    /// A string (at `offset`, its length field) whose zero terminator is missing.
    case unterminatedString(offset: Int, length: Int, reason: String)
    /// A string (at `offset`, its length field) whose bytes are not valid UTF-8.
    case invalidUTF8(offset: Int, length: Int)
    /// A vector (at `offset`, its length field) whose elements do not fit in the buffer.
    case vectorTooLong(offset: Int, count: UInt32, elementSize: Int, bufferSize: Int)
    /// Following sub-tables went deeper than the reader's limit (a crafted or cyclic buffer).
    case tooDeep(offset: Int, limit: Int)
    /// More sub-tables were followed from one root than the reader's limit allows.
    case tooManyTables(offset: Int, limit: Int)
    /// A read inside a struct that falls outside the struct (a schema mismatch in the caller).
    case structFieldOutOfRange(offset: Int, fieldOffset: Int, fieldSize: Int, structSize: Int)

    /// The byte offset in the buffer the error is about.
    public var offset: Int {
        switch self {
        case .bufferTooShort: return 0
        case .wrongFileIdentifier: return 4
        case .outOfBounds(let o, _, _, _), .offsetOutOfBounds(let o, _, _, _), .badVTable(let o, _, _),
             .fieldOutsideTable(let o, _, _, _, _), .unterminatedString(let o, _, _), .invalidUTF8(let o, _),
             .vectorTooLong(let o, _, _, _), .tooDeep(let o, _), .tooManyTables(let o, _),
             .structFieldOutOfRange(let o, _, _, _):
            return o
        }
    }

    /// One line: `offset N: what is wrong`.
    public var description: String { "offset \(offset): \(text)" }

    private var text: String {
        switch self {
        case .bufferTooShort(let size, let needed):
            return "buffer of \(size) bytes is too short to be a FlatBuffer (needs at least \(needed))"
        case .wrongFileIdentifier(let expected, let found):
            return "file identifier is \(Self.show(found)), expected \"\(Self.escape(expected))\""
        case .outOfBounds(_, let length, let what, let size):
            return "\(what) (\(length) bytes) runs past the end of the \(size)-byte buffer"
        case .offsetOutOfBounds(_, let target, let what, let size):
            return "\(what) points to offset \(target), outside the \(size)-byte buffer"
        case .badVTable(_, let table, let reason):
            return "bad vtable for the table at offset \(table): \(reason)"
        case .fieldOutsideTable(_, let field, let fo, let fs, let ts):
            return "field \(field) at table offset \(fo) (\(fs) bytes) lies outside the table's \(ts) inline bytes"
        case .unterminatedString(_, let length, let reason):
            return "string of length \(length) is not terminated: \(reason)"
        case .invalidUTF8(_, let length):
            return "string of length \(length) is not valid UTF-8"
        case .vectorTooLong(_, let count, let size, let bufferSize):
            return "vector length \(count) × \(size) bytes runs past the end of the \(bufferSize)-byte buffer"
        case .tooDeep(_, let limit):
            return "tables nest deeper than \(limit) levels (crafted or cyclic buffer)"
        case .tooManyTables(_, let limit):
            return "more than \(limit) sub-table visits from one root (crafted buffer with shared or cyclic tables)"
        case .structFieldOutOfRange(_, let fo, let fs, let ss):
            return "struct field at \(fo) (\(fs) bytes) lies outside the \(ss)-byte struct"
        }
    }

    /// Printable ASCII in quotes, anything else as hex bytes.
    static func show(_ bytes: [UInt8]) -> String {
        if bytes.allSatisfy({ (0x20..<0x7F).contains($0) && $0 != 0x22 && $0 != 0x5C }) {
            return "\"" + String(decoding: bytes, as: UTF8.self) + "\""
        }
        return "[" + bytes.map { b in
            let h = String(b, radix: 16)
            return "0x" + (h.count < 2 ? "0" + h : h)
        }.joined(separator: " ") + "]"
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            if u.value < 0x20 || u.value == 0x7F { out += "\\u{\(String(u.value, radix: 16))}" } else { out.unicodeScalars.append(u) }
        }
        return out
    }
}

/// A misuse of `FlatBufferBuilder` (a bug in the writer, not in any input) or a
/// buffer that would exceed the format's 2 GiB limit. The builder records the
/// first one and `finish` throws it; everything after it is ignored, so a
/// misuse never traps.
public struct FlatBufferBuilderError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What went wrong, in one line.
    public let reason: String

    /// An error with this reason.
    public init(_ reason: String) { self.reason = reason }

    /// `FlatBuffer builder: <reason>`.
    public var description: String { "FlatBuffer builder: \(reason)" }
}
