import Foundation
import ShrinkwrapCompression
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapReport
import ShrinkwrapRuntime

/// What `shrinkwrap sweep` varies and keeps.
public struct SweepOptions: Sendable {
    /// A fixed-width mode (fp16) runs once; the other modes once per width.
    public var modes = WeightCodecs.defaultSweepModes
    public var bits = [8, 4, 2, 1]
    public var granularity: String?
    /// Codec options (`--symmetric` …), each given to the variants whose codec takes it.
    public var codecSettings: [String: CodecSetting] = [:]
    public var minElements: Int?
    /// Write every variant here (as `outFormat`), and measure file sizes.
    public var outDir: String?
    /// Extension of the written variants (default: the model's own format when it can be written, else mlmodel).
    public var outFormat: String?
    /// Options for the exporter of `outFormat` (`--target`, `--precision`).
    public var exportOptions = ExportOptions()
    public var threads: Int?
    /// Inputs whose intermediate values feed the per-layer table.
    public var layerSamples = 4
    /// Inputs per candidate run past the layer samples (nil: `AgreementRunner`'s default; 1: one at a time).
    public var batch: Int?
    public var labels: [String] = []
    /// Methods each mode is tried with (those it offers; `nearest` for fixed-width modes).
    public var methods: [CompressionMethod] = [.nearest]
    /// Calibration inputs for the data-aware methods.
    public var calibration: [[String: Tensor]] = []
    /// Fold BatchNormalizations into their Convs first, in every variant (`CompressionPlan.foldBatchNorm`).
    public var foldBatchNorm = false
    /// Bias correction in every variant (`CompressionPlan.biasCorrection`; needs `calibration`).
    public var biasCorrection = false
    /// Write every variant's decoded compressed weights here (DIR/MODE-BITS/k.npy + manifest.json), for
    /// independent re-runs (Scripts/sweep_crosscheck.py).
    public var dumpWeightsDir: String?

    public init() {}
}

/// One report line of progress (variants done, inputs per second, ETA).
public typealias SweepProgress = @Sendable (String) -> Void

public enum Sweep {
    public struct Error: UserFacingError { public let description: String }

    /// The variants the options ask for, in report order.
    public static func variants(_ o: SweepOptions) throws -> [(mode: String, bits: Int, method: CompressionMethod)] {
        var out: [(String, Int, CompressionMethod)] = []
        let needs = o.methods.filter(\.needsCalibration)
        if !needs.isEmpty && o.calibration.isEmpty {
            throw Error(description: "--methods \(needs.map(\.rawValue).joined(separator: ",")) need --calibration DATA")
        }
        if o.biasCorrection && o.calibration.isEmpty { throw Error(description: "--bias-correction needs --calibration DATA") }
        for m in o.modes {
            let codec = try WeightCodecs.codec(named: m)
            let methods = o.methods.filter { codec.methods.contains($0) }
            if codec.bitWidths == nil {
                for method in methods.isEmpty ? [.nearest] : methods { out.append((m, codec.effectiveBits(0), method)) }
            } else {
                for b in o.bits {
                    guard codec.bitWidths?.contains(b) == true else { throw Error(description: "--bits \(b) is outside what \(m) takes") }
                    for method in methods { out.append((m, b, method)) }
                }
            }
        }
        guard !out.isEmpty else { throw Error(description: "no variants: give --modes and --bits") }
        return out
    }

    /// Builds every variant of the model at `path`, runs the reference once and each variant once over
    /// `inputs`, and returns the report (and writes the variants to `outDir` when asked).
    public static func run(model path: String, inputs: [[String: Tensor]], data: DataInfo, options o: SweepOptions,
                           progress: SweepProgress? = nil) throws -> SweepReport {
        let url = URL(fileURLWithPath: path)
        let fileData = try Models.sourceBytes(path)
        let fileSize = try Models.sourceSize(path)
        let graph = try Models.load(path)
        let plan = try variants(o)
        let started = Date()
        var stats: [String: WeightStatistics] = [:]
        if o.biasCorrection || plan.contains(where: { $0.method.needsCalibration }) {
            let t0 = Date()
            stats = try Calibration.collect(graph, inputs: o.calibration, secondMoment: plan.contains { $0.method == .gptq }, threads: o.threads)
            progress?(String(format: "calibration: statistics for %d weights from %d inputs in %.1f s", stats.count, o.calibration.count,
                             Date().timeIntervalSince(t0)))
        }
        let runner = try AgreementRunner(reference: graph, inputs: inputs, labels: o.labels.isEmpty ? graph.metadata.labels : o.labels,
                                         layerSamples: o.layerSamples, threads: o.threads, batch: o.batch)
        progress?(runner.batch > 1 ? "batching \(runner.batch) inputs per run (the probe gave every output bit for bit)"
                                   : "one input per run")
        progress?("reference: \(inputs.count) inputs in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        var outFormat: ModelFormat? = nil
        if let dir = o.outDir {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            // Core ML stores every mode and width; other formats only some (TFLite: fp16, 8-bit linear).
            let ext = o.outFormat ?? "mlmodel"
            guard let f = ModelFormats.writer(forExtension: ext) else {
                throw Error(description: "cannot write .\(ext) variants (writable: \(ModelFormats.writableExtensions))")
            }
            outFormat = f
        }
        // Which variants the format cannot hold, asked before compressing: listed once, measured, not written.
        var unwritable: [String: [String]] = [:]
        if let f = outFormat {
            for v in plan {
                let found = f.conflicts(graph: graph, plan: try settings(v, o).plan(), options: o.exportOptions)
                if !found.isEmpty { unwritable[variantTag(v)] = found }
            }
            if !unwritable.isEmpty {
                progress?("not written as .\(f.mainExtension) (measured only): " + unwritable.keys.sorted { a, b in
                    plan.firstIndex { variantTag($0) == a } ?? 0 < plan.firstIndex { variantTag($0) == b } ?? 0
                }.map { "\($0) (\(unwritable[$0]?.first ?? ""))" }.joined(separator: "; "))
            }
        }
        // Every variant built first (compression uses every thread), written when asked.
        var built: [(graph: Graph, log: CompressionLog, fileBytes: Int?, file: String?)] = []
        for v in plan {
            var g = graph
            let log = try Models.compress(&g, plan: try settings(v, o).plan(), threads: o.threads, for: outFormat, options: o.exportOptions,
                                          statistics: v.method.needsCalibration || o.biasCorrection ? stats : [:])
            var fileBytes: Int? = nil
            var file: String? = nil
            if let dir = o.outDir, let f = outFormat, let export = f.exporter, unwritable[variantTag(v)] == nil {
                let base = url.deletingPathExtension().lastPathComponent
                let name = "\(base).\(variantTag(v)).\(f.extensions[0])"
                let out = URL(fileURLWithPath: dir).appendingPathComponent(name)
                do {
                    let model = try export(g, o.exportOptions)
                    try AtomicFile.write(model, to: out, protecting: [url])
                    fileBytes = model.byteCount
                    file = (dir as NSString).appendingPathComponent(name)  // as given: reports do not depend on the working folder
                } catch let e as ExportError {
                    // A variant the format cannot hold (e.g. a LUT in TFLite): measured, not written.
                    progress?("variant \(variantTag(v)): not written as .\(f.extensions[0]): \(e.description)")
                }
            }
            if let dump = o.dumpWeightsDir { try dumpWeights(g, to: URL(fileURLWithPath: dump).appendingPathComponent(variantTag(v))) }
            built.append((g, log, fileBytes, file))
        }
        progress?(String(format: "%d variants compressed in %.1f s", plan.count, Date().timeIntervalSince(started)))
        let measured = try compareAll(built.map(\.graph), runner: runner, threads: o.threads ?? Interpreter.defaultThreads,
                                      weightBytes: size(graph, fileBytes: nil).weightBytes) { k, seconds in
            let v = plan[k]
            progress?(String(format: "variant %d/%d %@ %d: %.1f inputs/s", k + 1, plan.count, v.mode, v.bits,
                             Double(inputs.count) / max(seconds, 1e-9)))
        }
        var result: [Variant] = []
        for (k, v) in plan.enumerated() {
            let codec = try WeightCodecs.codec(named: v.mode)
            let b = built[k]
            let granularity = o.granularity ?? WeightCodecs.defaultGranularity(codec).description
            result.append(Variant(mode: v.mode, bits: v.bits, granularity: granularity, method: v.method == .nearest ? nil : v.method.rawValue,
                                  size: size(b.graph, fileBytes: b.fileBytes),
                                  outputs: measured[k].outputs, layers: measured[k].layers,
                                  skipped: b.log.entries.compactMap { e in e.skipped.map { SkippedWeight(name: e.name, reason: $0) } },
                                  file: b.file))
        }
        var options: [String: String] = [
            "modes": o.modes.joined(separator: ","), "bits": o.bits.map(String.init).joined(separator: ","),
            "layer_samples": String(o.layerSamples),
        ]
        if let g = o.granularity { options["granularity"] = g }
        for (key, setting) in o.codecSettings where setting == .flag(true) { options[key] = "true" }
        if let m = o.minElements { options["min_elements"] = String(m) }
        if o.methods != [.nearest] { options["methods"] = o.methods.map(\.rawValue).joined(separator: ",") }
        if o.foldBatchNorm { options["fold_batchnorm"] = "true" }
        if o.biasCorrection { options["bias_correction"] = "true" }
        return SweepReport(tool: "shrinkwrap \(shrinkwrapVersion)",
                           model: ModelInfo(file: url.lastPathComponent, sha256: SHA256.hex(fileData), format: graph.sourceFormat),
                           data: data, options: options, reference: size(graph, fileBytes: fileSize), variants: result)
    }

    /// Largest model (stored weight bytes) whose variants run side by side: each worker holds its own decoded copy.
    static let sideBySideLimit = 256 << 20

    /// Every candidate against the reference. With at least as many candidates as threads (and a model small
    /// enough to decode once per worker), the candidates run side by side, one thread each: whole runs in
    /// parallel waste nothing, while one run split over threads waits at every small op. Otherwise one at a
    /// time with every thread. The numbers are the same bits either way (the interpreter's results do not
    /// depend on its thread count); `done(k, seconds)` reports each candidate as it finishes.
    static func compareAll(_ candidates: [Graph], runner: AgreementRunner, threads: Int, weightBytes: Int,
                           done: @escaping @Sendable (Int, Double) -> Void) throws -> [(outputs: [OutputMetrics], layers: [LayerMetrics])] {
        typealias Measured = (outputs: [OutputMetrics], layers: [LayerMetrics])
        let workers = candidates.count >= threads && threads > 1 && weightBytes <= sideBySideLimit ? threads : 1
        if workers == 1 {
            return try candidates.enumerated().map { k, g in
                let t0 = Date()
                let m = try runner.compare(g, threads: threads)
                done(k, Date().timeIntervalSince(t0))
                return m
            }
        }
        return try AgreementRunner.inParallel(candidates.count, threads: workers) { k in
            let t0 = Date()
            let m = try runner.compare(candidates[k], threads: 1)
            done(k, Date().timeIntervalSince(t0))
            return m
        }
    }

    /// The compression settings of one variant.
    static func settings(_ v: (mode: String, bits: Int, method: CompressionMethod), _ o: SweepOptions) throws -> CompressionSettings {
        let codec = try WeightCodecs.codec(named: v.mode)
        var s = CompressionSettings()
        s.mode = v.mode
        s.bits = codec.bitWidths == nil ? nil : v.bits
        s.granularity = o.granularity
        s.codecSettings = o.codecSettings.filter { key, _ in codec.options.contains { $0.key == key } }
        s.minElements = o.minElements
        s.method = v.method == .nearest ? nil : v.method.rawValue
        s.foldBatchNorm = o.foldBatchNorm
        s.biasCorrection = o.biasCorrection
        return s
    }

    /// "linear-4"; a fixed-width mode by its name alone ("fp16").
    static func variantTag(_ v: (mode: String, bits: Int, method: CompressionMethod)) -> String {
        let base = (try? WeightCodecs.codec(named: v.mode))?.bitWidths == nil ? v.mode : "\(v.mode)-\(v.bits)"
        return v.method == .nearest ? base : "\(base)-\(v.method.rawValue)"
    }

    /// Decoded compressed weights as .npy files with a manifest [{"name", "file"}].
    static func dumpWeights(_ g: Graph, to dir: URL) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var manifest: [[String: String]] = []
        for c in g.constants where c.encoding.isCompressed {
            let file = "\(manifest.count).npy"
            try AtomicFile.write(NPY.encode(c.encoding.decoded()), to: dir.appendingPathComponent(file))
            manifest.append(["name": c.name, "file": file])
        }
        let json = try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys])
        try AtomicFile.write(json, to: dir.appendingPathComponent("manifest.json"))
    }

    /// Compares the model at `candidatePath` with the one at `referencePath` (graphs already loaded)
    /// over `data`: a report with one variant, `mode` / `bits` / `granularity` naming it.
    public static func comparison(reference: Graph, at referencePath: String, candidate: Graph, at candidatePath: String,
                                  data: InputSet, labels: [String], layerSamples: Int = 4, threads: Int? = nil,
                                  mode: String, bits: Int, granularity: String, options: [String: String]) throws -> SweepReport {
        let runner = try AgreementRunner(reference: reference, inputs: data.samples, labels: labels.isEmpty ? reference.metadata.labels : labels,
                                         layerSamples: layerSamples, threads: threads)
        let (outputs, layers) = try runner.compare(candidate)
        let source = try Models.sourceBytes(referencePath)
        return SweepReport(
            tool: "shrinkwrap \(shrinkwrapVersion)",
            model: ModelInfo(file: URL(fileURLWithPath: referencePath).lastPathComponent, sha256: SHA256.hex(source), format: reference.sourceFormat),
            data: DataInfo(description: data.description, count: data.samples.count, sha256: data.sha256, random: data.random),
            options: options, reference: size(reference, fileBytes: try Models.sourceSize(referencePath)),
            variants: [Variant(mode: mode, bits: bits, granularity: granularity, size: size(candidate, fileBytes: fileSize(candidatePath)),
                               outputs: outputs, layers: layers, file: candidatePath)])
    }

    static func fileSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
    }

    /// Weight bytes as stored (packed codes, scales, tables) and the number of weight elements.
    static func size(_ g: Graph, fileBytes: Int?) -> SizeInfo {
        let floats = g.constants.filter { $0.encoding.dtype.isFloatingPoint }
        return SizeInfo(fileBytes: fileBytes, weightBytes: floats.reduce(0) { $0 + $1.encoding.storageBytes },
                        weightCount: floats.reduce(0) { $0 + $1.encoding.count })
    }
}
