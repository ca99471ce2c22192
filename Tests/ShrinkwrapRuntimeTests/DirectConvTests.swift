import CKernels
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// The direct convolution kernel (`sk_conv_direct`, AVX-512, filters in the lanes): its contract's bits
/// for every tile shape, stride, dilation and filter count, its fused epilogue the separate kernels' bits,
/// its refusals, and the interpreter's Convs on it (planner, padding, groups, batch, column convs, threads).
final class DirectConvTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    func requireDirect() throws {
        guard SIMDKernels.best >= SIMDKernels.avx512 else {
            throw XCTSkip("SKIPPED: this CPU has no AVX-512, so sk_conv_direct never runs here")
        }
    }

    struct Geometry: CustomStringConvertible {
        let channels, filters, hp, wp, kh, kw, sh, sw, dh, dw: Int
        var oh: Int { (hp - dh * (kh - 1) - 1) / sh + 1 }
        var ow: Int { (wp - dw * (kw - 1) - 1) / sw + 1 }
        var k: Int { channels * kh * kw }
        var description: String { "c\(channels) m\(filters) \(hp)×\(wp) k\(kh)×\(kw) s\(sh),\(sw) d\(dh),\(dw)" }
    }

    /// The contract, element by element: per block of max(1, 64 / taps) channels a fused chain from 0 over
    /// (c, i, j), the blocks' chains added in order, then + bias.
    func reference(_ g: Geometry, x: [Float], w: [Float], bias: [Float]?) -> [Float] {
        var y = [Float](repeating: 0, count: g.filters * g.oh * g.ow)
        let block = max(1, 64 / (g.kh * g.kw))
        for f in 0..<g.filters {
            for oy in 0..<g.oh {
                for ox in 0..<g.ow {
                    var acc: Float = 0, total: Float = 0
                    for c in 0..<g.channels {
                        if c > 0 && c % block == 0 {
                            total = c == block ? acc : total + acc
                            acc = 0
                        }
                        for i in 0..<g.kh {
                            for j in 0..<g.kw {
                                let xv = x[(c * g.hp + oy * g.sh + i * g.dh) * g.wp + ox * g.sw + j * g.dw]
                                acc = acc.addingProduct(w[((f * g.channels + c) * g.kh + i) * g.kw + j], xv)
                            }
                        }
                    }
                    if g.channels > block { acc = total + acc }
                    y[(f * g.oh + oy) * g.ow + ox] = bias.map { acc + $0[f] } ?? acc
                }
            }
        }
        return y
    }

    /// sk_conv_direct over filters [f0, f1) and rows [r0, r1) (the rest stays NaN); nil when it refused.
    func direct(_ g: Geometry, x: [Float], w: [Float], bias: [Float]?, filters: Range<Int>? = nil, rows: Range<Int>? = nil,
                level: Int32 = SIMDKernels.avx512, epilogue: UnsafePointer<sk_lane_epilogue>? = nil) -> [Float]? {
        var packed = [Float](repeating: .nan, count: sk_conv_direct_packed_count(g.filters, g.k))
        w.withUnsafeBufferPointer { wb in packed.withUnsafeMutableBufferPointer { sk_conv_direct_pack(wb.baseAddress!, g.filters, g.k, $0.baseAddress!) } }
        var y = [Float](repeating: .nan, count: g.filters * g.oh * g.ow)
        let fs = filters ?? 0..<g.filters, rs = rows ?? 0..<g.oh
        let done = x.withUnsafeBufferPointer { xb in packed.withUnsafeBufferPointer { pb in y.withUnsafeMutableBufferPointer { yb in
            (bias ?? []).withUnsafeBufferPointer { bb in
                sk_conv_direct(level, xb.baseAddress!, g.channels, g.hp, g.wp, pb.baseAddress!, g.filters, g.kh, g.kw, g.sh, g.sw,
                               g.dh, g.dw, bias == nil ? nil : bb.baseAddress!, yb.baseAddress!, g.oh * g.ow, g.oh, g.ow,
                               fs.lowerBound, fs.upperBound, rs.lowerBound, rs.upperBound, epilogue, 0)
            }
        } } }
        return done == 0 ? nil : y
    }

    func random(_ n: Int, _ rng: inout SplitMix) -> [Float] { (0..<n).map { _ in rng.nextFloat() * 2 - 1 } }

    func same(_ a: [Float], _ b: [Float]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.bitPattern == $1.bitPattern || ($0.isNaN && $1.isNaN) }
    }

    static let geometries = [
        // Tile widths 1 … 14 and rows split evenly (20 → 10 + 10, 29 → 10 + 10 + 9), 16 / 32 / odd filter counts.
        Geometry(channels: 16, filters: 32, hp: 22, wp: 22, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 3, filters: 17, hp: 9, wp: 31, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 5, filters: 48, hp: 11, wp: 29, kh: 3, kw: 3, sh: 2, sw: 2, dh: 1, dw: 1),
        Geometry(channels: 7, filters: 33, hp: 6, wp: 16, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 4, filters: 1, hp: 13, wp: 40, kh: 2, kw: 5, sh: 3, sw: 3, dh: 2, dw: 2),
        Geometry(channels: 2, filters: 16, hp: 5, wp: 1, kh: 5, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 9, filters: 40, hp: 1, wp: 70, kh: 1, kw: 7, sh: 1, sw: 1, dh: 1, dw: 3),
        Geometry(channels: 1, filters: 64, hp: 8, wp: 14, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 6, filters: 20, hp: 17, wp: 8, kh: 3, kw: 2, sh: 2, sw: 1, dh: 1, dw: 1),
        // Rows of ≤ 6 outputs: 64 filters per tile (3 or 4 vectors, the last partial).
        Geometry(channels: 5, filters: 61, hp: 4, wp: 6, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 9, filters: 40, hp: 3, wp: 13, kh: 1, kw: 3, sh: 1, sw: 2, dh: 1, dw: 1),
        Geometry(channels: 4, filters: 130, hp: 2, wp: 5, kh: 1, kw: 2, sh: 1, sw: 3, dh: 1, dw: 1),
        // Several blocks of the sum: 3 × 3 taps (7 channels a block), 1 × 1 (64), a tap count past 64.
        Geometry(channels: 70, filters: 20, hp: 6, wp: 9, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 600, filters: 17, hp: 3, wp: 7, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1),
        Geometry(channels: 3, filters: 16, hp: 20, wp: 20, kh: 9, kw: 9, sh: 3, sw: 3, dh: 1, dw: 1),
    ]

    /// Every geometry: the contract's bits, with and without bias, NaN and infinities in the input.
    func testDirectGivesTheContractsBits() throws {
        try requireDirect()
        var rng = SplitMix(seed: 41)
        for g in Self.geometries {
            var x = random(g.channels * g.hp * g.wp, &rng)
            let w = random(g.filters * g.k, &rng), bias = random(g.filters, &rng)
            x[x.count / 3] = .nan
            x[x.count / 2] = .infinity
            x[x.count - 1] = -.infinity
            for b in [bias, nil] {
                let got = try XCTUnwrap(direct(g, x: x, w: w, bias: b), "\(g)")
                XCTAssertTrue(same(got, reference(g, x: x, w: w, bias: b)), "\(g) bias \(b != nil)")
            }
        }
    }

    /// The pixels-in-lanes kernel for 1 × 1 convs: the direct kernel's bits, whole and in parts (filters from
    /// a multiple of 8, any pixel range, tails of 1 … 47 pixels), with an epilogue too.
    func testPointwiseGivesTheDirectKernelsBits() throws {
        try requireDirect()
        var rng = SplitMix(seed: 45)
        let ep = ConvEpilogue(bias: nil, scale: random(600, &rng), shift: random(600, &rng), activations: [.leakyRelu(alpha: 0.2)])
        for (c, m, h, w) in [(7, 33, 6, 16), (600, 17, 3, 7), (32, 8, 5, 19), (1, 70, 1, 1), (128, 40, 9, 11)] {
            let g = Geometry(channels: c, filters: m, hp: h, wp: w, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1)
            let x = random(c * h * w, &rng), wt = random(m * c, &rng), bias = random(m, &rng)
            var packed = [Float](repeating: .nan, count: sk_conv_direct_packed_count(m, c))
            wt.withUnsafeBufferPointer { wb in packed.withUnsafeMutableBufferPointer { sk_conv_direct_pack(wb.baseAddress!, m, c, $0.baseAddress!) } }
            let pixels = h * w
            for lane in [false, true] {
                let want = try XCTUnwrap(lane ? ep.withLaneEpilogue { direct(g, x: x, w: wt, bias: bias, epilogue: $0) } ?? nil
                                              : direct(g, x: x, w: wt, bias: bias), "\(g)")
                for (fs, ps) in [(0..<m, 0..<pixels), (8..<m, 3..<max(4, pixels - 2))] where fs.lowerBound < m && ps.upperBound <= pixels {
                    var y = [Float](repeating: .nan, count: m * pixels)
                    let done = x.withUnsafeBufferPointer { xb in packed.withUnsafeBufferPointer { pb in y.withUnsafeMutableBufferPointer { yb in
                        bias.withUnsafeBufferPointer { bb in
                            let (xp, pp, yp, bp) = (xb.baseAddress!, pb.baseAddress!, yb.baseAddress!, bb.baseAddress!)
                            func run(_ e: UnsafePointer<sk_lane_epilogue>?) -> Int32 {
                                sk_conv_pointwise(SIMDKernels.avx512, xp, c, pixels, pp, m, bp, yp, pixels, fs.lowerBound, fs.upperBound,
                                                  ps.lowerBound, ps.upperBound, e, 0)
                            }
                            return lane ? ep.withLaneEpilogue { run($0) } ?? 0 : run(nil)
                        }
                    } } }
                    XCTAssertEqual(done, 1, "\(g)")
                    for f in 0..<m {
                        for q in 0..<pixels {
                            let i = f * pixels + q
                            if fs.contains(f) && ps.contains(q) {
                                XCTAssertEqual(y[i].bitPattern, want[i].bitPattern, "\(g) f\(f) p\(q) epilogue \(lane)")
                            } else {
                                XCTAssertTrue(y[i].isNaN, "\(g) f\(f) p\(q) written outside the part")
                            }
                        }
                    }
                }
            }
        }
    }

    /// Parts of the filters (from a multiple of 16) and rows write exactly their part, with the whole call's bits.
    func testPartsWriteOnlyTheirOutputs() throws {
        try requireDirect()
        var rng = SplitMix(seed: 42)
        let g = Self.geometries[2]
        let x = random(g.channels * g.hp * g.wp, &rng), w = random(g.filters * g.k, &rng), bias = random(g.filters, &rng)
        let whole = try XCTUnwrap(direct(g, x: x, w: w, bias: bias))
        let fs = 16..<37, rs = 1..<4
        let part = try XCTUnwrap(direct(g, x: x, w: w, bias: bias, filters: fs, rows: rs))
        for f in 0..<g.filters {
            for r in 0..<g.oh {
                for c in 0..<g.ow {
                    let i = (f * g.oh + r) * g.ow + c
                    if fs.contains(f) && rs.contains(r) {
                        XCTAssertEqual(part[i].bitPattern, whole[i].bitPattern, "f\(f) r\(r) c\(c)")
                    } else {
                        XCTAssertTrue(part[i].isNaN, "f\(f) r\(r) c\(c) written outside the part")
                    }
                }
            }
        }
    }

    /// What the kernel hands back: another level, windows past the padded input, filters not from a block
    /// start, empty ranges, too many taps, an unknown activation.
    func testRefusals() throws {
        try requireDirect()
        var rng = SplitMix(seed: 43)
        let g = Self.geometries[0]
        let x = random(g.channels * g.hp * g.wp, &rng), w = random(g.filters * g.k, &rng)
        XCTAssertNil(direct(g, x: x, w: w, bias: nil, level: SIMDKernels.avx2))
        XCTAssertNil(direct(g, x: x, w: w, bias: nil, filters: 3..<20))
        XCTAssertNil(direct(g, x: x, w: w, bias: nil, rows: 4..<4))
        // oh one too many for the padded input.
        var y = [Float](repeating: 0, count: g.filters * (g.oh + 1) * g.ow)
        let packed = [Float](repeating: 0, count: sk_conv_direct_packed_count(g.filters, g.k))
        let past = x.withUnsafeBufferPointer { xb in packed.withUnsafeBufferPointer { pb in y.withUnsafeMutableBufferPointer { yb in
            sk_conv_direct(SIMDKernels.avx512, xb.baseAddress!, g.channels, g.hp, g.wp, pb.baseAddress!, g.filters, g.kh, g.kw, 1, 1,
                           1, 1, nil, yb.baseAddress!, (g.oh + 1) * g.ow, g.oh + 1, g.ow, 0, g.filters, 0, g.oh + 1, nil, 0)
        } } }
        XCTAssertEqual(past, 0)
        var e = sk_lane_epilogue()
        e.count = 1
        e.op.0 = 99
        XCTAssertNil(direct(g, x: x, w: w, bias: nil, epilogue: &e))
    }

    /// Every lane-epilogue kind, with and without the affine step: what the kernel without an epilogue
    /// followed by `ConvEpilogue.apply` gives, bit for bit.
    func testFusedEpilogueGivesTheSeparateKernelsBits() throws {
        try requireDirect()
        var rng = SplitMix(seed: 44)
        let g = Self.geometries[2]
        let x = random(g.channels * g.hp * g.wp, &rng).map { $0 * 3 }, w = random(g.filters * g.k, &rng), bias = random(g.filters, &rng)
        let slopes = random(g.filters, &rng)
        let kinds: [FusedActivation] = [.relu, .clip(lo: -0.5, hi: 0.75), .leakyRelu(alpha: 0.1), .prelu(slopes: slopes), .prelu(slopes: [0.2]),
                                        .vector(.hardSwish), .vector(.hardSigmoid(alpha: 0.3, beta: 0.4)), .max(0.1, scalarFirst: false),
                                        .min(0.2, scalarFirst: true), .hardSwishOps, .arithmetic(.mul, 1.5, scalarFirst: false),
                                        .arithmetic(.sub, 0.25, scalarFirst: true), .arithmetic(.div, 3, scalarFirst: false),
                                        .arithmetic(.add, -0.5, scalarFirst: true)]
        let plain = try XCTUnwrap(direct(g, x: x, w: w, bias: bias))
        for kind in kinds {
            for affine in [false, true] {
                let ep = ConvEpilogue(bias: bias, scale: affine ? random(g.filters, &rng) : nil,
                                      shift: affine ? random(g.filters, &rng) : nil, activations: [kind])
                var want = plain
                want.withUnsafeMutableBufferPointer { yb in
                    for f in 0..<g.filters { ep.apply(yb.baseAddress! + f * g.oh * g.ow, count: g.oh * g.ow, channel: f, skipBias: true) }
                }
                let got = try XCTUnwrap(ep.withLaneEpilogue { direct(g, x: x, w: w, bias: bias, epilogue: $0) } ?? nil, "\(kind)")
                XCTAssertTrue(same(got, want), "\(kind) affine \(affine)")
            }
        }
    }

    // MARK: The interpreter's Convs

    struct Case: CustomStringConvertible {
        var name: String
        var batch = 1, c = 16, m = 24, group = 1
        var spatial: [Int], kernel: [Int]
        var attributes: [String: Attribute] = [:]
        var description: String { name }
    }

    static let cases = [
        Case(name: "3x3 pad 1", c: 16, m: 24, spatial: [20, 20], kernel: [3, 3], attributes: ["pads": .ints([1, 1, 1, 1])]),
        Case(name: "3x3 stride 2 SAME_UPPER", c: 5, m: 40, spatial: [17, 22], kernel: [3, 3],
             attributes: ["strides": .ints([2, 2]), "auto_pad": .string("SAME_UPPER")]),
        Case(name: "groups 2, batch 2", batch: 2, c: 8, m: 34, group: 2, spatial: [9, 11], kernel: [3, 3],
             attributes: ["pads": .ints([0, 2, 1, 0]), "group": .int(2)]),
        Case(name: "[5, 1] down a column", c: 12, m: 20, spatial: [30, 1], kernel: [5, 1], attributes: ["pads": .ints([2, 0, 2, 0])]),
        Case(name: "1-D dilated", c: 6, m: 17, spatial: [50], kernel: [7], attributes: ["dilations": .ints([2]), "pads": .ints([3, 5])]),
        Case(name: "1x1", c: 33, m: 16, spatial: [7, 9], kernel: [1, 1]),
    ]

    func graph(_ t: Case, seed: UInt64, extra: [Node] = [], output: String = "y") -> Graph {
        var rng = SplitMix(seed: seed)
        let w = random(t.m * t.c / t.group * t.kernel.reduce(1, *), &rng)
        let consts = [Constant(name: "W", tensor: Tensor(w, shape: [t.m, t.c / t.group] + t.kernel)),
                      Constant(name: "B", tensor: Tensor(random(t.m, &rng), shape: [t.m]))]
        let conv = Node(name: "conv", opType: "Conv", inputs: ["x", "W", "B"], outputs: ["y"], attributes: t.attributes)
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: ([t.batch, t.c] + t.spatial).map(Dim.fixed))],
                     outputs: [ValueInfo(name: output, dtype: .float32, shape: nil)], nodes: [conv] + extra, constants: consts)
    }

    func input(_ t: Case, seed: UInt64) -> Tensor {
        var rng = SplitMix(seed: seed)
        let shape = [t.batch, t.c] + t.spatial
        return Tensor(random(shape.reduce(1, *), &rng).map { $0 * 2 }, shape: shape)
    }

    func testPlannerPacksTheFilters() throws {
        try requireDirect()
        SIMDKernels.level = SIMDKernels.avx512
        for t in Self.cases {
            var planner = ExecutionPlanner(graph: graph(t, seed: 1), threads: 1)
            try planner.run(optimize: true)
            let conv = try XCTUnwrap(planner.graph.nodes.first { $0.opType == "Conv" }, "\(t)")
            XCTAssertEqual(conv.attributes[NNKernels.directAttribute], .int(1), "\(t)")
            let packed = try XCTUnwrap(planner.graph.constant(named: conv.inputs[5])?.encoding.shape, "\(t)")
            let rows = t.c / t.group * t.kernel.reduce(1, *)
            XCTAssertEqual(packed, [t.group * sk_conv_direct_packed_count(t.m / t.group, rows)], "\(t)")
        }
        // A 1-D conv Winograd may take (≥ 128 channels each way) gets both sets of filters (Winograd's as input 4);
        // 2-D Convs never get Winograd's at this level.
        let wide = Case(name: "1-D 128", c: 128, m: 128, spatial: [40], kernel: [5], attributes: ["pads": .ints([2, 2])])
        let square = Case(name: "3x3 128", c: 128, m: 128, spatial: [12, 12], kernel: [3, 3], attributes: ["pads": .ints([1, 1, 1, 1])])
        for (t, winograd) in [(wide, true), (square, false)] {
            var planner = ExecutionPlanner(graph: graph(t, seed: 1), threads: 1)
            try planner.run(optimize: true)
            let conv = try XCTUnwrap(planner.graph.nodes.first { $0.opType == "Conv" })
            XCTAssertEqual(conv.attributes[NNKernels.directAttribute], .int(1), "\(t)")
            XCTAssertEqual(conv.attributes[NNKernels.winogradAttribute] != nil, winograd, "\(t)")
            XCTAssertEqual(conv.inputs.count, 6, "\(t)")
            XCTAssertEqual(conv.inputs[4].isEmpty, !winograd, "\(t)")
        }
        // Not: depthwise, filters that are an input, another level.
        let depthwise = Case(name: "depthwise", c: 8, m: 8, group: 8, spatial: [9, 9], kernel: [3, 3], attributes: ["group": .int(8)])
        var variable = graph(Self.cases[0], seed: 1)
        variable.removeConstant(named: "W")
        variable.inputs.append(ValueInfo(name: "W", dtype: .float32, shape: [24, 16, 3, 3].map(Dim.fixed)))
        for g in [graph(depthwise, seed: 1), variable] {
            var planner = ExecutionPlanner(graph: g, threads: 1)
            try planner.run(optimize: true)
            XCTAssertNil(planner.graph.nodes.first { $0.opType == "Conv" }?.attributes[NNKernels.directAttribute])
        }
        SIMDKernels.level = SIMDKernels.avx2
        var planner = ExecutionPlanner(graph: graph(Self.cases[0], seed: 1), threads: 1)
        try planner.run(optimize: true)
        XCTAssertNil(planner.graph.nodes.first { $0.opType == "Conv" }?.attributes[NNKernels.directAttribute])
    }

    /// Close to the unoptimized path (im2col + GEMM, another summation order) and to float64 on every
    /// case; 1, 2 and 3 threads and a batch against its items one at a time: the same bits.
    func testInterpreterConvsOnTheDirectKernel() throws {
        try requireDirect()
        SIMDKernels.level = SIMDKernels.avx512
        for (k, t) in Self.cases.enumerated() {
            let g = graph(t, seed: UInt64(10 + k))
            let x = input(t, seed: UInt64(20 + k))
            let unoptimized = try XCTUnwrap(Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]?.floats, "\(t)")
            var runs: [[UInt32]] = []
            for threads in [1, 2, 3] {
                let y = try XCTUnwrap(Interpreter(graph: g, options: .init(threads: threads)).run(["x": x])["y"]?.floats, "\(t)")
                XCTAssertEqual(y.count, unoptimized.count, "\(t)")
                let scale = Double(unoptimized.map(abs).max() ?? 1)
                let err = zip(y, unoptimized).map { abs(Double($0) - Double($1)) }.max() ?? 0
                XCTAssertLessThan(err / scale, 2e-6, "\(t) threads \(threads)")
                runs.append(y.map(\.bitPattern))
            }
            XCTAssertTrue(runs.allSatisfy { $0 == runs[0] }, "\(t): thread counts")
            guard t.batch > 1, let xs = x.floats else { continue }
            var one = t
            one.batch = 1
            let per = xs.count / t.batch
            var items: [UInt32] = []
            for n in 0..<t.batch {
                let xi = Tensor(Array(xs[(n * per)..<((n + 1) * per)]), shape: [1, t.c] + t.spatial)
                items += try Interpreter(graph: graph(one, seed: UInt64(10 + k))).run(["x": xi])["y"]?.floats?.map(\.bitPattern) ?? []
            }
            XCTAssertEqual(items, runs[0], "\(t): batch against items")
        }
    }

    /// A residual Add and an activation fused into a direct Conv — Relu (in the kernel's epilogue) and
    /// SiLU (after it, per filter) — give the Conv alone followed by the separate kernels, bit for bit.
    func testFusedResidualAndActivationsKeepTheBits() throws {
        try requireDirect()
        SIMDKernels.level = SIMDKernels.avx512
        let t = Self.cases[0]
        let x = input(t, seed: 4)
        let outShape = [1, t.m, 20, 20]
        var rng = SplitMix(seed: 5)
        let r = Tensor(random(outShape.reduce(1, *), &rng), shape: outShape)
        let conv = try XCTUnwrap(Interpreter(graph: graph(t, seed: 3)).run(["x": x])["y"])
        let add = Node(name: "add", opType: "Add", inputs: ["y", "r"], outputs: ["s"])
        let relu = Node(name: "relu", opType: "Relu", inputs: ["y"], outputs: ["z"])
        let sig = Node(name: "sig", opType: "Sigmoid", inputs: ["s"], outputs: ["t"])
        let mul = Node(name: "mul", opType: "Mul", inputs: ["s", "t"], outputs: ["z"])
        // Relu alone (the lane epilogue), then residual + SiLU (per filter after the kernel).
        let reluGraph = graph(t, seed: 3, extra: [relu], output: "z")
        let fusedRelu = try XCTUnwrap(Interpreter(graph: reluGraph).run(["x": x])["z"]?.floats)
        let separateRelu = try XCTUnwrap(KernelRegistry.kernels["Relu"])(KernelContext(node: relu, inputs: [conv]))[0]
        XCTAssertEqual(fusedRelu.map(\.bitPattern), separateRelu.floats?.map(\.bitPattern))
        var siluGraph = graph(t, seed: 3, extra: [add, sig, mul], output: "z")
        siluGraph.inputs.append(ValueInfo(name: "r", dtype: .float32, shape: outShape.map(Dim.fixed)))
        var planner = ExecutionPlanner(graph: siluGraph, threads: 1)
        try planner.run(optimize: true)
        XCTAssertEqual(planner.graph.nodes.filter { $0.opType != "Conv" }.count, 0, "residual and SiLU fused into the Conv")
        let fused = try XCTUnwrap(Interpreter(graph: siluGraph).run(["x": x, "r": r])["z"]?.floats)
        let s = try ElementwiseKernels.add(KernelContext(node: add, inputs: [conv, r]))[0]
        let sg = try XCTUnwrap(KernelRegistry.kernels["Sigmoid"])(KernelContext(node: sig, inputs: [s]))[0]
        let z = try XCTUnwrap(KernelRegistry.kernels["Mul"])(KernelContext(node: mul, inputs: [s, sg]))[0]
        XCTAssertEqual(fused.map(\.bitPattern), z.floats?.map(\.bitPattern))
    }

    /// The interpreter's Conv takes the direct kernel (not a fallback): its bits are the contract's on the
    /// zero-padded input, for a padded 3 × 3 conv, a column conv (run along the row in memory) and a 1 × 1.
    func testInterpreterBitsAreTheKernelContracts() throws {
        try requireDirect()
        SIMDKernels.level = SIMDKernels.avx512
        for (t, pads) in [(Self.cases[0], [1, 1, 1, 1]), (Self.cases[3], [2, 0, 2, 0]), (Self.cases[5], [0, 0, 0, 0])] {
            let g = graph(t, seed: 7)
            let x = input(t, seed: 8)
            let y = try XCTUnwrap(Interpreter(graph: g).run(["x": x])["y"]?.floats, "\(t)")
            let (h, w) = (t.spatial[0], t.spatial[1])
            let hp = h + pads[0] + pads[2], wp = w + pads[1] + pads[3]
            var xp = [Float](repeating: 0, count: t.c * hp * wp)
            let xs = try XCTUnwrap(x.floats)
            for c in 0..<t.c {
                for r in 0..<h {
                    for q in 0..<w { xp[(c * hp + r + pads[0]) * wp + q + pads[1]] = xs[(c * h + r) * w + q] }
                }
            }
            let weights = try XCTUnwrap(g.constant(named: "W")?.encoding.decoded().floats)
            let bias = try XCTUnwrap(g.constant(named: "B")?.encoding.decoded().floats)
            let geo = Geometry(channels: t.c, filters: t.m, hp: hp, wp: wp, kh: t.kernel[0], kw: t.kernel[1], sh: 1, sw: 1, dh: 1, dw: 1)
            XCTAssertTrue(same(y, reference(geo, x: xp, w: weights, bias: bias)), "\(t)")
        }
    }

    /// A grouped Conv with a BatchNormalization and a per-channel PRelu fused into it (the lane epilogue
    /// reads each group's own scales and slopes), 3 × 3 and 1 × 1 (the pointwise kernel): the unfused
    /// nodes' bits. light_shufflenet's grouped 1 × 1 convs read the first group's.
    func testGroupedConvFusedEpilogueReadsEachGroupsChannels() throws {
        try requireDirect()
        SIMDKernels.level = SIMDKernels.avx512
        for (k, group, c, m) in [(3, 2, 8, 48), (1, 3, 24, 60)] {
            var rng = SplitMix(seed: UInt64(50 + k))
            var consts = [Constant(name: "W", tensor: Tensor(random(m * c / group * k * k, &rng), shape: [m, c / group, k, k])),
                          Constant(name: "slope", tensor: Tensor(random(m, &rng), shape: [m, 1, 1]))]
            for (name, lo) in [("s", Float(0.5)), ("beta", -1), ("mu", -1), ("var", 0.1)] {
                consts.append(Constant(name: name, tensor: Tensor(random(m, &rng).map { lo + 1 + $0 }, shape: [m])))
            }
            let nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W"], outputs: ["c"],
                              attributes: ["pads": .ints([k / 2, k / 2, k / 2, k / 2]), "group": .int(group)]),
                         Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "beta", "mu", "var"], outputs: ["b"]),
                         Node(name: "prelu", opType: "PRelu", inputs: ["b", "slope"], outputs: ["y"])]
            let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [1, c, 9, 10].map(Dim.fixed))],
                          outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
            var planner = ExecutionPlanner(graph: g, threads: 1)
            try planner.run(optimize: true)
            XCTAssertEqual(planner.graph.nodes.map(\.opType), ["Conv"], "BatchNormalization and PRelu fused")
            let x = Tensor(random(c * 90, &rng).map { $0 * 3 }, shape: [1, c, 9, 10])
            let fused = try XCTUnwrap(Interpreter(graph: g, options: .init(threads: 2)).run(["x": x])["y"]?.floats)
            let separate = try XCTUnwrap(Interpreter(graph: g, options: .init(optimize: false)).run(["x": x])["y"]?.floats)
            XCTAssertTrue(same(fused, separate), "k\(k) group \(group)")
        }
    }
}
