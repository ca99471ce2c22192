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

    /// paddle2onnx copies each carried value with Unsqueeze → Add 0 → Squeeze. The interpreter reads
    /// the chain as the value itself, so the copied weight counts as unchanged and what the body
    /// computes from it runs once; a chain adding anything but 0, or copying a value that changes,
    /// stays in the body. Results equal the unoptimized graph's.
    func testPaddleCopiesOfCarriedValuesAreUnchangedValues() throws {
        func copy(_ v: String, _ zero: String, _ tag: String) -> [Node] {
            [Node(name: tag + "_u", opType: "Unsqueeze", inputs: [v, "axis0"], outputs: [tag + "_1"]),
             Node(name: tag + "_a", opType: "Add", inputs: [tag + "_1", zero], outputs: [tag + "_2"]),
             Node(name: tag + "_s", opType: "Squeeze", inputs: [tag + "_2", "axis0"], outputs: [tag + "_out"])]
        }
        var body = Graph(name: "body")
        body.inputs = [ValueInfo(name: "i", dtype: .int64, shape: []), ValueInfo(name: "c", dtype: .bool, shape: []),
                       ValueInfo(name: "acc", dtype: .float32, shape: nil), ValueInfo(name: "w", dtype: .float32, shape: nil),
                       ValueInfo(name: "k", dtype: .int64, shape: nil), ValueInfo(name: "v", dtype: .float32, shape: nil)]
        body.setConstant(Constant(name: "axis0", tensor: Tensor(ints: [0], shape: [1])))
        body.setConstant(Constant(name: "fzero", tensor: Tensor([0], shape: [1])))
        body.setConstant(Constant(name: "izero", tensor: Tensor(ints: [0], shape: [1])))
        body.setConstant(Constant(name: "half", tensor: Tensor([0.5], shape: [1])))
        body.nodes = [Node(name: "mul", opType: "Mul", inputs: ["x", "w"], outputs: ["xw"]),
                      Node(name: "add", opType: "Add", inputs: ["acc", "xw"], outputs: ["acc2"]),
                      Node(name: "kx", opType: "Cast", inputs: ["k"], outputs: ["kf"], attributes: ["to": .int(1)]),
                      Node(name: "vk", opType: "Mul", inputs: ["v", "kf"], outputs: ["vv"]),
                      Node(name: "keep", opType: "Identity", inputs: ["c"], outputs: ["c2"])]
            + copy("w", "fzero", "wcopy") + copy("k", "izero", "kcopy") + copy("vv", "fzero", "vcopy")
            + copy("acc2", "half", "acopy")
        body.outputs = [ValueInfo(name: "c2", dtype: .bool, shape: nil), ValueInfo(name: "acopy_out", dtype: .float32, shape: nil),
                        ValueInfo(name: "wcopy_out", dtype: .float32, shape: nil), ValueInfo(name: "kcopy_out", dtype: .int64, shape: nil),
                        ValueInfo(name: "vcopy_out", dtype: .float32, shape: nil)]
        var g = Graph(name: "paddle")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2), .fixed(3)]), ValueInfo(name: "go", dtype: .bool, shape: [])]
        g.setConstant(Constant(name: "m", tensor: .scalar(int: 4)))
        g.setConstant(Constant(name: "acc0", tensor: Tensor([Float](repeating: 0.25, count: 6), shape: [2, 3])))
        g.setConstant(Constant(name: "w0", tensor: Tensor([1, 2, 3, -4, 5, -6], shape: [2, 3])))
        g.setConstant(Constant(name: "k0", tensor: Tensor(ints: [3, -2], shape: [2])))
        g.setConstant(Constant(name: "v0", tensor: Tensor([1, 1], shape: [2])))
        g.nodes = [Node(name: "loop", opType: "Loop", inputs: ["m", "go", "acc0", "w0", "k0", "v0"],
                        outputs: ["acc_final", "w_final", "k_final", "v_final"], attributes: ["body": .graph(body)]),
                   Node(name: "neg", opType: "Neg", inputs: ["w_final"], outputs: ["nw"])]
        g.outputs = ["acc_final", "nw", "k_final", "v_final"].map { ValueInfo(name: $0, dtype: nil, shape: nil) }

        for threads in [1, 2] {
            let plain = try run(g, optimize: false, threads: threads)
            var ran: [String: Int] = [:]
            let fast = try Interpreter(graph: g, options: .init(threads: threads, optimize: true))
                .run(feed(), observe: { node, _ in ran[node.name, default: 0] += 1 }, intoSubgraphs: true)
            XCTAssertEqual(Set(plain.keys), Set(fast.keys))
            for (k, t) in plain { XCTAssertEqual(fast[k], t, "output \(k), \(threads) threads") }
            // 4 iterations of acc + x·w, then + 0.5 (a copy that adds 0.5 is no copy).
            let x: [Float] = [1, -2, 3, 0.5, 4, -1], w: [Float] = [1, 2, 3, -4, 5, -6]
            XCTAssertEqual(fast["acc_final"]?.floats, zip(x, w).map { xi, wi in
                var a: Float = 0.25
                for _ in 0..<4 { a = (a + xi * wi) + 0.5 }
                return a
            })
            XCTAssertEqual(fast["k_final"]?.ints, [3, -2])
            XCTAssertEqual(fast["v_final"]?.floats, [81, 16])  // v · k per iteration: 3⁴, (−2)⁴
            XCTAssertEqual(ran["mul"], 1, "x · w runs once, in front of the loop: \(ran)")
            XCTAssertNil(ran["kx"], "the integer copy is the value itself too: Cast(k0) of a constant folds at load")
            XCTAssertEqual(ran["vk"], 4, "v changes: its product stays in the body")
            XCTAssertEqual(ran["acopy_a"], 4, "adding 0.5 is no copy")
            XCTAssertEqual(ran["vcopy_a"], nil, "the copy of a changing value is one Identity")
            XCTAssertEqual(ran["vcopy_s"], 4)
        }
    }
}
