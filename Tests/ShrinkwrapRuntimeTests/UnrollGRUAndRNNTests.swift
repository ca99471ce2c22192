import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// `unrollGRUAndRNN` (and `unrollStatefulLSTM`, which shares its helpers) on
/// random seeded graphs: the interpreter gives the unrolled graph the outputs
/// of the recurrent node, within 1e-5 relative, for every direction,
/// linear_before_reset, initial state, bias and set of outputs read.
final class UnrollGRUAndRNNTests: XCTestCase {
    struct Case: CustomStringConvertible {
        var op = "GRU"
        var direction = "forward"
        var linearBeforeReset = 0
        var initialState = true
        var bias = true
        var reads = ["Y", "Y_h"]
        var steps = 3, batch = 2, input = 5, hidden = 4
        var attributes: [String: Attribute] = [:]
        var dirs: Int { direction == "bidirectional" ? 2 : 1 }
        var gates: Int { op == "GRU" ? 3 : op == "LSTM" ? 4 : 1 }
        var description: String {
            "\(op) \(direction) lbr \(linearBeforeReset) h0 \(initialState) B \(bias) reads \(reads) \(attributes.keys.sorted())"
        }
    }

    func random(_ shape: [Int], _ rng: inout SplitMix, scale: Float = 0.5) -> Tensor {
        Tensor((0..<shape.reduce(1, *)).map { _ in Float(rng.normal()) * scale }, shape: shape)
    }

    /// One recurrent node over x [steps, batch, input] (and h0 / c0 as graph inputs); its inputs.
    func graph(_ c: Case, seed: UInt64) -> (Graph, [String: Tensor]) {
        var rng = SplitMix(seed: seed)
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [c.steps, c.batch, c.input].map { .fixed($0) })]
        var feeds = ["x": random([c.steps, c.batch, c.input], &rng, scale: 1)]
        var inputs = ["x", "W", "R", c.bias ? "B" : "", ""]
        if c.initialState {
            let states = c.op == "LSTM" ? ["h0", "c0"] : ["h0"]
            for s in states {
                g.inputs.append(ValueInfo(name: s, dtype: .float32, shape: [c.dirs, c.batch, c.hidden].map { .fixed($0) }))
                feeds[s] = random([c.dirs, c.batch, c.hidden], &rng, scale: 1)
                inputs.append(s)
            }
        }
        var shapes = [("W", [c.dirs, c.gates * c.hidden, c.input]), ("R", [c.dirs, c.gates * c.hidden, c.hidden])]
        if c.bias { shapes.append(("B", [c.dirs, 2 * c.gates * c.hidden])) }
        for (name, shape) in shapes { g.setConstant(Constant(name: name, tensor: random(shape, &rng))) }
        var attributes = c.attributes
        attributes["hidden_size"] = .int(c.hidden)
        attributes["direction"] = .string(c.direction)
        if c.op == "GRU" { attributes["linear_before_reset"] = .int(c.linearBeforeReset) }
        let outputs = c.op == "LSTM" ? ["Y", "Y_h", "Y_c"] : ["Y", "Y_h"]
        g.nodes = [Node(name: "rec", opType: c.op, inputs: inputs, outputs: outputs.map { c.reads.contains($0) ? $0 : "" }, attributes: attributes)]
        g.outputs = outputs.filter(c.reads.contains).map { ValueInfo(name: $0, dtype: .float32, shape: nil) }
        return (g, feeds)
    }

    /// Runs the graph before and after `pass`; every output agrees within 1e-5 of its largest magnitude (at least 1).
    @discardableResult
    func assertSameOutputs(_ c: Case, _ pass: LoweringPass = .unrollGRUAndRNN(), seed: UInt64 = 1,
                           file: StaticString = #filePath, line: UInt = #line) throws -> Graph {
        let (g, feeds) = graph(c, seed: seed)
        let prepared = try ExportPreparation.prepare(g).graph
        let lowered = try LoweringPipeline([pass]).applied(to: prepared)
        XCTAssertFalse(lowered.nodes.contains { $0.opType == c.op }, "\(c): not unrolled", file: file, line: line)
        let before = try Interpreter(graph: prepared).run(feeds), after = try Interpreter(graph: lowered).run(feeds)
        for o in g.outputs {
            let a = try XCTUnwrap(before[o.name], file: file, line: line), b = try XCTUnwrap(after[o.name], "\(c): \(o.name)", file: file, line: line)
            XCTAssertEqual(a.shape, b.shape, "\(c): \(o.name)", file: file, line: line)
            let want = a.floats ?? [], got = b.floats ?? []
            let scale = max(1, want.map(abs).max() ?? 0)
            let worst = zip(want, got).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThanOrEqual(worst / scale, 1e-5, "\(c): \(o.name) max |diff| \(worst)", file: file, line: line)
        }
        return lowered
    }

    func testEveryDirectionResetStateBiasAndOutputSet() throws {
        var seed: UInt64 = 100
        var count = 0
        for (op, lbr) in [("GRU", 0), ("GRU", 1), ("RNN", 0)] {
            for direction in ["forward", "reverse", "bidirectional"] {
                for initialState in [true, false] {
                    for bias in [true, false] {
                        for reads in [["Y"], ["Y_h"], ["Y", "Y_h"]] {
                            let c = Case(op: op, direction: direction, linearBeforeReset: lbr, initialState: initialState, bias: bias, reads: reads)
                            let lowered = try assertSameOutputs(c, seed: seed)
                            seed += 1
                            count += 1
                            // One Gemm projects the whole sequence; each step and direction adds h·Rᵀ ((r ⊙ h)·R_hᵀ too with lbr 0).
                            let perStep = op == "GRU" && lbr == 0 ? 2 : 1
                            XCTAssertEqual(lowered.nodes.filter { $0.opType == "Gemm" }.count, 1 + perStep * c.steps * c.dirs, "\(c)")
                            let projections = lowered.nodes.filter { $0.opType == "Gemm" && lowered.valueInfo[$0.inputs[0]]?.staticShape == [c.steps * c.batch, c.input] }
                            XCTAssertEqual(projections.count, 1, "\(c)")
                        }
                    }
                }
            }
        }
        XCTAssertEqual(count, 108)
    }

    func testActivationsWithAlphaAndBeta() throws {
        let cases: [Case] = [
            Case(direction: "bidirectional", linearBeforeReset: 1,
                 attributes: ["activations": .strings(["HardSigmoid", "Affine", "Sigmoid", "ScaledTanh"]),
                              "activation_alpha": .floats([0.3, 0.7, 1.5]), "activation_beta": .floats([0.4, 0.1, 0.8])]),
            Case(direction: "reverse", attributes: ["activations": .strings(["Sigmoid", "Relu"])]),
            Case(op: "RNN", direction: "bidirectional", attributes: ["activations": .strings(["Relu", "Softsign"])]),
            Case(op: "RNN", attributes: ["activations": .strings(["LeakyRelu"]), "activation_alpha": .floats([0.2])]),
            Case(op: "RNN", attributes: ["activations": .strings(["Elu"])]),
            Case(op: "RNN", attributes: ["activations": .strings(["Softplus"])]),
            Case(op: "RNN", attributes: ["activations": .strings(["ThresholdedRelu"]), "activation_alpha": .floats([0.1])]),
            // One set of names for both directions.
            Case(op: "RNN", direction: "bidirectional", attributes: ["activations": .strings(["Tanh"])]),
        ]
        for (k, c) in cases.enumerated() { try assertSameOutputs(c, seed: 300 + UInt64(k)) }
    }

    func testOneStepBatchOneAndConstantInitialState() throws {
        try assertSameOutputs(Case(direction: "bidirectional", linearBeforeReset: 1, steps: 1, batch: 1), seed: 400)
        try assertSameOutputs(Case(op: "RNN", direction: "reverse", steps: 1), seed: 401)
        var (g, feeds) = graph(Case(direction: "bidirectional", linearBeforeReset: 1), seed: 402)
        if let h0 = feeds.removeValue(forKey: "h0") { g.setConstant(Constant(name: "h0", tensor: h0)) }
        g.inputs.removeAll { $0.name == "h0" }
        let prepared = try ExportPreparation.prepare(g).graph
        let lowered = try LoweringPipeline([.unrollGRUAndRNN()]).applied(to: prepared)
        XCTAssertFalse(lowered.nodes.contains { $0.opType == "GRU" })
        let want = try Interpreter(graph: prepared).run(feeds), got = try Interpreter(graph: lowered).run(feeds)
        for o in ["Y", "Y_h"] {
            let d = zip(want[o]?.floats ?? [], got[o]?.floats ?? [1]).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThanOrEqual(d, 1e-5, o)
        }
    }

    func testPredicateChoosesTheNodes() throws {
        let (g, _) = graph(Case(linearBeforeReset: 1), seed: 500)
        let prepared = try ExportPreparation.prepare(g).graph
        let none = LoweringPass.unrollGRUAndRNN { _, _ in false }
        XCTAssertEqual(try LoweringPipeline([none]).applied(to: prepared), prepared)
        let resetAfter = LoweringPass.unrollGRUAndRNN { n, _ in n.int("linear_before_reset", 0) != 0 }
        XCTAssertFalse(try LoweringPipeline([resetAfter]).applied(to: prepared).nodes.contains { $0.opType == "GRU" })
    }

    /// The stateful-LSTM pass through the shared helpers: reverse and bidirectional, activations with alpha / beta.
    func testStatefulLSTMInEveryDirection() throws {
        let cases: [Case] = [
            Case(op: "LSTM", reads: ["Y", "Y_h", "Y_c"]),
            Case(op: "LSTM", direction: "reverse", reads: ["Y_h"]),
            Case(op: "LSTM", direction: "bidirectional", bias: false, reads: ["Y", "Y_c"]),
            Case(op: "LSTM", direction: "bidirectional", reads: ["Y", "Y_h"],
                 attributes: ["activations": .strings(["HardSigmoid", "Tanh", "Relu", "Sigmoid", "Affine", "Tanh"]),
                              "activation_alpha": .floats([0.3, 0.5]), "activation_beta": .floats([0.4, 0.2])]),
        ]
        for (k, c) in cases.enumerated() { try assertSameOutputs(c, .unrollStatefulLSTM, seed: 600 + UInt64(k)) }
    }
}
