import Foundation
import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

/// Damaged files: every truncation (strided for the larger fixtures) and thousands of seeded random byte
/// changes. Each must open and walk (every group, attribute and dataset) or throw `HDF5Error`s of one line
/// that name an offset; never crash, never hang.
final class RobustnessTests: XCTestCase {
    /// A small limit keeps a damaged size field from asking for much memory.
    static let limit = 1 << 22

    /// Opens and walks `bytes`; returns the errors' texts (and fails on anything not an `HDF5Error`).
    @discardableResult
    private func survive(_ bytes: [UInt8], _ label: String) -> [String] {
        do {
            let file = try HDF5File(bytes: bytes, file: "damaged.h5", limit: Self.limit)
            let walk = walkAll(file)
            XCTAssertEqual(walk.foreign, [], label)
            return walk.errors
        } catch let error as HDF5Error {
            return ["\(error)"]
        } catch {
            XCTFail("\(label): \(type(of: error)) is not an HDF5Error: \(error)")
            return []
        }
    }

    private func assertMessages(_ errors: [String], _ label: String) {
        for e in errors {
            XCTAssertFalse(e.contains("\n") || e.contains("\r"), "\(label): error spans lines: \(e)")
            XCTAssertTrue(e.hasPrefix("damaged.h5: offset "), "\(label): error does not start with the file and an offset: \(e)")
        }
    }

    func testEveryTruncationOfTheSmallFixtures() throws {
        for name in ["offsets4.h5", "keras_tiny.h5"] {
            let bytes = try Fixture.bytes(name)
            for length in 0..<bytes.count {
                assertMessages(survive(Array(bytes[0..<length]), "\(name)[0..<\(length)]"), name)
            }
        }
    }

    func testStridedTruncationsOfTheLargerFixtures() throws {
        for name in ["earliest.h5", "latest.h5", "dense_attr.h5"] {
            let bytes = try Fixture.bytes(name)
            for length in stride(from: 0, to: bytes.count, by: 37) {
                assertMessages(survive(Array(bytes[0..<length]), "\(name)[0..<\(length)]"), name)
            }
        }
    }

    func testTruncationErrorsSayWhatRunsPastTheEnd() throws {
        let bytes = try Fixture.bytes("latest.h5")
        let errors = survive(Array(bytes[0..<(bytes.count / 2)]), "half")
        XCTAssertFalse(errors.isEmpty)
        XCTAssertTrue(errors.contains { $0.contains("past the end of the file") }, "\(errors.prefix(3))")
    }

    func testSeededRandomByteChanges() throws {
        var rng = TestRNG(state: 0x4844_4635)
        var failed = 0, total = 0
        for name in Fixture.names {
            let original = try Fixture.bytes(name)
            for trial in 0..<600 {
                var bytes = original
                for _ in 0...rng.below(4) {
                    bytes[rng.below(bytes.count)] ^= UInt8(1 + rng.below(255))
                }
                let errors = survive(bytes, "\(name) trial \(trial)")
                assertMessages(errors, "\(name) trial \(trial)")
                failed += errors.isEmpty ? 0 : 1
                total += 1
            }
        }
        XCTAssertGreaterThan(failed, total / 10, "most damage should be detected somewhere")
    }

    /// Damage concentrated on metadata: byte changes near the structures' signatures.
    func testSeededChangesToMetadata() throws {
        var rng = TestRNG(state: 7)
        let signatures = ["OHDR", "OCHK", "TREE", "SNOD", "HEAP", "GCOL", "FRHP", "FHDB", "FHIB", "BTHD", "BTIN", "BTLF",
                          "FAHD", "FADB", "EAHD", "EAIB", "EASB", "EADB"].map { Array($0.utf8) }
        for name in ["earliest.h5", "latest.h5", "dense_attr.h5"] {
            let original = try Fixture.bytes(name)
            var starts: [Int] = []
            for i in 0..<(original.count - 4) where signatures.contains(where: { original[i..<(i + 4)].elementsEqual($0) }) {
                starts.append(i)
            }
            XCTAssertGreaterThan(starts.count, 5, name)
            for trial in 0..<400 {
                var bytes = original
                let at = starts[rng.below(starts.count)] + rng.below(48)
                guard at < bytes.count else { continue }
                bytes[at] ^= UInt8(1 + rng.below(255))
                assertMessages(survive(bytes, "\(name) metadata trial \(trial)"), name)
            }
        }
    }
}
