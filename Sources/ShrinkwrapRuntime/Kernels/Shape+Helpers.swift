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
