import Foundation
@testable import ShrinkwrapCompression
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// Weights inside If branches (silero-vad's whole network lives in two) and weights the branches
/// read from the enclosing graph are compressed like any other, and the graph still runs.
final class CompressSubgraphWeightsTests: XCTestCase {
    /// y = If(c, then: MatMul(x, inner) , else: MatMul(x, outer)); `inner` is the branch's own
    /// constant, `outer` a top-level constant only the else branch reads; `shadow` is a top-level
    /// constant whose name the then branch redefines (its MatMul reads the branch's own).
    func graph() -> Graph {
        var rng = SplitMix(seed: 7)
        func t(_ shape: [Int]) -> Tensor { Tensor((0..<shape.reduce(1, *)).map { _ in Float(rng.normal() * 0.1) }, shape: shape) }
        var thenBranch = Graph(name: "then")
        thenBranch.outputs = [ValueInfo(name: "yt", dtype: .float32, shape: nil)]
        thenBranch.setConstant(Constant(name: "inner", tensor: t([64, 48])))
        thenBranch.setConstant(Constant(name: "shadow", tensor: t([48, 48])))
        thenBranch.nodes = [Node(name: "mt", opType: "MatMul", inputs: ["x", "inner"], outputs: ["h"]),
                            Node(name: "ms", opType: "MatMul", inputs: ["h", "shadow"], outputs: ["yt"])]
        var elseBranch = Graph(name: "else")
        elseBranch.outputs = [ValueInfo(name: "ye", dtype: .float32, shape: nil)]
        elseBranch.nodes = [Node(name: "me", opType: "MatMul", inputs: ["x", "outer"], outputs: ["ye"])]
        var g = Graph(name: "g")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2), .fixed(64)]),
                    ValueInfo(name: "c", dtype: .bool, shape: [])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.setConstant(Constant(name: "outer", tensor: t([64, 48])))
        g.setConstant(Constant(name: "shadow", tensor: t([48, 48])))
        g.nodes = [Node(name: "branch", opType: "If", inputs: ["c"], outputs: ["y"],
                        attributes: ["then_branch": .graph(thenBranch), "else_branch": .graph(elseBranch)])]
        return g
    }

    func testBranchWeightsAndCapturedWeightsAreCompressed() throws {
        var g = graph()
        let plan = CompressionPlan(CompressionRule(mode: "linear", options: CodecOptions(bits: 8, granularity: .perChannel)), minElements: 1000)
        let log = try CompressWeights.run(&g, plan: plan, threads: 2)
        func entry(_ name: String) -> [CompressionLogEntry] { log.entries.filter { $0.name == name } }
        XCTAssertEqual(entry("outer").first?.encoding, "affine8", "read only inside the else branch")
        XCTAssertEqual(entry("outer").first?.usedBy, ["MatMul 'me'"])
        XCTAssertEqual(entry("inner").first?.encoding, "affine8", "the then branch's own weight")
        XCTAssertEqual(entry("shadow").map(\.skipped), ["not used by any node", nil],
                       "the top-level 'shadow' is hidden by the branch's own, which is compressed")
        let then = try XCTUnwrap(g.nodes[0].subgraphs.first { $0.name == "then_branch" }?.graph)
        guard case .affine? = then.constant(named: "inner")?.encoding else { return XCTFail("branch weight not rewritten") }
        // Both branches still run, close to the float graph.
        let x = Tensor((0..<128).map { Float($0 % 7) / 7 }, shape: [2, 64])
        for c in [true, false] {
            let inputs = ["x": x, "c": Tensor(bools: [c], shape: [])]
            let want = try XCTUnwrap(Interpreter(graph: graph()).run(inputs)["y"]?.floats)
            let got = try XCTUnwrap(Interpreter(graph: g).run(inputs)["y"]?.floats)
            let scale = want.map(abs).max() ?? 1
            for (a, b) in zip(got, want) { XCTAssertEqual(a, b, accuracy: 0.02 * scale, "c = \(c)") }
        }
    }

    /// Loop(M = 3, cond, h0, w) with body (i, c, h, wc) → (c, Tanh(MatMul(h, wc)), wc): the weight is
    /// carried through the Loop unchanged, as paddle2onnx does; it is compressed all the same.
    func testAWeightCarriedThroughALoopIsCompressed() throws {
        var rng = SplitMix(seed: 8)
        var body = Graph(name: "body")
        body.inputs = [ValueInfo(name: "i", dtype: .int64, shape: []), ValueInfo(name: "c", dtype: .bool, shape: []),
                       ValueInfo(name: "h", dtype: .float32, shape: nil), ValueInfo(name: "wc", dtype: .float32, shape: nil)]
        body.nodes = [Node(name: "mm", opType: "MatMul", inputs: ["h", "wc"], outputs: ["p"]),
                      Node(name: "act", opType: "Tanh", inputs: ["p"], outputs: ["h2"]),
                      Node(name: "keep", opType: "Identity", inputs: ["c"], outputs: ["c2"])]
        body.outputs = ["c2", "h2", "wc"].map { ValueInfo(name: $0, dtype: nil, shape: nil) }
        var g = Graph(name: "g")
        g.inputs = [ValueInfo(name: "h0", dtype: .float32, shape: [.fixed(1), .fixed(64)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.setConstant(Constant(name: "m", tensor: .scalar(int: 3)))
        g.setConstant(Constant(name: "go", tensor: Tensor(bools: [true], shape: [])))
        g.setConstant(Constant(name: "w", tensor: Tensor((0..<4096).map { _ in Float(rng.normal() * 0.2) }, shape: [64, 64])))
        g.nodes = [Node(name: "loop", opType: "Loop", inputs: ["m", "go", "h0", "w"], outputs: ["y", "w_final"],
                        attributes: ["body": .graph(body)])]
        let original = g
        let log = try CompressWeights.run(&g, plan: CompressionPlan(CompressionRule(mode: "fp16", options: CodecOptions())), threads: 2)
        XCTAssertEqual(log.entries.first { $0.name == "w" }?.encoding, "fp16", "\(log.entries.map { ($0.name, $0.skipped ?? "") })")
        XCTAssertEqual(log.entries.first { $0.name == "w" }?.usedBy, ["MatMul 'mm'"])
        XCTAssertEqual(g.nodes.first?.inputs, ["m", "go", "h0"], "the Loop no longer carries the weight")
        let h0 = Tensor((0..<64).map { Float($0 % 9) / 9 - 0.4 }, shape: [1, 64])
        let want = try XCTUnwrap(Interpreter(graph: original).run(["h0": h0])["y"]?.floats)
        let got = try XCTUnwrap(Interpreter(graph: g).run(["h0": h0])["y"]?.floats)
        for (a, b) in zip(got, want) { XCTAssertEqual(a, b, accuracy: 5e-3) }
    }
}
