import CKernels
import ShrinkwrapIR

// Shape kernels that move elements: Transpose, Concat, Split, Slice, Expand, Tile.

extension ShapeKernels {
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
        // The same with blocks of k contiguous elements moved whole: [B, R, C, k] → [B, C, R, k]
        // (basic-pitch's [1, 172, 309, 2] → [1, 309, 172, 2], else k elements per odometer step).
        if n >= 3, n <= 4, dims[n - 1].stride == 1, dims[n - 3].stride == dims[n - 1].size,
           dims[n - 2].stride == dims[n - 3].size * dims[n - 1].size,
           n == 3 || dims[0].stride == dims[1].size * dims[2].size * dims[3].size {
            let batch = n == 4 ? dims[0].size : 1, k = dims[n - 1].size
            let move = Transpose2DMove(batch: batch, rows: dims[n - 2].size, cols: dims[n - 3].size, threads: threads, block: k)
            return Tensor(dtype: x.dtype, shape: outShape, storage: mapStorage(x.storage, move))
        }
        let tables = dims.map { d in (0..<d.size).map { $0 * d.stride } }
        let storage = Mover.gather(x.storage, outShape: dims.map(\.size), tables: tables, threads: threads)
        return Tensor(dtype: x.dtype, shape: outShape, storage: storage)
    }

    /// Blocked transpose of `batch` row-major rows×cols matrices of `block`-element items.
    static func transpose2D<T>(_ a: [T], batch: Int, rows: Int, cols: Int, block k: Int = 1, threads: Int) -> [T] {
        let n = batch * rows * cols * k
        // Float matrices 2–4 wide or tall (an RGB image's NHWC ↔ NCHW): CKernels' shuffles at the machine's width.
        if k == 1, T.self == Float.self, min(rows, cols) >= 2, min(rows, cols) <= 4, let floats = a as? [Float] {
            let y = floats.withUnsafeBufferPointer { src in
                [Float](unsafeUninitializedCapacity: n) { buf, count in
                    guard let sp = src.baseAddress, let base = buf.baseAddress else { count = 0; return }
                    let out = SendablePointer(base), each = rows * cols
                    parallelChunks(batch, threads: n < 1 << 15 ? 1 : threads) { range in
                        for b in range { sk_transpose_narrow(SIMDKernels.level, sp + b * each, out.p + b * each, rows, cols) }
                    }
                    count = n
                }
            }
            if let y = y as? [T] { return y }
        }
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
                        let s = sp + b * rows * cols * k
                        let d = out.p + b * rows * cols * k
                        var c0 = 0
                        while c0 < cols {
                            let c1 = min(cols, c0 + tile)
                            for i in r0..<r1 {
                                if k == 1 {
                                    for j in c0..<c1 { (d + j * rows + i).initialize(to: s[i * cols + j]) }
                                } else {
                                    for j in c0..<c1 { (d + (j * rows + i) * k).initialize(from: s + (i * cols + j) * k, count: k) }
                                }
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
            storage = .float(concatValues(try parts.map { try floatsOf($0, c) }, blocks: blocks, outer: outer, count: n, threads: c.threads))
        case .int:
            storage = .int(concatValues(try parts.map { try intsOf($0, c) }, blocks: blocks, outer: outer, count: n, threads: c.threads))
        case .bool:
            storage = .bool(concatValues(try parts.map { try boolsOf($0, c) }, blocks: blocks, outer: outer, count: n, threads: c.threads))
        }
        return [Tensor(dtype: first.dtype, shape: outShape, storage: storage)]
    }

    static func concatValues<T>(_ parts: [[T]], blocks: [Int], outer: Int, count n: Int, threads: Int = 1) -> [T] {
        let row = blocks.reduce(0, +)
        guard n > 0, row > 0, outer * row == n else { return [] }
        return withBasePointers(parts) { bases in
            [T](unsafeUninitializedCapacity: n) { buf, count in
                guard let base = buf.baseAddress else { count = 0; return }
                let out = SendablePointer(base)
                // Output rows (one block of every part each) split between threads when there is enough to move.
                parallelChunks(outer, threads: n < 1 << 15 ? 1 : threads) { rows in
                    // Part by part: its blocks of these rows, each `row` apart in the output.
                    var start = 0
                    for (src, b) in zip(bases, blocks) {
                        defer { start += b }
                        guard b > 0, let src else { continue }
                        var o = out.p + rows.lowerBound * row + start, from = src + rows.lowerBound * b
                        if b == 1 {
                            // basic-pitch's harmonic stack: 8 planes of one value per row.
                            for _ in rows { o.initialize(to: from.pointee); o += row; from += 1 }
                        } else {
                            for _ in rows { o.initialize(from: from, count: b); o += row; from += b }
                        }
                    }
                }
                count = n
            }
        }
    }

    /// `body` given the base address of every array in `parts`, all valid for the whole call.
    static func withBasePointers<T, R>(_ parts: [[T]], _ body: ([UnsafePointer<T>?]) -> R) -> R {
        var bases: [UnsafePointer<T>?] = []
        bases.reserveCapacity(parts.count)
        func nest(_ i: Int) -> R {
            if i == parts.count { return body(bases) }
            return parts[i].withUnsafeBufferPointer { bp in
                bases.append(bp.baseAddress)
                return nest(i + 1)
            }
        }
        return nest(0)
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
}
