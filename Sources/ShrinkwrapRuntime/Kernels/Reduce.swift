import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reductions (ReduceSum … ReduceLogSumExp) and ArgMax / ArgMin.
///
/// Axes come from optional input 1 (the importer moves older attribute forms
/// there); `keepdims` defaults to 1; with no axes every axis is reduced unless
/// `noop_with_empty_axes` is set, in which case nothing is (each output is
/// the op applied to one element, as numpy does for `axis=()`). Each output
/// element is accumulated in a fixed order, whatever the thread count.
public enum ReduceKernels {
    // MARK: layout

    /// How an input splits into output elements and reduced runs. Size-1
    /// axes are dropped and adjacent axes of the same kind merged, so the
    /// common cases become [kept, reduced] (innermost reduction) or
    /// [kept, reduced, kept] (one middle block, e.g. spatial or channel axes).
    struct Layout {
        var outShape: [Int]
        var keepShape: [Int]
        var outCount: Int
        var reduceCount: Int
        var dims: [Int]
        var isReduced: [Bool]
        var strides: [Int]
    }

    /// Which axes of a rank-`rank` input are reduced.
    static func reducedAxes(_ c: KernelContext, rank: Int) throws -> [Bool] {
        var axes = try c.optionalIntValues(1)
        if axes == nil { axes = try c.ints("axes") }
        let noop = try c.int("noop_with_empty_axes", default: 0) != 0
        guard let list = axes, !list.isEmpty else {
            return [Bool](repeating: !noop, count: rank)
        }
        var mask = [Bool](repeating: false, count: rank)
        for a in list {
            let v = a < 0 ? a + rank : a
            guard v >= 0 && v < rank else { throw c.fail("axis \(a) is out of range for rank \(rank)") }
            guard !mask[v] else { throw c.fail("axis \(a) is listed twice") }
            mask[v] = true
        }
        return mask
    }

    static func layout(_ c: KernelContext, shape: [Int], mask: [Bool], keepdims: Bool) throws -> Layout {
        var keep: [Int] = [], out: [Int] = []
        var rc = 1
        for (i, d) in shape.enumerated() {
            if mask[i] { keep.append(1); rc *= d; if keepdims { out.append(1) } } else { keep.append(d); out.append(d) }
        }
        let n = try c.checkedCount(out)
        let st = stridesOf(shape)
        var dims: [Int] = [], red: [Bool] = [], strides: [Int] = []
        for (i, d) in shape.enumerated() where d != 1 {
            if let j = dims.indices.last, red[j] == mask[i] {
                dims[j] *= d
                strides[j] = st[i]
            } else {
                dims.append(d); red.append(mask[i]); strides.append(st[i])
            }
        }
        return Layout(outShape: out, keepShape: keep, outCount: n, reduceCount: rc, dims: dims, isReduced: red, strides: strides)
    }

    // MARK: core

    /// Accumulates every output element: `acc = op.combine(acc, x)` over its
    /// reduced elements in increasing input order, starting at `op.initial`.
    /// `op.merge` joins two partial accumulators (used by the contiguous
    /// path, which keeps four interleaved partials for speed).
    @inline(__always)
    static func reduce<Op: EWReduceOp>(_ x: [Op.T], _ L: Layout, threads: Int, _ op: Op) -> [Op.A] {
        let initial = op.initial
        let n = L.outCount
        if n == 0 { return [] }
        var out = [Op.A](repeating: initial, count: n)
        if L.reduceCount == 0 { return out }
        let R = L.reduceCount
        let grain = Swift.max(1, EWKit.cheapGrain / R)
        x.withUnsafeBufferPointer { xb in
            out.withUnsafeMutableBufferPointer { ob in
                guard let xp = xb.baseAddress, let ob0 = ob.baseAddress else { return }
                let o = SendablePointer(ob0)
                let kinds = L.isReduced
                if kinds.last == true && kinds.dropLast().allSatisfy({ !$0 }) {
                    // [kept?, reduced]: each output reduces a contiguous run of R.
                    parallelChunks(n, threads: threads, minChunk: grain) { range in
                        for i in range {
                            let p = xp + i * R
                            if R >= 16 {
                                var a0 = initial, a1 = initial, a2 = initial, a3 = initial
                                var j = 0
                                while j + 4 <= R {
                                    a0 = op.combine(a0, p[j]); a1 = op.combine(a1, p[j + 1])
                                    a2 = op.combine(a2, p[j + 2]); a3 = op.combine(a3, p[j + 3])
                                    j += 4
                                }
                                while j < R { a0 = op.combine(a0, p[j]); j += 1 }
                                o.p[i] = op.merge(op.merge(a0, a1), op.merge(a2, a3))
                            } else {
                                var a = initial
                                for j in 0..<R { a = op.combine(a, p[j]) }
                                o.p[i] = a
                            }
                        }
                    }
                } else if let r = kinds.firstIndex(of: true), r + 1 < kinds.count,
                          kinds.lastIndex(of: true) == r, kinds.count <= 3 {
                    // [kept?, reduced, kept]: accumulate whole rows of `inner` outputs.
                    let inner = L.dims[r + 1]
                    let rowGrain = Swift.max(1, EWKit.cheapGrain / Swift.max(R, 1))
                    parallelChunks(n, threads: threads, minChunk: rowGrain) { range in
                        var i = range.lowerBound
                        while i < range.upperBound {
                            let k1 = i / inner, k2 = i % inner
                            let hi = Swift.min(range.upperBound - i, inner - k2)
                            let src = xp + k1 * R * inner + k2
                            let dst = o.p + i
                            for j in 0..<R {
                                let row = src + j * inner
                                for k in 0..<hi { dst[k] = op.combine(dst[k], row[k]) }
                            }
                            i += hi
                        }
                    }
                } else {
                    // General: precomputed offsets of the reduced elements.
                    var redOffsets = [Int](repeating: 0, count: R)
                    let rd = L.dims.indices.filter { L.isReduced[$0] }
                    let kd = L.dims.indices.filter { !L.isReduced[$0] }
                    var idx = [Int](repeating: 0, count: rd.count)
                    var off = 0
                    for e in 0..<R {
                        redOffsets[e] = off
                        var k = rd.count - 1
                        while k >= 0 {
                            idx[k] += 1; off += L.strides[rd[k]]
                            if idx[k] < L.dims[rd[k]] { break }
                            off -= L.strides[rd[k]] * L.dims[rd[k]]; idx[k] = 0
                            k -= 1
                        }
                    }
                    redOffsets.withUnsafeBufferPointer { rb in
                        guard let ro = rb.baseAddress else { return }
                        parallelChunks(n, threads: threads, minChunk: grain) { range in
                            for i in range {
                                var rem = i, base = 0
                                var k = kd.count - 1
                                while k >= 0 {
                                    let d = L.dims[kd[k]]
                                    base += (rem % d) * L.strides[kd[k]]
                                    rem /= d
                                    k -= 1
                                }
                                var a = initial
                                let p = xp + base
                                for e in 0..<R { a = op.combine(a, p[ro[e]]) }
                                o.p[i] = a
                            }
                        }
                    }
                }
            }
        }
        return out
    }

    // MARK: kernels

    enum Op { case sum, mean, max, min, prod, l1, l2, logSum, logSumExp, sumSquare }

    public static func reduceSum(_ c: KernelContext) throws -> [Tensor] { try run(c, .sum) }
    public static func reduceMean(_ c: KernelContext) throws -> [Tensor] { try run(c, .mean) }
    public static func reduceMax(_ c: KernelContext) throws -> [Tensor] { try run(c, .max) }
    public static func reduceMin(_ c: KernelContext) throws -> [Tensor] { try run(c, .min) }
    public static func reduceProd(_ c: KernelContext) throws -> [Tensor] { try run(c, .prod) }
    public static func reduceL1(_ c: KernelContext) throws -> [Tensor] { try run(c, .l1) }
    public static func reduceL2(_ c: KernelContext) throws -> [Tensor] { try run(c, .l2) }
    public static func reduceLogSum(_ c: KernelContext) throws -> [Tensor] { try run(c, .logSum) }
    public static func reduceLogSumExp(_ c: KernelContext) throws -> [Tensor] { try run(c, .logSumExp) }
    public static func reduceSumSquare(_ c: KernelContext) throws -> [Tensor] { try run(c, .sumSquare) }

    static func run(_ c: KernelContext, _ op: Op) throws -> [Tensor] {
        let t = try c.input(0)
        let keepdims = try c.int("keepdims", default: 1) != 0
        let mask = try reducedAxes(c, rank: t.rank)
        let L = try layout(c, shape: t.shape, mask: mask, keepdims: keepdims)
        switch t.storage {
        case .float(let x):
            return [EWKit.floatTensor(try reduceFloats(c, x, t.shape, L, op), L.outShape, t.dtype)]
        case .int(let x):
            return [EWKit.intTensor(try reduceInts(c, x, t.dtype, L, op), L.outShape, t.dtype)]
        case .bool(let x):
            // Max is "any", Min is "all" (the empty set gives false / true).
            guard op == .max || op == .min else { throw c.fail("bool input is only supported by ReduceMax and ReduceMin") }
            let v = x.map { $0 ? Int64(1) : 0 }
            let r = op == .max ? reduce(v, L, threads: c.threads, MaxI(initial: 0))
                               : reduce(v, L, threads: c.threads, MinI(initial: 1))
            return [Tensor(bools: r.map { $0 != 0 }, shape: L.outShape)]
        }
    }

    // Accumulator functors (see `EWReduceOp`). Float sums accumulate in double.
    struct SumF: EWReduceOp {
        var initial: Double { 0 }
        @inline(__always) func combine(_ a: Double, _ x: Float) -> Double { a + Double(x) }
        @inline(__always) func merge(_ a: Double, _ b: Double) -> Double { a + b }
    }
    struct L1F: EWReduceOp {
        var initial: Double { 0 }
        @inline(__always) func combine(_ a: Double, _ x: Float) -> Double { a + Double(Swift.abs(x)) }
        @inline(__always) func merge(_ a: Double, _ b: Double) -> Double { a + b }
    }
    struct SumSquareF: EWReduceOp {
        var initial: Double { 0 }
        @inline(__always) func combine(_ a: Double, _ x: Float) -> Double { let v = Double(x); return a + v * v }
        @inline(__always) func merge(_ a: Double, _ b: Double) -> Double { a + b }
    }
    struct ProdF: EWReduceOp {
        var initial: Float { 1 }
        @inline(__always) func combine(_ a: Float, _ x: Float) -> Float { a * x }
        @inline(__always) func merge(_ a: Float, _ b: Float) -> Float { a * b }
    }
    /// NaN propagates (numpy).
    struct MaxF: EWReduceOp {
        var initial: Float { -.infinity }
        @inline(__always) func combine(_ a: Float, _ x: Float) -> Float { (x > a || x.isNaN) ? x : a }
        @inline(__always) func merge(_ a: Float, _ b: Float) -> Float { combine(a, b) }
    }
    struct MinF: EWReduceOp {
        var initial: Float { .infinity }
        @inline(__always) func combine(_ a: Float, _ x: Float) -> Float { (x < a || x.isNaN) ? x : a }
        @inline(__always) func merge(_ a: Float, _ b: Float) -> Float { combine(a, b) }
    }
    /// Largest finite element (-inf when none), LogSumExp's shift.
    struct MaxFiniteF: EWReduceOp {
        var initial: Float { -.infinity }
        @inline(__always) func combine(_ a: Float, _ x: Float) -> Float { (x.isFinite && x > a) ? x : a }
        @inline(__always) func merge(_ a: Float, _ b: Float) -> Float { b > a ? b : a }
    }
    struct SumI: EWReduceOp {
        var initial: Int64 { 0 }
        @inline(__always) func combine(_ a: Int64, _ x: Int64) -> Int64 { a &+ x }
        @inline(__always) func merge(_ a: Int64, _ b: Int64) -> Int64 { a &+ b }
    }
    struct L1I: EWReduceOp {
        let unsigned: Bool
        var initial: Int64 { 0 }
        @inline(__always) func combine(_ a: Int64, _ x: Int64) -> Int64 { a &+ (x < 0 && !unsigned ? 0 &- x : x) }
        @inline(__always) func merge(_ a: Int64, _ b: Int64) -> Int64 { a &+ b }
    }
    struct SumSquareI: EWReduceOp {
        var initial: Int64 { 0 }
        @inline(__always) func combine(_ a: Int64, _ x: Int64) -> Int64 { a &+ x &* x }
        @inline(__always) func merge(_ a: Int64, _ b: Int64) -> Int64 { a &+ b }
    }
    struct ProdI: EWReduceOp {
        var initial: Int64 { 1 }
        @inline(__always) func combine(_ a: Int64, _ x: Int64) -> Int64 { a &* x }
        @inline(__always) func merge(_ a: Int64, _ b: Int64) -> Int64 { a &* b }
    }
    struct MaxI: EWReduceOp {
        let initial: Int64
        @inline(__always) func combine(_ a: Int64, _ x: Int64) -> Int64 { Swift.max(a, x) }
        @inline(__always) func merge(_ a: Int64, _ b: Int64) -> Int64 { Swift.max(a, b) }
    }
    struct MinI: EWReduceOp {
        let initial: Int64
        @inline(__always) func combine(_ a: Int64, _ x: Int64) -> Int64 { Swift.min(a, x) }
        @inline(__always) func merge(_ a: Int64, _ b: Int64) -> Int64 { Swift.min(a, b) }
    }
    struct ExpShifted: EWBinaryOp { @inline(__always) func callAsFunction(_ v: Float, _ s: Float) -> Float { expf(v - s) } }

    static func reduceFloats(_ c: KernelContext, _ x: [Float], _ shape: [Int], _ L: Layout, _ op: Op) throws -> [Float] {
        let th = c.threads
        switch op {
        case .sum: return reduce(x, L, threads: th, SumF()).map { Float($0) }
        case .mean:
            let d = Double(L.reduceCount)
            return reduce(x, L, threads: th, SumF()).map { Float($0 / d) }
        case .max: return reduce(x, L, threads: th, MaxF())
        case .min: return reduce(x, L, threads: th, MinF())
        case .prod: return reduce(x, L, threads: th, ProdF())
        case .l1: return reduce(x, L, threads: th, L1F()).map { Float($0) }
        case .l2: return reduce(x, L, threads: th, SumSquareF()).map { Float($0.squareRoot()) }
        case .sumSquare: return reduce(x, L, threads: th, SumSquareF()).map { Float($0) }
        case .logSum: return reduce(x, L, threads: th, SumF()).map { Float(log($0)) }
        case .logSumExp:
            // log Σ e^(x - m) + m, with m the largest finite element (0 when none).
            var m = reduce(x, L, threads: th, MaxFiniteF())
            for i in m.indices where !m[i].isFinite { m[i] = 0 }
            let p = EWKit.makePlan(out: shape, count: x.count, [shape, L.keepShape])
            let e = EWKit.map2(x, m, p, threads: th, grain: EWKit.costlyGrain, ExpShifted())
            let s = reduce(e, L, threads: th, SumF())
            var r = [Float](repeating: 0, count: s.count)
            for i in s.indices { r[i] = Float(log(s[i])) + m[i] }
            return r
        }
    }

    static func reduceInts(_ c: KernelContext, _ x: [Int64], _ dt: DType, _ L: Layout, _ op: Op) throws -> [Int64] {
        let th = c.threads
        switch op {
        case .sum: return reduce(x, L, threads: th, SumI())
        case .mean:
            let s = reduce(x, L, threads: th, SumI())
            let d = Int64(L.reduceCount)
            if d == 0 { return s }
            if dt == .uint64 { return s.map { Int64(bitPattern: UInt64(bitPattern: $0) / UInt64(d)) } }
            return s.map { $0 / d }
        case .max, .min:
            let flip = EWKit.orderFlip(dt)
            let range = EWKit.intRange(dt)
            let v = flip == 0 ? x : x.map { $0 ^ flip }
            let r = op == .max ? reduce(v, L, threads: th, MaxI(initial: range.min ^ flip))
                               : reduce(v, L, threads: th, MinI(initial: range.max ^ flip))
            return flip == 0 ? r : r.map { $0 ^ flip }
        case .prod: return reduce(x, L, threads: th, ProdI())
        case .l1: return reduce(x, L, threads: th, L1I(unsigned: dt == .uint64))
        case .sumSquare: return reduce(x, L, threads: th, SumSquareI())
        case .l2:
            return reduce(x, L, threads: th, SumSquareI()).map { EWKit.truncatedInt(EWKit.doubleOf($0, dt).squareRoot()) }
        case .logSum, .logSumExp:
            throw c.fail("integer input is not supported (cast to a float type first)")
        }
    }

    // MARK: ArgMax / ArgMin

    public static func argMax(_ c: KernelContext) throws -> [Tensor] { try arg(c, max: true) }
    public static func argMin(_ c: KernelContext) throws -> [Tensor] { try arg(c, max: false) }

    /// Index of the first (or, with select_last_index, last) extreme along
    /// `axis`, as int64.
    static func arg(_ c: KernelContext, max: Bool) throws -> [Tensor] {
        let t = try c.input(0)
        guard t.rank > 0 else { throw c.fail("input must have rank ≥ 1") }
        let axis = try c.axis(try c.int("axis", default: 0), rank: t.rank)
        let keepdims = try c.int("keepdims", default: 1) != 0
        let last = try c.int("select_last_index", default: 0) != 0
        var outShape = t.shape
        if keepdims { outShape[axis] = 1 } else { outShape.remove(at: axis) }
        let n = try c.checkedCount(outShape)
        let (outer, len, inner) = ActivationKernels.split(t.shape, axis)
        if n == 0 { return [Tensor(ints: [], shape: outShape)] }
        guard len > 0 else { throw c.fail("cannot take Arg\(max ? "Max" : "Min") over an empty axis") }
        let r: [Int64]
        switch t.storage {
        case .float(let x):
            r = argScan(x, outer, len, inner, threads: c.threads, ArgF(max: max, last: last))
        case .int(let x):
            r = argScan(x, outer, len, inner, threads: c.threads, ArgI(flip: EWKit.orderFlip(t.dtype), max: max, last: last))
        case .bool(let x):
            r = argScan(x.map { $0 ? Int64(1) : 0 }, outer, len, inner, threads: c.threads, ArgI(flip: 0, max: max, last: last))
        }
        return [Tensor(ints: r, shape: outShape)]
    }

    /// Decides whether `v` replaces the running best. Floats: NaN counts as
    /// the extreme (numpy), so the first NaN wins.
    struct ArgF: EWBinaryOp {
        let max: Bool, last: Bool
        @inline(__always) func callAsFunction(_ v: Float, _ best: Float) -> Bool {
            if best.isNaN { return false }
            if v.isNaN { return true }
            if max { return last ? v >= best : v > best }
            return last ? v <= best : v < best
        }
    }
    struct ArgI: EWBinaryOp {
        let flip: Int64, max: Bool, last: Bool
        @inline(__always) func callAsFunction(_ v: Int64, _ best: Int64) -> Bool {
            let a = v ^ flip, b = best ^ flip
            if max { return last ? a >= b : a > b }
            return last ? a <= b : a < b
        }
    }

    /// For each (outer, inner) column, the index whose element `better`
    /// accepts over the running best (first element to start).
    @inline(__always)
    static func argScan<Op: EWBinaryOp>(_ x: [Op.A], _ outer: Int, _ len: Int, _ inner: Int, threads: Int,
                                        _ better: Op) -> [Int64] where Op.B == Op.A, Op.R == Bool {
        let n = outer * inner
        var out = [Int64](repeating: 0, count: n)
        x.withUnsafeBufferPointer { xb in
            out.withUnsafeMutableBufferPointer { ob in
                guard let xp = xb.baseAddress, let op = ob.baseAddress else { return }
                let o = SendablePointer(op)
                parallelChunks(n, threads: threads, minChunk: Swift.max(1, EWKit.cheapGrain / len)) { range in
                    for w in range {
                        let p = xp + (w / inner) * len * inner + (w % inner)
                        var best = p[0]
                        var bi = 0
                        for j in 1..<Swift.max(len, 1) {
                            let v = p[j * inner]
                            if better(v, best) { best = v; bi = j }
                        }
                        o.p[w] = Int64(bi)
                    }
                }
            }
        }
        return out
    }
}

/// An accumulation for `ReduceKernels.reduce`: a start value, a step and a
/// join of two partial accumulators, as a concrete type so loops inline. The
/// accumulator `A` may be wider than the elements `T` (float sums run in
/// double: a long float32 running sum loses the small terms).
protocol EWReduceOp {
    associatedtype T
    associatedtype A
    var initial: A { get }
    func combine(_ acc: A, _ x: T) -> A
    func merge(_ a: A, _ b: A) -> A
}
