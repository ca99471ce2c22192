import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// Lowering passes that rewrite computation (not only layout) give the
/// interpreter the same outputs before and after, on small graphs.
final class LoweringPassNumericsTests: XCTestCase {
    func random(_ shape: [Int], _ rng: inout SplitMix) -> Tensor {
        Tensor((0..<shape.reduce(1, *)).map { _ in Float(rng.normal()) }, shape: shape)
    }

    /// Runs `graph` (prepared) before and after `pipeline`; every output agrees within 1e-5.
    func assertSameOutputs(_ graph: Graph, _ pipeline: LoweringPipeline, inputs: [String: Tensor],
                           file: StaticString = #filePath, line: UInt = #line) throws -> Graph {
        let prepared = try ExportPreparation.prepare(graph).graph
        let lowered = try pipeline.applied(to: prepared)
        let before = try Interpreter(graph: prepared).run(inputs)
        let after = try Interpreter(graph: lowered).run(inputs)
        for o in graph.outputs {
            let a = try XCTUnwrap(before[o.name]?.floats, file: file, line: line)
            let b = try XCTUnwrap(after[o.name]?.floats, file: file, line: line)
            XCTAssertEqual(before[o.name]?.shape, after[o.name]?.shape, o.name, file: file, line: line)
            XCTAssertEqual(a.count, b.count, file: file, line: line)
            let worst = zip(a, b).map { abs($0 - $1) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, 1e-5, "\(o.name): max |diff| \(worst)", file: file, line: line)
        }
        return lowered
    }

    /// x [2, 3, 11] → Conv (stride 2, pads 1 / 2) → Relu → Mul by [4, 1] → Conv (dilation 2)
    /// → MaxPool → AveragePool (ceil) → GlobalMaxPool → y; and ConvTranspose (stride 2) → y2;
    /// GlobalAveragePool of the Mul → y3 (the Mul's two readers both 2-D).
    func convGraph(_ rng: inout SplitMix) -> Graph {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [2, 3, 11].map { .fixed($0) })]
        g.outputs = ["y", "y2", "y3", "m"].map { ValueInfo(name: $0, dtype: .float32, shape: nil) }
        g.nodes = [
            Node(name: "c1", opType: "Conv", inputs: ["x", "w1", "b1"], outputs: ["c1"],
                 attributes: ["kernel_shape": .ints([3]), "strides": .ints([2]), "pads": .ints([1, 2])]),
            Node(name: "r1", opType: "Relu", inputs: ["c1"], outputs: ["r1"]),
            Node(name: "s1", opType: "Mul", inputs: ["r1", "scale"], outputs: ["s1"]),
            Node(name: "c2", opType: "Conv", inputs: ["s1", "w2"], outputs: ["c2"], attributes: ["dilations": .ints([2]), "pads": .ints([2, 2])]),
            Node(name: "mp", opType: "MaxPool", inputs: ["c2"], outputs: ["m"],
                 attributes: ["kernel_shape": .ints([3]), "pads": .ints([1, 1])]),
            Node(name: "ap", opType: "AveragePool", inputs: ["m"], outputs: ["a"],
                 attributes: ["kernel_shape": .ints([2]), "strides": .ints([2]), "ceil_mode": .int(1)]),
            Node(name: "gp", opType: "GlobalMaxPool", inputs: ["a"], outputs: ["y"]),
            Node(name: "ct", opType: "ConvTranspose", inputs: ["x", "wt"], outputs: ["y2"],
                 attributes: ["strides": .ints([2]), "pads": .ints([1, 0]), "output_padding": .ints([1])]),
            Node(name: "ga", opType: "GlobalAveragePool", inputs: ["s1"], outputs: ["y3"]),
        ]
        for (name, shape) in [("w1", [4, 3, 3]), ("b1", [4]), ("scale", [4, 1]), ("w2", [5, 4, 2]), ("wt", [3, 2, 3])] {
            g.setConstant(Constant(name: name, tensor: random(shape, &rng)))
        }
        return g
    }

    func testConvolution1DAs2DKeepsOutputsAndDropsInnerReshapes() throws {
        var rng = SplitMix(seed: 7)
        let graph = convGraph(&rng)
        let lowered = try assertSameOutputs(graph, LoweringPipeline([.convolution1DAs2D]), inputs: ["x": random([2, 3, 11], &rng)])
        // Every convolution and pool is 2-D now, with 2-D attributes and a 4-D weight.
        for n in lowered.nodes where ["Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"].contains(n.opType) {
            XCTAssertEqual(lowered.valueInfo[n.inputs[0]]?.staticShape?.count, 4, n.name)
            if let k = n.ints("kernel_shape") { XCTAssertEqual(k.count, 2, n.name) }
            if n.opType == "Conv" { XCTAssertEqual(lowered.constant(named: n.inputs[1])?.encoding.shape.count, 4) }
        }
        XCTAssertEqual(lowered.nodes.first { $0.name == "c1" }?.ints("pads"), [0, 1, 0, 2])
        // c1 → Relu → Mul → c2 with no Reshape between: the Reshapes back were sunk and cancelled.
        let producer = Dictionary(uniqueKeysWithValues: lowered.nodes.flatMap { n in n.outputs.map { ($0, n) } })
        let c2 = try XCTUnwrap(lowered.nodes.first { $0.name == "c2" })
        XCTAssertEqual(producer[c2.inputs[0]]?.opType, "Mul")
        XCTAssertEqual(producer[try XCTUnwrap(producer[c2.inputs[0]]?.inputs[0])]?.opType, "Relu")
        XCTAssertEqual(producer[c2.inputs[0]]?.inputs.compactMap { lowered.constant(named: $0)?.encoding.shape }, [[1, 4, 1, 1]])
    }

    func testGraphWithout1DOpsIsUntouched() throws {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [1, 2, 4, 4].map { .fixed($0) })]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.nodes = [Node(name: "c", opType: "Conv", inputs: ["x", "w"], outputs: ["y"], attributes: ["kernel_shape": .ints([1, 1])])]
        g.setConstant(Constant(name: "w", tensor: Tensor([1, 2], shape: [1, 2, 1, 1])))
        let prepared = try ExportPreparation.prepare(g).graph
        XCTAssertEqual(try LoweringPipeline([.convolution1DAs2D, .unrollStatefulLSTM]).applied(to: prepared), prepared)
    }

    /// LSTM with its state as inputs and outputs (a streaming model), 3 steps, batch 2.
    func testStatefulLSTMUnrolls() throws {
        var rng = SplitMix(seed: 11)
        let (steps, batch, input, hidden) = (3, 2, 5, 4)
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [steps, batch, input].map { .fixed($0) }),
                    ValueInfo(name: "h0", dtype: .float32, shape: [1, batch, hidden].map { .fixed($0) }),
                    ValueInfo(name: "c0", dtype: .float32, shape: [1, batch, hidden].map { .fixed($0) })]
        g.outputs = ["y", "hn", "cn"].map { ValueInfo(name: $0, dtype: .float32, shape: nil) }
        g.nodes = [Node(name: "lstm", opType: "LSTM", inputs: ["x", "W", "R", "B", "", "h0", "c0"], outputs: ["y", "hn", "cn"],
                        attributes: ["hidden_size": .int(hidden)])]
        for (name, shape) in [("W", [1, 4 * hidden, input]), ("R", [1, 4 * hidden, hidden]), ("B", [1, 8 * hidden])] {
            g.setConstant(Constant(name: name, tensor: random(shape, &rng)))
        }
        let inputs = ["x": random([steps, batch, input], &rng), "h0": random([1, batch, hidden], &rng), "c0": random([1, batch, hidden], &rng)]
        let lowered = try assertSameOutputs(g, LoweringPipeline([.unrollStatefulLSTM]), inputs: inputs)
        XCTAssertFalse(lowered.nodes.contains { $0.opType == "LSTM" })
        XCTAssertEqual(lowered.nodes.filter { $0.opType == "Gemm" }.count, 1 + steps)
        // Zero initial state given as constants and only Y read: left to the writer.
        var plain = g
        plain.nodes[0].inputs = ["x", "W", "R", "B"]
        plain.nodes[0].outputs = ["y"]
        plain.inputs = [g.inputs[0]]
        plain.outputs = [g.outputs[0]]
        let prepared = try ExportPreparation.prepare(plain).graph
        XCTAssertEqual(try LoweringPass.unrollStatefulLSTM.appliedOnce(to: prepared).nodes.map(\.opType), ["LSTM"])
    }
}

extension LoweringPass {
    fileprivate func appliedOnce(to g: Graph) throws -> Graph { try LoweringPipeline([self]).applied(to: g) }
}
