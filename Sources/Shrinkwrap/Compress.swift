import Foundation
import ShrinkwrapCompression
import ShrinkwrapIR

/// Compression settings as the command line gives them.
public struct CompressionSettings: Sendable {
    public var mode: String?
    public var bits: Int?
    public var granularity: String?
    /// `CompressionMethod`'s name.
    public var method: String?
    /// The codec options given (`--symmetric`, `--lut FILE` …), by option key; the codec of `mode` checks them.
    public var codecSettings: [String: CodecSetting] = [:]
    public var planFile: String?
    /// `--fold-batchnorm`: beats the plan file's setting when on.
    public var foldBatchNorm = false
    /// `--bias-correction`.
    public var biasCorrection = false
    public var minElements: Int?

    public init() {}

    /// The width a report names for these settings: the given bits, else the
    /// mode's fixed width, else the codecs' default; 32 without compression.
    public var reportedBits: Int {
        if let bits { return bits }
        guard let mode else { return planFile == nil ? 32 : CodecOptions().bits }
        return (try? WeightCodecs.codec(named: mode))?.fixedBits ?? CodecOptions().bits
    }

    /// The plan: the file's rules, with the flags as the global rule (flags
    /// beat the file's "global"; name and op-type rules still beat both).
    public func plan() throws -> CompressionPlan {
        var plan = try planFile.map { try CompressionPlan.load($0) } ?? CompressionPlan()
        if let minElements {
            guard minElements >= 0 else { throw CompressionError.badPlan(file: "--min-elements", reason: "must be at least 0") }
            plan.minElements = minElements
        }
        if foldBatchNorm { plan.foldBatchNorm = true }
        if biasCorrection { plan.biasCorrection = true }
        let origin = SettingOrigin.commandLine
        guard let mode else {
            if planFile == nil { throw origin.error("give --mode or --plan") }
            if bits != nil || granularity != nil || method != nil || !codecSettings.isEmpty {
                let given = (["bits", "granularity", "method"] + WeightCodecs.allOptions.map(\.key)).map(origin.name)
                throw origin.error("\(given.dropLast().joined(separator: ", ")) and \(given.last ?? "") need --mode")
            }
            return plan
        }
        let request = CodecRequest(bits: bits, granularity: try granularity.map { try Granularity(parsing: $0) },
                                   method: try method.map { m throws(CompressionError) in
                                       guard let parsed = CompressionMethod(rawValue: m) else {
                                           throw origin.error("--method \(m): expected \(CompressionMethod.allCases.map(\.rawValue).joined(separator: ", "))")
                                       }
                                       return parsed
                                   },
                                   settings: codecSettings)
        plan.global = .compress(CompressionRule(mode: mode, options: try WeightCodecs.options(mode: mode, request, origin: origin)))
        return plan
    }
}

extension CompressionLog {
    /// A fixed-width table, one line per constant, then totals.
    public var table: String {
        func fmt(_ x: Double?, _ f: String) -> String { x.map { String(format: f, $0) } ?? "-" }
        var rows: [[String]] = [["weight", "shape", "encoding", "before", "after", "SQNR dB", "max |err|", "note"]]
        for e in entries {
            let note = e.skipped.map { "skipped: \($0)" } ?? ([e.rule ?? ""] + e.notes).joined(separator: "; ")
            let sqnr = e.compressed ? (e.sqnrDB.map { String(format: "%.2f", $0) } ?? "exact") : "-"
            rows.append([e.name, "[" + e.shape.map(String.init).joined(separator: ",") + "]", e.encoding,
                         Inspection.formatBytes(e.bytesBefore), Inspection.formatBytes(e.bytesAfter),
                         sqnr, e.compressed ? fmt(e.maxAbsError, "%.3g") : "-", note])
        }
        var widths = [Int](repeating: 0, count: rows[0].count)
        for r in rows { for (i, c) in r.enumerated() where i < r.count - 1 { widths[i] = max(widths[i], min(c.count, 48)) } }
        var out = ""
        for r in rows {
            var line = ""
            for (i, c) in r.enumerated() {
                let cell = c.count > 48 && i < r.count - 1 ? String(c.prefix(47)) + "…" : c
                line += i < r.count - 1 ? cell + String(repeating: " ", count: max(0, widths[i] - cell.count) + 2) : cell
            }
            out += line.escapingControlCharacters.trimmingTrailingSpaces + "\n"
        }
        let before = bytesBefore, after = bytesAfter
        let pct = before > 0 ? 100 * (1 - Double(after) / Double(before)) : 0
        if let n = foldedBatchNorms { out += "\(n) BatchNormalization(s) folded into their Conv(s) first\n" }
        out += String(format: "%d of %d constants compressed: %@ → %@ (%.1f%% smaller), %.2f s on %d thread(s)\n",
                      compressedCount, entries.count, Inspection.formatBytes(before), Inspection.formatBytes(after), pct, seconds, threads)
        return out
    }

    /// Pretty JSON with sorted keys; every field of every entry.
    public var json: String { prettyJSON(self) }
}

extension String {
    var trimmingTrailingSpaces: String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}

extension Models {
    /// Compresses a graph's weights as the plan says.
    /// `format`: the format the result is written in; weights whose blocks or
    /// groups it cannot store stay float32 (listed as skipped, with why).
    public static func compress(_ graph: inout Graph, plan: CompressionPlan, threads: Int? = nil,
                                for format: ModelFormat? = nil, options: ExportOptions = ExportOptions(),
                                statistics: [String: WeightStatistics] = [:]) throws -> CompressionLog {
        try compress(&graph, plan: plan, threads: threads, for: format.map { [$0] } ?? [], options: options, statistics: statistics)
    }

    /// Compressed once for several formats: a weight is left float32 when any of them cannot store its blocks or groups.
    public static func compress(_ graph: inout Graph, plan: CompressionPlan, threads: Int? = nil,
                                for formats: [ModelFormat], options: ExportOptions = ExportOptions(),
                                statistics: [String: WeightStatistics] = [:]) throws -> CompressionLog {
        let n = threads ?? ProcessInfo.processInfo.activeProcessorCount
        var fits: [WeightLayoutFit] = []
        for f in formats {
            if let fit = f.storedWeights(options.applicable(to: f)).fits { fits.append(fit) }
        }
        return try CompressWeights.run(&graph, plan: plan, threads: max(1, n), fits: fits.isEmpty ? nil : combined(fits), statistics: statistics)
    }

    /// The first refusal of any of `fits`.
    static func combined(_ fits: [WeightLayoutFit]) -> WeightLayoutFit {
        return { kind, size, shape, o, i in
            for fit in fits {
                if let why = fit(kind, size, shape, o, i) { return why }
            }
            return nil
        }
    }
}
