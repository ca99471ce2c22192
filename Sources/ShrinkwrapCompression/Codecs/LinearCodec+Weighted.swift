import ShrinkwrapIR

extension LinearCodec {
    /// Each element's scale block, from the runs.
    static func blockIndex(_ runs: BlockRuns, count: Int) -> [Int32] {
        var out = [Int32](repeating: 0, count: count)
        runs.forEach { range, s in for i in range { out[i] = Int32(truncatingIfNeeded: s) } }
        return out
    }

    /// The weighted method's grid: per block, the scale and offset with the least
    /// importance-weighted squared error Σ wᵢ (xᵢ − x̂ᵢ)² among clipped ranges (each end moved in by
    /// up to 30 % of the range; symmetric and exact-zero grids: the range scaled by 1 … 0.5), then
    /// for plain grids up to three weighted least-squares refits of scale and offset to the codes
    /// (kept only when they lower the error). The min / max grid is a candidate, so the error never
    /// rises. Returns the note for the log.
    static func fitGrid(_ values: [Float], importance: [Float], runs: BlockRuns, lo: [Float], hi: [Float], o: CodecOptions,
                        scale: inout [Float], bias: inout [Float]) -> String {
        let blocks = runs.blocks
        let blockOf = blockIndex(runs, count: values.count)
        // Elements sorted by block (counting sort: stable, deterministic).
        var start = [Int](repeating: 0, count: blocks + 1)
        for s in blockOf { start[Int(s) + 1] += 1 }
        for s in 0..<blocks { start[s + 1] += start[s] }
        var fill = start
        var v = [Double](repeating: 0, count: values.count), wt = v
        for i in values.indices {
            let s = Int(blockOf[i])
            v[fill[s]] = Double(values[i]); wt[fill[s]] = Double(importance[i]); fill[s] += 1
        }
        let signed = o.symmetric && o.bits > 1
        let codes = AffineWeights.codeRange(bits: o.bits, signed: signed)
        let qlo = Double(codes.lowerBound), qhi = Double(codes.upperBound)
        var before = 0.0, after = 0.0
        v.withUnsafeBufferPointer { vp in
            wt.withUnsafeBufferPointer { wp in
                for s in 0..<blocks {
                    let r = start[s]..<start[s + 1]
                    guard !r.isEmpty else { continue }
                    func error(_ g: (scale: Float, bias: Float)) -> Double {
                        let sc = Double(g.scale), of = Double(g.bias), inv = 1 / sc
                        var e = 0.0
                        for i in r {
                            let x = vp[i]
                            let d = x - (sc * roundHalfEven(min(max((x - of) * inv, qlo), qhi)) + of)
                            e += wp[i] * d * d
                        }
                        return e
                    }
                    var best = (scale: scale[s], bias: bias[s])
                    var bestError = error(best)
                    before += bestError
                    func consider(_ g: (scale: Float, bias: Float)) {
                        guard g.scale > 0, g.scale.isFinite, g.bias.isFinite else { return }
                        let e = error(g)
                        if e < bestError { best = g; bestError = e }
                    }
                    let mn = lo[s], mx = hi[s]
                    if o.symmetric || o.exactZero {
                        for t in 1...25 {
                            let a = Float(1 - 0.02 * Double(t))
                            consider(grid(mn * a, mx * a, o))
                        }
                    } else {
                        let span = Double(mx) - Double(mn)
                        for a in 0...10 {
                            for c in 0...10 where a + c > 0 {
                                consider(grid(Float(Double(mn) + span * 0.03 * Double(a)), Float(Double(mx) - span * 0.03 * Double(c)), o))
                            }
                        }
                    }
                    if !o.exactZero && !(o.symmetric && o.bits == 1) {
                        for _ in 0..<3 {
                            guard let g = refit(vp, wp, r, best, symmetric: o.symmetric, qlo: qlo, qhi: qhi) else { break }
                            let e = error(g)
                            guard e < bestError else { break }
                            best = g; bestError = e
                        }
                    }
                    scale[s] = best.scale; bias[s] = best.bias
                    after += bestError
                }
            }
        }
        let gain = before > 0 ? String(format: "%.1f%%", 100 * (1 - after / before)) : "0%"
        return "weighted: scales and offsets fitted to the inputs' mean squares (\(blocks) block(s); weighted error −\(gain) against min / max)"
    }

    /// Weighted least squares of scale (and offset, unless symmetric) for the codes `g` gives.
    static func refit(_ v: UnsafeBufferPointer<Double>, _ w: UnsafeBufferPointer<Double>, _ r: Range<Int>,
                      _ g: (scale: Float, bias: Float), symmetric: Bool, qlo: Double, qhi: Double) -> (scale: Float, bias: Float)? {
        let sc = Double(g.scale), of = Double(g.bias), inv = 1 / sc
        var sw = 0.0, sq = 0.0, sqq = 0.0, sx = 0.0, sqx = 0.0
        for i in r {
            let q = roundHalfEven(min(max((v[i] - of) * inv, qlo), qhi))
            let wi = w[i]
            sw += wi; sq += wi * q; sqq += wi * q * q; sx += wi * v[i]; sqx += wi * q * v[i]
        }
        if symmetric {
            guard sqq > 0 else { return nil }
            let s = sqx / sqq
            return s > 0 ? (Float(s), 0) : nil
        }
        let det = sqq * sw - sq * sq
        guard det > 1e-12 * max(sqq * sw, 1e-300) else { return nil }
        let s = (sqx * sw - sq * sx) / det
        let b = (sqq * sx - sq * sqx) / det
        guard s > 0, s.isFinite, b.isFinite else { return nil }
        return (Float(s), Float(b))
    }
}
