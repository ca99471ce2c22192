import Shrinkwrap
import ShrinkwrapData
import ShrinkwrapIR
import XCTest

/// `shrinkwrap bench`'s numbers and lines, on given durations (nothing here is timed).
final class BenchTests: XCTestCase {
    func testStatistics() throws {
        let odd = try XCTUnwrap(Benchmark.Statistics(milliseconds: [5, 1, 3]))
        XCTAssertEqual(odd, try XCTUnwrap(Benchmark.Statistics(milliseconds: [3, 5, 1])), "order does not matter")
        XCTAssertEqual(odd.runs, 3)
        XCTAssertEqual(odd.median, 3)
        XCTAssertEqual(odd.mean, 3)
        XCTAssertEqual(odd.min, 1)
        // An even count takes the upper of the two middle values.
        let even = try XCTUnwrap(Benchmark.Statistics(milliseconds: [4, 1, 3, 2]))
        XCTAssertEqual(even.median, 3)
        XCTAssertEqual(even.mean, 2.5)
        XCTAssertEqual(even.min, 1)
        let one = try XCTUnwrap(Benchmark.Statistics(milliseconds: [7.5]))
        XCTAssertEqual(one.runs, 1)
        XCTAssertEqual([one.median, one.mean, one.min], [7.5, 7.5, 7.5])
        XCTAssertNil(Benchmark.Statistics(milliseconds: []))
    }

    func testSummaryLines() throws {
        let stats = try XCTUnwrap(Benchmark.Statistics(milliseconds: [2, 1.5, 1.25, 3]))
        let result = Benchmark.Result(times: [2, 1.5, 1.25, 3], statistics: stats, threads: 2, gemm: "OpenBLAS", profile: nil,
                                      inputs: "3 .npy files in \"d\"/")
        XCTAssertEqual(result.summary(model: "m.onnx", json: false),
                       #"m.onnx: 4 runs, 2 threads, GEMM OpenBLAS: median 2.00 ms, mean 1.94 ms, min 1.25 ms (on 3 .npy files in "d"/)"#)
        XCTAssertEqual(result.summary(model: "m.onnx", json: true),
                       #"{"model": "m.onnx", "runs": 4, "threads": 2, "median_ms": 2.000, "mean_ms": 1.938, "min_ms": 1.250, "gemm": "OpenBLAS", "inputs": "3 .npy files in \"d\"/"}"#)
    }

    func testProfileLines() {
        let nodes: [(name: String, ms: Double, shape: [Int])] = (0..<10).map { ("Relu r\($0)", Double($0), [1, $0]) }
        let profile = Benchmark.Profile(nodes: nodes, ops: ["Relu": (45, 10), "Conv": (5, 1), "Add": (5, 2)], totalMs: 50)
        let lines = profile.lines()
        XCTAssertEqual(lines.count, 1 + 8 + 1 + 3, "the eight slowest nodes, then every op")
        XCTAssertEqual(lines[0], "slowest nodes:")
        XCTAssertEqual(lines[1], "     9.000 ms  Relu r9 → [1, 9]")
        XCTAssertEqual(lines[8], "     2.000 ms  Relu r2 → [1, 2]")
        XCTAssertEqual(lines[9], "by op:")
        // Slowest first; equal times by name.
        XCTAssertEqual(Array(lines[10...]), [
            "  Relu                     10 nodes    45.000 ms  90.0%",
            "  Add                       2 nodes     5.000 ms  10.0%",
            "  Conv                      1 nodes     5.000 ms  10.0%",
        ])
    }

    /// The profile sees inside loop bodies: each body node once, with its run count and
    /// its time summed; the op table counts nodes, not runs.
    func testProfileSeesLoopBodies() throws {
        var body = Graph(name: "body")
        body.inputs = [ValueInfo(name: "i", dtype: .int64, shape: []), ValueInfo(name: "c", dtype: .bool, shape: []),
                       ValueInfo(name: "acc", dtype: .float32, shape: nil)]
        body.nodes = [Node(name: "step", opType: "Add", inputs: ["acc", "x"], outputs: ["acc2"]),
                      Node(name: "same", opType: "Identity", inputs: ["c"], outputs: ["c2"])]
        body.outputs = [ValueInfo(name: "c2", dtype: .bool, shape: nil), ValueInfo(name: "acc2", dtype: .float32, shape: nil)]
        var g = Graph(name: "loop")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(3)])]
        g.setConstant(Constant(name: "m", tensor: .scalar(int: 5)))
        g.setConstant(Constant(name: "zero", tensor: Tensor([0, 0, 0], shape: [3])))
        g.nodes = [Node(name: "loop", opType: "Loop", inputs: ["m", "", "zero"], outputs: ["sum"], attributes: ["body": .graph(body)])]
        g.outputs = [ValueInfo(name: "sum", dtype: .float32, shape: nil)]
        let x = Tensor([1, 2, 3], shape: [3])
        let result = try Benchmark.run(g, samples: InputSet(samples: [["x": x]], sources: ["x"], description: "x", random: false),
                                       runs: 1, warmup: 1, threads: 1, profile: true)
        let profile = try XCTUnwrap(result.profile)
        let names = profile.nodes.map(\.name)
        XCTAssertTrue(names.contains("Add step (5 runs)"), "\(names)")
        XCTAssertTrue(names.contains("Loop loop"), "\(names)")
        XCTAssertEqual(profile.ops["Add"]?.count, 1)
        XCTAssertEqual(profile.ops["Loop"]?.count, 1)
    }
}
