import ShrinkwrapIR
import XCTest

final class HalfTests: XCTestCase {
    func testKnownBitPatterns() {
        // Values and their binary16 encodings (IEEE 754 tables).
        let cases: [(Float, UInt16)] = [
            (0, 0x0000), (-0.0, 0x8000), (1, 0x3C00), (-2, 0xC000), (0.5, 0x3800),
            (65504, 0x7BFF), (6.103515625e-05, 0x0400),  // smallest normal 2^-14
            (5.960464477539063e-08, 0x0001),  // smallest subnormal 2^-24
            (.infinity, 0x7C00), (-.infinity, 0xFC00), (0.333251953125, 0x3555),
        ]
        for (f, h) in cases {
            XCTAssertEqual(Half.bits(from: f), h, "\(f)")
            XCTAssertEqual(Half.float(fromBits: h), f, "\(h)")
        }
        XCTAssertTrue(Half.float(fromBits: Half.bits(from: .nan)).isNaN)
    }

    func testRoundToNearestEven() {
        // 1 + 2^-11 lies exactly between 1 (0x3C00) and 1 + 2^-10 (0x3C01): ties to even → 0x3C00.
        XCTAssertEqual(Half.bits(from: 1 + 0x1p-11), 0x3C00)
        // 1 + 3·2^-11 lies between 0x3C01 and 0x3C02: ties to even → 0x3C02.
        XCTAssertEqual(Half.bits(from: 1 + 3 * 0x1p-11), 0x3C02)
        // Just above the tie rounds up.
        XCTAssertEqual(Half.bits(from: 1 + 0x1p-11 + 0x1p-20), 0x3C01)
        // 65520 is the tie between 65504 and 65536 (inf): rounds to even → inf.
        XCTAssertEqual(Half.bits(from: 65520), 0x7C00)
        XCTAssertEqual(Half.bits(from: 65519), 0x7BFF)
        // Subnormal tie: 1.5 · 2^-24 → 2 · 2^-24 (even).
        XCTAssertEqual(Half.bits(from: 1.5 * 0x1p-24), 0x0002)
        XCTAssertEqual(Half.bits(from: 0.5 * 0x1p-24), 0x0000)
    }

    func testEveryHalfRoundTrips() {
        for h in UInt16.min...UInt16.max {
            let f = Half.float(fromBits: h)
            if f.isNaN { continue }
            XCTAssertEqual(Half.bits(from: f), h)
        }
    }

    func testBFloat16() {
        XCTAssertEqual(Half.bfloatBits(from: 1), 0x3F80)
        XCTAssertEqual(Half.float(fromBFloatBits: 0x3F80), 1)
        // 1 + 2^-8 is the tie between 0x3F80 and 0x3F81 → even (0x3F80).
        XCTAssertEqual(Half.bfloatBits(from: 1 + 0x1p-8), 0x3F80)
        XCTAssertEqual(Half.bfloatBits(from: 1 + 3 * 0x1p-8), 0x3F82)
    }
}
