import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

final class ShapeDerivedValuesTests: XCTestCase {
    /// x [batch, 7] → Shape → Gather(axis index) → s; ReduceSum(x) → total.
    static func graph(output: String, index: Int64 = 1) -> Graph {
        var g = Graph(name: "t")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("batch"), .fixed(7)])]
        g.outputs = [ValueInfo(name: output, dtype: nil, shape: nil)]
        g.setConstant(Constant(name: "i", tensor: .scalar(int: index)))
        g.nodes = [
            Node(name: "shape", opType: "Shape", inputs: ["x"], outputs: ["shape"]),
            Node(name: "s", opType: "Gather", inputs: ["shape", "i"], outputs: ["s"], attributes: ["axis": .int(0)]),
            Node(name: "total", opType: "ReduceSum", inputs: ["x"], outputs: ["total"], attributes: ["keepdims": .int(0)]),
        ]
        return g
    }

    func testAFixedDimensionIsComputed() throws {
        XCTAssertEqual(try ShapeDerivedValues.evaluate(Self.graph(output: "s")), [.scalar(int: 7)])
    }

    func testValuesThatFollowTheBatchOrTheDataAreRefused() {
        for (output, index) in [("s", Int64(0)), ("total", Int64(1))] {
            XCTAssertThrowsError(try ShapeDerivedValues.evaluate(Self.graph(output: output, index: index))) { error in
                XCTAssertEqual("\(error)", "input 'x': '\(output)' changes with the inputs' unfixed dimensions or with the data (run at 1 on zeros, then at 2 on ones); it must be known at import")
            }
        }
    }

    func testAnInputOfUnknownRankIsRefused() {
        var g = Self.graph(output: "s")
        g.inputs[0].shape = nil
        XCTAssertThrowsError(try ShapeDerivedValues.evaluate(g)) { error in
            XCTAssertTrue("\(error)".hasPrefix("input 'x': rank is unknown"), "\(error)")
        }
    }
}
