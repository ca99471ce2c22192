@testable import ShrinkwrapRuntime
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

/// `fuseOneHotMatMuls`: Expand → Equal(0 ..< K) → Cast → MatMul as a row lookup, with the MatMul's
/// bits (signed zeros, indices out of range) and the four kernels where the lookup does not apply.
final class OneHotMatMulTests: XCTestCase {
    /// indices [rShape] (int32) → Expand to `expandTo` → Equal with iota [1, 1, k] → Cast → MatMul W [k, n].
    func graph(k: Int, n: Int, w: [Float], iota: [Int64]? = nil, expand: Bool = true) -> Graph {
        var nodes: [Node] = []
        if expand { nodes.append(Node(name: "expand", opType: "Expand", inputs: ["idx", "shape"], outputs: ["a"])) }
        nodes += [Node(name: "eq", opType: "Equal", inputs: [expand ? "a" : "idx", "iota"], outputs: ["e"]),
                  Node(name: "cast", opType: "Cast", inputs: ["e"], outputs: ["f"], attributes: ["to": .int(1)]),
                  Node(name: "mm", opType: "MatMul", inputs: ["f", "W"], outputs: ["y"])]
        let consts = [Constant(name: "iota", tensor: Tensor(dtype: .int32, shape: [1, 1, k], storage: .int(iota ?? (0..<Int64(k)).map { $0 }))),
                      Constant(name: "W", tensor: Tensor(w, shape: [k, n]))]
        var inputs = [ValueInfo(name: "idx", dtype: .int32, shape: nil)]
        if expand { inputs.append(ValueInfo(name: "shape", dtype: .int64, shape: nil)) }
        return Graph(inputs: inputs, outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
    }

    func weights(k: Int, n: Int, seed: UInt64) -> [Float] {
        var rng = SplitMix(seed: seed)
        var w = (0..<(k * n)).map { _ in rng.nextFloat() - 0.5 }
        // Column 0 all negative with a −0; column 1 with a +0 and a −0; column 2 zeros of both signs only.
        for i in 0..<k { w[i * n] = -abs(w[i * n]) - 0.1; w[i * n + 2] = i % 2 == 0 ? 0 : -0.0 }
        w[3 * n] = -0.0
        w[1 * n + 1] = 0; w[2 * n + 1] = -0.0
        return w
    }

    func run(_ g: Graph, _ feeds: [String: Tensor], optimize: Bool) throws -> Tensor {
        try XCTUnwrap(Interpreter(graph: g, options: .init(optimize: optimize)).run(feeds)["y"])
    }

    func plannedOps(_ g: Graph) throws -> [String] {
        var planner = ExecutionPlanner(graph: g, threads: 1)
        try planner.run(optimize: true)
        return planner.graph.nodes.map(\.opType)
    }

    func testLookupGivesTheMatMulBits() throws {
        let k = 9, n = 5
        let g = graph(k: k, n: n, w: weights(k: k, n: n, seed: 1))
        XCTAssertEqual(try plannedOps(g), [OneHotMatMul.opType])
        // Indices in range, at the ends, negative and past K (the all-zero row); a batch of 2 broadcast over 3 rows.
        let idx = Tensor(dtype: .int32, shape: [2, 4, 1], storage: .int([0, 3, 8, -1, 9, 1, 2, 100]))
        // Against both GEMM backends (each sum starts from +0).
        let saved = GEMM.forcePortable
        defer { GEMM.forcePortable = saved }
        for portable in [false, true] {
            GEMM.forcePortable = portable
            for shape: [Int64] in [[2, 4, Int64(k)], [1, 4, Int64(k)], [3, 2, 4, Int64(k)]] {
                let feeds = ["idx": idx, "shape": Tensor(ints: shape, shape: [shape.count])]
                let fast = try run(g, feeds, optimize: true), slow = try run(g, feeds, optimize: false)
                XCTAssertEqual(fast.shape, slow.shape, "\(shape)")
                XCTAssertEqual(fast.floats?.map(\.bitPattern), slow.floats?.map(\.bitPattern), "\(shape), \(GEMM.backendName)")
            }
        }
        GEMM.forcePortable = saved
        // Broadcast indices: [2, 1, 1] expanded to [2, 3, K].
        let feeds = ["idx": Tensor(dtype: .int32, shape: [2, 1, 1], storage: .int([4, 7])),
                     "shape": Tensor(ints: [2, 3, Int64(k)], shape: [3])]
        let fast = try run(g, feeds, optimize: true), slow = try run(g, feeds, optimize: false)
        XCTAssertEqual(fast.shape, [2, 3, n])
        XCTAssertEqual(fast.floats?.map(\.bitPattern), slow.floats?.map(\.bitPattern))
    }

    /// Indices that vary along the last axis are not a one-hot encoding: the four kernels run.
    func testOtherShapesRunTheKernels() throws {
        let k = 4, n = 3
        let g = graph(k: k, n: n, w: weights(k: k, n: n, seed: 2), expand: false)
        XCTAssertEqual(try plannedOps(g), [OneHotMatMul.opType])
        let feeds = ["idx": Tensor(dtype: .int32, shape: [1, 2, k], storage: .int([0, 1, 5, 3, 3, 3, 3, 3]))]
        let fast = try run(g, feeds, optimize: true), slow = try run(g, feeds, optimize: false)
        XCTAssertEqual(fast.shape, [1, 2, n])
        XCTAssertEqual(fast.floats?.map(\.bitPattern), slow.floats?.map(\.bitPattern))
    }

    /// Not an iota, or a W with an infinity: the graph stays as it is.
    func testNotRewritten() throws {
        let k = 4, n = 3
        XCTAssertEqual(try plannedOps(graph(k: k, n: n, w: weights(k: k, n: n, seed: 3), iota: [0, 1, 3, 2])),
                       ["Expand", "Equal", "Cast", "MatMul"])
        var w = weights(k: k, n: n, seed: 4)
        w[5] = .infinity
        XCTAssertEqual(try plannedOps(graph(k: k, n: n, w: w)), ["Expand", "Equal", "Cast", "MatMul"])
    }
}
