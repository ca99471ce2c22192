import ShrinkwrapIR

/// Indexing kernels: gathers, scatters, selections and sorts. Index inputs
/// are validated (negative indices wrap once, anything else out of range is
/// an error) before any element is read or written.
public enum IndexingKernels {
    typealias Mover = ShapeKernels.Mover

    // MARK: - Gathers

    /// Gather along `axis` with an index tensor of any shape.
    public static func gather(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let ind = try c.input(1)
        guard x.rank >= 1 else { throw c.fail("cannot gather from a scalar") }
        let axis = try c.axis(try c.int("axis", default: 0), rank: x.rank)
        let dim = x.shape[axis]
        let idx = try indices(ind, bound: dim, c, what: "gather index")
        let outShape = Array(x.shape[..<axis]) + ind.shape + Array(x.shape[(axis + 1)...])
        let n = try c.checkedCount(outShape)
        if n == 0 { return [Tensor.zeros(outShape, dtype: x.dtype)] }
        let outer = x.shape[..<axis].reduce(1, *)
        let inner = x.shape[(axis + 1)...].reduce(1, *)
        let tables = [(0..<outer).map { $0 * dim * inner }, idx.map { $0 * inner }, Array(0..<inner)]
        let storage = Mover.gather(x.storage, outShape: [outer, idx.count, inner], tables: tables, threads: c.threads)
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }

    /// GatherElements: out[i…] = data[i… with axis coordinate replaced by indices[i…]].
    public static func gatherElements(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let ind = try c.input(1)
        let targets = try elementTargets(c, data: x, indices: ind, what: "GatherElements")
        return [Tensor(dtype: x.dtype, shape: ind.shape, storage: take(x.storage, targets))]
    }

    /// GatherND with `batch_dims`.
    public static func gatherND(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let ind = try c.input(1)
        let b = try c.int("batch_dims", default: 0)
        let r = x.rank, q = ind.rank
        guard q >= 1, r >= 1 else { throw c.fail("data and indices must have rank ≥ 1") }
        guard b >= 0 && b < min(q, r) else { throw c.badAttribute("batch_dims", "\(b) out of range for ranks \(r), \(q)") }
        guard let k = ind.shape.last, k >= 1 && k <= r - b else {
            throw c.fail("indices last dimension \(ind.shape.last ?? 0) must be in 1...\(r - b)")
        }
        guard Array(ind.shape[..<b]) == Array(x.shape[..<b]) else {
            throw c.fail("batch dimensions of indices \(ind.shape) and data \(x.shape) differ")
        }
        guard let raw = ind.ints else { throw c.fail("indices must be an integer tensor, got \(ind.dtype)") }
        let outShape = Array(ind.shape[..<(q - 1)]) + Array(x.shape[(b + k)...])
        let n = try c.checkedCount(outShape)
        let strides = stridesOf(x.shape)
        let batches = x.shape[..<b].reduce(1, *)
        let tuples = raw.count / k
        let perBatch = batches == 0 ? 0 : tuples / batches
        let sliceSize = x.shape[(b + k)...].reduce(1, *)
        let batchStride = b == 0 ? 0 : strides[b - 1]
        var offsets = [Int](repeating: 0, count: tuples)
        for t in 0..<tuples {
            var off = perBatch == 0 ? 0 : (t / perBatch) * batchStride
            for j in 0..<k {
                let dim = x.shape[b + j]
                var v = raw[t * k + j]
                if v < 0 { v += Int64(dim) }
                guard v >= 0 && v < Int64(dim) else {
                    throw c.fail("GatherND index \(raw[t * k + j]) out of range for dimension \(dim)")
                }
                off += Int(v) * strides[b + j]
            }
            offsets[t] = off
        }
        if n == 0 { return [Tensor.zeros(outShape, dtype: x.dtype)] }
        let storage = Mover.gather(x.storage, outShape: [tuples, sliceSize], tables: [offsets, Array(0..<sliceSize)],
                                   threads: c.threads)
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }

    // MARK: - Scatters

    /// ScatterElements with reduction none / add / mul / max / min.
    public static func scatterElements(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let ind = try c.input(1)
        let upd = try c.input(2)
        guard upd.shape == ind.shape else { throw c.fail("updates shape \(upd.shape) differs from indices shape \(ind.shape)") }
        let targets = try elementTargets(c, data: x, indices: ind, what: "ScatterElements")
        return [try scatter(c, data: x, updates: upd, targets: targets)]
    }

    /// ScatterND with reduction none / add / mul / max / min.
    public static func scatterND(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let ind = try c.input(1)
        let upd = try c.input(2)
        let r = x.rank, q = ind.rank
        guard q >= 1, let k = ind.shape.last, k <= r else { throw c.fail("indices shape \(ind.shape) does not fit data rank \(r)") }
        let expected = Array(ind.shape[..<(q - 1)]) + Array(x.shape[k...])
        guard upd.shape == expected else { throw c.fail("updates shape \(upd.shape), expected \(expected)") }
        guard let raw = ind.ints else { throw c.fail("indices must be an integer tensor, got \(ind.dtype)") }
        let strides = stridesOf(x.shape)
        let sliceSize = x.shape[k...].reduce(1, *)
        let tuples = k == 0 ? ind.shape[..<(q - 1)].reduce(1, *) : raw.count / k
        var targets = [Int](repeating: 0, count: upd.count)
        for t in 0..<tuples {
            var off = 0
            for j in 0..<k {
                let dim = x.shape[j]
                var v = raw[t * k + j]
                if v < 0 { v += Int64(dim) }
                guard v >= 0 && v < Int64(dim) else { throw c.fail("ScatterND index \(raw[t * k + j]) out of range for dimension \(dim)") }
                off += Int(v) * strides[j]
            }
            for e in 0..<sliceSize { targets[t * sliceSize + e] = off + e }
        }
        return [try scatter(c, data: x, updates: upd, targets: targets)]
    }

    /// Writes `updates[i]` into a copy of `data` at `targets[i]` (validated), with the node's reduction.
    static func scatter(_ c: KernelContext, data x: Tensor, updates upd: Tensor, targets: [Int]) throws -> Tensor {
        let reduction = try c.string("reduction", default: "none")
        guard ["none", "add", "mul", "max", "min"].contains(reduction) else {
            throw c.badAttribute("reduction", "unknown reduction '\(reduction)'")
        }
        switch (x.storage, upd.storage) {
        case (.float(var a), .float(let u)):
            for (i, t) in targets.enumerated() {
                switch reduction {
                case "add": a[t] += u[i]
                case "mul": a[t] *= u[i]
                case "max": a[t] = Swift.max(a[t], u[i])
                case "min": a[t] = Swift.min(a[t], u[i])
                default: a[t] = u[i]
                }
            }
            return Tensor(dtype: x.dtype, shape: x.shape,
                          storage: .float(reduction == "none" ? a : x.dtype.rounded(a)))
        case (.int(var a), .int(let u)):
            for (i, t) in targets.enumerated() {
                switch reduction {
                case "add": a[t] = x.dtype.wrap(a[t] &+ u[i])
                case "mul": a[t] = x.dtype.wrap(a[t] &* u[i])
                case "max": a[t] = Swift.max(a[t], u[i])
                case "min": a[t] = Swift.min(a[t], u[i])
                default: a[t] = u[i]
                }
            }
            return Tensor(dtype: x.dtype, shape: x.shape, storage: .int(a))
        case (.bool(var a), .bool(let u)):
            for (i, t) in targets.enumerated() {
                switch reduction {
                case "add", "max": a[t] = a[t] || u[i]
                case "mul", "min": a[t] = a[t] && u[i]
                default: a[t] = u[i]
                }
            }
            return Tensor(dtype: x.dtype, shape: x.shape, storage: .bool(a))
        default:
            throw c.fail("updates type \(upd.dtype) differs from data type \(x.dtype)")
        }
    }

    /// Element offsets into `data` for GatherElements / ScatterElements.
    static func elementTargets(_ c: KernelContext, data x: Tensor, indices ind: Tensor, what: String) throws -> [Int] {
        let r = x.rank
        guard r >= 1 else { throw c.fail("\(what) needs data of rank ≥ 1") }
        guard ind.rank == r else { throw c.fail("indices rank \(ind.rank) differs from data rank \(r)") }
        let axis = try c.axis(try c.int("axis", default: 0), rank: r)
        for d in 0..<r where d != axis && ind.shape[d] > x.shape[d] {
            throw c.fail("indices shape \(ind.shape) exceeds data shape \(x.shape) on axis \(d)")
        }
        guard let raw = ind.ints else { throw c.fail("indices must be an integer tensor, got \(ind.dtype)") }
        let dim = x.shape[axis]
        let ds = stridesOf(x.shape)
        let n = raw.count
        var targets = [Int](repeating: 0, count: n)
        if n == 0 { return targets }
        var pos = [Int](repeating: 0, count: r)
        var base = 0  // offset of `pos` in data, without the axis coordinate
        for e in 0..<n {
            var v = raw[e]
            if v < 0 { v += Int64(dim) }
            guard v >= 0 && v < Int64(dim) else { throw c.fail("\(what) index \(raw[e]) out of range for dimension \(dim)") }
            targets[e] = base + Int(v) * ds[axis]
            var k = r - 1
            while k >= 0 {
                pos[k] += 1
                if k != axis { base += ds[k] }
                if pos[k] < ind.shape[k] { break }
                if k != axis { base -= ds[k] * pos[k] }
                pos[k] = 0
                k -= 1
            }
        }
        return targets
    }

    // MARK: - Selections

    /// OneHot(indices, depth, values=[off, on]) with `axis`.
    public static func oneHot(_ c: KernelContext) throws -> [Tensor] {
        let ind = try c.input(0)
        let depthT = try c.input(1)
        let values = try c.input(2)
        guard depthT.count == 1 else { throw c.fail("depth must be a scalar, has shape \(depthT.shape)") }
        guard values.count == 2 else { throw c.fail("values must hold [off, on], has \(values.count) elements") }
        guard ind.dtype != .bool else { throw c.fail("indices must be numeric") }
        let depthD = depthT.doubles[0]
        guard depthD.isFinite, depthD >= 1, depthD < Double(1 << 34) else { throw c.fail("depth \(depthD) is not a positive size") }
        let depth = Int(depthD)
        let r = ind.rank
        var axis = try c.int("axis", default: -1)
        if axis < 0 { axis += r + 1 }
        guard axis >= 0 && axis <= r else { throw c.badAttribute("axis", "out of range for output rank \(r + 1)") }
        let outShape = Array(ind.shape[..<axis]) + [depth] + Array(ind.shape[axis...])
        let n = try c.checkedCount(outShape)
        let outer = ind.shape[..<axis].reduce(1, *)
        let inner = ind.shape[axis...].reduce(1, *)
        var hot: [Int] = []
        let idx = ind.doubles
        for o in 0..<outer {
            for i in 0..<inner {
                var v = idx[o * inner + i].rounded(.towardZero)
                if v < 0 { v += Double(depth) }
                if v >= 0 && v < Double(depth) { hot.append((o * depth + Int(v)) * inner + i) }
            }
        }
        let storage: TensorStorage
        switch values.storage {
        case .float(let a):
            var out = [Float](repeating: a[0], count: n)
            for h in hot { out[h] = a[1] }
            storage = .float(out)
        case .int(let a):
            var out = [Int64](repeating: a[0], count: n)
            for h in hot { out[h] = a[1] }
            storage = .int(out)
        case .bool(let a):
            var out = [Bool](repeating: a[0], count: n)
            for h in hot { out[h] = a[1] }
            storage = .bool(out)
        }
        return [Tensor(dtype: values.dtype, shape: outShape, storage: storage)]
    }

    /// Trilu: keeps the upper (default) or lower triangle of the last two axes,
    /// shifted by the diagonal offset k (input 1).
    public static func trilu(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        guard x.rank >= 2 else { throw c.fail("Trilu needs rank ≥ 2, got shape \(x.shape)") }
        var k = 0
        if let kt = c.optionalInput(1) {
            guard kt.count == 1, let v = kt.ints else { throw c.fail("k must be an integer scalar") }
            k = Int(clamping: v[0])
        }
        let limit = x.shape[x.rank - 2] + x.shape[x.rank - 1] + 1
        k = min(max(k, -limit), limit)  // beyond this the result no longer changes
        let upper = try c.int("upper", default: 1) != 0
        let rows = x.shape[x.rank - 2], cols = x.shape[x.rank - 1]
        let mats = rows * cols == 0 ? 0 : x.count / (rows * cols)
        // keep[j] per row i: upper keeps j - i ≥ k, lower keeps j - i ≤ k.
        func zeroed<T>(_ a: [T], _ zero: T) -> [T] {
            var a = a
            for m in 0..<mats {
                for i in 0..<rows {
                    let rowBase = (m * rows + i) * cols
                    if upper {
                        let stop = min(max(i + k, 0), cols)
                        for j in 0..<stop { a[rowBase + j] = zero }
                    } else {
                        let start = min(max(i + k + 1, 0), cols)
                        for j in start..<cols { a[rowBase + j] = zero }
                    }
                }
            }
            return a
        }
        let storage: TensorStorage
        switch x.storage {
        case .float(let a): storage = .float(zeroed(a, 0))
        case .int(let a): storage = .int(zeroed(a, 0))
        case .bool(let a): storage = .bool(zeroed(a, false))
        }
        return [Tensor(dtype: x.dtype, shape: x.shape, storage: storage)]
    }

    /// TopK(X, K): values and int64 indices along `axis`; ties keep the smaller index first.
    public static func topK(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let kt = try c.input(1)
        guard kt.count == 1, let kv = kt.ints else { throw c.fail("K must be a one-element integer tensor") }
        guard x.rank >= 1 else { throw c.fail("TopK needs rank ≥ 1") }
        let axis = try c.axis(try c.int("axis", default: -1), rank: x.rank)
        let largest = try c.int("largest", default: 1) != 0
        let dim = x.shape[axis]
        guard kv[0] >= 0 && kv[0] <= Int64(dim) else { throw c.fail("K = \(kv[0]) out of range for axis size \(dim)") }
        let k = Int(kv[0])
        var outShape = x.shape
        outShape[axis] = k
        let n = try c.checkedCount(outShape)
        let outer = x.shape[..<axis].reduce(1, *)
        let inner = x.shape[(axis + 1)...].reduce(1, *)
        var picked = [Int](repeating: 0, count: n)  // source index along the axis
        switch x.storage {
        case .float(let a):
            selectTop(a, outer: outer, dim: dim, inner: inner, k: k, into: &picked) { p, q in
                // Total order: NaN above every number; ties by smaller index.
                let u = a[p], v = a[q]
                if u.isNaN || v.isNaN {
                    if u.isNaN && v.isNaN { return p < q }
                    return largest ? u.isNaN : v.isNaN
                }
                if u != v { return largest ? u > v : u < v }
                return p < q
            }
        case .int(let a):
            selectTop(a, outer: outer, dim: dim, inner: inner, k: k, into: &picked) { p, q in
                let u = a[p], v = a[q]
                if u != v { return largest ? u > v : u < v }
                return p < q
            }
        case .bool:
            throw c.fail("TopK does not accept bool input")
        }
        // Convert flat source offsets to values and axis indices.
        var axisIdx = [Int64](repeating: 0, count: n)
        for i in 0..<n { axisIdx[i] = Int64((picked[i] / inner) % max(dim, 1)) }
        let values = Tensor(dtype: x.dtype, shape: outShape, storage: take(x.storage, picked))
        return [values, Tensor(ints: axisIdx, shape: outShape)]
    }

    /// Fills `picked` (laid out as the output) with flat source offsets of the top k per slice.
    static func selectTop<T>(_ a: [T], outer: Int, dim: Int, inner: Int, k: Int, into picked: inout [Int],
                             before: (Int, Int) -> Bool) {
        if k == 0 { return }
        var order = [Int](repeating: 0, count: dim)
        for o in 0..<outer {
            for i in 0..<inner {
                let base = o * dim * inner + i
                for j in 0..<dim { order[j] = base + j * inner }
                order.sort(by: before)
                for j in 0..<k { picked[(o * k + j) * inner + i] = order[j] }
            }
        }
    }

    /// NonZero: int64 [rank, count] coordinates of non-zero elements, row-major order.
    public static func nonZero(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        var hits: [Int] = []
        switch x.storage {
        case .float(let a): for (i, v) in a.enumerated() where v != 0 { hits.append(i) }
        case .int(let a): for (i, v) in a.enumerated() where v != 0 { hits.append(i) }
        case .bool(let a): for (i, v) in a.enumerated() where v { hits.append(i) }
        }
        let r = x.rank
        let rows = max(r, 1)  // a scalar reports one coordinate (always 0)
        let m = hits.count
        var out = [Int64](repeating: 0, count: rows * m)
        if r > 0 {
            let strides = stridesOf(x.shape)
            for (j, h) in hits.enumerated() {
                var rest = h
                for d in 0..<r { out[d * m + j] = Int64(rest / strides[d]); rest %= strides[d] }
            }
        }
        return [Tensor(ints: out, shape: [rows, m])]
    }

    /// CumSum along the axis given by input 1, with `exclusive` and `reverse`.
    public static func cumSum(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let at = try c.input(1)
        guard at.count == 1, let av = at.ints else { throw c.fail("axis must be an integer scalar") }
        guard x.rank >= 1 else { throw c.fail("CumSum needs rank ≥ 1") }
        let axis = try c.axis(Int(clamping: av[0]), rank: x.rank)
        let exclusive = try c.int("exclusive", default: 0) != 0
        let reverse = try c.int("reverse", default: 0) != 0
        let dim = x.shape[axis]
        let outer = x.shape[..<axis].reduce(1, *)
        let inner = x.shape[(axis + 1)...].reduce(1, *)
        func scan<T>(_ a: [T], zero: T, add: (T, T) -> T) -> [T] {
            var out = [T](repeating: zero, count: a.count)
            for o in 0..<outer {
                for i in 0..<inner {
                    var acc = zero
                    for s in 0..<dim {
                        let j = reverse ? dim - 1 - s : s
                        let p = (o * dim + j) * inner + i
                        if exclusive { out[p] = acc; acc = add(acc, a[p]) } else { acc = add(acc, a[p]); out[p] = acc }
                    }
                }
            }
            return out
        }
        let storage: TensorStorage
        switch x.storage {
        case .float(let a):
            switch x.dtype {
            case .float16, .bfloat16:
                let dt = x.dtype
                storage = .float(scan(a, zero: 0) { dt.rounded($0 + $1) })
            default:
                storage = .float(scan(a, zero: 0, add: +))
            }
        case .int(let a): storage = .int(scan(a, zero: 0) { x.dtype.wrap($0 &+ $1) })
        case .bool: throw c.fail("CumSum does not accept bool input")
        }
        return [Tensor(dtype: x.dtype, shape: x.shape, storage: storage)]
    }

    /// Compress: keeps the slices along `axis` (or of the flattened input)
    /// where the 1-D condition is true.
    public static func compress(_ c: KernelContext) throws -> [Tensor] {
        var x = try c.input(0)
        let cond = try c.input(1)
        guard cond.rank == 1 else { throw c.fail("condition must be 1-D, has shape \(cond.shape)") }
        let flags: [Bool]
        switch cond.storage {
        case .bool(let b): flags = b
        case .int(let v): flags = v.map { $0 != 0 }
        case .float(let v): flags = v.map { $0 != 0 }
        }
        let axis: Int
        if c.node.attributes["axis"] != nil {
            guard x.rank >= 1 else { throw c.fail("cannot compress a scalar along an axis") }
            axis = try c.axis(try c.int("axis", default: 0), rank: x.rank)
        } else {
            x = x.reshaped([x.count])
            axis = 0
        }
        let dim = x.shape[axis]
        var keep: [Int] = []
        for (i, f) in flags.enumerated() where f {
            guard i < dim else { throw c.fail("condition selects index \(i) beyond axis size \(dim)") }
            keep.append(i)
        }
        var outShape = x.shape
        outShape[axis] = keep.count
        let n = try c.checkedCount(outShape)
        if n == 0 { return [Tensor.zeros(outShape, dtype: x.dtype)] }
        let outer = x.shape[..<axis].reduce(1, *)
        let inner = x.shape[(axis + 1)...].reduce(1, *)
        let tables = [(0..<outer).map { $0 * dim * inner }, keep.map { $0 * inner }, Array(0..<inner)]
        let storage = Mover.gather(x.storage, outShape: [outer, keep.count, inner], tables: tables, threads: c.threads)
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }

    // MARK: - Helpers

    /// Index values of `t` normalized against `bound` (negative wrap once), or a thrown error.
    static func indices(_ t: Tensor, bound: Int, _ c: KernelContext, what: String) throws -> [Int] {
        guard let raw = t.ints else { throw c.fail("\(what) tensor must be an integer tensor, got \(t.dtype)") }
        var out = [Int](repeating: 0, count: raw.count)
        let b = Int64(bound)
        for (i, v) in raw.enumerated() {
            let w = v < 0 ? v + b : v
            guard w >= 0 && w < b else { throw c.fail("\(what) \(v) out of range for dimension \(bound)") }
            out[i] = Int(w)
        }
        return out
    }

    /// Elements of `s` at the (valid) flat offsets `offsets`.
    static func take(_ s: TensorStorage, _ offsets: [Int]) -> TensorStorage {
        switch s {
        case .float(let a): return .float(offsets.map { a[$0] })
        case .int(let a): return .int(offsets.map { a[$0] })
        case .bool(let a): return .bool(offsets.map { a[$0] })
        }
    }
}
