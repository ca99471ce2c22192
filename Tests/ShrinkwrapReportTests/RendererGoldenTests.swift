import Foundation
@testable import ShrinkwrapReport
import XCTest
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Golden tests: each fixture report is rendered in every format and compared
/// byte for byte with `Golden/<name>.<ext>`. To accept a renderer change run
///
///     SHRINKWRAP_UPDATE_GOLDEN=1 swift test --filter ShrinkwrapReportTests
///
/// which rewrites the files and fails on purpose; review the diff, then run
/// the tests again without the variable.
final class RendererGoldenTests: XCTestCase {
    static let goldenDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let updating = ProcessInfo.processInfo.environment["SHRINKWRAP_UPDATE_GOLDEN"] == "1"

    func assertGolden(_ text: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) {
        let url = Self.goldenDir.appendingPathComponent(name)
        if Self.updating {
            do {
                try FileManager.default.createDirectory(at: Self.goldenDir, withIntermediateDirectories: true)
                try Data(text.utf8).write(to: url)
                XCTFail("wrote golden \(name) (SHRINKWRAP_UPDATE_GOLDEN=1); review it and rerun without the variable", file: file, line: line)
            } catch {
                XCTFail("cannot write golden \(url.path): \(error)", file: file, line: line)
            }
            return
        }
        guard let data = try? Data(contentsOf: url) else {
            XCTFail("missing golden \(url.path); run with SHRINKWRAP_UPDATE_GOLDEN=1 to create it", file: file, line: line)
            return
        }
        let expected = String(decoding: data, as: UTF8.self)
        guard expected != text else { return }
        let a = expected.components(separatedBy: "\n"), b = text.components(separatedBy: "\n")
        var at = 0
        while at < min(a.count, b.count) && a[at] == b[at] { at += 1 }
        let want = at < a.count ? a[at] : "<end of file>"
        let got = at < b.count ? b[at] : "<end of file>"
        XCTFail("\(name) differs from its golden at line \(at + 1):\n  golden:   \(want)\n  rendered: \(got)\n"
                + "(SHRINKWRAP_UPDATE_GOLDEN=1 rewrites the goldens)", file: file, line: line)
    }

    static let fixtures: [(name: String, report: SweepReport)] = [("sweep", Fixtures.sweep), ("sweep-random", Fixtures.sweepRandom)]

    func testMarkdownGolden() {
        for (name, report) in Self.fixtures { assertGolden(SweepRenderer.markdown(report), "\(name).md") }
    }

    func testJSONGolden() {
        for (name, report) in Self.fixtures { assertGolden(SweepRenderer.json(report), "\(name).json") }
    }

    func testCSVGolden() {
        for (name, report) in Self.fixtures { assertGolden(SweepRenderer.csv(report), "\(name).csv") }
    }

    func testHTMLGolden() {
        for (name, report) in Self.fixtures { assertGolden(SweepRenderer.html(report), "\(name).html") }
    }

    // MARK: Properties every rendering must have

    func testRenderingIsDeterministic() {
        for (_, report) in Self.fixtures {
            for format in ReportFormat.allCases {
                XCTAssertEqual(SweepRenderer.render(report, as: format), SweepRenderer.render(report, as: format))
            }
        }
        // Dictionary insertion order must not matter.
        var shuffled = Fixtures.sweep
        shuffled.options = [:]
        for key in Fixtures.sweep.options.keys.sorted().reversed() { shuffled.options[key] = Fixtures.sweep.options[key] }
        for format in ReportFormat.allCases {
            XCTAssertEqual(SweepRenderer.render(shuffled, as: format), SweepRenderer.render(Fixtures.sweep, as: format))
        }
    }

    func testJSONRoundTrips() throws {
        for (name, report) in Self.fixtures {
            let text = SweepRenderer.json(report)
            XCTAssertEqual(try SweepRenderer.decodeJSON(text), report, name)
            // Also through the default JSONDecoder when every number is finite.
            if name == "sweep" {
                XCTAssertEqual(try JSONDecoder().decode(SweepReport.self, from: Data(text.utf8)), report)
            }
        }
        let text = SweepRenderer.json(Fixtures.sweep)
        XCTAssertFalse(text.contains("\"snrDB\" : null"), "nil optionals are omitted")
        XCTAssertTrue(text.contains("\"schema\" : \"shrinkwrap.sweep/1\""))
        XCTAssertFalse(text.contains("\"warning\""))
        XCTAssertTrue(SweepRenderer.json(Fixtures.sweepRandom).contains("\"warning\" : \"\(SweepReport.randomDataWarning)\""))
    }

    func testRandomWarningInEveryFormat() {
        for format in ReportFormat.allCases {
            let random = SweepRenderer.render(Fixtures.sweepRandom, as: format)
            let real = SweepRenderer.render(Fixtures.sweep, as: format)
            XCTAssertTrue(random.contains(SweepReport.randomDataWarning), "\(format)")
            XCTAssertFalse(real.contains("RANDOM"), "\(format)")
        }
        XCTAssertTrue(SweepRenderer.csv(Fixtures.sweepRandom).hasPrefix("# WARNING"))
        XCTAssertTrue(SweepRenderer.markdown(Fixtures.sweepRandom).contains("\n\n> **WARNING: agreement measured on RANDOM inputs (--random), not real data**\n"))
    }

    func testSummaryTableShape() {
        let md = SweepRenderer.markdown(Fixtures.sweep)
        let lines = md.components(separatedBy: "\n")
        guard let header = lines.firstIndex(where: { $0.hasPrefix("| bits |") }) else { return XCTFail("no summary table") }
        XCTAssertEqual(lines[header], "| bits | fp16 size −% | fp16 match % | linear size −% | linear match % | kmeans-lut size −% | kmeans-lut match % |")
        let rows = lines[(header + 2)...].prefix { $0.hasPrefix("|") }
        XCTAssertEqual(rows.map { $0.components(separatedBy: " | ")[0] }, ["| 16", "| 8", "| 4", "| 2", "| 1"])
        XCTAssertEqual(rows.first, "| 16 | 50.0 | 100.00 | — | — | — | — |")
        XCTAssertEqual(rows.last, "| 1 | — | — | 96.1 | 3.12 | 96.9 | 12.50 |")
        XCTAssertFalse(md.contains("not a score vector"))

        let random = SweepRenderer.markdown(Fixtures.sweepRandom)
        XCTAssertTrue(random.contains("| bits | fp16 size −% | fp16 match % | linear-lut size −% | linear-lut match % | palette size −% | palette match % |"))
        XCTAssertTrue(random.contains("† output `features, \"pooled\"` is not a score vector"))
        XCTAssertTrue(random.contains("| 16 | 50.0 | 100.00† | — | — | — | — |"))
        XCTAssertTrue(random.contains("Several variants share a mode and bit width"))
    }

    func testCSVQuoting() {
        XCTAssertEqual(SweepRenderer.csvField("plain"), "plain")
        XCTAssertEqual(SweepRenderer.csvField("a,b"), "\"a,b\"")
        XCTAssertEqual(SweepRenderer.csvField("say \"hi\""), "\"say \"\"hi\"\"\"")
        XCTAssertEqual(SweepRenderer.csvField("two\nlines"), "\"two\nlines\"")
        let csv = SweepRenderer.csv(Fixtures.sweep)
        let lines = csv.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.first.map(String.init), SweepRenderer.csvHeader.joined(separator: ","))
        XCTAssertEqual(lines.count, 1 + 9 * 2 + 1, "header, 9 variants × 2 outputs, final empty piece")
        for line in lines.dropFirst().dropLast() {
            XCTAssertEqual(line.split(separator: ",", omittingEmptySubsequences: false).count, 15, String(line))
        }
    }

    func testEscaping() {
        XCTAssertEqual(SweepRenderer.htmlEscape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;")
        XCTAssertEqual(SweepRenderer.markdownCode("a|b", inTable: true), "`a\\|b`")
        XCTAssertEqual(SweepRenderer.markdownCode("x`y", inTable: false), "``x`y``")
        XCTAssertEqual(SweepRenderer.markdownCode("`x", inTable: false), "`` `x ``")
        XCTAssertEqual(SweepRenderer.markdownText("a_b *c* <d> | e"), "a\\_b \\*c\\* \\<d\\> \\| e")
        let html = SweepRenderer.html(Fixtures.sweepRandom)
        XCTAssertFalse(html.contains("<net>"))
        XCTAssertTrue(html.contains("a|b &lt;net&gt; &amp; &quot;friends&quot;&#39;s.mlmodel"))
        XCTAssertFalse(html.contains("<script"))
        XCTAssertFalse(html.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "").contains("http"), "no external assets")
    }

    func testNumberFormatting() {
        XCTAssertEqual(fmt(-0.0001, "%.2f"), "0.00")
        XCTAssertEqual(fmt(-1.5, "%.2f"), "-1.50")
        XCTAssertEqual(fmt(.infinity, "%.2f"), "inf")
        XCTAssertEqual(fmt(-.infinity, "%.2f"), "-inf")
        XCTAssertEqual(fmt(.nan, "%.2f"), "nan")
        XCTAssertEqual(fmt(1234.5678, "%.1f"), "1234.6")
    }

    /// The SVG is well-formed XML, and every point lies inside the plot frame.
    func testSVGPlotGeometry() throws {
        for (name, report) in Self.fixtures {
            let html = SweepRenderer.html(report)
            guard let start = html.range(of: "<svg"), let end = html.range(of: "</svg>") else { return XCTFail("no svg in \(name)") }
            let svg = String(html[start.lowerBound..<end.upperBound])
            let parser = XMLParser(data: Data(svg.utf8))
            XCTAssertTrue(parser.parse(), "\(name): SVG is not well-formed: \(String(describing: parser.parserError))")

            // The frame rectangle is the first <rect>.
            let frame = try XCTUnwrap(attributes(of: "rect", in: svg).first)
            let x0 = try XCTUnwrap(frame["x"]), y0 = try XCTUnwrap(frame["y"])
            let x1 = try x0 + XCTUnwrap(frame["width"]), y1 = try y0 + XCTUnwrap(frame["height"])
            // Series markers (radius 4 for the last series, wider for earlier ones so coinciding modes stay visible), then the legend's.
            let circles = attributes(of: "circle", in: svg)
            XCTAssertTrue(circles.allSatisfy { ($0["r"] ?? 0) >= 4 }, name)
            let expected = report.variants.isEmpty ? 0 : Summary(report).plot.series.reduce(0) { $0 + $1.points.count }
            // Plot points plus one legend marker per mode.
            XCTAssertEqual(circles.count, expected + Summary(report).modes.count, name)
            for c in circles.prefix(expected) {
                let cx = try XCTUnwrap(c["cx"]), cy = try XCTUnwrap(c["cy"])
                XCTAssertTrue((x0...x1).contains(cx) && (y0...y1).contains(cy), "\(name): point (\(cx), \(cy)) outside the frame")
            }
        }
        // Higher agreement is drawn higher (smaller y); larger reduction further right.
        let plot = Summary(Fixtures.sweep).plot
        let linear = try XCTUnwrap(plot.series.first { $0.mode == "linear" })
        XCTAssertEqual(linear.points.map(\.bits), [8, 4, 2, 1])
    }

    /// Numeric attributes of every `<tag …>` in `svg`.
    func attributes(of tag: String, in svg: String) -> [[String: Double]] {
        var result: [[String: Double]] = []
        var rest = svg[...]
        while let open = rest.range(of: "<\(tag) ") {
            guard let close = rest[open.upperBound...].firstIndex(of: ">") else { break }
            let body = rest[open.upperBound..<close]
            var attrs: [String: Double] = [:]
            for part in body.split(separator: " ") {
                let kv = part.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { continue }
                let value = kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"/"))
                if let d = Double(value) { attrs[String(kv[0])] = d }
            }
            result.append(attrs)
            rest = rest[close...]
        }
        return result
    }
}
