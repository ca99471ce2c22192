#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// CKernels through SIMDKernels / GEMM: every level this CPU has, against double-precision references, and
/// the GEMM property that an element's bits do not depend on the rest of the call.
final class SIMDKernelsTests: XCTestCase {
    let levels = Array(SIMDKernels.portable...SIMDKernels.best)

    /// GEMM.sgemm on Shrinkwrap's kernel (OpenBLAS, the default where present, makes no such promise).
    override func setUp() { GEMM.forcePortable = true }

    override func tearDown() {
        SIMDKernels.level = SIMDKernels.best
        GEMM.forcePortable = false
    }

    func random(_ count: Int, _ rng: inout SplitMix) -> [Float] { (0..<count).map { _ in rng.nextFloat() - 0.5 } }

    /// C = alpha · op(A) · op(B) + beta · C for rows `rows` and columns `cols` only (A, B sliced by pointer).
    func gemm(_ a: [Float], _ b: [Float], m: Int, n: Int, k: Int, ta: Bool, tb: Bool, rows: Range<Int>, cols: Range<Int>,
              threads: Int, beta: Float = 0) -> [Float] {
        var c = [Float](repeating: 0.25, count: rows.count * cols.count)
        let lda = ta ? m : k, ldb = tb ? k : n
        a.withUnsafeBufferPointer { ab in
            b.withUnsafeBufferPointer { bb in
                c.withUnsafeMutableBufferPointer { cb in
                    guard let ap = ab.baseAddress, let bp = bb.baseAddress, let cp = cb.baseAddress else { return }
                    GEMM.sgemm(transA: ta, transB: tb, m: rows.count, n: cols.count, k: k, alpha: beta == 0 ? 1 : 1.5,
                               a: ta ? ap + rows.lowerBound : ap + rows.lowerBound * lda, lda: lda,
                               b: tb ? bp + cols.lowerBound * ldb : bp + cols.lowerBound, ldb: ldb,
                               beta: beta, c: cp, ldc: cols.count, threads: threads)
                }
            }
        }
        return c
    }

    /// The same element computed in calls of different M, N, offsets and thread counts has the same bits
    /// (K = 700 crosses the kernels' K blocking; M = 1 takes the one-row path).
    func testGEMMElementDependsOnlyOnItsRowAndColumn() {
        var rng = SplitMix(seed: 5)
        let m = 37, n = 150, k = 700
        let a = random(m * k, &rng), b = random(k * n, &rng)
        for level in levels {
            SIMDKernels.level = level
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                for beta: Float in [0, 0.5] {
                    let full = gemm(a, b, m: m, n: n, k: k, ta: ta, tb: tb, rows: 0..<m, cols: 0..<n, threads: 1, beta: beta)
                    let two = gemm(a, b, m: m, n: n, k: k, ta: ta, tb: tb, rows: 0..<m, cols: 0..<n, threads: 2, beta: beta)
                    XCTAssertEqual(full.map(\.bitPattern), two.map(\.bitPattern), "1 vs 2 threads, level \(level) \(ta) \(tb)")
                    for (rows, cols) in [(3..<4, 0..<n), (3..<8, 40..<57), (0..<m, 149..<150), (20..<37, 1..<150), (9..<10, 7..<8)] {
                        let part = gemm(a, b, m: m, n: n, k: k, ta: ta, tb: tb, rows: rows, cols: cols, threads: 2, beta: beta)
                        var differ = 0
                        for (pi, i) in rows.enumerated() {
                            for (pj, j) in cols.enumerated() where part[pi * cols.count + pj].bitPattern != full[i * n + j].bitPattern {
                                differ += 1
                            }
                        }
                        XCTAssertEqual(differ, 0, "level \(level) \(ta) \(tb) beta \(beta) rows \(rows) cols \(cols)")
                    }
                }
            }
        }
    }

    /// Every level against a double-precision triple loop, with alpha and beta.
    func testGEMMLevelsMatchDoubleReference() {
        var rng = SplitMix(seed: 11)
        for (m, n, k) in [(1, 1, 1), (3, 5, 7), (17, 33, 65), (1, 1000, 300), (300, 100, 64), (9, 70, 600), (1, 37, 513), (64, 1, 300)] {
            let a = random(m * k, &rng), b = random(k * n, &rng)
            for (ta, tb) in [(false, false), (true, true), (false, true)] {
                var ref = [Double](repeating: 0, count: m * n)
                for i in 0..<m { for j in 0..<n { for p in 0..<k {
                    ref[i * n + j] += Double(ta ? a[p * m + i] : a[i * k + p]) * Double(tb ? b[j * k + p] : b[p * n + j])
                } } }
                for level in levels {
                    SIMDKernels.level = level
                    let c = gemm(a, b, m: m, n: n, k: k, ta: ta, tb: tb, rows: 0..<m, cols: 0..<n, threads: 2, beta: 0.5)
                    let worst = zip(c, ref).map { abs(Double($0) - (1.5 * $1 + 0.125)) }.max() ?? 0
                    XCTAssertLessThan(worst, 2e-6 * Double(k), "level \(level) \(m)×\(n)×\(k) \(ta) \(tb)")
                }
            }
        }
    }

    /// Distance in float ulps (of the reference's binade; subnormal ulp below the normal range).
    func ulps(_ got: Float, _ ref: Double) -> Double {
        if ref.isNaN { return got.isNaN ? 0 : .infinity }
        let rf = Float(ref)
        if rf.isInfinite || got.isInfinite { return rf == got ? 0 : .infinity }
        if ref == 0 { return got == 0 ? 0 : abs(Double(got)) / Double(Float.leastNonzeroMagnitude) }
        let unit = Swift.max(Double(sign: .plus, exponent: ref.exponent - 23, significand: 1), Double(Float.leastNonzeroMagnitude))
        return abs(Double(got) - ref) / unit
    }

    /// Max ulp error over every 4099th float bit pattern (≈ 1M values spanning the whole range, both
    /// signs, subnormals, ±inf and NaNs) plus special values, for each level.
    func testUnaryMathULPBounds() {
        var xs: [Float] = [0, -0, .infinity, -.infinity, .nan, 1e30, -1e30, 88.72, 88.73, -87.5, -103.9, -104.5, 0.55, -0.55, 9, 1e-30]
        var u: UInt64 = 0
        while u < 1 << 32 { xs.append(Float(bitPattern: UInt32(u))); u += 4099 }
        let cases: [(SIMDKernels.Unary, Double, (Double) -> Double)] = [
            (.exp, 2, { exp($0) }), (.tanh, 3, { tanh($0) }), (.sigmoid, 3, { 1 / (1 + exp(-$0)) }),
        ]
        for level in levels {
            for (f, bound, ref) in cases {
                var y = [Float](repeating: 0, count: xs.count)
                xs.withUnsafeBufferPointer { xb in
                    y.withUnsafeMutableBufferPointer { yb in
                        guard let xp = xb.baseAddress, let yp = yb.baseAddress else { return }
                        SIMDKernels.apply(f, xp, yp, count: xs.count, level: level)
                    }
                }
                var worst = 0.0, at: Float = 0
                for (x, v) in zip(xs, y) {
                    let e = ulps(v, ref(Double(x)))
                    if e > worst { worst = e; at = x }
                }
                XCTAssertLessThanOrEqual(worst, bound, "\(f) level \(level): \(worst) ulp at \(at)")
            }
        }
    }

    /// HardSwish / HardSigmoid give the bits of their Swift formulas (rounded multiply and add, clamps) on
    /// every level.
    func testHardActivationsExactOnEveryLevel() {
        var rng = SplitMix(seed: 3)
        let xs = (0..<10000).map { _ in (rng.nextFloat() - 0.5) * 16 } + [0, -0, .infinity, -.infinity, 3, -3]
        let swish = xs.map { $0 * Swift.max(0, Swift.min(1, $0 * (1 / 6 as Float) + 0.5)) }
        let sigmoid = xs.map { Swift.max(0, Swift.min(1, 0.2 * $0 + 0.5)) }
        for level in levels {
            SIMDKernels.level = level
            XCTAssertEqual(SIMDKernels.map(.hardSwish, xs, threads: 2).map(\.bitPattern), swish.map(\.bitPattern), "level \(level)")
            XCTAssertEqual(SIMDKernels.map(.hardSigmoid(alpha: 0.2, beta: 0.5), xs, threads: 2).map(\.bitPattern),
                           sigmoid.map(\.bitPattern), "level \(level)")
        }
    }

    /// Depthwise Conv (3×3 / 5×5, strides 1 and 2, padding, dilation 2) through the interpreter's kernel on
    /// every level against a double-precision loop, and on every level the bits of a float loop that
    /// multiplies then adds, taps in order after the bias.
    func testDepthwiseConvLevels() throws {
        var rng = SplitMix(seed: 8)
        // Sizes: one column block and a partial row block; several column blocks, row blocks and a remainder.
        for (kernel, stride, pad, dilation, h, w) in [(3, 1, 1, 1, 11, 13), (3, 2, 1, 1, 11, 13), (5, 1, 2, 1, 11, 13), (5, 2, 2, 1, 11, 13),
                                                      (3, 1, 2, 2, 11, 13), (3, 2, 0, 1, 11, 13), (3, 1, 1, 1, 19, 37), (5, 2, 2, 1, 22, 41),
                                                      (3, 3, 1, 1, 19, 37), (7, 1, 3, 1, 6, 20)] {
            let ch = 3
            let x = random(ch * h * w, &rng), wt = random(ch * kernel * kernel, &rng), bias = random(ch, &rng)
            let oh = (h + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1, ow = (w + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1
            var refD = [Double](), refF = [Float]()
            for c in 0..<ch { for i in 0..<oh { for j in 0..<ow {
                var d = Double(bias[c]), f = bias[c]
                for a in 0..<kernel { for b in 0..<kernel {
                    let r = i * stride - pad + a * dilation, s = j * stride - pad + b * dilation
                    guard r >= 0, r < h, s >= 0, s < w else { continue }
                    let wv = wt[(c * kernel + a) * kernel + b], xv = x[(c * h + r) * w + s]
                    d += Double(wv) * Double(xv)
                    f = f + wv * xv
                } }
                refD.append(d); refF.append(f)
            } } }
            let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(ch), .fixed(h), .fixed(w)])],
                          outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                          nodes: [Node(name: "dw", opType: "Conv", inputs: ["x", "W", "B"], outputs: ["y"],
                                       attributes: ["group": .int(ch), "strides": .ints([stride, stride]), "pads": .ints([pad, pad, pad, pad]),
                                                    "dilations": .ints([dilation, dilation])])],
                          constants: [Constant(name: "W", tensor: Tensor(wt, shape: [ch, 1, kernel, kernel])),
                                      Constant(name: "B", tensor: Tensor(bias, shape: [ch]))])
            for level in levels {
                SIMDKernels.level = level
                let y = try Interpreter(graph: g, options: .init(threads: 2)).run(["x": Tensor(x, shape: [1, ch, h, w])])["y"]?.floats ?? []
                XCTAssertEqual(y.count, refD.count, "k\(kernel) s\(stride) p\(pad) d\(dilation)")
                let worst = zip(y, refD).map { abs(Double($0) - $1) }.max() ?? 1
                XCTAssertLessThan(worst, 1e-5, "level \(level) k\(kernel) s\(stride) p\(pad) d\(dilation)")
                XCTAssertEqual(y.map(\.bitPattern), refF.map(\.bitPattern), "level \(level) k\(kernel) s\(stride) p\(pad) d\(dilation)")
            }
        }
    }

    func testLevelNames() {
        XCTAssertEqual(SIMDKernels.name(SIMDKernels.portable), "portable")
        XCTAssertTrue(GEMM.backendName.hasSuffix(SIMDKernels.name(SIMDKernels.level)))
        // A level above what the CPU has is capped.
        XCTAssertEqual(SIMDKernels.name(SIMDKernels.avx512), SIMDKernels.name(SIMDKernels.best))
    }
}
