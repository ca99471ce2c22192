import ArgumentParser
import Foundation
import Shrinkwrap
import ShrinkwrapCompression
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapReport

/// How images and text become inputs. `Pixels` holds --scale and --color: the data's own
/// (`PixelFlags`, see `PrepFlags`), or none in `convert`, whose --scale / --color set the converted
/// model's image input instead (`Convert` declares them; a name declared twice is an
/// ArgumentParser configuration error).
struct InputPrepFlags<Pixels: PixelOptions>: ParsableArguments {
    @Option(help: ArgumentHelp("Images: resize first; N = shorter side (aspect kept), or WxH.", valueName: "N|WxH"))
    var resize: String?

    @Option(name: .customLong("center-crop"), help: ArgumentHelp("Images: then keep the centre N×N or W×H.", valueName: "N|WxH"))
    var centerCrop: String?

    @OptionGroup var pixels: Pixels

    @Option(help: ArgumentHelp("Images: subtract after --scale; one value or one per channel (R,G,B).", valueName: "M[,M,M]"))
    var mean: String?

    @Option(help: ArgumentHelp("Images: divide after --mean; one value or one per channel.", valueName: "S[,S,S]"))
    var std: String?

    @Option(help: ArgumentHelp("Images: NCHW or NHWC (default: from the input's shape).", valueName: "NCHW|NHWC"))
    var layout: String?

    @Option(help: ArgumentHelp("Text: the model's vocabulary, one \"word id\" per line (default: the one in a TFLite model's metadata).", valueName: "vocab.txt"))
    var vocab: String?

    @Option(name: .customLong("sequence-length"), help: ArgumentHelp("Text: token ids per sentence (default: the input's fixed length).", valueName: "N"))
    var sequenceLength: Int?

    var any: Bool {
        resize != nil || centerCrop != nil || pixels.any || mean != nil || std != nil || layout != nil
            || vocab != nil || sequenceLength != nil
    }

    /// Bad values are usage errors (exit 64), found before any model is read.
    func validate() throws {
        var copy = self
        copy.vocab = nil
        _ = try copy.options()
    }

    func options() throws -> DataOptions {
        var o = DataOptions.forLoadedModels
        func size(_ text: String?, _ flag: String) throws -> ImagePreprocessing.Size? {
            guard let text else { return nil }
            guard let s = ImagePreprocessing.Size.parse(text) else { throw ValidationError("--\(flag) '\(text)': give N or WxH (1…65536)") }
            return s
        }
        o.image.resize = try size(resize, "resize")
        o.image.centerCrop = try size(centerCrop, "center-crop")
        try pixels.apply(to: &o)
        for (text, flag) in [(mean, "mean"), (std, "std")] {
            guard let text else { continue }
            guard let v = ImagePreprocessing.parseList(text) else { throw ValidationError("--\(flag) '\(text)': give one number or a comma-separated list") }
            if flag == "mean" { o.image.mean = v } else { o.image.std = v }
        }
        if let layout {
            guard let l = ImagePreprocessing.Layout(rawValue: layout.uppercased()) else { throw ValidationError("--layout '\(layout)': give NCHW or NHWC") }
            o.image.layout = l
        }
        if let vocab { o.vocabulary = try Vocabulary.load(vocab) }
        if let n = sequenceLength {
            guard n >= 1 else { throw ValidationError("--sequence-length must be at least 1") }
            o.sequenceLength = n
        }
        return o
    }
}

/// The image and text options of run, sweep, compare and prepare.
typealias PrepFlags = InputPrepFlags<PixelFlags>

/// --scale and --color of input images, or none (`NoPixelFlags`).
protocol PixelOptions: ParsableArguments {
    var any: Bool { get }
    func apply(to o: inout DataOptions) throws
}

/// How --data / --input images' pixels become values: --scale and --color.
struct PixelFlags: PixelOptions {
    @Option(help: ArgumentHelp("Images: multiply pixels (0…255) by this, e.g. 1/255. Without --scale / --mean / --std, a TFLite model's metadata normalization applies.", valueName: "S"))
    var scale: String?

    @Option(help: ArgumentHelp("Images: channel order RGB, BGR or GRAY (default: the model's image input, else RGB / GRAY by channels).", valueName: "RGB|BGR|GRAY"))
    var color: String?

    var any: Bool { scale != nil || color != nil }

    func apply(to o: inout DataOptions) throws {
        if let scale {
            guard let v = ImagePreprocessing.parseNumber(scale) else { throw ValidationError("--scale '\(scale)': give a number or a fraction like 1/255") }
            o.image.scale = v
        }
        if let color {
            guard let c = ColorLayout(rawValue: color.uppercased()) else { throw ValidationError("--color '\(color)': give RGB, BGR or GRAY") }
            o.image.color = c
        }
    }
}

/// No --scale / --color for the data: in `convert` those set the converted model's image input
/// (`Convert` declares them), and --data images are read with the model's defaults.
struct NoPixelFlags: PixelOptions {
    var any: Bool { false }
    func apply(to o: inout DataOptions) {}
}

/// Where the inputs come from: files, or seeded random data (marked in every report).
/// `Pixels`: see `InputPrepFlags`.
struct InputDataFlags<Pixels: PixelOptions>: ParsableArguments {
    @Option(name: .customLong("data"), help: "Input data: a folder or list of .npy / .npz files, PNG / JPEG images, or .txt files (one sentence per line); NAME=PATH for multi-input models. Repeat for several.")
    var data: [String] = []

    @OptionGroup(title: "Image and text inputs")
    var prep: InputPrepFlags<Pixels>

    @Option(help: "No data: N seeded random inputs (a last resort; every report says so loudly).")
    var random: Int?

    @Option(help: "Seed of --random.")
    var seed: UInt64 = 1

    @Option(name: .customLong("report"), help: "Report file(s): .md, .json, .csv, .html. Repeat for several.")
    var reports: [String] = []

    var given: Bool { !data.isEmpty || random != nil }

    /// The inputs; random ones are announced on stderr unless `quiet`.
    func load(graph: Graph, quiet: Bool = false) throws -> InputSet {
        if let n = random {
            guard data.isEmpty else { throw CLIError(description: "give --data or --random, not both") }
            guard n >= 1 else { throw CLIError(description: "--random needs at least 1 input") }
            guard !prep.any else { throw CLIError(description: "image and text options apply to --data files, not --random") }
            if !quiet { FileHandle.standardError.write(Data("shrinkwrap: \(SweepReport.randomDataWarning)\n".utf8)) }
            return try InputData.random(count: n, seed: seed, graph: graph)
        }
        guard !data.isEmpty else { throw CLIError(description: "give --data FOLDER|FILES (or --random N as a last resort)") }
        return try InputData.load(data, graph: graph, options: try prep.options())
    }

    func info(_ set: InputSet) -> DataInfo {
        DataInfo(description: set.description, count: set.samples.count, sha256: set.sha256, random: set.random)
    }

    /// Writes the report in the format each --report file's extension names.
    func write(_ report: SweepReport, protecting inputs: [String]) throws {
        for f in reports {
            let ext = URL(fileURLWithPath: f).pathExtension.lowercased()
            guard let format = ReportFormat.allCases.first(where: { $0.fileExtension == ext }) else {
                throw CLIError(description: "\(f): report files end in .md, .json, .csv or .html")
            }
            try AtomicFile.write(Data(SweepRenderer.render(report, as: format).utf8), to: URL(fileURLWithPath: f),
                                 protecting: (inputs + data).map { URL(fileURLWithPath: $0) })
        }
    }
}

/// The data options of sweep, compare and prepare.
typealias DataFlags = InputDataFlags<PixelFlags>

/// Per-output agreement lines, as compare and convert print them.
func agreementLines(_ outputs: [OutputMetrics]) -> [String] {
    outputs.map { o in
        var line = "\(o.name): \(o.inputs) inputs"
        if let a = o.top1Agreement { line += String(format: ", top-1 agreement %.2f%%", a) }
        if let a = o.top5Agreement { line += String(format: ", top-5 %.2f%%", a) }
        line += String(format: ", cosine mean %.6f min %.6f", o.meanCosine, o.minCosine)
        line += o.psnrDB.map { String(format: ", PSNR %.2f dB", $0) } ?? ", identical"
        line += String(format: ", max |err| %.3g", o.maxAbsError)
        return ([line] + o.flips.prefix(5).map { "  \($0.reference) → \($0.candidate): \($0.count)" }).joined(separator: "\n")
    }
}

/// Quality gates: the report is written, then the exit code says whether the candidate is good enough.
struct GateFlags: ParsableArguments {
    @Option(name: .customLong("min-agreement"), help: "Fail (exit 3) when top-1 agreement of the first output is below this percent.")
    var minAgreement: Double?

    @Option(name: .customLong("min-cosine"), help: "Fail (exit 3) when the mean cosine similarity of any output is below this.")
    var minCosine: Double?

    @Option(name: .customLong("min-psnr"), help: "Fail (exit 3) when the PSNR (dB) of any output is below this.")
    var minPSNR: Double?

    var gate: QualityGate { QualityGate(minAgreement: minAgreement, minCosine: minCosine, minPSNR: minPSNR) }

    var any: Bool { gate.isSet }
}

func progressLine(_ quiet: Bool) -> SweepProgress? {
    if quiet { return nil }
    let report: SweepProgress = { line in FileHandle.standardError.write(Data("shrinkwrap: \(line)\n".utf8)) }
    return report
}

struct SweepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract: "Compress a model at every mode and width, and report size against agreement with the original.",
        discussion: """
        Runs the original once and every variant once over the data, then prints the Markdown table \
        (rows = bits, per mode: % size reduction and % of inputs whose top-1 prediction matches) \
        and writes --report files. With a gate, exits 3 when no variant meets it.
        """)

    @Argument(help: "The model file.")
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @OptionGroup var data: DataFlags

    @OptionGroup var shapes: ShapeFlags

    @Option(help: "Modes, comma-separated.")
    var modes = WeightCodecs.defaultSweepModes.joined(separator: ",")

    @Option(help: "Bit widths of the non-fp16 modes, comma-separated.")
    var bits = "8,4,2,1"

    @Option(help: "Granularity for every mode (default: each mode's own).")
    var granularity: String?

    @Flag(name: .customLong(LinearCodec.symmetric.longName),
          help: ArgumentHelp(WeightCodecs.optionHelp(LinearCodec.symmetric.key) + " (What --out-format tflite can store as int8.)"))
    var symmetric = false

    @Flag(name: .customLong(LinearCodec.exactZero.longName),
          help: ArgumentHelp(WeightCodecs.optionHelp(LinearCodec.exactZero.key) + " (With --symmetric, what --out-format mlpackage stores.)"))
    var exactZero = false

    @Option(name: .customLong("min-elements"), help: "Leave weights with fewer elements alone (default 2048).")
    var minElements: Int?

    @Option(name: .customLong("calibration"), help: ArgumentHelp("Calibration inputs (the forms --data takes): the data-aware variants are measured next to round to nearest.", valueName: "data"))
    var calibration: [String] = []

    @Option(help: ArgumentHelp("Methods, comma-separated: \(CompressionMethod.allCases.map(\.rawValue).joined(separator: ", ")) (default nearest; with --calibration nearest,gptq). Each mode is tried with those it offers.", valueName: "methods"))
    var methods: String?

    @Flag(name: .customLong("fold-batchnorm"), help: "Fold each BatchNormalization that alone reads a Conv into that Conv before compressing, in every variant.")
    var foldBatchNorm = false

    @Flag(name: .customLong("bias-correction"), help: "In every variant, fold each compressed Conv / Gemm weight's expected output shift on the --calibration data into its bias.")
    var biasCorrection = false

    @Option(name: .customLong("out-dir"), help: "Write every variant here (and report file sizes).")
    var outDir: String?

    @Option(name: .customLong("out-format"), help: "Extension of the written variants (default mlmodel, which holds every mode; a variant the format cannot hold is measured but not written).")
    var outFormat: String?

    @OptionGroup var export: ExportFlags

    @Option(help: "Class labels, one per line (default: the model's own).")
    var labels: String?

    @Option(name: .customLong("dump-weights"), help: "Write each variant's decoded compressed weights here (for independent re-runs).")
    var dumpWeights: String?

    @Option(name: .customLong("layer-samples"), help: "Inputs whose intermediate values feed the per-layer table.")
    var layerSamples = 4

    @Option(help: "Inputs per run past the layer samples when the model has a free batch axis (default 16; 1: one at a time). Used only when a probe on the original gives every input's outputs bit for bit, so the numbers do not change.")
    var batch: Int?

    @Option(help: "Worker threads (default: all cores).")
    var threads: Int?

    @Flag(help: "No progress on stderr.")
    var quiet = false

    @OptionGroup var gates: GateFlags

    func run() throws {
        if let b = batch, b < 1 { throw CLIError(description: "--batch must be at least 1, got \(b)") }
        var graph = try Models.load(model, options: source.options)
        try shapes.apply(to: &graph)
        let set = try data.load(graph: graph, quiet: quiet)
        var o = SweepOptions()
        o.modes = modes.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        o.bits = try bits.split(separator: ",").map {
            guard let b = Int($0.trimmingCharacters(in: .whitespaces)) else { throw CLIError(description: "--bits: '\($0)' is not a number") }
            return b
        }
        o.granularity = granularity
        if symmetric { o.codecSettings[LinearCodec.symmetric.key] = .flag(true) }
        if exactZero { o.codecSettings[LinearCodec.exactZero.key] = .flag(true) }
        o.minElements = minElements
        if let methods {
            o.methods = try methods.split(separator: ",").map { m throws -> CompressionMethod in
                let name = m.trimmingCharacters(in: .whitespaces)
                guard let method = CompressionMethod(rawValue: name) else {
                    throw CLIError(description: "--methods: '\(name)' is not one of \(CompressionMethod.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                return method
            }
        } else if !calibration.isEmpty {
            o.methods = [.nearest, .gptq]
        }
        o.foldBatchNorm = foldBatchNorm
        o.biasCorrection = biasCorrection
        if !calibration.isEmpty {
            guard biasCorrection || o.methods.contains(where: \.needsCalibration) else {
                throw CLIError(description: "--calibration is read by the data-aware methods only: add --methods with weighted or gptq, or --bias-correction")
            }
            o.calibration = try Calibration.load(calibration, graph: graph, options: try data.prep.options()).samples
        }
        o.outDir = outDir
        o.outFormat = outFormat
        o.exportOptions = export.options
        o.threads = threads
        o.layerSamples = layerSamples
        o.batch = batch
        o.labels = try labels.map { try Models.loadLabels($0) } ?? []
        o.dumpWeightsDir = dumpWeights
        let report = try Sweep.run(model: model, inputs: set.samples, data: data.info(set), options: o, progress: progressLine(quiet))
        try data.write(report, protecting: [model])
        print(SweepRenderer.markdown(report), terminator: "")
        if gates.any {
            let verdict = gates.gate.verdict(report)
            if !verdict.met {
                FileHandle.standardError.write(Data("shrinkwrap: \(verdict.message)\n".utf8))
                Foundation.exit(QualityGate.failedExitCode)
            }
            if !quiet { FileHandle.standardError.write(Data("shrinkwrap: \(verdict.message)\n".utf8)) }
        }
    }
}

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare two models (any supported formats, same inputs and outputs) over the same data.",
        discussion: "Prints the agreement per output; with a gate, exits 3 when the candidate falls short (after writing --report).")

    @Argument(help: "The reference model.")
    var reference: String

    @Argument(help: "The candidate model.")
    var candidate: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @OptionGroup var data: DataFlags

    @OptionGroup var shapes: ShapeFlags

    @Option(help: "Class labels, one per line (default: the reference model's own).")
    var labels: String?

    @Option(name: .customLong("layer-samples"), help: "Inputs whose intermediate values feed the per-layer table (same node names only).")
    var layerSamples = 4

    @Option(help: "Worker threads (default: all cores).")
    var threads: Int?

    @Flag(help: "No progress on stderr.")
    var quiet = false

    @OptionGroup var gates: GateFlags

    func run() throws {
        // --inputs / --outputs / --signature: for whichever of the two models reads them (an error when neither does).
        let o = source.options
        let (refOptions, candOptions) = (o.applying(to: reference), o.applying(to: candidate))
        var ref = try Models.load(reference, options: refOptions.given.isEmpty && candOptions.given.isEmpty ? o : refOptions)
        var cand = try Models.load(candidate, options: candOptions)
        try shapes.apply(to: &ref)
        try shapes.apply(to: &cand)
        let set = try data.load(graph: ref, quiet: quiet)
        let name = URL(fileURLWithPath: candidate).lastPathComponent
        let report = try Sweep.comparison(reference: ref, at: reference, candidate: cand, at: candidate, data: set,
                                          labels: try labels.map { try Models.loadLabels($0) } ?? [], layerSamples: layerSamples,
                                          threads: threads, mode: "candidate", bits: 0, granularity: name, options: ["candidate": name])
        try data.write(report, protecting: [reference, candidate])
        let outputs = report.variants.first?.outputs ?? []
        for line in agreementLines(outputs) { print(line) }
        if let failure = gates.gate.failureMessage(outputs) {
            FileHandle.standardError.write(Data("shrinkwrap: \(failure)\n".utf8))
            Foundation.exit(QualityGate.failedExitCode)
        }
    }
}

/// The inputs exactly as compare / sweep / convert feed them, written as .npy.
struct Prepare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the inputs as the model is fed them (after image preprocessing or tokenization), one .npy per input and sample.",
        discussion: """
        Files are named NNNNN.npy (single-input models) or NNNNN-INPUT.npy, in the order the other commands use; \
        manifest.json lists each sample's source (file, file:line, file[k]) and files.
        """)

    @Argument(help: "The model file (its inputs decide shapes, layout and dtype).")
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @OptionGroup var data: DataFlags

    @OptionGroup var shapes: ShapeFlags

    @Option(name: [.customShort("o"), .customLong("out-dir")], help: "Folder for the .npy files.")
    var outDir: String

    func run() throws {
        guard data.reports.isEmpty else { throw CLIError(description: "prepare writes no report; drop --report") }
        var graph = try Models.load(model, options: source.options)
        try shapes.apply(to: &graph)
        let set = try data.load(graph: graph)
        let dir = URL(fileURLWithPath: outDir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let protected = ([model] + data.data).map { URL(fileURLWithPath: $0) }
        let names = graph.runtimeInputs.map(\.name)
        var manifest: [[String: Any]] = []
        for (k, sample) in set.samples.enumerated() {
            var files: [String: String] = [:]
            for name in names {
                guard let t = sample[name] else { continue }
                let file = names.count == 1
                    ? String(format: "%05d.npy", k)
                    : String(format: "%05d-", k) + ModelRunner.fileName(for: name) + ".npy"
                try AtomicFile.write(NPY.encode(t), to: dir.appendingPathComponent(file), protecting: protected)
                files[name] = file
            }
            manifest.append(["sample": k, "source": set.sources[k], "files": files])
        }
        let json = try JSONSerialization.data(withJSONObject: ["description": set.description, "sha256": set.sha256, "samples": manifest],
                                              options: [.prettyPrinted, .sortedKeys])
        try AtomicFile.write(json, to: dir.appendingPathComponent("manifest.json"), protecting: protected)
        print("\(set.samples.count) sample\(set.samples.count == 1 ? "" : "s") (\(set.description)) → \(dir.path)")
    }
}
