import Foundation
import ShrinkwrapIR
import ShrinkwrapTestSupport
import TensorFlowSchema
import XCTest
@testable import ShrinkwrapTensorFlow

/// Bundles written entry by entry (BundleIndexWriter): what TensorFlow writes,
/// and what it never would, each with the error it must give.
final class TensorBundleHandBuiltTests: XCTestCase {
    typealias W = BundleIndexWriter

    private var dir: URL!
    private var prefix: URL { dir.appendingPathComponent("variables") }

    override func setUpWithError() throws { dir = try makeTempDir("tf-bundle") }
    override func tearDownWithError() throws { try FileManager.default.removeItem(at: dir) }

    /// A bundle of `entries` after the header, whose data file holds `data`.
    private func open(_ entries: [(String, [UInt8])], header: [UInt8] = W.header(), data: [UInt8] = []) throws -> TensorBundle {
        try Data(data).write(to: URL(fileURLWithPath: prefix.path + ".data-00000-of-00001"))
        var writer = W()
        writer.appendData(W.plain([("", header)] + entries))
        return try TensorBundle(index: writer.finish(), prefix: prefix)
    }

    private func indexError(_ entries: [(String, [UInt8])], header: [UInt8] = W.header()) -> String {
        errorText { _ = try open(entries, header: header) }
    }

    private func assertError(_ text: String, _ expected: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(text, "\(prefix.path).index: \(expected)", file: file, line: line)
    }

    func testAHandBuiltBundleReadsBack() throws {
        let floats: [Float] = [1.5, -2]
        let floatBytes = floats.flatMap { f in withUnsafeBytes(of: f.bitPattern.littleEndian) { Array($0) } }
        let shorts: [UInt8] = [0xFF, 0xFF, 0x02, 0x00, 0x00, 0x80]
        let strings: [[UInt8]] = [[], Array("hi".utf8), [0, 1, 2]]
        var stringData = strings.flatMap { W.varint($0.count) }
        var crc = strings.reduce(UInt32(0)) { c, s in withUnsafeBytes(of: UInt32(s.count).littleEndian) { CRC32C.checksum($0, continuing: c) } }
        let lengthCRC = withUnsafeBytes(of: CRC32C.mask(crc).littleEndian) { Array($0) }
        crc = CRC32C.checksum(lengthCRC[...], continuing: crc)
        stringData += lengthCRC + strings.flatMap { $0 }
        crc = strings.reduce(crc) { CRC32C.checksum($1[...], continuing: $0) }
        let stringOffset = Int64(floatBytes.count + shorts.count)
        let bundle = try open([
            ("a", W.entry(.dtFloat, shape: [2], offset: 0, data: floatBytes)),
            ("b", W.entry(.dtInt16, shape: [3], offset: Int64(floatBytes.count), data: shorts)),
            ("s", W.entry(.dtString, shape: [3], offset: stringOffset, data: stringData) { $0.crc32C = CRC32C.mask(crc) }),
            ("z", W.entry(.dtBool, shape: [0, 1 << 20], offset: 0, data: [])),
        ], data: floatBytes + shorts + stringData)
        XCTAssertEqual(bundle.names, ["a", "b", "s", "z"])
        XCTAssertEqual(try bundle.tensor("a"), Tensor(floats, shape: [2]))
        XCTAssertEqual(try bundle.tensor("b"), Tensor(ints: [-1, 2, -32768], shape: [3], dtype: .int16))
        XCTAssertEqual(try bundle.strings("s"), strings)
        XCTAssertEqual(try bundle.tensor("z"), Tensor(bools: [], shape: [0, 1 << 20]))
        XCTAssertNil(try bundle.objectGraph())
    }

    func testKeysSharePrefixesWithThePreviousKey() throws {
        var writer = W()
        let data = [UInt8](repeating: 0, count: 4)
        writer.appendData([W.Raw(shared: 0, suffix: [], value: W.header()),
                           W.Raw(shared: 0, suffix: Array("layer/a".utf8), value: W.entry(.dtFloat, shape: [], offset: 0, data: data)),
                           W.Raw(shared: 6, suffix: Array("bc".utf8), value: W.entry(.dtFloat, shape: [1], offset: 0, data: data))])
        try Data(data).write(to: URL(fileURLWithPath: prefix.path + ".data-00000-of-00001"))
        let bundle = try TensorBundle(index: writer.finish(), prefix: prefix)
        XCTAssertEqual(bundle.names, ["layer/a", "layer/bc"])
        XCTAssertEqual(try bundle.tensor("layer/bc"), Tensor([0], shape: [1]))
    }

    func testLongSharedPrefixesCannotTakeQuadraticTime() {
        // One 100 kB key, then 65536 entries each copying all but its last two bytes: 6.5 GB of keys unbounded.
        let long = [UInt8](repeating: 0x61, count: 100_000)
        var entries = [W.Raw(shared: 0, suffix: [], value: W.header()), W.Raw(shared: 0, suffix: long, value: [])]
        entries += (1..<65536).map { W.Raw(shared: long.count - 2, suffix: [UInt8($0 >> 8), UInt8($0 & 0xFF)], value: []) }
        var writer = W()
        writer.appendData(entries)
        let index = writer.finish()
        let start = Date()
        let text = errorText { _ = try TensorBundle(index: index, prefix: prefix) }
        XCTAssertTrue(text.contains("keys longer in total than a tensor bundle index holds"), text)
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)
    }

    func testTableStructureErrors() {
        var writer = W()
        writer.appendData(W.plain([("", W.header()), ("a", [])]), restartBytes: [0, 1])
        assertError(errorText { _ = try TensorBundle(index: writer.finish(), prefix: prefix) },
                    "block at offset 0: malformed: restart point 1 (byte 1) is not the start of an entry with a whole key")

        writer = W()
        writer.appendData([W.Raw(shared: 0, suffix: [], value: W.header()), W.Raw(shared: 5, suffix: [], value: [])])
        assertError(errorText { _ = try TensorBundle(index: writer.finish(), prefix: prefix) },
                    "entry at byte \(3 + W.header().count) of the block at offset 0: malformed: shares 5 bytes with a previous key of 0")

        writer = W()
        let handle = writer.append(block: W.block(W.plain([("", W.header())])))
        let end = writer.bytes.count
        writer.appendIndex(key: "a", handle: handle)
        writer.appendIndex(key: "b", handle: handle)
        assertError(errorText { _ = try TensorBundle(index: writer.finish(), prefix: prefix) },
                    "index entry 'b': malformed: block at offset 0 overlaps or precedes the previous block (which ends at \(end))")

        assertError(indexError([("b", []), ("a", [])]), "entry 'a': malformed: keys out of order or repeated (after 'b')")
        assertError(indexError([("a", []), ("a", [])]), "entry 'a': malformed: keys out of order or repeated (after 'a')")
    }

    func testHeaderErrors() {
        var writer = W()
        writer.appendData(W.plain([("a", W.header())]))
        assertError(errorText { _ = try TensorBundle(index: writer.finish(), prefix: prefix) },
                    "header: malformed: no header entry (the empty key comes first)")
        assertError(indexError([], header: W.header(endianness: .big)), "header: unsupported: big-endian tensor data")
        assertError(indexError([], header: W.header(shards: 0)), "header: malformed: num_shards 0 (a bundle has at least one data file)")
        XCTAssertTrue(indexError([], header: W.header(minConsumer: 2)).contains("needs a reader of version 2"))
        XCTAssertTrue(indexError([], header: [0xFF]).hasPrefix("\(prefix.path).index: header: malformed: not a tensorflow.BundleHeaderProto"))
    }

    func testEntryErrors() throws {
        let four = [UInt8](repeating: 7, count: 4)
        let cases: [(Tensorflow_BundleEntryProto) -> Tensorflow_BundleEntryProto] = [
            { var e = $0; e.slices = [.init()]; return e },
            { var e = $0; e.shape.unknownRank = true; return e },
            { var e = $0; e.shape.dim[0].size = -1; return e },
            { var e = $0; e.shape.dim = [.with { $0.size = 0 }, .with { $0.size = 1 << 40 }, .with { $0.size = 1 << 40 }]; return e },
            { var e = $0; e.size = 8; return e },
            { var e = $0; e.shardID = 3; return e },
            { var e = $0; e.offset = -4; return e },
            { var e = $0; e.offset = 1; return e },
            { var e = $0; e.dtype = .dtComplex64; return e },
            { var e = $0; e.crc32C ^= 1; return e },
        ]
        let expected = [
            "\(prefix.path).index: entry 't': unsupported: a partitioned tensor (1 slices saved as entries of their own)",
            "\(prefix.path).index: entry 't': bad tensor: shape of unknown rank",
            "\(prefix.path).index: entry 't': bad tensor: dimension of size -1",
            "\(prefix.path).index: entry 't': bad tensor: shape [0, 1099511627776, 1099511627776] has too many elements",
            "\(prefix.path).index: entry 't': bad tensor: 8 bytes of data, shape [1] of float32 needs 4",
            "\(prefix.path).index: entry 't': malformed: shard 3, but the bundle has 1 data files",
            "\(prefix.path).index: entry 't': malformed: 4 bytes at offset -4",
            "\(prefix.path).data-00000-of-00001: entry 't': malformed: 4 bytes at offset 1 run past the end of the 4-byte data file",
            "\(prefix.path).index: entry 't': unsupported: tensors of type dtComplex64",
            "\(prefix.path).data-00000-of-00001: entry 't', 4 bytes at offset 0: bad tensor: checksum mismatch",
        ]
        let good = try Tensorflow_BundleEntryProto(serializedBytes: W.entry(.dtFloat, shape: [1], offset: 0, data: four))
        for (edit, want) in zip(cases, expected) {
            let entry = try edit(good).serializedBytes() as [UInt8]
            let bundle = try open([("t", entry)], data: four)
            let text = errorText { _ = try bundle.tensor("t") }
            XCTAssertTrue(text.hasPrefix(want), "\(text)\n  wanted \(want)")
        }
        let garbage = try open([("t", [0x0A, 0xFF])], data: four)
        XCTAssertTrue(errorText { _ = try garbage.tensor("t") }.hasPrefix("\(prefix.path).index: entry 't': malformed: not a tensorflow.BundleEntryProto"))
    }

    func testStringTensorErrors() throws {
        let shape: [Int64] = [2]
        let bad: [[UInt8]] = [
            [0x05, 0x00],  // a length beyond the data
            [0x80, 0x80],  // a truncated varint
            [0x00, 0x00],  // no length checksum
            [0x00, 0x00, 1, 2, 3, 4],  // a wrong length checksum
        ]
        for data in bad {
            let bundle = try open([("s", W.entry(.dtString, shape: shape, offset: 0, data: data))], data: data)
            let text = errorText { _ = try bundle.strings("s") }
            XCTAssertTrue(text.hasPrefix("\(prefix.path).data-00000-of-00001: entry 's', \(data.count) bytes at offset 0: bad tensor: "), text)
        }
        let three = try open([("s", W.entry(.dtString, shape: [3], offset: 0, data: [0, 0]))], data: [0, 0])
        assertError(errorText { _ = try three.strings("s") }, "entry 's': bad tensor: shape [3] needs more lengths than its 2 bytes hold")
    }
}
