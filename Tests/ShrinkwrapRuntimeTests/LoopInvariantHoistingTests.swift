import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// hoist-loop-invariant-nodes and the interpreter's use of it: body nodes that
/// read only captures and constants run once in front of their Loop, the
/// results keep their bits, and what must stay in the body stays.
final class LoopInvariantHoistingTests: XCTestCase {
    func feed() -> [String: Tensor] {
        ["x": Tensor([1, -2, 3, 0.5, 4, -1], shape: [2, 3]), "go": Tensor(bools: [true], shape: [])]
    }

    func run(_ g: Graph, optimize: Bool, threads: Int = 1) throws -> [String: Tensor] {
        try Interpreter(graph: g, options: .init(threads: threads, optimize: optimize)).run(feed())
    }

    func testInvariantNodesLeaveTheBody() throws {
        let g = LoopPreparationTests.loopGraph()
        let (h, moved) = g.hoistingLoopInvariants().graph.hoistingLoopInvariantNodes()
        // t1, t2 (from the weight, now a capture) and mul (x · the weight) move; the rest reads the loop's state.
        XCTAssertEqual(moved, 3)
        XCTAssertEqual(h.nodes.map(\.name), ["t1", "t2", "mul", "loop", "w_final_invariant", "relu"])
        guard case .graph(let body)? = h.nodes.first(where: { $0.opType == "Loop" })?.attributes["body"] else {
            return XCTFail("no Loop left")
        }
        XCTAssertEqual(body.nodes.map(\.name), ["add", "i2", "less"])
        let product = try XCTUnwrap(h.nodes.first { $0.name == "mul" }?.outputs.first)
        XCTAssertTrue(body.capturedNames.contains(product), "the body reads the hoisted product: \(body.capturedNames)")
        XCTAssertNoThrow(try h.validatedAndSorted())
    }

    func testSameBitsAsTheUnoptimizedGraph() throws {
        for variant in [LoopPreparationTests.loopGraph(), LoopPreparationTests.loopGraph(grow: true, scan: true),
                        LoopPreparationTests.loopGraph(dataStop: true)] {
            let plain = try run(variant, optimize: false)
            let fast = try run(variant, optimize: true)
            XCTAssertEqual(Set(plain.keys), Set(fast.keys))
            for (k, t) in plain { XCTAssertEqual(fast[k], t, "output \(k)") }
        }
    }

    /// A node whose result the body hands back stays; so does one whose body output
    /// reads only captures; a nested Loop's invariant node moves all the way out.
    func testBodyOutputsStayAndNestedLoopsHoistTwice() throws {
        // inner body (j, c, acc): acc + x·x, where x is the main graph's input.
        var inner = Graph(name: "inner")
        inner.inputs = [ValueInfo(name: "j", dtype: .int64, shape: []), ValueInfo(name: "ci", dtype: .bool, shape: []),
                        ValueInfo(name: "a", dtype: .float32, shape: nil)]
        inner.nodes = [Node(name: "sq", opType: "Mul", inputs: ["x", "x"], outputs: ["xx"]),
                       Node(name: "acc", opType: "Add", inputs: ["a", "xx"], outputs: ["a2"]),
                       Node(name: "keep", opType: "Identity", inputs: ["ci"], outputs: ["ci2"])]
        inner.outputs = [ValueInfo(name: "ci2", dtype: .bool, shape: nil), ValueInfo(name: "a2", dtype: .float32, shape: nil)]
        // outer body (i, c, acc): runs the inner loop twice, and hands back neg(x) as a second value.
        var outer = Graph(name: "outer")
        outer.inputs = [ValueInfo(name: "i", dtype: .int64, shape: []), ValueInfo(name: "co", dtype: .bool, shape: []),
                        ValueInfo(name: "b", dtype: .float32, shape: nil), ValueInfo(name: "n", dtype: .float32, shape: nil)]
        outer.setConstant(Constant(name: "two", tensor: .scalar(int: 2)))
        outer.nodes = [Node(name: "innerLoop", opType: "Loop", inputs: ["two", "", "b"], outputs: ["b2"], attributes: ["body": .graph(inner)]),
                       Node(name: "neg", opType: "Neg", inputs: ["x"], outputs: ["nx"]),
                       Node(name: "pass", opType: "Identity", inputs: ["co"], outputs: ["co2"])]
        outer.outputs = [ValueInfo(name: "co2", dtype: .bool, shape: nil), ValueInfo(name: "b2", dtype: .float32, shape: nil),
                         ValueInfo(name: "nx", dtype: .float32, shape: nil)]
        var g = Graph(name: "nested")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2), .fixed(3)]), ValueInfo(name: "go", dtype: .bool, shape: [])]
        g.setConstant(Constant(name: "three", tensor: .scalar(int: 3)))
        g.setConstant(Constant(name: "zero", tensor: Tensor([Float](repeating: 0, count: 6), shape: [2, 3])))
        g.nodes = [Node(name: "outerLoop", opType: "Loop", inputs: ["three", "go", "zero", "zero"], outputs: ["sum", "negx"],
                        attributes: ["body": .graph(outer)])]
        g.outputs = [ValueInfo(name: "sum", dtype: .float32, shape: nil), ValueInfo(name: "negx", dtype: .float32, shape: nil)]

        let (h, moved) = g.hoistingLoopInvariantNodes()
        XCTAssertEqual(moved, 2, "sq moves into the outer body, then out of it")
        XCTAssertEqual(h.nodes.map(\.name), ["sq", "outerLoop"])
        guard case .graph(let ob)? = h.nodes.last?.attributes["body"] else { return XCTFail("no outer body") }
        XCTAssertEqual(ob.nodes.map(\.name), ["innerLoop", "neg", "pass"], "neg makes a body output: it stays")
        XCTAssertNoThrow(try h.validatedAndSorted())

        let plain = try run(g, optimize: false), fast = try run(g, optimize: true, threads: 2)
        XCTAssertEqual(plain["sum"], fast["sum"])
        XCTAssertEqual(plain["negx"], fast["negx"])
        // 3 outer × 2 inner iterations of x·x.
        XCTAssertEqual(plain["sum"]?.floats, [1, -2, 3, 0.5, 4, -1].map { 6 * $0 * $0 })
    }

    /// A branch computing from the enclosing graph's constants folds it once, at load.
    func testBranchesFoldWhatTheyComputeFromOuterConstants() throws {
        func branch(_ name: String, _ op: String) -> Graph {
            var b = Graph(name: name)
            b.nodes = [Node(name: name + "_cat", opType: "Concat", inputs: ["w1", "w2"], outputs: [name + "_w"], attributes: ["axis": .int(0)]),
                       Node(name: name + "_use", opType: op, inputs: ["x", name + "_w"], outputs: [name + "_y"])]
            b.outputs = [ValueInfo(name: name + "_y", dtype: .float32, shape: nil)]
            return b
        }
        var g = Graph(name: "if")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(4)]), ValueInfo(name: "go", dtype: .bool, shape: [])]
        g.setConstant(Constant(name: "w1", tensor: Tensor([1, 2], shape: [2])))
        g.setConstant(Constant(name: "w2", tensor: Tensor([3, 4], shape: [2])))
        g.nodes = [Node(name: "if", opType: "If", inputs: ["go"], outputs: ["y"],
                        attributes: ["then_branch": .graph(branch("then", "Add")), "else_branch": .graph(branch("else", "Mul"))])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        let interpreter = try Interpreter(graph: g, options: .init(threads: 1))
        for (go, want) in [(true, [Float](arrayLiteral: 2, 4, 6, 8)), (false, [1, 4, 9, 16])] {
            var ran: [String] = []
            let y = try interpreter.run(["x": Tensor([1, 2, 3, 4], shape: [4]), "go": Tensor(bools: [go], shape: [])],
                                       observe: { node, _ in ran.append(node.name) }, intoSubgraphs: true)
            XCTAssertEqual(y["y"]?.floats, want)
            XCTAssertEqual(ran, [go ? "then_use" : "else_use", "if"], "the Concat of constants ran at load")
        }
    }
}
