import ShrinkwrapIR

/// Groups of consecutive slices along one axis, as palettization uses them:
/// group g holds indices [g·G, min((g+1)·G, dim)) of `axis`, which in
/// row-major order are `outer` runs of `(sliceCount)·inner` contiguous elements.
struct ChannelGroups {
    let outer: Int, dim: Int, inner: Int, groupSize: Int

    init(shape: [Int], axis: Int, groupSize: Int) {
        if shape.isEmpty {
            outer = 1; dim = 1; inner = 1
        } else {
            outer = shape[..<axis].reduce(1, *)
            dim = shape[axis]
            inner = shape[(axis + 1)...].reduce(1, *)
        }
        self.groupSize = max(1, min(groupSize, max(dim, 1)))
    }

    var count: Int { max(1, (dim + groupSize - 1) / groupSize) }

    /// The contiguous element ranges of group g.
    func runs(_ g: Int) -> [Range<Int>] {
        let c0 = g * groupSize, c1 = min(dim, c0 + groupSize)
        guard c1 > c0 else { return [] }
        return (0..<outer).map { o in (o * dim + c0) * inner..<(o * dim + c1) * inner }
    }

    func gather<T>(_ a: [T], _ g: Int) -> [T] { runs(g).flatMap { a[$0] } }
}

/// Shared driver of the LUT codecs: splits the weight into groups, asks
/// `table` for each group's lookup table (at most 2^bits entries), pads it to
/// 2^bits with its last entry, and maps every element to its nearest entry.
/// With a data-aware `method` and statistics that fit the weight, `table` gets
/// the per-element importance (the inputs' mean squares, unless the weight
/// brings its own), and with gptq the elements are first moved onto the
/// tables column by column (`GPTQ`), then mapped. Returns notes for the log.
///
/// `direct`, when given, returns for a table it recognises (an evenly spaced
/// one) a function that writes the nearest entry of every value in a range.
typealias RangeAssigner = (Range<Int>, UnsafeBufferPointer<Float>, UnsafeMutableBufferPointer<UInt8>) -> Void

func palettize(_ w: WeightInput, bits: Int, granularity: Granularity, method: CompressionMethod = .nearest,
               direct: ((_ lut: [Float]) -> RangeAssigner?)? = nil,
               table: (_ values: [Float], _ importance: [Float]?) throws(CompressionError) -> [Float]) throws(CompressionError) -> (PaletteWeights, [String]) {
    let groupSize: Int
    switch granularity {
    case .perTensor: groupSize = Int.max
    case .perChannel: groupSize = 1
    case .perGroupedChannel(let g): groupSize = g
    case .perBlock: throw .unsupportedGranularity(mode: "palette", granularity: granularity.description, supported: "per-tensor, per-channel, per-grouped-channel:G")
    }
    let axis = w.shape.isEmpty ? 0 : w.outputAxis
    let groups = ChannelGroups(shape: w.shape, axis: axis, groupSize: groupSize)
    let entries = 1 << bits
    var notes: [String] = []
    var importance = w.importance
    var stats: WeightStatistics? = nil
    if method.needsCalibration {
        if let s = w.statistics, s.misfit(w) == nil {
            stats = s
            if importance == nil { importance = s.importance(w) }
        } else {
            notes.append("\(method): \(w.statistics.flatMap { $0.misfit(w) } ?? "no calibration statistics for this weight"); rounded to nearest")
        }
    }
    var luts: [[Float]] = []
    for g in 0..<groups.count {
        var lut = try table(groups.gather(w.values, g), importance.map { groups.gather($0, g) })
        if lut.count > entries {
            throw .badWeight(tensor: w.name, reason: "lookup table with \(lut.count) entries does not fit \(bits) bits")
        }
        if lut.isEmpty { lut = [0] }
        while lut.count < entries { lut.append(lut[lut.count - 1]) }
        luts.append(lut)
    }
    var values = w.values
    if method == .gptq, let stats {
        let nearest = luts.map { NearestEntry($0) }
        let (done, note) = GPTQ.run(w, stats) { i, x in
            let g = ((i / groups.inner) % groups.dim) / groups.groupSize
            let lut = luts[g]
            return Double(lut[nearest[g].index(of: Float(x))])
        }
        values = done
        notes.append(note)
    }
    var indices = [UInt8](repeating: 0, count: values.count)
    for (g, lut) in luts.enumerated() {
        let nearest = NearestEntry(lut)
        if let f = direct?(lut) {
            values.withUnsafeBufferPointer { v in
                indices.withUnsafeMutableBufferPointer { out in
                    for r in groups.runs(g) { f(r, v, out) }
                }
            }
        } else if groups.runs(g).reduce(0, { $0 + $1.count }) >= FastNearest.threshold {
            let fast = FastNearest(nearest)
            for r in groups.runs(g) {
                for i in r { indices[i] = UInt8(truncatingIfNeeded: fast.index(of: values[i])) }
            }
        } else {
            for r in groups.runs(g) {
                for i in r { indices[i] = UInt8(truncatingIfNeeded: nearest.index(of: values[i])) }
            }
        }
    }
    do {
        return (try PaletteWeights(shape: w.shape, bits: bits, indices: indices, lut: luts, axis: axis,
                                   groupSize: groups.groupSize), notes)
    } catch {
        throw .layout(tensor: w.name, error)
    }
}
