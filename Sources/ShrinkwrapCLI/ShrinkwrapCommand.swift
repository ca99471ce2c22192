import ArgumentParser
import Foundation
import Shrinkwrap
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapCompression
import ShrinkwrapRuntime
import ShrinkwrapReport

/// Errors are printed as one line, `shrinkwrap: error: …`, and exit with 1.
/// What a model argument takes: every format the registry reads.
let modelArgumentHelp = "The model file (\(ModelFormats.readableExtensions)), or an ML Kit bundle (its folder or manifest.json)."

struct CLIError: UserFacingError {
    let description: String
}

@main
struct ShrinkwrapCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shrinkwrap",
        abstract: "Import, compress, export and compare neural-network models.",
        version: shrinkwrapVersion,
        subcommands: [Inspect.self, Run.self, Bench.self, Compress.self, Convert.self, SweepCommand.self, TuneCommand.self, Compare.self, Prepare.self, Support.self]
    )

    /// Runs the command; a `UserFacingError` becomes one line on stderr and
    /// exit code 1; usage errors keep ArgumentParser's message and code.
    static func main() {
        GEMM.prepareEnvironment()
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let e as UserFacingError {
            fail(e.description)
        } catch {
            exit(withError: error)
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("shrinkwrap: error: \(message.escapingControlCharacters)\n".utf8))
        Foundation.exit(1)
    }
}

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a model's format, inputs, outputs, ops, weights and metadata.")

    @Argument(help: ArgumentHelp(modelArgumentHelp))
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Flag(help: "Print the inputs and outputs as an iOS app declares them (TensorFlowLiteSwift types and shapes, ML Kit ModelInputOutputOptions).")
    var swift = false

    @Option(name: .customLong("weights-npz"), help: ArgumentHelp(
        "Also write every constant, decoded (compressed weights as the values they stand for), to an .npz keyed by constant name: floating-point constants as float32, integer and bool ones in their own dtype.",
        valueName: "FILE"))
    var weightsNPZ: String?

    func run() throws {
        let graph = try Models.load(model, options: source.options)
        if let weightsNPZ {
            let summary = try WeightsNPZ.write(graph, to: URL(fileURLWithPath: weightsNPZ), protecting: [URL(fileURLWithPath: model)])
            FileHandle.standardError.write(Data("wrote \(weightsNPZ): \(summary.line)\n".utf8))
        }
        if swift {
            guard !json else { throw ValidationError("give --json or --swift, not both") }
            print(Inspection.swiftDeclarations(graph), terminator: "")
            return
        }
        let info = Inspection(graph: graph, file: model, program: Models.program(of: model))
        print(json ? info.json : info.text, terminator: json ? "\n" : "")
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a model on .npy, image or text inputs; write every output as .npy and show the top-5 of class scores (other outputs: their first values).")

    @Argument(help: ArgumentHelp(modelArgumentHelp))
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @Option(name: .shortAndLong, help: "An input as NAME=FILE (or just FILE for a single-input model): .npy, or a PNG / JPEG image. Repeat for more inputs.")
    var input: [String] = []

    @Option(help: "A sentence for a text model (with --vocab, or the vocabulary in a TFLite model's metadata).")
    var text: String?

    @OptionGroup(title: "Image and text inputs")
    var prep: PrepFlags

    @OptionGroup var shapes: ShapeFlags

    @Option(name: .customLong("output-dir"), help: "Folder for the outputs (one NAME.npy each).")
    var outputDir: String?

    @Option(help: "Worker threads (default: all cores).")
    var threads: Int?

    @Option(help: "How many top classes to print for class-score outputs.")
    var top = 5

    func run() throws {
        var graph = try Models.load(model, options: source.options)
        try shapes.apply(to: &graph)
        let options = try prep.options()
        let inputs: [String: Tensor]
        if let text {
            guard input.isEmpty else { throw CLIError(description: "give --text or --input, not both") }
            inputs = try ModelRunner.textInput(text, graph: graph, options: options)
        } else {
            inputs = try ModelRunner.loadInputs(input, graph: graph, options: options)
        }
        let interpreter = try Interpreter(graph: graph, options: .init(threads: threads))
        let outputs = try interpreter.run(inputs)
        let labels = graph.metadata.labels
        for o in graph.outputs {
            guard let t = outputs[o.name] else { continue }
            print("\(o.name): \(t.dtype) \(t.shape)")
            if let dir = outputDir {
                let url = URL(fileURLWithPath: dir).appendingPathComponent(ModelRunner.fileName(for: o.name) + ".npy")
                try AtomicFile.write(NPY.encode(t), to: url, protecting: [URL(fileURLWithPath: model)] + input.map { URL(fileURLWithPath: $0) })
                print("  wrote \(url.path)")
            }
            if let best = ModelRunner.topK(t, k: top) {
                for (rank, e) in best.enumerated() {
                    let label = e.index < labels.count ? "  \(labels[e.index])" : ""
                    print(String(format: "  %d. class %d  %.6f", rank + 1, e.index, e.score) + label)
                }
            } else {
                print("  " + ModelRunner.valuePreview(t))
            }
        }
    }
}

struct Support: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the supported formats, compression modes and ops (Markdown, from the registries).")

    func run() throws {
        print(SupportTables.markdown, terminator: "")
    }
}

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time inference: ms per run on your inputs (--input, --data), else on seeded random ones (dims that are not fixed become 1 unless --input-shape pins them).")

    @Argument(help: ArgumentHelp(modelArgumentHelp))
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @Option(help: "Timed runs after warm-up.")
    var runs = 20

    @Option(help: "Untimed warm-up runs.")
    var warmup = 3

    @Option(help: "Worker threads (default: all cores).")
    var threads: Int?

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Also print the time spent per op type and the slowest nodes (medians over nine observed runs).")
    var profile = false

    @Option(name: .customLong("profile-nodes"), help: "With --profile: how many of the slowest nodes to list.")
    var profileNodes = 8

    @Option(name: .shortAndLong, help: "Time this input: NAME=FILE (or just FILE for a single-input model), .npy or a PNG / JPEG image. Repeat for more inputs.")
    var input: [String] = []

    @Option(help: "Time these inputs (as compare's --data: folders or files, NAME=PATH for multi-input models); the runs take the samples in turn.")
    var data: [String] = []

    @OptionGroup(title: "Image and text inputs")
    var prep: PrepFlags

    @OptionGroup var shapes: ShapeFlags

    func run() throws {
        var graph = try Models.load(model, options: source.options)
        try shapes.apply(to: &graph)
        let options = try prep.options()
        var samples: InputSet?
        if !input.isEmpty {
            guard data.isEmpty else { throw CLIError(description: "give --input or --data, not both") }
            let one = try ModelRunner.loadInputs(input, graph: graph, options: options)
            samples = InputSet(samples: [one], sources: [input.joined(separator: ", ")], description: input.joined(separator: ", "), random: false)
        } else if !data.isEmpty {
            samples = try InputData.load(data, graph: graph, options: options)
        } else if prep.any {
            throw CLIError(description: "image and text options apply to --input / --data files")
        }
        let result = try Benchmark.run(graph, samples: samples, runs: runs, warmup: warmup, threads: threads, profile: profile)
        for line in result.profile?.lines(top: profileNodes) ?? [] { print(line) }
        print(result.summary(model: model, json: json))
    }
}

/// --inputs / --outputs / --signature, for every command that reads a model: what a
/// TensorFlow graph's file does not say (formats that read none of them refuse them).
struct ImportFlags: ParsableArguments {
    @Option(name: .customLong("inputs"), help: ArgumentHelp(
        "TensorFlow: the tensors to read as the model's inputs (NAME or NAME:K, comma-separated or repeated; for a SavedModel also its signature's input keys), instead of the graph's placeholders / the signature's inputs. The graph above them is cut off.",
        valueName: "NAMES"))
    var inputs: [String] = []

    @Option(name: .customLong("outputs"), help: ArgumentHelp(
        "TensorFlow: the tensors to read as the model's outputs (as --inputs), instead of the ops nobody reads / the signature's outputs.",
        valueName: "NAMES"))
    var outputs: [String] = []

    @Option(help: ArgumentHelp("TensorFlow SavedModel: the signature to read (default serving_default).", valueName: "KEY"))
    var signature: String?

    var options: ImportOptions {
        func names(_ values: [String]) -> [String]? {
            let all = values.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter { !$0.isEmpty }
            return all.isEmpty ? nil : all
        }
        return ImportOptions(inputs: names(inputs), outputs: names(outputs), signature: signature)
    }
}

/// --input-shape, for every command that runs or writes a model.
struct ShapeFlags: ParsableArguments {
    @Option(name: .customLong("input-shape"), help: ArgumentHelp(
        "Pin an input's dimensions: NAME=d0,d1,… (e.g. x=1,3,48,320); repeat for more inputs. Formats with fixed shapes (.tflite, .mlmodel) need it for free dims beyond the batch. For .mlmodel (and .onnx) a dim may be a range, x=1,3,48,32..2048 (a.. unbounded), or give whole shapes, x=1,3,48,320|1,3,48,640: the model is pinned to the first / lower bounds and the file declares the rest.",
        valueName: "NAME=DIMS"))
    var inputShapes: [String] = []

    @Option(name: .customLong("input-value"), help: ArgumentHelp(
        "Fix an input's value: NAME=v0,v1,… (e.g. sr=16000); the input becomes a constant, and Ifs it decides keep only the branch taken when written to .tflite / .mlmodel.",
        valueName: "NAME=VALUES"))
    var inputValues: [String] = []

    /// Pins the shapes, then the values (all problems listed at once) and says what changed.
    func apply(to graph: inout Graph) throws {
        var lines: [String] = []
        if !inputShapes.isEmpty { lines += try Models.pin(try inputShapes.map { try InputShapePin(parsing: $0) }, in: &graph) }
        if !inputValues.isEmpty { lines += try Models.pinValues(try inputValues.map { try InputValuePin(parsing: $0) }, in: &graph) }
        for line in lines { FileHandle.standardError.write(Data("shrinkwrap: \(line)\n".utf8)) }
    }
}

/// The compression flags `compress` and `convert` share.
struct CompressionFlags: ParsableArguments {
    @Option(help: ArgumentHelp("Compression mode: \(WeightCodecs.modes.joined(separator: ", ")).", valueName: "mode"))
    var mode: String?

    @Option(help: "Bits per weight, 1–8 (default 8; custom-lut: the fewest that hold the table).")
    var bits: Int?

    @Option(help: "per-tensor, per-channel, per-block:B or per-grouped-channel:G (default: the mode's first).")
    var granularity: String?

    // Codec options: each codec declares its own (name, help) and interprets the value (WeightCodec.apply).
    @Flag(name: .customLong(LinearCodec.symmetric.longName), help: ArgumentHelp(WeightCodecs.optionHelp(LinearCodec.symmetric.key)))
    var symmetric = false

    @Flag(name: .customLong(LinearCodec.exactZero.longName), help: ArgumentHelp(WeightCodecs.optionHelp(LinearCodec.exactZero.key)))
    var exactZero = false

    @Flag(name: .customLong(Float16Codec.clamp.longName), help: ArgumentHelp(WeightCodecs.optionHelp(Float16Codec.clamp.key)))
    var clampFP16 = false

    @Option(name: .customLong(CustomLUTCodec.table.longName), help: ArgumentHelp(WeightCodecs.optionHelp(CustomLUTCodec.table.key), valueName: "file"))
    var lut: String?

    @Option(help: ArgumentHelp("How the grid is fitted and codes chosen: \(CompressionMethod.help).", valueName: "method"))
    var method: String?

    @Option(name: .customLong("calibration"), help: ArgumentHelp("Calibration inputs for --method weighted / gptq (the forms --data takes: folders or files, NAME=PATH); repeat for several.", valueName: "data"))
    var calibration: [String] = []

    @Option(help: "A JSON plan with global, per-op-type and per-name rules (name beats op type beats global).")
    var plan: String?

    @Flag(name: .customLong("fold-batchnorm"), help: "Fold each BatchNormalization that alone reads a Conv into that Conv before compressing (the weights compressed are the ones the layer applies; its 4·C parameters become C biases).")
    var foldBatchNorm = false

    @Flag(name: .customLong("bias-correction"), help: "Fold each compressed Conv / Gemm weight's expected output shift on the --calibration data, (W − Ŵ)·E[x], into its bias.")
    var biasCorrection = false

    @Option(name: .customLong("min-elements"), help: "Leave weights with fewer elements alone (default 2048).")
    var minElements: Int?

    @Option(help: "Worker threads (default: all cores); the result does not depend on it.")
    var threads: Int?

    var settings: CompressionSettings {
        var s = CompressionSettings()
        s.mode = mode; s.bits = bits; s.granularity = granularity; s.method = method
        s.planFile = plan; s.minElements = minElements; s.foldBatchNorm = foldBatchNorm; s.biasCorrection = biasCorrection
        let flags = [(LinearCodec.symmetric, symmetric), (LinearCodec.exactZero, exactZero), (Float16Codec.clamp, clampFP16)]
        for (option, on) in flags where on { s.codecSettings[option.key] = .flag(true) }
        if let lut { s.codecSettings[CustomLUTCodec.table.key] = .file(lut) }
        return s
    }

    /// True when any compression flag is given.
    var requested: Bool {
        mode != nil || plan != nil || foldBatchNorm || biasCorrection || bits != nil || granularity != nil || method != nil || !calibration.isEmpty || symmetric || exactZero || clampFP16 || lut != nil || minElements != nil
    }
}

/// Options of the exporters that take them (`ModelFormat.exportOptions`).
struct ExportFlags: ParsableArguments {
    @Option(help: ArgumentHelp("Core ML ML Program (.mlpackage) deployment target: \(ModelFormats.mlProgramTargets.joined(separator: ", ")) (default: the lowest that holds every op and weight).", valueName: "target"))
    var target: String?

    @Option(help: ArgumentHelp("Core ML ML Program (.mlpackage) compute precision: float32 (default) or float16.", valueName: "precision"))
    var precision: String?

    var options: ExportOptions { ExportOptions(target: target, precision: precision) }
}

struct Compress: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compress a model's weights and print what happened to each one.",
        discussion: "Modes:\n" + WeightCodecs.help)

    @Argument(help: ArgumentHelp(modelArgumentHelp))
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @OptionGroup var compression: CompressionFlags

    @OptionGroup var shapes: ShapeFlags

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the compressed model here (\(ModelFormats.writableExtensions)); repeat for several formats: the weights are compressed once, in a form every one of them stores."))
    var output: [String] = []

    @OptionGroup var export: ExportFlags

    @Flag(help: "Print the log as JSON.")
    var json = false

    func run() throws {
        let plan = try compression.settings.plan()  // option errors before the model is read
        let formats = output.compactMap { ModelFormats.format(for: URL(fileURLWithPath: $0)) }
        let options = { (path: String) in ModelFormats.format(for: URL(fileURLWithPath: path)).map(export.options.applicable) ?? export.options }
        if output.count > 1, let key = export.options.setKeys.first(where: { k in !formats.contains { $0.exportOptions.contains(k) } }) {
            throw CLIError(description: "--\(key.rawValue) applies to none of the outputs")
        }
        for o in output { try Models.checkWritable(o, inputs: [model], options: output.count > 1 ? options(o) : export.options) }
        var graph = try Models.load(model, options: source.options)
        try shapes.apply(to: &graph)
        for o in output { try Models.checkStorable(graph, plan: plan, path: o, options: options(o)) }  // every conflict, before compressing
        let stats = try Models.calibrate(graph, plan: plan, specs: compression.calibration, options: .forLoadedModels,
                                         threads: compression.threads, progress: stderrLine)
        let log = try Models.compress(&graph, plan: plan, threads: compression.threads, for: formats, options: export.options, statistics: stats)
        print(json ? log.json : log.table, terminator: json ? "\n" : "")
        for o in output {
            let written = try Models.save(graph, to: o, inputs: [model], options: options(o))
            FileHandle.standardError.write(Data("wrote \(o)\(written.sizeSummary.map { ": " + $0 } ?? "")\n".utf8))
        }
    }
}

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a model to another format, optionally compressing its weights.",
        discussion: """
        The output format comes from the extension of -o (.mlmodel: Core ML NeuralNetwork, every mode; \
        .tflite: TensorFlow Lite, float32, fp16 and 8-bit --symmetric linear weights; \
        .onnx: ONNX, every mode, decoded by standard ops at run time, opset 17, or 21 for 4-bit codes and per-block scales). \
        Compression flags are those of `compress`; without them weights stay float32. \
        The "wrote" line gives the file's size as compressed weight bytes + graph bytes where the format says.

        Modes:
        """ + WeightCodecs.help)

    @Argument(help: ArgumentHelp(modelArgumentHelp))
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @Option(name: .shortAndLong, help: ArgumentHelp("The converted model (\(ModelFormats.writableExtensions))."))
    var output: String

    @OptionGroup var export: ExportFlags

    @OptionGroup var compression: CompressionFlags

    @OptionGroup var shapes: ShapeFlags

    @Option(name: .customLong("image-input"), help: "Make this input an image (raw pixels 0…255); repeat for several.")
    var imageInputs: [String] = []

    @Option(help: "Image preprocessing: pixel × scale (+ bias), e.g. 0.00392157 for 1/255.")
    var scale: Float?

    @Option(help: "Image preprocessing bias: one value, or one per channel in --color order (comma-separated).")
    var bias: String?

    @Option(help: "Image channel order: RGB, BGR or GRAY (default RGB).")
    var color: String?

    @Option(help: "Class labels, one per line: the model becomes a classifier (classLabel + probabilities).")
    var labels: String?

    @Option(help: "Model metadata: author.")
    var author: String?

    @Option(help: "Model metadata: license.")
    var license: String?

    @Option(name: .customLong("description"), help: "Model metadata: short description.")
    var shortDescription: String?

    @Option(name: .customLong("model-version"), help: "Model metadata: version string.")
    var modelVersion: String?

    @Option(name: .customLong("meta"), help: "User-defined metadata KEY=VALUE; repeat for several.")
    var meta: [String] = []

    @Flag(help: "Print the compression log as JSON.")
    var json = false

    /// With --data (or --random) and --report or a gate, the written file is read back and checked.
    /// Its image options have no --scale / --color: those above are the converted model's.
    @OptionGroup var data: InputDataFlags<NoPixelFlags>

    @OptionGroup var gates: GateFlags

    func options() throws -> ConversionOptions {
        var o = ConversionOptions()
        if imageInputs.isEmpty, scale != nil || bias != nil || color != nil {
            throw CLIError(description: "--scale, --bias and --color need --image-input")
        }
        let layout: ColorLayout
        if let color {
            guard let c = ColorLayout(rawValue: color.uppercased()) else { throw CLIError(description: "--color \(color): expected RGB, BGR or GRAY") }
            layout = c
        } else { layout = .rgb }
        var biasValues: [Float] = []
        if let bias {
            for part in bias.split(separator: ",") {
                guard let v = Float(part.trimmingCharacters(in: .whitespaces)), v.isFinite else { throw CLIError(description: "--bias \(bias): not a list of numbers") }
                biasValues.append(v)
            }
        }
        if let scale, !scale.isFinite { throw CLIError(description: "--scale must be a finite number") }
        o.imageInputs = imageInputs.map { .init(name: $0, color: layout, scale: scale ?? 1, bias: biasValues) }
        o.labels = try labels.map { try Models.loadLabels($0) }
        o.author = author; o.license = license; o.shortDescription = shortDescription; o.version = modelVersion
        for m in meta {
            guard let eq = m.firstIndex(of: "="), eq != m.startIndex else { throw CLIError(description: "--meta \(m): expected KEY=VALUE") }
            o.userDefined.append((String(m[..<eq]), String(m[m.index(after: eq)...])))
        }
        return o
    }

    func run() throws {
        let plan = compression.requested ? try compression.settings.plan() : nil
        let opts = try options()
        let readsFiles = [model] + [labels, compression.plan, compression.lut].compactMap { $0 }
        try Models.checkWritable(output, inputs: readsFiles, options: export.options)
        let checks = gates.any || !data.reports.isEmpty
        if checks, !data.given { throw CLIError(description: "--report and the --min-* gates need --data (or --random N)") }
        if !checks, data.given { throw CLIError(description: "--data / --random check the written model: add --report or a --min-* gate") }
        var graph = try Models.load(model, options: source.options)
        try shapes.apply(to: &graph)
        try Models.apply(opts, to: &graph)
        try Models.checkStorable(graph, plan: plan, path: output, options: export.options)  // every conflict, before compressing
        let stats = try Models.calibrate(graph, plan: plan, specs: compression.calibration, options: try data.prep.options(),
                                         threads: compression.threads, progress: stderrLine)
        // Kept only for the check: a copy holds every float32 weight through compression and export.
        let original: Graph? = checks ? graph : nil
        if let plan {
            let log = try Models.compress(&graph, plan: plan, threads: compression.threads,
                                          for: ModelFormats.format(for: URL(fileURLWithPath: output)), options: export.options,
                                          statistics: stats)
            print(json ? log.json : log.table, terminator: json ? "\n" : "")
        }
        let written = try Models.save(graph, to: output, inputs: readsFiles, options: export.options)
        FileHandle.standardError.write(Data("wrote \(output)\(written.sizeSummary.map { ": " + $0 } ?? "")\n".utf8))
        if checks, let original {
            try check(original: original, settings: plan == nil ? "float32" : (compression.mode ?? "plan"), layout: written.sizeSummary)
        }
    }

    /// Reads the written file back and compares it with the original over the data; writes the
    /// reports, then applies the gates (exit 3).
    func check(original: Graph, settings: String, layout: String?) throws {
        let written = try Models.load(output)
        let set = try data.load(graph: original)
        let report = try Sweep.comparison(
            reference: original, at: model, candidate: written, at: output, data: set, labels: [], threads: compression.threads,
            mode: settings, bits: compression.settings.reportedBits,
            granularity: compression.granularity ?? "default",
            options: ["output": URL(fileURLWithPath: output).lastPathComponent, "compression": settings]
                .merging(layout.map { ["file_layout": $0] } ?? [:]) { a, _ in a })
        try data.write(report, protecting: [model, output])
        let outputs = report.variants.first?.outputs ?? []
        for line in agreementLines(outputs) { FileHandle.standardError.write(Data("shrinkwrap: \(line)\n".utf8)) }
        if let failure = gates.gate.rejectIfFailing(outputs, writtenTo: output) {
            FileHandle.standardError.write(Data("shrinkwrap: \(failure)\n".utf8))
            Foundation.exit(QualityGate.failedExitCode)
        }
    }
}

/// A progress line on stderr.
func stderrLine(_ line: String) { FileHandle.standardError.write(Data("shrinkwrap: \(line)\n".utf8)) }
