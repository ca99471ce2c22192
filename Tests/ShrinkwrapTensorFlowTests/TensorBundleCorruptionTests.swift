import Foundation
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest
@testable import ShrinkwrapTensorFlow

/// Hostile indexes: every truncation, seeded byte flips as they come (the block
/// checksums catch them) and behind re-sealed checksums (so the parser itself
/// meets them). Each must throw a one-line error naming the index, or open, and
/// never crash or hang; what opens must then read or refuse every tensor.
final class TensorBundleCorruptionTests: XCTestCase {
    typealias F = TensorFlowFixtures

    private let indexes = [F.moduleVariables, F.manyVariables]

    func testEveryTruncationThrowsAOneLineErrorNamingTheIndex() throws {
        for prefix in indexes {
            let bytes = try F.bytes(URL(fileURLWithPath: prefix.path + ".index"))
            for length in 0..<bytes.count {
                let text = errorText { _ = try TensorBundle(index: Array(bytes.prefix(length)), prefix: prefix) }
                assertOneLine(text, naming: prefix.path + ".index", "truncated to \(length)")
            }
        }
    }

    func testSeededByteFlipsNeverCrash() throws {
        var rng = SplitMix(seed: 0x7F_0001)
        for prefix in indexes {
            let bytes = try F.bytes(URL(fileURLWithPath: prefix.path + ".index"))
            let intact = try TensorBundle(index: bytes, prefix: prefix)
            var opened = 0
            for _ in 0..<1500 {
                var mutated = bytes
                for _ in 0..<(1 + rng.below(3)) { mutated[rng.below(mutated.count)] ^= UInt8(1 << rng.below(8)) }
                opened += exercise(mutated, prefix: prefix, intact: intact) ? 1 : 0
            }
            // Flips inside blocks are checksum mismatches; only footer padding flips may open.
            XCTAssertLessThan(opened, 150, prefix.path)
        }
    }

    func testFlipsBehindResealedChecksumsNeverCrash() throws {
        var rng = SplitMix(seed: 0x7F_0002)
        for prefix in indexes {
            let bytes = try F.bytes(URL(fileURLWithPath: prefix.path + ".index"))
            let blocks = try BundleTable(bytes: bytes, file: "").blocks
            let intact = try TensorBundle(index: bytes, prefix: prefix)
            var outcomes = [0, 0]
            for _ in 0..<2000 {
                var mutated = bytes
                let block = blocks[rng.below(blocks.count)]
                guard !block.isEmpty else { continue }
                for _ in 0..<(1 + rng.below(3)) {
                    let position = block.lowerBound + rng.below(block.count)
                    if rng.below(4) == 0 { mutated[position] = UInt8(truncatingIfNeeded: rng.next()) } else { mutated[position] ^= UInt8(1 << rng.below(8)) }
                }
                Self.reseal(&mutated, block)
                outcomes[exercise(mutated, prefix: prefix, intact: intact) ? 1 : 0] += 1
            }
            // Both outcomes happen: the parser refuses some, and values it cannot check (entry fields) slip through.
            XCTAssertGreaterThan(outcomes[0], 100, "\(prefix.path): \(outcomes)")
            XCTAssertGreaterThan(outcomes[1], 10, "\(prefix.path): \(outcomes)")
        }
    }

    func testABlockChecksumMismatchNamesTheBlock() throws {
        let prefix = F.manyVariables
        var bytes = try F.bytes(URL(fileURLWithPath: prefix.path + ".index"))
        let blocks = try BundleTable(bytes: bytes, file: "").blocks
        bytes[blocks[1].lowerBound + 7] ^= 1
        let text = errorText { _ = try TensorBundle(index: bytes, prefix: prefix) }
        XCTAssertTrue(text.hasPrefix("\(prefix.path).index: block at offset \(blocks[1].lowerBound): malformed: checksum mismatch"), text)
    }

    func testASnappyBlockIsRefusedClearly() throws {
        let prefix = F.moduleVariables
        var bytes = try F.bytes(URL(fileURLWithPath: prefix.path + ".index"))
        let block = try BundleTable(bytes: bytes, file: "").blocks[0]
        bytes[block.upperBound] = 1
        Self.reseal(&bytes, block)
        let text = errorText { _ = try TensorBundle(index: bytes, prefix: prefix) }
        XCTAssertEqual(text, "\(prefix.path).index: block at offset 0: unsupported: a snappy-compressed block"
                       + " (TensorFlow writes bundle indexes uncompressed; only those are read)")
    }

    func testANonIndexFileIsRefusedByItsMagicNumber() throws {
        let prefix = F.moduleVariables
        let notAnIndex = try F.bytes(F.savedModel.appendingPathComponent("saved_model.pb"))
        let text = errorText { _ = try TensorBundle(index: notAnIndex, prefix: prefix) }
        assertOneLine(text, naming: prefix.path + ".index", "saved_model.pb")
        XCTAssertTrue(text.contains("no table magic number"), text)
    }

    // MARK: - Helpers

    /// Opens the bundle and reads every tensor whose entry differs from the intact bundle's; true when it
    /// opened. Every error must be one line naming a file of the bundle.
    private func exercise(_ index: [UInt8], prefix: URL, intact: TensorBundle, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        let bundle: TensorBundle
        do {
            bundle = try TensorBundle(index: index, prefix: prefix)
        } catch {
            assertOneLine("\(error)", naming: prefix.path + ".index", "index", file: file, line: line)
            return false
        }
        for name in bundle.names {
            if let entry = try? bundle.entry(name), let before = try? intact.entry(name), entry == before { continue }
            let text = errorText {
                if name == TensorBundle.objectGraphKey { _ = try bundle.objectGraph() } else { _ = try bundle.tensor(name) }
            }
            if text != "no error" { assertOneLine(text, naming: prefix.path, name, file: file, line: line) }
        }
        return true
    }

    private func assertOneLine(_ text: String, naming file: String, _ context: String,
                               file testFile: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(text.hasPrefix(file), "\(context): \(text)", file: testFile, line: line)
        XCTAssertFalse(text.contains("\n") || text.contains("\r"), "\(context): \(text)", file: testFile, line: line)
        XCTAssertNotEqual(text, "no error", context, file: testFile, line: line)
    }

    /// Rewrites the trailer checksum of the block whose contents are `block`.
    static func reseal(_ bytes: inout [UInt8], _ block: Range<Int>) {
        let crc = CRC32C.mask(CRC32C.checksum(bytes[block.lowerBound...block.upperBound]))
        for i in 0..<4 { bytes[block.upperBound + 1 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
    }
}
