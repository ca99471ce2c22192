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
}
