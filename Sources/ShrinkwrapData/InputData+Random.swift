import ShrinkwrapIR

// MARK: - Deterministic random inputs

extension InputData {
    /// Deterministic random inputs (same seed → same bytes on every machine):
    /// float inputs standard normal (SplitMix64 + Box–Muller, with a
    /// logarithm and sine/cosine computed here from IEEE basic operations
    /// only, so no platform math library is involved), integer inputs uniform
    /// in 0..<vocab, bool inputs fair coin flips. Symbolic and unknown
    /// dimensions become 1. One stream is drawn sample by sample, inputs in
    /// graph order, so the first k samples of a longer set equal a set of k.
    public static func random(count: Int, seed: UInt64, graph: Graph, vocab: Int = 2) throws -> InputSet {
        let inputs = graph.runtimeInputs
        guard !inputs.isEmpty else { throw Error("the model has no runtime inputs to feed data to") }
        guard count >= 1 else { throw Error("random inputs: sample count must be at least 1 (got \(count))") }
        guard vocab >= 1 else { throw Error("random inputs: vocabulary size must be at least 1 (got \(vocab))") }
        var plans: [(info: ValueInfo, shape: [Int], elements: Int, dtype: DType)] = []
        var perSample = 0
        for i in inputs {
            guard let dims = i.shape else {
                throw Error("input '\(i.name)' has unknown rank, so random data has no shape to take; give real data with --data")
            }
            let shape = dims.map { $0.value ?? 1 }
            guard let n = checkedElementCount(shape, limit: 1 << 28) else {
                throw Error("input '\(i.name)' shape \(shape) is too large for random data")
            }
            plans.append((i, shape, n, i.dtype ?? .float32))
            perSample += n
        }
        let (total, overflow) = perSample.multipliedReportingOverflow(by: count)
        guard !overflow, total <= 1 << 30 else {
            throw Error("random inputs: \(count) samples of \(perSample) elements are too many")
        }
        var rng = Normal(seed: seed)
        var samples: [[String: Tensor]] = []
        var sources: [String] = []
        samples.reserveCapacity(count)
        for k in 0..<count {
            var sample: [String: Tensor] = [:]
            for p in plans {
                let t: Tensor
                switch p.dtype {
                case .float32, .float64:
                    t = Tensor((0..<p.elements).map { _ in Float(rng.next()) }, shape: p.shape, dtype: p.dtype)
                case .float16:
                    t = Tensor((0..<p.elements).map { _ in Half.round(Float(rng.next())) }, shape: p.shape, dtype: .float16)
                case .bfloat16:
                    t = Tensor((0..<p.elements).map { _ in Half.float(fromBFloatBits: Half.bfloatBits(from: Float(rng.next()))) },
                               shape: p.shape, dtype: .bfloat16)
                case .bool:
                    t = Tensor(bools: (0..<p.elements).map { _ in rng.bits.next() >> 63 == 1 }, shape: p.shape)
                default:
                    t = Tensor(ints: (0..<p.elements).map { _ in Int64(rng.bits.next().multipliedFullWidth(by: UInt64(vocab)).high) },
                               shape: p.shape, dtype: p.dtype)
                }
                sample[p.info.name] = t
            }
            samples.append(sample)
            sources.append("random #\(k)")
        }
        let what = count == 1 ? "1 random sample" : "\(count) random samples"
        return InputSet(samples: samples, sources: sources, description: "\(what) (seed \(seed))", random: true)
    }
}

// MARK: - Deterministic normal numbers

/// Standard normal numbers by Box–Muller over SplitMix64 (`SeededGenerator`),
/// both values of each pair used. The logarithm, sine and cosine are computed here with
/// IEEE +, −, ×, ÷ and square root only (all correctly rounded), so the
/// values are bit-identical on every platform.
struct Normal {
    var bits: SeededGenerator
    var spare: Double?

    init(seed: UInt64) { bits = SeededGenerator(seed: seed) }

    mutating func next() -> Double {
        if let s = spare { spare = nil; return s }
        let u1 = Double((bits.next() >> 11) + 1) / 9_007_199_254_740_992  // (0, 1]
        let u2 = Double(bits.next() >> 11) / 9_007_199_254_740_992  // [0, 1)
        let r = (-2 * Normal.log(u1)).squareRoot()
        let (s, c) = Normal.sinCos2Pi(u2)
        spare = r * s
        return r * c
    }

    static let ln2 = 0.693_147_180_559_945_3

    /// Natural logarithm of a positive finite normal number.
    static func log(_ x: Double) -> Double {
        var e = Double(x.exponent)
        var m = x.significand  // [1, 2)
        if m > 1.414_213_562_373_095_1 { m /= 2; e += 1 }
        // ln m = 2 atanh(s), s = (m − 1)/(m + 1), |s| ≤ 0.172: odd series to s^31.
        let s = (m - 1) / (m + 1)
        let s2 = s * s
        var p = 0.0
        for c in logCoefficients.reversed() { p = p * s2 + c }
        return 2 * s * p + e * ln2
    }

    /// (sin 2πv, cos 2πv) for v in [0, 1).
    static func sinCos2Pi(_ v: Double) -> (Double, Double) {
        let t = v * 4  // exact
        let q = Int(t)  // quadrant 0…3
        var f = t - Double(q)  // exact, [0, 1)
        let swap = f > 0.5
        if swap { f = 1 - f }  // exact
        let x = f * (Double.pi / 2)  // [0, π/4]
        let x2 = x * x
        // Taylor series to x^19 / x^20: error below 1e-19 on [0, π/4].
        var sinP = 0.0, cosP = 0.0
        for c in sinCoefficients.reversed() { sinP = sinP * x2 + c }
        for c in cosCoefficients.reversed() { cosP = cosP * x2 + c }
        var sn = x * sinP, cs = cosP
        if swap { (sn, cs) = (cs, sn) }
        switch q {
        case 0: return (sn, cs)
        case 1: return (cs, -sn)
        case 2: return (-sn, -cs)
        default: return (-cs, sn)
        }
    }

    /// 1/(2k + 1) for k = 0…15.
    static let logCoefficients: [Double] = (0...15).map { 1 / Double(2 * $0 + 1) }
    /// (−1)^k / (2k + 1)! for k = 0…9 and (−1)^k / (2k)! for k = 0…10.
    static let sinCoefficients: [Double] = (0...9).map { sign($0) / factorial(2 * $0 + 1) }
    static let cosCoefficients: [Double] = (0...10).map { sign($0) / factorial(2 * $0) }

    private static func sign(_ k: Int) -> Double { k % 2 == 0 ? 1 : -1 }

    private static func factorial(_ n: Int) -> Double {
        var f = 1.0
        if n > 1 { for i in 2...n { f *= Double(i) } }
        return f
    }
}
