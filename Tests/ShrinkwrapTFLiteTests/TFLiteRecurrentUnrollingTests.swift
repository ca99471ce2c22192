import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapTFLite
import XCTest

/// TFLite has no GRU or RNN builtin: every one is unrolled (`unrollGRUAndRNN`)
/// into FULLY_CONNECTED / SPLIT / LOGISTIC / TANH / MUL / ADD / SUB, and
/// export → import → run gives the graph's outputs.
final class TFLiteRecurrentUnrollingTests: XCTestCase {
    func random(_ shape: [Int], seed: UInt64, scale: Float = 0.5) -> Tensor {
        var rng = SplitMix(seed: seed)
        return Tensor((0..<shape.reduce(1, *)).map { _ in Float(rng.normal()) * scale }, shape: shape)
    }

    /// A GRU (or RNN) over x [5, 2, 3], hidden size 4, with h0 as a graph input when `state`.
    func graph(_ op: String, direction: String, lbr: Int = 0, state: Bool, attributes: [String: Attribute] = [:]) -> Graph {
        let (seq, batch, input, hidden, gates) = (5, 2, 3, 4, op == "GRU" ? 3 : 1)
        let dirs = direction == "bidirectional" ? 2 : 1
        var g = Graph(name: op, inputs: [ValueInfo(name: "x", dtype: .float32, shape: [seq, batch, input].map { .fixed($0) })],
                      outputs: ["y", "yh"].map { ValueInfo(name: $0, dtype: .float32, shape: nil) }, nodes: [])
        g.setConstant(Constant(name: "W", tensor: random([dirs, gates * hidden, input], seed: 1)))
        g.setConstant(Constant(name: "R", tensor: random([dirs, gates * hidden, hidden], seed: 2)))
        g.setConstant(Constant(name: "B", tensor: random([dirs, 2 * gates * hidden], seed: 3)))
        var a = attributes
        a["hidden_size"] = .int(hidden)
        a["direction"] = .string(direction)
        if op == "GRU" { a["linear_before_reset"] = .int(lbr) }
        var node = Node(name: "rec", opType: op, inputs: ["x", "W", "R", "B"], outputs: ["y", "yh"], attributes: a)
        if state {
            g.inputs.append(ValueInfo(name: "h0", dtype: .float32, shape: [dirs, batch, hidden].map { .fixed($0) }))
            node.inputs += ["", "h0"]
        }
        g.nodes = [node]
        return g
    }

    func roundTrip(_ g: Graph, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        var feeds = ["x": random([5, 2, 3], seed: 9, scale: 1)]
        if let h0 = g.inputs.first(where: { $0.name == "h0" })?.staticShape { feeds["h0"] = random(h0, seed: 10, scale: 1) }
        let bytes = try TFLiteExporter.exportBytes(try ExportPreparation.prepare(g).graph)
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "\(label).tflite")
        let want = try Interpreter(graph: g).run(feeds), got = try Interpreter(graph: back).run(feeds)
        for o in g.outputs {
            let a = try XCTUnwrap(want[o.name]?.floats, file: file, line: line), b = try XCTUnwrap(got[o.name]?.floats, label, file: file, line: line)
            XCTAssertEqual(want[o.name]?.shape, got[o.name]?.shape, label, file: file, line: line)
            let d = zip(a, b).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThanOrEqual(d, 1e-5, "\(label) \(o.name)", file: file, line: line)
        }
        return try TFLiteModel(bytes: bytes, file: "t.tflite").ops.map(\.name)
    }

    func testGRUAndRNNInEveryDirection() throws {
        for direction in ["forward", "reverse", "bidirectional"] {
            for (op, lbr) in [("GRU", 0), ("GRU", 1), ("RNN", 0)] {
                let label = "\(op) lbr \(lbr) \(direction)"
                let ops = try roundTrip(graph(op, direction: direction, lbr: lbr, state: direction != "forward"), label)
                let dirs = direction == "bidirectional" ? 2 : 1
                XCTAssertEqual(ops.filter { $0 == "FULLY_CONNECTED" }.count, 1 + (op == "GRU" && lbr == 0 ? 2 : 1) * 5 * dirs, label)
                XCTAssertEqual(ops.filter { $0 == (op == "GRU" ? "SUB" : "TANH") }.count, 5 * dirs, label)
            }
        }
    }

    func testHardSigmoidActivationIsDecomposed() throws {
        let g = graph("GRU", direction: "forward", lbr: 1, state: false,
                      attributes: ["activations": .strings(["HardSigmoid", "Tanh"]), "activation_alpha": .floats([0.25]), "activation_beta": .floats([0.4])])
        let ops = try roundTrip(g, "gru hardsigmoid")
        XCTAssertFalse(ops.contains("LOGISTIC"), ops.joined(separator: " "))
    }
}
