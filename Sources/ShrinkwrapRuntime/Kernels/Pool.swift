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

    /// Max pooling over 2-D planes without dilation: for each output row, the
    /// valid input rows are combined with a running maximum over each window's
    /// valid columns. nil when some window holds no input element (ceil_mode
    /// past the padding), which the general loop handles.
    static func maxPool2D(_ x: [Float], planes: Int, geo: WindowGeometry, threads: Int) -> [Float]? {
        let h = geo.input[1], w = geo.input[2], oh = geo.output[1], ow = geo.output[2]
        let kh = geo.kernel[1], kw = geo.kernel[2], sh = geo.strides[1], sw = geo.strides[2]
        let ph = geo.padBegin[1], pw = geo.padBegin[2]
        var colLo = [Int](repeating: 0, count: ow), colHi = colLo
        for o in 0..<ow {
            colLo[o] = max(o * sw - pw, 0)
            colHi[o] = min(o * sw - pw + kw, w)
            if colLo[o] >= colHi[o] { return nil }
        }
        for o in 0..<oh where max(o * sh - ph, 0) >= min(o * sh - ph + kh, h) { return nil }
        let pIn = h * w, pOut = oh * ow
        return makeFloats(planes * pOut) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                colLo.withUnsafeBufferPointer { lo in
                    colHi.withUnsafeBufferPointer { hi in
                        guard let xbase = xb.baseAddress else { return }
                        parallelChunks(planes, threads: threads, minChunk: max(1, 16384 / max(pOut * kh * kw, 1))) { range in
                            // Column maxima of the window's rows, then each window's maximum along the row.
                            let colMax = UnsafeMutablePointer<Float>.allocate(capacity: max(w, 1))
                            defer { colMax.deallocate() }
                            for plane in range {
                                let src = xbase + plane * pIn
                                let dst = ys.p + plane * pOut
                                for r in 0..<oh {
                                    let r0 = max(r * sh - ph, 0), r1 = min(r * sh - ph + kh, h)
                                    colMax.update(from: src + r0 * w, count: w)
                                    for ir in (r0 + 1)..<r1 {
                                        let row = src + ir * w
                                        for i in 0..<w { let v = row[i], m = colMax[i]; colMax[i] = m > v ? m : v }
                                    }
                                    let out = dst + r * ow
                                    for o in 0..<ow {
                                        var i = lo[o]
                                        let end = hi[o]
                                        var m = colMax[i]
                                        i &+= 1
                                        while i < end { let v = colMax[i]; m = m > v ? m : v; i &+= 1 }
                                        out[o] = m
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
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

    /// Per output index along `a`: window start, valid tap run [lo, hi), padded tap count.
    private static func poolTable(_ geo: WindowGeometry, axis a: Int) -> [Int] {
        var t = [Int](repeating: 0, count: 4 * geo.output[a])
        for o in 0..<geo.output[a] {
            let base = o * geo.strides[a] - geo.padBegin[a]
            let run = validRun(offset: base, step: geo.dilations[a], limit: geo.input[a], n: geo.kernel[a])
            // Taps inside input + explicit padding (ceil_mode may reach past it).
            let padRun = validRun(offset: base + geo.padBegin[a], step: geo.dilations[a],
                                  limit: geo.input[a] + geo.padBegin[a] + geo.padEnd[a], n: geo.kernel[a])
            t[4 * o] = base; t[4 * o + 1] = run.lo; t[4 * o + 2] = run.hi; t[4 * o + 3] = padRun.hi - padRun.lo
        }
        return t
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
        if total == 0 {
            let empty = Tensor(dtype: xt.dtype, shape: outShape,
                               storage: xt.dtype.isFloatingPoint ? .float([]) : .int([]))
            return wantIndices ? [empty, Tensor(ints: [], shape: outShape)] : [empty]
        }
        let planes = n * ch
        if !wantIndices, var whole = poolWholePlane(x, planes: planes, geo: geo, kind: kind, threads: c.threads) {
            xt.dtype.round(&whole)
            return [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(whole))]
        }
        let pIn = geo.inputCount, pOut = geo.outputCount

        let tables = (0..<3).map { poolTable(geo, axis: $0) }
        let config = PoolLoop(kind: kind, in1: geo.input[1], in2: geo.input[2], d0: geo.dilations[0],
                              d1: geo.dilations[1], d2: geo.dilations[2], o0: geo.output[0], o1: geo.output[1],
                              o2: geo.output[2], lines: min(geo.kernel[0], geo.input[0]) * min(geo.kernel[1], geo.input[1]),
                              includePad: includePad,
                              s2: geo.strides[2], p2: geo.padBegin[2], k2: geo.kernel[2],
                              tapRuns: (0..<geo.kernel[2]).flatMap { t -> [Int] in
                                  let r = validRun(offset: t * geo.dilations[2] - geo.padBegin[2], step: geo.strides[2],
                                                   limit: geo.input[2], n: geo.output[2])
                                  return [r.lo, r.hi]
                              })
        let colMajor = storageOrder == 1
        let in0 = geo.input[0], in1 = geo.input[1], in2 = geo.input[2]
        let rank = geo.rank

        if isMax, !wantIndices, xt.dtype.isFloatingPoint, geo.input[0] == 1, geo.kernel[0] == 1, geo.dilations == [1, 1, 1],
           let fast = maxPool2D(x, planes: planes, geo: geo, threads: c.threads) {
            var y = fast
            xt.dtype.round(&y)
            return [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(y))]
        }
        var indices = wantIndices ? [Int64](repeating: 0, count: total) : []
        var y = makeFloats(total) { yp in
            let ys = SendablePointer(yp)
            indices.withUnsafeMutableBufferPointer { ib in
                let isp = wantIndices ? ib.baseAddress.map { SendablePointer($0) } : nil
                x.withUnsafeBufferPointer { xb in
                    tables[0].withUnsafeBufferPointer { t0 in
                        tables[1].withUnsafeBufferPointer { t1 in
                            tables[2].withUnsafeBufferPointer { t2 in
                                guard let xbase = xb.baseAddress else { return }
                                let minChunk = max(1, 32768 / max(pOut * geo.kernelCount, 1))
                                parallelChunks(planes, threads: c.threads, minChunk: minChunk) { range in
                                    var lineBuf = [Int](repeating: 0, count: max(config.lines, 1))
                                    let divisors = UnsafeMutablePointer<Float>.allocate(capacity: max(config.o2, 1))
                                    defer { divisors.deallocate() }
                                    lineBuf.withUnsafeMutableBufferPointer { lb in
                                        for plane in range {
                                            config.run(x: xbase + plane * pIn, y: ys.p + plane * pOut,
                                                       index: isp.map { $0.p + plane * pOut },
                                                       t0: t0, t1: t1, t2: t2, lines: lb, divisors: divisors)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        if wantIndices {
            // Window-relative positions → flat N·C·spatial indices (column-major spatial if asked).
            let planeCount = pOut
            for i in 0..<indices.count {
                let at = Int(indices[i])
                let plane = i / max(planeCount, 1)
                if at < 0 { indices[i] = -1; continue }
                var spatial = at
                if colMajor {
                    let q0 = at / (in1 * in2), rest = at % (in1 * in2)
                    let q1 = rest / in2, q2 = rest % in2
                    switch rank {
                    case 1: spatial = q2
                    case 2: spatial = q1 + q2 * in1
                    default: spatial = q0 + q1 * in0 + q2 * in0 * in1
                    }
                }
                indices[i] = Int64(plane * pIn + spatial)
            }
        }
        var outs: [Tensor]
        if case .int = xt.storage {
            // A window entirely in the padding has no element: −∞ for floats, the type's
            // smallest value here (pads ≥ kernel; onnxruntime refuses such a model).
            let lowest = EWKit.intRange(xt.dtype).min
            let ints = y.map { $0.isFinite ? Int64($0) : lowest }
            outs = [Tensor(dtype: xt.dtype, shape: outShape, storage: .int(ints))]
        } else {
            xt.dtype.round(&y)
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
        if var fast = globalPoolPlanes(x, planes: planes, plane: plane, kind: kind, threads: c.threads) {
            xt.dtype.round(&fast)
            return [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(fast))]
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
                            // A plane can hold thousands of values: a float32 running sum would lose
                            // digits to every addition, and the error is the same for the whole channel
                            // an SE block then scales (ppocr-v4-rec: 9× onnxruntime's error). Sum in double.
                            var s: Double = 0
                            for i in 0..<plane { s += Double(row[i]) }
                            ys.p[pi] = Float(s / Double(plane))
                        case .lp(let p):
                            var s: Double = 0
                            for i in 0..<plane {
                                let v = abs(row[i])
                                s += Double(p == 2 ? v * v : (p == 1 ? v : powf(v, p)))
                            }
                            ys.p[pi] = Float(p == 2 ? s.squareRoot() : (p == 1 ? s : pow(s, 1 / Double(p))))
                        }
                    }
                }
            }
        }
        xt.dtype.round(&y)
        return [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(y))]
    }
}

/// The inner loops of a pooling window over one N·C plane (3-D promoted).
/// For each output row the valid input lines of the window are gathered
/// once, then every output column reduces over those lines.
struct PoolLoop {
    let kind: NNKernels.PoolKind
    let in1: Int, in2: Int
    let d0: Int, d1: Int, d2: Int
    let o0: Int, o1: Int, o2: Int
    let lines: Int
    let includePad: Bool
    let s2: Int, p2: Int, k2: Int
    /// Per kernel column t: the run [lo, hi) of output columns whose tap t is inside the input.
    let tapRuns: [Int]

    /// `t0/t1/t2`: per-axis tables of (base, lo, hi, padded) per output index.
    /// `index` receives the row-major promoted position of each maximum;
    /// `divisors` (o2 floats) caches AveragePool's window sizes along a row.
    @inline(__always)
    func run(x: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>, index: UnsafeMutablePointer<Int64>?,
             t0: UnsafeBufferPointer<Int>, t1: UnsafeBufferPointer<Int>, t2: UnsafeBufferPointer<Int>,
             lines lb: UnsafeMutableBufferPointer<Int>, divisors: UnsafeMutablePointer<Float>) {
        var yo = 0
        var divisorRow = -1   // the row factor `divisors` holds the window sizes of
        for i0 in 0..<o0 {
            let b0 = t0[4 * i0], lo0 = t0[4 * i0 + 1], hi0 = t0[4 * i0 + 2], pad0 = t0[4 * i0 + 3]
            for i1 in 0..<o1 {
                let b1 = t1[4 * i1], lo1 = t1[4 * i1 + 1], hi1 = t1[4 * i1 + 2], pad1 = t1[4 * i1 + 3]
                var nl = 0
                for a in lo0..<hi0 {
                    let p0 = b0 + a * d0
                    for b in lo1..<hi1 {
                        lb[nl] = (p0 * in1 + b1 + b * d1) * in2
                        nl += 1
                    }
                }
                let rowCount = (hi0 - lo0) * (hi1 - lo1), rowPad = pad0 * pad1
                // Tap-major sweeps: for every valid line and kernel column, update
                // the whole output row (independent accumulators, no dependency chain).
                let row = y + yo
                switch kind {
                case .max where index == nil:
                    row.update(repeating: -Float.infinity, count: o2)
                    for l in 0..<nl {
                        let line = x + lb[l]
                        for t in 0..<k2 {
                            let lo = tapRuns[2 &* t], hi = tapRuns[2 &* t &+ 1]
                            let src = line + (t &* d2 &- p2)
                            if s2 == 1 {
                                for i2 in lo..<hi { let v = src[i2]; row[i2] = v > row[i2] ? v : row[i2] }
                            } else {
                                for i2 in lo..<hi { let v = src[i2 &* s2]; row[i2] = v > row[i2] ? v : row[i2] }
                            }
                        }
                    }
                    yo &+= o2
                    continue
                case .average, .lp:
                    row.update(repeating: 0, count: o2)
                    var pw: Float = 1
                    if case .lp(let p) = kind { pw = p }
                    for l in 0..<nl {
                        let line = x + lb[l]
                        for t in 0..<k2 {
                            let lo = tapRuns[2 &* t], hi = tapRuns[2 &* t &+ 1]
                            let src = line + (t &* d2 &- p2)
                            switch kind {
                            case .average:
                                if s2 == 1 {
                                    for i2 in lo..<hi { row[i2] += src[i2] }
                                } else {
                                    for i2 in lo..<hi { row[i2] += src[i2 &* s2] }
                                }
                            default:
                                for i2 in lo..<hi {
                                    let v = abs(src[i2 &* s2])
                                    row[i2] += pw == 2 ? v * v : (pw == 1 ? v : powf(v, pw))
                                }
                            }
                        }
                    }
                    if case .average = kind {
                        // Window sizes as floats, converted again only when the row's factor changes.
                        let factor = includePad ? rowPad : rowCount
                        if factor != divisorRow {
                            for i2 in 0..<o2 {
                                divisors[i2] = Float(includePad ? factor &* t2[4 &* i2 &+ 3]
                                                                : factor &* (t2[4 &* i2 &+ 2] &- t2[4 &* i2 &+ 1]))
                            }
                            divisorRow = factor
                        }
                        for i2 in 0..<o2 { let d = divisors[i2]; row[i2] = d > 0 ? row[i2] / d : 0 }
                    } else {
                        for i2 in 0..<o2 {
                            let v = row[i2]
                            row[i2] = pw == 2 ? v.squareRoot() : (pw == 1 ? v : powf(v, 1 / pw))
                        }
                    }
                    yo &+= o2
                    continue
                default:
                    break
                }
                switch kind {
                case .max:
                    for i2 in 0..<o2 {
                        let b2 = t2[4 * i2], lo2 = t2[4 * i2 + 1], hi2 = t2[4 * i2 + 2]
                        var best = -Float.infinity
                        var bestAt = -1
                        for l in 0..<nl {
                            let line = lb[l] + b2
                            for t in lo2..<hi2 {
                                let at = line + t * d2
                                let v = x[at]
                                if v > best || bestAt < 0 { best = v; bestAt = at }
                            }
                        }
                        y[yo] = best
                        index?[yo] = Int64(bestAt)
                        yo += 1
                    }
                default:
                    break
                }
            }
        }
    }
}
