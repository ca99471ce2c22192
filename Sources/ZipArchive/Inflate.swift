/// A DEFLATE (RFC 1951) decoder for raw deflate streams, as ZIP members
/// hold them: stored, fixed-Huffman and dynamic-Huffman blocks. Every read is
/// checked against the end of the input and every back-reference against the
/// output so far; the output is capped so a small hostile stream cannot
/// expand without bound.
public enum Inflate {
    public struct Error: Swift.Error, CustomStringConvertible, Equatable, Sendable {
        public let reason: String
        public var description: String { reason }
    }

    /// The most bytes DEFLATE can expand a stream of `compressedCount` bytes to
    /// (one 1-bit length code plus one 1-bit distance code per 258 bytes, with
    /// slack for block headers), so declared sizes beyond it can be refused
    /// before anything is allocated.
    public static func maximumExpansion(of compressedCount: Int) -> Int {
        let (p, o) = compressedCount.multipliedReportingOverflow(by: 1032)
        return o ? Int.max : p &+ 1024
    }

    /// Decodes `input`. With `expectedSize` the output must be exactly that
    /// long; it never grows past `limit` bytes in any case.
    public static func decompress(_ input: [UInt8], expectedSize: Int?, limit: Int) throws -> [UInt8] {
        var cap = max(0, limit)
        if let e = expectedSize {
            guard e >= 0 else { throw Error(reason: "negative expected size \(e)") }
            guard e <= cap else { throw Error(reason: "expected size \(e) bytes is over the limit of \(cap) bytes") }
            guard e <= maximumExpansion(of: input.count) else {
                throw Error(reason: "expected size \(e) bytes cannot come from \(input.count) compressed bytes")
            }
            cap = e
        }
        var d = Decoder(input: input, limit: cap)
        if let e = expectedSize { d.overLimit = "output is longer than the expected \(e) bytes" }
        d.out.reserveCapacity(min(cap, maximumExpansion(of: input.count), 1 << 26))
        try d.run()
        if let e = expectedSize, d.out.count != e {
            throw Error(reason: "decompressed to \(d.out.count) bytes, expected \(e)")
        }
        return d.out
    }

    // MARK: - Tables

    static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                    35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                     3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                      257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                       7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    /// The order code-length code lengths come in (RFC 1951 §3.2.7).
    static let codeLengthOrder: [Int] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    /// A canonical Huffman code as a lookup table indexed by the next
    /// `maxLength` input bits (LSB first). Entries are symbol << 4 | length;
    /// length 0 marks bit patterns no code uses.
    struct Huffman {
        var table: [UInt32]
        var maxLength: Int

        init(lengths: [Int], what: String) throws {
            var count = [Int](repeating: 0, count: 16)
            for l in lengths {
                guard (0...15).contains(l) else { throw Error(reason: "\(what) code length \(l) out of range") }
                count[l] += 1
            }
            count[0] = 0
            // Kraft inequality: more codes of a length than remain is an over-subscribed (ambiguous) code.
            var left = 1
            for len in 1...15 {
                left <<= 1
                left -= count[len]
                if left < 0 { throw Error(reason: "\(what) code is over-subscribed") }
            }
            maxLength = (1...15).last { count[$0] > 0 } ?? 0
            guard maxLength > 0 else {
                // No codes at all: any attempt to decode with it fails.
                table = [0, 0]
                maxLength = 1
                return
            }
            var next = [Int](repeating: 0, count: 16)
            var code = 0
            for len in 1...15 {
                code = (code + count[len - 1]) << 1
                next[len] = code
            }
            table = [UInt32](repeating: 0, count: 1 << maxLength)
            for (symbol, len) in lengths.enumerated() where len > 0 {
                let c = next[len]
                next[len] += 1
                var reversed = 0
                for b in 0..<len where c & (1 << b) != 0 { reversed |= 1 << (len - 1 - b) }
                var i = reversed
                while i < table.count {
                    table[i] = UInt32(symbol) << 4 | UInt32(len)
                    i += 1 << len
                }
            }
        }
    }

    static let fixedLiteral: Huffman? = {
        var l = [Int](repeating: 8, count: 288)
        for i in 144..<256 { l[i] = 9 }
        for i in 256..<280 { l[i] = 7 }
        return try? Huffman(lengths: l, what: "fixed literal/length")
    }()

    static let fixedDistance: Huffman? = try? Huffman(lengths: [Int](repeating: 5, count: 32), what: "fixed distance")

    // MARK: - Decoder

    struct Decoder {
        let input: [UInt8]
        let limit: Int
        var position = 0
        var bits: UInt64 = 0
        var bitCount = 0
        var out: [UInt8] = []
        /// The error text when the output would pass `limit`.
        var overLimit: String

        init(input: [UInt8], limit: Int) {
            self.input = input
            self.limit = limit
            overLimit = "output is larger than the limit of \(limit) bytes"
        }

        mutating func refill() {
            while bitCount <= 56 && position < input.count {
                bits |= UInt64(input[position]) << UInt64(bitCount)
                position += 1
                bitCount += 8
            }
        }

        mutating func take(_ n: Int) throws -> Int {
            if n == 0 { return 0 }
            if bitCount < n { refill() }
            guard bitCount >= n else { throw Error(reason: "truncated stream: needed \(n) more bits at byte \(position)") }
            let v = Int(bits & ((1 << UInt64(n)) - 1))
            bits >>= UInt64(n)
            bitCount -= n
            return v
        }

        mutating func decode(_ h: Huffman) throws -> Int {
            if bitCount < h.maxLength { refill() }
            let entry = h.table[Int(bits & ((1 << UInt64(h.maxLength)) - 1))]
            let len = Int(entry & 15)
            guard len > 0 else { throw Error(reason: "invalid Huffman code at byte \(position)") }
            guard len <= bitCount else { throw Error(reason: "truncated stream inside a Huffman code") }
            bits >>= UInt64(len)
            bitCount -= len
            return Int(entry >> 4)
        }

        mutating func run() throws {
            var last = false
            while !last {
                last = try take(1) == 1
                switch try take(2) {
                case 0: try stored()
                case 1:
                    guard let lit = Inflate.fixedLiteral, let dist = Inflate.fixedDistance else {
                        throw Error(reason: "internal error: fixed Huffman tables")
                    }
                    try codes(lit, dist)
                case 2:
                    let (lit, dist) = try dynamicTables()
                    try codes(lit, dist)
                default:
                    throw Error(reason: "invalid block type 3 at byte \(position)")
                }
            }
        }

        mutating func stored() throws {
            // Give back whole bytes read ahead into the bit buffer, then drop the partial byte.
            let whole = bitCount / 8
            position -= whole
            bits = 0
            bitCount = 0
            guard input.count - position >= 4 else { throw Error(reason: "truncated stored block header") }
            let len = Int(input[position]) | Int(input[position + 1]) << 8
            let nlen = Int(input[position + 2]) | Int(input[position + 3]) << 8
            position += 4
            guard len == nlen ^ 0xFFFF else { throw Error(reason: "stored block length \(len) does not match its complement") }
            guard input.count - position >= len else {
                throw Error(reason: "stored block of \(len) bytes runs past the end of the input")
            }
            guard len <= limit - out.count else { throw Error(reason: overLimit) }
            out.append(contentsOf: input[position..<(position + len)])
            position += len
        }

        mutating func dynamicTables() throws -> (Huffman, Huffman) {
            let hlit = try take(5) + 257
            let hdist = try take(5) + 1
            let hclen = try take(4) + 4
            guard hlit <= 286 else { throw Error(reason: "too many literal/length codes (\(hlit))") }
            guard hdist <= 30 else { throw Error(reason: "too many distance codes (\(hdist))") }
            var clLengths = [Int](repeating: 0, count: 19)
            for i in 0..<hclen { clLengths[Inflate.codeLengthOrder[i]] = try take(3) }
            let cl = try Huffman(lengths: clLengths, what: "code length")
            var lengths: [Int] = []
            lengths.reserveCapacity(hlit + hdist)
            while lengths.count < hlit + hdist {
                let sym = try decode(cl)
                switch sym {
                case 0...15:
                    lengths.append(sym)
                case 16:
                    guard let prev = lengths.last else { throw Error(reason: "repeat code with no previous length") }
                    let n = 3 + (try take(2))
                    guard lengths.count + n <= hlit + hdist else { throw Error(reason: "code lengths repeat past the end") }
                    lengths.append(contentsOf: repeatElement(prev, count: n))
                case 17, 18:
                    let n = sym == 17 ? 3 + (try take(3)) : 11 + (try take(7))
                    guard lengths.count + n <= hlit + hdist else { throw Error(reason: "code lengths repeat past the end") }
                    lengths.append(contentsOf: repeatElement(0, count: n))
                default:
                    throw Error(reason: "invalid code length symbol \(sym)")
                }
            }
            guard lengths[256] > 0 else { throw Error(reason: "block has no end-of-block code") }
            let lit = try Huffman(lengths: Array(lengths[0..<hlit]), what: "literal/length")
            let dist = try Huffman(lengths: Array(lengths[hlit...]), what: "distance")
            return (lit, dist)
        }

        mutating func codes(_ lit: Huffman, _ dist: Huffman) throws {
            while true {
                let sym = try decode(lit)
                if sym < 256 {
                    guard out.count < limit else { throw Error(reason: overLimit) }
                    out.append(UInt8(sym))
                } else if sym == 256 {
                    return
                } else {
                    let li = sym - 257
                    guard li < Inflate.lengthBase.count else { throw Error(reason: "invalid length symbol \(sym)") }
                    let length = Inflate.lengthBase[li] + (try take(Inflate.lengthExtra[li]))
                    let ds = try decode(dist)
                    guard ds < Inflate.distanceBase.count else { throw Error(reason: "invalid distance symbol \(ds)") }
                    let distance = Inflate.distanceBase[ds] + (try take(Inflate.distanceExtra[ds]))
                    guard distance <= out.count else {
                        throw Error(reason: "distance \(distance) reaches before the start of the output (\(out.count) bytes)")
                    }
                    guard length <= limit - out.count else { throw Error(reason: overLimit) }
                    var from = out.count - distance
                    for _ in 0..<length {
                        out.append(out[from])
                        from += 1
                    }
                }
            }
        }
    }
}

/// CRC-32 as ZIP, gzip and PNG use it (reflected polynomial 0xEDB88320).
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum<C: Collection>(_ bytes: C, initial: UInt32 = 0) -> UInt32 where C.Element == UInt8 {
        var c = ~initial
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return ~c
    }
}
