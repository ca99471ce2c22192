import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Elementwise arithmetic (binary with numpy broadcasting, variadic, unary) and
// Cast. The shared machinery in `EWKit` (Elementwise+Kit.swift: dtype finishing,
// kernel builders; Elementwise+Loops.swift: broadcast plans, tight mapping loops)
// and the element functors (Elementwise+Functors.swift) are also used by
// Activations.swift, Logic.swift and Reduce.swift.

// MARK: - Kernels

/// Elementwise arithmetic, unary math and Cast kernels.
public enum ElementwiseKernels {
    // MARK: binary

    public static func add(_ c: KernelContext) throws -> [Tensor] { try EWKit.binary(c, EWOps.AddF(), int: EWOps.AddI()) }
    public static func sub(_ c: KernelContext) throws -> [Tensor] { try EWKit.binary(c, EWOps.SubF(), int: EWOps.SubI()) }
    public static func mul(_ c: KernelContext) throws -> [Tensor] { try EWKit.binary(c, EWOps.MulF(), int: EWOps.MulI()) }

    /// Div: float division; integer division truncates toward zero (like C).
    public static func div(_ c: KernelContext) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        if a.ints != nil { try EWKit.checkNoZero(c, b) }
        if a.dtype == .uint64 { return try EWKit.binary(c, EWOps.DivF(), int: EWOps.DivU64()) }
        return try EWKit.binary(c, EWOps.DivF(), int: EWOps.DivI())
    }

    /// Mod: fmod=0 takes the divisor's sign (Python/numpy `mod`); fmod=1 the
    /// dividend's (C `fmod`).
    public static func mod(_ c: KernelContext) throws -> [Tensor] {
        let fmodAttr = try c.int("fmod", default: 0)
        guard fmodAttr == 0 || fmodAttr == 1 else { throw c.badAttribute("fmod", "must be 0 or 1, got \(fmodAttr)") }
        let a = try c.input(0), b = try c.input(1)
        if a.ints != nil { try EWKit.checkNoZero(c, b) }
        if a.dtype == .uint64 {
            return try EWKit.binary(c, grain: EWKit.costlyGrain, EWOps.FmodF(), int: EWOps.ModU64())
        }
        if fmodAttr == 1 { return try EWKit.binary(c, grain: EWKit.costlyGrain, EWOps.FmodF(), int: EWOps.FmodI()) }
        return try EWKit.binary(c, grain: EWKit.costlyGrain, EWOps.ModF(), int: EWOps.ModI())
    }

    /// Pow: the result has X's type; the exponent may be of another type.
    public static func pow(_ c: KernelContext) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        let p = try EWKit.plan(c, [a.shape, b.shape])
        let th = c.threads
        switch a.storage {
        case .float(let x):
            let y = EWKit.asFloats(b)
            if y.count == 1 && p.shape == a.shape {
                // Fast paths for the common constant exponents (LayerNorm's x²).
                let e = y[0]
                if e == 2 { return [EWKit.floatTensor(EWKit.map1(x, threads: th, grain: EWKit.cheapGrain, EWOps.Square()), p.shape, a.dtype)] }
                if e == 1 { return [EWKit.floatTensor(x, p.shape, a.dtype)] }
                if e == 0.5 { return [EWKit.floatTensor(EWKit.map1(x, threads: th, grain: EWKit.cheapGrain, EWOps.PowHalf()), p.shape, a.dtype)] }
            }
            let r = EWKit.map2(x, y, p, threads: th, grain: EWKit.costlyGrain, EWOps.PowF())
            return [EWKit.floatTensor(r, p.shape, a.dtype)]
        case .int(let x):
            switch b.storage {
            case .int(let y):
                return [EWKit.intTensor(EWKit.map2(x, y, p, threads: th, grain: EWKit.cheapGrain, EWOps.PowI()), p.shape, a.dtype)]
            case .float(let y):
                let r = EWKit.map2(x, y, p, threads: th, grain: EWKit.costlyGrain, EWOps.PowIF(dtype: a.dtype))
                return [EWKit.intTensor(r, p.shape, a.dtype)]
            case .bool:
                throw c.fail("exponent must be numeric, got bool")
            }
        case .bool:
            throw c.fail("base must be numeric, got bool")
        }
    }

    // MARK: variadic

    public static func sum(_ c: KernelContext) throws -> [Tensor] {
        [finish(try EWKit.variadic(c, EWOps.AddF(), int: EWOps.AddI()).0)]
    }

    public static func mean(_ c: KernelContext) throws -> [Tensor] {
        let (t, n) = try EWKit.variadic(c, EWOps.AddF(), int: EWOps.AddI())
        switch t.storage {
        case .float(let v):
            return [EWKit.floatTensor(EWKit.map1(v, threads: c.threads, grain: EWKit.cheapGrain, EWOps.DivBy(d: Float(n))), t.shape, t.dtype)]
        case .int(let v):
            let d = Int64(n)
            return [EWKit.intTensor(v.map { $0 / d }, t.shape, t.dtype)]
        case .bool:
            throw c.fail("inputs must be numeric")
        }
    }

    /// Max: elementwise maximum; NaN propagates (numpy `maximum`).
    public static func max(_ c: KernelContext) throws -> [Tensor] {
        let flip = EWKit.orderFlip(try c.input(0).dtype)
        return [finish(try EWKit.variadic(c, EWOps.MaxF(), int: EWOps.MaxI(flip: flip)).0)]
    }

    /// Min: elementwise minimum; NaN propagates (numpy `minimum`).
    public static func min(_ c: KernelContext) throws -> [Tensor] {
        let flip = EWKit.orderFlip(try c.input(0).dtype)
        return [finish(try EWKit.variadic(c, EWOps.MinF(), int: EWOps.MinI(flip: flip)).0)]
    }

    /// Rounds / wraps a computed tensor to its dtype.
    static func finish(_ t: Tensor) -> Tensor {
        switch t.storage {
        case .float(let v): return EWKit.floatTensor(v, t.shape, t.dtype)
        case .int(let v): return EWKit.intTensor(v, t.shape, t.dtype)
        case .bool: return t
        }
    }

    // MARK: unary

    public static func neg(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, EWOps.NegF(), int: EWOps.NegI()) }

    public static func abs(_ c: KernelContext) throws -> [Tensor] {
        if try c.input(0).dtype == .uint64 { return try EWKit.unary(c, EWOps.AbsF(), int: EWIdentity<Int64>()) }
        return try EWKit.unary(c, EWOps.AbsF(), int: EWOps.AbsI())
    }

    public static func sign(_ c: KernelContext) throws -> [Tensor] {
        if try c.input(0).dtype == .uint64 { return try EWKit.unary(c, EWOps.SignF(), int: EWOps.SignU64()) }
        return try EWKit.unary(c, EWOps.SignF(), int: EWOps.SignI())
    }

    /// Exp on CKernels' vectorised exp (≤ 2 ulp; SIMDKernels).
    public static func exp(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, .exp) }
    public static func log(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: logf)) }
    public static func sqrt(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, EWOps.SqrtF()) }
    public static func reciprocal(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, EWOps.RecipF()) }
    /// Erf, evaluated in double precision and rounded once.
    public static func erf(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWOps.ErfF()) }
    public static func floor(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, EWOps.FloorF()) }
    public static func ceil(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, EWOps.CeilF()) }
    /// Round: halves go to the nearest even integer.
    public static func round(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, EWOps.RoundF()) }
    public static func sin(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: sinf)) }
    public static func cos(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: cosf)) }
    public static func tan(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: tanf)) }
    public static func asin(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: asinf)) }
    public static func acos(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: acosf)) }
    public static func atan(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: atanf)) }
    public static func sinh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: sinhf)) }
    public static func cosh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: coshf)) }
    public static func asinh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: asinhf)) }
    public static func acosh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: acoshf)) }
    public static func atanh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: atanhf)) }

    public static func isNaN(_ c: KernelContext) throws -> [Tensor] {
        let (t, x) = try c.floatInput(0)
        return [Tensor(bools: EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain, EWOps.IsNaNF()), shape: t.shape)]
    }

    /// IsInf with detect_positive / detect_negative (both default 1).
    public static func isInf(_ c: KernelContext) throws -> [Tensor] {
        let (t, x) = try c.floatInput(0)
        let op = EWOps.IsInfF(pos: try c.int("detect_positive", default: 1) != 0,
                              neg: try c.int("detect_negative", default: 1) != 0)
        return [Tensor(bools: EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain, op), shape: t.shape)]
    }

    // MARK: Cast

    /// Cast to the ONNX data type code in attribute `to`.
    public static func cast(_ c: KernelContext) throws -> [Tensor] {
        let t = try c.input(0)
        let code = try c.int("to", default: -1)
        guard let to = DType(onnxDataType: code) else {
            throw c.badAttribute("to", "unsupported target type (ONNX data type \(code))")
        }
        return [castTensor(t, to: to)]
    }

    /// CastLike: cast input 0 to input 1's dtype.
    public static func castLike(_ c: KernelContext) throws -> [Tensor] {
        let t = try c.input(0), like = try c.input(1)
        return [castTensor(t, to: like.dtype)]
    }

    /// Converts `t` to `to`: float→int truncates toward zero (NaN → 0,
    /// saturating at the Int64 range, then wrapping like a C cast), int→int
    /// wraps, anything→bool is `!= 0`, float16 / bfloat16 round to nearest even.
    public static func castTensor(_ t: Tensor, to: DType) -> Tensor {
        let shape = t.shape
        switch t.storage {
        case .float(let x):
            if to.isFloatingPoint { return EWKit.floatTensor(x, shape, to) }
            if to == .bool { return Tensor(bools: x.map { $0 != 0 }, shape: shape) }
            if to == .uint64 {
                return Tensor(ints: x.map { v -> Int64 in
                    if v >= 9.223372e18 && v < 1.8446744e19 { return Int64(bitPattern: UInt64(v)) }
                    return EWKit.truncatedInt(v)
                }, shape: shape, dtype: to)
            }
            return EWKit.intTensor(SIMDKernels.ints(fromFloats: x, threads: 1), shape, to)
        case .int(let x):
            if to.isFloatingPoint {
                let f: [Float] = t.dtype == .uint64 ? x.map { Float(UInt64(bitPattern: $0)) } : SIMDKernels.floats(fromInts: x, threads: 1)
                return EWKit.floatTensor(f, shape, to)
            }
            if to == .bool { return Tensor(bools: x.map { $0 != 0 }, shape: shape) }
            return EWKit.intTensor(x, shape, to)
        case .bool(let x):
            if to.isFloatingPoint {
                // One pass into uninitialised storage (a `map` closure here cost ~1 ns per element).
                let f = x.withUnsafeBufferPointer { xb in
                    [Float](unsafeUninitializedCapacity: xb.count) { out, count in
                        for i in 0..<xb.count { out[i] = xb[i] ? 1 : 0 }
                        count = xb.count
                    }
                }
                return Tensor(dtype: to, shape: shape, storage: .float(f))
            }
            if to == .bool { return t }
            return Tensor(dtype: to, shape: shape, storage: .int(x.map { $0 ? 1 : 0 }))
        }
    }
}

// Free-function aliases: inside `ElementwiseKernels` the names pow and erf are
// the kernels themselves, so the math functions are reached through these.
@inline(__always) func ewErf(_ x: Double) -> Double { erf(x) }
@inline(__always) func ewPow(_ x: Double, _ y: Double) -> Double { pow(x, y) }
