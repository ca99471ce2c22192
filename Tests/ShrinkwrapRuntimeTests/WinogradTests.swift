@testable import ShrinkwrapRuntime
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

/// The Winograd Conv path (`useWinogradFilters`, `winogradConv`): against a float64 direct
/// convolution, with the planner's epilogue fusions, bit-identical for any thread count, SIMD level
/// and batch size. At the AVX-512 level the planner gives 2-D Convs the direct kernel instead
/// (`useDirectFilters`, DirectConvTests), so these tests plan and run below it, where 2-D Winograd runs.
final class WinogradTests: XCTestCase {
    override func setUp() { SIMDKernels.level = min(SIMDKernels.best, SIMDKernels.avx2) }
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    /// F(m, r) of each axis reproduces an r-tap correlation of α inputs (float64 transforms).
    func testAxisTransformsComputeTheCorrelation() throws {
        var rng = SplitMix(seed: 11)
        for r in [3, 5, 7] {
            let a = try XCTUnwrap(WinogradAxis.forKernel(r))
            XCTAssertEqual(a.alpha, a.m + r - 1)
            let g = (0..<r).map { _ in Double(rng.nextFloat()) - 0.5 }
            let d = (0..<a.alpha).map { _ in Double(rng.nextFloat()) - 0.5 }
            let u = (0..<a.alpha).map { j in (0..<r).reduce(0.0) { $0 + a.g[j * r + $1] * g[$1] } }
            let v = (0..<a.alpha).map { j in (0..<a.alpha).reduce(0.0) { $0 + Double(a.bt[j * a.alpha + $1]) * d[$1] } }
            for i in 0..<a.m {
                let y = (0..<a.alpha).reduce(0.0) { $0 + Double(a.at[i * a.alpha + $1]) * u[$1] * v[$1] }
                let direct = (0..<r).reduce(0.0) { $0 + g[$1] * d[i + $1] }
                XCTAssertEqual(y, direct, accuracy: 1e-12, "F(\(a.m), \(r)) output \(i)")
            }
        }
    }

    struct Case: CustomStringConvertible {
        let name: String
        let kernel: [Int]      // spatial kernel (1 value: a rank-3 1-D Conv)
        let spatial: [Int]     // input spatial shape
        let pads: [Int]
        var c = 64, m = 72, batch = 1
        var description: String { name }
    }

    /// Each big enough for the kernel to take the Winograd path (≥ 32 tiles per block: checked below;
    /// 1-D kernels from 128 channels each way, 2-D ones from 64).
    static let cases = [
        Case(name: "1-D rank 3, 5 taps", kernel: [5], spatial: [150], pads: [2, 2], c: 128, m: 136),
        Case(name: "1-D rank 3, 3 taps, no pad", kernel: [3], spatial: [140], pads: [0, 0], c: 128, m: 136),
        Case(name: "1-D rank 3, 7 taps, uneven pad", kernel: [7], spatial: [80], pads: [1, 4], c: 128, m: 136),
        Case(name: "[5, 1] one column", kernel: [5, 1], spatial: [150, 1], pads: [0, 0, 0, 0], c: 128, m: 136),
        Case(name: "[3, 1] on a plane", kernel: [3, 1], spatial: [14, 9], pads: [1, 0, 1, 0], c: 128, m: 136),
        Case(name: "[1, 7] on a plane", kernel: [1, 7], spatial: [5, 26], pads: [0, 3, 0, 3], c: 128, m: 136),
        Case(name: "3x3 padded", kernel: [3, 3], spatial: [23, 21], pads: [1, 1, 1, 1]),
        Case(name: "3x3 valid, many tiles", kernel: [3, 3], spatial: [40, 38], pads: [0, 0, 0, 0], c: 70, m: 130),
        Case(name: "3x3 big pads", kernel: [3, 3], spatial: [20, 19], pads: [3, 0, 2, 4]),
        Case(name: "3x3 batch 3", kernel: [3, 3], spatial: [22, 24], pads: [1, 1, 1, 1], batch: 3),
    ]

    /// The case's window geometry, as the Conv kernel derives it.
    func geometry(_ t: Case) -> WindowGeometry {
        let r = t.kernel.count
        let out = (0..<r).map { t.spatial[$0] + t.pads[$0] + t.pads[r + $0] - t.kernel[$0] + 1 }
        return WindowGeometry(rank: r, input: WindowGeometry.promote(t.spatial, fill: 1),
                              kernel: WindowGeometry.promote(t.kernel, fill: 1), strides: [1, 1, 1], dilations: [1, 1, 1],
                              padBegin: WindowGeometry.promote(Array(t.pads[..<r]), fill: 0),
                              padEnd: WindowGeometry.promote(Array(t.pads[r...]), fill: 0),
                              output: WindowGeometry.promote(out, fill: 1))
    }

    func graph(_ t: Case, seed: UInt64, bias: Bool = true, extra: [Node] = [], output: String = "y") -> Graph {
        var rng = SplitMix(seed: seed)
        let count = t.m * t.c * t.kernel.reduce(1, *)
        let w = (0..<count).map { _ in rng.nextFloat() - 0.5 }
        var consts = [Constant(name: "W", tensor: Tensor(w, shape: [t.m, t.c] + t.kernel))]
        if bias { consts.append(Constant(name: "B", tensor: Tensor((0..<t.m).map { Float($0) / 8 - 1 }, shape: [t.m]))) }
        let conv = Node(name: "conv", opType: "Conv", inputs: ["x", "W"] + (bias ? ["B"] : []), outputs: ["y"],
                        attributes: ["pads": .ints(t.pads)])
        let dims = ([t.batch, t.c] + t.spatial).map(Dim.fixed)
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: dims)],
                     outputs: [ValueInfo(name: output, dtype: .float32, shape: nil)], nodes: [conv] + extra, constants: consts)
    }

    func input(_ t: Case, seed: UInt64) -> Tensor {
        var rng = SplitMix(seed: seed)
        let shape = [t.batch, t.c] + t.spatial
        return Tensor((0..<shape.reduce(1, *)).map { _ in rng.nextFloat() * 4 - 2 }, shape: shape)
    }

    /// A float64 direct convolution of the case's graph (weights and bias as stored).
    func reference(_ g: Graph, _ t: Case, _ x: Tensor) throws -> [Double] {
        let w = try XCTUnwrap(g.constant(named: "W")?.encoding.decoded().floats)
        let b = g.constant(named: "B")?.encoding.decoded().floats
        let xs = try XCTUnwrap(x.floats)
        let k = t.kernel.count == 1 ? [1] + t.kernel : t.kernel
        let s = t.spatial.count == 1 ? [1] + t.spatial : t.spatial
        let p = t.pads.count == 2 ? [0, t.pads[0], 0, t.pads[1]] : t.pads
        let oh = s[0] + p[0] + p[2] - k[0] + 1, ow = s[1] + p[1] + p[3] - k[1] + 1
        var y = [Double](repeating: 0, count: t.batch * t.m * oh * ow)
        for n in 0..<t.batch {
            for o in 0..<t.m {
                for i in 0..<oh {
                    for j in 0..<ow {
                        var acc = Double(b?[o] ?? 0)
                        for c in 0..<t.c {
                            for u in 0..<k[0] {
                                let ih = i + u - p[0]
                                if ih < 0 || ih >= s[0] { continue }
                                for v in 0..<k[1] {
                                    let iw = j + v - p[1]
                                    if iw < 0 || iw >= s[1] { continue }
                                    acc += Double(w[((o * t.c + c) * k[0] + u) * k[1] + v]) * Double(xs[((n * t.c + c) * s[0] + ih) * s[1] + iw])
                                }
                            }
                        }
                        y[((n * t.m + o) * oh + i) * ow + j] = acc
                    }
                }
            }
        }
        return y
    }

    func testPlannerGivesTheConvsWinogradFilters() throws {
        for t in Self.cases {
            var planner = ExecutionPlanner(graph: graph(t, seed: 1), threads: 1)
            try planner.run(optimize: true)
            let conv = try XCTUnwrap(planner.graph.nodes.first { $0.opType == "Conv" }, "\(t)")
            XCTAssertNotNil(conv.attributes[NNKernels.winogradAttribute], "\(t)")
            XCTAssertEqual(conv.inputs.count, 5, "\(t)")
            let u = try XCTUnwrap(planner.graph.constant(named: conv.inputs[4])?.encoding.shape)
            let plan = try XCTUnwrap(WinogradPlan(geo: geometry(t), channels: t.c, filters: t.m, filterShape: u), "\(t)")
            XCTAssertTrue(plan.pays, "\(t): the kernel would take another path")
        }
        // Not: strided, grouped, too few channels (64 ... 127 along one axis: oww-embedding's 72-channel
        // [3, 1] / [1, 3] convs), 5 × 5.
        var strided = graph(Self.cases[6], seed: 1)
        strided.nodes[0].attributes["strides"] = .ints([2, 2])
        var few = Self.cases[6]
        few.c = 48
        var fewAlongOneAxis = Self.cases[4]
        (fewAlongOneAxis.c, fewAlongOneAxis.m) = (72, 72)
        let square5 = Case(name: "5x5", kernel: [5, 5], spatial: [12, 12], pads: [2, 2, 2, 2])
        for g in [strided, graph(few, seed: 1), graph(fewAlongOneAxis, seed: 1), graph(square5, seed: 1)] {
            var planner = ExecutionPlanner(graph: g, threads: 1)
            try planner.run(optimize: true)
            XCTAssertNil(planner.graph.nodes.first { $0.opType == "Conv" }?.attributes[NNKernels.winogradAttribute])
        }
    }

    /// Within a few float32 ulps of the sums of a float64 direct convolution, and at most 16 times
    /// as far from it as the direct (unoptimized) path.
    func testMatchesADirectConvolution() throws {
        for (k, t) in Self.cases.enumerated() {
            let g = graph(t, seed: UInt64(10 + k))
            let x = input(t, seed: UInt64(20 + k))
            let want = try reference(g, t, x)
            let fast = try XCTUnwrap(Interpreter(graph: g).run(["x": x])["y"]?.floats, "\(t)")
            let direct = try XCTUnwrap(Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]?.floats)
            XCTAssertEqual(fast.count, want.count, "\(t)")
            let scale = want.map(abs).max() ?? 1
            let errFast = zip(fast, want).map { abs(Double($0) - $1) }.max() ?? 0
            let errDirect = zip(direct, want).map { abs(Double($0) - $1) }.max() ?? 0
            // F(4×4, 3×3) rounds 6–11 times as much as the direct sum (measured 2.3–4.2e-6 of the
            // scale against 3.4–4.0e-7); the 1-D transforms less.
            let bound = t.kernel.filter { $0 > 1 }.count == 2 ? 1e-5 : 2e-6
            XCTAssertLessThan(errFast / scale, bound, "\(t): Winograd error \(errFast), direct \(errDirect), scale \(scale)")
            XCTAssertLessThan(errFast, 16 * errDirect + 1e-6 * scale, "\(t)")
        }
    }

    /// Bias, residual Add and Relu fused into a Winograd Conv give what the Conv alone (Winograd too)
    /// followed by the separate Add and Relu kernels gives, bit for bit.
    func testEpilogueFusionsKeepTheBits() throws {
        let t = Self.cases[6]
        let extra = [Node(name: "add", opType: "Add", inputs: ["y", "r"], outputs: ["s"]),
                     Node(name: "relu", opType: "Relu", inputs: ["s"], outputs: ["z"])]
        var g = graph(t, seed: 3, extra: extra, output: "z")
        let x = input(t, seed: 4)
        let outShape = [1, t.m, 23, 21]
        var rng = SplitMix(seed: 5)
        let r = Tensor((0..<outShape.reduce(1, *)).map { _ in rng.nextFloat() - 0.5 }, shape: outShape)
        g.inputs.append(ValueInfo(name: "r", dtype: .float32, shape: outShape.map(Dim.fixed)))
        let fused = try XCTUnwrap(Interpreter(graph: g).run(["x": x, "r": r])["z"]?.floats)
        // The Conv alone through the planner (Winograd), then the two kernels.
        let conv = try XCTUnwrap(Interpreter(graph: graph(t, seed: 3)).run(["x": x])["y"])
        let add = try ElementwiseKernels.add(KernelContext(node: extra[0], inputs: [conv, r]))[0]
        let relu = try XCTUnwrap(KernelRegistry.kernels["Relu"])(KernelContext(node: extra[1], inputs: [add]))[0]
        XCTAssertEqual(fused.map(\.bitPattern), relu.floats?.map(\.bitPattern))
    }

    /// 1, 2 and 3 threads, every SIMD level, and a batch against its items one at a time: the same bits.
    func testSameBitsForAnyThreadCountLevelAndBatch() throws {
        let saved = SIMDKernels.level
        defer { SIMDKernels.level = saved }
        for (k, t) in Self.cases.enumerated() {
            let g = graph(t, seed: UInt64(30 + k))
            let x = input(t, seed: UInt64(40 + k))
            var runs: [[UInt32]] = []
            for threads in [1, 2, 3] {
                // AVX-512 plans 2-D Convs for the direct kernel: only 1-D ones stay Winograd there.
                let top = t.kernel.filter { $0 > 1 }.count == 2 ? SIMDKernels.avx2 : SIMDKernels.avx512
                for level in [SIMDKernels.portable, SIMDKernels.avx2, SIMDKernels.avx512] where level <= min(SIMDKernels.best, top) {
                    SIMDKernels.level = level
                    let y = try Interpreter(graph: g, options: .init(threads: threads)).run(["x": x])["y"]
                    runs.append(y?.floats?.map(\.bitPattern) ?? [])
                }
            }
            SIMDKernels.level = saved
            XCTAssertTrue(runs.allSatisfy { $0 == runs[0] }, "\(t)")
            guard t.batch > 1, let xs = x.floats else { continue }
            var one = t
            one.batch = 1
            let per = xs.count / t.batch
            var items: [UInt32] = []
            for n in 0..<t.batch {
                let xi = Tensor(Array(xs[(n * per)..<((n + 1) * per)]), shape: [1, t.c] + t.spatial)
                items += try Interpreter(graph: graph(one, seed: UInt64(30 + k))).run(["x": xi])["y"]?.floats?.map(\.bitPattern) ?? []
            }
            XCTAssertEqual(items, runs[0], "\(t): batch against items")
        }
    }
}
