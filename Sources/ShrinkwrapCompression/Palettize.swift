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
///
/// `direct`, when given, returns for a table it recognises (an evenly spaced
/// one) a function that writes the nearest entry of every value in a range.
typealias RangeAssigner = (Range<Int>, UnsafeBufferPointer<Float>, UnsafeMutableBufferPointer<UInt8>) -> Void

func palettize(_ w: WeightInput, bits: Int, granularity: Granularity,
               direct: ((_ lut: [Float]) -> RangeAssigner?)? = nil,
               table: (_ values: [Float], _ importance: [Float]?) throws(CompressionError) -> [Float]) throws(CompressionError) -> PaletteWeights {
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
    var indices = [UInt8](repeating: 0, count: w.values.count)
    var luts: [[Float]] = []
    for g in 0..<groups.count {
        let vals = groups.gather(w.values, g)
        var lut = try table(vals, w.importance.map { groups.gather($0, g) })
        if lut.count > entries {
            throw .badWeight(tensor: w.name, reason: "lookup table with \(lut.count) entries does not fit \(bits) bits")
        }
        if lut.isEmpty { lut = [0] }
        while lut.count < entries { lut.append(lut[lut.count - 1]) }
        let nearest = NearestEntry(lut)
        if let f = direct?(lut) {
            w.values.withUnsafeBufferPointer { v in
                indices.withUnsafeMutableBufferPointer { out in
                    for r in groups.runs(g) { f(r, v, out) }
                }
            }
        } else if vals.count >= FastNearest.threshold {
            let fast = FastNearest(nearest)
            for r in groups.runs(g) {
                for i in r { indices[i] = UInt8(truncatingIfNeeded: fast.index(of: w.values[i])) }
            }
        } else {
            for r in groups.runs(g) {
                for i in r { indices[i] = UInt8(truncatingIfNeeded: nearest.index(of: w.values[i])) }
            }
        }
        luts.append(lut)
    }
    do {
        return try PaletteWeights(shape: w.shape, bits: bits, indices: indices, lut: luts, axis: axis,
                                  groupSize: groups.groupSize)
    } catch {
        throw .layout(tensor: w.name, error)
    }
}
