import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, LRN, LpNormalization and MeanVarianceNormalization.
extension NNKernels {
    /// N, C and the spatial plane size of an N×C×… tensor (rank 1 means C = 1).
    private static func nchw(_ shape: [Int]) -> (n: Int, c: Int, plane: Int) {
        if shape.count == 1 { return (shape[0], 1, 1) }
        return (shape[0], shape[1], product(shape[2...]))
    }

    /// Applies y = x·a[c] + b[c] over every channel plane.
    /// Inference BatchNormalization as y = x · a + b per channel: a = scale / √(var + ε),
    /// b = B − mean · a, in float32 (the kernel and the planner's Conv fusion use these, so a
    /// fused Conv gives the bits of the Conv followed by this kernel).
    static func batchNormAffine(scale: [Float], bias: [Float], mean: [Float], variance: [Float],
                                epsilon: Float) -> (a: [Float], b: [Float]) {
        var a = [Float](repeating: 0, count: scale.count), b = a
        for cc in scale.indices {
            let inv = 1 / (variance[cc] + epsilon).squareRoot()
            a[cc] = scale[cc] * inv
            b[cc] = bias[cc] - mean[cc] * a[cc]
        }
        return (a, b)
    }

    private static func affinePerChannel(_ x: [Float], n: Int, ch: Int, plane: Int, a: [Float], b: [Float],
                                         threads: Int) -> [Float] {
        let total = n * ch * plane
        return makeFloats(total) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress else { return }
                a.withUnsafeBufferPointer { ab in
                    b.withUnsafeBufferPointer { bb in
                        parallelChunks(n * ch, threads: threads, minChunk: max(1, 32768 / max(plane, 1))) { range in
                            for p in range {
                                let cc = p % ch
                                let av = ab[cc], bv = bb[cc]
                                let src = xp + p * plane, dst = ys.p + p * plane
                                for i in 0..<plane { dst[i] = src[i] * av + bv }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Mean and population variance of `count` floats (two passes, Double accumulators).
    @inline(__always)
    private static func meanVariance(_ p: UnsafePointer<Float>, _ count: Int) -> (Double, Double) {
        if count == 0 { return (0, 0) }
        var s = 0.0
        for i in 0..<count { s += Double(p[i]) }
        let mean = s / Double(count)
        var v = 0.0
        for i in 0..<count { let d = Double(p[i]) - mean; v += d * d }
        return (mean, v / Double(count))
    }

    /// The groups a normalization over the `reduced` axes of a row-major `shape` forms:
    /// `starts` holds each group's first element (one per index of the kept axes), `members`
    /// the offsets of a group's elements from its start (one per index of the reduced axes).
    /// Every element is `starts[g] + members[r]` for exactly one pair (g, r).
    private static func groupOffsets(_ shape: [Int], reduced: [Bool]) -> (starts: [Int], members: [Int]) {
        var starts = [0], members = [0], stride = 1
        for d in shape.indices.reversed() {
            let n = shape[d], s = stride
            if reduced[d] {
                members = (0..<n).flatMap { k in members.map { $0 + k * s } }
            } else {
                starts = (0..<n).flatMap { k in starts.map { $0 + k * s } }
            }
            stride *= n
        }
        return (starts, members)
    }

    /// Runs `body(src, dst, members)` on every group of `groupOffsets(shape, reduced:)`, `src` / `dst`
    /// pointing at the group's first element of `x` and of the result, and returns the result
    /// (`body` writes `dst[m]` for every `m` of `members`).
    private static func normalizeGroups(_ c: KernelContext, _ x: [Float], shape: [Int], reduced: [Bool],
                                        _ body: (UnsafePointer<Float>, UnsafeMutablePointer<Float>, UnsafeBufferPointer<Int>) -> Void) throws -> [Float] {
        guard shape.allSatisfy({ $0 >= 0 }) else { throw c.fail("input shape \(shape) has a negative dimension") }
        if x.count == 0 { return [] }
        let (starts, members) = groupOffsets(shape, reduced: reduced)
        guard starts.count * members.count == x.count else { throw c.fail("input shape \(shape) does not hold \(x.count) elements") }
        return makeFloats(x.count) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                members.withUnsafeBufferPointer { mb in
                    guard let xp = xb.baseAddress else { return }
                    parallelChunks(starts.count, threads: c.threads, minChunk: max(1, 16384 / max(mb.count, 1))) { range in
                        for g in range { body(xp + starts[g], ys.p + starts[g], mb) }
                    }
                }
            }
        }
    }

    // MARK: BatchNormalization

    /// BatchNormalization. Inference: y = (x − mean)/√(var + ε)·scale + B.
    /// With training_mode = 1 the batch statistics are used and the running
    /// mean / variance outputs are updated with `momentum`.
    public static func batchNormalization(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X", minRank: 1)
        let (n, ch, plane) = nchw(xt.shape)
        let scale = try vector(c, 1, name: "scale", count: ch)
        let bias = try vector(c, 2, name: "B", count: ch)
        let mean = try vector(c, 3, name: "input_mean", count: ch)
        let variance = try vector(c, 4, name: "input_var", count: ch)
        let eps = try c.float("epsilon", default: 1e-5)
        let training = try c.int("training_mode", default: 0) != 0
        var useMean = mean, useVar = variance
        var extra: [Tensor] = []
        if training {
            let momentum = try c.float("momentum", default: 0.9)
            var bm = [Float](repeating: 0, count: ch), bv = bm
            let cnt = n * plane
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress, cnt > 0 else { return }
                for cc in 0..<ch {
                    var s = 0.0
                    for b in 0..<n { let row = xp + (b * ch + cc) * plane; for i in 0..<plane { s += Double(row[i]) } }
                    let mu = s / Double(cnt)
                    var v = 0.0
                    for b in 0..<n {
                        let row = xp + (b * ch + cc) * plane
                        for i in 0..<plane { let d = Double(row[i]) - mu; v += d * d }
                    }
                    bm[cc] = Float(mu); bv[cc] = Float(v / Double(cnt))
                }
            }
            useMean = bm; useVar = bv
            let runMean = (0..<ch).map { mean[$0] * momentum + bm[$0] * (1 - momentum) }
            let runVar = (0..<ch).map { variance[$0] * momentum + bv[$0] * (1 - momentum) }
            extra = [floatTensor(runMean, shape: [ch], dtype: c.optionalInput(3)?.dtype ?? xt.dtype),
                     floatTensor(runVar, shape: [ch], dtype: c.optionalInput(4)?.dtype ?? xt.dtype)]
        }
        let (a, b) = batchNormAffine(scale: scale, bias: bias, mean: useMean, variance: useVar, epsilon: eps)
        let y = affinePerChannel(x, n: n, ch: ch, plane: plane, a: a, b: b, threads: c.threads)
        return [floatTensor(y, shape: xt.shape, dtype: xt.dtype)] + extra
    }

    // MARK: InstanceNormalization

    /// InstanceNormalization: each (n, c) plane normalized by its own mean
    /// and variance, then y = scale[c]·x̂ + B[c].
    public static func instanceNormalization(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "input", minRank: 3)
        let (n, ch, plane) = nchw(xt.shape)
        let scale = try vector(c, 1, name: "scale", count: ch)
        let bias = try vector(c, 2, name: "B", count: ch)
        let eps = Double(try c.float("epsilon", default: 1e-5))
        let y = makeFloats(n * ch * plane) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress else { return }
                parallelChunks(n * ch, threads: c.threads, minChunk: max(1, 16384 / max(plane, 1))) { range in
                    for p in range {
                        let cc = p % ch
                        let src = xp + p * plane, dst = ys.p + p * plane
                        let (mu, v) = meanVariance(src, plane)
                        let a = Float(Double(scale[cc]) / (v + eps).squareRoot())
                        let b = bias[cc] - Float(mu) * a
                        for i in 0..<plane { dst[i] = src[i] * a + b }
                    }
                }
            }
        }
        return [floatTensor(y, shape: xt.shape, dtype: xt.dtype)]
    }

    // MARK: LayerNormalization

    /// LayerNormalization over axes [axis, rank): y = x̂·Scale + B. Optional
    /// outputs Mean and InvStdDev have the normalized axes set to 1.
    public static func layerNormalization(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X", minRank: 1)
        let axis = try c.axis(try c.int("axis", default: -1), rank: xt.rank)
        let eps = Double(try c.float("epsilon", default: 1e-5))
        let stash = try c.int("stash_type", default: 1)
        let outer = product(xt.shape[..<axis])
        let innerShape = Array(xt.shape[axis...])
        let inner = product(innerShape[...])
        func normalizedParam(_ i: Int, _ name: String, required: Bool) throws -> [Float]? {
            guard let t = required ? try c.input(i) : c.optionalInput(i) else { return nil }
            guard let f = t.floats else { throw c.fail("\(name) (input \(i)) must be floating point, got \(t.dtype)") }
            if t.shape == innerShape || (t.count == inner && t.rank <= 1 && innerShape.count == 1) { return f }
            guard t.rank <= innerShape.count, Broadcast.shape([innerShape, t.shape]) == innerShape else {
                throw c.fail("\(name) of shape \(t.shape) does not broadcast to the normalized shape \(innerShape)")
            }
            return Broadcast.expand(f, t.shape, to: innerShape)
        }
        guard let scale = try normalizedParam(1, "Scale", required: true) else { throw c.fail("missing Scale") }
        let bias = try normalizedParam(2, "B", required: false)
        let wantStats = wantsOutput(c, 1) || wantsOutput(c, 2)
        var means = [Float](repeating: 0, count: wantStats ? outer : 0)
        var invs = means
        let y = makeFloats(outer * inner) { yp in
            let ys = SendablePointer(yp)
            means.withUnsafeMutableBufferPointer { mb in
                invs.withUnsafeMutableBufferPointer { ib in
                    let ms = wantStats ? mb.baseAddress.map { SendablePointer($0) } : nil
                    let iss = wantStats ? ib.baseAddress.map { SendablePointer($0) } : nil
                    x.withUnsafeBufferPointer { xb in
                        scale.withUnsafeBufferPointer { sb in
                            guard let xp = xb.baseAddress else { return }
                            parallelChunks(outer, threads: c.threads, minChunk: max(1, 16384 / max(inner, 1))) { range in
                                for r in range {
                                    let src = xp + r * inner, dst = ys.p + r * inner
                                    let (mu, v) = meanVariance(src, inner)
                                    let inv = 1 / (v + eps).squareRoot()
                                    let m = Float(mu), iv = Float(inv)
                                    if let bias {
                                        for i in 0..<inner { dst[i] = (src[i] - m) * iv * sb[i] + bias[i] }
                                    } else {
                                        for i in 0..<inner { dst[i] = (src[i] - m) * iv * sb[i] }
                                    }
                                    ms?.p[r] = m
                                    iss?.p[r] = iv
                                }
                            }
                        }
                    }
                }
            }
        }
        var outs = [floatTensor(y, shape: xt.shape, dtype: xt.dtype)]
        if wantStats {
            let statShape = Array(xt.shape[..<axis]) + [Int](repeating: 1, count: xt.rank - axis)
            let statType: DType = stash == 11 ? .float64 : .float32
            outs.append(Tensor(dtype: statType, shape: statShape, storage: .float(means)))
            outs.append(Tensor(dtype: statType, shape: statShape, storage: .float(invs)))
        }
        return outs
    }

    // MARK: GroupNormalization

    /// GroupNormalization: channels split into `num_groups` groups, each
    /// (n, group) normalized together; scale / bias per channel (opset 21)
    /// or per group (opset 18).
    public static func groupNormalization(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X", minRank: 2)
        let (n, ch, plane) = nchw(xt.shape)
        let groups = try c.int("num_groups", default: 0)
        guard groups >= 1 else { throw c.badAttribute("num_groups", "must be ≥ 1, got \(groups)") }
        guard ch % groups == 0 else { throw c.fail("channels \(ch) are not divisible by num_groups \(groups)") }
        let eps = Double(try c.float("epsilon", default: 1e-5))
        let (st, s) = try floatInput(c, 1, name: "scale")
        let (bt, b) = try floatInput(c, 2, name: "bias")
        let perGroup = s.count == groups && groups != ch
        guard s.count == ch || perGroup, bt.count == st.count else {
            throw c.fail("scale \(st.shape) and bias \(bt.shape) must have \(ch) elements (one per channel)")
        }
        let cpg = ch / groups
        let span = cpg * plane
        let y = makeFloats(n * ch * plane) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress else { return }
                parallelChunks(n * groups, threads: c.threads, minChunk: max(1, 16384 / max(span, 1))) { range in
                    for gi in range {
                        let g = gi % groups
                        let src = xp + gi * span, dst = ys.p + gi * span
                        let (mu, v) = meanVariance(src, span)
                        let inv = 1 / (v + eps).squareRoot()
                        for k in 0..<cpg {
                            let cc = g * cpg + k
                            let pi = perGroup ? g : cc
                            let a = Float(Double(s[pi]) * inv)
                            let bb = b[pi] - Float(mu) * a
                            let sp = src + k * plane, dp = dst + k * plane
                            for i in 0..<plane { dp[i] = sp[i] * a + bb }
                        }
                    }
                }
            }
        }
        return [floatTensor(y, shape: xt.shape, dtype: xt.dtype)]
    }

    // MARK: LRN

    /// Local response normalization across channels:
    /// y = x / (bias + alpha/size · Σ x²)^beta over channels
    /// [c − ⌊(size−1)/2⌋, c + ⌈(size−1)/2⌉].
    public static func lrn(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X", minRank: 3)
        let (n, ch, plane) = nchw(xt.shape)
        let size = try c.int("size", default: 0)
        guard size >= 1 && size <= attributeLimit else { throw c.badAttribute("size", "must be ≥ 1, got \(size)") }
        let alpha = try c.float("alpha", default: 1e-4)
        let beta = try c.float("beta", default: 0.75)
        let bias = try c.float("bias", default: 1)
        let before = (size - 1) / 2, after = size - 1 - before
        let coef = alpha / Float(size)
        let y = makeFloats(n * ch * plane) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress else { return }
                parallelChunks(n * ch, threads: c.threads, minChunk: max(1, 4096 / max(plane * size, 1))) { range in
                    var acc = [Float](repeating: 0, count: plane)
                    acc.withUnsafeMutableBufferPointer { ab in
                        for p in range {
                            let b = p / ch, cc = p % ch
                            for i in 0..<plane { ab[i] = 0 }
                            let lo = max(0, cc - before), hi = min(ch - 1, cc + after)
                            if lo <= hi {
                                for k in lo...hi {
                                    let src = xp + (b * ch + k) * plane
                                    for i in 0..<plane { ab[i] += src[i] * src[i] }
                                }
                            }
                            let src = xp + p * plane, dst = ys.p + p * plane
                            for i in 0..<plane {
                                let base = bias + coef * ab[i]
                                dst[i] = src[i] / (beta == 0.75 ? base.squareRoot() * base.squareRoot().squareRoot()
                                                   : beta == 0.5 ? base.squareRoot() : Float(powf(base, beta)))
                            }
                        }
                    }
                }
            }
        }
        return [floatTensor(y, shape: xt.shape, dtype: xt.dtype)]
    }

    // MARK: LpNormalization

    /// LpNormalization: y = x / ‖x‖ₚ along `axis` (default −1), p = 1 (Σ|x|) or 2 (√Σx², the
    /// default); a zero norm gives 0, as ONNX defines it and onnxruntime does.
    /// (The onnx wheel's reference evaluator sums x, not |x|, for p = 1; the suite's expected
    /// values and onnxruntime use |x|.)
    public static func lpNormalization(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "input", minRank: 1)
        let axis = try c.axis(try c.int("axis", default: -1), rank: xt.rank)
        let p = try c.int("p", default: 2)
        guard p == 1 || p == 2 else { throw c.badAttribute("p", "must be 1 or 2, got \(p)") }
        let y = try normalizeGroups(c, x, shape: xt.shape, reduced: xt.shape.indices.map { $0 == axis }) { src, dst, members in
            var s = 0.0
            if p == 1 {
                for o in members { s += Swift.abs(Double(src[o])) }
            } else {
                for o in members { let v = Double(src[o]); s += v * v }
            }
            let norm = p == 1 ? s : s.squareRoot()
            for o in members { dst[o] = norm == 0 ? 0 : Float(Double(src[o]) / norm) }
        }
        return [floatTensor(y, shape: xt.shape, dtype: xt.dtype)]
    }

    // MARK: MeanVarianceNormalization

    /// MeanVarianceNormalization: y = (x − mean) / (√var + 1e-9), mean and population variance
    /// over `axes` (default [0, 2, 3]; an empty list means every axis, as the ReduceMean of ONNX's
    /// function body reads it). The epsilon is added after the square root, as ONNX's function
    /// body (the op's definition) and the suite's expected values have it: a constant group gives
    /// 0. (onnxruntime's own kernel adds no epsilon: NaN there.)
    public static func meanVarianceNormalization(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X")
        let axes = try c.ints("axes") ?? [0, 2, 3]
        var reduced = [Bool](repeating: axes.isEmpty, count: xt.rank)
        for a in axes {
            let v = a < 0 ? a + xt.rank : a
            guard v >= 0 && v < xt.rank else { throw c.badAttribute("axes", "axis \(a) is out of range for rank \(xt.rank)") }
            guard !reduced[v] else { throw c.badAttribute("axes", "axis \(a) is listed twice") }
            reduced[v] = true
        }
        let y = try normalizeGroups(c, x, shape: xt.shape, reduced: reduced) { src, dst, members in
            let n = Double(members.count)
            var s = 0.0
            for o in members { s += Double(src[o]) }
            let mean = s / n
            var v = 0.0
            for o in members { let d = Double(src[o]) - mean; v += d * d }
            let inv = 1 / ((v / n).squareRoot() + 1e-9)
            for o in members { dst[o] = Float((Double(src[o]) - mean) * inv) }
        }
        return [floatTensor(y, shape: xt.shape, dtype: xt.dtype)]
    }
}
