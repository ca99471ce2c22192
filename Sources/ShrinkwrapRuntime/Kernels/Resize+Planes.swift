import CKernels
import ShrinkwrapIR

// Resize of the two innermost axes as one pass per plane.
extension NNKernels {
    /// The taps of one axis in raw memory, readable from concurrent chunks.
    private struct RawTaps: @unchecked Sendable {
        let width: Int
        let index: UnsafeMutablePointer<Int>      // outCount × width
        let weight: UnsafeMutablePointer<Float>   // outCount × width
        let extrapolate: UnsafeMutablePointer<Bool>
        /// Two taps everywhere, the second never zero, nothing extrapolated (linear without antialias).
        let plainPairs: Bool

        init(_ t: AxisTaps) {
            width = t.width
            index = .allocate(capacity: max(t.index.count, 1))
            index.initialize(from: t.index, count: t.index.count)
            weight = .allocate(capacity: max(t.weight.count, 1))
            weight.initialize(from: t.weight, count: t.weight.count)
            extrapolate = .allocate(capacity: max(t.extrapolate.count, 1))
            extrapolate.initialize(from: t.extrapolate, count: t.extrapolate.count)
            plainPairs = t.width == 2 && !t.extrapolate.contains(true)
                && stride(from: 1, to: t.weight.count, by: 2).allSatisfy { t.weight[$0] != 0 }
        }

        func free() { index.deallocate(); weight.deallocate(); extrapolate.deallocate() }

        /// Whether output position `o` copies one input element (nearest).
        @inline(__always)
        func copies(_ o: Int) -> Bool { width == 1 && weight[o] == 1 }
    }

    /// Resize that changes at most the last two axes, as one loop over planes
    /// with precomputed taps. The two 1-D passes run in resizeAxisByAxis's order
    /// (shrinking axes first) with its float operations (first tap multiplied,
    /// each later non-zero tap's product added), so the result is bit-identical
    /// to it; nil when another axis changes (or something is empty).
    static func resizePlanes(_ c: KernelContext, _ x: [Float], shape inShape: [Int], to outShape: [Int],
                             scale: [Double], roi: (start: [Double], end: [Double]),
                             _ attrs: ResizeAttributes) throws -> [Float]? {
        let rank = inShape.count
        guard fastPaths, rank >= 2 else { return nil }
        func identity(_ d: Int) -> Bool {
            abs(scale[d] - 1) < 1e-12 && inShape[d] == outShape[d]
                && (attrs.ctm != "tf_crop_and_resize" || (roi.start[d] == 0 && roi.end[d] == 1))
        }
        for d in 0..<(rank - 2) where !identity(d) { return nil }
        let hd = rank - 2, wd = rank - 1
        let inH = inShape[hd], inW = inShape[wd], outH = outShape[hd], outW = outShape[wd]
        let planes = product(inShape[..<hd])
        guard planes > 0, inH > 0, inW > 0, outH > 0, outW > 0, !(identity(hd) && identity(wd)) else { return nil }
        func taps(_ d: Int) throws -> RawTaps? {
            if identity(d) { return nil }
            return RawTaps(try axisTaps(c, mode: attrs.mode, inW: inShape[d], outW: outShape[d], scale: scale[d],
                                        ctm: attrs.ctm, roi: (roi.start[d], roi.end[d]), nearestMode: attrs.nearestMode,
                                        antialias: attrs.antialias, cubicA: attrs.cubicA,
                                        excludeOutside: attrs.excludeOutside))
        }
        let th = try taps(hd)
        defer { th?.free() }
        let tw = try taps(wd)
        defer { tw?.free() }
        let wFirst = th != nil && tw != nil && outW < inW && outH >= inH
        // The intermediate resizeAxisByAxis would hold (it checks its size too).
        _ = try c.checkedCount([planes, wFirst ? inH : outH, wFirst ? outW : inW])
        let e = attrs.extrapolation
        return makeFloats(planes * outH * outW) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress else { return }
                if wFirst, let th, let tw {
                    // Horizontal pass over every input row of the plane, then the vertical one.
                    parallelChunks(planes, threads: c.threads, minChunk: max(1, 16384 / max(outH * outW, 1))) { range in
                        let mid = UnsafeMutablePointer<Float>.allocate(capacity: inH * outW)
                        defer { mid.deallocate() }
                        for plane in range {
                            let src = xp + plane * inH * inW
                            for r in 0..<inH { resizeRow(src + r * inW, mid + r * outW, count: outW, tw, e) }
                            let dst = ys.p + plane * outH * outW
                            for r in 0..<outH { combineRows(mid, stride: outW, count: outW, th, r, dst + r * outW, e) }
                        }
                    }
                    return
                }
                // Per output row: the vertical pass into a scratch row (or the input row itself),
                // then the horizontal pass into the output.
                let work = outW * (tw?.width ?? 1) + inW * (th?.width ?? 1)
                parallelChunks(planes * outH, threads: c.threads, minChunk: max(1, 16384 / max(work, 1))) { range in
                    let mid = UnsafeMutablePointer<Float>.allocate(capacity: inW)
                    defer { mid.deallocate() }
                    for line in range {
                        let plane = line / outH, r = line % outH
                        let src = xp + plane * inH * inW
                        var row = UnsafePointer(src + r * inW)
                        if let th {
                            if th.extrapolate[r] || !th.copies(r) {
                                combineRows(src, stride: inW, count: inW, th, r, mid, e)
                                row = UnsafePointer(mid)
                            } else {
                                row = UnsafePointer(src + th.index[r] * inW)
                            }
                        }
                        let dst = ys.p + line * outW
                        if let tw { resizeRow(row, dst, count: outW, tw, e) } else { dst.update(from: row, count: outW) }
                    }
                }
            }
        }
    }

    /// Output row `r` of a vertical pass: rows of `base` (`stride` apart)
    /// combined with the taps of `r`, as resizeAxis does for one line.
    @inline(__always)
    private static func combineRows(_ base: UnsafePointer<Float>, stride: Int, count: Int, _ t: RawTaps, _ r: Int,
                                    _ dst: UnsafeMutablePointer<Float>, _ e: Float) {
        if t.extrapolate[r] { dst.update(repeating: e, count: count); return }
        let t0 = r * t.width
        let first = base + t.index[t0] * stride
        if t.copies(r) { dst.update(from: first, count: count); return }
        let w0 = t.weight[t0]
        if t.width == 2 && t.weight[t0 + 1] != 0 {
            let w1 = t.weight[t0 + 1]
            let second = base + t.index[t0 + 1] * stride
            // CKernels at the machine's vector width (this Swift is compiled for baseline x86-64).
            sk_resize_blend(SIMDKernels.level, first, second, w0, w1, dst, count)
            return
        }
        for i in 0..<count { dst[i] = w0 * first[i] }
        for j in 1..<max(t.width, 1) {
            let wj = t.weight[t0 + j]
            if wj == 0 { continue }
            let row = base + t.index[t0 + j] * stride
            for i in 0..<count { dst[i] += wj * row[i] }
        }
    }

    /// A horizontal pass over one row: every output position from its taps.
    @inline(__always)
    private static func resizeRow(_ src: UnsafePointer<Float>, _ dst: UnsafeMutablePointer<Float>, count: Int,
                                  _ t: RawTaps, _ e: Float) {
        let idx = t.index, wt = t.weight, ex = t.extrapolate
        switch t.width {
        case 1:
            for o in 0..<count {
                let w0 = wt[o], v = src[idx[o]]
                dst[o] = ex[o] ? e : (w0 == 1 ? v : w0 * v)
            }
        case 2 where t.plainPairs:
            sk_resize_pairs(SIMDKernels.level, src, idx, wt, dst, count)
        case 2:
            for o in 0..<count {
                let w0 = wt[2 &* o], w1 = wt[2 &* o &+ 1]
                var acc = w0 * src[idx[2 &* o]]
                if w1 != 0 { acc += w1 * src[idx[2 &* o &+ 1]] }
                dst[o] = ex[o] ? e : acc
            }
        default:
            let width = t.width
            for o in 0..<count {
                let t0 = o &* width
                var acc = wt[t0] * src[idx[t0]]
                for j in 1..<width {
                    let wj = wt[t0 &+ j]
                    if wj == 0 { continue }
                    acc += wj * src[idx[t0 &+ j]]
                }
                dst[o] = ex[o] ? e : acc
            }
        }
    }
}
