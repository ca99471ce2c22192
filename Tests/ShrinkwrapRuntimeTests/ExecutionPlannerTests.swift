import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

final class ExecutionPlannerTests: XCTestCase {
    func convGraph(filters: Int, inChannels: Int, w: [Float], bias: [Float]?, bn: Bool) -> Graph {
        var nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W"] + (bias == nil ? [] : ["B"]),
                          outputs: [bn ? "c" : "y"], attributes: ["pads": .ints([1, 1, 1, 1])])]
        var consts = [Constant(name: "W", tensor: Tensor(w, shape: [filters, inChannels, 3, 3]))]
        if let bias { consts.append(Constant(name: "B", tensor: Tensor(bias, shape: [filters]))) }
        if bn {
            nodes.append(Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "beta", "mu", "var"], outputs: ["y"],
                              attributes: ["epsilon": .float(1e-3)]))
            let f = Float(filters)
            consts += [Constant(name: "s", tensor: Tensor((0..<filters).map { 1 + Float($0) / f }, shape: [filters])),
                       Constant(name: "beta", tensor: Tensor((0..<filters).map { Float($0) / 10 }, shape: [filters])),
                       Constant(name: "mu", tensor: Tensor((0..<filters).map { -Float($0) / 7 }, shape: [filters])),
                       Constant(name: "var", tensor: Tensor((0..<filters).map { 0.5 + Float($0) / f }, shape: [filters]))]
        }
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(inChannels), .fixed(13), .fixed(13)])],
                     outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
    }

    func input(_ c: Int, seed: UInt64) -> Tensor {
        var rng = SplitMix(seed: seed)
        return Tensor((0..<(c * 169)).map { _ in rng.nextFloat() * 1000 }, shape: [1, c, 13, 13])
    }

    /// Identical filters must give bit-identical channels on any GEMM backend
    /// (OpenBLAS's FMA kernels alone round identical rows differently).
    func testIdenticalFiltersGiveIdenticalChannels() throws {
        let m = 200, c = 64
        let g = convGraph(filters: m, inChannels: c, w: [Float](repeating: 0.02, count: m * c * 9),
                          bias: [Float](repeating: 0.5, count: m), bn: false)
        let y = try Interpreter(graph: g).run(["x": input(c, seed: 1)])["y"]
        let v = try XCTUnwrap(y?.floats)
        for p in 0..<169 {
            XCTAssertEqual(Set((0..<m).map { v[$0 * 169 + p].bitPattern }).count, 1, "position \(p) (GEMM \(GEMM.backendName))")
        }
    }

    func testDuplicateFiltersStillMatchUnoptimized() throws {
        var rng = SplitMix(seed: 2)
        let m = 6, c = 3
        let distinct = (0..<(2 * c * 9)).map { _ in rng.nextFloat() - 0.5 }
        // Filters 0, 2, 4 equal filter A; 1, 3, 5 filter B.
        var w: [Float] = []
        for o in 0..<m { w += distinct[((o % 2) * c * 9)..<((o % 2 + 1) * c * 9)] }
        let g = convGraph(filters: m, inChannels: c, w: w, bias: [1, 2, 1, 2, 1, 2], bn: false)
        let x = input(c, seed: 3)
        let fast = try Interpreter(graph: g).run(["x": x])["y"]
        let exact = try Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]
        XCTAssertEqual(fast?.shape, [1, 6, 13, 13])
        for (a, b) in zip(fast?.floats ?? [], exact?.floats ?? []) { XCTAssertEqual(a, b, accuracy: 1e-3 * max(1, abs(b))) }
    }

    func testBatchNormFoldingMatchesUnfolded() throws {
        var rng = SplitMix(seed: 4)
        let m = 8, c = 4
        let g = convGraph(filters: m, inChannels: c, w: (0..<(m * c * 9)).map { _ in rng.nextFloat() - 0.5 },
                          bias: (0..<m).map { Float($0) }, bn: true)
        let x = input(c, seed: 5)
        let folded = try Interpreter(graph: g).run(["x": x])["y"]?.floats ?? []
        let exact = try Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]?.floats ?? []
        XCTAssertEqual(folded.count, m * 169)
        let scale = exact.map(abs).max() ?? 1
        for (a, b) in zip(folded, exact) { XCTAssertEqual(a, b, accuracy: 1e-5 * scale) }
    }

    func testConstantSubgraphsAreFoldedAndObserveSeesTheRest() throws {
        // W = ConstantOfShape([2, 2]) of 3; y = x · W.
        let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(2)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                      nodes: [Node(name: "fill", opType: "ConstantOfShape", inputs: ["shape"], outputs: ["W"],
                                   attributes: ["value": .tensor(Tensor([3], shape: [1]))]),
                              Node(name: "mm", opType: "MatMul", inputs: ["x", "W"], outputs: ["y"])],
                      constants: [Constant(name: "shape", tensor: Tensor(ints: [2, 2], shape: [2]))])
        var ran: [String] = []
        let y = try Interpreter(graph: g).run(["x": Tensor([1, 2], shape: [1, 2])]) { n, _ in ran.append(n.name) }
        XCTAssertEqual(y["y"]?.floats, [9, 9])  // [1, 2] · [[3, 3], [3, 3]]
        XCTAssertEqual(ran, ["mm"])
    }
}
