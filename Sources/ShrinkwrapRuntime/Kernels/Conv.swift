import CKernels
import ShrinkwrapIR

// Conv and ConvTranspose (NCHW, 1–3 spatial dims) on GEMM.sgemm.
extension NNKernels {
    // MARK: Conv

    /// Conv: Y = W ⋆ X + B, with groups, strides, dilations, pads / auto_pad.
    /// im2col + sgemm per group; 1×1 stride-1 unpadded convs multiply the
    /// input directly; depthwise convs use a direct loop.
    public static func conv(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X", minRank: 3)
        let (wt, w) = try floatInput(c, 1, name: "W", minRank: 3)
        guard wt.rank == xt.rank else {
            throw c.fail("W has shape \(wt.shape) but X has shape \(xt.shape): ranks must match")
        }
        let n = xt.shape[0], ch = xt.shape[1]
        let m = wt.shape[0]
        let spatial = Array(xt.shape[2...]), kernel = Array(wt.shape[2...])
        // The attributes' part (group, geometry, the planner's epilogue) as worked out on an earlier run
        // with these shapes, else now (and kept).
        let memo: ConvMemo
        if let kept = c.memo(ConvMemo.self), kept.spatial == spatial, kept.kernel == kernel, kept.filters == m {
            memo = kept
        } else {
            memo = try ConvMemo(c, spatial: spatial, kernel: kernel, filters: m)
            c.remember(memo)
        }
        let group = memo.group
        guard ch % group == 0 else { throw c.fail("input channels \(ch) are not divisible by group \(group)") }
        guard m % group == 0 else { throw c.fail("output channels \(m) (W.shape[0]) are not divisible by group \(group)") }
        let cg = ch / group, mg = m / group
        guard wt.shape[1] == cg else {
            throw c.fail("W.shape[1] is \(wt.shape[1]) but X has \(ch) channels in \(group) group(s) (expected \(cg))")
        }
        let bias = try optionalVector(c, 2, name: "B", count: m)
        let geo = memo.geo
        let outShape = [n, m] + geo.outputSpatial
        let total = try c.checkedCount(outShape)
        if total == 0 { return [floatTensor([], shape: outShape, dtype: xt.dtype)] }

        let pOut = geo.outputCount, rows = cg * geo.kernelCount
        _ = try c.checkedCount([rows, pOut])
        let threads = c.threads
        // Set by the interpreter's planner: a BatchNormalization, a residual Add and an activation reading only
        // this Conv, fused into it. The residual and the activation run after the Conv as their own kernels when
        // they would not give the separate nodes' values inside (a residual that broadcasts, float16 rounding).
        let full = ConvEpilogue(bias: bias, scale: memo.scale, shift: memo.shift, activations: memo.activations)
        let residual = try fusedResidual(c)
        let inside: Bool
        if let r = residual?.tensor {
            inside = xt.dtype == .float32 && r.dtype == .float32 && r.shape == outShape && r.floats != nil
        } else {
            inside = xt.dtype == .float32 || full.activations.allSatisfy(\.commutesWithRounding)
        }
        let (epilogue, late) = inside ? (full, []) : full.withoutActivations()
        let residualValues = inside ? residual?.tensor.floats ?? [] : []

        let depthwise = cg == 1 && group == ch && group > 1
        let winograd = try winogradFilters(c, geo: geo, group: group, channels: ch, filters: m)
        let direct = depthwise || winograd != nil ? nil : try directFilters(c, w: w, geo: geo, group: group, rows: cg * geo.kernelCount,
                                                                              filters: mg)
        var y: [Float] = []
        residualValues.withUnsafeBufferPointer { rb in
            y = makeFloats(total) { yp in
                // (An empty array's buffer may still have a base address: bind only a real residual.)
                let epilogue = rb.count == total ? rb.baseAddress.map { epilogue.adding($0, to: yp) } ?? epilogue : epilogue
                x.withUnsafeBufferPointer { xb in
                    w.withUnsafeBufferPointer { wb in
                        guard let xp = xb.baseAddress, let wp = wb.baseAddress, rows > 0 else {
                            // Zero-sized input channels: the result is the bias alone.
                            if let bias { fillChannels(yp, values: bias, planes: n * m, plane: pOut) } else { yp.update(repeating: 0, count: total) }
                            epilogue.afterBias(yp, planes: 0..<(n * m), plane: pOut, channels: m)
                            return
                        }
                        let directDone = direct?.withUnsafeBufferPointer { db in
                            db.baseAddress.map {
                                directConv(x: xp, packed: $0, bias: bias, y: yp, batch: n, channels: ch, filters: m, group: group,
                                           geo: geo, epilogue: epilogue, threads: threads)
                            } ?? false
                        } ?? false
                        if directDone {
                            // Written by the direct kernel.
                        } else if let (plan, u) = winograd {
                            u.withUnsafeBufferPointer { ub in
                                guard let up = ub.baseAddress else { return }
                                winogradConv(x: xp, u: up, y: yp, batch: n, plan: plan, epilogue: epilogue, threads: threads)
                            }
                        } else if depthwise {
                            depthwiseConv(x: xp, w: wp, bias: bias, y: yp, batch: n, channels: ch, multiplier: mg,
                                          geo: geo, epilogue: epilogue, threads: threads)
                        } else {
                            gemmConv(x: xp, w: wp, y: yp, batch: n, channels: ch, filters: m, group: group, geo: geo,
                                     epilogue: epilogue, threads: threads)
                        }
                    }
                }
            }
        }
        xt.dtype.round(&y)
        if !inside {
            var t = Tensor(dtype: xt.dtype, shape: outShape, storage: .float(y))
            if let residual {
                let add = Node(name: "\(c.node.label) residual", opType: "Add", inputs: ["a", "b"], outputs: ["y"])
                let operands = residual.convFirst ? [t, residual.tensor] : [residual.tensor, t]
                t = try ElementwiseKernels.add(KernelContext(node: add, inputs: operands, threads: threads))[0]
            }
            for a in late { t = try a.standalone(t, threads: threads, label: c.node.label) }
            return [t]
        }
        return [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(y))]
    }

    /// Conv's GEMM paths into `yp`: bands of output rows (2-D and 1-D), else one im2col (or, for
    /// unpadded stride-1 1×1 convs, the input itself) and one sgemm per batch item and group; each
    /// output block then takes the epilogue while it is in cache.
    static func gemmConv(x xp: UnsafePointer<Float>, w wp: UnsafePointer<Float>, y yp: UnsafeMutablePointer<Float>,
                         batch n: Int, channels ch: Int, filters m: Int, group: Int, geo: WindowGeometry,
                         epilogue: ConvEpilogue, threads: Int) {
        let cg = ch / group, mg = m / group
        let pIn = geo.inputCount, pOut = geo.outputCount, rows = cg * geo.kernelCount
        let pointwise = geo.kernelCount == 1 && geo.strides == [1, 1, 1] && geo.padBegin == [0, 0, 0] && geo.padEnd == [0, 0, 0]
        // Bands (one im2col slice and GEMM per band, bands shared between threads) when there are
        // enough of them to balance (about 8 of ≥ 256 columns); smaller outputs unfold whole and split
        // the GEMM into tiles instead (nudenet's 20 × 20 convs ran as 2 uneven bands).
        let bands = geo.output[0] == 1 && geo.kernel[0] == 1 && pOut >= 2048 ? bandRows(geo, rows: rows, filters: mg) : 0
        if bands > 0 && geo.output[1] > bands {
            for b in 0..<n {
                for g in 0..<group {
                    bandedConv(x: xp + (b * ch + g * cg) * pIn, w: wp + g * mg * rows,
                               y: yp + (b * m + g * mg) * pOut, channels: cg, filters: mg, geo: geo,
                               pointwise: pointwise, bandRows: bands, epilogue: epilogue, channelOffset: g * mg,
                               threads: threads)
                }
            }
            return
        }
        var col = [Float]()
        if !pointwise { col = uninitializedFloats(rows * pOut) }
        col.withUnsafeMutableBufferPointer { colb in
            for b in 0..<n {
                for g in 0..<group {
                    let xg = xp + (b * ch + g * cg) * pIn
                    let src: UnsafePointer<Float>
                    if pointwise {
                        src = xg
                    } else {
                        guard let cp = colb.baseAddress else { return }
                        im2col(x: xg, channels: cg, geo: geo, col: cp, threads: threads)
                        src = UnsafePointer(cp)
                    }
                    let block = yp + (b * m + g * mg) * pOut
                    GEMM.sgemm(transA: false, transB: false, m: mg, n: pOut, k: rows,
                               a: wp + g * mg * rows, lda: rows, b: src, ldb: pOut, beta: 0,
                               c: block, ldc: pOut, threads: threads)
                    let blocks = SendablePointer(block)
                    parallelChunks(mg, threads: threads, minChunk: max(1, 16384 / max(pOut, 1))) { fs in
                        for f in fs { epilogue.apply(blocks.p + f * pOut, count: pOut, channel: g * mg + f) }
                    }
                }
            }
        }
    }

    /// The Winograd plan and filters of Conv `c` when the planner gave it filters in the Winograd domain
    /// (input 4) and this call's shapes make them pay; nil to take the other paths.
    static func winogradFilters(_ c: KernelContext, geo: WindowGeometry, group: Int, channels: Int,
                                filters: Int) throws -> (WinogradPlan, [Float])? {
        guard let kernel = try c.ints(winogradAttribute) else { return nil }
        guard kernel.count == 2, kernel == Array(geo.kernel[1...]), let u = c.optionalInput(4), let uf = u.floats else {
            throw c.badAttribute(winogradAttribute, "needs the kernel [kh, kw] and the Winograd filters as input 4")
        }
        guard group == 1, let plan = WinogradPlan(geo: geo, channels: channels, filters: filters, filterShape: u.shape),
              plan.pays else { return nil }
        return (plan, uf)
    }

    /// The planner-internal attribute marking a residual Add fused into a Conv: 1 when the Conv's
    /// result was the Add's first operand, 2 when the second; the residual is the Conv's input 3.
    public static let fusedResidualAttribute = "__shrinkwrap_fused_residual"

    /// The residual the planner fused into Conv `c`, and the side the Conv's result took in the Add.
    static func fusedResidual(_ c: KernelContext) throws -> (tensor: Tensor, convFirst: Bool)? {
        let side = try c.int(fusedResidualAttribute, default: 0)
        if side == 0 { return nil }
        guard side == 1 || side == 2, let r = c.optionalInput(3) else {
            throw c.badAttribute(fusedResidualAttribute, "needs 1 or 2 and a residual as input 3")
        }
        return (r, side == 1)
    }

    /// Planner-internal attributes: a fused BatchNormalization's per-channel
    /// scale a and shift b (y = conv · a + b, as `batchNormAffine` gives them).
    public static let fusedScaleAttribute = "__shrinkwrap_fused_scale"
    public static let fusedShiftAttribute = "__shrinkwrap_fused_shift"

    /// Fills plane `p` (of `planes`, each `plane` long) with `values[p % values.count]`.
    static func fillChannels(_ y: UnsafeMutablePointer<Float>, values: [Float], planes: Int, plane: Int) {
        let ch = values.count
        guard ch > 0 else { return }
        for p in 0..<planes { (y + p * plane).update(repeating: values[p % ch], count: plane) }
    }

    /// One im2col line: `dst[ow] = line[ow·stride + offset]` for `ow` in
    /// `valid` (the taps inside the input), zero elsewhere in `0..<count`.
    @inline(__always)
    static func unfoldLine(_ line: UnsafePointer<Float>, into dst: UnsafeMutablePointer<Float>, count: Int,
                           valid: Range<Int>, offset: Int, stride: Int) {
        let lo = valid.lowerBound, hi = valid.upperBound
        if lo > 0 { dst.update(repeating: 0, count: lo) }
        if stride == 1 {
            (dst + lo).update(from: line + (lo + offset), count: hi - lo)
        } else {
            var at = lo * stride + offset
            for ow in lo..<hi { dst[ow] = line[at]; at += stride }
        }
        if hi < count { (dst + hi).update(repeating: 0, count: count - hi) }
    }

    /// Unfolds `channels` input planes into a (channels·kernel) × outputCount
    /// matrix: row (c, kd, kh, kw), column = output position.
    static func im2col(x: UnsafePointer<Float>, channels: Int, geo: WindowGeometry,
                       col: UnsafeMutablePointer<Float>, threads: Int) {
        let k0 = geo.kernel[0], k1 = geo.kernel[1], k2 = geo.kernel[2]
        let kc = k0 * k1 * k2
        let in0 = geo.input[0], in1 = geo.input[1], in2 = geo.input[2]
        let o0 = geo.output[0], o1 = geo.output[1], o2 = geo.output[2]
        let s0 = geo.strides[0], s1 = geo.strides[1], s2 = geo.strides[2]
        let d0 = geo.dilations[0], d1 = geo.dilations[1], d2 = geo.dilations[2]
        let p0 = geo.padBegin[0], p1 = geo.padBegin[1], p2 = geo.padBegin[2]
        let pIn = in0 * in1 * in2, pOut = o0 * o1 * o2
        let rows = channels * kc
        let cs = SendablePointer(col)
        let xs = x
        parallelChunks(rows, threads: threads, minChunk: max(1, 16384 / max(pOut, 1))) { range in
            for row in range {
                let ci = row / kc
                var kr = row % kc
                let kw = kr % k2; kr /= k2
                let kh = kr % k1
                let kd = kr / k1
                let plane = xs + ci * pIn
                var dst = cs.p + row * pOut
                let off2 = kw * d2 - p2
                let (lo2, hi2) = NNKernels.validRun(offset: off2, step: s2, limit: in2, n: o2)
                for od in 0..<o0 {
                    let id = od * s0 - p0 + kd * d0
                    if id < 0 || id >= in0 {
                        dst.update(repeating: 0, count: o1 * o2)
                        dst += o1 * o2
                        continue
                    }
                    for oh in 0..<o1 {
                        let ih = oh * s1 - p1 + kh * d1
                        if ih < 0 || ih >= in1 {
                            dst.update(repeating: 0, count: o2)
                        } else {
                            NNKernels.unfoldLine(plane + (id * in1 + ih) * in2, into: dst, count: o2,
                                                 valid: lo2..<hi2, offset: off2, stride: s2)
                        }
                        dst += o2
                    }
                }
            }
        }
    }

    /// Output rows per band for `bandedConv`: about max(256, output/8)
    /// columns per band, so that there are enough bands to share between
    /// threads. With few filters the GEMM reads each im2col element only a
    /// few times, so the band's slice (`rows` × columns floats) must come
    /// from cache: then it is kept within 512 KiB (basic-pitch's 8-filter
    /// 3×39 conv: 52 → 33 ms); many filters amortise a bigger slice.
    static func bandRows(_ geo: WindowGeometry, rows: Int, filters: Int) -> Int {
        let o1 = geo.output[1], o2 = max(geo.output[2], 1)
        var target = max(256, (o1 * o2 + 7) / 8)
        if filters < 64 { target = min(target, max(64, (512 << 10) / (4 * max(rows, 1)))) }
        return max(1, min(o1, (target + o2 - 1) / o2))
    }

    /// 2-D (or 1-D) convolution as one GEMM per band of output rows: each
    /// band unfolds only its own im2col slice into a per-thread buffer, runs a
    /// single-threaded sgemm into the output, then adds the bias and a fused
    /// Relu while the band is in cache. Bands depend only on the shape, so
    /// results do not depend on the thread count.
    static func bandedConv(x: UnsafePointer<Float>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>,
                           channels cg: Int, filters mg: Int, geo: WindowGeometry, pointwise: Bool, bandRows: Int,
                           epilogue: ConvEpilogue, channelOffset: Int, threads: Int) {
        let k1 = geo.kernel[1], k2 = geo.kernel[2], kc = k1 * k2
        let in1 = geo.input[1], in2 = geo.input[2]
        let o1 = geo.output[1], o2 = geo.output[2]
        let s1 = geo.strides[1], s2 = geo.strides[2]
        let d1 = geo.dilations[1], d2 = geo.dilations[2]
        let p1 = geo.padBegin[1], p2 = geo.padBegin[2]
        let pIn = in1 * in2, pOut = o1 * o2
        let rows = cg * kc
        let bandCount = (o1 + bandRows - 1) / bandRows
        let ys = SendablePointer(y)
        parallelChunks(bandCount, threads: threads) { range in
            let buffer = pointwise ? nil : UnsafeMutablePointer<Float>.allocate(capacity: rows * bandRows * o2)
            defer { buffer?.deallocate() }
            for band in range {
                let oh0 = band * bandRows, oh1 = min(o1, oh0 + bandRows)
                let cols = (oh1 - oh0) * o2
                let src: UnsafePointer<Float>
                let ldb: Int
                if let buffer {
                    for row in 0..<rows {
                        let ci = row / kc, kr = row % kc
                        let kh = kr / k2, kw = kr % k2
                        let plane = x + ci * pIn
                        let off2 = kw * d2 - p2
                        let (lo2, hi2) = NNKernels.validRun(offset: off2, step: s2, limit: in2, n: o2)
                        var dst = buffer + row * cols
                        if o2 == 1 {
                            // One output column (a 1-D conv along axis 1): the row is a strided run down the column.
                            guard off2 >= 0 && off2 < in2 else { dst.update(repeating: 0, count: cols); continue }
                            let off1 = oh0 * s1 - p1 + kh * d1
                            let (lo1, hi1) = NNKernels.validRun(offset: off1, step: s1, limit: in1, n: cols)
                            NNKernels.unfoldLine(plane + off2, into: dst, count: cols, valid: lo1..<hi1, offset: off1 * in2, stride: s1 * in2)
                            continue
                        }
                        for oh in oh0..<oh1 {
                            let ih = oh * s1 - p1 + kh * d1
                            if ih < 0 || ih >= in1 {
                                dst.update(repeating: 0, count: o2)
                            } else {
                                NNKernels.unfoldLine(plane + ih * in2, into: dst, count: o2,
                                                     valid: lo2..<hi2, offset: off2, stride: s2)
                            }
                            dst += o2
                        }
                    }
                    src = UnsafePointer(buffer)
                    ldb = cols
                } else {
                    src = x + oh0 * o2
                    ldb = pIn
                }
                let c = ys.p + oh0 * o2
                GEMM.sgemm(transA: false, transB: false, m: mg, n: cols, k: rows, a: w, lda: rows,
                           b: src, ldb: ldb, beta: 0, c: c, ldc: pOut, threads: 1)
                for f in 0..<mg { epilogue.apply(c + f * pOut, count: cols, channel: channelOffset + f) }
            }
        }
    }

    /// What Conv works out from its node's attributes for an input of `spatial` and filters of
    /// `kernel` (`filters` of them): checked once, then kept on the node (`KernelContext.remember`).
    final class ConvMemo {
        let spatial: [Int], kernel: [Int], filters: Int, group: Int
        let geo: WindowGeometry
        let scale: [Float]?, shift: [Float]?, activations: [FusedActivation]

        init(_ c: KernelContext, spatial: [Int], kernel: [Int], filters m: Int) throws {
            self.spatial = spatial; self.kernel = kernel; filters = m
            group = try c.int("group", default: 1)
            guard group >= 1 else { throw c.badAttribute("group", "must be ≥ 1, got \(group)") }
            if let ks = try c.ints("kernel_shape"), ks != kernel {
                throw c.badAttribute("kernel_shape", "\(ks) does not match W's spatial shape \(kernel)")
            }
            geo = try WindowGeometry.forward(c, inputSpatial: spatial, kernel: kernel, ceilMode: false)
            let epilogue = try ConvEpilogue(c, bias: nil, channels: m)
            scale = epilogue.scale; shift = epilogue.shift; activations = epilogue.activations
        }
    }

    // MARK: ConvTranspose

    /// ConvTranspose: the gradient of Conv with respect to its input.
    /// sgemm (Wᵀ·X per group) followed by col2im scatter-add.
    public static func convTranspose(_ c: KernelContext) throws -> [Tensor] {
        let (xt, x) = try floatInput(c, 0, name: "X", minRank: 3)
        let (wt, w) = try floatInput(c, 1, name: "W", minRank: 3)
        guard wt.rank == xt.rank else {
            throw c.fail("W has shape \(wt.shape) but X has shape \(xt.shape): ranks must match")
        }
        let n = xt.shape[0], ch = xt.shape[1]
        let r = xt.rank - 2
        guard r <= 3 else { throw c.fail("\(r) spatial dimensions are not supported (at most 3)") }
        let group = try c.int("group", default: 1)
        guard group >= 1 else { throw c.badAttribute("group", "must be ≥ 1, got \(group)") }
        guard ch % group == 0 else { throw c.fail("input channels \(ch) are not divisible by group \(group)") }
        guard wt.shape[0] == ch else { throw c.fail("W.shape[0] is \(wt.shape[0]) but X has \(ch) channels") }
        let cg = ch / group, mg = wt.shape[1]
        let m = mg * group
        let kernel = Array(wt.shape[2...])
        if let ks = try c.ints("kernel_shape"), ks != kernel {
            throw c.badAttribute("kernel_shape", "\(ks) does not match W's spatial shape \(kernel)")
        }
        let lim = attributeLimit
        for k in kernel where k < 1 || k > lim { throw c.fail("W's kernel size \(k) is out of range") }
        let bias = try optionalVector(c, 2, name: "B", count: m)
        let inSp = Array(xt.shape[2...])

        func list(_ name: String, _ def: Int, min lo: Int) throws -> [Int] {
            guard let v = try c.ints(name) else { return [Int](repeating: def, count: r) }
            guard v.count == r else { throw c.badAttribute(name, "has \(v.count) values for \(r) spatial dimensions") }
            for e in v where e < lo || e > lim { throw c.badAttribute(name, "value \(e) out of range") }
            return v
        }
        let strides = try list("strides", 1, min: 1)
        let dilations = try list("dilations", 1, min: 1)
        let outPad = try list("output_padding", 0, min: 0)
        for i in 0..<r where outPad[i] >= max(strides[i], dilations[i]) {
            throw c.badAttribute("output_padding", "\(outPad[i]) must be smaller than the stride or dilation along axis \(i)")
        }
        let autoPad = try c.string("auto_pad", default: "NOTSET")
        guard ["NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"].contains(autoPad) else {
            throw c.badAttribute("auto_pad", "unknown value '\(autoPad)'")
        }
        // Full (unpadded) output extent along each axis.
        var full = [Int](repeating: 0, count: r)
        for i in 0..<r { full[i] = strides[i] * (inSp[i] - 1) + outPad[i] + (kernel[i] - 1) * dilations[i] + 1 }
        var pb = [Int](repeating: 0, count: r), pe = pb, out = pb
        var target: [Int]? = nil
        if var os = try c.ints("output_shape") {
            if os.count == r + 2 { os = Array(os[2...]) }
            guard os.count == r else { throw c.badAttribute("output_shape", "has \(os.count) values for \(r) spatial dimensions") }
            for v in os where v < 0 || v > 1 << 30 { throw c.badAttribute("output_shape", "value \(v) out of range") }
            target = os
        } else if autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" {
            target = (0..<r).map { inSp[$0] * strides[$0] }
        }
        if let target {
            for i in 0..<r {
                let totalPad = full[i] - target[i]
                if autoPad == "SAME_UPPER" {
                    pb[i] = floorHalf(totalPad); pe[i] = totalPad - pb[i]
                } else {
                    pe[i] = floorHalf(totalPad); pb[i] = totalPad - pe[i]
                }
                out[i] = target[i]
            }
        } else {
            if autoPad != "VALID", let p = try c.ints("pads") {
                guard p.count == 2 * r else { throw c.badAttribute("pads", "has \(p.count) values, expected \(2 * r)") }
                for v in p where v < 0 || v > lim { throw c.badAttribute("pads", "pad \(v) out of range") }
                pb = Array(p[0..<r]); pe = Array(p[r...])
            }
            for i in 0..<r {
                out[i] = full[i] - pb[i] - pe[i]
                guard out[i] >= 0 else { throw c.fail("pads \(pb[i])+\(pe[i]) exceed the output extent \(full[i]) along spatial axis \(i)") }
            }
        }
        let outShape = [n, m] + out
        let total = try c.checkedCount(outShape)
        if total == 0 { return [floatTensor([], shape: outShape, dtype: xt.dtype)] }

        let geo = WindowGeometry(rank: r,
                                 input: WindowGeometry.promote(inSp, fill: 1), kernel: WindowGeometry.promote(kernel, fill: 1),
                                 strides: WindowGeometry.promote(strides, fill: 1),
                                 dilations: WindowGeometry.promote(dilations, fill: 1),
                                 padBegin: WindowGeometry.promote(pb, fill: 0), padEnd: WindowGeometry.promote(pe, fill: 0),
                                 output: WindowGeometry.promote(out, fill: 1))
        let pIn = geo.inputCount, pOut = geo.outputCount, kc = geo.kernelCount
        let rowsPerGroup = mg * kc
        _ = try c.checkedCount([rowsPerGroup, pIn])
        let threads = c.threads

        var y = makeFloats(total) { yp in
            // Start from the bias; col2im accumulates on top.
            if let bias { fillChannels(yp, values: bias, planes: n * m, plane: pOut) } else { yp.update(repeating: 0, count: total) }
            if pIn == 0 || cg == 0 { return }
            x.withUnsafeBufferPointer { xb in
                w.withUnsafeBufferPointer { wb in
                    guard let xp = xb.baseAddress, let wp = wb.baseAddress else { return }
                    if convTransposeBands(x: xp, w: wp, y: yp, batch: n, channels: ch, group: group, filters: mg, geo: geo,
                                          threads: threads) {
                        return
                    }
                    var col = uninitializedFloats(rowsPerGroup * pIn)
                    col.withUnsafeMutableBufferPointer { colb in
                        guard let cp = colb.baseAddress else { return }
                        for b in 0..<n {
                            for g in 0..<group {
                                // col[(mg·K) × pIn] = W_gᵀ · X_g, W_g stored as cg × (mg·K).
                                GEMM.sgemm(transA: true, transB: false, m: rowsPerGroup, n: pIn, k: cg,
                                           a: wp + g * cg * rowsPerGroup, lda: rowsPerGroup,
                                           b: xp + (b * ch + g * cg) * pIn, ldb: pIn,
                                           c: cp, ldc: pIn, threads: threads)
                                col2im(col: cp, channels: mg, geo: geo, y: yp + (b * m + g * mg) * pOut, threads: threads)
                            }
                        }
                    }
                }
            }
        }
        xt.dtype.round(&y)
        return [Tensor(dtype: xt.dtype, shape: outShape, storage: .float(y))]
    }

    /// ConvTranspose in bands of input rows when no two input rows reach the same output row (stride ≥
    /// the kernel's extent along H, 1-D or 2-D: PP-OCR's 2 × 2 stride-2 upsampling): each band's
    /// Wᵀ·X is its own single-threaded GEMM into a cache-sized column block, scattered at once, bands
    /// shared between threads. The whole-image column block (11 MB for ppocr-v4-det's 24 → 24 at
    /// 120 × 240) went to memory and back. Every output takes its contributions in the order col2im
    /// gives them (one kh, one input row; kw increasing) and GEMM's sums do not depend on the
    /// columns' count, so the bits are the one-block path's. False when the geometry does not allow it.
    static func convTransposeBands(x: UnsafePointer<Float>, w: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>,
                                   batch n: Int, channels ch: Int, group: Int, filters mg: Int, geo: WindowGeometry,
                                   threads: Int) -> Bool {
        let k1 = geo.kernel[1], k2 = geo.kernel[2], s1 = geo.strides[1], s2 = geo.strides[2]
        let d1 = geo.dilations[1], d2 = geo.dilations[2], p1 = geo.padBegin[1], p2 = geo.padBegin[2]
        let in1 = geo.input[1], in2 = geo.input[2], o1 = geo.output[1], o2 = geo.output[2]
        let cg = ch / group, kc = k1 * k2, rowsPerGroup = mg * kc, pIn = in1 * in2, pOut = o1 * o2, m = mg * group
        guard geo.input[0] == 1, geo.kernel[0] == 1, geo.output[0] == 1, s1 >= (k1 - 1) * d1 + 1, in1 >= 2, in2 > 0 else { return false }
        // Column blocks of about 64 Ki floats (256 KiB, in L2 with the input rows and the output rows).
        let bandRows = max(1, min(in1, (1 << 16) / max(rowsPerGroup * in2, 1))), bands = (in1 + bandRows - 1) / bandRows
        let ys = SendablePointer(y)
        parallelChunks(n * group * bands, threads: threads) { items in
            var col = uninitializedFloats(rowsPerGroup * bandRows * in2)
            col.withUnsafeMutableBufferPointer { colb in
                guard let cp = colb.baseAddress else { return }
                for item in items {
                    let b = item / (group * bands), g = item / bands % group, band = item % bands
                    let ih0 = band * bandRows, ih1 = min(in1, ih0 + bandRows), ldc = (ih1 - ih0) * in2
                    GEMM.sgemm(transA: true, transB: false, m: rowsPerGroup, n: ldc, k: cg,
                               a: w + g * cg * rowsPerGroup, lda: rowsPerGroup,
                               b: x + (b * ch + g * cg) * pIn + ih0 * in2, ldb: pIn, c: cp, ldc: ldc, threads: 1)
                    let planes = ys.p + (b * m + g * mg) * pOut
                    for c in 0..<mg {
                        for kh in 0..<k1 {
                            for kw in 0..<k2 {
                                let row = cp + (c * kc + kh * k2 + kw) * ldc
                                let off2 = kw * d2 - p2
                                let (lo, hi) = NNKernels.validRun(offset: off2, step: s2, limit: o2, n: in2)
                                if lo >= hi { continue }
                                for ih in ih0..<ih1 {
                                    let oh = ih * s1 - p1 + kh * d1
                                    if oh < 0 || oh >= o1 { continue }
                                    let src = row + (ih - ih0) * in2, dst = planes + c * pOut + oh * o2
                                    var o = lo * s2 + off2
                                    for iw in lo..<hi { dst[o] += src[iw]; o += s2 }
                                }
                            }
                        }
                    }
                }
            }
        }
        return true
    }

    /// Scatter-adds a (channels·kernel) × inputCount matrix into `channels`
    /// output planes (the inverse layout of `im2col`, with input and output
    /// roles swapped: `geo.input` is the ConvTranspose input).
    static func col2im(col: UnsafePointer<Float>, channels: Int, geo: WindowGeometry,
                       y: UnsafeMutablePointer<Float>, threads: Int) {
        let k0 = geo.kernel[0], k1 = geo.kernel[1], k2 = geo.kernel[2]
        let kc = k0 * k1 * k2
        let in0 = geo.input[0], in1 = geo.input[1], in2 = geo.input[2]
        let o0 = geo.output[0], o1 = geo.output[1], o2 = geo.output[2]
        let s0 = geo.strides[0], s1 = geo.strides[1], s2 = geo.strides[2]
        let d0 = geo.dilations[0], d1 = geo.dilations[1], d2 = geo.dilations[2]
        let p0 = geo.padBegin[0], p1 = geo.padBegin[1], p2 = geo.padBegin[2]
        let pIn = in0 * in1 * in2, pOut = o0 * o1 * o2
        let ys = SendablePointer(y)
        parallelChunks(channels, threads: threads, minChunk: max(1, 16384 / max(pIn * kc, 1))) { range in
            for ch in range {
                let yPlane = ys.p + ch * pOut
                for kd in 0..<k0 {
                    for kh in 0..<k1 {
                        for kw in 0..<k2 {
                            let row = col + (ch * kc + (kd * k1 + kh) * k2 + kw) * pIn
                            let off2 = kw * d2 - p2
                            let (lo, hi) = NNKernels.validRun(offset: off2, step: s2, limit: o2, n: in2)
                            if lo >= hi { continue }
                            for id in 0..<in0 {
                                let od = id * s0 - p0 + kd * d0
                                if od < 0 || od >= o0 { continue }
                                for ih in 0..<in1 {
                                    let oh = ih * s1 - p1 + kh * d1
                                    if oh < 0 || oh >= o1 { continue }
                                    let src = row + (id * in1 + ih) * in2
                                    let dst = yPlane + (od * o1 + oh) * o2
                                    var o = lo * s2 + off2
                                    for iw in lo..<hi { dst[o] += src[iw]; o += s2 }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
