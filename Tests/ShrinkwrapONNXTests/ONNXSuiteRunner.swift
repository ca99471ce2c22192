import Foundation
import Shrinkwrap
import ShrinkwrapIR
import ShrinkwrapONNX
import ShrinkwrapRuntime
import XCTest

/// Runs ONNX test-suite folders (model.onnx + test_data_set_N/{input,output}_M.pb)
/// through the importer and interpreter and compares with the stored outputs.
struct ONNXSuiteRunner {
    struct Tolerance { var rtol: Double; var atol: Double }

    enum Outcome {
        case passed
        case failed(String)
        case excluded(String)
        /// The model uses ops the importer does not translate: not run.
        case unsupported(String)
        /// Non-tensor values (sequences, maps): not run.
        case nonTensor(String)
    }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let testdata = packageRoot.appendingPathComponent(".testdata")

    var exclusions: [(pattern: String, reason: String)] = []
    var tolerances: [(pattern: String, tol: Tolerance, reason: String)] = []
    var defaultTolerance = Tolerance(rtol: 1e-4, atol: 1e-5)

    /// Reads the exclusion file: `test_name  # reason` excludes (a trailing `*`
    /// matches a prefix); `~test_name rtol=… atol=…  # reason` sets a tolerance.
    init(exclusionFile: URL) throws {
        let text = try String(contentsOf: exclusionFile, encoding: .utf8)
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let hash = line.range(of: "#") else {
                throw NSError(domain: "exclusions", code: 1, userInfo: [NSLocalizedDescriptionKey: "line \(i + 1) has no '# reason': \(line)"])
            }
            let reason = line[hash.upperBound...].trimmingCharacters(in: .whitespaces)
            let body = line[..<hash.lowerBound].split(separator: " ").map(String.init)
            guard let first = body.first, !reason.isEmpty else {
                throw NSError(domain: "exclusions", code: 1, userInfo: [NSLocalizedDescriptionKey: "line \(i + 1) needs a name and a reason"])
            }
            if first.hasPrefix("~") {
                var tol = defaultTolerance
                for kv in body.dropFirst() {
                    let p = kv.split(separator: "=")
                    guard p.count == 2, let v = Double(p[1]) else { continue }
                    if p[0] == "rtol" { tol.rtol = v } else if p[0] == "atol" { tol.atol = v }
                }
                tolerances.append((String(first.dropFirst()), tol, reason))
            } else {
                exclusions.append((first, reason))
            }
        }
    }

    /// `*` matches any run of characters.
    static func matches(_ pattern: String, _ name: String) -> Bool {
        let parts = pattern.split(separator: "*", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 1 { return name == pattern }
        guard name.hasPrefix(parts[0]), name.hasSuffix(parts[parts.count - 1]),
              name.count >= parts[0].count + parts[parts.count - 1].count else { return false }
        var rest = Substring(name.dropFirst(parts[0].count).dropLast(parts[parts.count - 1].count))
        for p in parts.dropFirst().dropLast() where !p.isEmpty {
            guard let r = rest.range(of: p) else { return false }
            rest = rest[r.upperBound...]
        }
        return true
    }

    func run(testDirectory dir: URL) -> Outcome {
        let name = dir.lastPathComponent
        if let skip = try? String(contentsOf: dir.appendingPathComponent("SKIP"), encoding: .utf8) {
            return .nonTensor(skip.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        if let e = exclusions.first(where: { Self.matches($0.pattern, name) }) { return .excluded(e.reason) }
        let tol = tolerances.first(where: { Self.matches($0.pattern, name) })?.tol ?? defaultTolerance
        let graph: Graph
        do {
            graph = try ONNXImporter.importModel(at: dir.appendingPathComponent("model.onnx"))
        } catch ImportError.unsupportedOps(_, let ops) {
            return .unsupported(ops.joined(separator: ","))
        } catch ImportError.unsupported(_, let what) {
            return .unsupported(what)
        } catch {
            return .failed("import: \(error)")
        }
        let interpreter: Interpreter
        do { interpreter = try Interpreter(graph: graph, options: .init(threads: 2)) } catch {
            return .failed("plan: \(error)")
        }
        let fm = FileManager.default
        let sets = ((try? fm.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasPrefix("test_data_set_") }.sorted()
        if sets.isEmpty { return .failed("no test_data_set_* folder") }
        for set in sets {
            let sdir = dir.appendingPathComponent(set)
            do {
                var feeds: [String: Tensor] = [:]
                let runtimeInputs = graph.runtimeInputs
                var k = 0
                while fm.fileExists(atPath: sdir.appendingPathComponent("input_\(k).pb").path) {
                    let url = sdir.appendingPathComponent("input_\(k).pb")
                    let t = try ONNXImporter.decodeTensor(data: try Data(contentsOf: url), file: url.path)
                    guard k < runtimeInputs.count else { break }
                    feeds[runtimeInputs[k].name] = t
                    k += 1
                }
                let outs = try interpreter.run(feeds)
                for (j, o) in graph.outputs.enumerated() {
                    let url = sdir.appendingPathComponent("output_\(j).pb")
                    guard fm.fileExists(atPath: url.path) else { continue }
                    let want = try ONNXImporter.decodeTensor(data: try Data(contentsOf: url), file: url.path)
                    guard let got = outs[o.name] else { return .failed("\(set): output '\(o.name)' missing") }
                    if let diff = Self.compare(got, want, tol) { return .failed("\(set) output '\(o.name)': \(diff)") }
                }
            } catch {
                return .failed("\(set): \(error)")
            }
        }
        return .passed
    }

    /// nil when equal within tolerance, else a description of the difference.
    static func compare(_ got: Tensor, _ want: Tensor, _ tol: Tolerance) -> String? {
        if got.shape != want.shape { return "shape \(got.shape), expected \(want.shape)" }
        let gClass = got.dtype.isFloatingPoint ? 0 : got.dtype == .bool ? 2 : 1
        let wClass = want.dtype.isFloatingPoint ? 0 : want.dtype == .bool ? 2 : 1
        if gClass != wClass || (got.dtype != want.dtype && gClass != 0) { return "dtype \(got.dtype), expected \(want.dtype)" }
        let g = got.doubles, w = want.doubles
        var worst = 0.0, worstIndex = -1
        for i in 0..<g.count {
            let a = g[i], b = w[i]
            if a.isNaN && b.isNaN { continue }
            if a == b { continue }
            let err = abs(a - b)
            if err.isNaN || err > tol.atol + tol.rtol * abs(b) {
                if worstIndex < 0 || err > worst || err.isNaN { worst = err; worstIndex = i }
            }
        }
        if worstIndex >= 0 {
            return "element \(worstIndex): got \(g[worstIndex]), expected \(w[worstIndex]) (abs err \(worst))"
        }
        return nil
    }

    /// Runs every test folder under `root` whose name contains one of the
    /// filter substrings (all when empty); prints failures and a summary.
    func runSuite(root: URL, label: String, filter: [String]) -> (passed: Int, failed: [String], excluded: Int, unsupported: Int, nonTensor: Int) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).sorted()
        var passed = 0, excluded = 0, unsupported = 0, nonTensor = 0
        var failed: [String] = []
        var unsupportedOps: [String: Int] = [:]
        let trace = ProcessInfo.processInfo.environment["SHRINKWRAP_TRACE"] != nil
        for n in names where filter.isEmpty || filter.contains(where: { n.contains($0) }) {
            let dir = root.appendingPathComponent(n)
            guard FileManager.default.fileExists(atPath: dir.appendingPathComponent("model.onnx").path) else { continue }
            if trace { FileHandle.standardError.write(Data("RUN \(label)/\(n)\n".utf8)) }
            switch run(testDirectory: dir) {
            case .passed: passed += 1
            case .failed(let why): failed.append("\(n): \(why)"); print("FAIL \(label)/\(n): \(why)")
            case .excluded: excluded += 1
            case .unsupported(let what): unsupported += 1; unsupportedOps[what, default: 0] += 1
                if !filter.isEmpty { print("UNSUPPORTED \(label)/\(n): \(what)") }
            case .nonTensor: nonTensor += 1
            }
        }
        if ProcessInfo.processInfo.environment["SHRINKWRAP_LIST_UNSUPPORTED"] != nil {
            for (k, v) in unsupportedOps.sorted(by: { $0.value > $1.value }) { print("  unsupported: \(k) ×\(v)") }
        }
        return (passed, failed, excluded, unsupported, nonTensor)
    }
}
