import ShrinkwrapIR
import XCTest

final class GraphTests: XCTestCase {
    func relu(_ i: String, _ o: String) -> Node { Node(name: "n_\(o)", opType: "Relu", inputs: [i], outputs: [o]) }

    func testSortsOutOfOrderNodesStably() throws {
        let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1)])],
                      outputs: [ValueInfo(name: "c", dtype: .float32, shape: nil)],
                      nodes: [relu("b", "c"), relu("x", "a"), relu("a", "b"), relu("x", "d")])
        let s = try g.validatedAndSorted()
        XCTAssertEqual(s.nodes.map(\.outputs[0]), ["a", "b", "c", "d"])
    }

    func testUndefinedAndDuplicateAndCycle() {
        let x = ValueInfo(name: "x", dtype: .float32, shape: nil)
        XCTAssertThrowsError(try Graph(inputs: [x], nodes: [relu("y", "z")]).validatedAndSorted()) {
            XCTAssertEqual($0 as? GraphError, .undefinedValue(node: "n_z", value: "y"))
        }
        XCTAssertThrowsError(try Graph(inputs: [x], nodes: [relu("x", "z"), relu("x", "z")]).validatedAndSorted()) {
            XCTAssertEqual($0 as? GraphError, .duplicateValue(value: "z", node: "n_z"))
        }
        // A node output named like a constant (found by fuzzing: the Core ML writer took the
        // constant's shape for the output's) or like a graph input.
        var shadowing = Graph(inputs: [x], nodes: [relu("x", "w")])
        shadowing.setConstant(Constant(name: "w", tensor: .scalar(1)))
        XCTAssertThrowsError(try shadowing.validatedAndSorted()) {
            XCTAssertEqual($0 as? GraphError, .duplicateValue(value: "w", node: "n_w"))
        }
        XCTAssertThrowsError(try Graph(inputs: [x], nodes: [relu("x", "x")]).validatedAndSorted()) {
            XCTAssertEqual($0 as? GraphError, .duplicateValue(value: "x", node: "n_x"))
        }
        XCTAssertThrowsError(try Graph(inputs: [x], nodes: [relu("b", "a"), relu("a", "b")]).validatedAndSorted()) {
            guard case .cycle(let nodes)? = $0 as? GraphError else { return XCTFail("\($0)") }
            XCTAssertEqual(Set(nodes), ["n_a", "n_b"])
        }
        XCTAssertThrowsError(try Graph(inputs: [x], outputs: [ValueInfo(name: "q", dtype: nil, shape: nil)]).validatedAndSorted())
    }

    func testConstantsKeepInsertionOrderAndReplaceInPlace() {
        var g = Graph()
        for n in ["w3", "w1", "w2"] { g.setConstant(Constant(name: n, tensor: .scalar(1))) }
        g.setConstant(Constant(name: "w1", tensor: .scalar(5)))
        XCTAssertEqual(g.constants.map(\.name), ["w3", "w1", "w2"])
        XCTAssertEqual(g.constant(named: "w1")?.encoding.decoded().floats, [5])
        g.removeConstant(named: "w3")
        XCTAssertEqual(g.constants.map(\.name), ["w1", "w2"])
        XCTAssertEqual(g.constant(named: "w2")?.name, "w2")
    }

    func testCheckedElementCount() {
        XCTAssertEqual(checkedElementCount([2, 3, 4]), 24)
        XCTAssertEqual(checkedElementCount([]), 1)
        XCTAssertNil(checkedElementCount([1 << 20, 1 << 20]))
        XCTAssertNil(checkedElementCount([-1, 2]))
        XCTAssertNil(checkedElementCount([Int.max, 3]))
        XCTAssertEqual(checkedElementCount([0, Int.max]), 0)
    }
}
