import Foundation
import Shrinkwrap
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// `--input-shape NAME=d0,d1,…`: parsing, pinning, and what it unblocks.
final class InputShapeTests: XCTestCase {
    func testParsing() throws {
        XCTAssertEqual(try InputShapePin(parsing: "x=1,3,48,320"), InputShapePin(name: "x", dims: [1, 3, 48, 320]))
        XCTAssertEqual(try InputShapePin(parsing: "x=1x3x48x320"), InputShapePin(name: "x", dims: [1, 3, 48, 320]))
        XCTAssertEqual(try InputShapePin(parsing: "a=b=2, 5"), InputShapePin(name: "a=b", dims: [2, 5]))
        for (bad, says) in [("x", "give NAME=d0,d1"), ("=1,2", "give NAME=d0,d1"), ("x=", "no dimensions"),
                            ("x=0,3", "'0' is not a positive integer"), ("x=1,-2", "'-2' is not a positive integer"),
                            ("x=1,3,48,32..2048", "ranges (a..b)"), ("x=1,3,48,320|1,3,48,640", "enumerated shapes"),
                            ("x=100000,100000,100000", "more than 2^31 elements")] {
            XCTAssertThrowsError(try InputShapePin(parsing: bad), bad) { XCTAssertTrue("\($0)".contains(says), "\(bad): \($0)") }
        }
    }

    /// x [N, 3, H, W] → GlobalAveragePool → y; w is a constant that is also listed as an input.
    func freeGraph() -> Graph {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("N"), .fixed(3), .symbolic("H"), .unknown]),
                    ValueInfo(name: "w", dtype: .float32, shape: [.fixed(1)])]
        g.setConstant(Constant(name: "w", tensor: Tensor([2], shape: [1])))
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.nodes = [Node(name: "pool", opType: "GlobalAveragePool", inputs: ["x"], outputs: ["p"]),
                   Node(name: "scale", opType: "Mul", inputs: ["p", "w"], outputs: ["y"])]
        return g
    }

    func testPinningSetsTheShapeAndSaysWhatChanged() throws {
        var g = freeGraph()
        let lines = try Models.pin([InputShapePin(name: "x", dims: [1, 3, 8, 6])], in: &g)
        XCTAssertEqual(g.inputs[0].shape, [.fixed(1), .fixed(3), .fixed(8), .fixed(6)])
        XCTAssertEqual(lines, ["input 'x' [N, 3, H, ?] → [1, 3, 8, 6]"])
        // Pinning to what is already fixed changes nothing and says nothing.
        XCTAssertEqual(try Models.pin([InputShapePin(name: "x", dims: [1, 3, 8, 6])], in: &g), [])
    }

    func testEveryProblemIsListedAtOnce() {
        var g = freeGraph()
        let pins = [InputShapePin(name: "x", dims: [1, 4, 8, 8]), InputShapePin(name: "x", dims: [1, 3, 8, 8]),
                    InputShapePin(name: "z", dims: [1]), InputShapePin(name: "w", dims: [1])]
        XCTAssertThrowsError(try Models.pin(pins, in: &g)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("input 'x' [N, 3, H, ?]: axis 1 is 3, not 4"), text)
            XCTAssertTrue(text.contains("'x' is pinned twice"), text)
            XCTAssertTrue(text.contains("the model has no input 'z' (inputs: 'x')"), text)
            XCTAssertTrue(text.contains("the model has no input 'w'"), text)
            XCTAssertFalse(text.contains("\n"), "one line: \(text)")
        }
        XCTAssertEqual(g.inputs[0].shape, freeGraph().inputs[0].shape, "nothing pinned when a pin is wrong")
        XCTAssertThrowsError(try Models.pin([InputShapePin(name: "x", dims: [1, 3, 8])], in: &g)) {
            XCTAssertTrue("\($0)".contains("input 'x' has rank 4 ([N, 3, H, ?]); 3 dims given"), "\($0)")
        }
    }

    /// Free inner dims: TFLite / Core ML refuse before writing and say how to pin; pinned, the file is written and runs.
    func testPinnedModelConvertsToFormatsWithFixedShapes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-pin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var g = freeGraph()
        for ext in ["tflite", "mlmodel"] {
            let path = dir.appendingPathComponent("m.\(ext)").path
            XCTAssertThrowsError(try Models.checkStorable(g, plan: nil, path: path)) {
                XCTAssertTrue("\($0)".contains("input 'x' [N, 3, H, ?]: dimensions 2 (H), 3 (?) are not fixed"), "\($0)")
                XCTAssertTrue("\($0)".contains("(pin with --input-shape 'x=1,3,<d2>,<d3>')"), "\($0)")
            }
        }
        try Models.pin([InputShapePin(name: "x", dims: [1, 3, 4, 2])], in: &g)
        let x = Tensor((0..<24).map(Float.init), shape: [1, 3, 4, 2])
        let want = try Interpreter(graph: g).run(["x": x])["y"]?.floats
        for ext in ["tflite", "mlmodel", "onnx"] {
            let path = dir.appendingPathComponent("m.\(ext)").path
            try Models.checkStorable(g, plan: nil, path: path)
            _ = try Models.save(g, to: path, inputs: [])
            let back = try Models.load(path)
            XCTAssertEqual(back.runtimeInputs.first?.staticShape, [1, 3, 4, 2], ext)
            let got = try Interpreter(graph: back).run(["x": x]).values.first?.floats
            XCTAssertEqual(got?.count, 3, ext)
            for (a, b) in zip(got ?? [], want ?? []) { XCTAssertEqual(a, b, accuracy: 1e-5, ext) }
        }
    }
}
