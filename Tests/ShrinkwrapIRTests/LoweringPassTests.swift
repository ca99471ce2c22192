@testable import ShrinkwrapIR
import XCTest

/// The shared lowering passes on small graphs (the TFLite export tests and
/// cross-check run them on whole models).
final class LoweringPassTests: XCTestCase {
    /// x [1, 2, 3, 3] → Conv-like op → Relu → Add(constant [2, 1, 1]) → y, shapes annotated.
    func imageGraph(op: String = "MaxPool") -> Graph {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [1, 2, 3, 3].map { .fixed($0) })]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: [1, 2, 3, 3].map { .fixed($0) })]
        g.nodes = [
            Node(name: "pool", opType: op, inputs: ["x"], outputs: ["p"], attributes: ["kernel_shape": .ints([1, 1])]),
            Node(name: "relu", opType: "Relu", inputs: ["p"], outputs: ["r"]),
            Node(name: "add", opType: "Add", inputs: ["r", "c"], outputs: ["y"]),
        ]
        g.setConstant(Constant(name: "c", tensor: Tensor([1, 2], shape: [2, 1, 1])))
        for v in ["p", "r"] { g.valueInfo[v] = ValueInfo(name: v, dtype: .float32, shape: [1, 2, 3, 3].map { .fixed($0) }) }
        return g
    }

    func testChannelsLastWrapsThenSinkingLeavesOneTransposeAtEachEnd() throws {
        var g = LoweringGraph(imageGraph())
        try LoweringPipeline([.wrapChannelsLast(ops: ["MaxPool"], prefix: "NHWC."), .sinkTransposes, .removeDeadNodes]).run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["Transpose", "NHWC.MaxPool", "Relu", "Add", "Transpose"])
        // The constant operand was transposed to NHWC to match: [1, 1, 1, 2].
        let add = try XCTUnwrap(g.nodes.first { $0.opType == "Add" })
        let c = try XCTUnwrap(add.inputs.compactMap { g.constants[$0] }.first)
        XCTAssertEqual(c.shape, [1, 1, 1, 2])
        XCTAssertEqual(c.decoded().floats, [1, 2])
        // Every value the passes made has a shape; the graph output keeps its name and NCHW shape.
        for n in g.nodes { for o in n.outputs { XCTAssertNotNil(g.shapes[o], o) } }
        XCTAssertEqual(g.nodes.last?.outputs, ["y"])
        XCTAssertEqual(g.shapes["y"], [1, 2, 3, 3])
    }

    func testTransposePairsCancel() throws {
        var g = LoweringGraph(imageGraph(op: "Identity"))
        g.nodes.insert(contentsOf: [
            Node(name: "t1", opType: "Transpose", inputs: ["x"], outputs: ["t1"], attributes: ["perm": .ints(Permutation.toNHWC)]),
            Node(name: "t2", opType: "Transpose", inputs: ["t1"], outputs: ["t2"], attributes: ["perm": .ints(Permutation.toNCHW)]),
        ], at: 0)
        g.nodes[2].inputs = ["t2"]
        try LoweringPass.sinkTransposes.run(&g)
        XCTAssertFalse(g.nodes.contains { $0.opType == "Transpose" }, "\(g.nodes.map(\.opType))")
        XCTAssertEqual(g.nodes.first?.inputs, ["x"])
    }

    func testBatchNormBecomesMulAdd() throws {
        var src = Graph()
        src.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [1, 2, 1, 1].map { .fixed($0) })]
        src.outputs = [ValueInfo(name: "y", dtype: .float32, shape: [1, 2, 1, 1].map { .fixed($0) })]
        for (name, v) in [("s", [Float(2), 3]), ("b", [1, -1]), ("m", [0.5, 1]), ("v", [3, 8])] {
            src.setConstant(Constant(name: name, tensor: Tensor(v, shape: [2])))
        }
        src.nodes = [Node(name: "bn", opType: "BatchNormalization", inputs: ["x", "s", "b", "m", "v"], outputs: ["y"],
                          attributes: ["epsilon": .float(1)])]
        var g = LoweringGraph(src)
        try LoweringPass.decomposeBatchNorm.run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["Mul", "Add"])
        // scale / sqrt(var + eps) = 2 / 2, 3 / 3; shift = bias − mean · that.
        XCTAssertEqual(g.constants[g.nodes[0].inputs[1]]?.decoded().floats, [1, 1])
        XCTAssertEqual(g.constants[g.nodes[1].inputs[1]]?.decoded().floats, [0.5, -2])
        XCTAssertEqual(g.constants[g.nodes[1].inputs[1]]?.shape, [2, 1, 1])
    }

    func testIdentityIntoOutputIsComputedThere() throws {
        var g = LoweringGraph(imageGraph())
        g.nodes[2].outputs = ["sum"]
        g.nodes.append(Node(name: "id", opType: "Identity", inputs: ["sum"], outputs: ["y"]))
        try LoweringPass.computeIntoOutputs.run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["MaxPool", "Relu", "Add"])
        XCTAssertEqual(g.nodes.last?.outputs, ["y"])
    }

    func testNameAllocatorStyles() {
        var s = NameAllocator(taken: ["a", "a_1"])
        XCTAssertEqual([s.fresh("a"), s.fresh("a"), s.fresh("b"), s.fresh("b")], ["a_2", "a_3", "b", "b_1"])
        var n = NameAllocator(.numbered(separator: "__"), taken: ["w__2"])
        XCTAssertEqual([n.fresh("x"), n.fresh("w"), n.fresh("x")], ["x__1", "w__3", "x__4"])
        XCTAssertTrue(n.isTaken("x__4"))
    }

    /// Every op a layout rule names is an IR op.
    func testLayoutRulesNameIROps() {
        let named = OpTable.layoutRules.elementwise.union(OpTable.layoutRules.broadcasting)
        XCTAssertEqual(named.filter { OpTable[$0] == nil }.sorted(), [])
        XCTAssertEqual(OpTable["Relu"]?.layout, .elementwise)
        XCTAssertEqual(OpTable["Add"]?.layout, .broadcasting)
        XCTAssertEqual(OpTable["Concat"]?.layout, .concatenating)
        XCTAssertEqual(OpTable["Conv"]?.layout, .fixed)
    }

    func testHardSigmoidBecomesMulAddClip() throws {
        var src = Graph()
        src.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(4)])]
        src.outputs = [ValueInfo(name: "y", dtype: .float32, shape: [.fixed(1), .fixed(4)])]
        src.nodes = [Node(name: "hs", opType: "HardSigmoid", inputs: ["x"], outputs: ["y"], attributes: ["alpha": .float(0.25)])]
        var g = LoweringGraph(src)
        try LoweringPass.decomposeHardSigmoid.run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["Mul", "Add", "Clip"])
        let c = { (k: Int, i: Int) in g.constants[g.nodes[k].inputs[i]]?.decoded().floats }
        XCTAssertEqual([c(0, 1), c(1, 1), c(2, 1), c(2, 2)], [[0.25], [0.5], [0], [1]])  // beta defaults to 0.5
        XCTAssertEqual(g.nodes.last?.outputs, ["y"])
        XCTAssertEqual(Set(g.nodes.map(\.name)).count, 3, "node names stay unique")
        XCTAssertEqual(LoweringPass.decomposeHardSigmoid.lowers, ["HardSigmoid"])
        // float16 keeps the op (the constants would be float32).
        var half = src
        half.inputs[0].dtype = .float16
        var h = LoweringGraph(half)
        try LoweringPass.decomposeHardSigmoid.run(&h)
        XCTAssertEqual(h.nodes.map(\.opType), ["HardSigmoid"])
    }

    /// A pipeline applied to a Graph: the rewritten nodes, the new values
    /// annotated; a graph the passes leave alone comes back as it was.
    func testPipelineAppliedToAGraph() throws {
        var src = Graph()
        src.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(4)])]
        src.outputs = [ValueInfo(name: "y", dtype: .float32, shape: [.fixed(1), .fixed(4)])]
        src.nodes = [Node(name: "hs", opType: "HardSwish", inputs: ["x"], outputs: ["y"])]
        let out = try LoweringPipeline([.decomposeHardSwish]).applied(to: src)
        XCTAssertEqual(out.nodes.map(\.opType), ["HardSigmoid", "Mul"])
        let gate = out.nodes[0].outputs[0]
        XCTAssertEqual(out.valueInfo[gate]?.staticShape, [1, 4])
        XCTAssertEqual(out.nodes[1].inputs, ["x", gate])
        XCTAssertEqual(out.nodes[0].float("alpha", 0), 1.0 / 6)
        var plain = src
        plain.nodes[0].opType = "Relu"
        XCTAssertEqual(try LoweringPipeline([.decomposeHardSwish]).applied(to: plain), plain)
    }
}
