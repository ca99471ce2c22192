@testable import ShrinkwrapIR
import XCTest

/// Which GRU / RNN nodes `unrollGRUAndRNN` takes and what it makes of them
/// (the interpreter's check of the numbers is in ShrinkwrapRuntimeTests'
/// UnrollGRUAndRNNTests); and the index arithmetic of the two small Core ML
/// passes that came with it.
final class UnrollGRUAndRNNStructureTests: XCTestCase {
    /// A GRU (or RNN) over x [steps, 2, 3] with hidden size 2; `xShape` nil leaves x's shape unknown.
    func graph(_ op: String = "GRU", steps: Int = 4, direction: String = "forward", attributes: [String: Attribute] = [:],
               extraInputs: [String] = [], xShape: [Dim]? = nil, dtype: DType = .float32, reads: [String] = ["Y", "Y_h"]) -> Graph {
        let (batch, input, hidden, gates) = (2, 3, 2, op == "GRU" ? 3 : 1)
        let dirs = direction == "bidirectional" ? 2 : 1
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: dtype, shape: xShape ?? [steps, batch, input].map { .fixed($0) })]
        g.outputs = reads.map { ValueInfo(name: $0, dtype: dtype, shape: nil) }
        var a = attributes
        a["direction"] = .string(direction)
        a["hidden_size"] = .int(hidden)
        g.nodes = [Node(name: "rec", opType: op, inputs: ["x", "W", "R", "B"] + extraInputs, outputs: ["Y", "Y_h"], attributes: a)]
        for (name, shape) in [("W", [dirs, gates * hidden, input]), ("R", [dirs, gates * hidden, hidden]), ("B", [dirs, 2 * gates * hidden])] {
            g.setConstant(Constant(name: name, tensor: Tensor((0..<shape.reduce(1, *)).map { Float($0 % 7) / 7 }, shape: shape)))
        }
        return g
    }

    func unrolled(_ g: Graph, _ pass: LoweringPass = .unrollGRUAndRNN()) throws -> [String] {
        var lg = LoweringGraph(g)
        try pass.run(&lg)
        return lg.nodes.map(\.opType)
    }

    func testFormsOutsideThePassAreLeftToTheWriter() throws {
        var lens = graph(extraInputs: ["lens"])
        lens.setConstant(Constant(name: "lens", tensor: Tensor(ints: [4, 4], shape: [2])))
        var hiddenSize = graph()
        hiddenSize.nodes[0].attributes["hidden_size"] = .int(3)
        let cases: [(String, Graph)] = [
            ("sequence_lens", lens),
            ("clip", graph(attributes: ["clip": .float(2)])),
            ("layout 1", graph(attributes: ["layout": .int(1)])),
            ("1025 steps", graph(steps: 1025)),
            ("unknown steps", graph(xShape: [.symbolic("T"), .fixed(2), .fixed(3)])),
            ("unknown activation", graph(attributes: ["activations": .strings(["Sigmoid", "Gelu"])])),
            ("three activations for a GRU", graph(attributes: ["activations": .strings(["Sigmoid", "Tanh", "Tanh"])])),
            ("float16", graph(dtype: .float16)),
            ("hidden_size differs from W", hiddenSize),
        ]
        for (what, g) in cases { XCTAssertEqual(try unrolled(g), ["GRU"], what) }
        XCTAssertEqual(try unrolled(graph(), .unrollGRUAndRNN { _, _ in false }), ["GRU"])
        XCTAssertEqual(try unrolled(graph("LSTM")), ["LSTM"])
    }

    func testLongestSequenceUnrollsWithOneInputProjection() throws {
        let ops = try unrolled(graph("RNN", steps: 1024))
        XCTAssertFalse(ops.contains("RNN"))
        XCTAssertEqual(ops.filter { $0 == "Gemm" }.count, 1 + 1024)
        XCTAssertEqual(ops.filter { $0 == "Tanh" }.count, 1024)
    }

    func testOnlyReadOutputsAreWritten() throws {
        // Y_h only: no per-step Reshape to [1, 1, batch, H] and no Concat of the sequence.
        let last = try unrolled(graph(direction: "bidirectional", reads: ["Y_h"]))
        XCTAssertEqual(last.filter { $0 == "Concat" }.count, 1)
        let both = try unrolled(graph(direction: "bidirectional"))
        // Per direction the steps' Concat, then the directions' for Y, and one for Y_h.
        XCTAssertEqual(both.filter { $0 == "Concat" }.count, 4)
        XCTAssertEqual(both.filter { $0 == "Sub" }.count, 2 * 4)
    }

    func testPassesOfTheCoreMLPipelineLower() {
        XCTAssertEqual(LoweringPass.unrollGRUAndRNN().lowers, ["GRU", "RNN"])
        XCTAssertEqual(LoweringPass.unrollGRUAndRNN().name, "unroll-gru-rnn")
    }

    func testNegativeStepSliceIndicesFollowONNX() {
        // x[::-1], x[-2::-2], x[5:1:-1] (start clamped to size − 1), x[1:-100:-1], and a forward step for comparison.
        XCTAssertEqual(NegativeStepSlice.indices(start: -1, end: Int(Int64.min), step: -1, size: 5), [4, 3, 2, 1, 0])
        XCTAssertEqual(NegativeStepSlice.indices(start: -2, end: Int(Int64.min), step: -2, size: 5), [3, 1])
        XCTAssertEqual(NegativeStepSlice.indices(start: 9, end: 1, step: -1, size: 5), [4, 3, 2])
        XCTAssertEqual(NegativeStepSlice.indices(start: 1, end: -100, step: -1, size: 5), [1, 0])
        XCTAssertEqual(NegativeStepSlice.indices(start: 1, end: Int(Int64.max), step: 2, size: 5), [1, 3])
        XCTAssertEqual(NegativeStepSlice.indices(start: 0, end: 3, step: -1, size: 5), [])
    }

    func testSliceWithPositiveStepsIsLeftAlone() throws {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [2, 5].map { .fixed($0) })]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.nodes = [Node(name: "s", opType: "Slice", inputs: ["x", "st", "en", "ax", "sp"], outputs: ["y"])]
        for (name, v) in [("st", [1]), ("en", [4]), ("ax", [1]), ("sp", [1])] {
            g.setConstant(Constant(name: name, tensor: Tensor(ints: v.map(Int64.init), shape: [1])))
        }
        XCTAssertEqual(try unrolled(g, .sliceNegativeStepsAsGather), ["Slice"])
        g.setConstant(Constant(name: "sp", tensor: Tensor(ints: [-1], shape: [1])))
        g.setConstant(Constant(name: "st", tensor: Tensor(ints: [-1], shape: [1])))
        g.setConstant(Constant(name: "en", tensor: Tensor(ints: [Int64.min], shape: [1])))
        XCTAssertEqual(try unrolled(g, .sliceNegativeStepsAsGather), ["Gather"])
    }
}
