@testable import ShrinkwrapCompression
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

final class KMeans1DTests: XCTestCase {
    /// The plain O(k·m²) dynamic program over sorted values: the reference optimum.
    static func bruteForceSSE(_ values: [Float], weights: [Double]? = nil, k: Int) -> Double {
        let idx = values.indices.sorted { values[$0] < values[$1] }
        let x = idx.map { Double(values[$0]) }
        let w = idx.map { weights?[$0] ?? 1 }
        let n = x.count
        func cost(_ j: Int, _ i: Int) -> Double {
            var sw = 0.0, s = 0.0
            for t in j...i { sw += w[t]; s += w[t] * x[t] }
            guard sw > 0 else { return 0 }
            let mean = s / sw
            var c = 0.0
            for t in j...i { c += w[t] * (x[t] - mean) * (x[t] - mean) }
            return c
        }
        var d = (0..<n).map { cost(0, $0) }
        for c in 1..<max(1, min(k, n)) {
            var e = [Double](repeating: .infinity, count: n)
            for i in c..<n {
                for j in c...i { e[i] = min(e[i], d[j - 1] + cost(j, i)) }
            }
            d = e
        }
        return d[n - 1]
    }

    func testMatchesBruteForceOnSmallSets() {
        var rng = SplitMix(seed: 11)
        for trial in 0..<40 {
            let n = 5 + trial * 3
            // Mixtures with repeats, so equal values and ties occur.
            let values: [Float] = (0..<n).map { _ in
                let v = Float(rng.normal()) + (rng.uniform() < 0.3 ? 4 : 0)
                return rng.uniform() < 0.2 ? (v * 4).rounded() / 4 : v
            }
            for k in [1, 2, 3, 5, 8] {
                let c = values.withUnsafeBufferPointer { KMeans1D.centroids($0, importance: nil, k: k) }
                XCTAssertLessThanOrEqual(c.count, k)
                XCTAssertEqual(c, c.sorted())
                let ours = KMeans1D.sse(values, centroids: c)
                let best = Self.bruteForceSSE(values, k: k)
                XCTAssertEqual(ours, best, accuracy: 1e-9 * max(1, best), "n=\(n) k=\(k)")
            }
        }
    }

    func testImportanceWeightsMatchBruteForce() {
        var rng = SplitMix(seed: 5)
        for trial in 0..<20 {
            let n = 10 + trial * 4
            let values = (0..<n).map { _ in Float(rng.normal()) }
            // Some zero weights: those values must not pull any centre.
            let weights = (0..<n).map { i -> Float in i % 7 == 0 ? 0 : Float(rng.uniform() * 3) }
            for k in [2, 4] {
                let c = values.withUnsafeBufferPointer { v in weights.withUnsafeBufferPointer { KMeans1D.centroids(v, importance: $0, k: k) } }
                let ours = KMeans1D.sse(values, importance: weights, centroids: c)
                let best = Self.bruteForceSSE(values, weights: weights.map(Double.init), k: k)
                XCTAssertEqual(ours, best, accuracy: 1e-9 * max(1, best), "n=\(n) k=\(k)")
            }
        }
    }

    func testFewerDistinctValuesThanClustersIsExact() {
        let values: [Float] = [3, 1, 3, 1, 2, 2, 2]
        let c = values.withUnsafeBufferPointer { KMeans1D.centroids($0, importance: nil, k: 16) }
        XCTAssertEqual(c, [1, 2, 3])
        XCTAssertEqual(KMeans1D.sse(values, centroids: c), 0)
    }

    /// Large tensors go through the fp16 histogram; the result must still beat
    /// (or tie) Lloyd's algorithm from k-means++ seeds, and be deterministic.
    func testHistogramPathBeatsLloyd() {
        var rng = SplitMix(seed: 21)
        let values = (0..<30_000).map { _ in Float(rng.normal() * 0.05) + (rng.uniform() < 0.1 ? 0.2 : 0) }
        for k in [2, 4, 16, 64] {
            let c = KMeansLUTCodec.table(values, importance: nil, k: k)
            XCTAssertEqual(c, KMeansLUTCodec.table(values, importance: nil, k: k))
            let ours = KMeans1D.sse(values, centroids: c)
            for seed in 0..<3 {
                let lloyd = Self.lloyd(values, k: k, seed: UInt64(seed))
                XCTAssertLessThanOrEqual(ours, KMeans1D.sse(values, centroids: lloyd) * (1 + 1e-9), "k=\(k) seed=\(seed)")
            }
        }
    }

    /// k-means++ seeding then Lloyd to convergence (the scikit-learn recipe).
    static func lloyd(_ x: [Float], k: Int, seed: UInt64) -> [Float] {
        var rng = SplitMix(seed: seed)
        var centres = [x[Int(rng.next() % UInt64(x.count))]]
        while centres.count < k {
            let d = x.map { v in centres.map { Double(($0 - v) * ($0 - v)) }.min() ?? 0 }
            let total = d.reduce(0, +)
            var r = rng.uniform() * total
            var pick = x.count - 1
            for (i, di) in d.enumerated() { r -= di; if r <= 0 { pick = i; break } }
            centres.append(x[pick])
        }
        for _ in 0..<100 {
            centres.sort()
            let near = NearestEntry(centres)
            var s = [Double](repeating: 0, count: k), n = [Double](repeating: 0, count: k)
            for v in x { let c = near.index(of: v); s[c] += Double(v); n[c] += 1 }
            let moved = (0..<k).map { n[$0] > 0 ? Float(s[$0] / n[$0]) : centres[$0] }
            if moved == centres { break }
            centres = moved
        }
        return centres
    }

    func testNearestEntry() {
        let n = NearestEntry([0, 10, 10, -5, 2])
        XCTAssertEqual(n.index(of: 0.9), 0)
        XCTAssertEqual(n.index(of: 1), 0)  // exactly between 0 and 2: the smaller value
        XCTAssertEqual(n.index(of: 1.1), 4)
        XCTAssertEqual(n.index(of: 100), 1)  // equal entries: the lowest index
        XCTAssertEqual(n.index(of: -100), 3)
        XCTAssertEqual(NearestEntry([7]).index(of: -1), 0)
    }
}
