import Foundation
@testable import ShrinkwrapData
import ShrinkwrapTestSupport
import XCTest

final class SHA256Tests: XCTestCase {
    func testStandardVectors() {
        XCTAssertEqual(SHA256.hex([UInt8]()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(Data("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000)),
                       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    func testIncrementalMatchesOneShotAtEveryBoundary() {
        var rng = TestRNG(state: 7)
        let bytes = (0..<300).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        for n in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 300] {
            let prefix = Array(bytes[0..<n])
            let whole = SHA256.hex(prefix)
            for split in Set([0, n / 3, n / 2, max(0, n - 1), n]) {
                var h = SHA256Hasher()
                h.update(Array(prefix[0..<split]))
                h.update(Data(prefix[split...]))
                XCTAssertEqual(SHA256.hexString(h.finalize()), whole, "n=\(n) split=\(split)")
            }
            var bytewise = SHA256Hasher()
            for b in prefix { [b].withUnsafeBytes { bytewise.update($0) } }
            XCTAssertEqual(SHA256.hexString(bytewise.finalize()), whole)
        }
    }

    func testFinalizeDoesNotConsumeTheHasher() {
        var h = SHA256Hasher()
        h.update(Array("ab".utf8))
        _ = h.finalize()
        h.update(Array("c".utf8))
        XCTAssertEqual(SHA256.hexString(h.finalize()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testMatchesSha256sumOnAFile() throws {
        let tool = ["/usr/bin/sha256sum", "/bin/sha256sum"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let tool else { throw XCTSkip("SKIPPED: sha256sum not found") }
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        var rng = TestRNG(state: 42)
        let bytes = (0..<100_003).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let file = dir.appendingPathComponent("blob.bin")
        try Data(bytes).write(to: file)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = [file.path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let expected = String(text.prefix(64))
        XCTAssertEqual(expected.count, 64)
        XCTAssertEqual(SHA256.hex(try Data(contentsOf: file)), expected)
    }
}
