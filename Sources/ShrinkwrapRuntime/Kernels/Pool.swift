import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Pooling: MaxPool, AveragePool, LpPool and their global forms (NCHW, 1–3 spatial dims).
extension NNKernels {
    enum PoolKind { case max, average, lp(Float) }

    /// MaxPool (ceil_mode, dilations, pads / auto_pad; optional Indices output,
    /// flattened over N·C·spatial, column-major spatial when storage_order = 1).
    public static func maxPool(_ c: KernelContext) throws -> [Tensor] {
        try pool(c, kind: .max)
    }

    /// AveragePool (count_include_pad, ceil_mode, dilations, pads / auto_pad).
    public static func averagePool(_ c: KernelContext) throws -> [Tensor] {
        try pool(c, kind: .average)
    }

    /// LpPool: (Σ |x|ᵖ over the window)^(1/p); padding contributes nothing.
    public static func lpPool(_ c: KernelContext) throws -> [Tensor] {
        let p = try c.int("p", default: 2)
        guard p >= 1 && p <= 1 << 16 else { throw c.badAttribute("p", "must be a positive integer, got \(p)") }
        return try pool(c, kind: .lp(Float(p)))
    }

    /// Reads X as floats; small integer types (MaxPool on uint8/int8) are
    /// converted exactly and converted back by the caller.
    private static func poolInput(_ c: KernelContext) throws -> (Tensor, [Float]) {
        let t = try c.input(0)
        guard t.rank >= 3 else { throw c.fail("X must have shape N×C×D1×…, has shape \(t.shape)") }
        switch t.storage {
        case .float(let f): return (t, f)
        case .int(let v) where c.node.opType == "MaxPool" && [.int8, .uint8, .int16, .uint16].contains(t.dtype):
            return (t, v.map { Float($0) })
        default:
            throw c.fail("X must be floating point, got \(t.dtype)")
        }
    }

    static func pool(_ c: KernelContext, kind: PoolKind) throws -> [Tensor] {
        let (xt, x) = try poolInput(c)
        guard let kernel = try c.ints("kernel_shape") else { throw c.badAttribute("kernel_shape", "is required") }
        let ceilMode = try c.int("ceil_mode", default: 0) != 0
        var isMax = false
        if case .max = kind { isMax = true }
        let geo = try WindowGeometry.forward(c, inputSpatial: Array(xt.shape[2...]), kernel: kernel, ceilMode: ceilMode)
        let includePad = try c.int("count_include_pad", default: 0) != 0
        let storageOrder = try c.int("storage_order", default: 0)
        guard storageOrder == 0 || storageOrder == 1 else {
            throw c.badAttribute("storage_order", "must be 0 (row major) or 1 (column major), got \(storageOrder)")
        }
        let wantIndices = isMax && wantsOutput(c, 1)
        let n = xt.shape[0], ch = xt.shape[1]
        let outShape = [n, ch] + geo.outputSpatial
        let total = try c.checkedCount(outShape)
        let planes = n * ch
        let pIn = geo.inputCount, pOut = geo.outputCount

        // Per axis and output index: window start, valid tap run, padded tap count.
        struct AxisWindow { var base: Int; var lo: Int; var hi: Int; var padded: Int }
        var axes = [[AxisWindow]]()
        for a in 0..<3 {
            var list = [AxisWindow]()
            list.reserveCapacity(geo.output[a])
            for o in 0..<geo.output[a] {
                let base = o * geo.strides[a] - geo.padBegin[a]
                let run = validRun(offset: base, step: geo.dilations[a], limit: geo.input[a], n: geo.kernel[a])
                // Taps inside input + explicit padding (ceil_mode may reach past it).
                let padRun = validRun(offset: base + geo.padBegin[a], step: geo.dilations[a],
                                      limit: geo.input[a] + geo.padBegin[a] + geo.padEnd[a], n: geo.kernel[a])
                list.append(AxisWindow(base: base, lo: run.lo, hi: run.hi, padded: padRun.hi - padRun.lo))
            }
            axes.append(list)
        }
        let in1 = geo.input[1], in2 = geo.input[2]
        let d0 = geo.dilations[0], d1 = geo.dilations[1], d2 = geo.dilations[2]
        let o0 = geo.output[0], o1 = geo.output[1], o2 = geo.output[2]
        let colMajor = storageOrder == 1
        let in0 = geo.input[0]

        var indices = wantIndices ? [Int64](repeating: 0, count: total) : []
        var y = makeFloats(total) { yp in
            let ys = SendablePointer(yp)
            indices.withUnsafeMutableBufferPointer { ib in
                let isp = wantIndices ? ib.baseAddress.map { SendablePointer($0) } : nil
                x.withUnsafeBufferPointer { xb in
                    guard let xbase = xb.baseAddress else { return }
                    let a0 = axes[0], a1 = axes[1], a2 = axes[2]
                    parallelChunks(planes, threads: c.threads, minChunk: max(1, 16384 / max(pOut * geo.kernelCount, 1))) { range in
                        for plane in range {
                            let xp = xbase + plane * pIn
                            var yo = plane * pOut
                            for i0 in 0..<o0 {
                                let w0 = a0[i0]
                                for i1 in 0..<o1 {
                                    let w1 = a1[i1]
                                    for i2 in 0..<o2 {
                                        let w2 = a2[i2]
                                        switch kind {
                                        case .max:
                                            var best = -Float.infinity
                                            var bestAt = -1
                                            for t0 in w0.lo..<w0.hi {
                                                let p0 = w0.base + t0 * d0
                                                for t1 in w1.lo..<w1.hi {
                                                    let p1 = w1.base + t1 * d1
                                                    let line = (p0 * in1 + p1) * in2
                                                    for t2 in w2.lo..<w2.hi {
                                                        let p2 = w2.base + t2 * d2
                                                        let v = xp[line + p2]
                                                        if v > best || bestAt < 0 {
                                                            best = v
                                                            bestAt = line + p2
                                                        }
                                                    }
                                                }
                                            }
                                            ys.p[yo] = best
                                            if let isp {
                                                if bestAt >= 0 && colMajor {
                                                    // Column-major over the original spatial axes (first axis fastest).
                                                    let q0 = bestAt / (in1 * in2), rest = bestAt % (in1 * in2)
                                                    let q1 = rest / in2, q2 = rest % in2
                                                    let spatial: Int
                                                    switch geo.rank {
                                                    case 1: spatial = q2
                                                    case 2: spatial = q1 + q2 * in1
                                                    default: spatial = q0 + q1 * in0 + q2 * in0 * in1
                                                    }
                                                    isp.p[yo] = Int64(plane * pIn + spatial)
                                                } else {
                                                    isp.p[yo] = bestAt >= 0 ? Int64(plane * pIn + bestAt) : -1
                                                }
                                            }
                                        case .average:
                                            var sum: Float = 0
                                            for t0 in w0.lo..<w0.hi {
                                                let p0 = w0.base + t0 * d0
                                                for t1 in w1.lo..<w1.hi {
                                                    let p1 = w1.base + t1 * d1
                                                    let line = xp + (p0 * in1 + p1) * in2
                                                    for t2 in w2.lo..<w2.hi { sum += line[w2.base + t2 * d2] }
                                                }
                                            }
                                            let count = includePad
                                                ? w0.padded * w1.padded * w2.padded
                                                : (w0.hi - w0.lo) * (w1.hi - w1.lo) * (w2.hi - w2.lo)
                                            ys.p[yo] = count > 0 ? sum / Float(count) : 0
                                        case .lp(let p):
                                            var sum: Float = 0
                                            for t0 in w0.lo..<w0.hi {
                                                let p0 = w0.base + t0 * d0
                                                for t1 in w1.lo..<w1.hi {
                                                    let p1 = w1.base + t1 * d1
                                                    let line = xp + (p0 * in1 + p1) * in2
                                                    for t2 in w2.lo..<w2.hi {
                                                        let v = abs(line[w2.base + t2 * d2])
                                                        sum += p == 2 ? v * v : (p == 1 ? v : powf(v, p))
                                                    }
                                                }
                                            }
                                            ys.p[yo] = p == 2 ? sum.squareRoot() : (p == 1 ? sum : powf(sum, 1 / p))
                                        }
                                        yo += 1
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        var outs: [Tensor]
        if case .int = xt.storage {
            let ints = y.map { Int64($0) }
            outs = [Tensor(dtype: xt.dtype, shape: outShape, storage: .int(ints))]
        } else {
            roundToDType(&y, xt.dtype)
            outs = [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(y))]
        }
        if wantIndices { outs.append(Tensor(ints: indices, shape: outShape)) }
        return outs
    }

    // MARK: Global pools

    /// GlobalAveragePool: mean over all spatial positions of each N·C plane.
    public static func globalAveragePool(_ c: KernelContext) throws -> [Tensor] {
        try globalPool(c, kind: .average)
    }

    /// GlobalMaxPool: max over all spatial positions of each N·C plane.
    public static func globalMaxPool(_ c: KernelContext) throws -> [Tensor] {
        try globalPool(c, kind: .max)
    }

    /// GlobalLpPool: (Σ |x|ᵖ)^(1/p) over each N·C plane.
    public static func globalLpPool(_ c: KernelContext) throws -> [Tensor] {
        let p = try c.int("p", default: 2)
        guard p >= 1 && p <= 1 << 16 else { throw c.badAttribute("p", "must be a positive integer, got \(p)") }
        return try globalPool(c, kind: .lp(Float(p)))
    }

    static func globalPool(_ c: KernelContext, kind: PoolKind) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X", minRank: 2)
        let planes = xt.shape[0] * xt.shape[1]
        let plane = product(xt.shape[2...])
        let outShape = Array(xt.shape[0..<2]) + [Int](repeating: 1, count: xt.rank - 2)
        if plane == 0 && planes > 0 {
            throw c.fail("cannot pool over an empty spatial extent (shape \(xt.shape))")
        }
        var y = makeFloats(planes) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xbase = xb.baseAddress else { return }
                parallelChunks(planes, threads: c.threads, minChunk: max(1, 32768 / max(plane, 1))) { range in
                    for pi in range {
                        let row = xbase + pi * plane
                        switch kind {
                        case .max:
                            var m = row[0]
                            for i in 1..<max(plane, 1) where row[i] > m { m = row[i] }
                            ys.p[pi] = m
                        case .average:
                            var s: Float = 0
                            for i in 0..<plane { s += row[i] }
                            ys.p[pi] = s / Float(plane)
                        case .lp(let p):
                            var s: Float = 0
                            for i in 0..<plane {
                                let v = abs(row[i])
                                s += p == 2 ? v * v : (p == 1 ? v : powf(v, p))
                            }
                            ys.p[pi] = p == 2 ? s.squareRoot() : (p == 1 ? s : powf(s, 1 / p))
                        }
                    }
                }
            }
        }
        roundToDType(&y, xt.dtype)
        return [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(y))]
    }
}
