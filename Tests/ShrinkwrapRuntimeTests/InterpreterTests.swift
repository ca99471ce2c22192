import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

final class InterpreterTests: XCTestCase {
    func mlp() -> Graph {
        // y = Relu(x · W + b), W 2×3.
        Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("N"), .fixed(2)])],
              outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
              nodes: [Node(name: "mm", opType: "MatMul", inputs: ["x", "W"], outputs: ["xw"]),
                      Node(name: "add", opType: "Add", inputs: ["xw", "b"], outputs: ["z"]),
                      Node(name: "relu", opType: "Relu", inputs: ["z"], outputs: ["y"])],
              constants: [Constant(name: "W", tensor: Tensor([1, -1, 2, 0.5, 1, -2], shape: [2, 3])),
                          Constant(name: "b", tensor: Tensor([0, 0.5, 1], shape: [3]))])
    }

    func testRunsAndObservesEveryNode() throws {
        let interp = try Interpreter(graph: mlp())
        var seen: [String] = []
        let out = try interp.run(["x": Tensor([1, 2, 0, 0], shape: [2, 2])]) { node, _ in seen.append(node.name) }
        // Row 1: [2, 1, −2] + b = [2, 1.5, −1] → [2, 1.5, 0]; row 2: b → [0, 0.5, 1].
        XCTAssertEqual(out["y"], Tensor([2, 1.5, 0, 0, 0.5, 1], shape: [2, 3]))
        XCTAssertEqual(seen, ["mm", "add", "relu"])
    }

    func testInputChecks() throws {
        let interp = try Interpreter(graph: mlp())
        XCTAssertThrowsError(try interp.run([:])) {
            XCTAssertEqual($0 as? KernelError, .badGraphInput(name: "x", reason: "no value given"))
        }
        XCTAssertThrowsError(try interp.run(["x": Tensor([1, 2, 3], shape: [1, 3])])) {
            XCTAssertTrue("\($0)".contains("expected shape [N, 2]"), "\($0)")
        }
        XCTAssertThrowsError(try interp.run(["x": Tensor(ints: [1, 2], shape: [1, 2])])) {
            XCTAssertTrue("\($0)".contains("expected dtype float32"), "\($0)")
        }
    }

    func testMissingKernelsAreListedTogether() {
        var g = mlp()
        g.nodes.append(Node(name: "a", opType: "NoSuchOpB", inputs: ["y"], outputs: ["p"]))
        g.nodes.append(Node(name: "b", opType: "NoSuchOpA", inputs: ["p"], outputs: ["q"]))
        XCTAssertThrowsError(try Interpreter(graph: g)) {
            XCTAssertEqual($0 as? KernelError, .noKernel(op: "NoSuchOpA, NoSuchOpB"))
        }
    }

    func testKernelErrorsNameTheNode() throws {
        var g = mlp()
        g.setConstant(Constant(name: "W", tensor: Tensor([1, 2, 3], shape: [3, 1])))
        XCTAssertThrowsError(try Interpreter(graph: g).run(["x": Tensor([1, 2], shape: [1, 2])])) {
            XCTAssertTrue("\($0)".hasPrefix("node 'mm' (MatMul)"), "\($0)")
        }
    }

    /// Same graph, 1 vs 2 threads, large enough to split work: bit-identical.
    func testThreadCountDoesNotChangeResults() throws {
        var rng = SplitMix(seed: 3)
        let n = 64, k = 96, m = 600  // 600 output columns: GEMM splits into column tiles
        let w = (0..<(k * m)).map { _ in rng.nextFloat() - 0.5 }
        var g = mlp()
        g.setConstant(Constant(name: "W", tensor: Tensor(w, shape: [k, m])))
        g.setConstant(Constant(name: "b", tensor: Tensor((0..<m).map { Float($0) / 100 }, shape: [m])))
        g.inputs[0].shape = [.fixed(n), .fixed(k)]
        let x = Tensor((0..<(n * k)).map { _ in rng.nextFloat() }, shape: [n, k])
        let one = try Interpreter(graph: g, options: .init(threads: 1)).run(["x": x])
        let two = try Interpreter(graph: g, options: .init(threads: 2)).run(["x": x])
        let a = one["y"]?.floats ?? [], b = two["y"]?.floats ?? []
        XCTAssertEqual(a.count, n * m)
        let differing = zip(a, b).filter { $0.bitPattern != $1.bitPattern }.count
        XCTAssertEqual(differing, 0, "\(differing) of \(a.count) elements differ between 1 and 2 threads (GEMM: \(GEMM.backendName))")
    }

    func testPortableGEMMMatchesBackend() throws {
        var rng = SplitMix(seed: 9)
        for (m, n, k) in [(1, 1, 1), (3, 5, 7), (17, 33, 65), (64, 1, 300)] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = (0..<(m * k)).map { _ in rng.nextFloat() - 0.5 }
                let b = (0..<(k * n)).map { _ in rng.nextFloat() - 0.5 }
                var c1 = [Float](repeating: 1, count: m * n), c2 = c1
                // Reference: double-precision triple loop.
                var ref = [Double](repeating: 0, count: m * n)
                for i in 0..<m { for j in 0..<n { for p in 0..<k {
                    let av = ta ? a[p * m + i] : a[i * k + p]
                    let bv = tb ? b[j * k + p] : b[p * n + j]
                    ref[i * n + j] += Double(av) * Double(bv)
                } } }
                GEMM.sgemm(transA: ta, transB: tb, m: m, n: n, k: k, alpha: 2, a: a, lda: ta ? m : k, b: b, ldb: tb ? k : n,
                           beta: 0.5, c: &c1, ldc: n, threads: 2)
                GEMM.forcePortable = true
                GEMM.sgemm(transA: ta, transB: tb, m: m, n: n, k: k, alpha: 2, a: a, lda: ta ? m : k, b: b, ldb: tb ? k : n,
                           beta: 0.5, c: &c2, ldc: n, threads: 2)
                GEMM.forcePortable = false
                for i in 0..<(m * n) {
                    let want = 2 * ref[i] + 0.5
                    XCTAssertEqual(Double(c1[i]), want, accuracy: 1e-4 * Double(k), "\(GEMM.backendName) \(m)×\(n)×\(k) \(ta) \(tb)")
                    XCTAssertEqual(Double(c2[i]), want, accuracy: 1e-4 * Double(k), "portable \(m)×\(n)×\(k) \(ta) \(tb)")
                }
            }
        }
    }
}

