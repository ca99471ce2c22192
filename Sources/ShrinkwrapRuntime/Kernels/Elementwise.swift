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
    static let cheapGrain = 1 << 16
    /// Minimum elements per parallel chunk for a costly op (exp, erf, pow).
    static let costlyGrain = 1 << 13

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

    /// `f` over every element (same shape in and out), chunked over threads.
    @inline(__always)
    static func map1<A, R>(_ a: [A], threads: Int, grain: Int, _ f: (A) -> R) -> [R] {
        let n = a.count
        if n == 0 { return [] }
        return a.withUnsafeBufferPointer { ap in
            [R](unsafeUninitializedCapacity: n) { out, count in
                let o = SendablePointer(out.baseAddress!)
                let x = ap.baseAddress!
                parallelChunks(n, threads: threads, minChunk: grain) { r in
                    for i in r { (o.p + i).initialize(to: f(x[i])) }
                }
                count = n
            }
        }
    }

    /// `f(a, b)` with broadcasting per `p`, chunked over threads; the inner
    /// loop is specialized for same-shape, scalar and broadcast-row operands.
    @inline(__always)
    static func map2<A, B, R>(_ a: [A], _ b: [B], _ p: Plan, threads: Int, grain: Int, _ f: (A, B) -> R) -> [R] {
        let n = p.count
        if n == 0 { return [] }
        let sa = p.s0[p.dims.count - 1], sb = p.s1[p.dims.count - 1]
        return a.withUnsafeBufferPointer { ap in
            b.withUnsafeBufferPointer { bp in
                [R](unsafeUninitializedCapacity: n) { out, count in
                    let o = SendablePointer(out.baseAddress!)
                    let pa = ap.baseAddress!, pb = bp.baseAddress!
                    parallelChunks(n, threads: threads, minChunk: grain) { range in
                        spans(p, range) { start, len, ia, ib, _ in
                            let y = o.p + start
                            let xa = pa + ia, xb = pb + ib
                            if sa == 1 && sb == 1 {
                                for j in 0..<len { (y + j).initialize(to: f(xa[j], xb[j])) }
                            } else if sa == 1 && sb == 0 {
                                let v = xb[0]
                                for j in 0..<len { (y + j).initialize(to: f(xa[j], v)) }
                            } else if sa == 0 && sb == 1 {
                                let u = xa[0]
                                for j in 0..<len { (y + j).initialize(to: f(u, xb[j])) }
                            } else {
                                for j in 0..<len { (y + j).initialize(to: f(xa[j * sa], xb[j * sb])) }
                            }
                        }
                    }
                    count = n
                }
            }
        }
    }

    /// `f(a, b, c)` with broadcasting per `p` (Where, Clip with tensors).
    @inline(__always)
    static func map3<A, B, C, R>(_ a: [A], _ b: [B], _ c: [C], _ p: Plan, threads: Int, grain: Int,
                                 _ f: (A, B, C) -> R) -> [R] {
        let n = p.count
        if n == 0 { return [] }
        let r = p.dims.count - 1
        let sa = p.s0[r], sb = p.s1[r], sc = p.s2[r]
        return a.withUnsafeBufferPointer { ap in
            b.withUnsafeBufferPointer { bp in
                c.withUnsafeBufferPointer { cp in
                    [R](unsafeUninitializedCapacity: n) { out, count in
                        let o = SendablePointer(out.baseAddress!)
                        let pa = ap.baseAddress!, pb = bp.baseAddress!, pc = cp.baseAddress!
                        parallelChunks(n, threads: threads, minChunk: grain) { range in
                            spans(p, range) { start, len, ia, ib, ic in
                                let y = o.p + start
                                if sa == 1 && sb == 1 && sc == 1 {
                                    let xa = pa + ia, xb = pb + ib, xc = pc + ic
                                    for j in 0..<len { (y + j).initialize(to: f(xa[j], xb[j], xc[j])) }
                                } else {
                                    var ja = ia, jb = ib, jc = ic
                                    for j in 0..<len {
                                        (y + j).initialize(to: f(pa[ja], pb[jb], pc[jc]))
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

    /// A unary op on floats (and, when `int` is given, on integers; integer
    /// results are wrapped into the input dtype).
    @inline(__always)
    static func unary(_ c: KernelContext, grain: Int = cheapGrain, _ f: (Float) -> Float,
                      int g: ((Int64) -> Int64)? = nil) throws -> [Tensor] {
        let t = try c.input(0)
        switch t.storage {
        case .float(let x):
            return [floatTensor(map1(x, threads: c.threads, grain: grain, f), t.shape, t.dtype)]
        case .int(let x):
            guard let g else { throw c.fail("input must be floating point, got \(t.dtype)") }
            return [intTensor(map1(x, threads: c.threads, grain: cheapGrain, g), t.shape, t.dtype)]
        case .bool:
            throw c.fail("input must be numeric, got bool")
        }
    }

    /// A binary op with broadcasting on floats and integers: the two inputs
    /// must share a storage class; the result has input 0's dtype.
    @inline(__always)
    static func binary(_ c: KernelContext, grain: Int = cheapGrain, _ f: (Float, Float) -> Float,
                       int g: (Int64, Int64) -> Int64) throws -> [Tensor] {
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

    /// Folds `inputs` left to right with a broadcasting binary op.
    @inline(__always)
    static func variadic(_ c: KernelContext, _ f: (Float, Float) -> Float,
                         int g: (Int64, Int64) -> Int64) throws -> (Tensor, Int) {
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

// MARK: - Kernels

/// Elementwise arithmetic, unary math and Cast kernels.
public enum ElementwiseKernels {
    // MARK: binary

    public static func add(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.binary(c, { $0 + $1 }, int: { $0 &+ $1 })
    }

    public static func sub(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.binary(c, { $0 - $1 }, int: { $0 &- $1 })
    }

    public static func mul(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.binary(c, { $0 * $1 }, int: { $0 &* $1 })
    }

    /// Div: float division; integer division truncates toward zero (like C).
    public static func div(_ c: KernelContext) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        if a.ints != nil { try EWKit.checkNoZero(c, b) }
        if a.dtype == .uint64 {
            return try EWKit.binary(c, { $0 / $1 }, int: { x, y in
                Int64(bitPattern: UInt64(bitPattern: x) / UInt64(bitPattern: y))
            })
        }
        return try EWKit.binary(c, { $0 / $1 }, int: { x, y in
            y == 0 ? 0 : x.dividedReportingOverflow(by: y).partialValue
        })
    }

    /// Mod: fmod=0 takes the divisor's sign (Python/numpy `mod`); fmod=1 the
    /// dividend's (C `fmod`).
    public static func mod(_ c: KernelContext) throws -> [Tensor] {
        let fmodAttr = try c.int("fmod", default: 0)
        guard fmodAttr == 0 || fmodAttr == 1 else { throw c.badAttribute("fmod", "must be 0 or 1, got \(fmodAttr)") }
        let a = try c.input(0), b = try c.input(1)
        if a.ints != nil { try EWKit.checkNoZero(c, b) }
        if a.dtype == .uint64 {
            return try EWKit.binary(c, { fmodf($0, $1) }, int: { x, y in
                Int64(bitPattern: UInt64(bitPattern: x) % UInt64(bitPattern: y))
            })
        }
        if fmodAttr == 1 {
            return try EWKit.binary(c, { fmodf($0, $1) }, int: { x, y in
                y == 0 ? 0 : x.remainderReportingOverflow(dividingBy: y).partialValue
            })
        }
        return try EWKit.binary(c, { x, y in
            // numpy's divmod: the remainder takes the divisor's sign; a zero
            // remainder gets the divisor's sign too.
            var m = fmodf(x, y)
            if y == 0 || m.isNaN { return m }
            if m != 0 {
                if (y < 0) != (m < 0) { m += y }
            } else {
                m = y < 0 ? -0.0 : 0.0
            }
            return m
        }, int: { x, y in
            if y == 0 { return 0 }
            var m = x.remainderReportingOverflow(dividingBy: y).partialValue
            if m != 0 && ((m < 0) != (y < 0)) { m = m &+ y }
            return m
        })
    }

    /// Pow: the result has X's type; the exponent may be of another type.
    public static func pow(_ c: KernelContext) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        let p = try EWKit.plan(c, [a.shape, b.shape])
        switch a.storage {
        case .float(let x):
            let y = EWKit.asFloats(b)
            if y.count == 1 {
                // Fast paths for the common constant exponents (LayerNorm's x²).
                let e = y[0]
                if e == 2 { return [EWKit.floatTensor(EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain) { $0 * $0 }, p.shape, a.dtype)] }
                if e == 1 { return [EWKit.floatTensor(x, p.shape, a.dtype)] }
                if e == 0.5 {
                    return [EWKit.floatTensor(EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain) { v in
                        v == -.infinity ? .infinity : v.squareRoot() + 0
                    }, p.shape, a.dtype)]
                }
            }
            let r = EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.costlyGrain) { u, v in powf(u, v) }
            return [EWKit.floatTensor(r, p.shape, a.dtype)]
        case .int(let x):
            let dt = a.dtype
            switch b.storage {
            case .int(let y):
                let r = EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.cheapGrain) { u, v in intPow(u, v) }
                return [EWKit.intTensor(r, p.shape, dt)]
            case .float(let y):
                let r = EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.costlyGrain) { u, v in
                    EWKit.truncatedInt(ewPow(EWKit.doubleOf(u, dt), Double(v)))
                }
                return [EWKit.intTensor(r, p.shape, dt)]
            case .bool:
                throw c.fail("exponent must be numeric, got bool")
            }
        case .bool:
            throw c.fail("base must be numeric, got bool")
        }
    }

    /// Integer power by squaring with wrapping; negative exponents give the
    /// truncated value of 1/x^n (0 unless |x| = 1).
    @inline(__always)
    static func intPow(_ x: Int64, _ e: Int64) -> Int64 {
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

    // MARK: variadic

    public static func sum(_ c: KernelContext) throws -> [Tensor] {
        let (t, _) = try EWKit.variadic(c, { $0 + $1 }, int: { $0 &+ $1 })
        return [finish(t)]
    }

    public static func mean(_ c: KernelContext) throws -> [Tensor] {
        let (t, n) = try EWKit.variadic(c, { $0 + $1 }, int: { $0 &+ $1 })
        switch t.storage {
        case .float(let v):
            let d = Float(n)
            return [EWKit.floatTensor(EWKit.map1(v, threads: c.threads, grain: EWKit.cheapGrain) { $0 / d }, t.shape, t.dtype)]
        case .int(let v):
            let d = Int64(n)
            return [EWKit.intTensor(v.map { $0 / d }, t.shape, t.dtype)]
        case .bool:
            throw c.fail("inputs must be numeric")
        }
    }

    /// Max: elementwise maximum; NaN propagates (numpy `maximum`).
    public static func max(_ c: KernelContext) throws -> [Tensor] {
        let first = try c.input(0)
        let flip = EWKit.orderFlip(first.dtype)
        let (t, _) = try EWKit.variadic(c, { a, b in (a.isNaN || a >= b) ? a : b },
                                        int: { a, b in (a ^ flip) >= (b ^ flip) ? a : b })
        return [finish(t)]
    }

    /// Min: elementwise minimum; NaN propagates (numpy `minimum`).
    public static func min(_ c: KernelContext) throws -> [Tensor] {
        let first = try c.input(0)
        let flip = EWKit.orderFlip(first.dtype)
        let (t, _) = try EWKit.variadic(c, { a, b in (a.isNaN || a <= b) ? a : b },
                                        int: { a, b in (a ^ flip) <= (b ^ flip) ? a : b })
        return [finish(t)]
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

    public static func neg(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { -$0 }, int: { 0 &- $0 })
    }

    public static func abs(_ c: KernelContext) throws -> [Tensor] {
        let dt = try c.input(0).dtype
        if dt == .uint64 { return try EWKit.unary(c, { Swift.abs($0) }, int: { $0 }) }
        return try EWKit.unary(c, { Swift.abs($0) }, int: { $0 < 0 ? 0 &- $0 : $0 })
    }

    public static func sign(_ c: KernelContext) throws -> [Tensor] {
        let dt = try c.input(0).dtype
        if dt == .uint64 { return try EWKit.unary(c, { _ in 0 }, int: { $0 == 0 ? 0 : 1 }) }
        return try EWKit.unary(c, { x in x > 0 ? 1 : (x < 0 ? -1 : (x.isNaN ? x : 0)) },
                               int: { $0 > 0 ? 1 : ($0 < 0 ? -1 : 0) })
    }

    public static func exp(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, { ewExp($0) })
    }

    public static func log(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, { ewLog($0) })
    }

    public static func sqrt(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { $0.squareRoot() })
    }

    public static func reciprocal(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { 1 / $0 })
    }

    /// Erf, evaluated in double precision and rounded once.
    public static func erf(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, grain: EWKit.costlyGrain, { Float(ewErf(Double($0))) })
    }

    public static func floor(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { $0.rounded(.down) })
    }

    public static func ceil(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { $0.rounded(.up) })
    }

    /// Round: halves go to the nearest even integer.
    public static func round(_ c: KernelContext) throws -> [Tensor] {
        try EWKit.unary(c, { $0.rounded(.toNearestOrEven) })
    }

    public static func sin(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { sinf($0) }) }
    public static func cos(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { cosf($0) }) }
    public static func tan(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { tanf($0) }) }
    public static func asin(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { asinf($0) }) }
    public static func acos(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { acosf($0) }) }
    public static func atan(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { atanf($0) }) }
    public static func sinh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { sinhf($0) }) }
    public static func cosh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { coshf($0) }) }
    public static func asinh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { asinhf($0) }) }
    public static func acosh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { acoshf($0) }) }
    public static func atanh(_ c: KernelContext) throws -> [Tensor] { try EWKit.unary(c, grain: EWKit.costlyGrain, { atanhf($0) }) }

    public static func isNaN(_ c: KernelContext) throws -> [Tensor] {
        let (t, x) = try c.floatInput(0)
        return [Tensor(bools: EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain) { $0.isNaN }, shape: t.shape)]
    }

    /// IsInf with detect_positive / detect_negative (both default 1).
    public static func isInf(_ c: KernelContext) throws -> [Tensor] {
        let (t, x) = try c.floatInput(0)
        let pos = try c.int("detect_positive", default: 1) != 0
        let neg = try c.int("detect_negative", default: 1) != 0
        let r = EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain) { v in
            (pos && v == .infinity) || (neg && v == -.infinity)
        }
        return [Tensor(bools: r, shape: t.shape)]
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

// Free-function aliases: inside `ElementwiseKernels` the names exp, log, pow,
// erf are the kernels themselves, so the math functions are reached through these.
@inline(__always) func ewExp(_ x: Float) -> Float { expf(x) }
@inline(__always) func ewLog(_ x: Float) -> Float { logf(x) }
@inline(__always) func ewErf(_ x: Double) -> Double { erf(x) }
@inline(__always) func ewPow(_ x: Double, _ y: Double) -> Double { pow(x, y) }
