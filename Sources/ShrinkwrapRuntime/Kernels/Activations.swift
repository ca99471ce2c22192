import CKernels
import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Activation functions, Clip, and Softmax / LogSoftmax / Hardmax.
public enum ActivationKernels {
    // MARK: pointwise activations

    struct ReluF: EWUnaryOp { @inline(__always) func callAsFunction(_ x: Float) -> Float { x > 0 ? x : (x.isNaN ? x : 0) } }
    struct ReluI: EWUnaryOp { @inline(__always) func callAsFunction(_ x: Int64) -> Int64 { x > 0 ? x : 0 } }
    struct LeakyReluF: EWUnaryOp {
        let alpha: Float
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x >= 0 ? x : alpha * x }
    }
    struct PReluF: EWBinaryOp { @inline(__always) func callAsFunction(_ v: Float, _ k: Float) -> Float { v < 0 ? k * v : v } }
    struct PReluI: EWBinaryOp { @inline(__always) func callAsFunction(_ v: Int64, _ k: Int64) -> Int64 { v < 0 ? k &* v : v } }
    struct EluF: EWUnaryOp {
        let alpha: Float
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x < 0 ? alpha * expm1f(x) : x }
    }
    struct SeluF: EWUnaryOp {
        let alpha: Float, gamma: Float
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x <= 0 ? gamma * alpha * expm1f(x) : gamma * x }
    }
    struct CeluF: EWUnaryOp {
        let alpha: Float
        @inline(__always) func callAsFunction(_ x: Float) -> Float { Swift.max(0, x) + Swift.min(0, alpha * expm1f(x / alpha)) }
    }
    /// log(1 + e^x), written so large |x| neither overflows nor loses precision.
    struct SoftplusF: EWUnaryOp {
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)) }
    }
    struct SoftsignF: EWUnaryOp { @inline(__always) func callAsFunction(_ x: Float) -> Float { x / (1 + Swift.abs(x)) } }
    /// 0.5·x·(1 + erf(x/√2)) in double precision.
    struct GeluErfF: EWUnaryOp {
        @inline(__always) func callAsFunction(_ x: Float) -> Float {
            Float(0.5 * Double(x) * (1 + ewErf(Double(x) * 0.70710678118654752440)))
        }
    }
    /// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
    struct GeluTanhF: EWUnaryOp {
        @inline(__always) func callAsFunction(_ x: Float) -> Float {
            0.5 * x * (1 + tanhf(0.7978845608028654 * (x + 0.044715 * x * x * x)))
        }
    }
    /// x · tanh(softplus(x)).
    struct MishF: EWUnaryOp {
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x * tanhf(SoftplusF()(x)) }
    }
    struct ThresholdedReluF: EWUnaryOp {
        let alpha: Float
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x > alpha ? x : 0 }
    }
    struct ShrinkF: EWUnaryOp {
        let bias: Float, lambd: Float
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x < -lambd ? x + bias : (x > lambd ? x - bias : 0) }
    }
    /// Shrink on integers: computed in Double, truncated back.
    struct ShrinkI: EWUnaryOp {
        let bias: Double, lambd: Double, dtype: DType
        @inline(__always) func callAsFunction(_ v: Int64) -> Int64 {
            let x = EWKit.doubleOf(v, dtype)
            return EWKit.truncatedInt(x < -lambd ? x + bias : (x > lambd ? x - bias : 0))
        }
    }
    /// max(x, lo) then min(·, hi), so lo > hi gives hi; NaN passes through.
    struct ClipF: EWUnaryOp {
        let lo: Float, hi: Float
        @inline(__always) func callAsFunction(_ a: Float) -> Float {
            let m = a < lo ? lo : a
            return m > hi ? hi : m
        }
    }
    /// Integer clip; bounds are pre-flipped (uint64 compares unsigned).
    struct ClipI: EWUnaryOp {
        let lo: Int64, hi: Int64, flip: Int64
        @inline(__always) func callAsFunction(_ a: Int64) -> Int64 {
            let s = a ^ flip
            let m = s < lo ? lo : s
            return (m > hi ? hi : m) ^ flip
        }
    }

    public static func relu(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, ReluF(), int: ReluI()) }

    public static func leakyRelu(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, LeakyReluF(alpha: try c.float("alpha", default: 0.01)))
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
            return [EWKit.floatTensor(EWKit.map2(a, b, p, threads: c.threads, grain: EWKit.cheapGrain, PReluF()), p.shape, x.dtype)]
        case (.int(let a), .int(let b)):
            return [EWKit.intTensor(EWKit.map2(a, b, p, threads: c.threads, grain: EWKit.cheapGrain, PReluI()), p.shape, x.dtype)]
        default:
            throw c.fail("X and slope must have the same type, got \(x.dtype) and \(s.dtype)")
        }
    }

    public static func elu(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, EluF(alpha: try c.float("alpha", default: 1)))
    }

    public static func selu(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 1.67326319217681884765625)
        let gamma = try c.float("gamma", default: 1.05070102214813232421875)
        return try EWKit.unary(c, grain: EWKit.costlyGrain, SeluF(alpha: alpha, gamma: gamma))
    }

    public static func celu(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 1)
        guard alpha != 0 else { throw c.badAttribute("alpha", "must not be 0") }
        return try EWKit.unary(c, grain: EWKit.costlyGrain, CeluF(alpha: alpha))
    }

    // Sigmoid, Swish, HardSigmoid, HardSwish and Tanh run on CKernels' vectorised math (SIMDKernels; ≤ 3 ulp
    // for sigmoid / tanh, HardSigmoid / HardSwish exact: a rounded multiply and add, then the clamps).
    public static func sigmoid(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, .sigmoid) }

    /// Swish (opset 24): x · sigmoid(alpha · x), alpha default 1.
    public static func swish(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, .swish(alpha: try c.float("alpha", default: 1)))
    }

    public static func hardSigmoid(_ c: KernelContext) throws -> [Tensor] {
        let alpha = try c.float("alpha", default: 0.2), beta = try c.float("beta", default: 0.5)
        return try EWKit.unary(c, .hardSigmoid(alpha: alpha, beta: beta))
    }

    public static func hardSwish(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, .hardSwish) }
    public static func tanh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, .tanh) }
    public static func softplus(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, SoftplusF()) }
    public static func softsign(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, SoftsignF()) }

    /// Gelu with approximate "none" (erf) or "tanh".
    public static func gelu(_ c: KernelContext) throws -> [Tensor] {
        let mode = try c.string("approximate", default: "none")
        switch mode {
        case "none": return try EWKit.unary(c, grain: EWKit.costlyGrain, GeluErfF())
        case "tanh": return try EWKit.unary(c, grain: EWKit.costlyGrain, GeluTanhF())
        default: throw c.badAttribute("approximate", "must be 'none' or 'tanh', got '\(mode)'")
        }
    }

    public static func mish(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, MishF()) }

    public static func thresholdedRelu(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, ThresholdedReluF(alpha: try c.float("alpha", default: 1)))
    }

    /// Shrink: x+bias below -lambd, x-bias above lambd, else 0.
    public static func shrink(_ c: KernelContext) throws -> [Tensor] {
        let bias = try c.float("bias", default: 0), lambd = try c.float("lambd", default: 0.5)
        let dt = try c.input(0).dtype
        return try EWKit.unary(c, ShrinkF(bias: bias, lambd: lambd),
                               int: ShrinkI(bias: Double(bias), lambd: Double(lambd), dtype: dt))
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
            return [EWKit.floatTensor(EWKit.map1(v, threads: c.threads, grain: EWKit.cheapGrain, ClipF(lo: lo, hi: hi)), x.shape, x.dtype)]
        case .int(let v):
            let range = EWKit.intRange(x.dtype)
            func bound(_ i: Int, _ d: Int64) throws -> Int64 {
                guard let t = c.optionalInput(i) else { return d }
                switch t.storage {
                case .int(let a): return a.first ?? d
                case .float(let a): return a.first.map { EWKit.truncatedInt($0) } ?? d
                case .bool: throw c.fail("input \(i) must be numeric")
                }
            }
            let flip = EWKit.orderFlip(x.dtype)
            let op = ClipI(lo: try bound(1, range.min) ^ flip, hi: try bound(2, range.max) ^ flip, flip: flip)
            return [Tensor(dtype: x.dtype, shape: x.shape, storage: .int(EWKit.map1(v, threads: c.threads, grain: EWKit.cheapGrain, op)))]
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
    /// Softmax subtracts the maximum first; LogSoftmax is (x - max) - log Σ e^(x-max);
    /// Hardmax marks the first maximum with 1.
    static func softmaxFamily(_ c: KernelContext, _ kind: SoftmaxKind) throws -> [Tensor] {
        let (t, x) = try c.floatInput(0)
        let shape = t.shape.isEmpty ? [1] : t.shape
        let axis = try c.axis(try c.int("axis", default: -1), rank: shape.count)
        let (outer, len, inner) = split(shape, axis)
        let n = x.count
        if n == 0 { return [t] }
        if kind != .hardmax && (t.dtype == .float16 || t.dtype == .bfloat16) {
            return [lowPrecisionSoftmax(x, t, outer, len, inner, log: kind == .logSoftmax)]
        }
        var out = [Float](repeating: 0, count: n)
        let block = len * inner
        // Softmax over a middle axis splits each [len, inner] block into column ranges too, so one big
        // block (nudenet's [1, 16, 4, 2100] over axis 1) is shared between threads; each column is its own
        // softmax, so the bits do not depend on the split.
        let columns = inner == 1 || kind == .hardmax ? inner : Swift.min(inner, 256)
        let pieces = (inner + columns - 1) / columns
        let grain = Swift.max(1, EWKit.costlyGrain / Swift.max(len * columns, 1))
        x.withUnsafeBufferPointer { xb in
            out.withUnsafeMutableBufferPointer { ob in
                guard let xp = xb.baseAddress, let op = ob.baseAddress else { return }
                let o = SendablePointer(op)
                parallelChunks(outer * pieces, threads: c.threads, minChunk: grain) { range in
                    if kind == .hardmax {
                        for b in range {
                            for k in 0..<inner { hardmaxColumn(xp + b * block + k, o.p + b * block + k, len, inner) }
                        }
                    } else if inner == 1 {
                        for b in range { softmaxRow(xp + b * len, o.p + b * len, len, log: kind == .logSoftmax) }
                    } else {
                        var m = [Float](repeating: 0, count: columns), s = [Float](repeating: 0, count: columns)
                        m.withUnsafeMutableBufferPointer { mb in
                            s.withUnsafeMutableBufferPointer { sb in
                                guard let mp = mb.baseAddress, let sp = sb.baseAddress else { return }
                                for item in range {
                                    let b = item / pieces, k0 = item % pieces * columns, count = Swift.min(columns, inner - k0)
                                    softmaxBlock(xp + b * block + k0, o.p + b * block + k0, len, inner, count: count,
                                                 log: kind == .logSoftmax, mp, sp)
                                }
                            }
                        }
                    }
                }
            }
        }
        return [EWKit.floatTensor(out, t.shape, t.dtype)]
    }

    /// Softmax / LogSoftmax of float16 or bfloat16 values, rounded to the
    /// dtype after every step as arithmetic in that type does (and as the
    /// ONNX reference computes it): x - max, exp, the sum (float16 sums in
    /// float32 and rounds once; bfloat16 rounds after every addition), the
    /// division and, for LogSoftmax, the log of the rounded softmax.
    static func lowPrecisionSoftmax(_ x: [Float], _ t: Tensor, _ outer: Int, _ len: Int, _ inner: Int, log: Bool) -> Tensor {
        let half = t.dtype == .float16, dtype = t.dtype
        func r(_ v: Float) -> Float { dtype.rounded(v) }
        var out = [Float](repeating: 0, count: x.count)
        var e = [Float](repeating: 0, count: len)
        for b in 0..<outer {
            for k in 0..<inner {
                let base = b * len * inner + k
                var m = -Float.infinity
                for j in 0..<len where x[base + j * inner] > m { m = x[base + j * inner] }
                var s: Float = 0
                for j in 0..<len {
                    e[j] = r(expf(r(x[base + j * inner] - m)))
                    s = half ? s + e[j] : r(s + e[j])
                }
                s = r(s)
                for j in 0..<len {
                    let y = r(e[j] / s)
                    out[base + j * inner] = log ? r(logf(y)) : y
                }
            }
        }
        return Tensor(dtype: t.dtype, shape: t.shape, storage: .float(out))
    }

    /// Softmax of one contiguous row, on CKernels (`sk_softmax_row` defines it: Swift is compiled for
    /// baseline x86-64, the C kernel is vectorised per level with the same bits on each).
    @inline(__always)
    static func softmaxRow(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ len: Int, log: Bool) {
        sk_softmax_row(SIMDKernels.level, x, y, len, log ? 1 : 0)
    }

    /// Softmax over the middle axis of a [len, inner] block, for its first `count` inner positions:
    /// every inner position is its own softmax (`sk_softmax_columns`).
    @inline(__always)
    static func softmaxBlock(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ len: Int, _ inner: Int,
                             count: Int, log: Bool, _ m: UnsafeMutablePointer<Float>, _ s: UnsafeMutablePointer<Float>) {
        sk_softmax_columns(SIMDKernels.level, x, y, len, inner, count, log ? 1 : 0, m, s)
    }

    /// Hardmax of one column of `len` elements spaced `step` apart: 1 at the first maximum.
    @inline(__always)
    static func hardmaxColumn(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ len: Int, _ step: Int) {
        guard len > 0 else { return }
        var m = x[0]
        var arg = 0
        for j in 1..<Swift.max(len, 1) where x[j * step] > m { m = x[j * step]; arg = j }
        for j in 0..<len { y[j * step] = j == arg ? 1 : 0 }
    }
}
