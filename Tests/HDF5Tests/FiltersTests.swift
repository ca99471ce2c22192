import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

final class FiltersTests: XCTestCase {
    private let file = FileData(bytes: [], name: "f.h5", base: 0, offsetSize: 8, lengthSize: 8, limit: 1 << 20)
    private let deflate = Filter(id: 1, name: "", optional: false, clientData: [6])
    private let shuffle = Filter(id: 2, name: "", optional: false, clientData: [4])
    private let fletcher = Filter(id: 3, name: "", optional: false, clientData: [])

    private func decode(_ stored: [UInt8], _ filters: [Filter], mask: UInt32 = 0, chunkBytes: Int) throws -> [UInt8] {
        try Filters.decode(stored[...], filters: filters, mask: mask, chunkBytes: chunkBytes, elementSize: 4, file: file, at: 100, context: "chunk")
    }

    /// A zlib stream holding `data` in one stored DEFLATE block.
    private func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        let n = UInt16(data.count)
        return [0x78, 0x01, 0x01, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8(~n >> 8)] + data
            + [UInt8(b >> 8), UInt8(b & 0xFF), UInt8(a >> 8), UInt8(a & 0xFF)]
    }

    func testUnshuffle() {
        // Three 4-byte elements stored as byte planes, plus a 2-byte tail stored as is.
        let original: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        XCTAssertEqual(Filters.unshuffle([1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12], elementSize: 4), original)
        XCTAssertEqual(Filters.unshuffle([1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12, 99, 98], elementSize: 4), original + [99, 98])
        XCTAssertEqual(Filters.unshuffle([1, 2, 3], elementSize: 1), [1, 2, 3])
    }

    func testPipelineRunsBackwards() throws {
        let data: [UInt8] = Array(0..<16)
        let shuffled = (0..<4).flatMap { k in (0..<4).map { data[$0 * 4 + k] } }
        var stored = zlibStored(shuffled)
        let sum = Checksum.fletcher32(stored[...])
        stored += [UInt8(sum & 0xFF), UInt8(sum >> 8 & 0xFF), UInt8(sum >> 16 & 0xFF), UInt8(sum >> 24)]
        XCTAssertEqual(try decode(stored, [shuffle, deflate, fletcher], chunkBytes: 16), data)
        // A filter the chunk's mask skipped is not undone.
        XCTAssertEqual(try decode(zlibStored(data), [shuffle, deflate], mask: 0b01, chunkBytes: 16), data)
    }

    func testFilterErrors() {
        XCTAssertEqual(errorText { _ = try self.decode([1, 2, 3, 4], [self.deflate], chunkBytes: 4) },
                       "f.h5: offset 100 (chunk): deflate chunk does not start with a zlib header (0x1 0x2)")
        XCTAssertTrue(errorText { _ = try self.decode(self.zlibStored([1, 2, 3]), [self.deflate], chunkBytes: 4) }
            .contains("chunk decodes to 3 bytes, expected 4"))
        XCTAssertTrue(errorText { _ = try self.decode([1, 2, 3, 4, 0, 0, 0, 0], [self.fletcher], chunkBytes: 4) }
            .contains("fletcher32 checksum mismatch (stored 0x00000000, computed 0x"))
        let lzf = Filter(id: 32000, name: "lzf", optional: false, clientData: [])
        XCTAssertEqual(errorText { _ = try self.decode([1], [lzf], chunkBytes: 1) },
                       "f.h5: offset 100 (chunk): filter 32000 'lzf' is not supported (deflate, shuffle and fletcher32 are)")
        let szip = Filter(id: 4, name: "", optional: false, clientData: [])
        XCTAssertTrue(errorText { _ = try self.decode([1], [szip], chunkBytes: 1) }.contains("filter 4 'szip' is not supported"))
        // Damaged DEFLATE data, and data that inflates past the chunk (bounded: never more than the chunk).
        let damaged = [0x78, 0x9C] + [UInt8](repeating: 0, count: 8)
        XCTAssertTrue(errorText { _ = try self.decode(damaged, [self.deflate], chunkBytes: 4) }.contains("deflate chunk:"))
        XCTAssertTrue(errorText { _ = try self.decode(self.zlibStored(Array(0..<100)), [self.deflate], chunkBytes: 4) }
            .contains("deflate chunk:"))
    }

    func testFilterPipelineMessages() throws {
        // Version 2: deflate (id 1, no name), flags 0, one client value (level 4).
        let bytes: [UInt8] = [2, 1, 1, 0, 0, 0, 1, 0, 4, 0, 0, 0]
        let data = FileData(bytes: bytes, name: "f.h5", base: 0, offsetSize: 8, lengthSize: 8, limit: 1 << 20)
        var c = try data.cursor(at: 0, "filters")
        XCTAssertEqual(try Filter.pipeline(&c), [Filter(id: 1, name: "", optional: false, clientData: [4])])
    }
}
