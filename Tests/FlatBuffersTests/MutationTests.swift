import XCTest
@testable import FlatBuffers
import ShrinkwrapTestSupport

/// Randomized damage with a fixed seed: every truncation and thousands of byte
/// flips of valid buffers, each walked through every accessor of the test
/// schema. The reader may throw or succeed; it must never crash or hang.
final class MutationTests: XCTestCase {
    /// Walks the buffer as a test-schema Root; returns whether it succeeded.
    @discardableResult
    func walk(_ bytes: [UInt8]) -> Bool {
        do {
            try walkRoot(FlatBuffer(bytes: bytes, limits: ReadLimits(maxDepth: 64, maxTableVisits: 10_000)).root())
            return true
        } catch is FlatBufferError {
            return false
        } catch {
            // Schema-level errors from the test mirror (e.g. an unknown union type).
            return false
        }
    }

    func seeds() throws -> [[UInt8]] {
        var small = RootValues()
        small.name = "n"
        small.ints = [1, 2]
        small.payload = .other(flag: true, values: [3])
        return [try RootValues.full.buffer(), try RootValues.full.buffer(forceDefaults: true), try small.buffer()]
    }

    func testEveryTruncation() throws {
        for seed in try seeds() {
            XCTAssertTrue(walk(seed))
            var ok = 0
            for n in 0..<seed.count where walk(Array(seed[..<n])) { ok += 1 }
            // A cut-off buffer has its root near the front and children at the
            // back, so almost every truncation must be refused.
            XCTAssertLessThan(ok, seed.count / 10, "truncated buffers read without error: \(ok)")
        }
    }

    func testRandomByteFlips() throws {
        var rng = SplitMix(seed: 0x5EED_F1A7_B0FF_E125)  // fixed seed: failures reproduce
        let interesting: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 0xFE, 4, 8]
        var succeeded = 0, failed = 0
        for seed in try seeds() {
            for _ in 0..<4000 {
                var bytes = seed
                let flips = Int.random(in: 1...4, using: &rng)
                for _ in 0..<flips {
                    let i = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: bytes[i] = UInt8.random(in: 0...255, using: &rng)
                    case 1: bytes[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                    default: bytes[i] = interesting[Int.random(in: 0..<interesting.count, using: &rng)]
                    }
                }
                if Bool.random(using: &rng) { bytes.removeLast(Int.random(in: 0..<min(64, bytes.count), using: &rng)) }
                if walk(bytes) { succeeded += 1 } else { failed += 1 }
            }
        }
        // Both outcomes occur: flips in padding or payload bytes still read.
        XCTAssertGreaterThan(succeeded, 0)
        XCTAssertGreaterThan(failed, 0)
    }

    /// Every 4-byte window overwritten with extreme values (lengths, offsets).
    func testExtremeWordsEverywhere() throws {
        let seed = try RootValues.full.buffer()
        for value: UInt32 in [0, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFC, 4, UInt32(seed.count)] {
            for p in 0..<(seed.count - 3) {
                var bytes = seed
                for k in 0..<4 { bytes[p + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(k))) }
                walk(bytes)
            }
        }
    }
}
