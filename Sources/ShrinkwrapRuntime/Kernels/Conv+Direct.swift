import CKernels
import ShrinkwrapIR

// Conv with the filters in the vector lanes (sk_conv_direct, AVX-512): no im2col, no per-call packing.
extension NNKernels {
    /// The planner-internal attribute marking a Conv whose filters were repacked for sk_conv_direct at
    /// load (input 5, each group's block of `sk_conv_direct_packed_count(filters per group, k)` floats).
    public static let directAttribute = "__shrinkwrap_direct"

    /// The filters of Conv `c` packed for sk_conv_direct when the kernels run at the AVX-512 level and the
    /// Conv has one or two spatial dims and at most 1024 taps: the planner's (input 5), else packed now
    /// (an unplanned graph, filters that are an input), so the planner changes no Conv's bits. Nil to
    /// take the other paths.
    static func directFilters(_ c: KernelContext, w: [Float], geo: WindowGeometry, group: Int, rows: Int,
                              filters mg: Int) throws -> [Float]? {
        guard SIMDKernels.level == SIMDKernels.avx512, geo.input[0] == 1, geo.kernel[0] == 1, geo.output[0] == 1,
              geo.kernel[1] * geo.kernel[2] <= 1024, rows > 0, mg > 0 else { return nil }
        let count = group * sk_conv_direct_packed_count(mg, rows)
        guard try c.int(directAttribute, default: 0) == 1 else {
            return w.count <= ExecutionPlanner.directLimit ? directPacked(w, groups: group, filtersPerGroup: mg, rows: rows) : nil
        }
        guard let u = c.optionalInput(5), let uf = u.floats, uf.count == count else {
            throw c.badAttribute(directAttribute, "needs the filters packed for the direct kernel as input 5")
        }
        return uf
    }

    /// Filters `w` ([m][cg·taps] per group, as ONNX stores them) packed for sk_conv_direct, group by group.
    static func directPacked(_ w: [Float], groups: Int, filtersPerGroup mg: Int, rows: Int) -> [Float] {
        let each = sk_conv_direct_packed_count(mg, rows)
        return makeFloats(groups * each) { out in
            w.withUnsafeBufferPointer { wb in
                guard let wp = wb.baseAddress else { return }
                for g in 0..<groups { sk_conv_direct_pack(wp + g * mg * rows, mg, rows, out + g * each) }
            }
        }
    }

    /// Conv (1-D or 2-D) by sk_conv_direct: per batch item and group, the input with the conv's padding in
    /// it (the input itself when there is none), then (filters, pixels) items shared
    /// between threads. False, writing nothing, when the padded input would be too large.
    static func directConv(x: UnsafePointer<Float>, packed: UnsafePointer<Float>, bias: [Float]?,
                           y: UnsafeMutablePointer<Float>, batch n: Int, channels ch: Int, filters m: Int, group: Int,
                           geo original: WindowGeometry, epilogue: ConvEpilogue, threads: Int) -> Bool {
        let cg = ch / group, mg = m / group
        // A conv down columns one wide (magika's [5, 1] over [508, 1]) is the same conv along a row in
        // memory: a tile then holds up to 14 outputs instead of 1.
        var geo = original
        if geo.input[2] == 1, geo.kernel[2] == 1, geo.output[2] == 1, geo.padBegin[2] == 0, geo.padEnd[2] == 0 {
            for dims in [\WindowGeometry.input, \.kernel, \.strides, \.dilations, \.padBegin, \.padEnd, \.output] {
                geo[keyPath: dims].swapAt(1, 2)
            }
        }
        let k1 = geo.kernel[1], k2 = geo.kernel[2], s1 = geo.strides[1], s2 = geo.strides[2]
        let d1 = geo.dilations[1], d2 = geo.dilations[2], in1 = geo.input[1], in2 = geo.input[2]
        let o1 = geo.output[1], o2 = geo.output[2], p1 = geo.padBegin[1], p2 = geo.padBegin[2]
        let rows = cg * k1 * k2, each = sk_conv_direct_packed_count(mg, rows)
        // Padded extents: every tap of every output (sizes from a file: checked before they are multiplied).
        let need1 = (o1 - 1).multipliedReportingOverflow(by: s1), need2 = (o2 - 1).multipliedReportingOverflow(by: s2)
        guard !need1.overflow, !need2.overflow, k1 < 1 << 20, k2 < 1 << 20, d1 < 1 << 20, d2 < 1 << 20 else { return false }
        let top = in1.addingReportingOverflow(p1), left = in2.addingReportingOverflow(p2)
        guard !top.overflow, !left.overflow, need1.partialValue < 1 << 40, need2.partialValue < 1 << 40 else { return false }
        let hp = max(top.partialValue, need1.partialValue + (k1 - 1) * d1 + 1)
        let wp = max(left.partialValue, need2.partialValue + (k2 - 1) * d2 + 1)
        let padded = p1 != 0 || p2 != 0 || hp != in1 || wp != in2
        // hp · wp < 2^48; the scratch (cg planes) at most 2^28 floats.
        guard hp < 1 << 24, wp < 1 << 24 else { return false }
        let scratchCount = cg.multipliedReportingOverflow(by: hp * wp)
        guard !padded || (!scratchCount.overflow && scratchCount.partialValue <= 1 << 28) else { return false }
        let pIn = in1 * in2, pOut = o1 * o2
        // 1 × 1, stride 1, unpadded, few input channels: the pixels in the lanes (sk_conv_pointwise, the same
        // bits), which stores without transposes: 32 → 32 channels on 96 × 96 took 177 µs with the filters
        // in the lanes, 109 with the pixels; from 192 channels the direct kernel is ahead (166 against 200).
        let pointwise = k1 == 1 && k2 == 1 && s1 == 1 && s2 == 1 && !padded && cg <= 128
        // Work items: (filters, pixels) — 16 filters × 768 pixels for the pointwise kernel, else a tile's
        // filters × one output row.
        let filterStep = pointwise ? 16 : sk_conv_direct_filter_span(o2), filterParts = (mg + filterStep - 1) / filterStep
        let chunk = pointwise ? 768 : o2, units = pointwise ? (pOut + chunk - 1) / chunk : o1
        let level = SIMDKernels.level
        let biasValues = bias ?? []
        var scratch = padded ? uninitializedFloats(cg * hp * wp) : []
        let ys = SendablePointer(y)
        func run(_ lane: UnsafePointer<sk_lane_epilogue>?) {
            let perChannel = lane == nil && (epilogue.scale != nil || !epilogue.activations.isEmpty || epilogue.residual != nil)
            biasValues.withUnsafeBufferPointer { bb in
                scratch.withUnsafeMutableBufferPointer { sb in
                    for b in 0..<n {
                        for g in 0..<group {
                            let xg = x + (b * ch + g * cg) * pIn
                            var src = xg
                            if padded, let sp = sb.baseAddress {
                                padInput(xg, channels: cg, rows: in1, cols: in2, top: p1, left: p2, into: sp, height: hp,
                                         width: wp, threads: threads)
                                src = UnsafePointer(sp)
                            }
                            let srcs = SendablePointer(UnsafeMutablePointer(mutating: src))
                            let out = ys.p + (b * m + g * mg) * pOut
                            let bp = bias == nil ? nil : bb.baseAddress.map { $0 + g * mg }
                            parallelChunks(filterParts * units, threads: threads) { items in
                                var item = items.lowerBound
                                while item < items.upperBound {
                                    let part = item / units, u0 = item % units, u1 = min(units, u0 + items.upperBound - item)
                                    let f0 = part * filterStep, f1 = min(mg, f0 + filterStep)
                                    let q0 = u0 * chunk, q1 = min(pOut, u1 * chunk)
                                    // Arguments checked above; the kernels refuse nothing here.
                                    if pointwise {
                                        _ = sk_conv_pointwise(level, srcs.p, cg, pOut, packed + g * each, mg, bp, out, pOut, f0, f1,
                                                              q0, q1, lane, g * mg)
                                    } else {
                                        _ = sk_conv_direct(level, srcs.p, cg, hp, wp, packed + g * each, mg, k1, k2, s1, s2, d1, d2,
                                                           bp, out, pOut, o1, o2, f0, f1, u0, u1, lane, g * mg)
                                    }
                                    if perChannel {
                                        for f in f0..<f1 {
                                            epilogue.apply(out + f * pOut + q0, count: q1 - q0, channel: g * mg + f, skipBias: true)
                                        }
                                    }
                                    item += u1 - u0
                                }
                            }
                        }
                    }
                }
            }
        }
        if epilogue.withLaneEpilogue({ lane in run(lane) }) == nil { run(nil) }
        return true
    }

    /// `channels` planes of rows × cols into planes of height × width, placed at (top, left), zeros around.
    static func padInput(_ x: UnsafePointer<Float>, channels: Int, rows: Int, cols: Int, top: Int, left: Int,
                         into p: UnsafeMutablePointer<Float>, height: Int, width: Int, threads: Int) {
        let ps = SendablePointer(p)
        parallelChunks(channels, threads: threads, minChunk: max(1, 16384 / max(height * width, 1))) { cs in
            for c in cs {
                let dst = ps.p + c * height * width, src = x + c * rows * cols
                let right = width - left - cols
                dst.update(repeating: 0, count: top * width)
                for r in 0..<rows {
                    let line = dst + (top + r) * width
                    line.update(repeating: 0, count: left)
                    (line + left).update(from: src + r * cols, count: cols)
                    (line + left + cols).update(repeating: 0, count: right)
                }
                let below = (top + rows) * width
                (dst + below).update(repeating: 0, count: height * width - below)
            }
        }
    }
}
