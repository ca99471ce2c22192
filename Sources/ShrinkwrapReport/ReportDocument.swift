import Foundation
import ShrinkwrapCompression

// The content shared by the Markdown and HTML renderers: a report is first
// turned into a list of blocks (headings, paragraphs, tables), then each
// renderer writes those blocks in its own syntax. Keeping the table contents
// in one place means the two human-readable formats cannot drift apart.

/// A run of inline text.
enum Span: Equatable {
    case text(String)
    /// A name taken from the model or data (rendered as code).
    case code(String)
    case strong(String)
}

typealias Inline = [Span]

struct Table {
    var headers: [String]
    /// Right-align (numeric) columns.
    var numeric: [Bool]
    var rows: [[Inline]]
}

enum Block {
    case heading(level: Int, Inline)
    case paragraph(Inline)
    case warning(String)
    case list([Inline])
    case table(Table)
    /// The size/agreement plot (HTML only).
    case plot(Plot)
}

/// One point of the size/agreement plot and of the summary table.
struct PlotPoint {
    var bits: Int
    var reduction: Double
    var match: Double
    /// True when `match` is a mean cosine × 100, not a top-1 agreement.
    var isCosine: Bool
}

struct PlotSeries {
    var mode: String
    var points: [PlotPoint]
}

struct Plot {
    var series: [PlotSeries]
    var yLabel: String
}

/// Placeholder for an empty cell.
let emptyCell = "—"
/// Marks a summary match value that is a cosine, not a top-1 agreement.
let cosineMarker = "†"

// MARK: - Number formatting

/// `String(format:)` with the C locale's decimal point; non-finite values as
/// "inf", "-inf", "nan"; a negative zero result ("-0.00") without its sign.
func fmt(_ x: Double, _ spec: String) -> String {
    if x.isNaN { return "nan" }
    if x.isInfinite { return x > 0 ? "inf" : "-inf" }
    let s = String(format: spec, x)
    if s.hasPrefix("-"), s.dropFirst().allSatisfy({ $0 == "0" || $0 == "." }) { return String(s.dropFirst()) }
    return s
}

func percent(_ x: Double) -> String { fmt(x, "%.2f") }
func reduction(_ x: Double) -> String { fmt(x, "%.1f") }
func cosine(_ x: Double) -> String { fmt(x, "%.6f") }
func db(_ x: Double) -> String { fmt(x, "%.2f") }
func small(_ x: Double) -> String { fmt(x, "%.4g") }

/// A dB value where nil means "identical".
func dbOrInf(_ x: Double?) -> String { x.map(db) ?? "inf" }

// MARK: - Ordering

/// Modes in report order: the codec table's, then unknown ones alphabetically.
func modeRank(_ mode: String) -> Int {
    let parts = mode.split(separator: " ", maxSplits: 1).map(String.init)
    let method = parts.count > 1 ? (CompressionMethod.allCases.firstIndex { $0.rawValue == parts[1] } ?? CompressionMethod.allCases.count) : 0
    return WeightCodecs.reportRank(parts.first ?? mode) * 16 + method
}

func orderedModes(_ variants: [Variant]) -> [String] {
    let modes = Set(variants.map(\.series))
    return modes.sorted { a, b in
        let ra = modeRank(a), rb = modeRank(b)
        return ra != rb ? ra < rb : a < b
    }
}

/// Variants by mode order, then bits descending, then granularity; report order last.
func orderedVariants(_ variants: [Variant]) -> [Variant] {
    let indexed = variants.enumerated().map { ($0.offset, $0.element) }
    return indexed.sorted { x, y in
        let a = x.1, b = y.1
        let ra = modeRank(a.series), rb = modeRank(b.series)
        if ra != rb { return ra < rb }
        if a.series != b.series { return a.series < b.series }
        if a.bits != b.bits { return a.bits > b.bits }
        if a.granularity != b.granularity { return a.granularity < b.granularity }
        return x.0 < y.0
    }.map(\.1)
}

/// Output names in order of first appearance over the ordered variants.
func outputNames(_ variants: [Variant]) -> [String] {
    var seen = Set<String>()
    var names: [String] = []
    for v in variants {
        for o in v.outputs where seen.insert(o.name).inserted { names.append(o.name) }
    }
    return names
}

// MARK: - The summary ("book") table

struct Summary {
    /// The output whose agreement the table shows.
    var primaryOutput: String?
    var modes: [String]
    var bits: [Int]
    /// cells[bits][mode] → chosen variant.
    var cell: [Int: [String: Variant]]
    /// True when several variants share a (mode, bits) and only the first is shown.
    var hidesDuplicates: Bool
    /// True when some shown match value is a mean cosine, not a top-1 agreement.
    var usesCosine: Bool
    var reference: SizeInfo
    /// Every variant has a file size (so size −% compares files, not weights).
    var allFileSizes: Bool

    init(_ report: SweepReport) {
        let variants = orderedVariants(report.variants)
        reference = report.reference
        allFileSizes = variants.allSatisfy { $0.size.fileBytes != nil }
        primaryOutput = variants.lazy.compactMap { $0.outputs.first?.name }.first
        modes = orderedModes(variants)
        bits = Array(Set(variants.map(\.bits))).sorted(by: >)
        var cell: [Int: [String: Variant]] = [:]
        var duplicates = false
        for v in variants {
            if cell[v.bits]?[v.series] != nil { duplicates = true; continue }
            cell[v.bits, default: [:]][v.series] = v
        }
        self.cell = cell
        hidesDuplicates = duplicates
        usesCosine = false
        for b in bits {
            for m in modes {
                if let v = cell[b]?[m], let o = output(of: v), o.top1Agreement == nil { usesCosine = true }
            }
        }
    }

    func output(of v: Variant) -> OutputMetrics? {
        guard let name = primaryOutput else { return nil }
        return v.outputs.first { $0.name == name }
    }

    /// The match value in percent: top-1 agreement, else mean cosine × 100.
    func match(of v: Variant) -> (value: Double, isCosine: Bool)? {
        guard let o = output(of: v) else { return nil }
        if let t = o.top1Agreement { return (t, false) }
        return (o.meanCosine * 100, true)
    }

    var table: Table {
        var headers = ["bits"]
        for m in modes { headers += ["\(m) size −%", "\(m) match %"] }
        var rows: [[Inline]] = []
        for b in bits {
            var row: [Inline] = [[.text(String(b))]]
            for m in modes {
                guard let v = cell[b]?[m] else {
                    row += [[.text(emptyCell)], [.text(emptyCell)]]
                    continue
                }
                row.append([.text(reduction(v.reductionPercent(vs: reference)))])
                if let m = match(of: v) {
                    row.append([.text(percent(m.value) + (m.isCosine ? cosineMarker : ""))])
                } else {
                    row.append([.text(emptyCell)])
                }
            }
            rows.append(row)
        }
        return Table(headers: headers, numeric: Array(repeating: true, count: headers.count), rows: rows)
    }

    var notes: [Inline] {
        var notes: [Inline] = []
        // reductionPercent uses file sizes only when the reference and every variant have one.
        let sizeBasis = reference.fileBytes != nil && allFileSizes ? "file" : "weight"
        if let name = primaryOutput {
            notes.append([.text("size −% is the \(sizeBasis) size reduction against the reference; match % compares output "),
                          .code(name), .text(" with the reference model: its top-1 agreement"
                                             + (usesCosine ? ", or where marked \(cosineMarker) its mean cosine similarity × 100." : "."))])
            if usesCosine {
                notes.append([.text("\(cosineMarker) output "), .code(name),
                              .text(" is not a score vector: match % is its mean cosine similarity × 100, not a top-1 agreement.")])
            }
        } else {
            notes.append([.text("size −% is the \(sizeBasis) size reduction against the reference; no outputs were compared.")])
        }
        if hidesDuplicates {
            notes.append([.text("Several variants share a mode and bit width; the table shows the first one (by granularity), all are listed below.")])
        }
        return notes
    }

    var plot: Plot {
        var series: [PlotSeries] = []
        for m in modes {
            var points: [PlotPoint] = []
            for b in bits {
                guard let v = cell[b]?[m], let value = match(of: v) else { continue }
                points.append(PlotPoint(bits: b, reduction: v.reductionPercent(vs: reference), match: value.value, isCosine: value.isCosine))
            }
            series.append(PlotSeries(mode: m, points: points))
        }
        return Plot(series: series, yLabel: usesCosine ? "match (%): top-1 agreement or cosine × 100" : "top-1 agreement (%)")
    }
}

// MARK: - The document

func reportBlocks(_ report: SweepReport) -> [Block] {
    var blocks: [Block] = [.heading(level: 1, [.text("Shrinkwrap sweep report")])]
    if report.data.random { blocks.append(.warning(SweepReport.randomDataWarning)) }

    let ref = report.reference
    var refLine: Inline = [.text("Reference: \(ref.weightBytes) weight bytes, \(ref.weightCount) weights")]
    if ref.weightCount > 0 { refLine.append(.text(" (\(fmt(8 * Double(ref.weightBytes) / Double(ref.weightCount), "%.2f")) bits/weight)")) }
    if let f = ref.fileBytes { refLine.append(.text(", file \(f) bytes")) }
    var optionLine: Inline = [.text("Options: ")]
    if report.options.isEmpty {
        optionLine.append(.text("none"))
    } else {
        for (i, key) in report.options.keys.sorted().enumerated() {
            if i > 0 { optionLine.append(.text(", ")) }
            optionLine.append(.code("\(key)=\(report.options[key] ?? "")"))
        }
    }
    blocks.append(.list([
        [.text("Model: "), .code(report.model.file), .text(" (\(report.model.format)), sha256 "), .code(report.model.sha256)],
        [.text("Data: \(report.data.description), \(report.data.count) inputs\(report.data.random ? " (RANDOM)" : ""), sha256 "),
         .code(report.data.sha256)],
        refLine,
        optionLine,
        [.text("Tool: \(report.tool), schema "), .code(report.schema)],
    ]))

    let variants = orderedVariants(report.variants)
    let summary = Summary(report)
    blocks.append(.heading(level: 2, [.text("Summary")]))
    if variants.isEmpty {
        blocks.append(.paragraph([.text("No variants.")]))
    } else {
        blocks.append(.table(summary.table))
        for note in summary.notes { blocks.append(.paragraph(note)) }
        blocks.append(.plot(summary.plot))
    }

    blocks.append(.heading(level: 2, [.text("Variants")]))
    if !variants.isEmpty {
        let rows: [[Inline]] = variants.map { v in
            [[.text(v.series)], [.text(String(v.bits))], [.text(v.granularity)],
             [.text(String(v.size.weightBytes))], [.text(v.size.fileBytes.map(String.init) ?? emptyCell)],
             [.text(fmt(v.bitsPerWeight, "%.2f"))], [.text(reduction(v.reductionPercent(vs: report.reference)))],
             v.file.map { [.code($0)] } ?? [.text(emptyCell)]]
        }
        blocks.append(.table(Table(headers: ["mode", "bits", "granularity", "weight bytes", "file bytes", "bits/weight", "size −%", "file"],
                                   numeric: [false, true, false, true, true, true, true, false], rows: rows)))
    } else {
        blocks.append(.paragraph([.text("None.")]))
    }

    for name in outputNames(variants) {
        blocks.append(.heading(level: 2, [.text("Output "), .code(name)]))
        var rows: [[Inline]] = []
        var flips: [[Inline]] = []
        for v in variants {
            guard let o = v.outputs.first(where: { $0.name == name }) else { continue }
            rows.append([[.text(v.series)], [.text(String(v.bits))], [.text(v.granularity)], [.text(String(o.inputs))],
                         [.text(o.classes.map(String.init) ?? emptyCell)],
                         [.text(o.top1Agreement.map(percent) ?? emptyCell)], [.text(o.top5Agreement.map(percent) ?? emptyCell)],
                         [.text(cosine(o.meanCosine))], [.text(cosine(o.minCosine))],
                         [.text(dbOrInf(o.snrDB))], [.text(dbOrInf(o.psnrDB))], [.text(small(o.maxAbsError))]])
            for f in o.flips {
                flips.append([[.text(v.label)], [.code(f.reference)], [.code(f.candidate)], [.text(String(f.count))]])
            }
        }
        blocks.append(.table(Table(
            headers: ["mode", "bits", "granularity", "inputs", "classes", "top-1 %", "top-5 %", "mean cos", "min cos", "SNR dB", "PSNR dB", "max abs err"],
            numeric: [false, true, false] + Array(repeating: true, count: 9), rows: rows)))
        if !flips.isEmpty {
            blocks.append(.paragraph([.strong("Top-1 label flips")]))
            blocks.append(.table(Table(headers: ["variant", "reference", "candidate", "count"],
                                       numeric: [false, false, false, true], rows: flips)))
        }
    }

    blocks.append(.heading(level: 2, [.text("Layers")]))
    let withLayers = variants.filter { !$0.layers.isEmpty }
    if withLayers.isEmpty { blocks.append(.paragraph([.text("No per-layer metrics.")])) }
    for v in withLayers {
        blocks.append(.heading(level: 3, [.text(v.label)]))
        let rows: [[Inline]] = v.layers.map { l in
            [[.code(l.node)], [.text(l.op)], l.weight.map { [.code($0)] } ?? [.text(emptyCell)],
             [.text(l.weight == nil && l.weightSQNR == nil ? emptyCell : dbOrInf(l.weightSQNR))],
             [.text(dbOrInf(l.outputSQNR))]]
        }
        blocks.append(.table(Table(headers: ["node", "op", "weight", "weight SQNR dB", "output SQNR dB"],
                                   numeric: [false, false, false, true, true], rows: rows)))
    }
    if !withLayers.isEmpty { blocks.append(.paragraph([.text("SQNR \"inf\": identical to the reference.")])) }

    blocks.append(.heading(level: 2, [.text("Skipped weights")]))
    let withSkips = variants.filter { !$0.skipped.isEmpty }
    if withSkips.isEmpty { blocks.append(.paragraph([.text("None.")])) }
    for v in withSkips {
        blocks.append(.heading(level: 3, [.text(v.label)]))
        blocks.append(.table(Table(headers: ["weight", "reason"], numeric: [false, false],
                                   rows: v.skipped.map { [[.code($0.name)], [.text($0.reason)]] })))
    }
    return blocks
}
