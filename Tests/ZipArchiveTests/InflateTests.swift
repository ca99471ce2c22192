import Foundation
import ShrinkwrapTestSupport
import XCTest
import ZipArchive

// Moved here with Inflate (from ShrinkwrapTests/InputDataTests.swift) when the ZIP code became its own target.

// MARK: - Inflate

/// Writes DEFLATE bit streams by hand (for streams zlib would never make).
private struct BitWriter {
    var bytes: [UInt8] = []
    var acc: UInt64 = 0
    var count = 0
    mutating func bits(_ v: Int, _ n: Int) {
        acc |= UInt64(v) << UInt64(count)
        count += n
        while count >= 8 { bytes.append(UInt8(acc & 0xFF)); acc >>= 8; count -= 8 }
    }
    /// A Huffman code: most significant bit first.
    mutating func code(_ c: Int, _ n: Int) { for i in stride(from: n - 1, through: 0, by: -1) { bits((c >> i) & 1, 1) } }
    mutating func finish() -> [UInt8] {
        if count > 0 { bytes.append(UInt8(acc & 0xFF)); acc = 0; count = 0 }
        return bytes
    }
    // Fixed-Huffman codes.
    mutating func literal(_ v: Int) { v < 144 ? code(0x30 + v, 8) : code(0x190 + v - 144, 9) }
    mutating func length258() { code(0xC0 + 285 - 280, 8) }
    mutating func endOfBlock() { code(0, 7) }
    mutating func distance(symbol: Int) { code(symbol, 5) }
}

final class InflateTests: XCTestCase {
    /// zlib.compressobj(6, DEFLATED, -15, 9, Z_FIXED) of "hello hello hello, shrinkwrap!".
    let fixed: [UInt8] = [0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0xc8, 0x40, 0x90, 0x3a, 0x0a, 0xc5, 0x19, 0x45, 0x99, 0x79,
                          0xd9, 0xe5, 0x45, 0x89, 0x05, 0x8a, 0x00]
    /// Level 9, raw deflate, of "line %d: the quick brown fox jumps over the lazy dog\n" for 0..<12: a dynamic block.
    let dynamic: [UInt8] = [
        0x9d, 0xd2, 0xb7, 0x11, 0x80, 0x30, 0x00, 0x43, 0xd1, 0x9e, 0x29, 0x34, 0x02, 0x39, 0x6d, 0x43, 0x30, 0x60, 0x30, 0x36,
        0xc9, 0xa4, 0xe9, 0x39, 0xd8, 0x00, 0xd5, 0xba, 0x57, 0xe9, 0x2b, 0xa9, 0x05, 0xdc, 0x1c, 0x5b, 0x27, 0x30, 0x5b, 0x59,
        0x0d, 0x28, 0x17, 0x73, 0x68, 0x34, 0xe6, 0x44, 0x6f, 0xc7, 0x69, 0x85, 0xd9, 0xc5, 0xf2, 0xcd, 0xaa, 0xb8, 0x2f, 0xd4,
        0xa6, 0x75, 0xd4, 0x6b, 0x3c, 0xc2, 0xf8, 0x84, 0x09, 0x08, 0x13, 0x12, 0x26, 0x22, 0x4c, 0x4c, 0x98, 0x84, 0x30, 0x29,
        0x61, 0x32, 0xe6, 0x53, 0x2a, 0x84, 0x9f, 0x25, 0x3c,
    ]
    /// Level 0 (one stored block) of "stored bytes \0\1\2\xff".
    let stored: [UInt8] = [0x01, 0x11, 0x00, 0xee, 0xff, 0x73, 0x74, 0x6f, 0x72, 0x65, 0x64, 0x20, 0x62, 0x79, 0x74, 0x65,
                           0x73, 0x20, 0x00, 0x01, 0x02, 0xff]

    var dynamicText: [UInt8] {
        Array((0..<12).map { "line \($0): the quick brown fox jumps over the lazy dog\n" }.joined().utf8)
    }

    func testDecodesZlibStreams() throws {
        XCTAssertEqual(fixed[0] >> 1 & 3, 1)
        XCTAssertEqual(dynamic[0] >> 1 & 3, 2)
        XCTAssertEqual(try Inflate.decompress(fixed, expectedSize: 30, limit: 1 << 20), Array("hello hello hello, shrinkwrap!".utf8))
        XCTAssertEqual(try Inflate.decompress(dynamic, expectedSize: nil, limit: 1 << 20), dynamicText)
        XCTAssertEqual(CRC32.checksum(dynamicText), 624_017_974)
        XCTAssertEqual(try Inflate.decompress(stored, expectedSize: 17, limit: 100), Array("stored bytes ".utf8) + [0, 1, 2, 0xFF])
        // An empty final stored block.
        XCTAssertEqual(try Inflate.decompress([0x01, 0x00, 0x00, 0xFF, 0xFF], expectedSize: 0, limit: 0), [])
    }

    func testCRC32() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([UInt8]()), 0)
        XCTAssertEqual(CRC32.checksum(Array("hello hello hello, shrinkwrap!".utf8)), 1_985_591_362)
    }

    func testClearErrors() {
        func reason(_ input: [UInt8], expected: Int? = nil, limit: Int = 1 << 20) -> String {
            errorText { _ = try Inflate.decompress(input, expectedSize: expected, limit: limit) }
        }
        XCTAssertTrue(reason([]).contains("truncated"), reason([]))
        XCTAssertTrue(reason([0x07]).contains("invalid block type 3"), reason([0x07]))
        XCTAssertTrue(reason([0x01, 0x05, 0x00, 0x00, 0x00]).contains("complement"))
        XCTAssertTrue(reason([0x01, 0x05, 0x00, 0xFA, 0xFF, 1, 2]).contains("runs past the end"))
        XCTAssertTrue(reason(fixed, expected: 29).contains("output is longer than the expected 29 bytes"), reason(fixed, expected: 29))
        XCTAssertTrue(reason(fixed, expected: 31).contains("expected 31"), reason(fixed, expected: 31))
        XCTAssertTrue(reason(fixed, limit: 10).contains("limit of 10 bytes"), reason(fixed, limit: 10))
        XCTAssertTrue(reason(stored, limit: 10).contains("limit of 10 bytes"))
        // A declared size no deflate stream of this length can reach is refused before decoding.
        XCTAssertTrue(reason(fixed, expected: 1 << 30, limit: 1 << 31).contains("cannot come from"))
        XCTAssertTrue(reason(fixed, expected: 1 << 30, limit: 1 << 20).contains("over the limit"))

        // A back-reference before the start of the output.
        var w = BitWriter()
        w.bits(1, 1); w.bits(1, 2)
        w.length258(); w.distance(symbol: 0); w.endOfBlock()
        XCTAssertTrue(reason(w.finish()).contains("before the start of the output"))
        // Distance symbols 30 and 31 do not exist.
        w = BitWriter()
        w.bits(1, 1); w.bits(1, 2)
        w.literal(65); w.length258(); w.distance(symbol: 30); w.endOfBlock()
        XCTAssertTrue(reason(w.finish()).contains("invalid distance symbol 30"))
        // Literal/length symbol 286.
        w = BitWriter()
        w.bits(1, 1); w.bits(1, 2)
        w.code(0xC0 + 6, 8)
        XCTAssertTrue(reason(w.finish()).contains("invalid length symbol 286"))
        // Dynamic header: HLIT 287 is out of range.
        w = BitWriter()
        w.bits(1, 1); w.bits(2, 2); w.bits(30, 5); w.bits(0, 5); w.bits(0, 4)
        XCTAssertTrue(reason(w.finish() + [0, 0, 0]).contains("too many literal/length codes"))
        // Dynamic header whose code-length code is over-subscribed (three codes of length 1).
        w = BitWriter()
        w.bits(1, 1); w.bits(2, 2); w.bits(0, 5); w.bits(0, 5); w.bits(0, 4)
        for _ in 0..<3 { w.bits(1, 3) }
        w.bits(0, 3)
        XCTAssertTrue(reason(w.finish() + [0, 0, 0, 0]).contains("over-subscribed"))
    }

    /// A few hundred bytes that expand to gigabytes stop at the limit.
    func testZipBombStopsAtTheLimit() {
        var w = BitWriter()
        w.bits(1, 1); w.bits(1, 2)
        w.literal(0)
        for _ in 0..<100_000 { w.length258(); w.distance(symbol: 0) }
        w.endOfBlock()
        let bomb = w.finish()
        XCTAssertLessThan(bomb.count, 200_000)
        let text = errorText { _ = try Inflate.decompress(bomb, expectedSize: nil, limit: 1 << 20) }
        XCTAssertTrue(text.contains("limit of 1048576 bytes"), text)
        // Within a large enough limit it decodes to 1 + 258 × 100000 zeros.
        XCTAssertEqual(try Inflate.decompress(bomb, expectedSize: 25_800_001, limit: 1 << 26).count, 25_800_001)
    }

    /// Every proper prefix of a valid stream is truncated: it must throw.
    func testTruncatedStreamsThrow() {
        for (stream, size) in [(fixed, 30), (dynamic, dynamicText.count), (stored, 17)] {
            for n in 0..<stream.count {
                XCTAssertThrowsError(try Inflate.decompress(Array(stream[0..<n]), expectedSize: size, limit: 1 << 20), "prefix \(n)")
            }
        }
    }

    /// Corrupted and random inputs throw or decode within the limit; they never crash.
    func testCorruptAndRandomInputsNeverCrash() {
        var rng = TestRNG(state: 2024)
        var threw = 0, decoded = 0
        for round in 0..<3000 {
            var input: [UInt8]
            switch round % 3 {
            case 0:
                input = dynamic
                for _ in 0..<(1 + rng.below(4)) { input[rng.below(input.count)] ^= UInt8(1 << rng.below(8)) }
            case 1:
                input = round % 2 == 0 ? fixed : stored
                input[rng.below(input.count)] = UInt8(truncatingIfNeeded: rng.next())
            default:
                input = (0..<rng.below(300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            }
            do {
                let out = try Inflate.decompress(input, expectedSize: nil, limit: 4096)
                XCTAssertLessThanOrEqual(out.count, 4096)
                decoded += 1
            } catch {
                threw += 1
            }
        }
        XCTAssertGreaterThan(threw, 1000)
        XCTAssertEqual(threw + decoded, 3000)
    }

    /// Random, text-like and zero payloads compressed by Python's zlib at several levels and strategies.
    func testMatchesPythonZlib() throws {
        try requirePython()
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        try runPython("""
            import zlib, random
            random.seed(5)
            words = [b"tensor", b"weight", b"shrink", b"wrap", b"conv", b"relu", b" ", b"\\n", b"0.125"]
            payloads = {
              "empty": b"",
              "one": b"x",
              "random": bytes(random.getrandbits(8) for _ in range(70000)),
              "text": b"".join(random.choice(words) for _ in range(60000)),
              "zeros": bytes(300000),
              "mixed": b"".join(bytes(random.getrandbits(8) for _ in range(random.randint(1, 200))) + bytes(random.randint(0, 900)) for _ in range(300)),
            }
            cases = []
            for name, data in payloads.items():
                for level in (0, 1, 6, 9):
                    for strategy in (zlib.Z_DEFAULT_STRATEGY, zlib.Z_FIXED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE):
                        c = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
                        raw = c.compress(data) + c.flush()
                        tag = "%s-%d-%d" % (name, level, strategy)
                        open(tag + ".deflate", "wb").write(raw)
                        open(tag + ".plain", "wb").write(data)
                        cases.append(tag)
            open("cases.txt", "w").write("\\n".join(cases))
            """, in: dir)
        let cases = try String(contentsOf: dir.appendingPathComponent("cases.txt"), encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(cases.count, 6 * 4 * 4)
        for tag in cases {
            let raw = [UInt8](try Data(contentsOf: dir.appendingPathComponent("\(tag).deflate")))
            let plain = [UInt8](try Data(contentsOf: dir.appendingPathComponent("\(tag).plain")))
            XCTAssertEqual(try Inflate.decompress(raw, expectedSize: plain.count, limit: 1 << 24), plain, String(tag))
            XCTAssertEqual(try Inflate.decompress(raw, expectedSize: nil, limit: 1 << 24), plain, String(tag))
        }
    }
}
