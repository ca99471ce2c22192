import Foundation
import ShrinkwrapIR

// Agreement metrics between a reference model's outputs and a compressed
// model's outputs.
//
// Conventions
// -----------
// * A tensor is a *score vector* when, after its leading axis, exactly one
//   axis holds at least 2 elements and every other axis is 1: `[1000]`,
//   `[1, 1000]`, `[1, 1, 10]` and a convolutional classifier's `[1, 1000, 1, 1]`
//   are one row each; `[8, 1000]` or `[8, 1, 10]` are a batch of 8 rows. For
//   top-1 / top-5 purposes every row is one prediction, so an output compared
//   over N tensors of batch B makes N·B predictions. Cosine similarity, on the
//   other hand, is computed once per tensor (all rows flattened together).
// * An output only counts as a score vector when *every* tensor added for it
//   is one, with the same class count; otherwise `classes`, the top-k
//   agreements and the label flips are nil / empty.
// * Argmax and top-k break ties towards the lower index; NaN ranks below every
//   number (below -inf), so a NaN score is never preferred over a real one.
// * Everything is accumulated in Double, in the order the tensors were added
//   and element by element, so results are reproducible bit for bit.

/// How often one reference label turned into another one.
public struct LabelFlip: Codable, Sendable, Equatable {
    /// Label of the reference model's top-1 class.
    public var reference: String
    /// Label of the compressed model's top-1 class.
    public var candidate: String
    /// Number of predictions (rows) that flipped this way.
    public var count: Int

    public init(reference: String, candidate: String, count: Int) {
        self.reference = reference
        self.candidate = candidate
        self.count = count
    }
}

/// Agreement of one model output over N inputs.
public struct OutputMetrics: Codable, Sendable, Equatable {
    /// Output name.
    public var name: String
    /// Number of tensor pairs compared.
    public var inputs: Int
    /// Size of the class axis when the output is a score vector, else nil.
    public var classes: Int?
    /// Percent (0–100) of predictions whose argmax agrees; nil when not a score vector.
    public var top1Agreement: Double?
    /// Percent (0–100) of predictions whose reference top-1 class is among the
    /// candidate's top-k, k = min(5, classes); nil when not a score vector.
    public var top5Agreement: Double?
    /// Mean over the tensors of the cosine similarity (tensor flattened).
    /// Two all-zero tensors have cosine 1; one zero and one non-zero have 0.
    public var meanCosine: Double
    /// Smallest per-tensor cosine similarity.
    public var minCosine: Double
    /// 10·log10(Σ ref² / Σ (ref − cand)²) over all elements of all tensors;
    /// nil means infinite (the outputs are identical).
    public var snrDB: Double?
    /// 10·log10(peak² / MSE), peak = max |ref|, MSE over all elements; nil when MSE is 0.
    public var psnrDB: Double?
    /// Largest |ref − cand| over all elements (NaN if any difference is NaN).
    public var maxAbsError: Double
    /// Most frequent top-1 label changes (only with labels and a score vector),
    /// sorted by count descending, then reference, then candidate; at most 20.
    public var flips: [LabelFlip]
    /// Percent of predictions whose argmax agrees with at least half the reference's margin left
    /// (top score minus the runner-up's): a stricter agreement that also counts the predictions a
    /// slightly larger change would flip (`tune` chooses by it). Not written to reports.
    public var top1WithMargin: Double?
    /// Mean over the predictions of KL(reference ‖ candidate) in nats between the score vectors taken as
    /// distributions (as they are when each row is non-negative and sums to 1, else through a softmax).
    /// Not written to reports.
    public var meanKL: Double?

    enum CodingKeys: String, CodingKey {
        case name, inputs, classes, top1Agreement, top5Agreement, meanCosine, minCosine, snrDB, psnrDB, maxAbsError, flips
    }

    public init(name: String, inputs: Int, classes: Int? = nil, top1Agreement: Double? = nil, top5Agreement: Double? = nil,
                meanCosine: Double, minCosine: Double, snrDB: Double? = nil, psnrDB: Double? = nil,
                maxAbsError: Double, flips: [LabelFlip] = [], top1WithMargin: Double? = nil, meanKL: Double? = nil) {
        self.top1WithMargin = top1WithMargin
        self.meanKL = meanKL
        self.name = name
        self.inputs = inputs
        self.classes = classes
        self.top1Agreement = top1Agreement
        self.top5Agreement = top5Agreement
        self.meanCosine = meanCosine
        self.minCosine = minCosine
        self.snrDB = snrDB
        self.psnrDB = psnrDB
        self.maxAbsError = maxAbsError
        self.flips = flips
    }

    /// True when the output was compared as a score vector (top-k metrics exist).
    public var isScoreVector: Bool { top1Agreement != nil }
}

/// A reference and a candidate tensor could not be compared.
public struct MetricsError: Error, CustomStringConvertible, Sendable, Equatable {
    public var output: String
    public var referenceShape: [Int]
    public var candidateShape: [Int]

    public init(output: String, referenceShape: [Int], candidateShape: [Int]) {
        self.output = output
        self.referenceShape = referenceShape
        self.candidateShape = candidateShape
    }

    public var description: String {
        "output '\(output.escapingControlCharacters)': reference shape \(referenceShape) differs from candidate shape \(candidateShape)"
    }
}

/// The largest number of label flips an `OutputMetrics` keeps.
public let maxReportedFlips = 20

/// Accumulates the metrics of one output, one (reference, candidate) pair at a time.
public struct MetricsAccumulator: Sendable {
    public let name: String
    public let labels: [String]

    private var inputs = 0
    // Cosine.
    private var cosineSum = 0.0
    private var cosineMin = Double.infinity
    // Error energy.
    private var referenceEnergy = 0.0
    private var errorEnergy = 0.0
    private var elements = 0
    private var peak = 0.0
    private var maxAbs = 0.0
    // Score vectors.
    private var classes: Int?
    private var allScoreVectors = true
    private var rows = 0
    private var top1Hits = 0
    private var marginHits = 0
    private var klSum = 0.0
    private var topKHits = 0
    private var flipCounts: [FlipKey: Int] = [:]

    private struct FlipKey: Hashable, Sendable {
        var reference: String
        var candidate: String
    }

    public init(name: String, labels: [String] = []) {
        self.name = name
        self.labels = labels
    }

    /// Adds one pair of tensors; throws when their shapes differ.
    public mutating func add(reference: Tensor, candidate: Tensor) throws {
        guard reference.shape == candidate.shape else {
            throw MetricsError(output: name, referenceShape: reference.shape, candidateShape: candidate.shape)
        }
        let r = reference.doubles
        let c = candidate.doubles
        inputs += 1

        // Element-wise statistics, in element order.
        var dot = 0.0, rr = 0.0, cc = 0.0, ee = 0.0
        for i in 0..<min(r.count, c.count) {
            let a = r[i], b = c[i]
            dot += a * b
            rr += a * a
            cc += b * b
            let d = a - b
            ee += d * d
            let ad = abs(d)
            if !maxAbs.isNaN && (ad.isNaN || ad > maxAbs) { maxAbs = ad }
            let aa = abs(a)
            if aa > peak { peak = aa }
        }
        referenceEnergy += rr
        errorEnergy += ee
        elements += r.count

        let cosine = cosineSimilarity(dot: dot, normSquaredA: rr, normSquaredB: cc)
        cosineSum += cosine
        if !cosineMin.isNaN && (cosine.isNaN || cosine < cosineMin) { cosineMin = cosine }

        // Score-vector statistics.
        guard allScoreVectors, let k = scoreVectorClasses(reference.shape) else {
            allScoreVectors = false
            return
        }
        if let known = classes, known != k {
            allScoreVectors = false
            return
        }
        classes = k
        let rowCount = reference.shape.count >= 2 ? reference.shape[0] : 1
        let topK = min(5, k)
        for row in 0..<rowCount {
            let base = row * k
            let refTop = argmax(r, base, k)
            let candTop = argmax(c, base, k)
            rows += 1
            if refTop == candTop {
                top1Hits += 1
                var refNext = -Double.infinity, candNext = -Double.infinity
                for j in 0..<k where j != refTop { refNext = max(refNext, r[base + j]); candNext = max(candNext, c[base + j]) }
                if c[base + refTop] - candNext >= 0.5 * (r[base + refTop] - refNext) { marginHits += 1 }
            } else if !labels.isEmpty {
                let from = label(refTop), to = label(candTop)
                if from != to { flipCounts[FlipKey(reference: from, candidate: to), default: 0] += 1 }
            }
            if rank(of: refTop, in: c, base, k) < topK { topKHits += 1 }
            klSum += divergence(r, c, base, k)
        }
    }

    /// The metrics of everything added so far. With no inputs at all the
    /// cosines are 0 (nothing agreed), the SNRs nil and the top-k metrics nil.
    public func result() -> OutputMetrics {
        let scores = allScoreVectors && classes != nil && rows > 0
        var flips: [LabelFlip] = []
        if scores {
            flips = flipCounts.map { LabelFlip(reference: $0.key.reference, candidate: $0.key.candidate, count: $0.value) }
            flips.sort { a, b in
                if a.count != b.count { return a.count > b.count }
                if a.reference != b.reference { return a.reference < b.reference }
                return a.candidate < b.candidate
            }
            if flips.count > maxReportedFlips { flips = Array(flips.prefix(maxReportedFlips)) }
        }
        let mse = elements > 0 ? errorEnergy / Double(elements) : 0
        return OutputMetrics(
            name: name,
            inputs: inputs,
            classes: scores ? classes : nil,
            top1Agreement: scores ? 100 * Double(top1Hits) / Double(rows) : nil,
            top5Agreement: scores ? 100 * Double(topKHits) / Double(rows) : nil,
            meanCosine: inputs > 0 ? cosineSum / Double(inputs) : 0,
            minCosine: inputs > 0 ? cosineMin : 0,
            snrDB: decibels(referenceEnergy, errorEnergy),
            psnrDB: mse == 0 ? nil : decibels(peak * peak, mse),
            maxAbsError: maxAbs,
            flips: flips,
            top1WithMargin: scores ? 100 * Double(marginHits) / Double(rows) : nil,
            meanKL: scores ? klSum / Double(rows) : nil
        )
    }

    private func label(_ index: Int) -> String {
        index < labels.count ? labels[index] : "#\(index)"
    }
}

/// Signal-to-quantization-noise ratio in dB: 10·log10(Σ ref² / Σ (ref − approx)²).
/// Nil when the error is zero (identical, infinite SQNR); -inf when the
/// reference is all zeros but the approximation is not. If the lengths differ,
/// the elements one side lacks are taken as 0.
public func sqnrDB(reference: [Float], approximation: [Float]) -> Double? {
    var signal = 0.0, noise = 0.0
    for i in 0..<max(reference.count, approximation.count) {
        let a = i < reference.count ? Double(reference[i]) : 0
        let b = i < approximation.count ? Double(approximation[i]) : 0
        signal += a * a
        noise += (a - b) * (a - b)
    }
    return decibels(signal, noise)
}

// MARK: - Helpers

/// The class count when `shape` is a score vector (see the conventions above), else nil.
func scoreVectorClasses(_ shape: [Int]) -> Int? {
    if shape.count == 1 { return shape[0] >= 2 ? shape[0] : nil }
    guard shape.count >= 2 else { return nil }
    // After the leading (batch) axis, exactly one axis holds the classes; the others are 1
    // ([N, C], [N, 1, C], and the [N, C, 1, 1] of convolutional classifiers).
    let inner = shape.dropFirst().filter { $0 != 1 }
    guard inner.count == 1, let k = inner.first, k >= 2 else { return nil }
    return k
}

/// 10·log10(signal / noise); nil when noise is 0.
func decibels(_ signal: Double, _ noise: Double) -> Double? {
    if noise == 0 { return nil }
    if noise.isNaN || signal.isNaN { return .nan }
    if signal == 0 { return -.infinity }
    return 10 * log10(signal / noise)
}

func cosineSimilarity(dot: Double, normSquaredA: Double, normSquaredB: Double) -> Double {
    if normSquaredA == 0 && normSquaredB == 0 { return 1 }
    if normSquaredA == 0 || normSquaredB == 0 { return 0 }
    let c = dot / (normSquaredA.squareRoot() * normSquaredB.squareRoot())
    if c.isNaN { return c }
    return min(1, max(-1, c))
}

/// True when element (x, i) ranks above (y, j): larger value first, NaN last,
/// ties broken towards the lower index.
@inline(__always)
func ranksAbove(_ x: Double, _ i: Int, _ y: Double, _ j: Int) -> Bool {
    switch (x.isNaN, y.isNaN) {
    case (true, true): return i < j
    case (true, false): return false
    case (false, true): return true
    case (false, false): return x != y ? x > y : i < j
    }
}

/// Index (0..<count) of the top element of `v[base ..< base + count]`.
func argmax(_ v: [Double], _ base: Int, _ count: Int) -> Int {
    var best = 0
    for i in 1..<max(count, 1) where ranksAbove(v[base + i], i, v[base + best], best) { best = i }
    return best
}

/// KL(p ‖ q) in nats of two score rows, each a distribution as it is (non-negative, summing to 1
/// within 10⁻³) or through a softmax; a finite number (probabilities floored at 10⁻¹²).
func divergence(_ r: [Double], _ c: [Double], _ base: Int, _ count: Int) -> Double {
    func distribution(_ v: [Double]) -> [Double] {
        let row = Array(v[base..<(base + count)])
        let total = row.reduce(0, +)
        if row.allSatisfy({ $0 >= 0 && $0.isFinite }), abs(total - 1) <= 1e-3 { return row.map { $0 / total } }
        let top = row.max() ?? 0
        let e = row.map { $0.isFinite ? Foundation.exp($0 - top) : 0 }
        let s = e.reduce(0, +)
        return s > 0 ? e.map { $0 / s } : row.map { _ in 1 / Double(count) }
    }
    let p = distribution(r), q = distribution(c)
    var kl = 0.0
    for i in 0..<count where p[i] > 0 { kl += p[i] * Foundation.log(max(p[i], 1e-12) / max(q[i], 1e-12)) }
    return kl.isFinite ? max(kl, 0) : 0
}

/// How many elements of `v[base ..< base + count]` rank above element `index`
/// (0 means it is the top one).
func rank(of index: Int, in v: [Double], _ base: Int, _ count: Int) -> Int {
    let x = v[base + index]
    var above = 0
    for j in 0..<count where j != index && ranksAbove(v[base + j], j, x, index) { above += 1 }
    return above
}
