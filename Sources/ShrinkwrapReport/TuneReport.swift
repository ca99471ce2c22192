import Foundation

/// What `shrinkwrap tune` chose and measured: the target, the result on the validation data, each
/// weight's choice with the measured sensitivity of every candidate, and the size / agreement path.
/// No timings: the same inputs and options give the same bytes.
public struct TuneReport: Codable, Sendable, Equatable {
    public static let currentSchema = "shrinkwrap.tune/1"

    public var schema = TuneReport.currentSchema
    public var tool: String
    public var model: ModelInfo
    public var validation: DataInfo
    /// The data the settings were chosen on; nil when none was given and validation served (the report says so).
    public var calibration: DataInfo?
    public var options: [String: String]
    /// Top-1 agreement (percent) the result must keep on validation.
    public var target: Double
    public var maxBitsPerWeight: Double?
    /// Whether the result keeps the target (on validation, and within the bits cap).
    public var met: Bool
    public var reference: SizeInfo
    public var result: SizeInfo
    /// The result against the original on the validation data.
    public var outputs: [OutputMetrics]
    /// Top-1 agreement on the calibration data (where the choice was made).
    public var calibrationTop1: Double?
    public var weights: [Weight]
    public var curve: [Point]

    public struct Weight: Codable, Sendable, Equatable {
        public var name: String
        public var shape: [Int]
        public var elements: Int
        /// "float32" when left alone, else the rule ("linear 4-bit per-channel asymmetric gptq").
        public var choice: String
        public var bytesBefore: Int
        public var bytesAfter: Int
        public var settings: [Setting]
        public init(name: String, shape: [Int], elements: Int, choice: String, bytesBefore: Int, bytesAfter: Int, settings: [Setting]) {
            self.name = name; self.shape = shape; self.elements = elements; self.choice = choice
            self.bytesBefore = bytesBefore; self.bytesAfter = bytesAfter; self.settings = settings
        }
    }

    /// One candidate on one weight, the rest of the model float32, on the sensitivity inputs.
    public struct Setting: Codable, Sendable, Equatable {
        public var candidate: String
        public var bytes: Int
        /// Output error energy over output energy (all outputs).
        public var noise: Double
        /// Top-1 changes of the first output.
        public var flips: Int
        public var psnrDB: Double?
        /// Mean KL(original ‖ compressed) of the first output's scores, in nats.
        public var kl: Double?
        public var chosen: Bool
        public init(candidate: String, bytes: Int, noise: Double, flips: Int, psnrDB: Double?, kl: Double? = nil, chosen: Bool) {
            self.candidate = candidate; self.bytes = bytes; self.noise = noise; self.flips = flips; self.psnrDB = psnrDB; self.kl = kl
            self.chosen = chosen
        }
    }

    /// A point of the path from float32 to the smallest settings, measured on validation.
    public struct Point: Codable, Sendable, Equatable {
        public var weightBytes: Int
        public var bitsPerWeight: Double
        /// The sum of the weights' measured noise (the path's estimate).
        public var predictedNoise: Double
        public var validationTop1: Double?
        public var validationPSNR: Double?
        /// Top-1 agreement on calibration counting a kept prediction only when at least half the
        /// reference's margin is left (`OutputMetrics.top1WithMargin`): what the search compares with
        /// the target. Measured only where the search probed.
        public var calibrationTop1WithMargin: Double?
        public var chosen: Bool
        public init(weightBytes: Int, bitsPerWeight: Double, predictedNoise: Double, validationTop1: Double?, validationPSNR: Double?,
                    calibrationTop1WithMargin: Double?, chosen: Bool) {
            self.weightBytes = weightBytes; self.bitsPerWeight = bitsPerWeight; self.predictedNoise = predictedNoise
            self.validationTop1 = validationTop1; self.validationPSNR = validationPSNR; self.calibrationTop1WithMargin = calibrationTop1WithMargin; self.chosen = chosen
        }
    }

    public init(tool: String, model: ModelInfo, validation: DataInfo, calibration: DataInfo?, options: [String: String], target: Double,
                maxBitsPerWeight: Double?, met: Bool, reference: SizeInfo, result: SizeInfo, outputs: [OutputMetrics], calibrationTop1: Double?,
                weights: [Weight], curve: [Point]) {
        self.tool = tool; self.model = model; self.validation = validation; self.calibration = calibration; self.options = options
        self.target = target; self.maxBitsPerWeight = maxBitsPerWeight; self.met = met; self.reference = reference; self.result = result
        self.outputs = outputs; self.calibrationTop1 = calibrationTop1; self.weights = weights; self.curve = curve
    }

    /// The line every format carries when the settings were chosen on the validation data itself.
    public static let sameDataWarning = "NOTE: no --calibration was given: the settings were chosen on the validation data, so its agreement is not an independent measurement"
}

/// Renders a `TuneReport` (Markdown, JSON, HTML with the path plotted; CSV: the path).
public enum TuneRenderer {
    public static func render(_ r: TuneReport, as format: ReportFormat) -> String {
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let n = SweepRenderer.nonFinite
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: n.positive, negativeInfinity: n.negative, nan: n.nan)
            return ((try? encoder.encode(r)).flatMap { String(data: $0, encoding: .utf8) } ?? "{}") + "\n"
        case .markdown: return SweepRenderer.markdown(blocks: blocks(r))
        case .html: return SweepRenderer.html(blocks: blocks(r), title: "Shrinkwrap tune report: \(r.model.file)")
        case .csv:
            var lines = ["weight_bytes,bits_per_weight,predicted_noise,validation_top1,validation_psnr_db,calibration_top1,chosen"]
            for p in r.curve {
                lines.append([String(p.weightBytes), fmt(p.bitsPerWeight, "%.4f"), fmt(p.predictedNoise, "%.6g"),
                              p.validationTop1.map { fmt($0, "%.4f") } ?? "", p.validationPSNR.map { fmt($0, "%.4f") } ?? "",
                              p.calibrationTop1WithMargin.map { fmt($0, "%.4f") } ?? "", p.chosen ? "1" : "0"].joined(separator: ","))
            }
            return lines.joined(separator: "\n") + "\n"
        }
    }

    static func blocks(_ r: TuneReport) -> [Block] {
        func pct(_ v: Double?) -> String { v.map { fmt($0, "%.2f") } ?? emptyCell }
        func bpw(_ s: SizeInfo) -> Double { Double(8 * s.weightBytes) / Double(max(s.weightCount, 1)) }
        var out: [Block] = [.heading(level: 1, [.text("Shrinkwrap tune report")])]
        if r.validation.random || r.calibration?.random == true { out.append(.warning(SweepReport.randomDataWarning)) }
        if r.calibration == nil { out.append(.warning(TuneReport.sameDataWarning)) }
        let top1 = r.outputs.first?.top1Agreement
        out.append(.paragraph([.strong(r.met ? "Target met" : "Target NOT met"),
                               .text(String(format: ": top-1 agreement %@%% on validation (target %@%%), %@ weight bytes (%.2f bits per weight) against %@ (%.1f%% smaller).",
                                            pct(top1), pct(r.target), "\(r.result.weightBytes)", bpw(r.result), "\(r.reference.weightBytes)",
                                            100 * (1 - Double(r.result.weightBytes) / Double(max(r.reference.weightBytes, 1)))))]))
        var facts: [Inline] = [
            [.text("Model: "), .code(r.model.file), .text(" (\(r.model.format)), sha256 "), .code(r.model.sha256)],
            [.text("Validation: \(r.validation.description), sha256 "), .code(r.validation.sha256)],
        ]
        if let c = r.calibration { facts.append([.text("Calibration (where the settings were chosen): \(c.description), sha256 "), .code(c.sha256)]) }
        if let c = r.calibrationTop1 { facts.append([.text("Top-1 agreement on the calibration data: \(pct(c))%")]) }
        if let cap = r.maxBitsPerWeight { facts.append([.text("Bits-per-weight cap: \(fmt(cap, "%.2f"))")]) }
        var optionSpans: Inline = [.text("Options: ")]
        for (k, (key, value)) in r.options.sorted(by: { $0.key < $1.key }).enumerated() {
            if k > 0 { optionSpans.append(.text(", ")) }
            optionSpans.append(.code("\(key)=\(value)"))
        }
        facts.append(optionSpans)
        facts.append([.text("Tool: \(r.tool), schema "), .code(r.schema)])
        out.append(.list(facts))

        out.append(.heading(level: 2, [.text("Size against agreement (validation)")]))
        let points = r.curve.map { p in
            PlotPoint(bits: Int(p.bitsPerWeight.rounded()), reduction: 100 * (1 - Double(p.weightBytes) / Double(max(r.reference.weightBytes, 1))),
                      match: p.validationTop1 ?? 0, isCosine: false)
        }
        out.append(.plot(Plot(series: [PlotSeries(mode: "tuned path", points: points)], yLabel: "top-1 agreement on validation %")))
        out.append(.table(Table(
            headers: ["weight bytes", "bits/weight", "predicted noise", "validation top-1 %", "validation PSNR dB", "calibration top-1 with margin %", "chosen"],
            numeric: [true, true, true, true, true, true, false],
            rows: r.curve.map { p in
                [[.text("\(p.weightBytes)")], [.text(fmt(p.bitsPerWeight, "%.2f"))], [.text(fmt(p.predictedNoise, "%.3g"))],
                 [.text(pct(p.validationTop1))], [.text(p.validationPSNR.map { fmt($0, "%.2f") } ?? emptyCell)],
                 [.text(pct(p.calibrationTop1WithMargin))], [.text(p.chosen ? "◀ chosen" : "")]]
            })))
        out.append(.paragraph([.text("Each point compresses a few more weights further, taking the move with the least measured output error per byte saved; calibration top-1 with margin (a prediction counts as kept only with at least half its original margin over the runner-up) is what the search holds to the target, shown where it measured it.")]))

        out.append(.heading(level: 2, [.text("Each weight's choice")]))
        out.append(.table(Table(
            headers: ["weight", "shape", "choice", "bytes before", "bytes after"],
            numeric: [false, false, false, true, true],
            rows: r.weights.map { w in
                [[.code(w.name)], [.text("[" + w.shape.map(String.init).joined(separator: ",") + "]")], [.text(w.choice)],
                 [.text("\(w.bytesBefore)")], [.text("\(w.bytesAfter)")]]
            })))
        out.append(.heading(level: 2, [.text("Measured sensitivity")]))
        out.append(.paragraph([.text("One weight compressed, the rest float32, on the calibration inputs used for sensitivity: output error energy over output energy (noise, what the path ranks by), top-1 flips and mean KL divergence of the first output's scores, PSNR.")]))
        var rows: [[Inline]] = []
        for w in r.weights {
            for s in w.settings {
                rows.append([[.code(w.name)], [.text(s.candidate + (s.chosen ? " ◀" : ""))], [.text("\(s.bytes)")], [.text(fmt(s.noise, "%.3g"))],
                             [.text("\(s.flips)")], [.text(s.kl.map { fmt($0, "%.3g") } ?? emptyCell)],
                             [.text(s.psnrDB.map { fmt($0, "%.2f") } ?? "∞")]])
            }
        }
        out.append(.table(Table(headers: ["weight", "candidate", "bytes", "noise", "flips", "KL nats", "PSNR dB"],
                                numeric: [false, false, true, true, true, true, true], rows: rows)))
        return out
    }
}
