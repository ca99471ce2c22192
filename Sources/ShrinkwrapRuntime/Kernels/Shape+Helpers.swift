import ShrinkwrapIR

// Helpers the shape and indexing kernels share: fill values, storage-class dispatch, dtype attributes, element movers.

extension ShapeKernels {
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
        var block = 1
        func apply<T>(_ a: [T]) -> [T] {
            ShapeKernels.transpose2D(a, batch: batch, rows: rows, cols: cols, block: block, threads: threads)
        }
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

        /// The same gather over fewer, longer axes: axes of size 1 go (their one entry joins the first
        /// remaining axis' table), and an axis whose entries step by exactly the length of the contiguous
        /// run after it merges into that run. basic-pitch's [1, 172, 309, 1] Pads and Concats moved one
        /// element per row of the odometer; they now move rows of 309.
        static func simplified(outShape: [Int], tables: [[Int]]) -> (shape: [Int], tables: [[Int]]) {
            var base = 0, shape: [Int] = [], kept: [[Int]] = []
            for (d, t) in zip(outShape, tables) {
                if d == 1 { base += t[0] } else { shape.append(d); kept.append(t) }
            }
            guard !shape.isEmpty else { return ([1], [[base]]) }
            kept[0] = kept[0].map { $0 + base }
            // A run: entries t0, t0 + 1, … (no fill).
            func run(_ t: [Int]) -> Bool {
                guard let t0 = t.first, t0 >= 0 else { return false }
                for (i, v) in t.enumerated() where v != t0 + i { return false }
                return true
            }
            while shape.count >= 2, run(kept[kept.count - 1]) {
                let inner = shape[shape.count - 1], outer = kept[kept.count - 2], t0 = kept[kept.count - 1][0]
                guard let o0 = outer.first, o0 >= 0, outer.enumerated().allSatisfy({ $1 == o0 + $0 * inner }) else { break }
                let length = outer.count * inner
                guard length <= 1 << 16 else { break }  // the table is as long as the run
                shape.removeLast(2); kept.removeLast(2)
                shape.append(length); kept.append(Array((o0 + t0)..<(o0 + t0 + length)))
            }
            return (shape, kept)
        }

        /// Tables must hold valid offsets into `src` (or `fillMark`), one table per output axis.
        static func gather<T>(_ src: [T], outShape wanted: [Int], tables given: [[Int]], fill: T, threads: Int) -> [T] {
            let n = wanted.reduce(1, *)
            if n == 0 { return [] }
            if wanted.isEmpty { return src.isEmpty ? [fill] : [src[0]] }
            let (outShape, tables) = simplified(outShape: wanted, tables: given)
            let rank = outShape.count
            let inner = outShape[rank - 1]
            let rows = n / inner
            let last = tables[rank - 1]
            // The last axis as fills, one run of consecutive offsets, fills (a Pad's rows; a Slice's: no
            // fills), when it is that: each row is then two fills and one copy.
            var lo = 0, hi = 0, padded = false
            if let a = last.firstIndex(where: { $0 >= 0 }) {
                var b = a + 1
                while b < inner && last[b] == last[a] + (b - a) { b += 1 }
                if last[b...].allSatisfy({ $0 < 0 }) { (lo, hi, padded) = (a, b, true) }
            }
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
                                } else if padded, let s0 = sp.baseAddress {
                                    o.initialize(repeating: fill, count: lo)
                                    (o + lo).initialize(from: s0 + off + lp[lo], count: hi - lo)
                                    (o + hi).initialize(repeating: fill, count: inner - hi)
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
