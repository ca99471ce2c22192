import ShrinkwrapIR

// Resize (opset 19), DepthToSpace and SpaceToDepth.
extension NNKernels {
    // MARK: Resize

    enum ResizeMode { case nearest, linear, cubic }

    /// Taps of one output position along one axis: input indices (already
    /// clamped to the axis) and their weights; `extrapolate` marks a
    /// tf_crop_and_resize position outside the input.
    struct AxisTaps {
        var width: Int          // taps per output position
        var index: [Int]        // outCount × width
        var weight: [Float]     // outCount × width
        var extrapolate: [Bool] // outCount
    }

    /// Resize with ONNX opset-19 semantics: nearest / linear / cubic modes,
    /// every coordinate_transformation_mode, scales or sizes, axes,
    /// keep_aspect_ratio_policy, antialias, exclude_outside. Interpolation is
    /// separable, so each resized axis is processed in turn.
    public static func resize(_ c: KernelContext) throws -> [Tensor] {
        let xt = try c.input(0)
        let x = try resizeInputValues(c, xt)
        let attrs = try ResizeAttributes(c)
        let axes = try resizeAxes(c, rank: xt.rank)
        let (scale, outShape) = try resizeTarget(c, xt.shape, axes: axes, policy: attrs.policy)
        let roi = try regionOfInterest(c, rank: xt.rank, axes: axes, ctm: attrs.ctm)
        if try c.checkedCount(outShape) == 0 {
            if case .int = xt.storage { return [Tensor(dtype: xt.dtype, shape: outShape, storage: .int([]))] }
            return [floatTensor([], shape: outShape, dtype: xt.dtype)]
        }
        let y = try resizePlanes(c, x, shape: xt.shape, to: outShape, scale: scale, roi: roi, attrs)
            ?? resizeAxisByAxis(c, x, shape: xt.shape, to: outShape, axes: axes, scale: scale, roi: roi, attrs)
        return [resizedTensor(y, like: xt, shape: outShape)]
    }

    // MARK: Resize steps

    /// Resize's attributes, validated.
    struct ResizeAttributes {
        let mode: ResizeMode
        let ctm: String
        let nearestMode: String
        let policy: String
        let antialias: Bool
        let cubicA: Double
        let excludeOutside: Bool
        let extrapolation: Float

        init(_ c: KernelContext) throws {
            let modeName = try c.string("mode", default: "nearest")
            switch modeName {
            case "nearest": mode = .nearest
            case "linear": mode = .linear
            case "cubic": mode = .cubic
            default: throw c.badAttribute("mode", "unknown value '\(modeName)' (expected nearest, linear or cubic)")
            }
            ctm = try c.string("coordinate_transformation_mode", default: "half_pixel")
            let knownCTM = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                            "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"]
            guard knownCTM.contains(ctm) else {
                throw c.badAttribute("coordinate_transformation_mode", "unknown value '\(ctm)'")
            }
            nearestMode = try c.string("nearest_mode", default: "round_prefer_floor")
            guard ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"].contains(nearestMode) else {
                throw c.badAttribute("nearest_mode", "unknown value '\(nearestMode)'")
            }
            policy = try c.string("keep_aspect_ratio_policy", default: "stretch")
            guard ["stretch", "not_larger", "not_smaller"].contains(policy) else {
                throw c.badAttribute("keep_aspect_ratio_policy", "unknown value '\(policy)'")
            }
            antialias = try c.int("antialias", default: 0) != 0
            cubicA = Double(try c.float("cubic_coeff_a", default: -0.75))
            excludeOutside = try c.int("exclude_outside", default: 0) != 0
            extrapolation = try c.float("extrapolation_value", default: 0)
        }
    }

    /// X's values as floats (integers converted; bool refused).
    private static func resizeInputValues(_ c: KernelContext, _ xt: Tensor) throws -> [Float] {
        switch xt.storage {
        case .float(let f): return f
        case .int(let v): return v.map { Float($0) }
        case .bool: throw c.fail("X must be numeric, got bool")
        }
    }

    /// Axes the scales / sizes / roi refer to (the `axes` attribute, default all).
    static func resizeAxes(_ c: KernelContext, rank: Int) throws -> [Int] {
        guard let a = try c.ints("axes") else { return Array(0..<rank) }
        var seen = Set<Int>()
        return try a.map { v in
            let n = try c.axis(v, rank: rank, name: "axes")
            guard seen.insert(n).inserted else { throw c.badAttribute("axes", "axis \(v) is repeated") }
            return n
        }
    }

    /// Optional input `i`, treated as absent when it has no elements.
    private static func nonEmptyInput(_ c: KernelContext, _ i: Int) -> Tensor? {
        guard let t = c.optionalInput(i), t.count > 0 else { return nil }
        return t
    }

    /// The scale and output size of every axis, from scales (input 2) or sizes
    /// (input 3, with keep_aspect_ratio_policy).
    static func resizeTarget(_ c: KernelContext, _ inShape: [Int], axes: [Int],
                                     policy: String) throws -> (scale: [Double], outShape: [Int]) {
        let scalesT = nonEmptyInput(c, 2), sizesT = nonEmptyInput(c, 3)
        guard (scalesT == nil) != (sizesT == nil) else {
            throw c.fail(scalesT == nil ? "one of scales (input 2) or sizes (input 3) is required"
                                        : "only one of scales (input 2) and sizes (input 3) may be given")
        }
        var scale = [Double](repeating: 1, count: inShape.count)
        var outShape = inShape
        if let st = scalesT {
            guard let sv = st.floats else { throw c.fail("scales must be floating point, got \(st.dtype)") }
            guard sv.count == axes.count else {
                throw c.fail("scales has \(sv.count) values for \(axes.count) axes")
            }
            for (i, d) in axes.enumerated() {
                let s = Double(sv[i])
                guard s.isFinite, s > 0 else { throw c.fail("scale \(sv[i]) for axis \(d) must be positive and finite") }
                let o = (s * Double(inShape[d])).rounded(.down)
                guard o < Double(1 << 40) else { throw c.fail("scale \(sv[i]) makes axis \(d) too large") }
                scale[d] = s
                outShape[d] = Int(o)
            }
        } else if let zt = sizesT {
            guard let zv = zt.ints else { throw c.fail("sizes must be int64, got \(zt.dtype)") }
            guard zv.count == axes.count else { throw c.fail("sizes has \(zv.count) values for \(axes.count) axes") }
            for (i, d) in axes.enumerated() {
                guard zv[i] >= 0 && zv[i] <= 1 << 40 else { throw c.fail("size \(zv[i]) for axis \(d) is out of range") }
                guard inShape[d] > 0 || zv[i] == 0 else { throw c.fail("cannot resize empty axis \(d) to \(zv[i])") }
                outShape[d] = Int(zv[i])
                scale[d] = inShape[d] > 0 ? Double(zv[i]) / Double(inShape[d]) : 1
            }
            if policy != "stretch" && !axes.isEmpty {
                let ratios = axes.map { scale[$0] }
                let s = policy == "not_larger" ? (ratios.min() ?? 1) : (ratios.max() ?? 1)
                for d in axes {
                    scale[d] = s
                    outShape[d] = Int((s * Double(inShape[d]) + 0.5).rounded(.down))
                }
            }
        }
        return (scale, outShape)
    }

    /// Region of interest per axis (tf_crop_and_resize only; else 0 … 1).
    static func regionOfInterest(_ c: KernelContext, rank: Int, axes: [Int],
                                         ctm: String) throws -> (start: [Double], end: [Double]) {
        var roiStart = [Double](repeating: 0, count: rank), roiEnd = [Double](repeating: 1, count: rank)
        if ctm == "tf_crop_and_resize" {
            guard let rt = nonEmptyInput(c, 1) else { throw c.fail("tf_crop_and_resize needs roi (input 1)") }
            let rv = rt.doubles
            if rv.count == 2 * axes.count {
                for (i, d) in axes.enumerated() { roiStart[d] = rv[i]; roiEnd[d] = rv[axes.count + i] }
            } else if rv.count == 2 * rank {
                for d in 0..<rank { roiStart[d] = rv[d]; roiEnd[d] = rv[rank + d] }
            } else {
                throw c.fail("roi has \(rv.count) values, expected \(2 * axes.count)")
            }
            for d in 0..<rank where !roiStart[d].isFinite || !roiEnd[d].isFinite {
                throw c.fail("roi values must be finite")
            }
        }
        return (roiStart, roiEnd)
    }

    /// Resizes one axis at a time, shrinking axes first so that no
    /// intermediate result is larger than needed; identity axes are skipped.
    private static func resizeAxisByAxis(_ c: KernelContext, _ x: [Float], shape inShape: [Int], to outShape: [Int],
                                         axes: [Int], scale: [Double], roi: (start: [Double], end: [Double]),
                                         _ attrs: ResizeAttributes) throws -> [Float] {
        var cur = x
        var curShape = inShape
        let order = axes.sorted().filter { outShape[$0] < inShape[$0] } + axes.sorted().filter { outShape[$0] >= inShape[$0] }
        for d in order {
            let inW = curShape[d], outW = outShape[d]
            let identity = abs(scale[d] - 1) < 1e-12 && inW == outW
                && (attrs.ctm != "tf_crop_and_resize" || (roi.start[d] == 0 && roi.end[d] == 1))
            if identity { continue }
            var nextShape = curShape
            nextShape[d] = outW
            _ = try c.checkedCount(nextShape)
            let outer = product(curShape[..<d]), inner = product(curShape[(d + 1)...])
            if outer * inner == 0 || outW == 0 || inW == 0 {
                cur = [Float](repeating: attrs.extrapolation, count: product(nextShape[...]))
                curShape = nextShape
                continue
            }
            let taps = try axisTaps(c, mode: attrs.mode, inW: inW, outW: outW, scale: scale[d], ctm: attrs.ctm,
                                    roi: (roi.start[d], roi.end[d]), nearestMode: attrs.nearestMode,
                                    antialias: attrs.antialias, cubicA: attrs.cubicA, excludeOutside: attrs.excludeOutside)
            cur = resizeAxis(cur, outer: outer, inW: inW, inner: inner, outW: outW, taps: taps,
                             extrapolation: attrs.extrapolation, threads: c.threads)
            curShape = nextShape
        }
        return cur
    }

    /// The result in X's dtype: integers rounded half to even (non-finite → 0,
    /// saturated, then wrapped), floats rounded to the dtype.
    private static func resizedTensor(_ y: [Float], like xt: Tensor, shape outShape: [Int]) -> Tensor {
        switch xt.storage {
        case .int:
            let dt = xt.dtype
            let ints = y.map { v -> Int64 in
                guard v.isFinite else { return 0 }
                let r = v.rounded(.toNearestOrEven)
                return dt.wrap(r >= 9.2e18 ? Int64.max : r <= -9.2e18 ? Int64.min : Int64(r))
            }
            return Tensor(dtype: dt, shape: outShape, storage: .int(ints))
        default:
            return floatTensor(y, shape: outShape, dtype: xt.dtype)
        }
    }

    /// The source coordinate of output index `o` along one axis.
    @inline(__always)
    private static func sourceCoordinate(_ o: Int, ctm: String, scale: Double, inW: Int, outW: Int,
                                         roi: (Double, Double)) -> Double {
        let y = Double(o)
        let lengthResized = scale * Double(inW)
        switch ctm {
        // As in the reference, the resized length is scale · input length
        // (not the rounded output size) for these modes.
        case "align_corners":
            return lengthResized == 1 ? 0 : y * Double(inW - 1) / (lengthResized - 1)
        case "asymmetric":
            return y / scale
        case "tf_crop_and_resize":
            let base = roi.0 * Double(inW - 1)
            if lengthResized == 1 { return (roi.1 - roi.0) * Double(inW - 1) / 2 + base }
            return y * (roi.1 - roi.0) * Double(inW - 1) / (lengthResized - 1) + base
        case "tf_half_pixel_for_nn":  // opset 11; TensorFlow's half-pixel nearest neighbour
            return (y + 0.5) / scale
        case "pytorch_half_pixel":
            return lengthResized == 1 ? -0.5 : (y + 0.5) / scale - 0.5
        case "half_pixel_symmetric":
            let adjustment = Double(outW) / lengthResized
            let offset = Double(inW) / 2 * (1 - adjustment)
            return offset + (y + 0.5) / scale - 0.5
        default: // half_pixel
            return (y + 0.5) / scale - 0.5
        }
    }

    static func axisTaps(_ c: KernelContext, mode: ResizeMode, inW: Int, outW: Int, scale: Double,
                                 ctm: String, roi: (Double, Double), nearestMode: String, antialias: Bool,
                                 cubicA: Double, excludeOutside: Bool) throws -> AxisTaps {
        var extrap = [Bool](repeating: false, count: outW)
        let last = inW - 1
        if mode == .nearest {
            var index = [Int](repeating: 0, count: outW)
            for o in 0..<outW {
                let xo = sourceCoordinate(o, ctm: ctm, scale: scale, inW: inW, outW: outW, roi: roi)
                if ctm == "tf_crop_and_resize" && (xo < 0 || xo > Double(last)) { extrap[o] = true }
                guard xo.isFinite else { throw c.fail("resize coordinate is not finite") }
                let fl = xo.rounded(.down)
                var i: Double
                if fl == xo {
                    i = xo
                } else {
                    let frac = xo - fl
                    switch nearestMode {
                    case "round_prefer_ceil": i = frac < 0.5 ? fl : fl + 1
                    case "floor": i = fl
                    case "ceil": i = fl + 1
                    default: i = frac <= 0.5 ? fl : fl + 1
                    }
                }
                index[o] = Int(min(max(i, 0), Double(last)))
            }
            return AxisTaps(width: 1, index: index, weight: [Float](repeating: 1, count: outW), extrapolate: extrap)
        }
        // Linear / cubic: an even number of taps around the coordinate.
        let aaScale = antialias ? min(scale, 1) : 1
        let support: Double = mode == .linear ? 1 : 2
        let startJ: Int
        if antialias {
            let s = (-support / aaScale).rounded(.down) + 1
            guard s > -Double(4 * inW + 8) else { throw c.fail("antialias filter too wide for scale \(scale)") }
            startJ = Int(s)
        } else {
            startJ = mode == .linear ? 0 : -1
        }
        let width = 2 - 2 * startJ
        _ = try c.checkedCount([outW, width])
        var index = [Int](repeating: 0, count: outW * width)
        var weight = [Float](repeating: 0, count: outW * width)
        var w = [Double](repeating: 0, count: width)
        for o in 0..<outW {
            let xo = sourceCoordinate(o, ctm: ctm, scale: scale, inW: inW, outW: outW, roi: roi)
            guard xo.isFinite, abs(xo) < Double(1 << 50) else { throw c.fail("resize coordinate is not finite") }
            if ctm == "tf_crop_and_resize" && (xo < 0 || xo > Double(last)) { extrap[o] = true }
            let fl = xo.rounded(.down)
            // The left neighbour is preferred: an integral coordinate sits at ratio 1 from its left.
            let base = fl == xo ? Int(fl) - 1 : Int(fl)
            let ratio = fl == xo ? 1.0 : xo - fl
            var sum = 0.0
            for j in 0..<width {
                let t = abs(Double(startJ + j) - ratio) * aaScale
                let v: Double
                if mode == .linear {
                    v = max(0, 1 - t)
                } else {
                    let a = cubicA
                    if t <= 1 { v = ((a + 2) * t - (a + 3)) * t * t + 1 }
                    else if t < 2 { v = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a }
                    else { v = 0 }
                }
                w[j] = v
            }
            for j in 0..<width {
                let src = base + startJ + j
                if excludeOutside && (src < 0 || src > last) { w[j] = 0 }
                sum += w[j]
            }
            let normalize = antialias || excludeOutside
            for j in 0..<width {
                let src = base + startJ + j
                index[o * width + j] = min(max(src, 0), last)
                weight[o * width + j] = Float(normalize && sum != 0 ? w[j] / sum : w[j])
            }
        }
        return AxisTaps(width: width, index: index, weight: weight, extrapolate: extrap)
    }

    /// Applies per-output-position taps along the middle axis of an
    /// outer × inW × inner view.
    private static func resizeAxis(_ x: [Float], outer: Int, inW: Int, inner: Int, outW: Int, taps: AxisTaps,
                                   extrapolation: Float, threads: Int) -> [Float] {
        let width = taps.width
        return makeFloats(outer * outW * inner) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                taps.index.withUnsafeBufferPointer { ib in
                    taps.weight.withUnsafeBufferPointer { wb in
                        taps.extrapolate.withUnsafeBufferPointer { eb in
                            guard let xp = xb.baseAddress else { return }
                            parallelChunks(outer * outW, threads: threads, minChunk: max(1, 16384 / max(inner * width, 1))) { range in
                                for line in range {
                                    let b = line / outW, o = line % outW
                                    let dst = ys.p + line * inner
                                    if eb[o] {
                                        dst.update(repeating: extrapolation, count: inner)
                                        continue
                                    }
                                    let src = xp + b * inW * inner
                                    let t0 = o * width
                                    let first = src + ib[t0] * inner
                                    let w0 = wb[t0]
                                    if width == 1 && w0 == 1 {
                                        dst.update(from: first, count: inner)
                                        continue
                                    }
                                    for i in 0..<inner { dst[i] = w0 * first[i] }
                                    for j in 1..<width {
                                        let wj = wb[t0 + j]
                                        if wj == 0 { continue }
                                        let row = src + ib[t0 + j] * inner
                                        for i in 0..<inner { dst[i] += wj * row[i] }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    // MARK: DepthToSpace / SpaceToDepth

    private static func blockInput(_ c: KernelContext) throws -> (Tensor, Int) {
        let t = try c.input(0)
        guard t.rank == 4 else { throw c.fail("input must be 4-D (N×C×H×W), has shape \(t.shape)") }
        let b = try c.int("blocksize", default: 0)
        guard b >= 1 && b <= attributeLimit else { throw c.badAttribute("blocksize", "must be ≥ 1, got \(b)") }
        return (t, b)
    }

    /// Gathers `src` into a new storage of the same class: `out[i] = src[map(i)]`.
    private static func gather(_ t: Tensor, shape: [Int], count: Int, _ index: (Int) -> Int) -> Tensor {
        switch t.storage {
        case .float(let a):
            return Tensor(dtype: t.dtype, shape: shape, storage: .float((0..<count).map { a[index($0)] }))
        case .int(let a):
            return Tensor(dtype: t.dtype, shape: shape, storage: .int((0..<count).map { a[index($0)] }))
        case .bool(let a):
            return Tensor(dtype: t.dtype, shape: shape, storage: .bool((0..<count).map { a[index($0)] }))
        }
    }

    /// DepthToSpace: moves blocks of channels into b×b spatial blocks
    /// (mode DCR: depth-column-row, default; CRD: column-row-depth).
    public static func depthToSpace(_ c: KernelContext) throws -> [Tensor] {
        let (t, bs) = try blockInput(c)
        let mode = try c.string("mode", default: "DCR")
        guard mode == "DCR" || mode == "CRD" else { throw c.badAttribute("mode", "must be DCR or CRD, got '\(mode)'") }
        let n = t.shape[0], ch = t.shape[1], h = t.shape[2], w = t.shape[3]
        guard ch % (bs * bs) == 0 else { throw c.fail("channels \(ch) are not divisible by blocksize² = \(bs * bs)") }
        let oc = ch / (bs * bs), oh = h * bs, ow = w * bs
        let shape = [n, oc, oh, ow]
        let count = try c.checkedCount(shape)
        let dcr = mode == "DCR"
        if fastPaths { return [blockRows(t, toSpace: true, bs: bs, dcr: dcr, shape: shape, threads: c.threads)] }
        return [gather(t, shape: shape, count: count) { i in
            let x = i % ow, y = (i / ow) % oh, cc = (i / (ow * oh)) % oc, b = i / (ow * oh * oc)
            let bi = y % bs, bj = x % bs
            let src = dcr ? (bi * bs + bj) * oc + cc : (cc * bs + bi) * bs + bj
            return ((b * ch + src) * h + y / bs) * w + x / bs
        }]
    }

    /// SpaceToDepth: the inverse of DepthToSpace (mode DCR default, or CRD).
    public static func spaceToDepth(_ c: KernelContext) throws -> [Tensor] {
        let (t, bs) = try blockInput(c)
        let mode = try c.string("mode", default: "DCR")
        guard mode == "DCR" || mode == "CRD" else { throw c.badAttribute("mode", "must be DCR or CRD, got '\(mode)'") }
        let n = t.shape[0], ch = t.shape[1], h = t.shape[2], w = t.shape[3]
        guard h % bs == 0, w % bs == 0 else {
            throw c.fail("spatial size \(h)×\(w) is not divisible by blocksize \(bs)")
        }
        let oc = ch * bs * bs, oh = h / bs, ow = w / bs
        let shape = [n, oc, oh, ow]
        let count = try c.checkedCount(shape)
        let dcr = mode == "DCR"
        if fastPaths { return [blockRows(t, toSpace: false, bs: bs, dcr: dcr, shape: shape, threads: c.threads)] }
        return [gather(t, shape: shape, count: count) { i in
            let x = i % ow, y = (i / ow) % oh, occ = (i / (ow * oh)) % oc, b = i / (ow * oh * oc)
            let cc: Int, bi: Int, bj: Int
            if dcr {
                cc = occ % ch; bj = (occ / ch) % bs; bi = occ / (ch * bs)
            } else {
                bj = occ % bs; bi = (occ / bs) % bs; cc = occ / (bs * bs)
            }
            return ((b * ch + cc) * h + y * bs + bi) * w + x * bs + bj
        }]
    }
}
