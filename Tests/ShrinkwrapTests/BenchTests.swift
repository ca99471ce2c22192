import Shrinkwrap
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
        let lines = profile.lines
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
}
