import ArgumentParser
import Foundation
import Shrinkwrap
import ShrinkwrapCompression
import ShrinkwrapReport

struct TuneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tune",
        abstract: "Choose each weight's compression to keep an agreement target at the fewest bytes, and write the model and its plan.",
        discussion: """
        Measures each candidate on each weight alone (the rest of the model float32) on the calibration \
        data, walks from float32 to the smallest settings taking the least output error per byte saved, \
        picks the smallest point that keeps --min-agreement on the calibration data, and measures it on \
        --data (validation). Writes the model (-o), the plan (--plan-out: `convert --plan PLAN \
        --calibration CAL` gives the same bytes) and --report files with the size / agreement path. \
        Exits 3 when the target is not met on validation.
        """)

    @Argument(help: "The model file.")
    var model: String

    @OptionGroup(title: "TensorFlow graphs") var source: ImportFlags

    @OptionGroup var data: DataFlags

    @Option(name: .customLong("calibration"), help: ArgumentHelp("Data to choose on and fit the data-aware methods to (the forms --data takes); without it, --data serves both and the report says so.", valueName: "data"))
    var calibration: [String] = []

    @OptionGroup var shapes: ShapeFlags

    @Option(name: .customLong("min-agreement"), help: "Top-1 agreement (percent) of the first output to keep.")
    var minAgreement: Double

    @Option(name: .customLong("max-bits-per-weight"), help: "Fail (exit 3) when keeping the target takes more bits per weight than this (tables and scales included).")
    var maxBitsPerWeight: Double?

    @Option(help: ArgumentHelp("Settings to choose from, comma-separated MODE[:BITS[:GRANULARITY[:METHOD]]] (method default: the most data-aware the mode offers). Default: \(TuneCandidate.defaults.joined(separator: ",")).", valueName: "list"))
    var candidates: String?

    @Option(name: .customLong("min-elements"), help: "Leave weights with fewer elements alone (default 2048).")
    var minElements: Int?

    @Flag(name: .customLong("keep-batchnorm"), help: "Do not fold BatchNormalizations into their Convs first (folding is the default: the plan says so, and convert --plan does the same).")
    var keepBatchNorm = false

    @Flag(name: .customLong("no-bias-correction"), help: "Do not fold each compressed Conv / Gemm weight's expected output shift into its bias (done by default, in every candidate measured; the plan says so).")
    var noBiasCorrection = false

    @Option(name: .customLong("sensitivity-inputs"), help: "Calibration inputs per sensitivity run.")
    var sensitivityInputs = 64

    @Option(name: .shortAndLong, help: ArgumentHelp("Write the tuned model here (\(ModelFormats.writableExtensions)); only candidates this format can hold are tried."))
    var output: String

    @Option(name: .customLong("plan-out"), help: "Write the chosen plan (JSON) here.")
    var planOut: String?

    @OptionGroup var export: ExportFlags

    @Option(help: "Worker threads (default: all cores); the result does not depend on it.")
    var threads: Int?

    @Flag(help: "No progress on stderr.")
    var quiet = false

    func run() throws {
        guard (0...100).contains(minAgreement) else { throw CLIError(description: "--min-agreement must be a percentage 0–100") }
        if let b = maxBitsPerWeight, !(b > 0) { throw CLIError(description: "--max-bits-per-weight must be positive") }
        guard sensitivityInputs >= 1 else { throw CLIError(description: "--sensitivity-inputs must be at least 1") }
        var o = TuneOptions()
        o.minAgreement = minAgreement
        o.maxBitsPerWeight = maxBitsPerWeight
        o.candidates = try (candidates.map { $0.split(separator: ",").map(String.init) } ?? TuneCandidate.defaults).map {
            try TuneCandidate(parsing: $0.trimmingCharacters(in: .whitespaces))
        }
        o.minElements = minElements
        o.foldBatchNorm = !keepBatchNorm
        o.biasCorrection = !noBiasCorrection
        o.threads = threads
        o.sensitivityInputs = sensitivityInputs
        o.format = ModelFormats.format(for: URL(fileURLWithPath: output))
        o.exportOptions = export.options
        let reads = [model] + data.data + calibration
        try Models.checkWritable(output, inputs: reads, options: export.options)
        if let p = planOut, reads.contains(p) || p == output { throw CLIError(description: "--plan-out \(p) would overwrite an input or the model") }
        var graph = try Models.load(model, options: source.options)
        try shapes.apply(to: &graph)
        // Every input set is read and checked before any work.
        let validation = try data.load(graph: graph, quiet: quiet)
        let cal = calibration.isEmpty ? nil : try Calibration.load(calibration, graph: graph, options: try data.prep.options())
        let outcome = try Tune.run(model: model, graph: graph, validation: validation, calibration: cal, options: o, progress: progressLine(quiet))
        let written = try Models.save(outcome.graph, to: output, inputs: reads, options: export.options)
        if !quiet { stderrLine("wrote \(output)\(written.sizeSummary.map { ": " + $0 } ?? "")") }
        if let p = planOut {
            try AtomicFile.write(Data(outcome.plan.json.utf8), to: URL(fileURLWithPath: p), protecting: (reads + [output]).map { URL(fileURLWithPath: $0) })
        }
        for f in data.reports {
            let ext = URL(fileURLWithPath: f).pathExtension.lowercased()
            guard let format = ReportFormat.allCases.first(where: { $0.fileExtension == ext }) else {
                throw CLIError(description: "\(f): report files end in .md, .json, .csv or .html")
            }
            try AtomicFile.write(Data(TuneRenderer.render(outcome.report, as: format).utf8), to: URL(fileURLWithPath: f),
                                 protecting: (reads + [output]).map { URL(fileURLWithPath: $0) })
        }
        print(TuneRenderer.render(outcome.report, as: .markdown), terminator: "")
        if !outcome.met {
            stderrLine(String(format: "the target (top-1 agreement ≥ %.2f%%%@) is not met", minAgreement,
                              maxBitsPerWeight.map { String(format: " within %.2f bits per weight", $0) } ?? ""))
            Foundation.exit(QualityGate.failedExitCode)
        }
    }
}
