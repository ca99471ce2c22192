import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// `ExportPreparation.prepare(…, keepingLoops: true)`: invariant carried
/// values hoisted, outer constants moved into the body and folded there,
/// every body value annotated with its one shape, and the refusals for what a
/// static-shape loop cannot hold.
final class LoopPreparationTests: XCTestCase {
    /// Loop(M = 4, cond, acc0, w) with body (i, c, acc, wc) → (i < 2 · 10, acc + x · wcᵀᵀ, wc):
    /// `wc` is carried unchanged (paddle2onnx's way with weights); `x` is read from the main graph.
    /// `grow`: the body also carries a value that grows by one element per iteration.
    /// `dataStop`: no trip count; the loop stops once Σ acc reaches 100, which zero inputs never do.
    static func loopGraph(grow: Bool = false, scan: Bool = false, dataStop: Bool = false) -> Graph {
        var body = Graph(name: "body")
        body.inputs = [ValueInfo(name: "i", dtype: .int64, shape: []), ValueInfo(name: "c", dtype: .bool, shape: []),
                       ValueInfo(name: "acc", dtype: .float32, shape: nil), ValueInfo(name: "wc", dtype: .float32, shape: nil)]
        body.setConstant(Constant(name: "perm", tensor: Tensor(ints: [1, 0], shape: [2])))
        body.setConstant(Constant(name: "limit", tensor: .scalar(int: 20)))
        body.setConstant(Constant(name: "two", tensor: .scalar(int: 2)))
        body.nodes = [
            Node(name: "t1", opType: "Transpose", inputs: ["wc"], outputs: ["wt"], attributes: ["perm": .ints([1, 0])]),
            Node(name: "t2", opType: "Transpose", inputs: ["wt"], outputs: ["wtt"], attributes: ["perm": .ints([1, 0])]),
            Node(name: "mul", opType: "Mul", inputs: ["x", "wtt"], outputs: ["xw"]),
            Node(name: "add", opType: "Add", inputs: ["acc", "xw"], outputs: ["acc2"]),
            Node(name: "i2", opType: "Mul", inputs: ["i", "two"], outputs: ["twice"]),
            Node(name: "less", opType: "Less", inputs: ["twice", "limit"], outputs: ["c2"]),
        ]
        body.outputs = [ValueInfo(name: "c2", dtype: .bool, shape: nil), ValueInfo(name: "acc2", dtype: .float32, shape: nil),
                        ValueInfo(name: "wc", dtype: .float32, shape: nil)]
        if dataStop {
            body.setConstant(Constant(name: "hundred", tensor: .scalar(100)))
            body.nodes += [Node(name: "sum", opType: "ReduceSum", inputs: ["acc2"], outputs: ["total"], attributes: ["keepdims": .int(0)]),
                           Node(name: "below", opType: "Less", inputs: ["total", "hundred"], outputs: ["c3"])]
            body.outputs[0].name = "c3"
        }
        var loopInputs = [dataStop ? "" : "m", "go", "acc0", "w"]
        var loopOutputs = ["acc_final", "w_final"]
        if grow {
            body.inputs.append(ValueInfo(name: "g", dtype: .float32, shape: nil))
            body.setConstant(Constant(name: "one", tensor: Tensor([1], shape: [1])))
            body.nodes.append(Node(name: "cat", opType: "Concat", inputs: ["g", "one"], outputs: ["g2"], attributes: ["axis": .int(0)]))
            body.outputs.append(ValueInfo(name: "g2", dtype: .float32, shape: nil))
            loopInputs.append("g0")
            loopOutputs.append("g_final")
        }
        if scan {
            body.outputs.append(ValueInfo(name: "acc2", dtype: .float32, shape: nil))
            loopOutputs.append("accs")
        }
        var g = Graph(name: "t")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2), .fixed(3)]), ValueInfo(name: "go", dtype: .bool, shape: [])]
        g.setConstant(Constant(name: "m", tensor: .scalar(int: 4)))
        g.setConstant(Constant(name: "acc0", tensor: Tensor([Float](repeating: 0.5, count: 6), shape: [2, 3])))
        g.setConstant(Constant(name: "w", tensor: Tensor((0..<6).map { Float($0) - 2 }, shape: [2, 3])))
        g.setConstant(Constant(name: "g0", tensor: Tensor([0], shape: [1])))
        g.nodes = [Node(name: "loop", opType: "Loop", inputs: loopInputs, outputs: loopOutputs, attributes: ["body": .graph(body)]),
                   Node(name: "relu", opType: "Relu", inputs: ["acc_final"], outputs: ["y"])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil), ValueInfo(name: "w_final", dtype: .float32, shape: nil)]
        if scan { g.outputs.append(ValueInfo(name: "accs", dtype: .float32, shape: nil)) }
        return g
    }

    func feed() -> [String: Tensor] {
        ["x": Tensor([1, -2, 3, 0.5, 4, -1], shape: [2, 3]), "go": Tensor(bools: [true], shape: [])]
    }

    func testKeptLoopIsInNormalFormAndComputesTheSame() throws {
        let g = Self.loopGraph()
        let p = try ExportPreparation.prepare(g, keepingLoops: true).graph
        guard let loop = p.nodes.first(where: { $0.opType == "Loop" }), case .graph(let body)? = loop.attributes["body"] else {
            return XCTFail("the Loop was not kept: \(p.nodes.map(\.opType))")
        }
        XCTAssertEqual(loop.inputs, ["m", "go", "acc0"], "the invariant weight is no longer carried")
        XCTAssertEqual(loop.outputs, ["acc_final"])
        XCTAssertEqual(body.inputs.map(\.name), ["i", "c", "acc"])
        XCTAssertEqual(body.inputs.map(\.staticShape), [[], [], [2, 3]])
        XCTAssertEqual(body.outputs.map(\.name), ["c2", "acc2"])
        XCTAssertEqual(body.outputs.map(\.staticShape), [[], [2, 3]])
        XCTAssertEqual(body.capturedNames, ["x"], "only the runtime value is read from outside")
        XCTAssertNil(body.nodes.first { $0.opType == "Transpose" }, "Transpose of the hoisted weight folded in the body")
        for n in body.nodes { for o in n.outputs { XCTAssertNotNil(body.valueInfo[o]?.staticShape, "\(o) annotated") } }
        XCTAssertEqual(body.valueInfo["xw"]?.dtype, .float32)
        XCTAssertEqual(body.valueInfo["c2"]?.staticShape, [])
        XCTAssertNil(p.constant(named: "w"), "the weight lives in the body now")
        XCTAssertEqual(p.constant(named: "w_final")?.encoding.decoded(), g.constant(named: "w")?.encoding.decoded(),
                       "the invariant's final value is a graph output: an Identity of the weight, folded")
        let a = try Interpreter(graph: g).run(feed()), b = try Interpreter(graph: p).run(feed())
        XCTAssertEqual(a["y"], b["y"])
        XCTAssertEqual(a["w_final"], b["w_final"])
        // Four iterations (M) of acc + x · w from 0.5: the first element is 0.5 + 4 · (1 · −2).
        XCTAssertEqual(b["y"]?.floats?.first, 0)
        XCTAssertEqual(b["y"]?.floats?[4], 0.5 + 4 * 4 * 2)
    }

    func testLoopsThatZeroInputsNeverEndAreAnnotatedWithinABound() throws {
        let g = Self.loopGraph(dataStop: true)
        let p = try ExportPreparation.prepare(g, keepingLoops: true).graph
        guard let loop = p.nodes.first(where: { $0.opType == "Loop" }) else { return XCTFail("the Loop was not kept") }
        XCTAssertEqual(loop.inputs.first, "", "the bound is for the annotation run only")
        let a = try Interpreter(graph: g).run(feed()), b = try Interpreter(graph: p).run(feed())
        XCTAssertEqual(a["y"], b["y"])
        XCTAssertGreaterThan(b["y"]?.floats?.reduce(0, +) ?? 0, 100)
    }

    func testValuesThatChangeShapeAreRefused() throws {
        XCTAssertThrowsError(try ExportPreparation.prepare(Self.loopGraph(grow: true), format: "TensorFlow Lite", keepingLoops: true)) { e in
            let text = "\(e)"
            XCTAssertTrue(text.contains("Loop 'loop'") && text.contains("'g'") && text.contains("changes from [1]"), text)
        }
    }

    func testScanOutputsAreRefused() throws {
        XCTAssertThrowsError(try ExportPreparation.prepare(Self.loopGraph(scan: true), format: "Core ML", keepingLoops: true)) { e in
            XCTAssertTrue("\(e)".contains("scan output"), "\(e)")
        }
    }

    func testWithoutKeepingLoopsTheyAreRefused() throws {
        XCTAssertThrowsError(try ExportPreparation.prepare(Self.loopGraph(), format: "Core ML")) { e in
            XCTAssertTrue("\(e)".contains("a format without loops"), "\(e)")
        }
    }

    func testNonConstantTripCountIsRefused() throws {
        var g = Self.loopGraph()
        g.inputs.append(ValueInfo(name: "n", dtype: .int64, shape: []))
        g.nodes[0].inputs[0] = "n"
        XCTAssertThrowsError(try ExportPreparation.prepare(g, keepingLoops: true)) { e in
            XCTAssertTrue("\(e)".contains("trip count 'n' is not a constant"), "\(e)")
        }
    }
}
