import ShrinkwrapIR

/// coremltools' linear_lut: a lookup table of 2^b evenly spaced entries from
/// the group's minimum to its maximum (`lut[j] = min + j × (max − min) / (2^b − 1)`),
/// each weight mapped to its nearest entry. Per tensor or per group of G
/// output channels.
public struct LinearLUTCodec: WeightCodec {
    public init() {}
    public let mode = "linear-lut"
    public let summary = "lookup table of 2^bits evenly spaced values between the minimum and the maximum"
    public let bitWidths: ClosedRange<Int>? = 1...8
    public let granularities: [GranularityKind] = [.perTensor, .perChannel, .perGroupedChannel]
    public let storage = WeightStorageKind.palette
    public let methods: [CompressionMethod] = [.nearest, .weighted, .gptq]

    public func encode(_ w: WeightInput, _ o: CodecOptions) throws(CompressionError) -> CodecResult {
        let levels = (1 << o.bits) - 1
        // Evenly spaced entries: the nearest is round((x − lut[0]) / step)
        // (a near-tie may go either way by one float ulp).
        let direct: ([Float]) -> RangeAssigner? = { lut in
            let lo = Double(lut[0]), step = (Double(lut[levels]) - lo) / Double(levels)
            guard step > 0 else { return { r, _, out in for i in r { out[i] = 0 } } }
            let inv = 1 / step, top = Double(levels)
            return { r, v, out in
                for i in r {
                    out[i] = UInt8(roundHalfEven(min(max((Double(v[i]) - lo) * inv, 0), top)))
                }
            }
        }
        func table(_ mn: Double, _ mx: Double) -> [Float] {
            let step = (mx - mn) / Double(levels)
            return (0...levels).map { Float(mn + Double($0) * step) }
        }
        var (p, notes) = try palettize(w, bits: o.bits, granularity: o.granularity, method: o.method, direct: direct) { values, importance in
            guard let mn = values.min(), let mx = values.max() else { return [0] }
            guard let importance, mx > mn else { return table(Double(mn), Double(mx)) }
            // Weighted: the clipped range (each end in by up to 30 %) with the least weighted error.
            func error(_ lo: Double, _ hi: Double) -> Double {
                let step = (hi - lo) / Double(levels), inv = 1 / step, top = Double(levels)
                var e = 0.0
                for (i, x) in values.enumerated() {
                    let d = Double(x) - (lo + roundHalfEven(min(max((Double(x) - lo) * inv, 0), top)) * step)
                    e += Double(importance[i]) * d * d
                }
                return e
            }
            let span = Double(mx) - Double(mn)
            var best = (Double(mn), Double(mx)), bestError = error(best.0, best.1)
            for a in 0...10 {
                for c in 0...10 where a + c > 0 {
                    let lo = Double(mn) + span * 0.03 * Double(a), hi = Double(mx) - span * 0.03 * Double(c)
                    let e = error(lo, hi)
                    if e < bestError { best = (lo, hi); bestError = e }
                }
            }
            return table(best.0, best.1)
        }
        if o.method.needsCalibration, let s = w.statistics, s.misfit(w) == nil {
            notes.insert("\(o.method): each table's range clipped to the least error weighted by the inputs' mean squares", at: 0)
        }
        return CodecResult(encoding: .palette(p), notes: notes)
    }
}
