import Foundation
import ONNXSchema
import Shrinkwrap
import ShrinkwrapIR
@testable import ShrinkwrapONNX
import SwiftProtobuf
import XCTest

/// The large-model reading path: initializers' raw_data lifted out of the
/// protobuf and decoded in place (`ONNXRawDataScan`), the file mapped
/// (`MappedFile`). It must give exactly the graph SwiftProtobuf's path gives,
/// and broken sizes must still give one-line errors.
final class RawDataLiftTests: XCTestCase {
    typealias M = ONNXTestModels

    /// Imports `data` without lifting and with every raw_data lifted (threshold 1 byte).
    func bothPaths(_ data: Data, file: String = "model.onnx") -> (plain: Result<Graph, Error>, lifted: Result<Graph, Error>) {
        data.withUnsafeBytes { bytes in
            (Result { try ONNXImporter.importModel(bytes: bytes, file: file, directory: nil, liftingFrom: nil) },
             Result { try ONNXImporter.importModel(bytes: bytes, file: file, directory: nil, liftingFrom: 1) })
        }
    }

    func assertSame(_ data: Data, _ name: String, file: StaticString = #filePath, line: UInt = #line) {
        let (plain, lifted) = bothPaths(data, file: name)
        switch (plain, lifted) {
        case (.success(let a), .success(let b)):
            XCTAssertEqual(a, b, "\(name): lifted import differs", file: file, line: line)
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual(String(describing: a), String(describing: b), name, file: file, line: line)
        default:
            XCTFail("\(name): one path failed: plain \(plain), lifted \(lifted)", file: file, line: line)
        }
    }

    /// Initializers of every raw element type the decoder reads, large and small, among other fields.
    func mixedModel() -> Onnx_ModelProto {
        func raw<T>(_ values: [T]) -> Data { values.withUnsafeBytes { Data($0) } }
        let w = (0..<20000).map { Float($0 % 97) * 0.25 - 3 }
        var inits = [
            M.rawTensor("W", dims: [2, 10000], raw: raw(w)),  // 80 000 bytes: lifted from files too
            M.rawTensor("h", dims: [3], raw: raw([UInt16(0x3C00), 0xC000, 0x3800]), type: 10),
            M.rawTensor("d", dims: [2], raw: raw([1.5, -2.25] as [Double]), type: 11),
            M.rawTensor("i", dims: [4], raw: raw([Int64(-1), 0, 7, Int64.max]), type: 7),
            M.rawTensor("b", dims: [3], raw: Data([1, 0, 1]), type: 9),
            M.rawTensor("u8", dims: [2], raw: Data([0, 255]), type: 2),
            M.tensor("f", dims: [2], floats: [0.5, -0.5]),
        ]
        inits[0].docString = "a weight"
        let nodes = [M.node("MatMul", ["x", "W"], ["y"], name: "mm")]
        return M.model(nodes: nodes, inputs: [M.valueInfo("x", dims: [1, 2])], outputs: [M.valueInfo("y", dims: [1, 10000])],
                       initializers: inits)
    }

    func testLiftedImportEqualsSwiftProtobufOnFixtures() throws {
        let mixed = try mixedModel().serializedData()
        XCTAssertEqual(mixed.withUnsafeBytes { ONNXRawDataScan.lift($0, minimumBytes: 1)?.payloads.count }, 6)
        assertSame(mixed, "mixed.onnx")
        assertSame(try M.tinyMLP().serializedData(), "tiny.onnx")
        for sample in ["digits/digits.onnx", "sentiment/sentiment.onnx", "linear/linear.onnx"] {
            let url = ONNXSuiteRunner.packageRoot.appendingPathComponent("Samples").appendingPathComponent(sample)
            assertSame(try Data(contentsOf: url), sample)
        }
        let root = ONNXSuiteRunner.testdata.appendingPathComponent("onnx-models")
        guard let walker = FileManager.default.enumerator(atPath: root.path) else {
            return XCTFail("NOT RUN on the model suites: \(root.path) is missing — run `make testdata`")
        }
        var count = 0
        for case let rel as String in walker where rel.hasSuffix(".onnx") {
            assertSame(try Data(contentsOf: root.appendingPathComponent(rel)), rel)
            count += 1
        }
        XCTAssertGreaterThan(count, 10)
    }

    /// A file imported through the mapped path (large raw_data lifted) equals its bytes imported from memory.
    func testMappedFileImportEqualsInMemory() throws {
        let url = try M.write(mixedModel())
        let viaFile = try Models.load(url.path)
        let data = try Data(contentsOf: url)
        let viaData = try data.withUnsafeBytes { try ONNXImporter.importModel(bytes: $0, file: url.path, directory: nil, liftingFrom: nil) }
        XCTAssertEqual(viaFile, viaData)
        XCTAssertEqual(viaFile.constant(named: "W").map { Array(($0.encoding.decoded().floats ?? []).prefix(3)) }, [-3, -2.75, -2.5])
    }

    /// A raw_data field longer than the rest of the file: nothing is lifted, one-line error.
    func testRawDataLengthBeyondTheFile() throws {
        let data = try mixedModel().serializedData()
        for cut in [data.count - 10, data.count / 2] {
            let truncated = data.prefix(cut)
            XCTAssertNil(truncated.withUnsafeBytes { ONNXRawDataScan.lift($0, minimumBytes: 1) })
            let url = try M.write(M.tinyMLP())
            try truncated.write(to: url)
            let s = try importError(url)
            XCTAssertTrue(s.contains("malformed") || s.contains("not an ONNX protobuf"), s)
        }
    }

    /// raw_data that disagrees with the shape, in the lifted path: the decoder's error, naming the initializer.
    func testLiftedRawDataOfTheWrongSize() throws {
        var m = mixedModel()
        m.graph.initializer[0].dims = [2, 9999]
        let url = try M.write(m)
        let data = try Data(contentsOf: url)
        XCTAssertNotNil(data.withUnsafeBytes { ONNXRawDataScan.lift($0, minimumBytes: 1) })
        let s = try importError(url)
        XCTAssertTrue(s.contains("initializer[0] 'W'") && s.contains("raw data has 80000 bytes"), s)
        assertSame(data, url.path)
    }

    /// A length that lies: raw_data's length runs past its TensorProto (but not the file).
    func testRawDataLengthBeyondItsTensor() throws {
        let t = M.rawTensor("W", dims: [4], raw: Data(repeating: 1, count: 16))
        var bytes = [UInt8](try t.serializedData())
        // raw_data: tag 0x4A, length 16 → 40 (the tensor is shorter; the enclosing graph is not).
        guard let at = bytes.firstIndex(of: 0x4A), bytes[at + 1] == 16 else { return XCTFail("no raw_data tag") }
        bytes[at + 1] = 40
        var graph = Data([0x2A]); graph.append(UInt8(bytes.count)); graph.append(contentsOf: bytes)
        graph.append(Data(repeating: 0, count: 40))  // filler the lying length reaches into
        var model = Data([0x08, 0x08, 0x3A]); model.append(UInt8(graph.count)); model.append(graph)
        XCTAssertNil(model.withUnsafeBytes { ONNXRawDataScan.lift($0, minimumBytes: 1) })
        let url = try M.write(M.tinyMLP())
        try model.write(to: url)
        _ = try importError(url)
        assertSame(model, "lying.onnx")
    }

    func testWireReaderRefusesBrokenFields() {
        func fields(_ bytes: [UInt8]) -> [WireReader.Field?] {
            bytes.withUnsafeBytes { raw in
                var r = WireReader(raw, 0..<raw.count)
                var out: [WireReader.Field?] = []
                while !r.atEnd {
                    let f = r.next()
                    out.append(f)
                    if f == nil { break }
                }
                return out
            }
        }
        XCTAssertEqual(fields([0x08, 0x96, 0x01]).first??.varint, 150)
        XCTAssertNil(fields([0x08, 0x96]).last ?? nil)  // varint cut short
        XCTAssertNil(fields([0x08] + [UInt8](repeating: 0xFF, count: 11)).last ?? nil)  // varint of 11 bytes
        XCTAssertNil(fields([0x0A, 0x05, 0x01]).last ?? nil)  // length past the end
        XCTAssertNil(fields([0x0B]).last ?? nil)  // group start
        XCTAssertNil(fields([0x00, 0x00]).last ?? nil)  // field number 0
        XCTAssertNil(fields([0x09, 1, 2, 3]).last ?? nil)  // fixed64 cut short
        XCTAssertEqual(fields([0x0D, 1, 2, 3, 4]).first??.whole, 0..<5)
    }

    func importError(_ url: URL) throws -> String {
        do {
            _ = try Models.load(url.path)
        } catch {
            let s = String(describing: error)
            XCTAssertFalse(s.contains("\n"), "error must be one line: \(s)")
            XCTAssertTrue(s.contains(url.path), "error must name the file: \(s)")
            return s
        }
        XCTFail("import of \(url.path) should have failed")
        return ""
    }
}
