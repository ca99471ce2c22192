import ShrinkwrapIR

/// A JSON value from a Keras model's configuration (`model_config`, `config.json`).
///
/// Our own parser rather than Foundation's: Python's `json.dumps` writes `NaN`
/// and `Infinity` (a Normalization layer's statistics, a clip bound), numbers and
/// booleans must stay apart, and a hostile file must not nest deep enough to
/// exhaust the stack.
indirect enum KerasJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([KerasJSON])
    case object([String: KerasJSON])

    subscript(_ key: String) -> KerasJSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var array: [KerasJSON]? { if case .array(let a) = self { return a } else { return nil } }
    var object: [String: KerasJSON]? { if case .object(let o) = self { return o } else { return nil } }
    var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var number: Double? { if case .number(let d) = self { return d } else { return nil } }
    var isNull: Bool { self == .null }

    /// An integral number that fits an Int.
    var int: Int? {
        guard case .number(let d) = self, d.isFinite, d == d.rounded(), abs(d) < 9.0e15 else { return nil }
        return Int(d)
    }

    /// A list of integers, or one integer as a list of `count` copies (Keras accepts `kernel_size: 3`).
    func ints(count: Int? = nil) -> [Int]? {
        if let i = int { return count.map { Array(repeating: i, count: $0) } ?? [i] }
        guard let a = array else { return nil }
        var out: [Int] = []
        for v in a { guard let i = v.int else { return nil }; out.append(i) }
        return out
    }

    /// A shape: integers and nulls (unknown dimensions).
    var shape: [Int?]? {
        guard let a = array else { return nil }
        var out: [Int?] = []
        for v in a {
            if v.isNull { out.append(nil) } else if let i = v.int, i >= 0 { out.append(i) } else { return nil }
        }
        return out
    }

    /// Numbers (NaN and infinities allowed).
    var numbers: [Double]? {
        if let d = number { return [d] }
        guard let a = array else { return nil }
        var out: [Double] = []
        for v in a {
            if let d = v.number { out.append(d) } else if let inner = v.numbers { out += inner } else { return nil }
        }
        return out
    }

    /// Parses `bytes` (UTF-8); errors name the byte offset.
    static func parse(_ bytes: [UInt8], file: String, place: String) throws -> KerasJSON {
        var p = Parser(bytes: bytes)
        do {
            let v = try p.value(depth: 0)
            p.skipSpace()
            guard p.at == bytes.count else { throw Parser.Failure(offset: p.at, reason: "text after the JSON value") }
            return v
        } catch let f as Parser.Failure {
            throw ImportError.malformed(SourceLocation(file: file, place: "\(place), byte \(f.offset)"), reason: "bad JSON: \(f.reason)")
        }
    }

    private struct Parser {
        struct Failure: Error { let offset: Int; let reason: String }
        let bytes: [UInt8]
        var at = 0
        static let maxDepth = 512

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
        }

        func fail(_ reason: String) -> Failure { Failure(offset: at, reason: reason) }

        mutating func literal(_ word: String) -> Bool {
            let w = Array(word.utf8)
            guard at + w.count <= bytes.count, Array(bytes[at..<at + w.count]) == w else { return false }
            at += w.count
            return true
        }

        mutating func value(depth: Int) throws -> KerasJSON {
            guard depth < Parser.maxDepth else { throw fail("nested deeper than \(Parser.maxDepth)") }
            skipSpace()
            guard at < bytes.count else { throw fail("unexpected end") }
            switch bytes[at] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            default:
                if literal("null") { return .null }
                if literal("true") { return .bool(true) }
                if literal("false") { return .bool(false) }
                if literal("NaN") { return .number(.nan) }
                if literal("Infinity") { return .number(.infinity) }
                if literal("-Infinity") { return .number(-.infinity) }
                return .number(try number())
            }
        }

        mutating func object(depth: Int) throws -> KerasJSON {
            at += 1
            var out: [String: KerasJSON] = [:]
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(out) }
            while true {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let key = try string()
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                at += 1
                out[key] = try value(depth: depth + 1)
                skipSpace()
                guard at < bytes.count else { throw fail("unexpected end in an object") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                if bytes[at] == UInt8(ascii: "}") { at += 1; return .object(out) }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws -> KerasJSON {
            at += 1
            var out: [KerasJSON] = []
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(out) }
            while true {
                out.append(try value(depth: depth + 1))
                skipSpace()
                guard at < bytes.count else { throw fail("unexpected end in an array") }
                if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                if bytes[at] == UInt8(ascii: "]") { at += 1; return .array(out) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func number() throws -> Double {
            let start = at
            while at < bytes.count, let c = Optional(bytes[at]),
                  (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+")
                    || c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                at += 1
            }
            guard at > start, let d = Double(String(decoding: bytes[start..<at], as: UTF8.self)) else {
                at = start
                throw fail("expected a value")
            }
            return d
        }

        mutating func hex4() throws -> UInt32 {
            guard at + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16) else {
                throw fail("bad \\u escape")
            }
            at += 4
            return v
        }

        mutating func string() throws -> String {
            at += 1
            var out: [UInt8] = []
            while true {
                guard at < bytes.count else { throw fail("unterminated string") }
                let c = bytes[at]
                at += 1
                if c == UInt8(ascii: "\"") { break }
                guard c == UInt8(ascii: "\\") else { out.append(c); continue }
                guard at < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[at]
                at += 1
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    var v = try hex4()
                    if (0xD800..<0xDC00).contains(v), at + 6 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") {
                        at += 2
                        let low = try hex4()
                        if (0xDC00..<0xE000).contains(low) { v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00) }
                    }
                    out += Array(String(Unicode.Scalar(v).map(Character.init) ?? "\u{FFFD}").utf8)
                default: out.append(e)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}
