import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

/// The chunk indexes the fixtures exercise (so that the value comparison in HDF5FileTests covers each
/// one), edge chunks, and the placement of a chunk in the output.
final class ChunkIndexTests: XCTestCase {
    private func layout(_ file: HDF5File, _ path: String) throws -> Layout {
        let dataset = try Fixture.dataset(file, path)
        let header = try ObjectHeader.read(file.data, address: UInt64(dataset.address - file.data.base), path: path)
        let message = try XCTUnwrap(header.first(ObjectHeader.layout))
        var c = try file.data.cursor(at: message.start, length: message.size, path)
        return try Layout.parse(&c)
    }

    private func index(_ file: HDF5File, _ path: String) throws -> Layout.ChunkIndexKind? {
        guard case .chunked(let chunking) = try layout(file, path) else { return nil }
        return chunking.index
    }

    func testLatestUsesEveryIndexType() throws {
        let file = try Fixture.open("latest.h5")
        let expected: [(String, Layout.ChunkIndexKind)] = [
            ("layouts/gzip_shuffle", .fixedArray(pageBits: 10)), ("layouts/fixed_max", .fixedArray(pageBits: 10)),
            ("layouts/unlimited_rows", .extensibleArray), ("layouts/unlimited_cols", .extensibleArray),
            ("layouts/unlimited_many", .extensibleArray), ("layouts/unlimited_2d_gzip", .btreeV2), ("layouts/unlimited_2d", .btreeV2), ("layouts/implicit", .implicit),
        ]
        for (path, kind) in expected { XCTAssertEqual(try index(file, path), kind, path) }
        guard case .single(let filteredSize, _)? = try index(file, "layouts/one_chunk") else { return XCTFail("one_chunk") }
        XCTAssertNotNil(filteredSize, "a filtered single chunk records its size")
        guard case .compact = try layout(file, "layouts/compact") else { return XCTFail("compact") }
        guard case .contiguous(nil, _) = try layout(file, "layouts/unwritten_fill") else { return XCTFail("unwritten_fill is allocated") }
        // 260 chunks reach past the index block's 6 data blocks, into a secondary block.
        XCTAssertTrue(file.data.bytes.indices.dropLast(4).contains { file.data.bytes[$0..<($0 + 4)].elementsEqual("EASB".utf8) })
    }

    func testEarliestUsesVersion1BTrees() throws {
        let file = try Fixture.open("earliest.h5")
        for path in ["layouts/gzip_shuffle", "layouts/fletcher32", "layouts/partial_chunks", "layouts/unlimited_many"] {
            XCTAssertEqual(try index(file, path), .btreeV1, path)
        }
        // 100 one-byte chunks in nodes of at most 8: a tree three levels deep.
        XCTAssertEqual(try Fixture.dataset(file, "layouts/unlimited_many").read(),
                       .ints((0..<100).map { Int64(Int8(truncatingIfNeeded: $0 * 3 - 128)) }))
    }

    func testEdgeChunksAndUnwrittenChunks() throws {
        for name in ["earliest.h5", "latest.h5"] {
            let file = try Fixture.open(name)
            // 10 × 7 in 4 × 3 chunks: the last row and column of chunks are partial.
            XCTAssertEqual(try Fixture.dataset(file, "layouts/gzip_shuffle").read().floatArray, (0..<70).map { Float($0) / 8 }, name)
            XCTAssertEqual(try Fixture.dataset(file, "layouts/partial_chunks").read(), .ints([9, 9, 20, 30, 9, 9]), name)
            XCTAssertEqual(try Fixture.dataset(file, "layouts/unwritten_chunked").read(), .floats([Float](repeating: -1.5, count: 16)), name)
        }
    }

    func testPlacingAnEdgeChunk() throws {
        let space = Dataspace(kind: .simple, dims: [3, 5], maxDims: [3, 5])
        let chunking = Layout.Chunking(version: 4, dims: [2, 2], elementSize: 1, unfilteredEdges: false, index: .implicit, address: nil)
        let grid = try ChunkGrid(space: space, layout: chunking, elementSize: 1, file: Fixture.open("latest.h5").data, at: 0, context: "t")
        XCTAssertEqual(grid.counts, [2, 3])
        var out = [UInt8](repeating: 0, count: 15)
        DatasetReader.place([1, 2, 3, 4], coords: [1, 2], grid: grid, into: &out)  // rows 2..<4, columns 4..<6: one value inside
        DatasetReader.place([5, 6, 7, 8], coords: [0, 0], grid: grid, into: &out)
        XCTAssertEqual(out, [5, 6, 0, 0, 0,
                             7, 8, 0, 0, 0,
                             0, 0, 0, 0, 1])
    }

    func testChunkGridRefusals() throws {
        let data = try Fixture.open("latest.h5").data
        let space = Dataspace(kind: .simple, dims: [4], maxDims: [4])
        let zero = Layout.Chunking(version: 4, dims: [0], elementSize: 4, unfilteredEdges: false, index: .implicit, address: nil)
        XCTAssertTrue(errorText { _ = try ChunkGrid(space: space, layout: zero, elementSize: 4, file: data, at: 9, context: "t") }
            .contains("chunk dimensions [0] include 0"))
        let huge = Layout.Chunking(version: 4, dims: [1 << 40], elementSize: 4, unfilteredEdges: false, index: .implicit, address: nil)
        XCTAssertTrue(errorText { _ = try ChunkGrid(space: space, layout: huge, elementSize: 4, file: data, at: 9, context: "t") }
            .contains("exceed the limit"))
        let wrongSize = Layout.Chunking(version: 4, dims: [2], elementSize: 8, unfilteredEdges: false, index: .implicit, address: nil)
        XCTAssertTrue(errorText { _ = try ChunkGrid(space: space, layout: wrongSize, elementSize: 4, file: data, at: 9, context: "t") }
            .contains("layout element size 8 differs from the datatype's 4 bytes"))
    }
}
