import ShrinkwrapIR

/// k-means palettization with the optimal 1-D k-means (`KMeans1D`): a lookup
/// table of at most 2^b centres minimising the (importance-weighted) squared
/// error, then one Lloyd step on the raw values (it moves boundaries inside
/// the fp16 bins of large tensors and never raises the error). Per tensor or
/// per group of G output channels. Deterministic: no seeds, no restarts.
public struct KMeansLUTCodec: WeightCodec {
    public init() {}
    public let mode = "kmeans-lut"
    public let summary = "lookup table of 2^bits optimal 1-D k-means centres (exact, deterministic)"
    public let bitWidths: ClosedRange<Int>? = 1...8
    public let granularities: [GranularityKind] = [.perTensor, .perChannel, .perGroupedChannel]
    public let storage = WeightStorageKind.palette
    /// What `tune` tries by default (`WeightCodecs.tuneDefaults`).
    public let tuneWidths = [5, 4, 3, 2]
    public let methods: [CompressionMethod] = [.nearest, .weighted, .gptq]

    public func encode(_ w: WeightInput, _ o: CodecOptions) throws(CompressionError) -> CodecResult {
        let k = 1 << o.bits
        var (p, notes) = try palettize(w, bits: o.bits, granularity: o.granularity, method: o.method) { values, importance in
            KMeansLUTCodec.table(values, importance: importance, k: k)
        }
        if o.method.needsCalibration, let s = w.statistics, s.misfit(w) == nil {
            notes.insert("\(o.method): k-means weighted by the inputs' mean squares", at: 0)
        }
        return CodecResult(encoding: .palette(p), notes: notes)
    }

    /// The centres for one group: optimal on the points, then one Lloyd step.
    static func table(_ values: [Float], importance: [Float]?, k: Int) -> [Float] {
        var centres = values.withUnsafeBufferPointer { v in
            if let importance {
                return importance.withUnsafeBufferPointer { KMeans1D.centroids(v, importance: $0, k: k) }
            }
            return KMeans1D.centroids(v, importance: nil, k: k)
        }
        guard centres.count > 1 else { return centres }
        // Lloyd step: assign to the nearest centre, move each centre to its mean.
        let nearest = NearestEntry(centres)
        let fast = values.count >= FastNearest.threshold ? FastNearest(nearest) : nil
        var sum = [Double](repeating: 0, count: centres.count)
        var weight = [Double](repeating: 0, count: centres.count)
        for (i, x) in values.enumerated() {
            let c = fast?.index(of: x) ?? nearest.index(of: x)
            let wt = importance.map { Double($0[i]) } ?? 1
            sum[c] += wt * Double(x)
            weight[c] += wt
        }
        for c in centres.indices where weight[c] > 0 { centres[c] = Float(sum[c] / weight[c]) }
        return centres
    }
}
