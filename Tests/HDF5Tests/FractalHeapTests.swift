import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

/// Dense link and attribute storage: fractal heaps (managed and huge objects) indexed by v2 B-trees.
final class FractalHeapTests: XCTestCase {
    private func header(_ file: HDF5File, _ path: String) throws -> ObjectHeader {
        let object = try file.object(at: path)
        return try ObjectHeader.read(file.data, address: UInt64(object.address - file.data.base), path: path)
    }

    private func denseInfo(_ file: HDF5File, _ path: String, _ type: Int) throws -> Messages.DenseInfo? {
        guard let message = try header(file, path).first(type) else { return nil }
        var c = try file.data.cursor(at: message.start, length: message.size, path)
        return type == ObjectHeader.linkInfo ? try Messages.linkInfo(&c) : try Messages.attributeInfo(&c)
    }

    func testWhichGroupsAreDense() throws {
        let file = try Fixture.open("latest.h5")
        XCTAssertNotNil(try denseInfo(file, "hundred", ObjectHeader.linkInfo)?.heap, "100 links: dense")
        XCTAssertNotNil(try denseInfo(file, "nine", ObjectHeader.linkInfo)?.heap, "9 links: past the 8 compact ones")
        XCTAssertNil(try denseInfo(file, "one", ObjectHeader.linkInfo)?.heap, "1 link: compact")
        XCTAssertEqual(try header(file, "one").all(ObjectHeader.link).count, 1)
        XCTAssertNotNil(try denseInfo(file, "many_attrs", ObjectHeader.attributeInfo)?.heap, "12 attributes: dense")
        XCTAssertEqual(try Fixture.group(file, "many_attrs").attribute("attr_07")?.value, .doubles([1.75]))
        XCTAssertNil(try Fixture.group(file, "many_attrs").attribute("attr_99"))
    }

    /// 16 500 float32 (66 000 bytes) do not fit an object header message: a huge object of the dense attribute heap.
    func testAttributeOver64KiB() throws {
        let file = try Fixture.open("dense_attr.h5")
        let layer = try Fixture.group(file, "layer")
        XCTAssertNotNil(try denseInfo(file, "layer", ObjectHeader.attributeInfo)?.heap)
        let big = try XCTUnwrap(try layer.attribute("big"))
        XCTAssertEqual(big.shape, [16500])
        XCTAssertEqual(big.value, .floats((0..<16500).map { (Float($0) - 8000) / 16 }))
        XCTAssertEqual(try layer.attribute("small")?.value, .ints([5]))
        XCTAssertEqual(try layer.attributes().map(\.name), ["big", "small"])
    }

    func testIDFieldWidths() {
        XCTAssertEqual(FractalHeap.encodedWidth(65536), 3)
        XCTAssertEqual(FractalHeap.encodedWidth(4096), 2)
        XCTAssertEqual(FractalHeap.encodedWidth(255), 1)
        XCTAssertEqual(FractalHeap.encodedWidth(256), 2)
    }

    func testDamagedHeapHeader() throws {
        let file = try Fixture.open("latest.h5")
        let heap = try XCTUnwrap(try denseInfo(file, "hundred", ObjectHeader.linkInfo)?.heap)
        var bytes = file.data.bytes
        bytes[file.data.base + Int(heap) + 10] ^= 0x01
        let damaged = try HDF5File(bytes: bytes, file: "latest.h5")
        let text = errorText { _ = try Fixture.group(damaged, "hundred").members() }
        XCTAssertTrue(text.contains("(dense link storage of 'hundred'): checksum mismatch"), text)
        // The other groups are still readable.
        XCTAssertEqual(try Fixture.group(damaged, "one").members(), ["only"])
    }
}
