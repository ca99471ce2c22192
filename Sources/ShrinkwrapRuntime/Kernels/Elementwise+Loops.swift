// EWKit's broadcast plans and the mapping loops that run an element functor over them.

extension EWKit {
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
        if let p = flatPlan(shapes) { return p }
        guard let out = Broadcast.shape(shapes) else {
            throw c.fail("shapes \(shapes.map { "\($0)" }.joined(separator: ", ")) cannot be broadcast together")
        }
        let n = try c.checkedCount(out)
        return makePlan(out: out, count: n, shapes)
    }

    /// The plan without building one when it is a single run: every operand
    /// has the output's shape or is one element of no higher rank (most
    /// elementwise nodes; the general plan costs ~15 small allocations).
    /// Nil otherwise, and for empty results.
    static func flatPlan(_ shapes: [[Int]]) -> Plan? {
        guard let first = shapes.first, shapes.count <= 3 else { return nil }
        var out = first
        var n = first.reduce(1, *)
        for s in shapes.dropFirst() where s != out {
            let m = s.reduce(1, *)
            if m == 1 && s.count <= out.count { continue }
            if n == 1 && out.count <= s.count { out = s; n = m; continue }
            return nil
        }
        guard n > 0 else { return nil }
        let one = [1], zero = [0]
        func step(_ k: Int) -> [Int] { k < shapes.count && shapes[k] == out ? one : zero }
        return Plan(shape: out, count: n, dims: [n], s0: step(0), s1: step(1), s2: step(2))
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
        if r == 1 {
            if !range.isEmpty { body(pos, range.count, pos * i0, pos * i1, pos * i2) }
            return
        }
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
}
