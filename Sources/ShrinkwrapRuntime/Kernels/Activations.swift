import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Activation functions, Clip, and Softmax / LogSoftmax / Hardmax.
public enum ActivationKernels {
    // MARK: pointwise activations

    public static func relu(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { $0 > 0 ? $0 : ($0.isNaN ? $0 : 0) }, int: { $0 > 0 ? $0 : 0 })
    }

    public static func leakyRelu(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 0.01)
        return try EWKit.unary(c, { $0 >= 0 ? $0 : alpha * $0 })
    }

    /// PRelu: slope broadcasts unidirectionally to X.
    public static func prelu(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0), s = try c.input(1)
        let p = try EWKit.plan(c, [x.shape, s.shape])
        guard p.shape == x.shape else {
            throw c.fail("slope shape \(s.shape) does not broadcast to X shape \(x.shape)")
        }
        switch (x.storage, s.storage) {
        case (.float(let a), .float(let b)):
            let r = EWKit.map2(a, b, p, threads: c.threads, grain: EWKit.cheapGrain) { v, k in v < 0 ? k * v : v }
            return [EWKit.floatTensor(r, p.shape, x.dtype)]
        case (.int(let a), .int(let b)):
            let r = EWKit.map2(a, b, p, threads: c.threads, grain: EWKit.cheapGrain) { v, k in v < 0 ? k &* v : v }
            return [EWKit.intTensor(r, p.shape, x.dtype)]
        default:
            throw c.fail("X and slope must have the same type, got \(x.dtype) and \(s.dtype)")
        }
    }

    public static func elu(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 1)
        return try EWKit.unary(c, grain: EWKit.costlyGrain, { $0 < 0 ? alpha * expm1f($0) : $0 })
    }

    public static func selu(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 1.67326319217681884765625)
        let gamma = try c.float("gamma", default: 1.05070102214813232421875)
        return try EWKit.unary(c, grain: EWKit.costlyGrain, { $0 <= 0 ? gamma * alpha * expm1f($0) : gamma * $0 })
    }

    public static func celu(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 1)
        guard alpha != 0 else { throw c.badAttribute("alpha", "must not be 0") }
        return try EWKit.unary(c, grain: EWKit.costlyGrain, { x in
            Swift.max(0, x) + Swift.min(0, alpha * expm1f(x / alpha))
        })
    }

    /// Sigmoid: 1 / (1 + e^-x), stable for large |x|.
    public static func sigmoid(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, { x in
            if x >= 0 { return 1 / (1 + expf(-x)) }
            let e = expf(x)
            return e / (1 + e)
        })
    }

    public static func hardSigmoid(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 0.2), beta = try c.float("beta", default: 0.5)
        return try EWKit.unary(c, { x in Swift.max(0, Swift.min(1, alpha * x + beta)) })
    }

    /// HardSwish: x · max(0, min(1, x/6 + 1/2)).
    public static func hardSwish(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { x in x * Swift.max(0, Swift.min(1, x * (1 / 6 as Float) + 0.5)) })
    }

    public static func tanh(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, { tanhf($0) })
    }

    /// Softplus: log(1 + e^x), written so large |x| neither overflows nor loses precision.
    public static func softplus(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, { softplusValue($0) })
    }

    @inline(__always)
    static func softplusValue(_ x: Float) -> Float {
        x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x))
    }

    public static func softsign(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { $0 / (1 + Swift.abs($0)) })
    }

    /// Gelu with approximate "none" (erf) or "tanh".
    public static func gelu(_ c: KernelContext) throws -> [Tensor] {
        let mode = try c.string("approximate", default: "none")
        switch mode {
        case "none":
            return try EWKit.unary(c, grain: EWKit.costlyGrain, { x in
                Float(0.5 * Double(x) * (1 + ewErf(Double(x) * 0.70710678118654752440)))
            })
        case "tanh":
            let k: Float = 0.7978845608028654  // sqrt(2/π)
            return try EWKit.unary(c, grain: EWKit.costlyGrain, { x in
                0.5 * x * (1 + tanhf(k * (x + 0.044715 * x * x * x)))
            })
        default:
            throw c.badAttribute("approximate", "must be 'none' or 'tanh', got '\(mode)'")
        }
    }

    /// Mish: x · tanh(softplus(x)).
    public static func mish(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, { x in x * tanhf(softplusValue(x)) })
    }

    public static func thresholdedRelu(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 1)
        return try EWKit.unary(c, { $0 > alpha ? $0 : 0 })
    }

    /// Shrink: x+bias below -lambd, x-bias above lambd, else 0 (ints computed
    /// in Double and truncated back).
    public static func shrink(_ c: KernelContext) throws -> [Tensor] {
        let bias = try c.float("bias", default: 0), lambd = try c.float("lambd", default: 0.5)
        let dt = try c.input(0).dtype
        let b = Double(bias), l = Double(lambd)
        return try EWKit.unary(c, { x in x < -lambd ? x + bias : (x > lambd ? x - bias : 0) }, int: { v in
            let x = EWKit.doubleOf(v, dt)
            return EWKit.truncatedInt(x < -l ? x + b : (x > l ? x - b : 0))
        })
    }

    // MARK: Clip

    /// Clip(x, min?, max?) on floats and integers; when min > max every value becomes max.
    public static func clip(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        for i in 1...2 {
            if let t = c.optionalInput(i), t.count != 1 {
                throw c.fail("input \(i) (\(i == 1 ? "min" : "max")) must be a scalar, has shape \(t.shape)")
            }
        }
        switch x.storage {
        case .float(let v):
            let lo = try c.optionalScalar(1) ?? -.infinity
            let hi = try c.optionalScalar(2) ?? .infinity
            let r = EWKit.map1(v, threads: c.threads, grain: EWKit.cheapGrain) { a -> Float in
                let m = a < lo ? lo : a
                return m > hi ? hi : m
            }
            return [EWKit.floatTensor(r, x.shape, x.dtype)]
        case .int(let v):
            let range = EWKit.intRange(x.dtype)
            func bound(_ i: Int, _ d: Int64) throws -> Int64 {
                guard let t = c.optionalInput(i) else { return d }
                switch t.storage {
                case .int(let a): return a[0]
                case .float(let a): return EWKit.truncatedInt(a[0])
                case .bool: throw c.fail("input \(i) must be numeric")
                }
            }
            let flip = EWKit.orderFlip(x.dtype)
            let lo = try bound(1, range.min) ^ flip, hi = try bound(2, range.max) ^ flip
            let r = EWKit.map1(v, threads: c.threads, grain: EWKit.cheapGrain) { a -> Int64 in
                let s = a ^ flip
                let m = s < lo ? lo : s
                return (m > hi ? hi : m) ^ flip
            }
            return [Tensor(dtype: x.dtype, shape: x.shape, storage: .int(r))]
        case .bool:
            throw c.fail("input must be numeric, got bool")
        }
    }

    // MARK: Softmax family

    /// Splits a shape at `axis` into (outer, axis length, inner).
    static func split(_ shape: [Int], _ axis: Int) -> (Int, Int, Int) {
        let outer = shape[..<axis].reduce(1, *)
        let inner = shape[(axis + 1)...].reduce(1, *)
        return (outer, shape[axis], inner)
    }

    enum SoftmaxKind { case softmax, logSoftmax, hardmax }

    public static func softmax(_ c: KernelContext) throws -> [Tensor] { try softmaxFamily(c, .softmax) }
    public static func logSoftmax(_ c: KernelContext) throws -> [Tensor] { try softmaxFamily(c, .logSoftmax) }
    public static func hardmax(_ c: KernelContext) throws -> [Tensor] { try softmaxFamily(c, .hardmax) }

    /// Softmax / LogSoftmax / Hardmax along one axis (opset-13 meaning).
    /// Softmax subtracts the maximum first; LogSoftmax is x - max - log Σ e^(x-max);
    /// Hardmax marks the first maximum with 1.
    static func softmaxFamily(_ c: KernelContext, _ kind: SoftmaxKind) throws -> [Tensor] {
        let (t, x) = try c.floatInput(0)
        let shape = t.shape.isEmpty ? [1] : t.shape
        let axis = try c.axis(try c.int("axis", default: -1), rank: shape.count)
        let (outer, len, inner) = split(shape, axis)
        let n = x.count
        if n == 0 { return [t] }
        let work = outer * inner
        let grain = Swift.max(1, EWKit.costlyGrain / Swift.max(len, 1))
        var out = [Float](repeating: 0, count: n)
        x.withUnsafeBufferPointer { xb in
            out.withUnsafeMutableBufferPointer { ob in
                guard let xp = xb.baseAddress, let op = ob.baseAddress else { return }
                let o = SendablePointer(op)
                // Work items are (outer, inner) columns; a column's elements are `inner` apart.
                parallelChunks(work, threads: c.threads, minChunk: grain) { range in
                    for w in range {
                        let base = (w / inner) * len * inner + (w % inner)
                        column(xp + base, o.p + base, len, inner, kind)
                    }
                }
            }
        }
        return [EWKit.floatTensor(out, t.shape, t.dtype)]
    }

    /// One softmax column of `len` elements spaced `step` apart.
    @inline(__always)
    static func column(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ len: Int, _ step: Int,
                       _ kind: SoftmaxKind) {
        guard len > 0 else { return }
        var m = x[0]
        var arg = 0
        for j in 1..<Swift.max(len, 1) {
            let v = x[j * step]
            if v > m { m = v; arg = j }
        }
        switch kind {
        case .hardmax:
            for j in 0..<len { y[j * step] = j == arg ? 1 : 0 }
        case .softmax:
            let shift = m.isFinite ? m : 0
            var s: Float = 0
            for j in 0..<len {
                let e = expf(x[j * step] - shift)
                y[j * step] = e
                s += e
            }
            for j in 0..<len { y[j * step] /= s }
        case .logSoftmax:
            let shift = m.isFinite ? m : 0
            var s: Float = 0
            for j in 0..<len { s += expf(x[j * step] - shift) }
            let ls = logf(s)
            for j in 0..<len { y[j * step] = (x[j * step] - shift) - ls }
        }
    }
}
