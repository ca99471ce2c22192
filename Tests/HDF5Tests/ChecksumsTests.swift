import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

final class ChecksumsTests: XCTestCase {
    /// Values from lookup3.c's own self-test.
    func testLookup3KnownValues() {
        XCTAssertEqual(Checksum.lookup3([][...]), 0xDEAD_BEEF)
        let text = Array("Four score and seven years ago".utf8)[...]
        XCTAssertEqual(Checksum.lookup3(text), 0x1777_0551)
        XCTAssertEqual(Checksum.lookup3(text, initial: 1), 0xCD62_8161)
    }

    func testLookup3OfEveryTailLength() {
        // Every length 0...40 hashes differently from its neighbours (the tail handling reads each byte).
        let bytes = (0..<40).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }
        let hashes = (0...40).map { Checksum.lookup3(bytes[0..<$0]) }
        XCTAssertEqual(Set(hashes).count, hashes.count)
    }

    /// Fletcher-32 as the textbook defines it over big-endian 16-bit words, with big integers and one
    /// ones'-complement reduction at the end.
    private func reference(_ bytes: [UInt8]) -> UInt32 {
        var s1 = 0, s2 = 0
        var i = 0
        while i < bytes.count {
            s1 += Int(bytes[i]) << 8 | (i + 1 < bytes.count ? Int(bytes[i + 1]) : 0)
            s2 += s1
            i += 2
        }
        func reduce(_ x: Int) -> UInt32 { x == 0 ? 0 : UInt32((x - 1) % 65535 + 1) }
        return reduce(s2) << 16 | reduce(s1)
    }

    func testFletcher32AgainstTheDefinition() {
        var rng = TestRNG(state: 32)
        for length in [0, 1, 2, 3, 7, 719, 720, 721, 1440, 5000] {
            let random = (0..<length).map { _ in UInt8(rng.below(256)) }
            XCTAssertEqual(Checksum.fletcher32(random[...]), reference(random), "random, \(length) bytes")
            let ones = [UInt8](repeating: 0xFF, count: length)
            XCTAssertEqual(Checksum.fletcher32(ones[...]), reference(ones), "0xFF, \(length) bytes")
        }
    }

    /// libhdf5 wrote these checksums: the fletcher32 datasets read back only if ours agree.
    func testFletcher32MatchesLibhdf5() throws {
        for name in ["earliest.h5", "latest.h5"] {
            let values = try Fixture.dataset(try Fixture.open(name), "layouts/fletcher32").read().floatArray
            XCTAssertEqual(values, (0..<70).map { Float($0) / 8 }, name)
        }
    }
}
