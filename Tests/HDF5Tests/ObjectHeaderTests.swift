import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

final class ObjectHeaderTests: XCTestCase {
    private func rootHeader(_ name: String) throws -> ObjectHeader {
        let file = try Fixture.open(name)
        return try ObjectHeader.read(file.data, address: file.rootAddress, path: "")
    }

    func testVersionsAndContinuations() throws {
        let earliest = try rootHeader("earliest.h5")
        XCTAssertEqual(earliest.version, 1)
        XCTAssertNotNil(earliest.first(ObjectHeader.symbolTable))
        XCTAssertGreaterThan(earliest.chunks, 1, "the root's attributes continue its header")
        XCTAssertEqual(earliest.all(ObjectHeader.attribute).count, 10)
        let latest = try rootHeader("latest.h5")
        XCTAssertEqual(latest.version, 2)
        XCTAssertNotNil(latest.first(ObjectHeader.linkInfo))
        let offsets4 = try Fixture.open("offsets4.h5")
        let headers = try ["", "g", "g/d", "g/z"].map {
            try ObjectHeader.read(offsets4.data, address: UInt64(try offsets4.object(at: $0).address), path: $0)
        }
        XCTAssertEqual(headers.map(\.version), [2, 2, 2, 2])
        XCTAssertTrue(headers.contains { $0.chunks > 1 }, "an 'OCHK' continuation block")
    }

    /// A version 1 header whose continuation block continues into itself.
    private func v1Header(continuation: (address: UInt64, length: UInt64)) -> FileData {
        var bytes = [UInt8](repeating: 0, count: 96)
        func put(_ value: UInt64, _ at: Int, _ n: Int) { for k in 0..<n { bytes[at + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(k))) } }
        bytes[0] = 1                      // version
        put(2, 2, 2)                      // messages
        put(1, 4, 4)                      // reference count
        put(24, 8, 4)                     // chunk size: one continuation message
        for at in [16, 64] {              // the first chunk, and the block at 64
            put(0x10, at, 2)              // continuation message, 16 bytes
            put(16, at + 2, 2)
            put(continuation.address, at + 8, 8)
            put(continuation.length, at + 16, 8)
        }
        return FileData(bytes: bytes, name: "synthetic.h5", base: 0, offsetSize: 8, lengthSize: 8, limit: 1 << 20)
    }

    func testContinuationCyclesAndOverruns() {
        let cycle = errorText { _ = try ObjectHeader.read(self.v1Header(continuation: (64, 24)), address: 0, path: "g") }
        XCTAssertEqual(cycle, "synthetic.h5: offset 64 (object header of 'g'): continuation block at offset 64 is listed twice (a cycle)")
        let past = errorText { _ = try ObjectHeader.read(self.v1Header(continuation: (64, 4000)), address: 0, path: "g") }
        XCTAssertEqual(past, "synthetic.h5: offset 24 (object header of 'g'): continuation block (4000 bytes at address 64) runs past the end of the file (size 96)")
        let outside = errorText { _ = try ObjectHeader.read(self.v1Header(continuation: (1 << 62, 8)), address: 0, path: "g") }
        XCTAssertTrue(outside.contains("runs past the end of the file"), outside)
    }

    func testDamagedVersion2HeadersAreCaughtByTheirChecksum() throws {
        let file = try Fixture.open("latest.h5")
        let position = file.data.base + Int(file.rootAddress)
        var bytes = file.data.bytes
        bytes[position + 12] ^= 0x40
        let damaged = try HDF5File(bytes: bytes, file: "latest.h5")
        let text = errorText { _ = try damaged.root.members() }
        XCTAssertTrue(text.contains("(object header of the root group): checksum mismatch"), text)
        assertOneLine(try XCTUnwrap(Result { try damaged.root.members() }.failure))
    }

    func testUnknownHeaderVersion() throws {
        let file = try Fixture.open("earliest.h5")
        var bytes = file.data.bytes
        bytes[Int(file.rootAddress)] = 7
        let text = errorText { _ = try HDF5File(bytes: bytes, file: "e.h5").root.members() }
        XCTAssertTrue(text.contains("object header version 7 is not supported"), text)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
