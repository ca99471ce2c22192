import ShrinkwrapIR

/// Shape and layout kernels: ops that move or reinterpret elements, plus the
/// small tensor factories (Shape, Size, ConstantOfShape, Range, EyeLike).
///
/// Every kernel here works on all three storage classes and keeps the input
/// dtype (element values are moved, never recomputed).
public enum ShapeKernels {
    /// Identity: returns its input unchanged.
    public static func identity(_ c: KernelContext) throws -> [Tensor] { [try c.input(0)] }

    // MARK: - Reinterpreting shape (no element moves)

    /// Flatten: `[d0 … d(a-1), da … dn]` → `[d0·…·d(a-1), da·…·dn]`.
    public static func flatten(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        var a = try c.int("axis", default: 1)
        if a < 0 { a += r }
        guard a >= 0 && a <= r else { throw c.badAttribute("axis", "axis \(a) out of range [-\(r), \(r)]") }
        let outer = x.shape[..<a].reduce(1, *)
        let inner = x.shape[a...].reduce(1, *)
        return [x.reshaped([outer, inner])]
    }

    /// Reshape: 0 copies the input dimension (unless allowzero=1), -1 is inferred.
    public static func reshape(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let spec = try c.intValues(1)
        let allowZero = try c.int("allowzero", default: 0) != 0
        var out = [Int](repeating: 1, count: spec.count)
        var inferred = -1
        for (i, d) in spec.enumerated() {
            if d == -1 {
                guard inferred < 0 else { throw c.fail("shape \(spec) has more than one -1") }
                inferred = i
            } else if d == 0 && !allowZero {
                guard i < x.rank else { throw c.fail("shape \(spec): 0 at position \(i) has no input dimension to copy (input shape \(x.shape))") }
                out[i] = x.shape[i]
            } else if d < 0 {
                throw c.fail("shape \(spec) has invalid dimension \(d)")
            } else {
                out[i] = d
            }
        }
        let total = x.count
        if inferred >= 0 {
            guard let known = checkedElementCount(out) else { throw c.fail("shape \(spec) is too large") }
            guard known != 0 else { throw c.fail("shape \(spec): cannot infer -1 next to a zero dimension") }
            guard total % known == 0 else { throw c.fail("cannot reshape \(x.shape) (\(total) elements) to \(spec)") }
            out[inferred] = total / known
        }
        guard let n = checkedElementCount(out), n == total else {
            throw c.fail("cannot reshape \(x.shape) (\(total) elements) to \(spec)")
        }
        return [x.reshaped(out)]
    }

    /// Squeeze: removes the listed size-1 axes (input 1), or every size-1 axis
    /// when axes is omitted or empty.
    public static func squeeze(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        var drop = [Bool](repeating: false, count: r)
        if let axes = try c.optionalIntValues(1), !axes.isEmpty {  // empty axes: all size-1 axes, as onnxruntime does
            for a in axes {
                let v = a < 0 ? a + r : a
                guard v >= 0 && v < r else { throw c.fail("squeeze axis \(a) out of range for rank \(r)") }
                guard x.shape[v] == 1 else { throw c.fail("cannot squeeze axis \(a) of size \(x.shape[v]) (shape \(x.shape))") }
                drop[v] = true
            }
        } else {
            for i in 0..<r where x.shape[i] == 1 { drop[i] = true }
        }
        var out: [Int] = []
        for i in 0..<r where !drop[i] { out.append(x.shape[i]) }
        return [x.reshaped(out)]
    }

    /// Unsqueeze: inserts size-1 axes at the positions of input 1 (in output rank).
    public static func unsqueeze(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let axes = try c.intValues(1)
        let outRank = x.rank + axes.count
        var isNew = [Bool](repeating: false, count: outRank)
        for a in axes {
            let v = a < 0 ? a + outRank : a
            guard v >= 0 && v < outRank else { throw c.fail("unsqueeze axis \(a) out of range for output rank \(outRank)") }
            guard !isNew[v] else { throw c.fail("unsqueeze axes \(axes) repeat axis \(v)") }
            isNew[v] = true
        }
        var out = [Int](repeating: 1, count: outRank)
        var k = 0
        for i in 0..<outRank where !isNew[i] { out[i] = x.shape[k]; k += 1 }
        return [x.reshaped(out)]
    }

    // MARK: - Moving elements

    /// Transpose by `perm` (default: reversed axes).
    public static func transpose(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        let perm = try c.ints("perm") ?? Array((0..<r).reversed())
        guard perm.count == r else { throw c.badAttribute("perm", "\(perm) has \(perm.count) entries for rank \(r)") }
        var seen = [Bool](repeating: false, count: r)
        for p in perm {
            guard p >= 0 && p < r && !seen[p] else { throw c.badAttribute("perm", "\(perm) is not a permutation of 0..<\(r)") }
            seen[p] = true
        }
        return [try transposed(x, perm: perm, threads: c.threads)]
    }

    /// `x` transposed by a validated permutation.
    static func transposed(_ x: Tensor, perm: [Int], threads: Int) throws -> Tensor {
        let inStrides = stridesOf(x.shape)
        let outShape = perm.map { x.shape[$0] }
        if x.count <= 1 { return x.reshaped(outShape) }
        // Output axes as (size, input stride); drop size-1 axes, merge runs
        // that are contiguous in the input.
        var dims: [(size: Int, stride: Int)] = []
        for p in perm where x.shape[p] != 1 {
            let cur = (size: x.shape[p], stride: inStrides[p])
            if let last = dims.last, last.stride == cur.stride * cur.size {
                dims[dims.count - 1] = (last.size * cur.size, cur.stride)
            } else {
                dims.append(cur)
            }
        }
        if dims.count <= 1 { return x.reshaped(outShape) }
        // Batched 2-D transpose: input [B, R, C] → output [B, C, R].
        let n = dims.count
        if dims[n - 2].stride == 1 && dims[n - 1].stride == dims[n - 2].size
            && (n == 2 || (n == 3 && dims[0].stride == dims[1].size * dims[2].size)) {
            let batch = n == 3 ? dims[0].size : 1
            let cols = dims[n - 2].size, rows = dims[n - 1].size
            let storage = mapStorage(x.storage, Transpose2DMove(batch: batch, rows: rows, cols: cols, threads: threads))
            return Tensor(dtype: x.dtype, shape: outShape, storage: storage)
        }
        let tables = dims.map { d in (0..<d.size).map { $0 * d.stride } }
        let storage = Mover.gather(x.storage, outShape: dims.map(\.size), tables: tables, threads: threads)
        return Tensor(dtype: x.dtype, shape: outShape, storage: storage)
    }

    /// Blocked transpose of `batch` row-major rows×cols matrices.
    static func transpose2D<T>(_ a: [T], batch: Int, rows: Int, cols: Int, threads: Int) -> [T] {
        let n = batch * rows * cols
        let tile = 32
        let rowTiles = (rows + tile - 1) / tile
        return a.withUnsafeBufferPointer { src in
            [T](unsafeUninitializedCapacity: n) { buf, count in
                guard let sp = src.baseAddress, let base = buf.baseAddress else { count = 0; return }
                let out = SendablePointer(base)
                parallelChunks(batch * rowTiles, threads: n < 1 << 15 ? 1 : threads) { range in
                    for job in range {
                        let b = job / rowTiles
                        let r0 = (job % rowTiles) * tile
                        let r1 = min(rows, r0 + tile)
                        let s = sp + b * rows * cols
                        let d = out.p + b * rows * cols
                        var c0 = 0
                        while c0 < cols {
                            let c1 = min(cols, c0 + tile)
                            for i in r0..<r1 {
                                for j in c0..<c1 { (d + j * rows + i).initialize(to: s[i * cols + j]) }
                            }
                            c0 = c1
                        }
                    }
                }
                count = n
            }
        }
    }

    /// Concat along `axis`.
    public static func concat(_ c: KernelContext) throws -> [Tensor] {
        var parts: [Tensor] = []
        for i in 0..<c.inputCount {
            guard let t = c.optionalInput(i) else { throw c.fail("input \(i) is missing") }
            parts.append(t)
        }
        guard let first = parts.first else { throw c.fail("Concat needs at least one input") }
        let r = first.rank
        guard r >= 1 else { throw c.fail("cannot concatenate scalars") }
        let axis = try c.axis(try c.int("axis", default: 0), rank: r)
        var outShape = first.shape
        outShape[axis] = 0
        for (i, p) in parts.enumerated() {
            guard p.rank == r else { throw c.fail("input \(i) has rank \(p.rank), expected \(r)") }
            for d in 0..<r where d != axis && p.shape[d] != first.shape[d] {
                throw c.fail("input \(i) has shape \(p.shape), incompatible with \(first.shape) on axis \(d)")
            }
            outShape[axis] += p.shape[axis]
        }
        let n = try c.checkedCount(outShape)
        let outer = first.shape[..<axis].reduce(1, *)
        let inner = first.shape[(axis + 1)...].reduce(1, *)
        let blocks = parts.map { $0.shape[axis] * inner }
        let storage: TensorStorage
        switch first.storage {
        case .float:
            storage = .float(concatValues(try parts.map { try floatsOf($0, c) }, blocks: blocks, outer: outer, count: n))
        case .int:
            storage = .int(concatValues(try parts.map { try intsOf($0, c) }, blocks: blocks, outer: outer, count: n))
        case .bool:
            storage = .bool(concatValues(try parts.map { try boolsOf($0, c) }, blocks: blocks, outer: outer, count: n))
        }
        return [Tensor(dtype: first.dtype, shape: outShape, storage: storage)]
    }

    static func concatValues<T>(_ parts: [[T]], blocks: [Int], outer: Int, count n: Int) -> [T] {
        [T](unsafeUninitializedCapacity: n) { buf, count in
            var o = 0
            if n > 0, let base = buf.baseAddress {
                for i in 0..<outer {
                    for (p, b) in zip(parts, blocks) where b > 0 {
                        p.withUnsafeBufferPointer { pp in
                            if let src = pp.baseAddress { (base + o).initialize(from: src + i * b, count: b) }
                        }
                        o += b
                    }
                }
            }
            count = o
        }
    }

    /// Split along `axis` by sizes (input 1), or into `num_outputs` chunks
    /// (the last one smaller when the axis does not divide evenly).
    public static func split(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        guard r >= 1 else { throw c.fail("cannot split a scalar") }
        let axis = try c.axis(try c.int("axis", default: 0), rank: r)
        let dim = x.shape[axis]
        var sizes: [Int]
        if let s = try c.optionalIntValues(1) {
            sizes = s
        } else {
            let k = try c.int("num_outputs", default: max(c.node.outputs.count, 1))
            guard k >= 1 && k <= max(dim, c.node.outputs.count, 1) else {
                throw c.badAttribute("num_outputs", "\(k) is out of range for an axis of size \(dim)")
            }
            let chunk = dim / k + (dim % k == 0 ? 0 : 1)
            sizes = [Int](repeating: chunk, count: k)
            sizes[k - 1] = dim - chunk * (k - 1)
            guard sizes[k - 1] >= 0 else {
                throw c.badAttribute("num_outputs", "cannot split a dimension of \(dim) into \(k) chunks of \(chunk)")
            }
        }
        guard sizes.allSatisfy({ $0 >= 0 }) else { throw c.fail("split sizes \(sizes) must not be negative") }
        var total = 0
        for s in sizes {
            let (t, o) = total.addingReportingOverflow(s)
            guard !o else { throw c.fail("split sizes \(sizes) overflow") }
            total = t
        }
        guard total == dim else { throw c.fail("split sizes \(sizes) sum to \(total), axis \(axis) has \(dim)") }
        let outer = x.shape[..<axis].reduce(1, *)
        let inner = x.shape[(axis + 1)...].reduce(1, *)
        var outs: [Tensor] = []
        outs.reserveCapacity(sizes.count)
        var pos = 0
        for s in sizes {
            var shape = x.shape
            shape[axis] = s
            let start = pos
            let storage = mapStorage(x.storage, SliceAxisMove(outer: outer, dim: dim, inner: inner, start: start, length: s))
            outs.append(Tensor(dtype: x.dtype, shape: shape, storage: storage))
            pos += s
        }
        return outs
    }

    /// Elements `start..<start+length` along the middle axis of `[outer, dim, inner]`.
    static func sliceAxis<T>(_ a: [T], outer: Int, dim: Int, inner: Int, start: Int, length: Int) -> [T] {
        let block = length * inner
        let n = outer * block
        return a.withUnsafeBufferPointer { src in
            [T](unsafeUninitializedCapacity: n) { buf, count in
                if n > 0, let sp = src.baseAddress, let base = buf.baseAddress {
                    for o in 0..<outer {
                        (base + o * block).initialize(from: sp + (o * dim + start) * inner, count: block)
                    }
                }
                count = n
            }
        }
    }

    /// Slice with starts, ends, axes and steps inputs (ONNX clamping rules).
    public static func slice(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        let starts = try c.intValues(1)
        let ends = try c.intValues(2)
        guard starts.count == ends.count else { throw c.fail("starts (\(starts.count)) and ends (\(ends.count)) differ in length") }
        let axes = try c.optionalIntValues(3) ?? Array(0..<starts.count)
        let steps = try c.optionalIntValues(4) ?? [Int](repeating: 1, count: starts.count)
        guard axes.count == starts.count else { throw c.fail("axes has \(axes.count) entries, starts has \(starts.count)") }
        guard steps.count == starts.count else { throw c.fail("steps has \(steps.count) entries, starts has \(starts.count)") }
        var first = [Int](repeating: 0, count: r)
        var step = [Int](repeating: 1, count: r)
        var outShape = x.shape
        var used = [Bool](repeating: false, count: r)
        for i in 0..<starts.count {
            let a = axes[i] < 0 ? axes[i] + r : axes[i]
            guard a >= 0 && a < r else { throw c.fail("slice axis \(axes[i]) out of range for rank \(r)") }
            guard !used[a] else { throw c.fail("slice axes \(axes) repeat axis \(a)") }
            used[a] = true
            let dim = x.shape[a]
            var st = steps[i]
            guard st != 0 else { throw c.fail("slice step on axis \(a) is 0") }
            if st == Int.min { st = -Int.max }
            var s = starts[i], e = ends[i]
            if s < 0 { s += dim }
            if e < 0 { e += dim }
            let count: Int
            if st > 0 {
                s = min(max(s, 0), dim)
                e = min(max(e, 0), dim)
                count = e > s ? (e - s - 1) / st + 1 : 0
            } else {
                s = min(max(s, 0), dim - 1)
                e = min(max(e, -1), dim - 1)
                count = s > e ? (s - e - 1) / (-st) + 1 : 0
            }
            first[a] = s
            step[a] = st
            outShape[a] = count
        }
        let n = try c.checkedCount(outShape)
        if n == 0 || outShape == x.shape && step.allSatisfy({ $0 == 1 }) {
            return [n == 0 ? Tensor.zeros(outShape, dtype: x.dtype) : x]
        }
        let strides = stridesOf(x.shape)
        let tables = (0..<r).map { a in (0..<outShape[a]).map { (first[a] + $0 * step[a]) * strides[a] } }
        let storage = Mover.gather(x.storage, outShape: outShape, tables: tables, threads: c.threads)
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }

    /// Expand: broadcasts the input with the shape of input 1 (bidirectionally).
    public static func expand(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let shape = try c.intValues(1)
        guard shape.allSatisfy({ $0 >= 0 }) else { throw c.fail("expand shape \(shape) has a negative dimension") }
        guard let outShape = Broadcast.shape([x.shape, shape]) else {
            throw c.fail("cannot broadcast \(x.shape) to \(shape)")
        }
        _ = try c.checkedCount(outShape)
        if outShape == x.shape { return [x] }
        let storage = mapStorage(x.storage, ExpandMove(shape: x.shape, outShape: outShape))
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }

    /// Tile: repeats the input `repeats[i]` times along axis i.
    public static func tile(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let reps = try c.intValues(1)
        guard reps.count == x.rank else { throw c.fail("repeats has \(reps.count) entries for rank \(x.rank)") }
        guard reps.allSatisfy({ $0 >= 0 }) else { throw c.fail("repeats \(reps) must not be negative") }
        var outShape = x.shape
        for i in 0..<x.rank {
            let (p, o) = x.shape[i].multipliedReportingOverflow(by: reps[i])
            guard !o else { throw c.fail("tile result too large") }
            outShape[i] = p
        }
        let n = try c.checkedCount(outShape)
        if n == 0 { return [Tensor.zeros(outShape, dtype: x.dtype)] }
        let strides = stridesOf(x.shape)
        let tables = (0..<x.rank).map { a in (0..<outShape[a]).map { ($0 % x.shape[a]) * strides[a] } }
        let storage = Mover.gather(x.storage, outShape: outShape, tables: tables, threads: c.threads)
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }

    /// Pad: modes constant / reflect / edge / wrap; pads (input 1),
    /// constant_value (input 2), axes (input 3). Negative pads crop.
    public static func pad(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        let pads = try c.intValues(1)
        let mode = try c.string("mode", default: "constant")
        guard ["constant", "reflect", "edge", "wrap"].contains(mode) else {
            throw c.badAttribute("mode", "unknown pad mode '\(mode)'")
        }
        var axes = Array(0..<r)
        if let a = try c.optionalIntValues(3) {
            axes = []
            for v in a {
                let n = v < 0 ? v + r : v
                guard n >= 0 && n < r else { throw c.fail("pad axis \(v) out of range for rank \(r)") }
                guard !axes.contains(n) else { throw c.fail("pad axes \(a) repeat axis \(n)") }
                axes.append(n)
            }
        }
        guard pads.count == 2 * axes.count else {
            throw c.fail("pads has \(pads.count) entries, expected \(2 * axes.count) for \(axes.count) axes")
        }
        var fill = Scalar(f: 0, i: 0, b: false)
        if let v = c.optionalInput(2) {
            guard v.count == 1 else { throw c.fail("constant_value must be a scalar, has shape \(v.shape)") }
            guard sameClass(v.storage, x.storage) else { throw c.fail("constant_value type \(v.dtype) differs from data type \(x.dtype)") }
            fill = Scalar(v.storage)
        }
        var begin = [Int](repeating: 0, count: r), end = [Int](repeating: 0, count: r)
        for (i, a) in axes.enumerated() { begin[a] = pads[i]; end[a] = pads[axes.count + i] }
        var outShape = x.shape
        for a in 0..<r {
            let (s1, o1) = x.shape[a].addingReportingOverflow(begin[a])
            let (s2, o2) = s1.addingReportingOverflow(end[a])
            guard !o1 && !o2 && s2 >= 0 else { throw c.fail("pads \(pads) give a negative or overflowing size on axis \(a)") }
            outShape[a] = s2
        }
        let n = try c.checkedCount(outShape)
        if n == 0 { return [Tensor.zeros(outShape, dtype: x.dtype)] }
        let strides = stridesOf(x.shape)
        var tables: [[Int]] = []
        for a in 0..<r {
            let dim = x.shape[a]
            if dim == 0 && mode != "constant" && outShape[a] > 0 {
                throw c.fail("cannot \(mode)-pad an empty axis \(a)")
            }
            var t = [Int](repeating: 0, count: outShape[a])
            for o in 0..<outShape[a] {
                var i = o - begin[a]
                if i < 0 || i >= dim {
                    switch mode {
                    case "edge": i = i < 0 ? 0 : dim - 1
                    case "wrap": i = ((i % dim) + dim) % dim
                    case "reflect":
                        if dim == 1 { i = 0 } else {
                            let period = 2 * (dim - 1)
                            var m = ((i % period) + period) % period
                            if m >= dim { m = period - m }
                            i = m
                        }
                    default: i = -1
                    }
                }
                t[o] = i < 0 ? Mover.fillMark : i * strides[a]
            }
            tables.append(t)
        }
        let storage = Mover.gather(x.storage, outShape: outShape, tables: tables, fill: fill, threads: c.threads)
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }

    // MARK: - Small factories and inference no-ops

    /// Shape (int64), with optional start / end attributes (clamped).
    public static func shape(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        var s = try c.int("start", default: 0)
        var e = try c.int("end", default: r)
        if s < 0 { s += r }
        if e < 0 { e += r }
        s = min(max(s, 0), r)
        e = min(max(e, 0), r)
        let dims = s < e ? x.shape[s..<e].map { Int64($0) } : []
        return [Tensor(ints: dims, shape: [dims.count])]
    }

    /// Size: the element count as an int64 scalar.
    public static func size(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        return [Tensor.scalar(int: Int64(x.count))]
    }

    /// Dropout in inference: the input, and a mask of all true. Training mode
    /// (input 2 true with a non-zero ratio) is random and is refused.
    public static func dropout(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        if let t = c.optionalInput(2) {
            guard t.count == 1 else { throw c.fail("training_mode must be a scalar, has shape \(t.shape)") }
            let ratio = try c.optionalScalar(1) ?? 0.5
            if t.doubles[0] != 0 && ratio != 0 {
                throw c.fail("training-mode Dropout (random masking) is not supported; export the model in inference mode")
            }
        }
        return [x, Tensor(bools: [Bool](repeating: true, count: x.count), shape: x.shape)]
    }

    /// ConstantOfShape: a tensor of input 1's shape filled with the `value`
    /// attribute (default float32 0).
    public static func constantOfShape(_ c: KernelContext) throws -> [Tensor] {
        let shape = try c.intValues(0)
        guard shape.allSatisfy({ $0 >= 0 }) else { throw c.fail("shape \(shape) has a negative dimension") }
        let n = try c.checkedCount(shape)
        let value = try c.tensorAttribute("value") ?? Tensor([0], shape: [1])
        guard value.count == 1 else { throw c.badAttribute("value", "must hold one element, has shape \(value.shape)") }
        let storage: TensorStorage
        switch value.storage {
        case .float(let a): storage = .float([Float](repeating: a[0], count: n))
        case .int(let a): storage = .int([Int64](repeating: a[0], count: n))
        case .bool(let a): storage = .bool([Bool](repeating: a[0], count: n))
        }
        return [Tensor(dtype: value.dtype, shape: shape, storage: storage)]
    }

    /// Range(start, limit, delta) for float and integer types.
    public static func range(_ c: KernelContext) throws -> [Tensor] {
        let s = try c.input(0), l = try c.input(1), d = try c.input(2)
        guard s.count == 1, l.count == 1, d.count == 1 else { throw c.fail("start, limit and delta must be scalars") }
        switch (s.storage, l.storage, d.storage) {
        case (.float(let sa), .float(let la), .float(let da)):
            let start = Double(sa[0]), limit = Double(la[0]), delta = Double(da[0])
            guard delta != 0 else { throw c.fail("delta is 0") }
            guard start.isFinite, limit.isFinite, delta.isFinite else { throw c.fail("start, limit and delta must be finite") }
            let steps = ((limit - start) / delta).rounded(.up)
            guard steps < Double(1 << 34) else { throw c.fail("range too large") }
            let n = try c.checkedCount([steps > 0 ? Int(steps) : 0])
            // Accumulate in the element type, as onnxruntime does.
            var v = [Float](repeating: 0, count: n)
            let fd = da[0]
            var acc = sa[0]
            for i in 0..<n { v[i] = acc; acc += fd }
            return [Tensor(dtype: s.dtype, shape: [n], storage: .float(roundedToDType(v, s.dtype)))]
        case (.int(let sa), .int(let la), .int(let da)):
            let start = sa[0], limit = la[0], delta = da[0]
            guard delta != 0 else { throw c.fail("delta is 0") }
            let (diff, o) = limit.subtractingReportingOverflow(start)
            guard !o else { throw c.fail("range too large") }
            var count: UInt64 = 0
            if diff != 0 && (diff > 0) == (delta > 0) {
                let m = diff.magnitude, dm = delta.magnitude
                count = m / dm + (m % dm != 0 ? 1 : 0)
            }
            guard count < UInt64(1 << 34) else { throw c.fail("range too large") }
            let n = try c.checkedCount([Int(count)])
            var v = [Int64](repeating: 0, count: n)
            var acc = start
            for i in 0..<n { v[i] = s.dtype.wrap(acc); acc = acc &+ delta }
            return [Tensor(dtype: s.dtype, shape: [n], storage: .int(v))]
        default:
            throw c.fail("start, limit and delta must all be floating point or all integers")
        }
    }

    /// EyeLike: ones on the k-th diagonal of a 2-D tensor shaped like input 0.
    public static func eyeLike(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        guard x.rank == 2 else { throw c.fail("EyeLike needs a 2-D input, got shape \(x.shape)") }
        let dtype = try dtypeAttribute(c, "dtype") ?? x.dtype
        let k = try c.int("k", default: 0)
        let rows = x.shape[0], cols = x.shape[1]
        var t = Tensor.zeros(x.shape, dtype: dtype)
        var ones: [Int] = []
        if k > -rows && k < cols {
            for i in max(0, -k)..<rows {
                let j = i + k
                if j >= cols { break }
                ones.append(i * cols + j)
            }
        }
        switch t.storage {
        case .float(var a): for i in ones { a[i] = 1 }; t.storage = .float(a)
        case .int(var a): for i in ones { a[i] = 1 }; t.storage = .int(a)
        case .bool(var a): for i in ones { a[i] = true }; t.storage = .bool(a)
        }
        return [t]
    }

    // MARK: - Helpers shared with the indexing kernels

    /// One element in every storage class (a fill or constant value).
    struct Scalar {
        var f: Float
        var i: Int64
        var b: Bool
        init(f: Float, i: Int64, b: Bool) { self.f = f; self.i = i; self.b = b }
        /// From the first element of a non-empty storage.
        init(_ s: TensorStorage) {
            switch s {
            case .float(let a): let v = a.first ?? 0; self.init(f: v, i: Int64(exactly: v.rounded(.towardZero)) ?? 0, b: v != 0)
            case .int(let a): let v = a.first ?? 0; self.init(f: Float(v), i: v, b: v != 0)
            case .bool(let a): let v = a.first ?? false; self.init(f: v ? 1 : 0, i: v ? 1 : 0, b: v)
            }
        }
    }

    /// Applies the same element-moving function to whichever storage class `s` holds.
    static func mapStorage<M: ShapeElementMove>(_ s: TensorStorage, _ m: M) -> TensorStorage {
        switch s {
        case .float(let a): return .float(m.apply(a))
        case .int(let a): return .int(m.apply(a))
        case .bool(let a): return .bool(m.apply(a))
        }
    }

    static func sameClass(_ a: TensorStorage, _ b: TensorStorage) -> Bool {
        switch (a, b) {
        case (.float, .float), (.int, .int), (.bool, .bool): return true
        default: return false
        }
    }

    static func floatsOf(_ t: Tensor, _ c: KernelContext) throws -> [Float] {
        guard let v = t.floats else { throw c.fail("inputs mix element types (\(t.dtype) is not floating point)") }
        return v
    }
    static func intsOf(_ t: Tensor, _ c: KernelContext) throws -> [Int64] {
        guard let v = t.ints else { throw c.fail("inputs mix element types (\(t.dtype) is not an integer type)") }
        return v
    }
    static func boolsOf(_ t: Tensor, _ c: KernelContext) throws -> [Bool] {
        guard let v = t.bools else { throw c.fail("inputs mix element types (\(t.dtype) is not bool)") }
        return v
    }

    /// Rounds float results to the precision of `dtype` (float16, bfloat16).
    static func roundedToDType(_ v: [Float], _ dtype: DType) -> [Float] {
        switch dtype {
        case .float16: return v.map { Half.round($0) }
        case .bfloat16: return v.map { Half.float(fromBFloatBits: Half.bfloatBits(from: $0)) }
        default: return v
        }
    }

    /// One float rounded to the precision of `dtype`.
    @inline(__always)
    static func rounded(_ v: Float, _ dtype: DType) -> Float {
        switch dtype {
        case .float16: return Half.round(v)
        case .bfloat16: return Half.float(fromBFloatBits: Half.bfloatBits(from: v))
        default: return v
        }
    }

    /// A dtype attribute: an ONNX `TensorProto.DataType` code or a DType name.
    static func dtypeAttribute(_ c: KernelContext, _ name: String) throws -> DType? {
        switch c.node.attributes[name] {
        case nil: return nil
        case .string(let s)?:
            guard let d = DType(rawValue: s) else { throw c.badAttribute(name, "unknown dtype '\(s)'") }
            return d
        case .int(let code)?:
            let table: [Int: DType] = [1: .float32, 2: .uint8, 3: .int8, 4: .uint16, 5: .int16, 6: .int32, 7: .int64,
                                       9: .bool, 10: .float16, 11: .float64, 12: .uint32, 13: .uint64, 16: .bfloat16]
            guard let d = table[code] else { throw c.badAttribute(name, "unsupported ONNX data type \(code)") }
            return d
        default:
            throw c.badAttribute(name, "expected a data type")
        }
    }
}

/// An element-moving function that works for every element type (see `ShapeKernels.mapStorage`).
protocol ShapeElementMove {
    func apply<T>(_ a: [T]) -> [T]
}

extension ShapeKernels {
    struct Transpose2DMove: ShapeElementMove {
        let batch: Int, rows: Int, cols: Int, threads: Int
        func apply<T>(_ a: [T]) -> [T] { ShapeKernels.transpose2D(a, batch: batch, rows: rows, cols: cols, threads: threads) }
    }

    struct SliceAxisMove: ShapeElementMove {
        let outer: Int, dim: Int, inner: Int, start: Int, length: Int
        func apply<T>(_ a: [T]) -> [T] {
            ShapeKernels.sliceAxis(a, outer: outer, dim: dim, inner: inner, start: start, length: length)
        }
    }

    struct ExpandMove: ShapeElementMove {
        let shape: [Int], outShape: [Int]
        func apply<T>(_ a: [T]) -> [T] { Broadcast.expand(a, shape, to: outShape) }
    }

    /// The general element mover: every output axis j has a table giving the
    /// input offset contributed by each output index along j; the element is
    /// read at the sum of its axes' entries, or is the fill value when the sum
    /// is negative (an entry of `fillMark` marks a padded position).
    enum Mover {
        static let fillMark = -(1 << 40)

        static func gather(_ s: TensorStorage, outShape: [Int], tables: [[Int]],
                           fill: Scalar = Scalar(f: 0, i: 0, b: false), threads: Int) -> TensorStorage {
            switch s {
            case .float(let a): return .float(gather(a, outShape: outShape, tables: tables, fill: fill.f, threads: threads))
            case .int(let a): return .int(gather(a, outShape: outShape, tables: tables, fill: fill.i, threads: threads))
            case .bool(let a): return .bool(gather(a, outShape: outShape, tables: tables, fill: fill.b, threads: threads))
            }
        }

        /// Tables must hold valid offsets into `src` (or `fillMark`), one table per output axis.
        static func gather<T>(_ src: [T], outShape: [Int], tables: [[Int]], fill: T, threads: Int) -> [T] {
            let n = outShape.reduce(1, *)
            if n == 0 { return [] }
            let rank = outShape.count
            if rank == 0 { return src.isEmpty ? [fill] : [src[0]] }
            let inner = outShape[rank - 1]
            let rows = n / inner
            let last = tables[rank - 1]
            var contiguous = !last.isEmpty && last[0] >= 0
            if contiguous { for i in 0..<inner where last[i] != last[0] + i { contiguous = false; break } }
            return src.withUnsafeBufferPointer { sp in
                [T](unsafeUninitializedCapacity: n) { buf, count in
                    guard let base = buf.baseAddress else { count = 0; return }
                    let out = SendablePointer(base)
                    parallelChunks(rows, threads: n < 1 << 15 ? 1 : threads) { range in
                        var idx = [Int](repeating: 0, count: rank)
                        var r = range.lowerBound
                        for j in stride(from: rank - 2, through: 0, by: -1) { idx[j] = r % outShape[j]; r /= outShape[j] }
                        var off = 0
                        for j in 0..<(rank - 1) { off += tables[j][idx[j]] }
                        last.withUnsafeBufferPointer { lp in
                            for row in range {
                                let o = out.p + row * inner
                                if off < 0 {
                                    o.initialize(repeating: fill, count: inner)
                                } else if contiguous, let s0 = sp.baseAddress {
                                    o.initialize(from: s0 + off + lp[0], count: inner)
                                } else {
                                    for i in 0..<inner {
                                        let k = off + lp[i]
                                        (o + i).initialize(to: k >= 0 ? sp[k] : fill)
                                    }
                                }
                                var k = rank - 2
                                while k >= 0 {
                                    off -= tables[k][idx[k]]
                                    idx[k] += 1
                                    if idx[k] < outShape[k] { off += tables[k][idx[k]]; break }
                                    idx[k] = 0
                                    off += tables[k][0]
                                    k -= 1
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
