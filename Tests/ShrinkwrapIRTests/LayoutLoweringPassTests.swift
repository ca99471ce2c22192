@testable import ShrinkwrapIR
import XCTest

/// The passes that reshape ops into the forms a format's layers take:
/// global pools as reductions, PRelu slopes on the channel axis, pads on the
/// trailing axes, run-time Clip bounds as Max / Min (numeric checks against
/// the interpreter are in ShrinkwrapCoreMLTests.CoreMLLoweringExportTests).
final class LayoutLoweringPassTests: XCTestCase {
    func graph(_ input: [Int], output: [Int], _ nodes: [Node], values: [String: [Int]] = [:], constants: [Constant] = []) -> LoweringGraph {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: input.map { .fixed($0) })]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: output.map { .fixed($0) })]
        g.nodes = nodes
        for (v, s) in values { g.valueInfo[v] = ValueInfo(name: v, dtype: .float32, shape: s.map { .fixed($0) }) }
        for c in constants { g.setConstant(c) }
        return LoweringGraph(g)
    }

    func testGlobalPoolOfOtherRanksBecomesAReduction() throws {
        var g = graph([1, 4, 6], output: [1, 4, 1], [
            Node(name: "gm", opType: "GlobalMaxPool", inputs: ["x"], outputs: ["m"]),
            Node(name: "ga", opType: "GlobalAveragePool", inputs: ["m4"], outputs: ["a"]),
            Node(name: "r", opType: "Reshape", inputs: ["m", "s"], outputs: ["m4"]),
            Node(name: "r2", opType: "Reshape", inputs: ["a", "s2"], outputs: ["y"]),
        ], values: ["m": [1, 4, 1], "m4": [1, 4, 1, 1], "a": [1, 4, 1, 1]])
        try LoweringPass.globalPoolAsReduction(keepingRanks: [4]).run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["ReduceMax", "GlobalAveragePool", "Reshape", "Reshape"])
        XCTAssertEqual(g.nodes[0].attributes["axes"], .ints([2]))
        XCTAssertEqual(g.nodes[0].attributes["keepdims"], .int(1))
        XCTAssertEqual(g.nodes[0].outputs, ["m"])
        try LoweringPass.globalPoolAsReduction().run(&g)
        XCTAssertEqual(g.nodes[1].opType, "ReduceMean")
        XCTAssertEqual(g.nodes[1].attributes["axes"], .ints([2, 3]))
    }

    /// Conv output (NCHW) → Transpose to NHWC → PRelu [1, 1, C] → Transpose to NCHW, as TFLite models import.
    func testPReluBetweenLayoutTransposesLosesThem() throws {
        var g = graph([1, 3, 2, 2], output: [1, 3, 2, 2], [
            Node(name: "t1", opType: "Transpose", inputs: ["x"], outputs: ["h"], attributes: ["perm": .ints(Permutation.toNHWC)]),
            Node(name: "pr", opType: "PRelu", inputs: ["h", "s"], outputs: ["p"]),
            Node(name: "t2", opType: "Transpose", inputs: ["p"], outputs: ["y"], attributes: ["perm": .ints(Permutation.toNCHW)]),
        ], values: ["h": [1, 2, 2, 3], "p": [1, 2, 2, 3]], constants: [Constant(name: "s", tensor: Tensor([0.1, 0.2, 0.3], shape: [1, 1, 3]))])
        try LoweringPass.preluSlopeOnChannelAxis.run(&g)
        // The graph output is written by an Identity of the moved result.
        XCTAssertEqual(g.nodes.map(\.opType), ["PRelu", "Identity"])
        XCTAssertEqual(g.nodes[0].inputs.first, "x")
        let slope = try XCTUnwrap(g.constants[g.nodes[0].inputs[1]])
        XCTAssertEqual(slope.shape, [3, 1, 1])
        XCTAssertEqual(slope.decoded().floats, [0.1, 0.2, 0.3])
        XCTAssertEqual(g.shapes[g.nodes[0].outputs[0]], [1, 3, 2, 2])
        XCTAssertEqual(g.nodes[1].outputs, ["y"])
    }

    func testPReluOnAnNHWCValueIsWrappedAndOtherSlopesAreLeftAlone() throws {
        let nodes = [
            Node(name: "add", opType: "Add", inputs: ["x", "x"], outputs: ["h"]),
            Node(name: "pr", opType: "PRelu", inputs: ["h", "s"], outputs: ["y"]),
        ]
        var g = graph([1, 2, 2, 3], output: [1, 2, 2, 3], nodes, values: ["h": [1, 2, 2, 3]],
                      constants: [Constant(name: "s", tensor: Tensor([0.1, 0.2, 0.3], shape: [3]))])
        try LoweringPass.preluSlopeOnChannelAxis.run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["Add", "Transpose", "PRelu", "Transpose"])
        XCTAssertEqual(g.nodes[1].attributes["perm"], .ints([0, 3, 1, 2]))
        XCTAssertEqual(g.nodes[3].attributes["perm"], .ints([0, 2, 3, 1]))
        XCTAssertEqual(g.nodes[3].outputs, ["y"])
        for n in g.nodes { for o in n.outputs { XCTAssertNotNil(g.shapes[o], o) } }
        // Per-channel ([C, 1, 1]) and scalar slopes, and slopes along two axes, stay as they are.
        for slope in [Tensor([1, 2], shape: [2, 1, 1]), Tensor([0.5], shape: [1]), Tensor([1, 2, 3, 4], shape: [2, 1, 2])] {
            var h = graph([1, 2, 2, 2], output: [1, 2, 2, 2], [nodes[1]], values: ["h": [1, 2, 2, 2]],
                          constants: [Constant(name: "s", tensor: slope)])
            let before = h.nodes
            try LoweringPass.preluSlopeOnChannelAxis.run(&h)
            XCTAssertEqual(h.nodes, before, "\(slope.shape)")
        }
    }

    func testReflectPadOfALeadingAxisMovesItToTheEnd() throws {
        var g = graph([5, 2, 3], output: [9, 2, 3], [
            Node(name: "pad", opType: "Pad", inputs: ["x", "p"], outputs: ["y"], attributes: ["mode": .string("reflect")]),
        ], constants: [Constant(name: "p", tensor: Tensor(ints: [1, 0, 0, 3, 0, 0], shape: [6]))])
        try LoweringPass.padOnTrailingAxes(2, modes: ["reflect", "edge"]).run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["Transpose", "Pad", "Transpose"])
        guard g.nodes.count == 3 else { return }
        XCTAssertEqual(g.nodes[0].attributes["perm"], .ints([1, 2, 0]))
        XCTAssertEqual(g.nodes[2].attributes["perm"], .ints([2, 0, 1]))
        XCTAssertEqual(g.constants[g.nodes[1].inputs[1]]?.decoded().doubles, [0, 0, 1, 0, 0, 3])
        XCTAssertEqual(g.shapes[g.nodes[1].outputs[0]], [2, 3, 9])
        XCTAssertEqual(g.nodes[1].attributes["mode"], .string("reflect"))
        // Constant pads, pads already on the last two axes, and pads of three axes are left alone.
        for (mode, pads) in [("constant", [0, 1, 0, 0, 3, 0]), ("reflect", [0, 1, 1, 0, 1, 1]), ("edge", [1, 1, 1, 1, 1, 1])] {
            var h = graph([2, 5, 3], output: [4, 7, 5], [
                Node(name: "pad", opType: "Pad", inputs: ["x", "p"], outputs: ["y"], attributes: ["mode": .string(mode)]),
            ], constants: [Constant(name: "p", tensor: Tensor(ints: pads.map { Int64($0) }, shape: [6]))])
            try LoweringPass.padOnTrailingAxes(2, modes: ["reflect", "edge"]).run(&h)
            XCTAssertEqual(h.nodes.map(\.opType), ["Pad"], "\(mode) \(pads)")
        }
    }

    func testClipWithARuntimeBoundBecomesMaxMin() throws {
        let inf = Constant(name: "inf", tensor: Tensor([Float.infinity], shape: []))
        let lo = Constant(name: "lo", tensor: Tensor([-1], shape: []))
        var g = graph([4], output: [4], [
            Node(name: "m", opType: "ReduceMax", inputs: ["x"], outputs: ["b"], attributes: ["keepdims": .int(0)]),
            Node(name: "c", opType: "Clip", inputs: ["x", "b", "inf"], outputs: ["y"]),
        ], values: ["b": []], constants: [inf, lo])
        try LoweringPass.clipRuntimeBoundsAsMinMax.run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["ReduceMax", "Max"])
        XCTAssertEqual(g.nodes[1].inputs, ["x", "b"])
        XCTAssertEqual(g.nodes[1].outputs, ["y"])
        var h = graph([4], output: [4], [
            Node(name: "m", opType: "ReduceMax", inputs: ["x"], outputs: ["b"], attributes: ["keepdims": .int(0)]),
            Node(name: "c", opType: "Clip", inputs: ["x", "lo", "b"], outputs: ["y"]),
            Node(name: "k", opType: "Clip", inputs: ["y", "lo", ""], outputs: ["z"]),
        ], values: ["b": []], constants: [inf, lo])
        try LoweringPass.clipRuntimeBoundsAsMinMax.run(&h)
        XCTAssertEqual(h.nodes.map(\.opType), ["ReduceMax", "Max", "Min", "Clip"])
        XCTAssertEqual(h.nodes[1].inputs, ["x", "lo"])
        XCTAssertEqual(h.nodes[2].inputs, [h.nodes[1].outputs[0], "b"])
        XCTAssertNotNil(h.shapes[h.nodes[1].outputs[0]])
    }
}
