import Foundation
import ShrinkwrapIR

/// The formats a sweep report can be written in.
public enum ReportFormat: String, CaseIterable, Sendable {
    case markdown, json, csv, html

    public var fileExtension: String {
        switch self {
        case .markdown: return "md"
        case .json: return "json"
        case .csv: return "csv"
        case .html: return "html"
        }
    }
}

/// Renders a `SweepReport` as text. Every renderer is a pure function of the
/// report: no dates, no locale, fixed number formats, sorted keys — the same
/// report always gives the same bytes. When the data is random every format
/// carries `SweepReport.randomDataWarning`.
public enum SweepRenderer {
    public static func render(_ report: SweepReport, as format: ReportFormat) -> String {
        switch format {
        case .markdown: return markdown(report)
        case .json: return json(report)
        case .csv: return csv(report)
        case .html: return html(report)
        }
    }

    // MARK: JSON

    /// Non-finite numbers (a -inf SNR, a NaN error) are written as these strings.
    static let nonFinite = (positive: "inf", negative: "-inf", nan: "nan")

    /// Pretty-printed JSON with sorted keys; nil optionals are omitted. A random-data
    /// report also gets a top-level "warning" key (ignored when decoding).
    public static func json(_ report: SweepReport) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: nonFinite.positive, negativeInfinity: nonFinite.negative, nan: nonFinite.nan)
        do {
            let data = try encoder.encode(report)
            return (String(data: data, encoding: .utf8) ?? "") + "\n"
        } catch {
            // Unreachable with the strategy above (the model holds only strings,
            // numbers and booleans); kept so the function need not throw.
            return "{\n  \"error\" : \"cannot encode the report: \(String(describing: error).escapingControlCharacters.replacingOccurrences(of: "\"", with: "'"))\"\n}\n"
        }
    }

    /// Reads back what `json(_:)` wrote.
    public static func decodeJSON(_ text: String) throws -> SweepReport {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: nonFinite.positive, negativeInfinity: nonFinite.negative, nan: nonFinite.nan)
        return try decoder.decode(SweepReport.self, from: Data(text.utf8))
    }

    // MARK: CSV

    public static let csvHeader = ["mode", "bits", "granularity", "weight_bytes", "file_bytes", "reduction_percent", "bits_per_weight",
                                   "output", "top1", "top5", "mean_cosine", "min_cosine", "snr_db", "psnr_db", "max_abs_error"]

    /// One row per variant × output (variants in mode order, bits descending),
    /// RFC 4180 quoting, "\n" line ends, empty fields for nil. A random-data
    /// report starts with a "# WARNING: …" comment line before the header.
    public static func csv(_ report: SweepReport) -> String {
        var lines: [String] = []
        if report.data.random { lines.append("# " + SweepReport.randomDataWarning) }
        lines.append(csvHeader.joined(separator: ","))
        for v in orderedVariants(report.variants) {
            let common = [v.series, String(v.bits), v.granularity, String(v.size.weightBytes), v.size.fileBytes.map(String.init) ?? "",
                          fmt(v.reductionPercent(vs: report.reference), "%.4f"), fmt(v.bitsPerWeight, "%.4f")]
            for o in v.outputs {
                let fields = common + [
                    o.name,
                    o.top1Agreement.map { fmt($0, "%.4f") } ?? "",
                    o.top5Agreement.map { fmt($0, "%.4f") } ?? "",
                    fmt(o.meanCosine, "%.6f"), fmt(o.minCosine, "%.6f"),
                    o.snrDB.map { fmt($0, "%.4f") } ?? "",
                    o.psnrDB.map { fmt($0, "%.4f") } ?? "",
                    fmt(o.maxAbsError, "%.6g"),
                ]
                lines.append(fields.map(csvField).joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func csvField(_ s: String) -> String {
        guard s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Markdown

    /// GitHub-flavoured Markdown: the summary table first, then per-output,
    /// per-layer and skipped-weight sections.
    public static func markdown(_ report: SweepReport) -> String { markdown(blocks: reportBlocks(report)) }

    /// Blocks as GitHub-flavoured Markdown (plots are HTML only).
    static func markdown(blocks: [Block]) -> String {
        var parts: [String] = []
        for block in blocks {
            switch block {
            case .heading(let level, let inline):
                parts.append(String(repeating: "#", count: level) + " " + markdownInline(inline, inTable: false))
            case .paragraph(let inline):
                parts.append(markdownInline(inline, inTable: false))
            case .warning(let text):
                parts.append("> **" + markdownText(text) + "**")
            case .list(let items):
                parts.append(items.map { "- " + markdownInline($0, inTable: false) }.joined(separator: "\n"))
            case .table(let table):
                parts.append(markdownTable(table))
            case .plot:
                continue
            }
        }
        return parts.joined(separator: "\n\n") + "\n"
    }

    static func markdownTable(_ t: Table) -> String {
        var lines = ["| " + t.headers.map(markdownText).joined(separator: " | ") + " |"]
        lines.append("|" + t.numeric.map { $0 ? "---:|" : "---|" }.joined())
        for row in t.rows {
            lines.append("| " + row.map { markdownInline($0, inTable: true) }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    static func markdownInline(_ inline: Inline, inTable: Bool) -> String {
        inline.map { span in
            switch span {
            case .text(let s): return markdownText(s)
            case .strong(let s): return "**" + markdownText(s) + "**"
            case .code(let s): return markdownCode(s, inTable: inTable)
            }
        }.joined()
    }

    /// Plain text with Markdown's active characters backslash-escaped and line breaks flattened.
    static func markdownText(_ s: String) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "\\", "`", "*", "_", "[", "]", "<", ">", "|", "#": out += "\\" + String(ch)
            case "\n", "\r", "\r\n", "\t": out += " "
            default: out.append(ch)
            }
        }
        return out
    }

    /// A code span fenced with one more backtick than the longest run inside it.
    static func markdownCode(_ s: String, inTable: Bool) -> String {
        var body = String(s.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" || $0 == "\t" ? " " : $0 })
        if inTable { body = body.replacingOccurrences(of: "|", with: "\\|") }
        if body.isEmpty { return "` `" }
        var longest = 0, run = 0
        for ch in body {
            run = ch == "`" ? run + 1 : 0
            longest = max(longest, run)
        }
        let fence = String(repeating: "`", count: longest + 1)
        let pad = body.hasPrefix("`") || body.hasSuffix("`") || (body.hasPrefix(" ") && body.hasSuffix(" ")) ? " " : ""
        return fence + pad + body + pad + fence
    }

    // MARK: HTML

    /// One self-contained HTML5 page: inline CSS, an inline SVG plot, no scripts.
    public static func html(_ report: SweepReport) -> String {
        html(blocks: reportBlocks(report), title: "Shrinkwrap sweep report: \(report.model.file)")
    }

    /// Blocks as a standalone HTML page.
    static func html(blocks: [Block], title: String) -> String {
        var out = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(htmlEscape(title))</title>
        <style>
        \(css)
        </style>
        </head>
        <body>

        """
        for block in blocks {
            switch block {
            case .heading(let level, let inline):
                out += "<h\(level)>\(htmlInline(inline))</h\(level)>\n"
            case .paragraph(let inline):
                out += "<p>\(htmlInline(inline))</p>\n"
            case .warning(let text):
                out += "<p class=\"warning\">\(htmlEscape(text))</p>\n"
            case .list(let items):
                out += "<ul>\n" + items.map { "<li>\(htmlInline($0))</li>\n" }.joined() + "</ul>\n"
            case .table(let table):
                out += htmlTable(table)
            case .plot(let plot):
                out += svgPlot(plot)
            }
        }
        out += "</body>\n</html>\n"
        return out
    }

    static let css = """
    body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
    h1 { font-size: 1.6em; }
    h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ddd; }
    h3 { font-size: 1.05em; }
    table { border-collapse: collapse; margin: 0.5em 0 1em; }
    th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
    th { background: #f3f3f3; }
    td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
    code { font-family: SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; }
    .warning { background: #fdecea; border: 2px solid #c62828; color: #b71c1c; font-weight: bold; padding: 0.6em 1em; }
    svg.plot { display: block; margin: 1em 0; font-size: 12px; }
    """

    static func htmlTable(_ t: Table) -> String {
        func cls(_ i: Int) -> String { i < t.numeric.count && t.numeric[i] ? " class=\"num\"" : "" }
        var out = "<table>\n<thead><tr>"
        for (i, h) in t.headers.enumerated() { out += "<th\(cls(i))>\(htmlEscape(h))</th>" }
        out += "</tr></thead>\n<tbody>\n"
        for row in t.rows {
            out += "<tr>"
            for (i, c) in row.enumerated() { out += "<td\(cls(i))>\(htmlInline(c))</td>" }
            out += "</tr>\n"
        }
        return out + "</tbody>\n</table>\n"
    }

    static func htmlInline(_ inline: Inline) -> String {
        inline.map { span in
            switch span {
            case .text(let s): return htmlEscape(s)
            case .strong(let s): return "<strong>\(htmlEscape(s))</strong>"
            case .code(let s): return "<code>\(htmlEscape(s))</code>"
            }
        }.joined()
    }

    /// Escapes &, <, >, " and ' (text and attribute values alike).
    public static func htmlEscape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for ch in s {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(ch)
            }
        }
        return out
    }

    // MARK: SVG plot

    static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

    /// Axis bounds: [lower, 100] with the lower end 0 unless some value is
    /// negative, then rounded down to a tick. Returns the bounds and the tick step.
    static func axis(_ values: [Double]) -> (lo: Double, hi: Double, step: Double) {
        let lowest = values.filter(\.isFinite).min() ?? 0
        var step = 10.0
        var lo = 0.0
        if lowest < 0 {
            let steps = [10.0, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000]
            for s in steps {
                step = s
                lo = (lowest / s).rounded(.down) * s
                if (100 - lo) / s <= 10 { break }
            }
        }
        return (lo, 100, step)
    }

    static func svgPlot(_ plot: Plot) -> String {
        let width = 760.0, height = 440.0
        let left = 70.0, right = width - 170.0, top = 20.0, bottom = height - 60.0
        let allPoints = plot.series.flatMap(\.points)
        let xAxis = axis(allPoints.map(\.reduction))
        let yAxis = axis(allPoints.map(\.match))
        func px(_ x: Double) -> Double { left + (x - xAxis.lo) / (xAxis.hi - xAxis.lo) * (right - left) }
        func py(_ y: Double) -> Double { bottom - (y - yAxis.lo) / (yAxis.hi - yAxis.lo) * (bottom - top) }
        func n(_ v: Double) -> String { fmt(v, "%.1f") }

        let title = "Size reduction vs agreement"
        var s = "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(width))\" height=\"\(n(height))\""
        s += " viewBox=\"0 0 \(n(width)) \(n(height))\" role=\"img\" aria-label=\"\(htmlEscape(title))\">\n"
        s += "<title>\(htmlEscape(title))</title>\n"
        let frame = "x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(right - left))\" height=\"\(n(bottom - top))\""
        s += "<rect \(frame) fill=\"#fff\"/>\n"

        // Grid and ticks.
        var tick = xAxis.lo
        while tick <= xAxis.hi + 1e-9 {
            let x = px(tick)
            s += "<line x1=\"\(n(x))\" y1=\"\(n(top))\" x2=\"\(n(x))\" y2=\"\(n(bottom))\" stroke=\"#e5e5e5\"/>"
            s += "<line x1=\"\(n(x))\" y1=\"\(n(bottom))\" x2=\"\(n(x))\" y2=\"\(n(bottom + 5))\" stroke=\"#888\"/>"
            s += "<text x=\"\(n(x))\" y=\"\(n(bottom + 18))\" text-anchor=\"middle\">\(fmt(tick, "%.0f"))</text>\n"
            tick += xAxis.step
        }
        tick = yAxis.lo
        while tick <= yAxis.hi + 1e-9 {
            let y = py(tick)
            s += "<line x1=\"\(n(left))\" y1=\"\(n(y))\" x2=\"\(n(right))\" y2=\"\(n(y))\" stroke=\"#e5e5e5\"/>"
            s += "<line x1=\"\(n(left - 5))\" y1=\"\(n(y))\" x2=\"\(n(left))\" y2=\"\(n(y))\" stroke=\"#888\"/>"
            s += "<text x=\"\(n(left - 8))\" y=\"\(n(y + 4))\" text-anchor=\"end\">\(fmt(tick, "%.0f"))</text>\n"
            tick += yAxis.step
        }
        s += "<rect \(frame) fill=\"none\" stroke=\"#888\"/>\n"
        s += "<text x=\"\(n((left + right) / 2))\" y=\"\(n(height - 18))\" text-anchor=\"middle\">size reduction (%)</text>\n"
        let yMid = (top + bottom) / 2
        s += "<text x=\"\(n(18))\" y=\"\(n(yMid))\" text-anchor=\"middle\" transform=\"rotate(-90 \(n(18)) \(n(yMid)))\">\(htmlEscape(plot.yLabel))</text>\n"

        // The reference model: no reduction, full agreement.
        let refX = px(0), refY = py(100)
        s += "<path d=\"M \(n(refX)) \(n(refY - 6)) L \(n(refX + 6)) \(n(refY)) L \(n(refX)) \(n(refY + 6)) L \(n(refX - 6)) \(n(refY)) Z\" fill=\"#777\"/>\n"

        // One polyline and labelled markers per mode. Modes often coincide
        // (linear-lut and kmeans-lut at 8 bits), so earlier series are drawn
        // wider and later ones on top, narrower: every colour stays visible.
        for (i, series) in plot.series.enumerated() {
            let color = palette[i % palette.count]
            let under = Double(plot.series.count - 1 - i)
            let strokeWidth = 2 + 1.5 * under, radius = 4 + 1.5 * under
            let points = series.points.filter { $0.reduction.isFinite && $0.match.isFinite }
            s += "<g class=\"series\" data-mode=\"\(htmlEscape(series.mode))\">\n"
            if points.count >= 2 {
                let coords = points.map { "\(n(px($0.reduction))),\(n(py($0.match)))" }.joined(separator: " ")
                s += "<polyline points=\"\(coords)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"\(n(strokeWidth))\" stroke-linejoin=\"round\"/>\n"
            }
            for p in points {
                let x = px(p.reduction), y = py(p.match)
                s += "<circle cx=\"\(n(x))\" cy=\"\(n(y))\" r=\"\(n(radius))\" fill=\"\(color)\">"
                s += "<title>\(htmlEscape(series.mode)) \(p.bits)-bit: \(reduction(p.reduction)) % smaller, match \(percent(p.match)) %\(p.isCosine ? " (cosine × 100)" : "")</title></circle>"
                s += "<text x=\"\(n(x + 6))\" y=\"\(n(y - 6))\" fill=\"\(color)\">\(p.bits)</text>\n"
            }
            s += "</g>\n"
        }

        // Legend.
        let legendX = right + 20
        var legendY = top + 10
        for (i, series) in plot.series.enumerated() {
            let color = palette[i % palette.count]
            s += "<line x1=\"\(n(legendX))\" y1=\"\(n(legendY))\" x2=\"\(n(legendX + 24))\" y2=\"\(n(legendY))\" stroke=\"\(color)\" stroke-width=\"2\"/>"
            s += "<circle cx=\"\(n(legendX + 12))\" cy=\"\(n(legendY))\" r=\"4\" fill=\"\(color)\"/>"
            s += "<text x=\"\(n(legendX + 32))\" y=\"\(n(legendY + 4))\">\(htmlEscape(series.mode))</text>\n"
            legendY += 20
        }
        s += "<path d=\"M \(n(legendX + 12)) \(n(legendY - 6)) L \(n(legendX + 18)) \(n(legendY)) L \(n(legendX + 12)) \(n(legendY + 6)) L \(n(legendX + 6)) \(n(legendY)) Z\" fill=\"#777\"/>"
        s += "<text x=\"\(n(legendX + 32))\" y=\"\(n(legendY + 4))\">reference</text>\n"
        s += "<text x=\"\(n(legendX))\" y=\"\(n(legendY + 30))\">labels: bits</text>\n"
        s += "</svg>\n"
        return s
    }
}
