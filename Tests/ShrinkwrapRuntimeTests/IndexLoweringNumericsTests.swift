import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// `sliceNegativeStepsAsGather` and `gatherScalarIndexAsVector` give the
/// interpreter the same outputs (exactly: they only move values).
final class IndexLoweringNumericsTests: XCTestCase {
    func assertSameOutputs(_ g: Graph, _ pass: LoweringPass, _ feeds: [String: Tensor], file: StaticString = #filePath, line: UInt = #line) throws -> Graph {
        let prepared = try ExportPreparation.prepare(g).graph
        let lowered = try LoweringPipeline([pass]).applied(to: prepared)
        let want = try Interpreter(graph: prepared).run(feeds), got = try Interpreter(graph: lowered).run(feeds)
        for o in g.outputs {
            XCTAssertEqual(want[o.name]?.shape, got[o.name]?.shape, o.name, file: file, line: line)
            XCTAssertEqual(want[o.name]?.floats, got[o.name]?.floats, o.name, file: file, line: line)
        }
        return lowered
    }

    func ints(_ v: [Int]) -> Tensor { Tensor(ints: v.map(Int64.init), shape: [v.count]) }

    func testNegativeStepSlices() throws {
        let x = Tensor((0..<60).map { Float($0) }, shape: [3, 5, 4])
        // (starts, ends, axes, steps): x[:, ::-1], x[::-2, 1:4, -1:0:-1] with axes given negative, x[2:0:-1] on axis 0 only.
        let cases: [([Int], [Int], [Int], [Int])] = [
            ([-1], [Int(Int64.min)], [1], [-1]),
            ([-1, 1, -1], [Int(Int64.min), 4, 0], [0, -2, 2], [-2, 1, -1]),
            ([2], [0], [0], [-1]),
        ]
        for (k, (starts, ends, axes, steps)) in cases.enumerated() {
            var g = Graph()
            g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [3, 5, 4].map { .fixed($0) })]
            g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
            g.nodes = [Node(name: "s", opType: "Slice", inputs: ["x", "st", "en", "ax", "sp"], outputs: ["y"])]
            for (name, v) in [("st", starts), ("en", ends), ("ax", axes), ("sp", steps)] { g.setConstant(Constant(name: name, tensor: ints(v))) }
            let lowered = try assertSameOutputs(g, .sliceNegativeStepsAsGather, ["x": x])
            XCTAssertEqual(lowered.nodes.map(\.opType), Array(repeating: "Gather", count: [1, 3, 1][k]), "case \(k)")
        }
    }

    func testScalarGathers() throws {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [2, 3, 4].map { .fixed($0) }),
                    ValueInfo(name: "i", dtype: .int64, shape: [])]
        g.outputs = ["a", "b", "c"].map { ValueInfo(name: $0, dtype: .float32, shape: nil) }
        g.setConstant(Constant(name: "k", tensor: Tensor(ints: [-1], shape: [])))
        g.setConstant(Constant(name: "v", tensor: ints([1, 0])))
        g.nodes = [
            Node(name: "ga", opType: "Gather", inputs: ["x", "k"], outputs: ["a"], attributes: ["axis": .int(-2)]),
            Node(name: "gb", opType: "Gather", inputs: ["x", "i"], outputs: ["b"]),
            Node(name: "gc", opType: "Gather", inputs: ["x", "v"], outputs: ["c"], attributes: ["axis": .int(2)]),
        ]
        let x = Tensor((0..<24).map { Float($0) }, shape: [2, 3, 4])
        let lowered = try assertSameOutputs(g, .gatherScalarIndexAsVector, ["x": x, "i": Tensor(ints: [1], shape: [])])
        // A constant index becomes a [1] constant, a run-time one is reshaped; the vector gather is left alone.
        XCTAssertEqual(lowered.nodes.map(\.opType), ["Gather", "Reshape", "Reshape", "Gather", "Reshape", "Gather"])
    }
}
