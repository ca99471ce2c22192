@testable import ShrinkwrapCompression
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

/// The data-aware methods (weighted grids, GPTQ) on synthetic weights and inputs whose statistics
/// are computed here: each method must lower the error it is built to lower, stay on the codec's
/// grid, and fall back loudly without statistics.
final class DataAwareTests: XCTestCase {
    /// A weight [rows, columns] and the statistics of `count` correlated inputs (x = A·z, a few
    /// columns much louder than the rest, as real activations are).
    func problem(rows: Int, columns: Int, count: Int = 400, seed: UInt64 = 7) -> (WeightInput, WeightStatistics, [[Double]]) {
        var rng = SplitMix(seed: seed)
        let values = (0..<(rows * columns)).map { _ in Float(rng.normal() * 0.1) }
        var mix = [Double](repeating: 0, count: columns * columns)
        for i in 0..<columns { for j in 0..<columns { mix[i * columns + j] = (i == j ? 1 : 0.35 * rng.normal()) } }
        let loud = Set([1, columns / 2, columns - 2])
        var xs: [[Double]] = []
        for _ in 0..<count {
            let z = (0..<columns).map { _ in rng.normal() }
            var x = (0..<columns).map { i in (0..<columns).reduce(0.0) { $0 + mix[i * columns + $1] * z[$1] } }
            for k in loud { x[k] *= 8 }
            xs.append(x)
        }
        var mean = [Double](repeating: 0, count: columns), square = mean
        var moment = [Double](repeating: 0, count: columns * columns)
        for x in xs {
            for i in 0..<columns {
                mean[i] += x[i]; square[i] += x[i] * x[i]
                for j in 0..<columns { moment[i * columns + j] += x[i] * x[j] }
            }
        }
        let n = Double(count)
        let stats = WeightStatistics(rows: rows, columns: columns, groups: 1, count: count, mean: mean.map { $0 / n },
                                     meanSquare: square.map { $0 / n }, secondMoment: moment.map { $0 / n })
        return (WeightInput(name: "w", values: values, shape: [rows, columns], outputAxis: 0, inputAxis: 1, statistics: stats), stats, xs)
    }

    /// Σ over inputs and rows of (x · (w − ŵ))²: the layer's output error on the inputs.
    func outputError(_ w: WeightInput, _ decoded: [Float], _ xs: [[Double]]) -> Double {
        let rows = w.shape[0], columns = w.shape[1]
        var e = 0.0
        for x in xs {
            for r in 0..<rows {
                var d = 0.0
                for k in 0..<columns { d += x[k] * Double(w.values[r * columns + k] - decoded[r * columns + k]) }
                e += d * d
            }
        }
        return e
    }

    func encode(_ w: WeightInput, _ mode: String, bits: Int, granularity: Granularity? = nil, method: CompressionMethod) throws -> CodecResult {
        let o = try WeightCodecs.options(mode: mode, CodecRequest(bits: bits, granularity: granularity, method: method), origin: .commandLine)
        return try WeightCodecs.encode(w, with: try WeightCodecs.codec(named: mode), o)
    }

    func decoded(_ r: CodecResult) throws -> [Float] { try XCTUnwrap(r.encoding.decoded().floats) }

    func testGPTQLowersTheLayerOutputErrorForEveryGrid() throws {
        let (w, _, xs) = problem(rows: 24, columns: 40)
        for (mode, g) in [("linear", Granularity.perChannel), ("linear", .perBlock(8)), ("linear-lut", .perTensor), ("kmeans-lut", .perTensor),
                          ("kmeans-lut", .perGroupedChannel(4))] {
            let nearest = try outputError(w, decoded(encode(w, mode, bits: 3, granularity: g, method: .nearest)), xs)
            let gptqResult = try encode(w, mode, bits: 3, granularity: g, method: .gptq)
            let gptq = try outputError(w, decoded(gptqResult), xs)
            XCTAssertLessThan(gptq, 0.7 * nearest, "\(mode) \(g): gptq \(gptq) vs nearest \(nearest)")
            XCTAssertTrue(gptqResult.notes.contains { $0.hasPrefix("gptq: 40 input columns, 400 calibration vectors") }, "\(gptqResult.notes)")
        }
    }

    func testWeightedGridNeverRaisesTheWeightedError() throws {
        let (w, stats, _) = problem(rows: 16, columns: 32, seed: 11)
        let importance = stats.importance(w)
        func weightedError(_ d: [Float]) -> Double {
            zip(zip(w.values, d), importance).reduce(0) { s, p in s + Double(p.1) * pow(Double(p.0.0 - p.0.1), 2) }
        }
        for (mode, g, symmetric) in [("linear", Granularity.perChannel, false), ("linear", .perChannel, true), ("linear", .perTensor, false),
                                     ("linear-lut", .perChannel, false), ("kmeans-lut", .perTensor, false)] {
            for bits in [2, 4] {
                var request = CodecRequest(bits: bits, granularity: g, method: .nearest)
                if symmetric { request.settings[LinearCodec.symmetric.key] = .flag(true) }
                let codec = try WeightCodecs.codec(named: mode)
                let plain = try WeightCodecs.encode(w, with: codec, WeightCodecs.options(mode: mode, request, origin: .commandLine))
                request.method = .weighted
                let fitted = try WeightCodecs.encode(w, with: codec, WeightCodecs.options(mode: mode, request, origin: .commandLine))
                XCTAssertLessThanOrEqual(weightedError(try decoded(fitted)), weightedError(try decoded(plain)) * (1 + 1e-9),
                                         "\(mode) \(g) \(bits)-bit symmetric \(symmetric)")
                XCTAssertTrue(fitted.notes.first?.hasPrefix("weighted:") ?? false, "\(fitted.notes)")
            }
        }
    }

    func testWithoutStatisticsTheMethodSaysSoAndRoundsToNearest() throws {
        var (w, _, _) = problem(rows: 8, columns: 16)
        w.statistics = nil
        for mode in ["linear", "kmeans-lut"] {
            let plain = try encode(w, mode, bits: 4, method: .nearest)
            let asked = try encode(w, mode, bits: 4, method: .gptq)
            XCTAssertEqual(asked.encoding, plain.encoding, mode)
            XCTAssertEqual(asked.notes, ["gptq: no calibration statistics for this weight; rounded to nearest"], mode)
        }
        var wrong = w
        wrong.statistics = WeightStatistics(rows: 8, columns: 15, groups: 1, count: 1, mean: [Double](repeating: 0, count: 15),
                                            meanSquare: [Double](repeating: 1, count: 15))
        XCTAssertEqual(try encode(wrong, "linear", bits: 4, method: .weighted).notes,
                       ["weighted: statistics for 8 × 15, weight is 8 × 16; rounded to nearest"])
    }

    func testMethodsACodecDoesNotOfferAreRefused() {
        XCTAssertEqual(errorText { _ = try WeightCodecs.options(mode: "fp16", CodecRequest(method: .gptq), origin: .commandLine) },
                       "(command line): bad compression plan: --mode fp16 offers --method nearest, not gptq")
        XCTAssertEqual(errorText { _ = try WeightCodecs.options(mode: "custom-lut", CodecRequest(method: .weighted, settings: ["lut": .numbers([0, 1])]),
                                                               origin: .commandLine) },
                       "(command line): bad compression plan: --mode custom-lut offers --method nearest, gptq, not weighted")
        for codec in WeightCodecs.all { XCTAssertEqual(codec.methods.first, .nearest, codec.mode) }
    }

    func testInverseUpperFactorAndDeadColumns() throws {
        let (_, stats, _) = problem(rows: 4, columns: 12, count: 100, seed: 3)
        guard let h = stats.secondMoment else { return XCTFail("no moment") }
        let n = 12
        let perm = Array((0..<n).reversed())
        let u = try XCTUnwrap(GPTQ.inverseUpperFactor(h, perm: perm, n: n, damp: 0))
        // Uᵀ U · H_p = I.
        for i in 0..<n {
            for j in 0..<n {
                var s = 0.0
                for k in 0..<n {
                    var inv = 0.0
                    for t in 0..<n { inv += u[t * n + i] * u[t * n + k] }
                    s += inv * h[perm[k] * n + perm[j]]
                }
                XCTAssertEqual(s, i == j ? 1 : 0, accuracy: 1e-8)
            }
            for j in 0..<i { XCTAssertEqual(u[i * n + j], 0) }
        }
        XCTAssertNil(GPTQ.inverseUpperFactor([Double](repeating: 1, count: 4), perm: [0, 1], n: 2, damp: 0), "singular")
        // A column no input reaches: rounded plainly, counted in the note, the others still compensated.
        var (w, s2, xs) = problem(rows: 6, columns: 10)
        for k in 0..<10 { s2.secondMoment?[3 * 10 + k] = 0; s2.secondMoment?[k * 10 + 3] = 0 }
        s2.meanSquare[3] = 0
        w.statistics = s2
        let r = try encode(w, "linear", bits: 3, method: .gptq)
        XCTAssertTrue(r.notes.last?.contains("1 column(s) never reached") ?? false, "\(r.notes)")
        XCTAssertLessThan(outputError(w, try decoded(r), xs), outputError(w, try decoded(encode(w, "linear", bits: 3, method: .nearest)), xs))
    }

    func testWeightMatrixViews() {
        // Conv [M, C, kh, kw]: rows M, columns (c, kh, kw) contiguous; MatMul [K, N]: rows N, columns K strided.
        let conv = WeightMatrix(shape: [4, 3, 2, 2], outputAxis: 0)
        XCTAssertEqual(conv?.rows, 4); XCTAssertEqual(conv?.columns, 12)
        XCTAssertEqual(conv?.index(2, 5), 2 * 12 + 5)
        let mm = WeightMatrix(shape: [5, 3], outputAxis: 1)
        XCTAssertEqual(mm?.rows, 3); XCTAssertEqual(mm?.columns, 5)
        XCTAssertEqual(mm?.index(1, 4), 4 * 3 + 1)
        for m in [conv, mm, WeightMatrix(shape: [2, 3, 4], outputAxis: 1)].compactMap({ $0 }) {
            for i in 0..<(m.rows * m.columns) {
                let (r, k) = m.position(i)
                XCTAssertEqual(m.index(r, k), i)
            }
        }
        XCTAssertNil(WeightMatrix(shape: [0, 3], outputAxis: 0))
    }

    func testPlanFilesCarryMethodsAndTheCalibrationHash() throws {
        let dir = try makeTempDir("plan-json")
        defer { try? FileManager.default.removeItem(at: dir) }
        var plan = CompressionPlan()
        plan.byName["a"] = .compress(CompressionRule(mode: "linear", options: CodecOptions(bits: 4, granularity: .perChannel, symmetric: true, method: .gptq)))
        plan.byName["b \"quoted\""] = .skip
        plan.byOpType["MatMul"] = .compress(CompressionRule(mode: "kmeans-lut", options: CodecOptions(bits: 3, granularity: .perGroupedChannel(8), method: .weighted)))
        plan.global = .compress(CompressionRule(mode: "fp16", options: CodecOptions(granularity: .perTensor)))
        plan.minElements = 100
        plan.calibrationSHA256 = String(repeating: "ab", count: 32)
        let file = dir.appendingPathComponent("plan.json")
        try Data(plan.json.utf8).write(to: file)
        var back = try CompressionPlan.load(file.path)
        back.global = back.global.map { c in
            guard case .compress(var r) = c else { return c }
            r.options.bits = 8  // fp16 has no bits in the file; the loader leaves the default
            return .compress(r)
        }
        XCTAssertEqual(back, plan)
        try Data(#"{"names": {"w": {"mode": "linear", "method": "magic"}}}"#.utf8).write(to: file)
        XCTAssertTrue(errorText { _ = try CompressionPlan.load(file.path) }.contains("unknown method 'magic' (expected nearest, weighted, gptq)"))
        try Data(#"{"calibration_sha256": "xyz"}"#.utf8).write(to: file)
        XCTAssertTrue(errorText { _ = try CompressionPlan.load(file.path) }.contains("calibration_sha256 must be 64 hex digits"))
    }
}

/// Bias correction: the shift added is exactly (W − Ŵ) · E[x], a Conv without bias gets one, and
/// a weight with no bias to take it says so.
final class BiasCorrectionTests: XCTestCase {
    func testShiftIsFoldedIntoTheBias() throws {
        var rng = SplitMix(seed: 17)
        let w = (0..<(6 * 4)).map { _ in Float(rng.normal()) }
        let mean = (0..<4).map { _ in rng.normal() }
        let stats = WeightStatistics(rows: 6, columns: 4, groups: 1, count: 10, mean: mean, meanSquare: mean.map { $0 * $0 + 1 })
        func graph(_ op: String, bias: Bool) -> Graph {
            var inputs = ["x", "w"]
            var constants = [Constant(name: "w", tensor: Tensor(w, shape: op == "Gemm" ? [6, 4] : [6, 4, 1, 1]))]
            if bias { inputs.append("b"); constants.append(Constant(name: "b", tensor: Tensor([Float](repeating: 0.5, count: 6), shape: [6]))) }
            let attributes: [String: Attribute] = op == "Gemm" ? ["transB": .int(1)] : [:]
            return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: nil)], outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                         nodes: [Node(name: "n", opType: op, inputs: inputs, outputs: ["y"], attributes: attributes)], constants: constants)
        }
        var plan = CompressionPlan(CompressionRule(mode: "linear", options: CodecOptions(bits: 2, granularity: .perChannel)), minElements: 0)
        plan.biasCorrection = true
        var g = graph("Gemm", bias: true)
        let log = try CompressWeights.run(&g, plan: plan, statistics: ["w": stats])
        let decoded = try XCTUnwrap(g.constant(named: "w")?.encoding.decoded().floats)
        let bias = try XCTUnwrap(g.constant(named: "b")?.encoding.decoded().floats)
        for r in 0..<6 {
            let shift = (0..<4).reduce(0.0) { $0 + Double(w[r * 4 + $1] - decoded[r * 4 + $1]) * mean[$1] }
            XCTAssertEqual(Double(bias[r]), 0.5 + shift, accuracy: 1e-6)
        }
        XCTAssertTrue(log.entries.first { $0.name == "w" }?.notes.last?.hasPrefix("bias correction: expected output shift") ?? false)
        // A Conv without bias is given one.
        var conv = graph("Conv", bias: false)
        var convStats = stats
        convStats.mean = mean
        let convLog = try CompressWeights.run(&conv, plan: plan, statistics: ["w": convStats])
        XCTAssertEqual(conv.nodes[0].inputs, ["x", "w", "w_bias_correction"])
        XCTAssertEqual(conv.constant(named: "w_bias_correction")?.encoding.shape, [6])
        XCTAssertEqual(convLog.entries.last?.skipped, "bias of Conv 'n' (made by bias correction)")
        // An fp16 layer's new bias is fp16 too (Core ML rejects layers that mix precisions).
        var half = graph("Conv", bias: false)
        var fp16 = CompressionPlan(CompressionRule(mode: "fp16", options: CodecOptions(granularity: .perTensor)), minElements: 0)
        fp16.biasCorrection = true
        _ = try CompressWeights.run(&half, plan: fp16, statistics: ["w": convStats])
        XCTAssertEqual(half.constant(named: "w_bias_correction")?.encoding.kind, half.constant(named: "w")?.encoding.kind)
        // Without statistics nothing changes.
        var plain = graph("Gemm", bias: true)
        _ = try CompressWeights.run(&plain, plan: plan)
        XCTAssertEqual(plain.constant(named: "b")?.encoding.decoded().floats, [Float](repeating: 0.5, count: 6))
    }
}
