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
        let p = try palettize(w, bits: o.bits, granularity: o.granularity, direct: direct) { values, _ in
            guard let mn = values.min(), let mx = values.max() else { return [0] }
            let step = (Double(mx) - Double(mn)) / Double(levels)
            return (0...levels).map { Float(Double(mn) + Double($0) * step) }
        }
        return CodecResult(encoding: .palette(p))
    }
}
