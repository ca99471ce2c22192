import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The element functors of the elementwise kernels: the protocols `EWKit`'s mapping loops take, and `EWOps`.

// MARK: - Functor protocols

/// A per-element function of one value, as a concrete type (see `EWKit.map1`).
protocol EWUnaryOp {
    associatedtype A
    associatedtype R
    func callAsFunction(_ a: A) -> R
}

/// A per-element function of two values (see `EWKit.map2`).
protocol EWBinaryOp {
    associatedtype A
    associatedtype B
    associatedtype R
    func callAsFunction(_ a: A, _ b: B) -> R
}

/// A per-element function of three values (see `EWKit.map3`).
protocol EWTernaryOp {
    associatedtype A
    associatedtype B
    associatedtype C
    associatedtype R
    func callAsFunction(_ a: A, _ b: B, _ c: C) -> R
}

/// A libm-style float function held by pointer (sin, tanh, …): one call per element.
struct EWLibm: EWUnaryOp {
    let fn: @convention(c) (Float) -> Float
    @inline(__always) func callAsFunction(_ a: Float) -> Float { fn(a) }
}

/// The identity (used where a dtype needs no work, e.g. Abs of unsigned).
struct EWIdentity<T>: EWUnaryOp {
    @inline(__always) func callAsFunction(_ a: T) -> T { a }
}

/// Element functors of the arithmetic kernels.
enum EWOps {
    struct AddF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { a + b } }
    struct SubF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { a - b } }
    struct MulF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { a * b } }
    struct DivF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { a / b } }
    struct PowF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { powf(a, b) } }
    struct FmodF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { fmodf(a, b) } }
    /// numpy `mod`: the remainder (and a zero remainder) takes the divisor's sign.
    struct ModF: EWBinaryOp {
        @inline(__always) func callAsFunction(_ x: Float, _ y: Float) -> Float {
            var m = fmodf(x, y)
            if y == 0 || m.isNaN { return m }
            if m != 0 {
                if (y < 0) != (m < 0) { m += y }
            } else {
                m = y < 0 ? -0.0 : 0.0
            }
            return m
        }
    }
    /// numpy `maximum` / `minimum`: NaN propagates.
    struct MaxF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { (a.isNaN || a >= b) ? a : b } }
    struct MinF: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Float, _ b: Float) -> Float { (a.isNaN || a <= b) ? a : b } }

    struct AddI: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { a &+ b } }
    struct SubI: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { a &- b } }
    struct MulI: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { a &* b } }
    /// Truncating division (divisors are checked for zero beforehand; Int64.min / -1 wraps).
    struct DivI: EWBinaryOp {
        @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { b == 0 ? 0 : a.dividedReportingOverflow(by: b).partialValue }
    }
    struct DivU64: EWBinaryOp {
        @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 {
            b == 0 ? 0 : Int64(bitPattern: UInt64(bitPattern: a) / UInt64(bitPattern: b))
        }
    }
    struct ModU64: EWBinaryOp {
        @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 {
            b == 0 ? 0 : Int64(bitPattern: UInt64(bitPattern: a) % UInt64(bitPattern: b))
        }
    }
    /// C remainder (sign of the dividend).
    struct FmodI: EWBinaryOp {
        @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { b == 0 ? 0 : a.remainderReportingOverflow(dividingBy: b).partialValue }
    }
    /// Floor remainder (sign of the divisor).
    struct ModI: EWBinaryOp {
        @inline(__always) func callAsFunction(_ x: Int64, _ y: Int64) -> Int64 {
            if y == 0 { return 0 }
            let m = x.remainderReportingOverflow(dividingBy: y).partialValue
            return (m != 0 && ((m < 0) != (y < 0))) ? m &+ y : m
        }
    }
    /// Max / min of integers; `flip` = Int64.min makes uint64 bit patterns compare unsigned.
    struct MaxI: EWBinaryOp {
        let flip: Int64
        @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { (a ^ flip) >= (b ^ flip) ? a : b }
    }
    struct MinI: EWBinaryOp {
        let flip: Int64
        @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { (a ^ flip) <= (b ^ flip) ? a : b }
    }
    /// Integer power by squaring with wrapping; negative exponents give the
    /// truncated value of 1/x^n (0 unless |x| = 1).
    struct PowI: EWBinaryOp {
        @inline(__always) func callAsFunction(_ x: Int64, _ e: Int64) -> Int64 {
            if e < 0 {
                if x == 1 { return 1 }
                if x == -1 { return e & 1 == 0 ? 1 : -1 }
                return 0
            }
            var result: Int64 = 1, base = x, n = e
            while n > 0 {
                if n & 1 == 1 { result = result &* base }
                base = base &* base
                n >>= 1
            }
            return result
        }
    }
    /// Integer base, float exponent: computed in Double, truncated.
    struct PowIF: EWBinaryOp {
        let dtype: DType
        @inline(__always) func callAsFunction(_ x: Int64, _ e: Float) -> Int64 {
            EWKit.truncatedInt(ewPow(EWKit.doubleOf(x, dtype), Double(e)))
        }
    }

    struct Square: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { a * a } }
    /// x^0.5 (pow semantics: -0 → +0, -inf → +inf).
    struct PowHalf: EWUnaryOp {
        @inline(__always) func callAsFunction(_ a: Float) -> Float { a == -.infinity ? .infinity : a.squareRoot() + 0 }
    }
    struct DivBy: EWUnaryOp {
        let d: Float
        @inline(__always) func callAsFunction(_ a: Float) -> Float { a / d }
    }

    struct NegF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { -a } }
    struct AbsF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { Swift.abs(a) } }
    struct SignF: EWUnaryOp {
        @inline(__always) func callAsFunction(_ x: Float) -> Float { x > 0 ? 1 : (x < 0 ? -1 : (x.isNaN ? x : 0)) }
    }
    struct NegI: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Int64) -> Int64 { 0 &- a } }
    struct AbsI: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Int64) -> Int64 { a < 0 ? 0 &- a : a } }
    struct SignI: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Int64) -> Int64 { a > 0 ? 1 : (a < 0 ? -1 : 0) } }
    struct SignU64: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Int64) -> Int64 { a == 0 ? 0 : 1 } }
    struct SqrtF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { a.squareRoot() } }
    struct RecipF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { 1 / a } }
    /// erf in double precision, rounded once.
    struct ErfF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { Float(ewErf(Double(a))) } }
    struct FloorF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { a.rounded(.down) } }
    struct CeilF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { a.rounded(.up) } }
    struct RoundF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Float { a.rounded(.toNearestOrEven) } }
    struct IsNaNF: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Float) -> Bool { a.isNaN } }
    struct IsInfF: EWUnaryOp {
        let pos: Bool, neg: Bool
        @inline(__always) func callAsFunction(_ v: Float) -> Bool { (pos && v == .infinity) || (neg && v == -.infinity) }
    }
}
