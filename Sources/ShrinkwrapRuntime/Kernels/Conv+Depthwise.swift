import CKernels

// Depthwise Conv (group == channels): the plane kernel and the channels-in-lanes kernel.
extension NNKernels {
    /// Depthwise convolution (group == channels, one input channel per
    /// group): each output plane accumulates its kernel taps in a fixed order.
    static func depthwiseConv(x: UnsafePointer<Float>, w: UnsafePointer<Float>, bias: [Float]?,
                              y: UnsafeMutablePointer<Float>, batch: Int, channels: Int, multiplier: Int,
                              geo: WindowGeometry, epilogue: ConvEpilogue, threads: Int) {
        let k0 = geo.kernel[0], k1 = geo.kernel[1], k2 = geo.kernel[2]
        let kc = k0 * k1 * k2
        let in0 = geo.input[0], in1 = geo.input[1], in2 = geo.input[2]
        let o0 = geo.output[0], o1 = geo.output[1], o2 = geo.output[2]
        let s0 = geo.strides[0], s1 = geo.strides[1], s2 = geo.strides[2]
        let d0 = geo.dilations[0], d1 = geo.dilations[1], d2 = geo.dilations[2]
        let p0 = geo.padBegin[0], p1 = geo.padBegin[1], p2 = geo.padBegin[2]
        let pIn = in0 * in1 * in2, pOut = o0 * o1 * o2
        let m = channels * multiplier
        let ys = SendablePointer(y)
        if k0 == 1 && in0 == 1 && o0 == 1 {
            let level = SIMDKernels.level
            if multiplier == 1, m >= 8, depthwiseLanes(x: x, w: w, bias: bias, y: y, batch: batch, channels: m,
                                                       geo: geo, epilogue: epilogue, threads: threads) {
                return
            }
            // 2-D (and 1-D): CKernels' vectorised plane kernel, same tap order.
            parallelChunks(batch * m, threads: threads, minChunk: max(1, 8192 / max(pOut * kc, 1))) { range in
                for planeIndex in range {
                    let b = planeIndex / m, oc = planeIndex % m
                    sk_depthwise_plane(level, x + (b * channels + oc / multiplier) * pIn, in1, in2, w + oc * kc, k1, k2,
                                       s1, s2, p1, p2, d1, d2, bias?[oc] ?? 0, ys.p + planeIndex * pOut, o1, o2)
                    epilogue.afterBias(ys.p, planes: planeIndex..<(planeIndex + 1), plane: pOut, channels: m)
                }
            }
            return
        }
        // Valid output run along the last axis for every kw.
        var runs = [(Int, Int)]()
        runs.reserveCapacity(k2)
        for kw in 0..<k2 { runs.append(NNKernels.validRun(offset: kw * d2 - p2, step: s2, limit: in2, n: o2)) }
        runs.withUnsafeBufferPointer { rb in
            parallelChunks(batch * m, threads: threads, minChunk: max(1, 8192 / max(pOut * kc, 1))) { range in
                for planeIndex in range {
                    let b = planeIndex / m, oc = planeIndex % m
                    let ic = oc / multiplier
                    let xPlane = x + (b * channels + ic) * pIn
                    let wk = w + oc * kc
                    let yPlane = ys.p + planeIndex * pOut
                    yPlane.update(repeating: bias?[oc] ?? 0, count: pOut)
                    for od in 0..<o0 {
                        for oh in 0..<o1 {
                            let yrow = yPlane + (od * o1 + oh) * o2
                            for kd in 0..<k0 {
                                let id = od * s0 - p0 + kd * d0
                                if id < 0 || id >= in0 { continue }
                                for kh in 0..<k1 {
                                    let ih = oh * s1 - p1 + kh * d1
                                    if ih < 0 || ih >= in1 { continue }
                                    let line = xPlane + (id * in1 + ih) * in2
                                    let wrow = wk + (kd * k1 + kh) * k2
                                    for kw in 0..<k2 {
                                        let wv = wrow[kw]
                                        let (lo, hi) = rb[kw]
                                        let off = kw * d2 - p2
                                        if s2 == 1 {
                                            let src = line + off
                                            for ow in lo..<hi { yrow[ow] += wv * src[ow] }
                                        } else {
                                            var si = lo * s2 + off
                                            for ow in lo..<hi { yrow[ow] += wv * line[si]; si += s2 }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    epilogue.afterBias(ys.p, planes: planeIndex..<(planeIndex + 1), plane: pOut, channels: m)
                }
            }
        }
    }

    /// A 2-D depthwise conv (multiplier 1) on CKernels' channels-in-lanes kernel: 16 channels per vector,
    /// work split into (batch item, 16 channels, band of output rows), each band taking the epilogue
    /// while in cache. The bits are the plane kernel's; false (nothing written) when the kernel cannot
    /// give them here (see sk_depthwise_lanes_usable).
    static func depthwiseLanes(x: UnsafePointer<Float>, w: UnsafePointer<Float>, bias: [Float]?,
                               y: UnsafeMutablePointer<Float>, batch: Int, channels m: Int, geo: WindowGeometry,
                               epilogue: ConvEpilogue, threads: Int) -> Bool {
        let k1 = geo.kernel[1], k2 = geo.kernel[2], kc = k1 * k2
        let in1 = geo.input[1], in2 = geo.input[2], o1 = geo.output[1], o2 = geo.output[2]
        let s1 = geo.strides[1], s2 = geo.strides[2], d1 = geo.dilations[1], d2 = geo.dilations[2]
        let p1 = geo.padBegin[1], p2 = geo.padBegin[2]
        let pIn = in1 * in2, pOut = o1 * o2
        let level = SIMDKernels.level
        let usable = (bias ?? []).withUnsafeBufferPointer { sk_depthwise_lanes_usable(level, w, m, kc, bias == nil ? nil : $0.baseAddress) }
        // Geometry from a file: kernels, strides and dilations below 2^10 and rows below 2^24, so the scratch
        // size (below 2^60) cannot overflow; anything larger takes the plane kernel.
        guard usable != 0, o1 > 0, o2 > 0, o2 < 1 << 24, [k1, k2, s1, s2, d1, d2].allSatisfy({ $0 < 1 << 10 }) else { return false }
        // Bands of about 2048 outputs: the padded scratch of a band stays in L2.
        let band = max(1, min(o1, 2048 / o2))
        let scratchCount = sk_depthwise_lanes_scratch(o2, k1, k2, s1, s2, d1, d2, band)
        // A padding or dilation so large that the scratch would not be small: the plane kernel.
        guard scratchCount > 0, scratchCount <= 1 << 24 else { return false }
        let groups = (m + 15) / 16, bands = (o1 + band - 1) / band
        let ys = SendablePointer(y)
        let biasValues = bias ?? []
        /// Every (batch item, group, band); `lane` nil: the epilogue runs per channel on each band instead.
        func run(_ lane: UnsafePointer<sk_lane_epilogue>?) {
            biasValues.withUnsafeBufferPointer { bb in
                let bp = bias == nil ? nil : bb.baseAddress
                let perChannel = lane == nil && (epilogue.scale != nil || !epilogue.activations.isEmpty || epilogue.residual != nil)
                parallelChunks(batch * groups * bands, threads: threads) { range in
                    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: scratchCount)
                    defer { scratch.deallocate() }
                    for item in range {
                        let b = item / (groups * bands), g = item / bands % groups, r0 = item % bands * band
                        let r1 = min(o1, r0 + band), c0 = g * 16, count = min(16, m - c0)
                        let out = ys.p + (b * m + c0) * pOut
                        let done = sk_depthwise_lanes(level, x + (b * m + c0) * pIn, pIn, count, in1, in2, w + c0 * kc, k1, k2,
                                                      s1, s2, p1, p2, d1, d2, bp.map { $0 + c0 }, out, pOut, o1, o2, r0, r1,
                                                      lane, c0, scratch) != 0
                        if !done {
                            // (Not expected after the checks above.) The plane kernel's rows r0 ..< r1, same bits.
                            let plane = UnsafeMutablePointer<Float>.allocate(capacity: pOut)
                            defer { plane.deallocate() }
                            for c in 0..<count {
                                sk_depthwise_plane(level, x + (b * m + c0 + c) * pIn, in1, in2, w + (c0 + c) * kc, k1, k2, s1, s2,
                                                   p1, p2, d1, d2, bias?[c0 + c] ?? 0, plane, o1, o2)
                                (out + c * pOut + r0 * o2).update(from: plane + r0 * o2, count: (r1 - r0) * o2)
                            }
                        }
                        guard perChannel || !done else { continue }
                        for c in 0..<count {
                            epilogue.apply(out + c * pOut + r0 * o2, count: (r1 - r0) * o2, channel: c0 + c, skipBias: true)
                        }
                    }
                }
            }
        }
        if epilogue.withLaneEpilogue({ run($0) }) == nil { run(nil) }
        return true
    }
}
