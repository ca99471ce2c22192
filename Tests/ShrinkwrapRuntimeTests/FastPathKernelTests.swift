import XCTest
@testable import ShrinkwrapRuntime
import ShrinkwrapIR

/// The specialised loops of Resize (two innermost axes per plane), whole-plane
/// AveragePool / LpPool and DepthToSpace / SpaceToDepth (row copies) against
/// the general loops (`NNKernels.fastPaths` off), bit for bit, over random
/// shapes, modes, scales and thread counts.
final class FastPathKernelTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    /// A small deterministic generator (SplitMix64).
    struct Rng {
        var s: UInt64
        mutating func next() -> UInt64 {
            s &+= 0x9E37_79B9_7F4A_7C15
            var z = s
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ r: ClosedRange<Int>) -> Int { r.lowerBound + Int(next() % UInt64(r.count)) }
        mutating func pick<T>(_ a: [T]) -> T { a[int(0...(a.count - 1))] }
        /// Values spread over many magnitudes (so a changed summation order changes bits),
        /// with signed zeros and infinities now and then.
        mutating func value(special: Bool) -> Float {
            let r = int(0...99)
            if special && r == 0 { return -0.0 }
            if special && r == 1 { return .infinity }
            let m = Float(Int64(next() % 2_000_001) - 1_000_000) / 1_000_000
            return m * Float(pick([1, 1, 3, 1e-3, 1e3, 1e6]))
        }
    }

    func node(_ op: String, inputs: Int, _ attrs: [String: Attribute]) -> Node {
        Node(name: "n", opType: op, inputs: (0..<inputs).map { "i\($0)" }, outputs: ["o"], attributes: attrs)
    }

    /// Runs `op` with the fast paths on and off and requires identical bits.
    func assertSameBits(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute], threads: Int,
                        _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let kernel = try XCTUnwrap(KernelRegistry.kernels[op])
        let c = KernelContext(node: node(op, inputs: inputs.count, attrs), inputs: inputs, threads: threads)
        let fast = try kernel(c)[0]
        let slow = try NNKernels.$fastPaths.withValue(false) { try kernel(c)[0] }
        XCTAssertEqual(fast.shape, slow.shape, what, file: file, line: line)
        XCTAssertEqual(fast.dtype, slow.dtype, what, file: file, line: line)
        switch (fast.storage, slow.storage) {
        case (.float(let a), .float(let b)):
            XCTAssertEqual(a.count, b.count, what, file: file, line: line)
            if let i = (0..<min(a.count, b.count)).first(where: { a[$0].bitPattern != b[$0].bitPattern }) {
                XCTFail("\(what): element \(i) is \(a[i]) fast, \(b[i]) general", file: file, line: line)
            }
        default:
            XCTAssertEqual(fast, slow, what, file: file, line: line)
        }
    }

    // MARK: Resize

    /// Whether Resize takes the per-plane loop for this node and these inputs.
    func resizeUsesPlanes(_ inputs: [Tensor?], _ attrs: [String: Attribute]) throws -> Bool {
        let c = KernelContext(node: node("Resize", inputs: inputs.count, attrs), inputs: inputs, threads: 1)
        let xt = try c.input(0)
        let a = try NNKernels.ResizeAttributes(c)
        let axes = try NNKernels.resizeAxes(c, rank: xt.rank)
        let (scale, out) = try NNKernels.resizeTarget(c, xt.shape, axes: axes, policy: a.policy)
        let roi = try NNKernels.regionOfInterest(c, rank: xt.rank, axes: axes, ctm: a.ctm)
        return try NNKernels.resizePlanes(c, xt.floats ?? [], shape: xt.shape, to: out, scale: scale, roi: roi, a) != nil
    }

    func testResizePlanesMatchAxisByAxis() throws {
        var g = Rng(s: 17)
        let ctms = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize", "tf_half_pixel_for_nn"]
        let scales: [Float] = [2, 2, 2, 0.5, 3, 1.5, 0.75, 1, 1.3, 0.4, 4]
        var checked = 0
        for trial in 0..<400 {
            let mode = g.pick(["linear", "linear", "nearest", "cubic"])
            let ctm = g.pick(ctms)
            var attrs: [String: Attribute] = ["mode": .string(mode), "coordinate_transformation_mode": .string(ctm),
                                              "nearest_mode": .string(g.pick(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))]
            if mode != "nearest" && g.int(0...4) == 0 { attrs["antialias"] = .int(1) }
            if mode == "cubic" && g.int(0...2) == 0 { attrs["exclude_outside"] = .int(1) }
            if ctm == "tf_crop_and_resize" { attrs["extrapolation_value"] = .float(Float(g.int(-3...3))) }
            let rank = g.pick([4, 4, 4, 3, 2])
            var shape = [Int]()
            for d in 0..<rank { shape.append(d < rank - 2 ? g.int(1...3) : g.int(1...11)) }
            let x = Tensor((0..<shape.reduce(1, *)).map { _ in g.value(special: trial % 5 == 0) }, shape: shape)
            var sh = g.pick(scales), sw = g.pick(scales)
            if sh == 1 && sw == 1 { sw = 2 }
            var inputs: [Tensor?] = [x, nil, nil, nil]
            if ctm == "tf_crop_and_resize" {
                let lo = [Float](repeating: 0, count: rank - 2) + [Float(g.int(-2...4)) / 10, Float(g.int(-2...4)) / 10]
                let hi = [Float](repeating: 1, count: rank - 2) + [Float(g.int(6...12)) / 10, Float(g.int(6...12)) / 10]
                inputs[1] = Tensor(lo + hi, shape: [2 * rank])
            }
            let outH = Int((Float(shape[rank - 2]) * sh).rounded(.down)), outW = Int((Float(shape[rank - 1]) * sw).rounded(.down))
            if outH == 0 || outW == 0 { sh = 2; sw = 2 }
            if g.int(0...3) == 0 {
                // Sizes equal to the input would resize nothing (no per-plane loop either).
                let sizeH = max(outH, 1) + g.int(0...1)
                let sizeW = max(outW, 1) + (sizeH == shape[rank - 2] && max(outW, 1) == shape[rank - 1] ? 1 : 0)
                let sizes = shape.dropLast(2).map(Int64.init) + [Int64(sizeH), Int64(sizeW)]
                inputs[3] = Tensor(ints: sizes, shape: [rank])
            } else {
                inputs[2] = Tensor([Float](repeating: 1, count: rank - 2) + [sh, sw], shape: [rank])
            }
            let what = "trial \(trial): \(mode) \(ctm) \(attrs) shape \(shape) scales \(sh)×\(sw) sizes \(inputs[3]?.ints ?? [])"
            XCTAssertTrue(try resizeUsesPlanes(inputs, attrs), what)
            // Every instruction-set level: the two-tap passes run on CKernels (sk_resize_blend / sk_resize_pairs).
            for level in Set([SIMDKernels.best, SIMDKernels.avx2, SIMDKernels.portable].filter { $0 <= SIMDKernels.best }) {
                SIMDKernels.level = level
                for threads in [1, 3] {
                    try assertSameBits("Resize", inputs, attrs, threads: threads, what + " threads \(threads) level \(level)")
                }
            }
            SIMDKernels.level = SIMDKernels.best
            checked += 1
        }
        XCTAssertEqual(checked, 400)
    }

    func testResizeOtherAxesKeepTheGeneralLoop() throws {
        // Resizing the channel axis (or an integer tensor's) is not a per-plane resize of the last two axes.
        let x = Tensor((0..<24).map { Float($0) }, shape: [1, 2, 3, 4])
        let attrs: [String: Attribute] = ["mode": .string("linear")]
        XCTAssertFalse(try resizeUsesPlanes([x, nil, Tensor([1, 2, 2, 2], shape: [4])], attrs))
        XCTAssertTrue(try resizeUsesPlanes([x, nil, Tensor([1, 1, 2, 2], shape: [4])], attrs))
        try assertSameBits("Resize", [x, nil, Tensor([1, 2, 2, 2], shape: [4])], attrs, threads: 2, "channel axis")
        let ints = Tensor(ints: (0..<24).map { Int64($0 * 7 - 50) }, shape: [1, 2, 3, 4], dtype: .int8)
        try assertSameBits("Resize", [ints, nil, Tensor([1, 1, 1.5, 2.5], shape: [4])], attrs, threads: 3, "int8")
    }

    // MARK: Pools

    func testWholePlanePoolsMatchWindowLoop() throws {
        var g = Rng(s: 5)
        for trial in 0..<120 {
            let spatialRank = g.pick([2, 2, 1, 3])
            let spatial = (0..<spatialRank).map { _ in g.int(1...(spatialRank == 3 ? 5 : 40)) }
            let shape = [g.int(1...2), g.pick([1, 3, 8, 13, 16, 17])] + spatial
            let x = Tensor((0..<shape.reduce(1, *)).map { _ in g.value(special: false) }, shape: shape)
            let op = g.pick(["AveragePool", "AveragePool", "LpPool"])
            var attrs: [String: Attribute] = ["kernel_shape": .ints(spatial)]
            if op == "AveragePool" {
                attrs["count_include_pad"] = .int(g.int(0...1))
                if g.int(0...1) == 0 { attrs["strides"] = .ints(spatial.map { _ in g.int(1...3) }) }
            } else {
                attrs["p"] = .int(g.pick([1, 2, 3]))
            }
            let what = "trial \(trial): \(op) \(shape) \(attrs)"
            let c = KernelContext(node: node(op, inputs: 1, attrs), inputs: [x], threads: 1)
            let geo = try WindowGeometry.forward(c, inputSpatial: spatial, kernel: spatial, ceilMode: false)
            let planes = shape[0] * shape[1]
            var kind = NNKernels.PoolKind.average
            if case .int(let p) = attrs["p"] { kind = .lp(Float(p)) }
            XCTAssertNotNil(NNKernels.poolWholePlane(x.floats ?? [], planes: planes, geo: geo, kind: kind, threads: 1), what)
            for threads in [1, 3] { try assertSameBits(op, [x], attrs, threads: threads, what + " threads \(threads)") }
        }
    }

    func testPartialWindowsKeepTheWindowLoop() throws {
        // A kernel smaller than the plane, or padding, is not a whole-plane window.
        let x = Tensor((0..<50).map { Float($0) / 7 }, shape: [1, 2, 5, 5])
        for (k, extra) in [([4, 5], ["strides": Attribute.ints([2, 2])]), ([5, 5], ["pads": Attribute.ints([1, 0, 0, 0])])] {
            var attrs = extra
            attrs["kernel_shape"] = .ints(k)
            let c = KernelContext(node: node("AveragePool", inputs: 1, attrs), inputs: [x], threads: 1)
            let geo = try WindowGeometry.forward(c, inputSpatial: [5, 5], kernel: k, ceilMode: false)
            XCTAssertNil(NNKernels.poolWholePlane(x.floats ?? [], planes: 2, geo: geo, kind: .average, threads: 1))
            try assertSameBits("AveragePool", [x], attrs, threads: 2, "\(attrs)")
        }
    }

    func testGlobalPoolPlanesMatchPlaneLoop() throws {
        var g = Rng(s: 23)
        for trial in 0..<60 {
            let shape = [g.int(1...2), g.pick([1, 5, 8, 9, 16, 23])] + (0..<g.int(0...2)).map { _ in g.int(1...30) }
            let x = Tensor((0..<shape.reduce(1, *)).map { _ in g.value(special: false) }, shape: shape)
            let op = g.pick(["GlobalAveragePool", "GlobalLpPool"])
            let attrs: [String: Attribute] = op == "GlobalLpPool" ? ["p": .int(g.pick([1, 2, 3]))] : [:]
            let plane = shape.dropFirst(2).reduce(1, *)
            XCTAssertNotNil(NNKernels.globalPoolPlanes(x.floats ?? [], planes: shape[0] * shape[1], plane: plane,
                                                       kind: .average, threads: 1))
            for threads in [1, 3] { try assertSameBits(op, [x], attrs, threads: threads, "trial \(trial): \(op) \(shape) \(attrs)") }
        }
    }

    /// AveragePool's window loop sums each window row by row in float32 from
    /// +0 and divides by the window size as a float (the bits the whole-plane
    /// path and the cached divisors keep); a naive loop written that way agrees bit for bit.
    func testAveragePoolMatchesRowMajorReference() throws {
        var g = Rng(s: 29)
        for trial in 0..<60 {
            let h = g.int(1...12), w = g.int(1...12), k = [g.int(1...4), g.int(1...4)], s = [g.int(1...3), g.int(1...3)]
            let pads = [g.int(0...1), g.int(0...1), g.int(0...1), g.int(0...1)]
            let includePad = g.int(0...1), ceil = g.int(0...1)
            let x = Tensor((0..<(2 * h * w)).map { _ in g.value(special: false) }, shape: [1, 2, h, w])
            let attrs: [String: Attribute] = ["kernel_shape": .ints(k), "strides": .ints(s), "pads": .ints(pads),
                                              "count_include_pad": .int(includePad), "ceil_mode": .int(ceil)]
            let kernel = try XCTUnwrap(KernelRegistry.kernels["AveragePool"])
            guard let y = try? kernel(KernelContext(node: node("AveragePool", inputs: 1, attrs), inputs: [x], threads: 2))[0],
                  let got = y.floats, let xv = x.floats else { continue }
            let oh = y.shape[2], ow = y.shape[3]
            for c in 0..<2 { for r in 0..<oh { for q in 0..<ow {
                var sum: Float = 0, valid = 0
                let r0 = r * s[0] - pads[0], q0 = q * s[1] - pads[1]
                for i in max(r0, 0)..<max(min(r0 + k[0], h), max(r0, 0)) {
                    for j in max(q0, 0)..<max(min(q0 + k[1], w), max(q0, 0)) { sum += xv[(c * h + i) * w + j]; valid += 1 }
                }
                // With count_include_pad, taps in the explicit padding count (not those past it).
                let rows = min(r0 + k[0], h + pads[2]) - max(r0, -pads[0]), cols = min(q0 + k[1], w + pads[3]) - max(q0, -pads[1])
                let count = includePad == 1 ? rows * cols : valid
                let want: Float = count > 0 ? sum / Float(count) : 0
                let at = (c * oh + r) * ow + q
                XCTAssertEqual(got[at].bitPattern, want.bitPattern, "trial \(trial) \(attrs) \(h)×\(w) at \(c),\(r),\(q)")
            } } }
        }
    }

    // MARK: DepthToSpace / SpaceToDepth

    func testBlockRowsMatchGather() throws {
        var g = Rng(s: 11)
        for trial in 0..<150 {
            let bs = g.pick([1, 2, 2, 3, 4])
            let n = g.int(1...2), h = g.int(1...6), w = g.int(1...7)
            let toSpace = g.int(0...1) == 0
            let mode = g.pick(["DCR", "CRD"])
            let shape = toSpace ? [n, bs * bs * g.int(1...3), h, w] : [n, g.int(1...4), h * bs, w * bs]
            let count = shape.reduce(1, *)
            let x: Tensor
            switch trial % 3 {
            case 0: x = Tensor((0..<count).map { _ in g.value(special: true) }, shape: shape)
            case 1: x = Tensor(ints: (0..<count).map { _ in Int64(g.int(-100...100)) }, shape: shape, dtype: .int32)
            default: x = Tensor(bools: (0..<count).map { _ in g.int(0...1) == 1 }, shape: shape)
            }
            let op = toSpace ? "DepthToSpace" : "SpaceToDepth"
            let attrs: [String: Attribute] = ["blocksize": .int(bs), "mode": .string(mode)]
            for threads in [1, 3] {
                try assertSameBits(op, [x], attrs, threads: threads, "trial \(trial): \(op) \(mode) bs \(bs) \(shape) \(x.dtype)")
            }
        }
    }
}
