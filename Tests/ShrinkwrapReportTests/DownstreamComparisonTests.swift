import Foundation
import ShrinkwrapIR
import ShrinkwrapReport
import XCTest

/// Rerunning only what a change reaches gives the numbers a whole run of the changed graph gives.
final class DownstreamComparisonTests: XCTestCase {
    /// x → fc1 (w1) → h; h → relu → fc2 (w2) → + bias → softmax → p; h → fc3 (w3) → q.
    /// `bias` is made by a node reading constants only (folded when the interpreter loads).
    static func twoHeads() -> Graph {
        var g = Graph(name: "two-heads")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(12)])]
        func values(_ n: Int, _ seed: Int) -> [Float] { (0..<n).map { Float((($0 + seed) * 7919) % 211) / 211 - 0.5 } }
        g.setConstant(Constant(name: "w1", tensor: Tensor(values(12 * 16, 1), shape: [12, 16])))
        g.setConstant(Constant(name: "w2", tensor: Tensor(values(16 * 6, 2), shape: [16, 6])))
        g.setConstant(Constant(name: "w3", tensor: Tensor(values(16 * 5, 3), shape: [16, 5])))
        g.setConstant(Constant(name: "b0", tensor: Tensor(values(6, 4), shape: [6])))
        g.setConstant(Constant(name: "b1", tensor: Tensor(values(6, 5), shape: [6])))
        g.nodes = [Node(name: "bias", opType: "Add", inputs: ["b0", "b1"], outputs: ["bias"]),
                   Node(name: "fc1", opType: "MatMul", inputs: ["x", "w1"], outputs: ["h"]),
                   Node(name: "relu", opType: "Relu", inputs: ["h"], outputs: ["a"]),
                   Node(name: "fc2", opType: "MatMul", inputs: ["a", "w2"], outputs: ["z"]),
                   Node(name: "addb", opType: "Add", inputs: ["z", "bias"], outputs: ["zb"]),
                   Node(name: "soft", opType: "Softmax", inputs: ["zb"], outputs: ["p"], attributes: ["axis": .int(-1)]),
                   Node(name: "fc3", opType: "MatMul", inputs: ["h", "w3"], outputs: ["q"])]
        g.outputs = [ValueInfo(name: "p", dtype: .float32, shape: nil), ValueInfo(name: "q", dtype: .float32, shape: nil)]
        return g
    }

    static func samples(_ n: Int) -> [[String: Tensor]] {
        (0..<n).map { k in ["x": Tensor((0..<12).map { Float(sin(Double(k * 12 + $0) * 0.41)) * 2 }, shape: [1, 12])] }
    }

    /// `name`'s values rounded to a coarse grid (what a compression would do to it).
    static func coarse(_ g: Graph, _ name: String, step: Float) throws -> Constant {
        let t = try XCTUnwrap(g.constant(named: name)?.encoding.decoded())
        let v = try XCTUnwrap(t.floats).map { ($0 / step).rounded() * step }
        return Constant(name: name, tensor: Tensor(v, shape: t.shape))
    }

    func testSameNumbersAsWholeRuns() throws {
        let g = Self.twoHeads()
        let runner = try AgreementRunner(reference: g, inputs: Self.samples(40), layerSamples: 0, threads: 1)
        let changes: [[Constant]] = [[try Self.coarse(g, "w1", step: 0.25)], [try Self.coarse(g, "w2", step: 0.3)],
                                     [try Self.coarse(g, "w3", step: 0.3)], [try Self.coarse(g, "w2", step: 0.3), try Self.coarse(g, "b0", step: 0.5)]]
        let one = try runner.compareDownstream(base: g, changes: changes, threads: 1)
        let two = try runner.compareDownstream(base: g, changes: changes, threads: 2)
        XCTAssertEqual(one.outputs, two.outputs, "the thread count changes nothing")
        for (k, change) in changes.enumerated() {
            var whole = g
            for c in change { whole.setConstant(c) }
            let expected = try runner.compare(whole).outputs
            XCTAssertEqual(one.outputs[k].count, 2)
            for (a, b) in zip(one.outputs[k], expected) {
                XCTAssertEqual(a.name, b.name)
                XCTAssertEqual(a.top1Agreement, b.top1Agreement, "change \(k), output \(a.name)")
                XCTAssertEqual(a.snrDB ?? 0, b.snrDB ?? 0, accuracy: 1e-3, "change \(k), output \(a.name)")
                XCTAssertEqual(a.meanKL ?? 0, b.meanKL ?? 0, accuracy: 1e-9)
            }
        }
        // w1 reaches every node but the constant-only bias, which is rerun too (the load folded it, so no
        // run kept its value); w3 only its own head, and p stays exact.
        XCTAssertEqual(one.baseNodes, 7)
        XCTAssertEqual(one.rerunNodes[0], 7)
        XCTAssertEqual(one.rerunNodes[2], 1)
        XCTAssertNil(one.outputs[2][0].snrDB, "p is not downstream of w3: the base's own values")
        XCTAssertNotNil(one.outputs[2][1].snrDB)
        // w2's region reads the folded bias: it reruns the node making it too (fc2, addb, soft, bias).
        XCTAssertEqual(one.rerunNodes[1], 4)
        XCTAssertLessThan(one.outputs[1][0].snrDB ?? .infinity, 60, "the change is seen")
        XCTAssertGreaterThan(one.keptBytes, 0)
    }

    func testBudgetAndBadChangesAreRefused() throws {
        let g = Self.twoHeads()
        let runner = try AgreementRunner(reference: g, inputs: Self.samples(8), layerSamples: 0, threads: 1)
        XCTAssertThrowsError(try runner.compareDownstream(base: g, changes: [[try Self.coarse(g, "w1", step: 0.25)]], threads: 1, budget: 64)) {
            XCTAssertTrue($0 is AgreementRunner.DownstreamBudgetExceeded, "\($0)")
        }
        let stranger = Constant(name: "h", tensor: Tensor([Float](repeating: 0, count: 16), shape: [1, 16]))
        XCTAssertThrowsError(try runner.compareDownstream(base: g, changes: [[stranger]], threads: 1)) {
            XCTAssertTrue("\($0)".contains("'h'"), "\($0)")
        }
        let reshaped = Constant(name: "w3", tensor: Tensor([Float](repeating: 0, count: 80), shape: [80]))
        XCTAssertThrowsError(try runner.compareDownstream(base: g, changes: [[reshaped]], threads: 1))
    }

    /// y = If(c, then: x · inner, else: x · outer) → Softmax: a weight only a branch reads (captured
    /// from the enclosing graph) reruns the If; inputs take both branches.
    func testWeightsCapturedByBranchesRerunTheirNode() throws {
        func t(_ shape: [Int], _ seed: Int) -> Tensor {
            Tensor((0..<shape.reduce(1, *)).map { Float((($0 + seed) * 7919) % 211) / 211 - 0.5 }, shape: shape)
        }
        var thenBranch = Graph(name: "then")
        thenBranch.outputs = [ValueInfo(name: "yt", dtype: .float32, shape: nil)]
        thenBranch.setConstant(Constant(name: "inner", tensor: t([12, 6], 1)))
        thenBranch.nodes = [Node(name: "mt", opType: "MatMul", inputs: ["x", "inner"], outputs: ["yt"])]
        var elseBranch = Graph(name: "else")
        elseBranch.outputs = [ValueInfo(name: "ye", dtype: .float32, shape: nil)]
        elseBranch.nodes = [Node(name: "me", opType: "MatMul", inputs: ["x", "outer"], outputs: ["ye"])]
        var g = Graph(name: "branches")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(12)]), ValueInfo(name: "c", dtype: .bool, shape: [])]
        g.outputs = [ValueInfo(name: "p", dtype: .float32, shape: nil)]
        g.setConstant(Constant(name: "outer", tensor: t([12, 6], 2)))
        g.nodes = [Node(name: "branch", opType: "If", inputs: ["c"], outputs: ["y"],
                        attributes: ["then_branch": .graph(thenBranch), "else_branch": .graph(elseBranch)]),
                   Node(name: "soft", opType: "Softmax", inputs: ["y"], outputs: ["p"], attributes: ["axis": .int(-1)])]
        let samples = Self.samples(20).enumerated().map { k, s in
            s.merging(["c": Tensor(dtype: .bool, shape: [], storage: .bool([k % 2 == 0]))]) { a, _ in a }
        }
        let runner = try AgreementRunner(reference: g, inputs: samples, layerSamples: 0, threads: 1)
        let change = [try Self.coarse(g, "outer", step: 0.3)]
        let d = try runner.compareDownstream(base: g, changes: [change], threads: 2)
        var whole = g
        whole.setConstant(change[0])
        let expected = try runner.compare(whole).outputs
        XCTAssertEqual(d.rerunNodes, [2])
        XCTAssertEqual(d.outputs[0][0].top1Agreement, expected[0].top1Agreement)
        XCTAssertEqual(d.outputs[0][0].snrDB ?? 0, expected[0].snrDB ?? 0, accuracy: 1e-3)
        XCTAssertNotNil(d.outputs[0][0].snrDB, "the else branch's inputs see the change")
    }
}
