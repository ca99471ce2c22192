import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

final class StaticFoldingTests: XCTestCase {
    /// x[1,3,4,4] → Relu → r; Shape(r) → Gather 0 → Unsqueeze → Concat [-1] → Reshape(r) → y.
    static func flattenGraph() -> Graph {
        var g = Graph(name: "t")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3), .fixed(4), .fixed(4)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.setConstant(Constant(name: "zero", tensor: .scalar(int: 0)))
        g.setConstant(Constant(name: "axes", tensor: Tensor(ints: [0], shape: [1])))
        g.setConstant(Constant(name: "minus1", tensor: Tensor(ints: [-1], shape: [1])))
        g.setConstant(Constant(name: "unused", tensor: Tensor([1, 2], shape: [2])))
        g.nodes = [
            Node(name: "relu", opType: "Relu", inputs: ["x"], outputs: ["r"]),
            Node(name: "shape", opType: "Shape", inputs: ["r"], outputs: ["s"]),
            Node(name: "gather", opType: "Gather", inputs: ["s", "zero"], outputs: ["g"], attributes: ["axis": .int(0)]),
            Node(name: "unsq", opType: "Unsqueeze", inputs: ["g", "axes"], outputs: ["u"]),
            Node(name: "cat", opType: "Concat", inputs: ["u", "minus1"], outputs: ["c"], attributes: ["axis": .int(0)]),
            Node(name: "reshape", opType: "Reshape", inputs: ["r", "c"], outputs: ["y"]),
        ]
        return g
    }

    func testShapeChainsBecomeConstants() throws {
        let g = Self.flattenGraph()
        let (f, n) = try StaticFolding.fold(g)
        XCTAssertEqual(n, 4)
        XCTAssertEqual(f.nodes.map(\.opType), ["Relu", "Reshape"])
        XCTAssertEqual(f.constant(named: "c")?.encoding.decoded().ints, [1, -1])
        XCTAssertEqual(f.constants.map(\.name), ["c"], "constants only the folded nodes read are dropped")
        let x = Tensor((0..<48).map { Float($0) - 20 }, shape: [1, 3, 4, 4])
        let a = try Interpreter(graph: g).run(["x": x]), b = try Interpreter(graph: f).run(["x": x])
        XCTAssertEqual(a["y"], b["y"])
        XCTAssertEqual(b["y"]?.shape, [1, 48])
    }

    func testDataDependentShapesStayDynamic() throws {
        var g = Graph(name: "t")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(5)])]
        g.outputs = [ValueInfo(name: "n", dtype: .int64, shape: nil)]
        g.nodes = [
            Node(name: "nz", opType: "NonZero", inputs: ["x"], outputs: ["z"]),
            Node(name: "shape", opType: "Shape", inputs: ["z"], outputs: ["n"]),
        ]
        let (f, n) = try StaticFolding.fold(g)
        XCTAssertEqual(n, 0)
        XCTAssertEqual(f.nodes.count, 2)
    }

    func testNeedsFixedInputShapes() {
        var g = Self.flattenGraph()
        g.inputs[0].shape = [.symbolic("N"), .fixed(3), .fixed(4), .fixed(4)]
        XCTAssertThrowsError(try StaticFolding.fold(g)) { XCTAssertTrue("\($0)".contains("not fixed"), "\($0)") }
    }
}
