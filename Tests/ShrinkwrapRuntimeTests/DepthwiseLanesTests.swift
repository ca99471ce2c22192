import CKernels
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// The channels-in-lanes depthwise kernel (`sk_depthwise_lanes`, AVX-512): the plane kernel's bits for
/// any geometry, band and channel count, its fused epilogue the separate kernels' bits, and the cases it
/// must hand back (weights that are not finite, a bias of −0).
final class DepthwiseLanesTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    func requireLanes() throws {
        guard SIMDKernels.best >= SIMDKernels.avx512 else {
            throw XCTSkip("SKIPPED: this CPU has no AVX-512, so sk_depthwise_lanes never runs here")
        }
    }

    struct Geometry: CustomStringConvertible {
        let channels, ih, iw, kh, kw, sh, sw, ph, pw, dh, dw: Int
        var oh: Int { (ih + 2 * ph - dh * (kh - 1) - 1) / sh + 1 }
        var ow: Int { (iw + 2 * pw - dw * (kw - 1) - 1) / sw + 1 }
        var description: String { "c\(channels) \(ih)×\(iw) k\(kh)×\(kw) s\(sh),\(sw) p\(ph),\(pw) d\(dh),\(dw)" }
    }

    /// Plane by plane with sk_depthwise_plane: the reference bits.
    func planes(_ g: Geometry, x: [Float], w: [Float], bias: [Float]) -> [Float] {
        var y = [Float](repeating: .nan, count: g.channels * g.oh * g.ow)
        for c in 0..<g.channels {
            x.withUnsafeBufferPointer { xb in w.withUnsafeBufferPointer { wb in y.withUnsafeMutableBufferPointer { yb in
                sk_depthwise_plane(SIMDKernels.avx512, xb.baseAddress! + c * g.ih * g.iw, g.ih, g.iw, wb.baseAddress! + c * g.kh * g.kw,
                                   g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, bias[c], yb.baseAddress! + c * g.oh * g.ow, g.oh, g.ow)
            } } }
        }
        return y
    }

    /// sk_depthwise_lanes over groups of ≤ 16 channels and bands of `band` rows.
    func lanes(_ g: Geometry, x: [Float], w: [Float], bias: [Float]?, band: Int,
               epilogue: UnsafePointer<sk_lane_epilogue>? = nil) -> (y: [Float], ran: Bool) {
        var y = [Float](repeating: .nan, count: g.channels * g.oh * g.ow)
        var ran = true
        let count = sk_depthwise_lanes_scratch(g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, band)
        var scratch = [Float](repeating: .nan, count: count)
        for c0 in stride(from: 0, to: g.channels, by: 16) {
            for r0 in stride(from: 0, to: g.oh, by: band) {
                let done = x.withUnsafeBufferPointer { xb in w.withUnsafeBufferPointer { wb in y.withUnsafeMutableBufferPointer { yb in
                    scratch.withUnsafeMutableBufferPointer { sb in
                        (bias ?? []).withUnsafeBufferPointer { bb in
                            sk_depthwise_lanes(SIMDKernels.avx512, xb.baseAddress! + c0 * g.ih * g.iw, g.ih * g.iw, min(16, g.channels - c0),
                                               g.ih, g.iw, wb.baseAddress! + c0 * g.kh * g.kw, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw,
                                               bias == nil ? nil : bb.baseAddress! + c0, yb.baseAddress! + c0 * g.oh * g.ow, g.oh * g.ow,
                                               g.oh, g.ow, r0, min(g.oh, r0 + band), epilogue, c0, sb.baseAddress!)
                        }
                    }
                } } }
                ran = ran && done != 0
            }
        }
        return (y, ran)
    }

    func random(_ n: Int, _ rng: inout SplitMix) -> [Float] { (0..<n).map { _ in rng.nextFloat() * 2 - 1 } }

    /// Every geometry the kernel has a branch for — 8- and 16-pixel blocks, partial blocks, partial
    /// channel groups, strides and dilations per axis, pads beyond the kernel, outputs that see no
    /// input at all — in bands of 1, 3 and all rows: the plane kernel's bits, NaN and infinities included.
    func testLanesGiveThePlaneKernelsBits() throws {
        try requireLanes()
        var rng = SplitMix(seed: 21)
        let geometries = [
            Geometry(channels: 16, ih: 20, iw: 20, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1),
            Geometry(channels: 19, ih: 23, iw: 37, kh: 3, kw: 3, sh: 2, sw: 2, ph: 1, pw: 1, dh: 1, dw: 1),
            Geometry(channels: 8, ih: 7, iw: 7, kh: 5, kw: 5, sh: 1, sw: 1, ph: 2, pw: 2, dh: 1, dw: 1),
            Geometry(channels: 37, ih: 9, iw: 5, kh: 3, kw: 5, sh: 1, sw: 2, ph: 0, pw: 3, dh: 1, dw: 1),
            Geometry(channels: 3, ih: 17, iw: 33, kh: 4, kw: 2, sh: 3, sw: 1, ph: 2, pw: 0, dh: 2, dw: 3),
            Geometry(channels: 16, ih: 2, iw: 2, kh: 7, kw: 7, sh: 1, sw: 1, ph: 3, pw: 3, dh: 1, dw: 1),
            Geometry(channels: 17, ih: 6, iw: 40, kh: 3, kw: 3, sh: 2, sw: 3, ph: 5, pw: 6, dh: 1, dw: 1),
            Geometry(channels: 12, ih: 1, iw: 64, kh: 1, kw: 9, sh: 1, sw: 1, ph: 0, pw: 4, dh: 1, dw: 2),
            Geometry(channels: 16, ih: 30, iw: 1, kh: 5, kw: 1, sh: 2, sw: 1, ph: 2, pw: 0, dh: 1, dw: 1),
            Geometry(channels: 5, ih: 12, iw: 18, kh: 1, kw: 1, sh: 1, sw: 1, ph: 0, pw: 0, dh: 1, dw: 1),
        ]
        for g in geometries {
            var x = random(g.channels * g.ih * g.iw, &rng)
            let w = random(g.channels * g.kh * g.kw, &rng), bias = random(g.channels, &rng)
            // Non-finite inputs spread only where their windows reach, as in the plane kernel.
            x[x.count / 3] = .nan
            x[x.count / 2] = .infinity
            x[x.count - 1] = -.infinity
            let ref = planes(g, x: x, w: w, bias: bias)
            XCTAssertEqual(sk_depthwise_lanes_usable(SIMDKernels.avx512, w, g.channels, g.kh * g.kw, bias), 1, "\(g)")
            for band in [1, 3, g.oh] {
                let (y, ran) = lanes(g, x: x, w: w, bias: bias, band: band)
                XCTAssertTrue(ran, "\(g) band \(band)")
                XCTAssertEqual(y.map(\.bitPattern), ref.map(\.bitPattern), "\(g) band \(band)")
            }
            // No bias: +0 to start from, as the plane kernel's caller passes.
            let (y, _) = lanes(g, x: x, w: w, bias: nil, band: g.oh)
            XCTAssertEqual(y.map(\.bitPattern), planes(g, x: x, w: w, bias: [Float](repeating: 0, count: g.channels)).map(\.bitPattern), "\(g) no bias")
        }
    }

    /// What the padded zeros could change is refused: a weight that is not finite (w · 0 is NaN), a bias
    /// of −0 (−0 + 0 is +0); a +0 bias and ordinary weights are taken. A level without the kernel runs nothing.
    func testWeightsAndBiasesTheLanesCannotTake() throws {
        try requireLanes()
        let w: [Float] = [0.5, -1, 2, 0]
        XCTAssertEqual(sk_depthwise_lanes_usable(SIMDKernels.avx512, w, 1, 4, [0]), 1)
        XCTAssertEqual(sk_depthwise_lanes_usable(SIMDKernels.avx512, w, 1, 4, nil), 1)
        XCTAssertEqual(sk_depthwise_lanes_usable(SIMDKernels.avx512, w, 1, 4, [-0.0]), 0)
        for bad in [Float.nan, .infinity, -.infinity] {
            XCTAssertEqual(sk_depthwise_lanes_usable(SIMDKernels.avx512, [0.5, bad, 2, 0], 1, 4, [1]), 0, "\(bad)")
        }
        XCTAssertEqual(sk_depthwise_lanes_usable(SIMDKernels.avx2, w, 1, 4, nil), 0)
        // Through the interpreter those convs still give the plane kernel's bits (it falls back).
        var rng = SplitMix(seed: 5)
        let c = 16, hw = 9
        // Channel 0 reads −0 everywhere through positive weights: every product is −0, so with a −0 bias each
        // of its outputs is −0 — where a padded +0 would have made the border +0.
        let x = random(c * hw * hw, &rng).enumerated().map { $0.offset < hw * hw ? -0.0 : $0.element }
        let positive = random(c * 9, &rng).enumerated().map { $0.offset < 9 ? abs($0.element) + 0.1 : $0.element }
        for (label, weights, bias) in [("inf weight", random(c * 9, &rng).enumerated().map { $0.offset == 4 ? Float.infinity : $0.element }, random(c, &rng)),
                                       ("-0 bias", positive, [Float](repeating: -0.0, count: c))] {
            let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(c), .fixed(hw), .fixed(hw)])],
                          outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                          nodes: [Node(name: "dw", opType: "Conv", inputs: ["x", "W", "B"], outputs: ["y"],
                                       attributes: ["group": .int(c), "pads": .ints([1, 1, 1, 1])])],
                          constants: [Constant(name: "W", tensor: Tensor(weights, shape: [c, 1, 3, 3])),
                                      Constant(name: "B", tensor: Tensor(bias, shape: [c]))])
            var outputs: [[UInt32]] = []
            for level in [SIMDKernels.avx512, SIMDKernels.avx2] {
                SIMDKernels.level = level
                outputs.append(try Interpreter(graph: g, options: .init(threads: 2)).run(["x": Tensor(x, shape: [1, c, hw, hw])])["y"]?.floats?.map(\.bitPattern) ?? [])
            }
            XCTAssertEqual(outputs[0], outputs[1], label)
            if label == "-0 bias" {
                XCTAssertEqual(Array(outputs[0].prefix(hw * hw)), [UInt32](repeating: Float(-0.0).bitPattern, count: hw * hw), "channel 0 stays −0")
            }
        }
    }

    /// The fused epilogue (affine, then each activation) on the accumulators: the bits of
    /// sk_conv_epilogue and the activations' own kernels run on the plane kernel's output.
    func testLaneEpilogueGivesTheSeparateKernelsBits() throws {
        try requireLanes()
        var rng = SplitMix(seed: 9)
        let g = Geometry(channels: 21, ih: 13, iw: 19, kh: 3, kw: 3, sh: 1, sw: 1, ph: 1, pw: 1, dh: 1, dw: 1)
        var x = random(g.channels * g.ih * g.iw, &rng).map { $0 * 6 }
        x[7] = .nan
        let w = random(g.channels * 9, &rng), bias = random(g.channels, &rng)
        let scale = random(g.channels, &rng), shift = random(g.channels, &rng), slopes = random(g.channels, &rng)
        let lists: [[FusedActivation]] = [
            [], [.relu], [.clip(lo: 0, hi: 6)], [.leakyRelu(alpha: 0.1)], [.prelu(slopes: slopes)], [.prelu(slopes: [0.25])],
            [.vector(.hardSwish)], [.vector(.hardSigmoid(alpha: 0.3, beta: 0.4))], [.max(-0.4, scalarFirst: false)],
            [.min(0.3, scalarFirst: true)], [.leakyRelu(alpha: 0.2), .max(-0.1, scalarFirst: true), .relu, .vector(.hardSwish)],
        ]
        let plane = planes(g, x: x, w: w, bias: bias)
        for affine in [false, true] {
            for list in lists {
                let e = ConvEpilogue(bias: bias, scale: affine ? scale : nil, shift: affine ? shift : nil, activations: list)
                var ref = plane
                ref.withUnsafeMutableBufferPointer { rb in
                    for c in 0..<g.channels { e.apply(rb.baseAddress! + c * g.oh * g.ow, count: g.oh * g.ow, channel: c, skipBias: true) }
                }
                let got = e.withLaneEpilogue { lanes(g, x: x, w: w, bias: bias, band: 4, epilogue: $0) }
                XCTAssertEqual(got?.ran, true, "\(list) affine \(affine)")
                XCTAssertEqual(got?.y.map(\.bitPattern), ref.map(\.bitPattern), "\(list) affine \(affine)")
            }
        }
        // What the lane epilogue lacks is left to the per-channel path.
        for list: [FusedActivation] in [[.vector(.sigmoid)], [.silu], [.relu, .vector(.tanh)]] {
            XCTAssertNil(ConvEpilogue(bias: nil, scale: nil, shift: nil, activations: list).withLaneEpilogue { _ in 0 }, "\(list)")
        }
    }

    /// Through the interpreter: batch 2, several bands and groups, bias or none, BatchNormalization and
    /// HardSwish fused — the AVX-512 run (lanes) against AVX2 and portable (plane kernel), bit for bit, for
    /// 1 and 2 threads.
    func testInterpreterDepthwiseMatchesTheOtherLevels() throws {
        try requireLanes()
        var rng = SplitMix(seed: 17)
        for (c, h, wd, k, s, withBias) in [(24, 130, 20, 3, 1, true), (16, 31, 9, 5, 2, false), (40, 7, 7, 5, 1, true)] {
            var consts = [Constant(name: "W", tensor: Tensor(random(c * k * k, &rng), shape: [c, 1, k, k]))]
            if withBias { consts.append(Constant(name: "B", tensor: Tensor(random(c, &rng), shape: [c]))) }
            for (name, lo) in [("s", Float(0.5)), ("beta", -1), ("mu", -1), ("var", 0.1)] {
                consts.append(Constant(name: name, tensor: Tensor((0..<c).map { _ in lo + 2 * rng.nextFloat() }, shape: [c])))
            }
            let pad = k / 2
            let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2), .fixed(c), .fixed(h), .fixed(wd)])],
                          outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                          nodes: [Node(name: "dw", opType: "Conv", inputs: ["x", "W"] + (withBias ? ["B"] : []), outputs: ["c"],
                                       attributes: ["group": .int(c), "pads": .ints([pad, pad, pad, pad]), "strides": .ints([s, s])]),
                                  Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "beta", "mu", "var"], outputs: ["b"]),
                                  Node(name: "hs", opType: "HardSwish", inputs: ["b"], outputs: ["y"])],
                          constants: consts)
            let x = Tensor(random(2 * c * h * wd, &rng).map { $0 * 4 }, shape: [2, c, h, wd])
            var runs: [[UInt32]] = []
            for level in [SIMDKernels.avx512, SIMDKernels.avx2, SIMDKernels.portable] {
                SIMDKernels.level = level
                for threads in [1, 2] {
                    runs.append(try Interpreter(graph: g, options: .init(threads: threads)).run(["x": x])["y"]?.floats?.map(\.bitPattern) ?? [])
                }
            }
            XCTAssertFalse(runs[0].isEmpty)
            for r in runs.dropFirst() { XCTAssertEqual(r, runs[0], "c\(c) \(h)×\(wd) k\(k) s\(s)") }
        }
    }
}
