import Foundation
import ONNXSchema
import Shrinkwrap
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapONNX
import ShrinkwrapRuntime
import XCTest

/// Hostile and broken files: each must give one clear error naming the file
/// and the place, never a crash.
final class ImporterBadInputTests: XCTestCase {
    typealias M = ONNXTestModels

    /// Imports and returns the error's one-line description.
    func importError(_ url: URL, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try Models.load(url.path)
            XCTFail("import of \(url.lastPathComponent) should have failed", file: file, line: line)
            return ""
        } catch {
            let s = String(describing: error)
            XCTAssertFalse(s.contains("\n"), "error must be one line: \(s)", file: file, line: line)
            XCTAssertTrue(s.contains(url.path), "error must name the file: \(s)", file: file, line: line)
            return s
        }
    }

    func tempFile(_ data: Data, name: String = "model.onnx") throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    func testValidTinyModelRuns() throws {
        let url = try M.write(M.tinyMLP())
        let g = try Models.load(url.path)
        let out = try Interpreter(graph: g).run(["x": Tensor([1, 2], shape: [1, 2])])
        // x·W = [1·1 + 2·0.5, 1·(−1) + 2·1, 1·2 + 2·(−2)] = [2, 1, −2]; + b = [2, 1.5, −1]; Relu → [2, 1.5, 0].
        XCTAssertEqual(out["y"]?.floats, [2, 1.5, 0])
    }

    func testZeroLengthFile() throws {
        let s = importError(try tempFile(Data()))
        XCTAssertTrue(s.contains("empty"), s)
    }

    func testTruncatedFile() throws {
        let full = try M.tinyMLP().serializedData()
        for cut in [1, 7, full.count / 2, full.count - 3] {
            let s = importError(try tempFile(full.prefix(cut)))
            XCTAssertTrue(s.contains("malformed"), s)
        }
    }

    func testGarbageFile() throws {
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: ($0 &* 2654435761) >> 13) })
        let s = importError(try tempFile(garbage))
        XCTAssertTrue(s.contains("malformed") || s.contains("graph"), s)
    }

    func testRawDataLengthDisagreesWithShape() throws {
        var m = M.tinyMLP()
        m.graph.initializer[0] = M.rawTensor("W", dims: [2, 3], raw: Data(count: 20))
        let s = importError(try M.write(m))
        XCTAssertTrue(s.contains("'W'") && s.contains("20 bytes") && s.contains("24"), s)
    }

    func testTypedFieldCountDisagreesWithShape() throws {
        var m = M.tinyMLP()
        m.graph.initializer[0] = M.tensor("W", dims: [2, 3], floats: [1, 2, 3])
        let s = importError(try M.write(m))
        XCTAssertTrue(s.contains("'W'") && s.contains("float_data has 3 values"), s)
    }

    func testHugeDeclaredTensorIsRefusedBeforeAllocation() throws {
        var m = M.tinyMLP()
        m.graph.initializer[0] = M.rawTensor("W", dims: [1 << 20, 1 << 20], raw: Data(count: 8))  // 2^40 elements
        let s = importError(try M.write(m))
        XCTAssertTrue(s.contains("'W'") && s.contains("elements"), s)
        m.graph.initializer[0] = M.rawTensor("W", dims: [-4, 3], raw: Data(count: 8))
        XCTAssertTrue(importError(try M.write(m)).contains("out of range"))
    }

    func testUndefinedValue() throws {
        var m = M.tinyMLP()
        m.graph.node[1].input[0] = "nowhere"
        let s = importError(try M.write(m))
        XCTAssertTrue(s.contains("nowhere") && s.contains("Add_z"), s)
    }

    func testCycle() throws {
        var m = M.tinyMLP()
        // MatMul reads y, which Relu produces from MatMul's own result.
        m.graph.node[0].input[0] = "y"
        m.graph.input = []
        let s = importError(try M.write(m))
        XCTAssertTrue(s.contains("cycle"), s)
    }

    func testExternalDataEscapingFolderIsRefused() throws {
        for location in ["../secret.bin", "/etc/passwd", "sub/../../x.bin"] {
            var m = M.tinyMLP()
            var t = Onnx_TensorProto()
            t.name = "W"; t.dims = [2, 3]; t.dataType = 1; t.dataLocation = .external
            var e = Onnx_StringStringEntryProto(); e.key = "location"; e.value = location
            t.externalData = [e]
            m.graph.initializer[0] = t
            let s = importError(try M.write(m))
            XCTAssertTrue(s.contains("escapes the model's folder"), s)
        }
    }

    func testExternalDataIsReadAndBoundsChecked() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var payload = Data(count: 8)  // an offset of 8 bytes
        for v: Float in [1, -1, 2, 0.5, 1, -2] { withUnsafeBytes(of: v.bitPattern.littleEndian) { payload.append(contentsOf: $0) } }
        try payload.write(to: dir.appendingPathComponent("weights.bin"))
        func external(offset: Int) -> Onnx_ModelProto {
            var m = M.tinyMLP()
            var t = Onnx_TensorProto()
            t.name = "W"; t.dims = [2, 3]; t.dataType = 1; t.dataLocation = .external
            t.externalData = [("location", "weights.bin"), ("offset", String(offset))].map {
                var e = Onnx_StringStringEntryProto(); e.key = $0.0; e.value = $0.1; return e
            }
            m.graph.initializer[0] = t
            return m
        }
        let good = try M.write(external(offset: 8), in: dir)
        let g = try Models.load(good.path)
        XCTAssertEqual(g.constant(named: "W")?.encoding.decoded().floats, [1, -1, 2, 0.5, 1, -2])
        let bad = try M.write(external(offset: 12), name: "bad.onnx", in: dir)
        XCTAssertTrue(importError(bad).contains("runs past its end"))
    }

    func testAllUnsupportedOpsListedAtOnce() throws {
        var m = M.tinyMLP()
        m.graph.node.append(M.node("FancyOpA", ["y"], ["a"]))
        m.graph.node.append(M.node("FancyOpB", ["a"], ["b"]))
        m.graph.node.append(M.node("FancyOpA", ["b"], ["c"]))
        let s = importError(try M.write(m))
        XCTAssertTrue(s.contains("FancyOpA") && s.contains("FancyOpB") && s.contains("(2)"), s)
    }

    func testSubgraphsRefused() throws {
        var m = M.tinyMLP()
        var a = Onnx_AttributeProto(); a.name = "then_branch"; a.type = .graph; a.g = Onnx_GraphProto()
        m.graph.node.append(M.node("If", ["y"], ["z2"], attributes: [a]))
        XCTAssertTrue(importError(try M.write(m)).contains("If"))
    }

    func testNpyWithWrongDtypeOrShapeForInput() throws {
        let url = try M.write(M.tinyMLP())
        let g = try Models.load(url.path)
        let dir = url.deletingLastPathComponent()
        let wrongShape = dir.appendingPathComponent("x.npy")
        try NPY.encode(Tensor([1, 2, 3], shape: [1, 3])).write(to: wrongShape)
        XCTAssertThrowsError(try ModelRunner.loadInputs([wrongShape.path], graph: g)) { e in
            let s = String(describing: e)
            XCTAssertTrue(s.contains("x.npy") && s.contains("shape"), s)
        }
        let wrongType = dir.appendingPathComponent("xi.npy")
        try NPY.encode(Tensor(ints: [1, 2], shape: [1, 2], dtype: .int32)).write(to: wrongType)
        XCTAssertThrowsError(try ModelRunner.loadInputs(["x=\(wrongType.path)"], graph: g)) { e in
            let s = String(describing: e)
            XCTAssertTrue(s.contains("xi.npy") && s.contains("dtype"), s)
        }
    }

    func testUnsupportedOpset() throws {
        let m = M.model(nodes: [M.node("Relu", ["x"], ["y"])], inputs: [M.valueInfo("x", dims: [1])],
                        outputs: [M.valueInfo("y", dims: [1])], opset: 99)
        XCTAssertTrue(importError(try M.write(m)).contains("opset 99"))
    }
}
