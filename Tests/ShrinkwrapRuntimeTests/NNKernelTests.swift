import XCTest
import Foundation
@testable import ShrinkwrapRuntime
import ShrinkwrapIR

/// Neural-network kernels (Conv, ConvTranspose, pools, Gemm, MatMul,
/// normalizations, LRN, Resize, DepthToSpace, SpaceToDepth): small
/// hand-computed cases, edge cases and errors, plus randomized comparisons
/// against naive reference loops written here.
final class NNKernelTests: XCTestCase {
    // MARK: helpers

    func run(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:], outputs: Int = 1,
             threads: Int = 1) throws -> [Tensor] {
        guard let k = KernelRegistry.kernels[op] else { throw KernelError.noKernel(op: op) }
        let node = Node(name: "n", opType: op, inputs: inputs.indices.map { inputs[$0] == nil ? "" : "i\($0)" },
                        outputs: (0..<outputs).map { "o\($0)" }, attributes: attrs)
        return try k(KernelContext(node: node, inputs: inputs, threads: threads))
    }

    func run1(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:], threads: Int = 1) throws -> Tensor {
        try run(op, inputs, attrs, threads: threads)[0]
    }

    func t(_ v: [Float], _ shape: [Int]) -> Tensor { Tensor(v, shape: shape) }

    func assertClose(_ got: Tensor, _ want: [Float], shape: [Int], tol: Float = 1e-5,
                     file: StaticString = #filePath, line: UInt = #line) {
        assertTensorClose(got, want, shape: shape, tol: tol, file: file, line: line)
    }

    func assertThrows(_ body: @autoclosure () throws -> Any, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) { e in
            XCTAssertTrue(e is KernelError, "expected KernelError, got \(e)", file: file, line: line)
        }
    }

    /// Deterministic pseudo-random floats in [-1, 1).
    func random(_ n: Int, seed: UInt64) -> [Float] {
        var s = seed &* 6364136223846793005 &+ 1442695040888963407
        return (0..<n).map { _ in
            s = s &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: s >> 11) % 2_000_000) / 1_000_000 - 1
        }
    }

    // MARK: Conv

    func testConvBasic() throws {
        // X = 0…8 as 3×3, W = 2×2 ones, no padding: each output sums a 2×2 window.
        // (0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8) = (8, 12, 20, 24)
        let x = t((0..<9).map(Float.init), [1, 1, 3, 3])
        let w = t([1, 1, 1, 1], [1, 1, 2, 2])
        assertClose(try run1("Conv", [x, w]), [8, 12, 20, 24], shape: [1, 1, 2, 2])
    }

    func testConvPadsStridesBias() throws {
        // Pads 1, stride 2, bias 1: windows start at rows/cols −1 and 1.
        // (0,0): only x00 = 0 → 1; (0,1): x01 + x02 = 3 → 4; (1,0): x10 + x20 = 9 → 10;
        // (1,1): 4+5+7+8 = 24 → 25.
        let x = t((0..<9).map(Float.init), [1, 1, 3, 3])
        let w = t([1, 1, 1, 1], [1, 1, 2, 2])
        let b = t([1], [1])
        let y = try run1("Conv", [x, w, b], ["pads": .ints([1, 1, 1, 1]), "strides": .ints([2, 2])])
        assertClose(y, [1, 4, 10, 25], shape: [1, 1, 2, 2])
    }

    func testConv1DDilationAndAutoPad() throws {
        // Dilation 2 on [1,2,3,4,5] with W = [1,1]: taps i and i+2 → [4, 6, 8].
        let x = t([1, 2, 3, 4, 5], [1, 1, 5])
        let y = try run1("Conv", [x, t([1, 1], [1, 1, 2])], ["dilations": .ints([2])])
        assertClose(y, [4, 6, 8], shape: [1, 1, 3])

        // X = [1,2,3,4], k = 3 ones, stride 2: out = ceil(4/2) = 2, total pad 1.
        // SAME_UPPER pads the end: windows [1,2,3] = 6, [3,4,0] = 7.
        // SAME_LOWER pads the start: windows [0,1,2] = 3, [2,3,4] = 9.
        let x4 = t([1, 2, 3, 4], [1, 1, 4]), w3 = t([1, 1, 1], [1, 1, 3])
        assertClose(try run1("Conv", [x4, w3], ["auto_pad": .string("SAME_UPPER"), "strides": .ints([2])]),
                    [6, 7], shape: [1, 1, 2])
        assertClose(try run1("Conv", [x4, w3], ["auto_pad": .string("SAME_LOWER"), "strides": .ints([2])]),
                    [3, 9], shape: [1, 1, 2])
        // VALID: no padding, (4 − 3)/2 + 1 = 1 output: 1+2+3 = 6.
        assertClose(try run1("Conv", [x4, w3], ["auto_pad": .string("VALID"), "strides": .ints([2])]),
                    [6], shape: [1, 1, 1])
    }

    /// Convs with one output column (a 1-D conv written as [k, 1] over a width-1 input, or a kernel as
    /// wide as the input) over enough rows to run in bands: the bands' strided column unfold against a
    /// naive loop, with strides, dilations and pads reaching past both ends.
    func testBandedConvWithOneOutputColumn() throws {
        // (≥ 2048 outputs: smaller convs unfold whole and tile the GEMM instead of running bands.)
        for (h, w, k1, k2, s1, d1, p1, p2) in [(2100, 1, 5, 1, 1, 1, 2, 0), (4200, 1, 3, 1, 2, 2, 3, 0), (2100, 3, 4, 3, 1, 1, 1, 0),
                                               (2100, 1, 3, 3, 1, 1, 0, 1)] {
            let c = 3, m = 4
            let x = random(c * h * w, seed: UInt64(h)), wt = random(m * c * k1 * k2, seed: UInt64(h + 1)), b = random(m, seed: 9)
            let oh = (h + 2 * p1 - d1 * (k1 - 1) - 1) / s1 + 1, ow = (w + 2 * p2 - (k2 - 1) - 1) + 1
            XCTAssertEqual(ow, 1)
            var want = [Float]()
            for f in 0..<m { for i in 0..<oh {
                var acc = Double(b[f])
                for ci in 0..<c { for a in 0..<k1 { for q in 0..<k2 {
                    let r = i * s1 - p1 + a * d1, col = q - p2
                    if r >= 0 && r < h && col >= 0 && col < w {
                        acc += Double(wt[((f * c + ci) * k1 + a) * k2 + q]) * Double(x[(ci * h + r) * w + col])
                    }
                } } }
                want.append(Float(acc))
            } }
            for threads in [1, 3] {
                let y = try run1("Conv", [t(x, [1, c, h, w]), t(wt, [m, c, k1, k2]), t(b, [m])],
                                 ["strides": .ints([s1, 1]), "dilations": .ints([d1, 1]), "pads": .ints([p1, p2, p1, p2])],
                                 threads: threads)
                assertClose(y, want, shape: [1, m, oh, 1], tol: 1e-4)
            }
        }
    }

    func testConv3D() throws {
        // 2×2×2 input 1…8 and a 2×2×2 kernel of ones: 36.
        let y = try run1("Conv", [t((1...8).map(Float.init), [1, 1, 2, 2, 2]), t([Float](repeating: 1, count: 8), [1, 1, 2, 2, 2])])
        assertClose(y, [36], shape: [1, 1, 1, 1, 1])
    }

    func testConvGroupsAndDepthwise() throws {
        // Grouped 1×1 conv (group 2, 4 in / 4 out): x = [1,2,3,4].
        // Group 0 sees (1,2): [1,1]·→3, [1,−1]·→−1; group 1 sees (3,4): [2,0]→6, [0,3]→12.
        let x = t([1, 2, 3, 4], [1, 4, 1, 1])
        let w = t([1, 1, 1, -1, 2, 0, 0, 3], [4, 2, 1, 1])
        assertClose(try run1("Conv", [x, w], ["group": .int(2)]), [3, -1, 6, 12], shape: [1, 4, 1, 1])

        // Depthwise with channel multiplier 2 (1-D): ch0 = [1,2,3], ch1 = [4,5,6],
        // filters m0 = [1,1], m1 = [1,−1] on ch0, m2 = [2,0], m3 = [0,1] on ch1, bias [0, 0, 0, 10].
        // m0 → [3,5]; m1 → [−1,−1]; m2 → [8,10]; m3 → [5,6] + 10 = [15,16].
        let xd = t([1, 2, 3, 4, 5, 6], [1, 2, 3])
        let wd = t([1, 1, 1, -1, 2, 0, 0, 1], [4, 1, 2])
        let y = try run1("Conv", [xd, wd, t([0, 0, 0, 10], [4])], ["group": .int(2)])
        assertClose(y, [3, 5, -1, -1, 8, 10, 15, 16], shape: [1, 4, 2])
    }

    /// Direct 2-D convolution used as the reference for randomized checks.
    func naiveConv(x: [Float], xs: [Int], w: [Float], ws: [Int], b: [Float]?, group: Int,
                   strides: [Int], pads: [Int], dil: [Int]) -> ([Float], [Int]) {
        let (n, c, h, wd) = (xs[0], xs[1], xs[2], xs[3])
        let (m, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3])
        let oh = (h + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / strides[0] + 1
        let ow = (wd + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / strides[1] + 1
        var y = [Float](repeating: 0, count: n * m * oh * ow)
        let mg = m / group
        for bi in 0..<n { for oc in 0..<m {
            let g = oc / mg
            for i in 0..<oh { for j in 0..<ow {
                var s: Float = b?[oc] ?? 0
                for ci in 0..<cg { for a in 0..<kh { for bb in 0..<kw {
                    let ih = i * strides[0] - pads[0] + a * dil[0], iw = j * strides[1] - pads[1] + bb * dil[1]
                    if ih < 0 || ih >= h || iw < 0 || iw >= wd { continue }
                    s += x[((bi * c + g * cg + ci) * h + ih) * wd + iw] * w[((oc * cg + ci) * kh + a) * kw + bb]
                } } }
                y[((bi * m + oc) * oh + i) * ow + j] = s
            } }
        } }
        _ = c
        return (y, [n, m, oh, ow])
    }

    func testConvMatchesNaiveReference() throws {
        // (N, C, H, W, M, k, group, strides, pads, dilations)
        let configs: [(Int, Int, Int, Int, Int, Int, Int, [Int], [Int], [Int])] = [
            (1, 3, 7, 6, 4, 3, 1, [1, 1], [1, 1, 1, 1], [1, 1]),
            (2, 4, 8, 8, 6, 3, 2, [2, 1], [0, 1, 2, 1], [1, 2]),
            (1, 6, 9, 7, 6, 3, 6, [2, 2], [1, 1, 1, 1], [1, 1]),      // depthwise
            (1, 4, 6, 6, 8, 5, 4, [1, 1], [2, 2, 2, 2], [1, 1]),      // depthwise ×2
            (2, 8, 5, 5, 4, 1, 1, [1, 1], [0, 0, 0, 0], [1, 1]),      // pointwise fast path
            (1, 8, 6, 6, 4, 1, 2, [2, 2], [0, 0, 0, 0], [1, 1]),      // strided 1×1
            (1, 3, 10, 10, 2, 4, 1, [3, 2], [1, 2, 0, 3], [2, 1]),
            // Outputs big enough for the banded path (≥ 2048: several bands of output rows).
            (1, 5, 230, 9, 7, 3, 1, [1, 1], [1, 1, 1, 1], [1, 1]),
            (2, 6, 460, 12, 4, 3, 2, [2, 1], [1, 0, 2, 1], [1, 2]),
            (1, 8, 64, 40, 6, 1, 1, [1, 1], [0, 0, 0, 0], [1, 1]),      // banded pointwise
        ]
        for (i, cfg) in configs.enumerated() {
            let (n, c, h, w, m, k, g, s, p, d) = cfg
            let xs = [n, c, h, w], ws = [m, c / g, k, k]
            let x = random(xs.reduce(1, *), seed: UInt64(i)), wv = random(ws.reduce(1, *), seed: UInt64(100 + i))
            let b = random(m, seed: UInt64(200 + i))
            let (ref, shape) = naiveConv(x: x, xs: xs, w: wv, ws: ws, b: b, group: g, strides: s, pads: p, dil: d)
            let attrs: [String: Attribute] = ["group": .int(g), "strides": .ints(s), "pads": .ints(p), "dilations": .ints(d)]
            let y = try run1("Conv", [t(x, xs), t(wv, ws), t(b, [m])], attrs, threads: 3)
            assertClose(y, ref, shape: shape, tol: 1e-4)
        }
    }

    func testConvDeterministicAcrossThreads() throws {
        // 60×40 outputs: several bands; 20×20 with 48 filters: one im2col, the GEMM in tiles.
        for (xs, ws) in [([1, 16, 60, 40], [32, 16, 3, 3]), ([1, 40, 20, 20], [48, 40, 3, 3])] {
            let x = t(random(xs.reduce(1, *), seed: 7), xs), w = t(random(ws.reduce(1, *), seed: 8), ws)
            let attrs: [String: Attribute] = ["pads": .ints([1, 1, 1, 1])]
            let a = try run1("Conv", [x, w], attrs, threads: 1)
            for th in [2, 3, 4] { XCTAssertEqual(try run1("Conv", [x, w], attrs, threads: th), a, "\(xs) threads \(th)") }
        }
    }

    func testConvFloat16AndEmpty() throws {
        // 1/3 is rounded to the nearest binary16 value in a float16 result.
        let x = Tensor(dtype: .float16, shape: [1, 1, 1], storage: .float([1]))
        let w = Tensor(dtype: .float16, shape: [1, 1, 1], storage: .float([1]))
        let b = Tensor(dtype: .float16, shape: [1], storage: .float([1.0 / 3]))
        let y = try run1("Conv", [x, w, b])
        XCTAssertEqual(y.dtype, .float16)
        XCTAssertEqual(y.floats, [Half.round(1 + 1.0 / 3)])
        // Empty batch → empty output of the right shape.
        let e = try run1("Conv", [t([], [0, 2, 4, 4]), t(random(3 * 2 * 9, seed: 1), [3, 2, 3, 3])])
        XCTAssertEqual(e.shape, [0, 3, 2, 2])
    }

    func testConvErrors() {
        let x = t(random(2 * 9, seed: 1), [1, 2, 3, 3])
        assertThrows(try self.run("Conv", [x, self.t(random(9, seed: 2), [1, 1, 3, 3])]))              // C mismatch
        assertThrows(try self.run("Conv", [x, self.t(random(18, seed: 2), [1, 2, 3, 3])], ["group": .int(0)]))
        assertThrows(try self.run("Conv", [x, self.t(random(18, seed: 2), [1, 2, 3, 3])], ["group": .int(3)]))
        assertThrows(try self.run("Conv", [x, self.t(random(2 * 16, seed: 2), [1, 2, 4, 4])]))         // kernel > input
        assertThrows(try self.run("Conv", [x, self.t(random(18, seed: 2), [1, 2, 3, 3])], ["pads": .ints([1, 1])]))
        assertThrows(try self.run("Conv", [x, self.t(random(18, seed: 2), [1, 2, 3, 3])], ["strides": .ints([0, 1])]))
        assertThrows(try self.run("Conv", [x, self.t(random(18, seed: 2), [1, 2, 3, 3])], ["kernel_shape": .ints([2, 2])]))
        assertThrows(try self.run("Conv", [x, self.t(random(18, seed: 2), [1, 2, 3, 3])], ["auto_pad": .string("SAME")]))
        assertThrows(try self.run("Conv", [x, self.t(random(18, seed: 2), [1, 2, 3, 3]), self.t([1, 2], [2])]))  // bias size
        assertThrows(try self.run("Conv", [x, Tensor(ints: [1], shape: [1, 1, 1, 1])]))                  // int weights
        assertThrows(try self.run("Conv", [self.t([1], [1, 1, 1, 1, 1, 1]), self.t([1], [1, 1, 1, 1, 1, 1])]))  // 4 spatial dims
    }

    // MARK: ConvTranspose

    func testConvTranspose1D() throws {
        let x = t([1, 2, 3], [1, 1, 3]), w = t([1, 1], [1, 1, 2])
        // Stride 1: each input spreads over two outputs → [1, 1+2, 2+3, 3].
        assertClose(try run1("ConvTranspose", [x, w]), [1, 3, 5, 3], shape: [1, 1, 4])
        // Stride 2: no overlap → [1,1,2,2,3,3].
        assertClose(try run1("ConvTranspose", [x, w], ["strides": .ints([2])]), [1, 1, 2, 2, 3, 3], shape: [1, 1, 6])
        // Pads [1,1] crop one element at each end.
        assertClose(try run1("ConvTranspose", [x, w], ["strides": .ints([2]), "pads": .ints([1, 1])]),
                    [1, 2, 2, 3], shape: [1, 1, 4])
        // output_padding 1 adds one (zero) element at the end.
        assertClose(try run1("ConvTranspose", [x, w], ["strides": .ints([2]), "output_padding": .ints([1])]),
                    [1, 1, 2, 2, 3, 3, 0], shape: [1, 1, 7])
        // output_shape 7: total padding 6 − 7 = −1 → extends at the end, as in the ONNX test.
        assertClose(try run1("ConvTranspose", [x, w], ["strides": .ints([2]), "output_shape": .ints([7])]),
                    [1, 1, 2, 2, 3, 3, 0], shape: [1, 1, 7])
    }

    func testConvTranspose2DGroupsBias() throws {
        // X = [[1,2],[3,4]], 2×2 ones, stride 1 → 3×3 of overlapping sums.
        let y = try run1("ConvTranspose", [t([1, 2, 3, 4], [1, 1, 2, 2]), t([1, 1, 1, 1], [1, 1, 2, 2])])
        assertClose(y, [1, 3, 2, 4, 10, 6, 3, 7, 4], shape: [1, 1, 3, 3])
        // Group 2, 1×1 kernels w0 = 2, w1 = 10, bias [0.5, −1]:
        // ch0 = [1,2]·2 + 0.5 = [2.5, 4.5]; ch1 = [3,4]·10 − 1 = [29, 39].
        let g = try run1("ConvTranspose", [t([1, 2, 3, 4], [1, 2, 2]), t([2, 10], [2, 1, 1]), t([0.5, -1], [2])],
                         ["group": .int(2)])
        assertClose(g, [2.5, 4.5, 29, 39], shape: [1, 2, 2])
    }

    func testConvTransposeMatchesNaive() throws {
        // Scatter reference: y[oc, i·s − p + k·d] += x[ic, i] · w[ic, oc_in_group, k].
        let (n, c, h, wd, mg, k, g) = (2, 4, 5, 4, 3, 3, 2)
        let s = [2, 1], p = [1, 0, 0, 1], d = [1, 2], op = [1, 0]
        let cg = c / g, m = mg * g
        let x = random(n * c * h * wd, seed: 11), w = random(c * mg * k * k, seed: 12), b = random(m, seed: 13)
        let oh = s[0] * (h - 1) + op[0] + (k - 1) * d[0] + 1 - p[0] - p[2]
        let ow = s[1] * (wd - 1) + op[1] + (k - 1) * d[1] + 1 - p[1] - p[3]
        var ref = [Float](repeating: 0, count: n * m * oh * ow)
        for bi in 0..<n { for oc in 0..<m { for i in 0..<(oh * ow) { ref[(bi * m + oc) * oh * ow + i] = b[oc] } } }
        for bi in 0..<n { for ic in 0..<c {
            let gi = ic / cg
            for o in 0..<mg { for i in 0..<h { for j in 0..<wd { for a in 0..<k { for bb in 0..<k {
                let yh = i * s[0] - p[0] + a * d[0], yw = j * s[1] - p[1] + bb * d[1]
                if yh < 0 || yh >= oh || yw < 0 || yw >= ow { continue }
                let oc = gi * mg + o
                ref[((bi * m + oc) * oh + yh) * ow + yw] += x[((bi * c + ic) * h + i) * wd + j] * w[((ic * mg + o) * k + a) * k + bb]
            } } } } }
        } }
        let attrs: [String: Attribute] = ["group": .int(g), "strides": .ints(s), "pads": .ints(p),
                                          "dilations": .ints(d), "output_padding": .ints(op)]
        let y = try run1("ConvTranspose", [t(x, [n, c, h, wd]), t(w, [c, mg, k, k]), t(b, [m])], attrs, threads: 2)
        assertClose(y, ref, shape: [n, m, oh, ow], tol: 1e-4)
    }

    func testConvTransposeErrors() {
        let x = t([1, 2, 3], [1, 1, 3])
        assertThrows(try self.run("ConvTranspose", [x, self.t([1, 1], [2, 1, 1])]))                                // W.shape[0] ≠ C
        assertThrows(try self.run("ConvTranspose", [x, self.t([1, 1], [1, 1, 2])], ["output_padding": .ints([3])]))
        assertThrows(try self.run("ConvTranspose", [x, self.t([1, 1], [1, 1, 2])], ["pads": .ints([3, 3])]))       // negative size
        assertThrows(try self.run("ConvTranspose", [x, self.t([1, 1], [1, 1, 2])], ["strides": .ints([1, 1])]))
    }

    // MARK: Pooling

    func testMaxPoolWithIndices() throws {
        // 4×4 input 0…15, 2×2 windows stride 2: maxima 5, 7, 13, 15 at those flat positions.
        let x = t((0..<16).map(Float.init), [1, 1, 4, 4])
        let attrs: [String: Attribute] = ["kernel_shape": .ints([2, 2]), "strides": .ints([2, 2])]
        let r = try run("MaxPool", [x], attrs, outputs: 2)
        assertClose(r[0], [5, 7, 13, 15], shape: [1, 1, 2, 2])
        XCTAssertEqual(r[1].ints, [5, 7, 13, 15])
        XCTAssertEqual(r[1].dtype, .int64)
        // storage_order 1: column-major index h + w·H → (1,1)=5, (1,3)=13, (3,1)=7, (3,3)=15.
        var col = attrs; col["storage_order"] = .int(1)
        XCTAssertEqual(try run("MaxPool", [x], col, outputs: 2)[1].ints, [5, 13, 7, 15])
        // Second batch/channel plane: indices count across N·C.
        let x2 = t((0..<32).map(Float.init), [1, 2, 4, 4])
        XCTAssertEqual(try run("MaxPool", [x2], attrs, outputs: 2)[1].ints, [5, 7, 13, 15, 21, 23, 29, 31])
    }

    func testMaxPoolCeilDilationPadsUInt8() throws {
        // 3×3 input 1…9, 2×2 stride 2: floor mode gives one window (5); ceil mode a 2×2 output
        // whose edge windows are clipped: [[5,6],[8,9]].
        let x = t((1...9).map(Float.init), [1, 1, 3, 3])
        let a: [String: Attribute] = ["kernel_shape": .ints([2, 2]), "strides": .ints([2, 2])]
        assertClose(try run1("MaxPool", [x], a), [5], shape: [1, 1, 1, 1])
        var c = a; c["ceil_mode"] = .int(1)
        assertClose(try run1("MaxPool", [x], c), [5, 6, 8, 9], shape: [1, 1, 2, 2])
        // Dilation 2 in 1-D: taps i and i+2 of [1,5,2,4] → [max(1,2), max(5,4)] = [2, 5].
        let d = try run1("MaxPool", [t([1, 5, 2, 4], [1, 1, 4])], ["kernel_shape": .ints([2]), "dilations": .ints([2])])
        assertClose(d, [2, 5], shape: [1, 1, 2])
        // Padding never wins: all-negative input, pads 1, 3×3 → max of valid neighbours.
        let n = try run1("MaxPool", [t([-1, -2, -3, -4], [1, 1, 2, 2])], ["kernel_shape": .ints([3, 3]), "pads": .ints([1, 1, 1, 1])])
        assertClose(n, [-1, -1, -1, -1], shape: [1, 1, 2, 2])
        // uint8 input stays uint8.
        let u = try run1("MaxPool", [Tensor(ints: [3, 9, 1, 7], shape: [1, 1, 1, 4], dtype: .uint8)],
                         ["kernel_shape": .ints([1, 2]), "strides": .ints([1, 2])])
        XCTAssertEqual(u.dtype, .uint8)
        XCTAssertEqual(u.ints, [9, 7])
        // Pads wider than the kernel (found by make fuzz-models: converting the −∞ of a window
        // with no element to an integer trapped): such a window gives the type's smallest value,
        // −∞ for floats.
        let wide: [String: Attribute] = ["kernel_shape": .ints([1, 2]), "pads": .ints([0, 3, 0, 0])]
        for (dtype, lowest) in [(DType.uint8, Int64(0)), (.int8, Int64(Int8.min)), (.int16, Int64(Int16.min))] {
            let p = try run1("MaxPool", [Tensor(ints: [3, 9, 1, 7], shape: [1, 1, 1, 4], dtype: dtype)], wide)
            XCTAssertEqual(p.dtype, dtype)
            XCTAssertEqual(p.ints, [lowest, lowest, 3, 9, 9, 7], "\(dtype)")
        }
        let pf = try run1("MaxPool", [t([3, 9, 1, 7], [1, 1, 1, 4])], wide)
        XCTAssertEqual(pf.floats, [-.infinity, -.infinity, 3, 9, 9, 7])
    }

    func testAveragePoolCountIncludePad() throws {
        // 2×2 input, 2×2 windows, pads 1, stride 2: each window holds one real element.
        let x = t([1, 2, 3, 4], [1, 1, 2, 2])
        let a: [String: Attribute] = ["kernel_shape": .ints([2, 2]), "strides": .ints([2, 2]), "pads": .ints([1, 1, 1, 1])]
        assertClose(try run1("AveragePool", [x], a), [1, 2, 3, 4], shape: [1, 1, 2, 2])   // divide by 1
        var inc = a; inc["count_include_pad"] = .int(1)
        assertClose(try run1("AveragePool", [x], inc), [0.25, 0.5, 0.75, 1], shape: [1, 1, 2, 2])  // divide by 4
        // Plain 1-D average, stride 1: [1,2,3,4] with k=2 → [1.5, 2.5, 3.5].
        assertClose(try run1("AveragePool", [t([1, 2, 3, 4], [1, 1, 4])], ["kernel_shape": .ints([2])]),
                    [1.5, 2.5, 3.5], shape: [1, 1, 3])
        // 3-D: mean of 1…8 = 4.5.
        assertClose(try run1("AveragePool", [t((1...8).map(Float.init), [1, 1, 2, 2, 2])], ["kernel_shape": .ints([2, 2, 2])]),
                    [4.5], shape: [1, 1, 1, 1, 1])
    }

    func testLpAndGlobalPools() throws {
        // LpPool over [3,4]: p=2 → 5, p=1 → 7.
        let x = t([3, -4], [1, 1, 1, 2])
        assertClose(try run1("LpPool", [x], ["kernel_shape": .ints([1, 2])]), [5], shape: [1, 1, 1, 1])
        assertClose(try run1("LpPool", [x], ["kernel_shape": .ints([1, 2]), "p": .int(1)]), [7], shape: [1, 1, 1, 1])
        // Global pools per channel: ch0 = [1,3], ch1 = [2,6].
        let g = t([1, 3, 2, 6], [1, 2, 2, 1])
        assertClose(try run1("GlobalAveragePool", [g]), [2, 4], shape: [1, 2, 1, 1])
        assertClose(try run1("GlobalMaxPool", [g]), [3, 6], shape: [1, 2, 1, 1])
        assertClose(try run1("GlobalLpPool", [t([3, 4], [1, 1, 2])]), [5], shape: [1, 1, 1])
    }

    func testPoolErrors() {
        let x = t([1, 2, 3, 4], [1, 1, 2, 2])
        assertThrows(try self.run("MaxPool", [x]))                                                  // no kernel_shape
        assertThrows(try self.run("MaxPool", [x], ["kernel_shape": .ints([3, 3])]))                 // larger than input
        assertThrows(try self.run("MaxPool", [x], ["kernel_shape": .ints([2])]))                    // wrong rank
        assertThrows(try self.run("MaxPool", [x], ["kernel_shape": .ints([2, 2]), "storage_order": .int(2)]))
        assertThrows(try self.run("AveragePool", [self.t([1, 2], [1, 2])], ["kernel_shape": .ints([1])]))  // no spatial dim
        assertThrows(try self.run("LpPool", [x], ["kernel_shape": .ints([2, 2]), "p": .int(0)]))
    }

    // MARK: Gemm / MatMul

    func testGemm() throws {
        // A = [[1,2,3],[4,5,6]], B = [[1,0],[0,1],[1,1]] → AB = [[4,5],[10,11]].
        let a = t([1, 2, 3, 4, 5, 6], [2, 3]), b = t([1, 0, 0, 1, 1, 1], [3, 2])
        assertClose(try run1("Gemm", [a, b]), [4, 5, 10, 11], shape: [2, 2])
        // alpha 2, beta 0.5, C = [1, 2] broadcast over rows: 2·AB + [0.5, 1].
        let y = try run1("Gemm", [a, b, t([1, 2], [2])], ["alpha": .float(2), "beta": .float(0.5)])
        assertClose(y, [8.5, 11, 20.5, 23], shape: [2, 2])
        // transA / transB with the transposed operands give the same product.
        let at = t([1, 4, 2, 5, 3, 6], [3, 2]), bt = t([1, 0, 1, 0, 1, 1], [2, 3])
        assertClose(try run1("Gemm", [at, bt], ["transA": .int(1), "transB": .int(1)]), [4, 5, 10, 11], shape: [2, 2])
        // Scalar C and column C (M×1).
        assertClose(try run1("Gemm", [a, b, t([3], [])]), [7, 8, 13, 14], shape: [2, 2])
        assertClose(try run1("Gemm", [a, b, t([1, 2], [2, 1])]), [5, 6, 12, 13], shape: [2, 2])
        // Errors: inner mismatch, C not broadcastable, 3-D operand.
        assertThrows(try self.run("Gemm", [a, self.t([1, 2, 3, 4], [2, 2])]))
        assertThrows(try self.run("Gemm", [a, b, self.t([1, 2, 3], [3])]))
        assertThrows(try self.run("Gemm", [self.t([1, 2], [1, 1, 2]), b]))
    }

    func testMatMul() throws {
        // 1-D · 1-D: dot product 1·4 + 2·5 + 3·6 = 32 as a scalar.
        assertClose(try run1("MatMul", [t([1, 2, 3], [3]), t([4, 5, 6], [3])]), [32], shape: [])
        // 1-D × 2-D: [1,2]·[[1,2,3],[4,5,6]] = [9, 12, 15].
        assertClose(try run1("MatMul", [t([1, 2], [2]), t([1, 2, 3, 4, 5, 6], [2, 3])]), [9, 12, 15], shape: [3])
        // 2-D × 1-D: [[1,2],[3,4]]·[1,1] = [3, 7].
        assertClose(try run1("MatMul", [t([1, 2, 3, 4], [2, 2]), t([1, 1], [2])]), [3, 7], shape: [2])
        // Batched A with shared B: two 1×2 rows times [[1],[1]] → [3], [7].
        assertClose(try run1("MatMul", [t([1, 2, 3, 4], [2, 1, 2]), t([1, 1], [2, 1])]), [3, 7], shape: [2, 1, 1])
        // Broadcast batches [2,1] × [3]: a0 = [1,2], a1 = [3,4]; b_j = [[j],[1]] → a·b = a[0]·j + a[1].
        let y = try run1("MatMul", [t([1, 2, 3, 4], [2, 1, 1, 2]), t([1, 1, 2, 1, 3, 1], [3, 2, 1])])
        assertClose(y, [3, 4, 5, 7, 10, 13], shape: [2, 3, 1, 1])
        // Integer MatMul: [[1,2],[3,4]]·[[5],[6]] = [17, 39].
        let i = try run1("MatMul", [Tensor(ints: [1, 2, 3, 4], shape: [2, 2]), Tensor(ints: [5, 6], shape: [2, 1])])
        XCTAssertEqual(i.ints, [17, 39])
        // Empty inner dimension → zeros.
        assertClose(try run1("MatMul", [t([], [2, 0]), t([], [0, 3])]), [0, 0, 0, 0, 0, 0], shape: [2, 3])
        assertThrows(try self.run("MatMul", [self.t([1, 2, 3, 4, 5, 6], [2, 3]), self.t([1, 2, 3, 4, 5, 6], [2, 3])]))
        assertThrows(try self.run("MatMul", [self.t([1, 2, 3, 4], [2, 1, 2]), self.t([1, 2, 3, 4, 5, 6], [3, 2, 1])]))
    }

    func testMatMulMatchesNaiveAndIsDeterministic() throws {
        let a = random(3 * 5 * 7, seed: 21), b = random(7 * 4, seed: 22)
        var ref = [Float](repeating: 0, count: 3 * 5 * 4)
        for r in 0..<15 { for j in 0..<4 { for p in 0..<7 { ref[r * 4 + j] += a[r * 7 + p] * b[p * 4 + j] } } }
        let y = try run1("MatMul", [t(a, [3, 5, 7]), t(b, [7, 4])], threads: 2)
        assertClose(y, ref, shape: [3, 5, 4], tol: 1e-5)
        let big = t(random(64 * 300, seed: 3), [64, 300]), bb = t(random(300 * 70, seed: 4), [300, 70])
        let one = try run1("MatMul", [big, bb], threads: 1)
        XCTAssertEqual(try run1("MatMul", [big, bb], threads: 4), one)
    }

    // MARK: Normalization

    func testBatchNormalization() throws {
        // ch0 = [1,3], mean 2, var 1, scale 1, B 0 → [−1, 1];
        // ch1 = [2,4], mean 3, var 4, scale 2, B 1 → (x−3)/2·2 + 1 = [0, 2].
        let x = t([1, 3, 2, 4], [1, 2, 1, 2])
        let y = try run1("BatchNormalization", [x, t([1, 2], [2]), t([0, 1], [2]), t([2, 3], [2]), t([1, 4], [2])],
                         ["epsilon": .float(0)])
        assertClose(y, [-1, 1, 0, 2], shape: [1, 2, 1, 2])
        // Training mode: batch mean 2, var 1 → Y = [−1, 1]; running mean 0·0.9 + 2·0.1 = 0.2,
        // running var 1·0.9 + 1·0.1 = 1.
        let r = try run("BatchNormalization", [t([1, 3], [2, 1, 1, 1]), t([1], [1]), t([0], [1]), t([0], [1]), t([1], [1])],
                        ["epsilon": .float(0), "training_mode": .int(1)], outputs: 3)
        assertClose(r[0], [-1, 1], shape: [2, 1, 1, 1])
        assertClose(r[1], [0.2], shape: [1])
        assertClose(r[2], [1], shape: [1])
        assertThrows(try self.run("BatchNormalization", [x, self.t([1], [1]), self.t([0, 1], [2]), self.t([2, 3], [2]), self.t([1, 4], [2])]))
    }

    func testInstanceNormalization() throws {
        // ch0 = [1,3]: mean 2, var 1 → ±1/√(1+ε); ch1 = [2,2]: var 0 → 0·scale + B = 1.
        let y = try run1("InstanceNormalization", [t([1, 3, 2, 2], [1, 2, 2]), t([1, 2], [2]), t([0, 1], [2])])
        let v = 1 / (1 + 1e-5 as Float).squareRoot()
        assertClose(y, [-v, v, 1, 1], shape: [1, 2, 2])
        assertThrows(try self.run("InstanceNormalization", [self.t([1, 3, 2, 2], [1, 2, 2]), self.t([1], [1]), self.t([0, 1], [2])]))
    }

    func testLayerNormalization() throws {
        // Rows [1,3] (mean 2, var 1) and [2,6] (mean 4, var 4) both normalize to [−1, 1];
        // scale 1, bias [0, 0.5] → [−1, 1.5]. Mean = [[2],[4]], InvStdDev = [[1],[0.5]].
        let x = t([1, 3, 2, 6], [2, 2])
        let r = try run("LayerNormalization", [x, t([1, 1], [2]), t([0, 0.5], [2])], ["epsilon": .float(0)], outputs: 3)
        assertClose(r[0], [-1, 1.5, -1, 1.5], shape: [2, 2])
        assertClose(r[1], [2, 4], shape: [2, 1])
        assertClose(r[2], [1, 0.5], shape: [2, 1])
        // axis 0: all four values, mean 3, var (4+0+1+9)/4 = 3.5; no bias; scale [[1,2],[1,2]].
        let s = 1 / (3.5 as Float).squareRoot()
        let y0 = try run1("LayerNormalization", [x, t([1, 2, 1, 2], [2, 2])], ["axis": .int(0), "epsilon": .float(0)])
        assertClose(y0, [-2 * s, 0, -1 * s, 6 * s], shape: [2, 2])
        // Negative axis on rank 3 and a broadcast scale of shape [1].
        let y3 = try run1("LayerNormalization", [t([1, 3, 5, 7], [1, 2, 2]), t([2], [1])], ["axis": .int(-1), "epsilon": .float(0)])
        assertClose(y3, [-2, 2, -2, 2], shape: [1, 2, 2])
        assertThrows(try self.run("LayerNormalization", [x, self.t([1, 1], [2])], ["axis": .int(2)]))
        assertThrows(try self.run("LayerNormalization", [x, self.t([1, 1, 1], [3])]))
    }

    func testGroupNormalizationAndLRN() throws {
        // Two groups of two channels: (1,3) → [−1,1]; (2,6) → mean 4, var 4 → [−1,1]·2 + [0,1] = [−2, 3].
        let y = try run1("GroupNormalization", [t([1, 3, 2, 6], [1, 4, 1, 1]), t([1, 1, 2, 2], [4]), t([0, 0, 0, 1], [4])],
                         ["num_groups": .int(2), "epsilon": .float(0)])
        assertClose(y, [-1, 1, -2, 3], shape: [1, 4, 1, 1])
        assertThrows(try self.run("GroupNormalization", [self.t([1, 3, 2], [1, 3, 1]), self.t([1, 1, 1], [3]), self.t([0, 0, 0], [3])],
                                  ["num_groups": .int(2)]))
        // LRN, size 3, alpha 3 (alpha/size = 1), beta 1, bias 1 on channels [1,2,3]:
        // ch0: 1/(1 + 1 + 4) = 1/6; ch1: 2/(1 + 14) = 2/15; ch2: 3/(1 + 13) = 3/14.
        let l = try run1("LRN", [t([1, 2, 3], [1, 3, 1, 1])], ["size": .int(3), "alpha": .float(3), "beta": .float(1), "bias": .float(1)])
        assertClose(l, [1.0 / 6, 2.0 / 15, 3.0 / 14], shape: [1, 3, 1, 1])
        // Default beta 0.75: ch0 = 1 / (1 + 1e-4/3·5)^0.75.
        let d = try run1("LRN", [t([1, 2, 3], [1, 3, 1, 1])], ["size": .int(3)])
        XCTAssertEqual(d.floats?[0] ?? 0, 1 / powf(1 + 1e-4 / 3 * 5, 0.75), accuracy: 1e-6)
        assertThrows(try self.run("LRN", [self.t([1, 2, 3], [1, 3, 1, 1])]))   // size missing
    }

    // MARK: Resize

    func testResizeNearest() throws {
        // 2×2 → 4×4, half_pixel + round_prefer_floor: source coords −0.25, 0.25, 0.75, 1.25 → 0,0,1,1.
        let x = t([1, 2, 3, 4], [1, 1, 2, 2])
        let y = try run1("Resize", [x, nil, t([1, 1, 2, 2], [4])])
        assertClose(y, [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4], shape: [1, 1, 4, 4])
        // Downsample by sizes, asymmetric + floor: source 0, 2 → [1, 3].
        let d = try run1("Resize", [t([1, 2, 3, 4], [1, 1, 1, 4]), nil, nil, Tensor(ints: [1, 1, 1, 2], shape: [4])],
                         ["coordinate_transformation_mode": .string("asymmetric"), "nearest_mode": .string("floor")])
        assertClose(d, [1, 3], shape: [1, 1, 1, 2])
        // axes: only the last axis, ×2 with nearest ceil + asymmetric: sources 0, 0.5, 1, 1.5 → 0, 1, 1, 2→clamped 1.
        let a = try run1("Resize", [t([5, 6], [1, 2]), nil, t([2], [1])],
                         ["axes": .ints([-1]), "coordinate_transformation_mode": .string("asymmetric"), "nearest_mode": .string("ceil")])
        assertClose(a, [5, 6, 6, 6], shape: [1, 4])
    }

    func testResizeLinearAndCubic() throws {
        // [1,3] ×2 linear half_pixel: sources −0.25, 0.25, 0.75, 1.25 → 1, 1.5, 2.5, 3 (edges clamp).
        let x = t([1, 3], [1, 1, 1, 2])
        assertClose(try run1("Resize", [x, nil, t([1, 1, 1, 2], [4])], ["mode": .string("linear")]),
                    [1, 1.5, 2.5, 3], shape: [1, 1, 1, 4])
        // align_corners to 3 samples: sources 0, 0.5, 1 → [1, 2, 3].
        assertClose(try run1("Resize", [x, nil, nil, Tensor(ints: [1, 1, 1, 3], shape: [4])],
                             ["mode": .string("linear"), "coordinate_transformation_mode": .string("align_corners")]),
                    [1, 2, 3], shape: [1, 1, 1, 3])
        // Cubic (A = −0.75), asymmetric ×2 on [0,1,0,0]. Kernel weights at distance 0.5 / 1.5 are
        // 0.59375 / −0.09375, so outputs at half positions are 0.59375 next to the 1 and −0.09375
        // one step further; integral positions copy the input.
        let c = try run1("Resize", [t([0, 1, 0, 0], [1, 1, 1, 4]), nil, t([1, 1, 1, 2], [4])],
                         ["mode": .string("cubic"), "coordinate_transformation_mode": .string("asymmetric")])
        assertClose(c, [0, 0.59375, 1, 0.59375, 0, -0.09375, 0, 0], shape: [1, 1, 1, 8])
        // Linear in 2-D keeps a bilinear ramp exact in the interior (align_corners, 2×2 → 3×3).
        let b = try run1("Resize", [t([0, 1, 2, 3], [1, 1, 2, 2]), nil, nil, Tensor(ints: [1, 1, 3, 3], shape: [4])],
                         ["mode": .string("linear"), "coordinate_transformation_mode": .string("align_corners")])
        assertClose(b, [0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3], shape: [1, 1, 3, 3])
    }

    func testResizeCropPolicyAndErrors() throws {
        // tf_crop_and_resize on the last axis with roi [0, 2]: sources 0, 1, 2; 2 > 1 is outside → 10.
        let x = t([1, 3], [1, 2])
        let y = try run1("Resize", [x, t([0, 2], [2]), nil, Tensor(ints: [3], shape: [1])],
                         ["axes": .ints([1]), "mode": .string("linear"),
                          "coordinate_transformation_mode": .string("tf_crop_and_resize"), "extrapolation_value": .float(10)])
        assertClose(y, [1, 3, 10], shape: [1, 3])
        // keep_aspect_ratio_policy with sizes [4, 4] on a 2×4 image: not_larger keeps 2×4, not_smaller gives 4×8.
        let img = t((0..<8).map(Float.init), [1, 1, 2, 4])
        let sizes = Tensor(ints: [4, 4], shape: [2])
        XCTAssertEqual(try run1("Resize", [img, nil, nil, sizes], ["axes": .ints([2, 3]), "keep_aspect_ratio_policy": .string("not_larger")]).shape, [1, 1, 2, 4])
        XCTAssertEqual(try run1("Resize", [img, nil, nil, sizes], ["axes": .ints([2, 3]), "keep_aspect_ratio_policy": .string("not_smaller")]).shape, [1, 1, 4, 8])
        // Errors: both / neither of scales and sizes, bad mode, wrong count, repeated axis.
        assertThrows(try self.run("Resize", [img, nil, self.t([1, 1, 2, 2], [4]), Tensor(ints: [1, 1, 4, 8], shape: [4])]))
        assertThrows(try self.run("Resize", [img]))
        assertThrows(try self.run("Resize", [img, nil, self.t([1, 1, 2, 2], [4])], ["mode": .string("area")]))
        assertThrows(try self.run("Resize", [img, nil, self.t([2, 2], [2])]))
        assertThrows(try self.run("Resize", [img, nil, self.t([2, 2], [2])], ["axes": .ints([3, -1])]))
        assertThrows(try self.run("Resize", [img, nil, self.t([1, 1, -2, 2], [4])]))
    }

    // MARK: DepthToSpace / SpaceToDepth

    func testDepthToSpaceAndBack() throws {
        // 8 channels of 1×1, blocksize 2 → 2 channels of 2×2.
        // DCR: out[c, i, j] = in[(i·2 + j)·2 + c] → ch0 = [0,2,4,6], ch1 = [1,3,5,7].
        // CRD: out[c, i, j] = in[(c·2 + i)·2 + j] → ch0 = [0,1,2,3], ch1 = [4,5,6,7].
        let x = t((0..<8).map(Float.init), [1, 8, 1, 1])
        let dcr = try run1("DepthToSpace", [x], ["blocksize": .int(2)])
        assertClose(dcr, [0, 2, 4, 6, 1, 3, 5, 7], shape: [1, 2, 2, 2])
        let crd = try run1("DepthToSpace", [x], ["blocksize": .int(2), "mode": .string("CRD")])
        assertClose(crd, [0, 1, 2, 3, 4, 5, 6, 7], shape: [1, 2, 2, 2])
        // SpaceToDepth inverts DepthToSpace in both modes.
        XCTAssertEqual(try run1("SpaceToDepth", [dcr], ["blocksize": .int(2)]), x)
        XCTAssertEqual(try run1("SpaceToDepth", [crd], ["blocksize": .int(2), "mode": .string("CRD")]), x)
        let big = t(random(2 * 12 * 3 * 5, seed: 5), [2, 12, 3, 5])
        XCTAssertEqual(try run1("SpaceToDepth", [try run1("DepthToSpace", [big], ["blocksize": .int(2)])], ["blocksize": .int(2)]), big)
        // Errors: channels not divisible, spatial not divisible, bad blocksize, wrong rank.
        assertThrows(try self.run("DepthToSpace", [self.t([1, 2, 3], [1, 3, 1, 1])], ["blocksize": .int(2)]))
        assertThrows(try self.run("SpaceToDepth", [self.t([1, 2, 3], [1, 1, 1, 3])], ["blocksize": .int(2)]))
        assertThrows(try self.run("SpaceToDepth", [x], ["blocksize": .int(0)]))
        assertThrows(try self.run("DepthToSpace", [self.t([1, 2, 3, 4], [4])], ["blocksize": .int(2)]))
    }
}
