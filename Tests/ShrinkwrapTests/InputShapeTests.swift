import Foundation
import Shrinkwrap
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// `--input-shape NAME=d0,d1,…`: parsing, pinning, and what it unblocks.
final class InputShapeTests: XCTestCase {
    func testParsing() throws {
        XCTAssertEqual(try InputShapePin(parsing: "x=1,3,48,320"), InputShapePin(name: "x", dims: [1, 3, 48, 320]))
        XCTAssertEqual(try InputShapePin(parsing: "x=1x3x48x320"), InputShapePin(name: "x", dims: [1, 3, 48, 320]))
        XCTAssertEqual(try InputShapePin(parsing: "a=b=2, 5"), InputShapePin(name: "a=b", dims: [2, 5]))
        for (bad, says) in [("x", "give NAME=d0,d1"), ("=1,2", "give NAME=d0,d1"), ("x=", "no dimensions"),
                            ("x=0,3", "'0' is not a positive integer"), ("x=1,-2", "'-2' is not a positive integer"),
                            ("x=1,3,48,64..32", "range 64..32 is empty"), ("x=1,3,48,32..64|1,3,48,320", "not both"),
                            ("x=1,3|1,3,4", "different ranks"), ("x=1,3,1..0", "'0' is not a positive integer"),
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

    func testFlexibleShapesParse() throws {
        let range = try InputShapePin(parsing: "x=1,3,48,32..2048")
        XCTAssertEqual(range.dims, [1, 3, 48, 32])
        XCTAssertEqual(range.sizes, .ranges([.init(lower: 1, upper: 1), .init(lower: 3, upper: 3), .init(lower: 48, upper: 48),
                                             .init(lower: 32, upper: 2048)]))
        let open = try InputShapePin(parsing: "x=1,3,16..,16..")
        XCTAssertEqual(open.dims, [1, 3, 16, 16])
        XCTAssertEqual(open.sizes, .ranges([.init(lower: 1, upper: 1), .init(lower: 3, upper: 3), .init(lower: 16, upper: nil),
                                            .init(lower: 16, upper: nil)]))
        let listed = try InputShapePin(parsing: "x=1,3,48,320|1,3,48,640|1,3,48,320")
        XCTAssertEqual(listed.dims, [1, 3, 48, 320])
        XCTAssertEqual(listed.sizes, .enumerated([[1, 3, 48, 320], [1, 3, 48, 640]]), "repeats dropped, first is the default")
        XCTAssertNil(try InputShapePin(parsing: "x=1,2|1,2").sizes, "one distinct shape is a fixed shape")
        XCTAssertNil(try InputShapePin(parsing: "x=1,2..2").sizes, "a one-value range is a fixed dim")
    }

    func testFlexibleProbesStayInsideTheSet() {
        let f = FlexibleShape(input: "x", sizes: .ranges([.init(lower: 1, upper: 1), .init(lower: 32, upper: 2048)]))
        XCTAssertEqual(f.defaultShape, [1, 32])
        XCTAssertEqual(f.varyingAxes, [1])
        XCTAssertEqual(f.probeShapes, [[1, 2048], [1, 1024]], "the upper bound, then the middle in steps of 32")
        let open = FlexibleShape(input: "x", sizes: .ranges([.init(lower: 3, upper: nil)]))
        XCTAssertEqual(open.probeShapes, [[9], [4]], "unbounded: 3× the lower bound, then the middle of 3..6")
        let listed = FlexibleShape(input: "x", sizes: .enumerated([[1, 5], [1, 7], [2, 5]]))
        XCTAssertEqual(listed.varyingAxes, [0, 1])
        XCTAssertEqual(listed.probeShapes, [[1, 7], [2, 5]])
        XCTAssertEqual(listed.description, "[1, 5] | [1, 7] | [2, 5]")
    }

    /// Ranges on a free dim are pinned at the lower bound and recorded; on a fixed dim refused.
    func testFlexiblePinsAreRecorded() throws {
        var g = freeGraph()
        let lines = try Models.pin([try InputShapePin(parsing: "x=1,3,8..64,6")], in: &g)
        XCTAssertEqual(g.inputs[0].shape, [.fixed(1), .fixed(3), .fixed(8), .fixed(6)])
        XCTAssertEqual(lines, ["input 'x' [N, 3, H, ?] → [1, 3, 8, 6], and may take [1, 3, 8..64, 6]"])
        XCTAssertEqual(g.metadata.flexibleShape(of: "x")?.original, freeGraph().inputs[0].shape)
        // Pinned again to one shape: no longer flexible.
        try Models.pin([InputShapePin(name: "x", dims: [1, 3, 8, 6])], in: &g)
        XCTAssertTrue(g.metadata.flexibleShapes.isEmpty)
        var h = freeGraph()
        XCTAssertThrowsError(try Models.pin([try InputShapePin(parsing: "x=1,3..4,8,6")], in: &h)) {
            XCTAssertTrue("\($0)".contains("axis 1 is fixed and cannot take a range"), "\($0)")
        }
        XCTAssertThrowsError(try Models.pin([try InputShapePin(parsing: "x=1,3,8,6|1,4,8,6")], in: &h)) {
            XCTAssertTrue("\($0)".contains("[1, 4, 8, 6] changes a fixed dimension"), "\($0)")
        }
    }

    /// x [N, L, 2] → Softmax over the last axis → y: shape-independent layers (exact mapping).
    func sequenceGraph() -> Graph {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("N"), .symbolic("L"), .fixed(2)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.nodes = [Node(name: "soft", opType: "Softmax", inputs: ["x"], outputs: ["y"], attributes: ["axis": .int(-1)])]
        return g
    }

    /// The flexible sizes reach the files that keep them: Core ML declares the range / shapes (and
    /// reads them back as free dims), ONNX writes the varying dims free again, TFLite refuses.
    func testFlexibleShapesInEachFormat() throws {
        let dir = try makeTempDir("flex")
        defer { try? FileManager.default.removeItem(at: dir) }
        let x = Tensor((0..<16).map { Float($0) / 4 }, shape: [1, 8, 2])
        let want = try Interpreter(graph: sequenceGraph()).run(["x": x])["y"]
        for (spec, declared) in [("x=1,4..16,2", "range"), ("x=1,4,2|1,8,2", "enumerated")] {
            var g = sequenceGraph()
            try Models.pin([try InputShapePin(parsing: spec)], in: &g)
            let tflite = dir.appendingPathComponent("m.tflite").path
            XCTAssertThrowsError(try Models.checkStorable(g, plan: nil, path: tflite)) {
                XCTAssertTrue("\($0)".contains("TensorFlow Lite keeps one shape per input"), "\($0)")
            }
            let mlmodel = dir.appendingPathComponent("m-\(declared).mlmodel").path
            try Models.checkStorable(g, plan: nil, path: mlmodel)
            _ = try Models.save(g, to: mlmodel, inputs: [])
            let back = try Models.load(mlmodel)
            XCTAssertNil(back.runtimeInputs.first?.shape?[1].value, "\(declared): axis 1 read back as free")
            XCTAssertEqual(back.runtimeInputs.first?.shape?[2].value, 2, declared)
            XCTAssertEqual(try Interpreter(graph: back).run(["x": x]).values.first, want, declared)
            let onnx = dir.appendingPathComponent("m-\(declared).onnx").path
            _ = try Models.save(g, to: onnx, inputs: [])
            XCTAssertEqual(try Models.load(onnx).runtimeInputs.first?.shape?[1], .symbolic("L"), "\(declared): the source's name comes back")
        }
    }

    /// A model whose layers bake in the varying size makes the range a lie: refused, naming the layer or the failure.
    func testFlexibleShapeRefusedWhenALayerDependsOnTheSize() throws {
        let dir = try makeTempDir("flex-refused")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Reshape to [L/2, 2, 1]: the target shape is written into the layer.
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .symbolic("L"), .fixed(2)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.setConstant(Constant(name: "target", tensor: Tensor(ints: [-1, 2, 1], shape: [3])))
        g.nodes = [Node(name: "fold", opType: "Reshape", inputs: ["x", "target"], outputs: ["r"]),
                   Node(name: "act", opType: "Softmax", inputs: ["r"], outputs: ["y"], attributes: ["axis": .int(1)])]
        try Models.pin([try InputShapePin(parsing: "x=1,4..8,2")], in: &g)
        let path = dir.appendingPathComponent("m.mlmodel").path
        XCTAssertThrowsError(try Models.save(g, to: path, inputs: [])) {
            XCTAssertTrue("\($0)".contains("input 'x' may take [1, 4..8, 2], but layer '"), "\($0)")
            XCTAssertTrue("\($0)".contains("is written differently at [1, 8, 2] than at the default shape"), "\($0)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }
}
