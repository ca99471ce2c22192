import Foundation
import ShrinkwrapCompression
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapReport
import ShrinkwrapRuntime

/// One setting `tune` may give a weight: a mode, its bits, granularity and method.
public struct TuneCandidate: Sendable, Equatable {
    public var rule: CompressionRule

    /// `MODE[:BITS[:GRANULARITY[:METHOD]]]`, e.g. `kmeans-lut:4`, `linear:4:per-block:32:gptq`
    /// (a granularity with a size keeps its colon), `fp16`. The method defaults to the most
    /// data-aware one the mode offers (gptq, else weighted, else nearest).
    public init(parsing text: String) throws {
        var parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let mode = parts.removeFirst()
        let codec = try WeightCodecs.codec(named: mode)
        var request = CodecRequest()
        if let b = parts.first, codec.bitWidths != nil {
            guard let bits = Int(b) else { throw Tune.Error(description: "--candidates \(text): '\(b)' is not a bit width") }
            request.bits = bits
            parts.removeFirst()
        }
        if let method = parts.last.flatMap(CompressionMethod.init(rawValue:)) {
            request.method = method
            parts.removeLast()
        } else {
            request.method = [CompressionMethod.gptq, .weighted, .nearest].first { codec.methods.contains($0) }
        }
        if !parts.isEmpty { request.granularity = try Granularity(parsing: parts.joined(separator: ":")) }
        rule = CompressionRule(mode: mode, options: try WeightCodecs.options(mode: mode, request, origin: .commandLine))
    }

    public init(rule: CompressionRule) { self.rule = rule }

    /// "linear 4-bit per-channel asymmetric gptq".
    public var summary: String { rule.summary }

    /// The default ladder, from the codec table (`WeightCodec.tuneWidths`): fp16, linear 8 / 6 / 5 / 4 / 3
    /// per channel, k-means palettes of 5 / 4 / 3 / 2 bits per tensor.
    public static var defaults: [String] { WeightCodecs.tuneDefaults }
}

/// What `shrinkwrap tune` is asked for.
public struct TuneOptions: Sendable {
    /// Top-1 agreement (percent) of the first output the result must keep.
    public var minAgreement: Double = 99
    /// The most bits per weight (all float weights, tables and scales included) the result may take.
    public var maxBitsPerWeight: Double?
    public var candidates: [TuneCandidate] = []
    public var minElements: Int?
    public var threads: Int?
    /// Calibration inputs used per sensitivity run (the first ones).
    public var sensitivityInputs = 64
    /// The format the result is written in: candidates it cannot hold are dropped before any work.
    public var format: ModelFormat?
    public var exportOptions = ExportOptions()
    /// Points of the size / agreement path measured on the validation data for the report.
    public var curvePoints = 12
    /// Fold BatchNormalizations into their Convs first (`CompressionPlan.foldBatchNorm`; the plan says so).
    public var foldBatchNorm = true
    /// Correct each compressed Conv / Gemm's bias for its expected output shift (`CompressionPlan.biasCorrection`).
    public var biasCorrection = true

    public init() {}
}

/// `shrinkwrap tune`: per-weight settings that keep the agreement target at the fewest weight bytes.
///
/// 1. Calibration statistics (`Calibration.collect`) for the data-aware methods.
/// 2. Every candidate encodes every weight (one compress pass per candidate, each weight exactly
///    as a plan naming it would encode it).
/// 3. Sensitivity: for each weight and candidate, the model with only that weight compressed runs
///    over the first `sensitivityInputs` calibration inputs; the change of the outputs against the
///    original (noise-to-signal energy ratio, top-1 flips, PSNR) is that setting's cost.
/// 4. A path from float32 to the cheapest settings: each step moves the one weight whose move costs
///    the least output error per byte saved (over each weight's lower frontier of bytes vs error).
/// 5. The smallest point on the path whose model keeps the target on the calibration inputs (binary
///    search, each probe a full run), then that point as a plan (`CompressionPlan.byName`),
///    compressed once more through the plan — what `convert --plan` gives — and measured on the
///    validation inputs. Points along the path are measured on validation for the report's curve.
public enum Tune {
    public struct Error: UserFacingError { public let description: String }

    /// One weight's options: float32 first, then the candidates that apply to it.
    struct Weight {
        var name: String
        var shape: [Int]
        var elements: Int
        var bytes32: Int
        /// Per candidate (index into the candidate list): the encoding and its measured cost; nil where
        /// the candidate left the weight alone (too small, refused by the format).
        var options: [Option?]
    }

    struct Option {
        var encoding: WeightEncoding
        var bytes: Int
        var noise: Double = 0
        var flips = 0
        var psnr: Double?
        var kl: Double?
        var notes: [String]
        /// Constants the setting also changes (the node's bias, with bias correction).
        var companions: [Constant] = []
    }

    /// A point of the path: the candidate index per weight (nil: float32).
    struct Point {
        var choice: [Int?]
        var bytes: Int
        var predicted: Double
    }

    public struct Outcome {
        public var graph: Graph
        public var plan: CompressionPlan
        public var log: CompressionLog
        public var report: TuneReport
        public var met: Bool
    }

    public static func run(model path: String, graph reference: Graph, validation: InputSet, calibration given: InputSet?,
                           options o: TuneOptions, progress: SweepProgress? = nil) throws -> Outcome {
        let started = Date()
        // Candidates start from the folded graph; agreement is always against the model as given.
        var original = reference
        if o.foldBatchNorm {
            let (g, n) = reference.foldingBatchNormIntoConv()
            original = g
            if n > 0 { progress?("\(n) BatchNormalization(s) folded into their Conv(s) first") }
        }
        // With bias correction every Conv / Gemm gets an explicit bias, so a setting's correction is a constant.
        if o.biasCorrection { original = Self.withExplicitBiases(original) }
        let threads = max(1, o.threads ?? Interpreter.defaultThreads)
        let calibration = given ?? validation
        if given == nil { progress?("no --calibration: choosing on the validation data (the report says so)") }
        // What the output format cannot hold whatever the weights (shapes, ops): an error now, all of it.
        if let f = o.format {
            let found = f.conflicts(graph: original, plan: nil, options: o.exportOptions)
            if !found.isEmpty {
                throw Error(description: ".\(f.mainExtension) cannot hold this model (\(found.count) conflict\(found.count == 1 ? "" : "s")): \(found.joined(separator: "; "))")
            }
        }
        // Candidates the output format cannot hold: dropped now.
        var candidates: [TuneCandidate] = []
        for c in o.candidates {
            var plan = CompressionPlan(c.rule)
            if let m = o.minElements { plan.minElements = m }
            plan.foldBatchNorm = o.foldBatchNorm
            plan.biasCorrection = o.biasCorrection
            if let f = o.format, let why = f.conflicts(graph: original, plan: plan, options: o.exportOptions).first {
                progress?("candidate \(c.summary): dropped, .\(f.mainExtension) cannot hold it (\(why))")
                continue
            }
            candidates.append(c)
        }
        guard !candidates.isEmpty else { throw Error(description: "no candidate the output format can hold") }
        // The target is the first output's top-1 agreement: checked before any work.
        let calRunner = try AgreementRunner(reference: reference, inputs: calibration.samples, layerSamples: 0, threads: threads)
        guard try calRunner.compare(reference).outputs.first?.top1Agreement != nil else {
            throw Error(description: "tune needs a first output that is a score vector (its top-1 agreement is the target)")
        }
        let needsStats = o.biasCorrection || candidates.contains { $0.rule.options.method.needsCalibration }
        let needsMoment = candidates.contains { $0.rule.options.method == .gptq }
        var stats: [String: WeightStatistics] = [:]
        if needsStats {
            let t0 = Date()
            // From the model as given, as `convert --plan --calibration` computes them: the same bytes.
            stats = try Calibration.collect(reference, inputs: calibration.samples, secondMoment: needsMoment, threads: threads)
            progress?(String(format: "calibration statistics for %d weights from %d inputs in %.1f s", stats.count,
                             calibration.samples.count, Date().timeIntervalSince(t0)))
        }
        var weights = try encodeAll(original, candidates: candidates, options: o, stats: stats, threads: threads)
        guard !weights.isEmpty else { throw Error(description: "no weight to tune (every one is below --min-elements or refused)") }
        progress?(String(format: "%d weights × %d candidates encoded in %.1f s", weights.count, candidates.count, Date().timeIntervalSince(started)))

        let sensitivitySet = Array(calibration.samples.prefix(max(1, o.sensitivityInputs)))
        let sensitivityRunner = try AgreementRunner(reference: reference, inputs: sensitivitySet, layerSamples: 0, threads: 1)
        try measureSensitivity(&weights, original: original, runner: sensitivityRunner, threads: threads, progress: progress)
        let points = Self.path(weights)
        progress?("path of \(points.count) points from \(points.first?.bytes ?? 0) to \(points.last?.bytes ?? 0) weight bytes")

        let otherBytes = Sweep.size(original, fileBytes: nil).weightBytes - weights.reduce(0) { $0 + $1.bytes32 }
        let weightCount = Sweep.size(original, fileBytes: nil).weightCount
        var calAgreement: [Int: Double] = [:]
        func agreementOnCalibration(_ k: Int) throws -> Double {
            if let a = calAgreement[k] { return a }
            let a = try calRunner.compare(apply(points[k], weights, to: original)).outputs.first?.top1WithMargin ?? 0
            calAgreement[k] = a
            return a
        }
        // The smallest point keeping the target on the calibration data, held to a stricter bar than the
        // target itself: a prediction counts only with half its margin left, and only half the misses the
        // target allows are allowed (the data chose the settings, so it flatters them). The path's agreement
        // falls only roughly monotonically: points are probed galloping (1, 2, 4, … steps on) until one
        // fails, then halved between the last pass and that failure.
        let bar = o.minAgreement + (100 - o.minAgreement) / 2
        func passes(_ k: Int) throws -> Bool { try agreementOnCalibration(k) >= bar }
        let chosen = try lastPassing(points.count, passes)
        var withinCap = true
        if let cap = o.maxBitsPerWeight, let k = chosen, Double(8 * (points[k].bytes + otherBytes)) / Double(max(weightCount, 1)) > cap {
            progress?(String(format: "the smallest point keeping %.2f%% takes more than %.2f bits per weight", o.minAgreement, cap))
            withinCap = false
        }
        // Nothing keeps the target: the path's first point (the least compressed) is written, and measured.
        if chosen == nil { progress?("no point of the path keeps the target on the calibration data") }
        let pick = chosen ?? 0
        var plan = Self.plan(points[pick], weights, candidates: candidates, minElements: o.minElements)
        plan.foldBatchNorm = o.foldBatchNorm
        plan.biasCorrection = o.biasCorrection
        if plan.needsCalibration { plan.calibrationSHA256 = calibration.sha256 }
        var graph = reference
        let log = try Models.compress(&graph, plan: plan, threads: threads, for: o.format, options: o.exportOptions, statistics: stats)
        let valRunner = try AgreementRunner(reference: reference, inputs: validation.samples, layerSamples: 0, threads: threads)
        let final = try valRunner.compare(graph).outputs
        let valAgreement = final.first?.top1Agreement ?? 0
        let met = chosen != nil && withinCap && valAgreement >= o.minAgreement
        // The curve: evenly spaced points of the path, measured on the validation data.
        let step = max(1, (points.count - 1) / max(1, o.curvePoints - 1))
        var indices = Array(stride(from: 0, to: points.count, by: step))
        if indices.last != points.count - 1 { indices.append(points.count - 1) }
        if !indices.contains(pick) { indices.append(pick); indices.sort() }
        var curve: [TuneReport.Point] = []
        for k in indices {
            let outputs = k == pick ? final : try valRunner.compare(apply(points[k], weights, to: original)).outputs
            curve.append(TuneReport.Point(weightBytes: points[k].bytes + otherBytes,
                                          bitsPerWeight: Double(8 * (points[k].bytes + otherBytes)) / Double(max(weightCount, 1)),
                                          predictedNoise: points[k].predicted, validationTop1: outputs.first?.top1Agreement,
                                          validationPSNR: outputs.first?.psnrDB, calibrationTop1WithMargin: calAgreement[k], chosen: k == pick))
        }
        let calTop1 = try calRunner.compare(graph).outputs.first?.top1Agreement
        let report = try makeReport(model: path, graph: reference, points: points, weights: weights, candidates: candidates, chosen: pick,
                                    met: met, final: final, log: log, curve: curve, validation: validation, calibration: given,
                                    options: o, calibrationTop1: calTop1, compressed: graph)
        progress?(String(format: "tuned in %.1f s", Date().timeIntervalSince(started)))
        return Outcome(graph: graph, plan: plan, log: log, report: report, met: met)
    }

    /// The last of `count` points that passes, probed galloping from the first (1, 2, 4, … steps on)
    /// until one fails, then halved between the last pass and that failure; nil when the first fails.
    static func lastPassing(_ count: Int, _ passes: (Int) throws -> Bool) throws -> Int? {
        guard count > 0, try passes(0) else { return nil }
        var good = 0, stride = 1
        var bad: Int? = nil
        while good < count - 1 {
            let next = min(good + stride, count - 1)
            if try passes(next) { good = next; stride *= 2 } else { bad = next; break }
        }
        if var hi = bad {
            while hi - good > 1 {
                let mid = (good + hi) / 2
                if try passes(mid) { good = mid } else { hi = mid }
            }
        }
        return good
    }
}
