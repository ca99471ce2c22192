import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Elementwise arithmetic (binary with numpy broadcasting, variadic, unary) and
// Cast. The shared machinery in `EWKit` (broadcast plans, tight mapping loops,
// dtype finishing) is also used by Activations.swift, Logic.swift and Reduce.swift.

// MARK: - Shared machinery

/// Helpers shared by the elementwise kernel families.
enum EWKit {
    /// Minimum elements per parallel chunk for a cheap per-element op
    /// (add, relu): below this, threading costs more than it saves.
    static let cheapGrain = 1 << 18
    /// Minimum elements per parallel chunk for a costly op (exp, erf, pow).
    static let costlyGrain = 1 << 14

    // MARK: fast exp

    /// e^x for x ≤ 88, branch-free so loops over it vectorize; relative error
    /// about 2·10⁻⁷ (a couple of float ulps). Below -87.33 (where e^x leaves
    /// the normal range) it returns 0; NaN stays NaN. Used where exp is the
    /// hot spot (Sigmoid, Softmax); the Exp op itself uses libm.
    ///
    /// Method: e^x = 2^n · e^r with n = round(x / ln 2) and r = x - n·ln 2
    /// (ln 2 split in two parts so r is exact), |r| ≤ ln2/2, e^r by its
    /// degree-7 Taylor polynomial (truncation error < 6·10⁻⁹), 2^n built in
    /// the exponent bits. Adding 1.5·2²³ rounds x/ln2 to an integer held in
    /// the low mantissa bits, which avoids a trapping Float→Int conversion.
    @inline(__always)
    static func fastExp(_ x: Float) -> Float {
        let xc = Swift.min(Swift.max(x, -87.33654), 88.0)
        let magic: Float = 12582912  // 1.5 · 2^23
        let t = xc * 1.44269504088896341 + magic
        let n = t - magic
        let r = (xc - n * 0.693359375) + n * 2.12194440e-4
        var p: Float = 1.0 / 5040
        p = p * r + 1.0 / 720
        p = p * r + 1.0 / 120
        p = p * r + 1.0 / 24
        p = p * r + 1.0 / 6
        p = p * r + 0.5
        p = p * r + 1
        p = p * r + 1
        let scale = Float(bitPattern: (t.bitPattern &- 0x4B40_0000 &+ 127) &<< 23)
        return x < -87.33654 ? 0 : p * scale
    }

    // MARK: dtype finishing

    /// Rounds float values to what `dtype` can hold (float16 / bfloat16);
    /// float32 / float64 values are left as they are.
    static func roundInPlace(_ v: inout [Float], _ dtype: DType) {
        switch dtype {
        case .float16:
            v.withUnsafeMutableBufferPointer { p in
                for i in p.indices { p[i] = Half.round(p[i]) }
            }
        case .bfloat16:
            v.withUnsafeMutableBufferPointer { p in
                for i in p.indices { p[i] = Half.float(fromBFloatBits: Half.bfloatBits(from: p[i])) }
            }
        default:
            break
        }
    }

    /// Wraps integer values into `dtype`'s range (a no-op for 64-bit types).
    static func wrapInPlace(_ v: inout [Int64], _ dtype: DType) {
        switch dtype {
        case .int8, .int16, .int32, .uint8, .uint16, .uint32:
            v.withUnsafeMutableBufferPointer { p in
                for i in p.indices { p[i] = dtype.wrap(p[i]) }
            }
        default:
            break
        }
    }

    /// A float tensor of `dtype`, its values rounded to that dtype.
    static func floatTensor(_ v: [Float], _ shape: [Int], _ dtype: DType) -> Tensor {
        if dtype == .float16 || dtype == .bfloat16 {
            var r = v
            roundInPlace(&r, dtype)
            return Tensor(dtype: dtype, shape: shape, storage: .float(r))
        }
        return Tensor(dtype: dtype, shape: shape, storage: .float(v))
    }

    /// An integer tensor of `dtype`, its values wrapped into that dtype.
    static func intTensor(_ v: [Int64], _ shape: [Int], _ dtype: DType) -> Tensor {
        switch dtype {
        case .int8, .int16, .int32, .uint8, .uint16, .uint32:
            var r = v
            wrapInPlace(&r, dtype)
            return Tensor(dtype: dtype, shape: shape, storage: .int(r))
        default:
            return Tensor(dtype: dtype, shape: shape, storage: .int(v))
        }
    }

    /// XOR mask that maps the unsigned order of uint64 bit patterns onto the
    /// signed order of Int64 (0 for every other integer type).
    @inline(__always)
    static func orderFlip(_ dtype: DType) -> Int64 { dtype == .uint64 ? Int64.min : 0 }

    /// Smallest and largest value of an integer dtype, as stored (uint64's
    /// maximum is the bit pattern -1).
    static func intRange(_ dtype: DType) -> (min: Int64, max: Int64) {
        switch dtype {
        case .int8: return (Int64(Int8.min), Int64(Int8.max))
        case .int16: return (Int64(Int16.min), Int64(Int16.max))
        case .int32: return (Int64(Int32.min), Int64(Int32.max))
        case .uint8: return (0, Int64(UInt8.max))
        case .uint16: return (0, Int64(UInt16.max))
        case .uint32: return (0, Int64(UInt32.max))
        case .uint64: return (0, -1)
        default: return (Int64.min, Int64.max)
        }
    }

    /// Int64 of a float, truncated toward zero; NaN gives 0 and values
    /// beyond Int64 saturate (never traps).
    @inline(__always)
    static func truncatedInt(_ x: Float) -> Int64 {
        if x.isNaN { return 0 }
        if x >= 9.223372e18 { return Int64.max }
        if x <= -9.223372e18 { return Int64.min }
        return Int64(x)
    }

    /// Same as `truncatedInt` for a Double.
    @inline(__always)
    static func truncatedInt(_ x: Double) -> Int64 {
        if x.isNaN { return 0 }
        if x >= 9.223372036854775e18 { return Int64.max }
        if x <= -9.223372036854775e18 { return Int64.min }
        return Int64(x)
    }

    /// An integer value as Double (uint64 bit patterns read as unsigned).
    @inline(__always)
    static func doubleOf(_ v: Int64, _ dtype: DType) -> Double {
        dtype == .uint64 ? Double(UInt64(bitPattern: v)) : Double(v)
    }

    /// Float elements of any storage class (ints and bools converted).
    static func asFloats(_ t: Tensor) -> [Float] {
        switch t.storage {
        case .float(let a): return a
        case .int(let a):
            if t.dtype == .uint64 { return a.map { Float(UInt64(bitPattern: $0)) } }
            return a.map { Float($0) }
        case .bool(let a): return a.map { $0 ? 1 : 0 }
        }
    }

    // MARK: broadcast plans

    /// How up to three inputs broadcast to an output: the output shape, and
    /// the output iteration space with size-1 axes dropped and contiguous
    /// axes merged (e.g. [N,C,H,W] + [C,1,1] becomes [N, C, H·W] with steps
    /// 0/1/0 for the second operand), so inner loops are long and simple.
    struct Plan {
        let shape: [Int]
        let count: Int
        /// Merged iteration dims, outermost first; never empty.
        let dims: [Int]
        /// Per-input element strides along `dims` (0 = broadcast).
        let s0: [Int], s1: [Int], s2: [Int]
        var inner: Int { dims[dims.count - 1] }
    }

    /// The broadcast plan of `shapes` (one to three), or a thrown error when
    /// they are incompatible or the result is too large.
    static func plan(_ c: KernelContext, _ shapes: [[Int]]) throws -> Plan {
        guard let out = Broadcast.shape(shapes) else {
            throw c.fail("shapes \(shapes.map { "\($0)" }.joined(separator: ", ")) cannot be broadcast together")
        }
        let n = try c.checkedCount(out)
        return makePlan(out: out, count: n, shapes)
    }

    /// A plan for inputs already known to broadcast to `out`.
    static func makePlan(out: [Int], count: Int, _ shapes: [[Int]]) -> Plan {
        var st = shapes.map { Broadcast.strides(of: $0, in: out) }
        while st.count < 3 { st.append([Int](repeating: 0, count: out.count)) }
        // Built innermost first, then reversed.
        var dims: [Int] = []
        var c0: [Int] = [], c1: [Int] = [], c2: [Int] = []
        var k = out.count - 1
        while k >= 0 {
            let d = out[k]
            if d != 1 {
                if let j = dims.indices.last,
                   st[0][k] == c0[j] * dims[j], st[1][k] == c1[j] * dims[j], st[2][k] == c2[j] * dims[j] {
                    dims[j] *= d
                } else {
                    dims.append(d); c0.append(st[0][k]); c1.append(st[1][k]); c2.append(st[2][k])
                }
            }
            k -= 1
        }
        if dims.isEmpty { dims = [1]; c0 = [0]; c1 = [0]; c2 = [0] }
        return Plan(shape: out, count: count, dims: dims.reversed(), s0: c0.reversed(), s1: c1.reversed(), s2: c2.reversed())
    }

    /// Calls `body(outStart, length, offset0, offset1, offset2)` for each
    /// contiguous run of output elements in `range` (runs follow the inner
    /// dim); offsets are each input's element offset at the run's start.
    @inline(__always)
    static func spans(_ p: Plan, _ range: Range<Int>, _ body: (Int, Int, Int, Int, Int) -> Void) {
        let dims = p.dims
        let r = dims.count
        let inner = dims[r - 1]
        let i0 = p.s0[r - 1], i1 = p.s1[r - 1], i2 = p.s2[r - 1]
        var pos = range.lowerBound
        var innerPos = pos % inner
        var idx = [Int](repeating: 0, count: r)
        var o0 = 0, o1 = 0, o2 = 0
        var rem = pos / inner
        var k = r - 2
        while k >= 0 {
            idx[k] = rem % dims[k]
            rem /= dims[k]
            o0 += idx[k] * p.s0[k]; o1 += idx[k] * p.s1[k]; o2 += idx[k] * p.s2[k]
            k -= 1
        }
        while pos < range.upperBound {
            let len = min(inner - innerPos, range.upperBound - pos)
            body(pos, len, o0 + innerPos * i0, o1 + innerPos * i1, o2 + innerPos * i2)
            pos += len
            innerPos = 0
            var j = r - 2
            while j >= 0 {
                idx[j] += 1
                o0 += p.s0[j]; o1 += p.s1[j]; o2 += p.s2[j]
                if idx[j] < dims[j] { break }
                o0 -= p.s0[j] * dims[j]; o1 -= p.s1[j] * dims[j]; o2 -= p.s2[j] * dims[j]
                idx[j] = 0
                j -= 1
            }
        }
    }

    // MARK: mapping loops

    // The per-element function is a value of a concrete functor type (see
    // EWUnaryOp & co.), not a closure: a closure called from the chunks that
    // `parallelChunks` hands to other threads is not inlined (an indirect
    // call per element, ~25× slower), while a functor's type makes the
    // specialized loop inline and vectorize on every path.

    /// `op` over every element (same shape in and out), chunked over threads.
    @inline(__always)
    static func map1<Op: EWUnaryOp>(_ a: [Op.A], threads: Int, grain: Int, _ op: Op) -> [Op.R] {
        let n = a.count
        if n == 0 { return [] }
        return a.withUnsafeBufferPointer { ap in
            [Op.R](unsafeUninitializedCapacity: n) { out, count in
                let o = SendablePointer(out.baseAddress!)
                let x = ap.baseAddress!
                parallelChunks(n, threads: threads, minChunk: grain) { r in
                    for i in r { (o.p + i).initialize(to: op(x[i])) }
                }
                count = n
            }
        }
    }

    /// `op(a, b)` with broadcasting per `p`, chunked over threads; the inner
    /// loop is specialized for same-shape, scalar and broadcast-row operands.
    @inline(__always)
    static func map2<Op: EWBinaryOp>(_ a: [Op.A], _ b: [Op.B], _ p: Plan, threads: Int, grain: Int, _ op: Op) -> [Op.R] {
        let n = p.count
        if n == 0 { return [] }
        let sa = p.s0[p.dims.count - 1], sb = p.s1[p.dims.count - 1]
        return a.withUnsafeBufferPointer { ap in
            b.withUnsafeBufferPointer { bp in
                [Op.R](unsafeUninitializedCapacity: n) { out, count in
                    let o = SendablePointer(out.baseAddress!)
                    let pa = ap.baseAddress!, pb = bp.baseAddress!
                    parallelChunks(n, threads: threads, minChunk: grain) { range in
                        spans(p, range) { start, len, ia, ib, _ in
                            let y = o.p + start
                            let xa = pa + ia, xb = pb + ib
                            if sa == 1 && sb == 1 {
                                for j in 0..<len { (y + j).initialize(to: op(xa[j], xb[j])) }
                            } else if sa == 1 && sb == 0 {
                                let v = xb[0]
                                for j in 0..<len { (y + j).initialize(to: op(xa[j], v)) }
                            } else if sa == 0 && sb == 1 {
                                let u = xa[0]
                                for j in 0..<len { (y + j).initialize(to: op(u, xb[j])) }
                            } else {
                                for j in 0..<len { (y + j).initialize(to: op(xa[j * sa], xb[j * sb])) }
                            }
                        }
                    }
                    count = n
                }
            }
        }
    }

    /// `op(a, b, c)` with broadcasting per `p` (Where).
    @inline(__always)
    static func map3<Op: EWTernaryOp>(_ a: [Op.A], _ b: [Op.B], _ c: [Op.C], _ p: Plan, threads: Int, grain: Int,
                                      _ op: Op) -> [Op.R] {
        let n = p.count
        if n == 0 { return [] }
        let r = p.dims.count - 1
        let sa = p.s0[r], sb = p.s1[r], sc = p.s2[r]
        return a.withUnsafeBufferPointer { ap in
            b.withUnsafeBufferPointer { bp in
                c.withUnsafeBufferPointer { cp in
                    [Op.R](unsafeUninitializedCapacity: n) { out, count in
                        let o = SendablePointer(out.baseAddress!)
                        let pa = ap.baseAddress!, pb = bp.baseAddress!, pc = cp.baseAddress!
                        parallelChunks(n, threads: threads, minChunk: grain) { range in
                            spans(p, range) { start, len, ia, ib, ic in
                                let y = o.p + start
                                if sa == 1 && sb == 1 && sc == 1 {
                                    let xa = pa + ia, xb = pb + ib, xc = pc + ic
                                    for j in 0..<len { (y + j).initialize(to: op(xa[j], xb[j], xc[j])) }
                                } else {
                                    var ja = ia, jb = ib, jc = ic
                                    for j in 0..<len {
                                        (y + j).initialize(to: op(pa[ja], pb[jb], pc[jc]))
                                        ja += sa; jb += sb; jc += sc
                                    }
                                }
                            }
                        }
                        count = n
                    }
                }
            }
        }
    }

    // MARK: kernel builders

    /// A unary op on floats only.
    @inline(__always)
    static func unary<F: EWUnaryOp>(_ c: KernelContext, grain: Int = cheapGrain, _ f: F) throws -> [Tensor]
    where F.A == Float, F.R == Float {
        let t = try c.input(0)
        guard let x = t.floats else { throw c.fail("input must be floating point, got \(t.dtype)") }
        return [floatTensor(map1(x, threads: c.threads, grain: grain, f), t.shape, t.dtype)]
    }

    /// A unary op on floats and integers (integer results wrapped into the input dtype).
    @inline(__always)
    static func unary<F: EWUnaryOp, I: EWUnaryOp>(_ c: KernelContext, grain: Int = cheapGrain, _ f: F, int g: I) throws -> [Tensor]
    where F.A == Float, F.R == Float, I.A == Int64, I.R == Int64 {
        let t = try c.input(0)
        switch t.storage {
        case .float(let x):
            return [floatTensor(map1(x, threads: c.threads, grain: grain, f), t.shape, t.dtype)]
        case .int(let x):
            return [intTensor(map1(x, threads: c.threads, grain: cheapGrain, g), t.shape, t.dtype)]
        case .bool:
            throw c.fail("input must be numeric, got bool")
        }
    }

    /// A binary op with broadcasting on floats and integers: the two inputs
    /// must share a storage class; the result has input 0's dtype.
    @inline(__always)
    static func binary<F: EWBinaryOp, I: EWBinaryOp>(_ c: KernelContext, grain: Int = cheapGrain, _ f: F, int g: I) throws -> [Tensor]
    where F.A == Float, F.B == Float, F.R == Float, I.A == Int64, I.B == Int64, I.R == Int64 {
        let a = try c.input(0), b = try c.input(1)
        let p = try plan(c, [a.shape, b.shape])
        switch (a.storage, b.storage) {
        case (.float(let x), .float(let y)):
            return [floatTensor(map2(x, y, p, threads: c.threads, grain: grain, f), p.shape, a.dtype)]
        case (.int(let x), .int(let y)):
            return [intTensor(map2(x, y, p, threads: c.threads, grain: cheapGrain, g), p.shape, a.dtype)]
        default:
            throw c.fail("inputs must both be floating point or both integer, got \(a.dtype) and \(b.dtype)")
        }
    }

    /// Folds the inputs left to right with a broadcasting binary op; returns
    /// the unrounded result and the number of inputs.
    @inline(__always)
    static func variadic<F: EWBinaryOp, I: EWBinaryOp>(_ c: KernelContext, _ f: F, int g: I) throws -> (Tensor, Int)
    where F.A == Float, F.B == Float, F.R == Float, I.A == Int64, I.B == Int64, I.R == Int64 {
        var present: [Tensor] = []
        for case let t? in c.inputs { present.append(t) }
        guard let first = present.first else { throw c.fail("needs at least one input") }
        _ = try plan(c, present.map(\.shape))  // checks compatibility and size once
        var acc = first
        for t in present.dropFirst() {
            let p = try plan(c, [acc.shape, t.shape])
            switch (acc.storage, t.storage) {
            case (.float(let x), .float(let y)):
                acc = Tensor(dtype: first.dtype, shape: p.shape,
                             storage: .float(map2(x, y, p, threads: c.threads, grain: cheapGrain, f)))
            case (.int(let x), .int(let y)):
                acc = Tensor(dtype: first.dtype, shape: p.shape,
                             storage: .int(map2(x, y, p, threads: c.threads, grain: cheapGrain, g)))
            default:
                throw c.fail("inputs must all be floating point or all integer, got \(first.dtype) and \(t.dtype)")
            }
        }
        return (acc, present.count)
    }

    /// Fails when an integer divisor contains a zero (C/ONNX leave it undefined).
    static func checkNoZero(_ c: KernelContext, _ t: Tensor) throws {
        if let v = t.ints, v.contains(0) { throw c.fail("integer division by zero") }
    }
}

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

    public static func exp(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, EWLibm(fn: expf)) }
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
            return EWKit.intTensor(x.map { EWKit.truncatedInt($0) }, shape, to)
        case .int(let x):
            if to.isFloatingPoint {
                let f: [Float] = t.dtype == .uint64 ? x.map { Float(UInt64(bitPattern: $0)) } : x.map { Float($0) }
                return EWKit.floatTensor(f, shape, to)
            }
            if to == .bool { return Tensor(bools: x.map { $0 != 0 }, shape: shape) }
            return EWKit.intTensor(x, shape, to)
        case .bool(let x):
            if to.isFloatingPoint { return Tensor(dtype: to, shape: shape, storage: .float(x.map { $0 ? 1 : 0 })) }
            if to == .bool { return t }
            return Tensor(dtype: to, shape: shape, storage: .int(x.map { $0 ? 1 : 0 }))
        }
    }
}

// Free-function aliases: inside `ElementwiseKernels` the names pow and erf are
// the kernels themselves, so the math functions are reached through these.
@inline(__always) func ewErf(_ x: Double) -> Double { erf(x) }
@inline(__always) func ewPow(_ x: Double, _ y: Double) -> Double { pow(x, y) }
