import ShrinkwrapIR

/// Optimal one-dimensional k-means.
///
/// The values are reduced to sorted points with their (importance-weighted)
/// counts, sums and sums of squares: exactly the distinct values when there
/// are at most 4096 elements, otherwise one point per binary16 value (an
/// fp16 histogram; a point's sums are those of the original float32 values in
/// it, so costs stay exact, and at most 65 536 points exist whatever the
/// tensor's size). Over those points, a dynamic program finds the partition
/// into at most k contiguous clusters with the least weighted sum of squared
/// errors: `D[c][i] = min_j D[c−1][j−1] + cost(j…i)`. The optimal j is
/// monotone in i (the cost obeys the quadrangle inequality) and in the
/// number of clusters, so each layer is solved by divide and conquer inside
/// windows that the previous layer narrows: at most O(k·m·log m), close to
/// O(k·m) in practice.
///
/// Optimal clusters of sorted data are contiguous, so on the points the result
/// is the global optimum: never worse than k-means++ / Lloyd, and the same
/// every run. `refine` then moves boundaries inside fp16 bins with Lloyd
/// steps on the raw values, which can only lower the error further.
public enum KMeans1D {
    /// Up to this many elements the points are the exact distinct values.
    public static let exactLimit = 1 << 12

    /// Sorted points with weight, centred sum and centred sum of squares.
    struct Points {
        var weight: [Double] = []
        var sum: [Double] = []
        var sumSquares: [Double] = []
        var center: Double = 0
        var count: Int { weight.count }
    }

    /// Cluster centres (ascending, at most `k`, fewer when there are fewer
    /// distinct points) minimising Σ importance·(x − centre)².
    public static func centroids(_ values: UnsafeBufferPointer<Float>, importance: UnsafeBufferPointer<Float>?, k: Int) -> [Float] {
        guard !values.isEmpty, k >= 1 else { return [] }
        let pts = points(values, importance: importance)
        let m = pts.count
        if m == 0 { return [] }
        // Prefix sums over the points.
        var pw = [Double](repeating: 0, count: m + 1)
        var ps = pw, pq = pw
        for i in 0..<m {
            pw[i + 1] = pw[i] + pts.weight[i]
            ps[i + 1] = ps[i] + pts.sum[i]
            pq[i + 1] = pq[i] + pts.sumSquares[i]
        }
        var bounds: [(Int, Int)] = []
        if k >= m {
            bounds = (0..<m).map { ($0, $0) }
        } else {
            bounds = partition(m: m, k: k, pw: pw, ps: ps, pq: pq)
        }
        return bounds.map { (j, i) -> Float in
            let w = pw[i + 1] - pw[j]
            return Float(w > 0 ? (ps[i + 1] - ps[j]) / w + pts.center : pts.center)
        }
    }

    /// Weighted SSE of a set of centres used nearest-first (for tests and logs).
    public static func sse(_ values: [Float], importance: [Float]? = nil, centroids: [Float]) -> Double {
        let a = NearestEntry(centroids)
        var total = 0.0
        for (i, x) in values.enumerated() {
            let d = Double(x) - Double(centroids[a.index(of: x)])
            total += (importance.map { Double($0[i]) } ?? 1) * d * d
        }
        return total
    }

    static func points(_ values: UnsafeBufferPointer<Float>, importance: UnsafeBufferPointer<Float>?) -> Points {
        var totalW = 0.0, totalS = 0.0
        for i in 0..<values.count {
            let w = importance.map { Double($0[i]) } ?? 1
            totalW += w
            totalS += w * Double(values[i])
        }
        // All-zero importance: fall back to plain counts.
        let imp = totalW > 0 ? importance : nil
        if imp == nil && importance != nil {
            totalW = Double(values.count)
            totalS = values.reduce(0.0) { $0 + Double($1) }
        }
        var p = Points()
        p.center = totalS / totalW
        let c = p.center
        func weight(_ i: Int) -> Double { imp.map { Double($0[i]) } ?? 1 }

        if values.count <= exactLimit {
            let order = (0..<values.count).sorted { values[$0] < values[$1] || (values[$0] == values[$1] && $0 < $1) }
            var i = 0
            while i < order.count {
                let v = values[order[i]]
                var w = 0.0
                while i < order.count && values[order[i]] == v { w += weight(order[i]); i += 1 }
                if w > 0 {
                    let d = Double(v) - c
                    p.weight.append(w); p.sum.append(w * d); p.sumSquares.append(w * d * d)
                }
            }
            return p
        }
        // fp16 histogram: key orders binary16 values from −inf to +inf.
        var hw = [Double](repeating: 0, count: 1 << 16)
        var hs = hw, hq = hw
        for i in 0..<values.count {
            let h = Half.bits(from: values[i])
            let key = h & 0x8000 != 0 ? Int(0x7FFF - (h & 0x7FFF)) : Int(0x8000 | h)
            let w = weight(i)
            let d = Double(values[i]) - c
            hw[key] += w; hs[key] += w * d; hq[key] += w * d * d
        }
        for key in 0..<(1 << 16) where hw[key] > 0 {
            p.weight.append(hw[key]); p.sum.append(hs[key]); p.sumSquares.append(hq[key])
        }
        return p
    }

    /// The optimal partition of m points into k < m contiguous clusters, as
    /// inclusive index ranges in order.
    ///
    /// Two monotonicity facts bound the search for the start j of the last
    /// cluster: for fixed c it does not decrease with i (divide and conquer
    /// over i), and for fixed i it does not decrease with c (one more
    /// cluster never makes the last one start earlier), so layer c searches
    /// j ≥ start[c−1][i]. The second bound makes the windows of the later
    /// layers short; the tests compare with the plain O(k·m²) program.
    static func partition(m: Int, k: Int, pw: [Double], ps: [Double], pq: [Double]) -> [(Int, Int)] {
        // start[c * m + i]: first point of the last cluster when points 0…i form c+1 clusters.
        var start = [UInt32](repeating: 0, count: k * m)
        var prev = [Double](repeating: 0, count: m)
        var cur = [Double](repeating: .infinity, count: m)
        // Depth of the divide and conquer is at most log2(m) + 1; two pushes per level.
        var stack = [(Int, Int, Int, Int)](repeating: (0, 0, 0, 0), count: 2 * (Int.bitWidth - m.leadingZeroBitCount) + 4)
        pw.withUnsafeBufferPointer { pw in
        ps.withUnsafeBufferPointer { ps in
        pq.withUnsafeBufferPointer { pq in
        start.withUnsafeMutableBufferPointer { st in
            @inline(__always) func cost(_ j: Int, _ i: Int) -> Double {
                let w = pw[i + 1] - pw[j]
                let s = ps[i + 1] - ps[j]
                // Rounding can make this a hair negative; harmless for the argmin.
                return (pq[i + 1] - pq[j]) - s * s / w
            }
            for i in 0..<m { prev[i] = cost(0, i) }
            for c in 1..<k {
                // The later layers still need k−1−c points after i.
                let hi = m - 1 - (k - 1 - c)
                let row = c * m, prevRow = (c - 1) * m
                prev.withUnsafeBufferPointer { D in
                cur.withUnsafeMutableBufferPointer { E in
                stack.withUnsafeMutableBufferPointer { stack in
                    // Divide and conquer over i with an explicit stack of
                    // (lo, hi, optLo, optHi) ranges.
                    var top = 0
                    stack[0] = (c, hi, c, hi)
                    top = 1
                    while top > 0 {
                        top -= 1
                        let (lo, hi, optLo, optHi) = stack[top]
                        let mid = (lo + hi) >> 1
                        let below = c == 1 ? 1 : Int(st[prevRow + mid])
                        var j = max(optLo, below)
                        let jHi = min(mid, optHi)
                        var bestJ = j
                        var best = Double.infinity
                        let w1 = pw[mid + 1], s1 = ps[mid + 1], q1 = pq[mid + 1]
                        while j <= jHi {
                            let w = w1 - pw[j], sj = s1 - ps[j]
                            let v = D[j - 1] + (q1 - pq[j]) - sj * sj / w
                            if v < best { best = v; bestJ = j }
                            j += 1
                        }
                        E[mid] = best
                        st[row + mid] = UInt32(bestJ)
                        if mid + 1 <= hi { stack[top] = (mid + 1, hi, bestJ, optHi); top += 1 }
                        if lo <= mid - 1 { stack[top] = (lo, mid - 1, optLo, bestJ); top += 1 }
                    }
                }
                }
                }
                swap(&prev, &cur)
            }
        }
        }
        }
        }
        var out: [(Int, Int)] = []
        var i = m - 1
        for c in stride(from: k - 1, through: 0, by: -1) {
            let j = c == 0 ? 0 : Int(start[c * m + i])
            out.append((j, i))
            i = j - 1
        }
        return out.reversed()
    }
}

/// Finds the nearest entry of a table: binary search over the midpoints of
/// the sorted entries. A value exactly between two entries goes to the
/// smaller one, and of equal entries the lowest table index wins, so the
/// result is deterministic.
public struct NearestEntry: Sendable {
    /// Table indices sorted by value (equal values: lowest index first, duplicates dropped).
    let order: [Int]
    let sorted: [Float]
    let midpoints: [Float]

    public init(_ table: [Float]) {
        let idx = (0..<table.count).sorted { table[$0] < table[$1] || (table[$0] == table[$1] && $0 < $1) }
        var order: [Int] = [], sorted: [Float] = []
        for i in idx where sorted.last != table[i] { order.append(i); sorted.append(table[i]) }
        self.order = order
        self.sorted = sorted
        self.midpoints = zip(sorted, sorted.dropFirst()).map { a, b in
            // Midpoint without overflow; values below it go to the lower entry.
            a / 2 + b / 2
        }
    }

    /// Index into the original table of the entry nearest to `x`.
    @inline(__always)
    public func index(of x: Float) -> Int { order[sortedIndex(of: x)] }

    /// Position in the sorted entries of the entry nearest to `x`.
    @inline(__always)
    func sortedIndex(of x: Float) -> Int {
        var lo = 0, hi = midpoints.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if x > midpoints[mid] { lo = mid + 1 } else { hi = mid }
        }
        // Midpoint rounding can misplace a value by one entry; settle it exactly.
        var best = lo
        if lo > 0, abs(x - sorted[lo - 1]) <= abs(x - sorted[lo]) { best = lo - 1 }
        if lo + 1 < sorted.count, abs(x - sorted[lo + 1]) < abs(x - sorted[best]) { best = lo + 1 }
        return best
    }
}

/// `NearestEntry` for many values: a table over the 65 536 binary16 values
/// answers most lookups with one conversion and one load. Every float that
/// rounds to a binary16 value v lies between v's two neighbours, and the
/// nearest entry is monotone in x, so when both neighbours have the same
/// nearest entry, so does every float of the bin; other bins fall back to
/// the binary search. Exact, not an approximation.
struct FastNearest {
    let base: NearestEntry
    /// Per ordered fp16 key: the original table index, or −1 for "search".
    private var table: [Int16]

    /// Worth building for this many lookups or more.
    static let threshold = 1 << 17

    init(_ base: NearestEntry) {
        self.base = base
        table = [Int16](repeating: -1, count: 1 << 16)
        // Ordered key k ↔ binary16 bits (see KMeans1D.points).
        func value(_ k: Int) -> Float {
            let h = k >= 0x8000 ? UInt16(k - 0x8000) : UInt16(0x8000 | (0x7FFF - k))
            return Half.float(fromBits: h)
        }
        let n = 1 << 16
        var pos = [Int](repeating: -1, count: n)
        for k in 0..<n {
            let v = value(k)
            if v.isFinite { pos[k] = base.sortedIndex(of: v) }
        }
        for k in 1..<(n - 1) where pos[k - 1] >= 0 && pos[k + 1] >= 0 && pos[k - 1] == pos[k + 1] {
            table[k] = Int16(base.order[pos[k - 1]])
        }
    }

    @inline(__always)
    func index(of x: Float) -> Int {
        let h = Half.bits(from: x)
        let key = h & 0x8000 != 0 ? Int(0x7FFF - (h & 0x7FFF)) : Int(0x8000 | h)
        let t = table[key]
        return t >= 0 ? Int(t) : base.index(of: x)
    }
}
