import ShrinkwrapIR

// Gemm and MatMul on GEMM.sgemm.
extension NNKernels {
    /// Gemm: Y = alpha · op(A) · op(B) + beta · C, C broadcast to M×N.
    public static func gemm(_ c: KernelContext) throws -> [Tensor] {
        let (at, a) = try floatInput(c, 0, name: "A")
        let (bt, b) = try floatInput(c, 1, name: "B")
        guard at.rank == 2, bt.rank == 2 else {
            throw c.fail("A and B must be 2-D, got shapes \(at.shape) and \(bt.shape)")
        }
        let transA = try c.int("transA", default: 0) != 0
        let transB = try c.int("transB", default: 0) != 0
        let alpha = try c.float("alpha", default: 1)
        let beta = try c.float("beta", default: 1)
        let m = transA ? at.shape[1] : at.shape[0]
        let k = transA ? at.shape[0] : at.shape[1]
        let kb = transB ? bt.shape[1] : bt.shape[0]
        let n = transB ? bt.shape[0] : bt.shape[1]
        guard k == kb else {
            throw c.fail("inner dimensions differ: op(A) is \(m)×\(k), op(B) is \(kb)×\(n)")
        }
        let outShape = [m, n]
        let total = try c.checkedCount(outShape)
        var cValues: [Float]? = nil
        if let ct = c.optionalInput(2), beta != 0 {
            guard let cf = ct.floats else { throw c.fail("C (input 2) must be floating point, got \(ct.dtype)") }
            guard ct.rank <= 2, Broadcast.shape([ct.shape, outShape]) == outShape else {
                throw c.fail("C of shape \(ct.shape) cannot be broadcast to \(outShape)")
            }
            cValues = Broadcast.expand(cf, ct.shape, to: outShape)
        }
        var y: [Float]
        if let cValues {
            y = cValues
        } else {
            y = total == 0 ? [] : uninitializedFloats(total)
        }
        if total > 0 {
            let useBeta: Float = cValues == nil ? 0 : beta
            a.withUnsafeBufferPointer { ab in
                b.withUnsafeBufferPointer { bb in
                    y.withUnsafeMutableBufferPointer { yb in
                        guard let yp = yb.baseAddress else { return }
                        guard let ap = ab.baseAddress, let bp = bb.baseAddress else {
                            // k == 0: the product is empty.
                            for i in 0..<total { yp[i] = useBeta == 0 ? 0 : useBeta * yp[i] }
                            return
                        }
                        GEMM.sgemm(transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha,
                                   a: ap, lda: at.shape[1], b: bp, ldb: bt.shape[1],
                                   beta: useBeta, c: yp, ldc: n, threads: c.threads)
                    }
                }
            }
        }
        at.dtype.round(&y)
        return [Tensor(dtype: at.dtype, shape: outShape, storage: .float(y))]
    }

    /// MatMul with numpy semantics: 1-D operands are promoted (and the
    /// promoted axis removed from the result), batch axes broadcast.
    public static func matMul(_ c: KernelContext) throws -> [Tensor] {
        let at = try c.input(0), bt = try c.input(1)
        guard at.rank >= 1, bt.rank >= 1 else {
            throw c.fail("MatMul operands must have rank ≥ 1, got shapes \(at.shape) and \(bt.shape)")
        }
        let aShape = at.rank == 1 ? [1] + at.shape : at.shape
        let bShape = bt.rank == 1 ? bt.shape + [1] : bt.shape
        let m = aShape[aShape.count - 2], k = aShape[aShape.count - 1]
        let kb = bShape[bShape.count - 2], n = bShape[bShape.count - 1]
        guard k == kb else {
            throw c.fail("inner dimensions differ: A is \(at.shape), B is \(bt.shape)")
        }
        let aBatch = Array(aShape.dropLast(2)), bBatch = Array(bShape.dropLast(2))
        guard let batch = Broadcast.shape([aBatch, bBatch]) else {
            throw c.fail("batch dimensions of \(at.shape) and \(bt.shape) do not broadcast")
        }
        var outShape = batch
        if at.rank > 1 { outShape.append(m) }
        if bt.rank > 1 { outShape.append(n) }
        let total = try c.checkedCount(batch + [m, n])
        let batchCount = product(batch[...])

        switch (at.storage, bt.storage) {
        case (.float(let a), .float(let b)):
            var y = total == 0 ? [] : uninitializedFloats(total)
            if total > 0 {
                let aStrides = Broadcast.strides(of: aBatch, in: batch)
                let bStrides = Broadcast.strides(of: bBatch, in: batch)
                a.withUnsafeBufferPointer { ab in
                    b.withUnsafeBufferPointer { bb in
                        y.withUnsafeMutableBufferPointer { yb in
                            guard let yp = yb.baseAddress else { return }
                            guard let ap = ab.baseAddress, let bp = bb.baseAddress, k > 0 else {
                                for i in 0..<total { yp[i] = 0 }
                                return
                            }
                            // B shared by every batch and A contiguous: one tall product.
                            if bStrides.allSatisfy({ $0 == 0 }) && product(aBatch[...]) == batchCount {
                                GEMM.sgemm(transA: false, transB: false, m: batchCount * m, n: n, k: k,
                                           a: ap, lda: k, b: bp, ldb: n, c: yp, ldc: n, threads: c.threads)
                                return
                            }
                            var idx = [Int](repeating: 0, count: batch.count)
                            var aOff = 0, bOff = 0
                            for bi in 0..<batchCount {
                                GEMM.sgemm(transA: false, transB: false, m: m, n: n, k: k,
                                           a: ap + aOff * m * k, lda: k, b: bp + bOff * k * n, ldb: n,
                                           c: yp + bi * m * n, ldc: n, threads: c.threads)
                                // Advance the batch odometer (offsets counted in matrices).
                                var d = batch.count - 1
                                while d >= 0 {
                                    idx[d] += 1
                                    aOff += aStrides[d]; bOff += bStrides[d]
                                    if idx[d] < batch[d] { break }
                                    aOff -= aStrides[d] * batch[d]; bOff -= bStrides[d] * batch[d]
                                    idx[d] = 0
                                    d -= 1
                                }
                            }
                        }
                    }
                }
            }
            at.dtype.round(&y)
            return [Tensor(dtype: at.dtype, shape: outShape, storage: .float(y))]
        case (.int(let a), .int(let b)):
            // Integer MatMul (wrapping arithmetic in the result type).
            guard at.dtype == bt.dtype else { throw c.fail("A is \(at.dtype) but B is \(bt.dtype)") }
            var y = [Int64](repeating: 0, count: total)
            let aStrides = Broadcast.strides(of: aBatch, in: batch)
            let bStrides = Broadcast.strides(of: bBatch, in: batch)
            let bs = stridesOf(batch)
            for bi in 0..<batchCount {
                var aOff = 0, bOff = 0, rest = bi
                for d in 0..<batch.count {
                    let q = rest / bs[d]; rest %= bs[d]
                    aOff += q * aStrides[d]; bOff += q * bStrides[d]
                }
                for i in 0..<m {
                    for p in 0..<k {
                        let av = a[(aOff * m + i) * k + p]
                        if av == 0 { continue }
                        for j in 0..<n {
                            y[(bi * m + i) * n + j] &+= av &* b[(bOff * k + p) * n + j]
                        }
                    }
                }
            }
            let dt = at.dtype
            for i in 0..<y.count { y[i] = dt.wrap(y[i]) }
            return [Tensor(dtype: dt, shape: outShape, storage: .int(y))]
        default:
            throw c.fail("MatMul needs two float or two integer operands, got \(at.dtype) and \(bt.dtype)")
        }
    }
}
