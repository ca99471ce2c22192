import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

final class SuperblockTests: XCTestCase {
    func testVersionsSizesAndBase() throws {
        let cases: [(String, Int, Int, Int)] = [("keras_tiny.h5", 0, 8, 0), ("earliest.h5", 1, 8, 0), ("offsets4.h5", 2, 4, 0),
                                                ("latest.h5", 3, 8, 0), ("dense_attr.h5", 3, 8, 512)]
        for (name, version, offsets, base) in cases {
            let superblock = try Superblock.read(try Fixture.bytes(name), name: name)
            XCTAssertEqual(superblock.version, version, name)
            XCTAssertEqual(superblock.offsetSize, offsets, name)
            XCTAssertEqual(superblock.base, base, name)
        }
    }

    /// Addresses count from the signature, wherever it is (0, 512, 1024, 2048, …).
    func testSignatureAfterAUserBlock() throws {
        for (name, padding) in [("earliest.h5", 2048), ("latest.h5", 1024), ("keras_tiny.h5", 512)] {
            let moved = try HDF5File(bytes: [UInt8](repeating: 0x55, count: padding) + (try Fixture.bytes(name)), file: name)
            let original = try Fixture.open(name)
            XCTAssertEqual(try moved.root.members(), try original.root.members(), name)
            XCTAssertEqual(try moved.root.attributes(), try original.root.attributes(), name)
        }
        let file = try Fixture.open("dense_attr.h5")
        XCTAssertEqual(try Fixture.dataset(file, "layer/w").read(), .floats([0, 1, 2, 3]))
    }

    func testNotAnHDF5File() {
        let text = errorText { _ = try HDF5File(bytes: Array("just some text, long enough to look at".utf8), file: "notes.txt") }
        XCTAssertEqual(text, "notes.txt: offset 0 (superblock): no HDF5 signature at offset 0, 512, 1024, … (38 bytes): not an HDF5 file")
        XCTAssertTrue(errorText { _ = try HDF5File(bytes: [], file: "empty.h5") }.contains("not an HDF5 file"))
    }

    func testDamagedSuperblocks() throws {
        var bytes = try Fixture.bytes("keras_tiny.h5")
        bytes[8] = 9
        XCTAssertEqual(errorText { _ = try HDF5File(bytes: bytes, file: "k.h5") },
                       "k.h5: offset 8 (superblock): superblock version 9 is not supported (0-3 are)")
        bytes = try Fixture.bytes("keras_tiny.h5")
        bytes[13] = 16  // size of offsets
        XCTAssertTrue(errorText { _ = try HDF5File(bytes: bytes, file: "k.h5") }
            .contains("size of offsets 16 / size of lengths 8 is not supported"))
        bytes = try Fixture.bytes("latest.h5")
        bytes[20] ^= 1  // in the superblock extension address, under the checksum
        let text = errorText { _ = try HDF5File(bytes: bytes, file: "l.h5") }
        XCTAssertTrue(text.hasPrefix("l.h5: offset 44 (superblock): checksum mismatch (stored 0x"), text)
        bytes = try Fixture.bytes("latest.h5")
        XCTAssertTrue(errorText { _ = try HDF5File(bytes: Array(bytes[0..<30]), file: "l.h5") }.contains("runs past the end of the file"))
    }
}
