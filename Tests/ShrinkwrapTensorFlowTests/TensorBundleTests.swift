import Foundation
import ShrinkwrapIR
import ShrinkwrapTestSupport
import TensorFlowSchema
import XCTest
@testable import ShrinkwrapTensorFlow

final class TensorBundleTests: XCTestCase {
    typealias F = TensorFlowFixtures

    func testCRC32CKnownValuesAndMask() {
        let digits = Array("123456789".utf8)
        XCTAssertEqual(CRC32C.checksum(digits[...]), 0xE306_9283)
        XCTAssertEqual(CRC32C.checksum([][...]), 0)
        // Continuing a CRC equals taking it at once, across the 8-byte stride.
        let long = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        XCTAssertEqual(CRC32C.checksum(long[333...], continuing: CRC32C.checksum(long[..<333])), CRC32C.checksum(long[...]))
        for crc: UInt32 in [0, 1, 0xE306_9283, .max] { XCTAssertEqual(CRC32C.unmask(CRC32C.mask(crc)), crc) }
        XCTAssertEqual(CRC32C.mask(0), 0xA282_EAD8)
    }

    func testEveryVariableOfTheSavedModelReadsBackExactly() throws {
        let expected = try F.expected()
        let bundle = try TensorBundle(prefix: F.moduleVariables)
        XCTAssertEqual(bundle.header.numShards, 1)
        XCTAssertEqual(Set(bundle.names), Set(expected.module.keys))
        XCTAssertEqual(try BundleTable(bytes: F.bytes(URL(fileURLWithPath: bundle.indexFile)), file: "").blocks.count - 1,
                       expected.indexBlocks["module"])
        var checked = 0
        for (name, entry) in expected.module where entry.dtype != "string" {
            F.assertEqual(try bundle.tensor(name), entry, name)
            checked += 1
        }
        XCTAssertEqual(checked, 16)
        let dtypes = Set(expected.module.values.map(\.dtype))
        XCTAssertTrue(dtypes.isSuperset(of: ["float16", "int64", "bfloat16", "float64", "uint64", "bool", "int8"]), "\(dtypes)")
    }

    func testAnIndexOfSeveralBlocksReadsBackExactly() throws {
        let expected = try F.expected()
        let bundle = try TensorBundle(prefix: F.manyVariables)
        let table = try BundleTable(bytes: F.bytes(URL(fileURLWithPath: bundle.indexFile)), file: bundle.indexFile)
        XCTAssertEqual(table.blocks.count - 1, expected.indexBlocks["many"])
        XCTAssertGreaterThanOrEqual(table.blocks.count - 1, 3)
        XCTAssertEqual(bundle.names.count, 301)
        XCTAssertEqual(Set(bundle.names), Set(expected.many.keys))
        for (name, entry) in expected.many where entry.dtype != "string" {
            F.assertEqual(try bundle.tensor(name), entry, name)
        }
    }

    func testTheObjectGraphNamesEveryVariable() throws {
        let expected = try F.expected()
        for (prefix, entries) in [(F.moduleVariables, expected.module), (F.manyVariables, expected.many)] {
            let bundle = try TensorBundle(prefix: prefix)
            let graph = try XCTUnwrap(try bundle.objectGraph())
            let keys = Set(graph.nodes.flatMap { $0.attributes.map(\.checkpointKey) })
            XCTAssertEqual(keys, Set(entries.keys).subtracting([TensorBundle.objectGraphKey]))
            XCTAssertEqual(graph.nodes.first?.children.isEmpty, false)
        }
    }

    func testStringAndNumberReadersRefuseEachOthersTensors() throws {
        let bundle = try TensorBundle(prefix: F.moduleVariables)
        let text = errorText { _ = try bundle.tensor(TensorBundle.objectGraphKey) }
        XCTAssertTrue(text.contains("unsupported: a string tensor"), text)
        let kernel = errorText { _ = try bundle.strings("kernel/.ATTRIBUTES/VARIABLE_VALUE") }
        XCTAssertTrue(kernel.contains("not a string tensor"), kernel)
        let missing = errorText { _ = try bundle.tensor("no/such/tensor") }
        XCTAssertEqual(missing, "\(bundle.indexFile): entry 'no/such/tensor': bad tensor: no such tensor in the bundle")
    }

    /// Runs `body` on a copy of the SavedModel's bundle: the bundle, its data file and that file's bytes.
    private func withCopy(_ label: String, _ body: (TensorBundle, URL, [UInt8]) throws -> Void) throws {
        let copy = try F.copyBundle(F.moduleVariables, label: label)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let bundle = try TensorBundle(prefix: copy)
        let dataURL = URL(fileURLWithPath: bundle.dataFile(shard: 0))
        try body(bundle, dataURL, try F.bytes(dataURL))
    }

    func testACorruptDataByteIsACRCMismatchNamingTheDataFile() throws {
        try withCopy("tf-crc") { bundle, dataURL, original in
            var checked = 0
            for name in bundle.names {
                let entry = try bundle.entry(name)
                guard entry.size > 0 else { continue }
                for position in [Int(entry.offset), Int(entry.offset + entry.size) - 1] {
                    var bytes = original
                    bytes[position] ^= 0x10
                    try Data(bytes).write(to: dataURL)
                    let text = errorText {
                        if name == TensorBundle.objectGraphKey { _ = try bundle.strings(name) } else { _ = try bundle.tensor(name) }
                    }
                    XCTAssertTrue(text.hasPrefix(dataURL.path + ": entry '\(name)'"), text)
                    // A string tensor's first bytes are its lengths: a bad one may show before any checksum does.
                    XCTAssertTrue(text.contains("checksum") || (name == TensorBundle.objectGraphKey && position == entry.offset), text)
                    XCTAssertFalse(text.contains("\n"))
                    checked += 1
                }
            }
            XCTAssertEqual(checked, 2 * 16)  // 15 non-empty variables and the object graph
            try Data(original).write(to: dataURL)
            XCTAssertNoThrow(try bundle.tensor("kernel/.ATTRIBUTES/VARIABLE_VALUE"))
        }
    }

    func testAMissingOrShortDataFileIsAnError() throws {
        try withCopy("tf-short") { bundle, dataURL, original in
            try Data(original.prefix(40)).write(to: dataURL)
            let short = errorText { _ = try bundle.tensor("wide/.ATTRIBUTES/VARIABLE_VALUE") }
            XCTAssertTrue(short.hasPrefix(dataURL.path + ": entry 'wide/"), short)
            XCTAssertTrue(short.contains("run past the end of the 40-byte data file"), short)
            try FileManager.default.removeItem(at: dataURL)
            let missing = errorText { _ = try bundle.tensor("wide/.ATTRIBUTES/VARIABLE_VALUE") }
            XCTAssertTrue(missing.hasPrefix(dataURL.path + ": cannot read"), missing)
        }
    }

    func testAMissingIndexIsUnreadable() {
        let prefix = URL(fileURLWithPath: "/nonexistent/shrinkwrap/variables")
        let text = errorText { _ = try TensorBundle(prefix: prefix) }
        XCTAssertTrue(text.hasPrefix("/nonexistent/shrinkwrap/variables.index: cannot read"), text)
    }

    func testDataFileNamesFollowTensorFlow() throws {
        let bundle = try TensorBundle(prefix: F.moduleVariables)
        XCTAssertEqual(bundle.dataFile(shard: 0), F.moduleVariables.path + ".data-00000-of-00001")
    }

    func testDTypeMapping() {
        XCTAssertEqual(DType(tensorFlow: .dtHalf), .float16)
        XCTAssertEqual(DType(tensorFlow: .dtBfloat16), .bfloat16)
        XCTAssertEqual(DType(tensorFlow: .dtUint64), .uint64)
        XCTAssertNil(DType(tensorFlow: .dtString))
        XCTAssertNil(DType(tensorFlow: .dtFloatRef))
        XCTAssertNil(DType(tensorFlow: .dtComplex64))
    }
}
