import Foundation
import ShrinkwrapReport

/// Quality gates: how good a compressed or converted model must be, as
/// `--min-agreement`, `--min-cosine` and `--min-psnr` give it. `compare`,
/// `convert` and `sweep` write their reports first, then ask the gate; a
/// gate that is not met ends the command with `failedExitCode`.
public struct QualityGate: Sendable, Equatable {
    /// Top-1 agreement of the first output, in percent.
    public var minAgreement: Double?
    /// Mean cosine similarity of every output.
    public var minCosine: Double?
    /// PSNR of every output, in dB (identical outputs have none and pass).
    public var minPSNR: Double?

    public init(minAgreement: Double? = nil, minCosine: Double? = nil, minPSNR: Double? = nil) {
        self.minAgreement = minAgreement
        self.minCosine = minCosine
        self.minPSNR = minPSNR
    }

    /// The exit status of a command whose gate is not met.
    public static let failedExitCode: Int32 = 3

    /// True when any threshold is given.
    public var isSet: Bool { minAgreement != nil || minCosine != nil || minPSNR != nil }

    /// Why `outputs` fall short of the gate, one phrase per unmet threshold
    /// and output (empty: they pass). An output that is not a class-score
    /// vector fails --min-agreement, which cannot be measured on it.
    public func shortfalls(_ outputs: [OutputMetrics]) -> [String] {
        var why: [String] = []
        if let m = minAgreement, let first = outputs.first {
            if let a = first.top1Agreement {
                if a < m { why.append(String(format: "top-1 agreement %.2f%% < %.2f%% (output '%@')", a, m, first.name)) }
            } else {
                why.append("output '\(first.name)' is not a class-score vector; --min-agreement does not apply (use --min-cosine)")
            }
        }
        for o in outputs {
            if let m = minCosine, o.meanCosine < m { why.append(String(format: "mean cosine %.6f < %.6f (output '%@')", o.meanCosine, m, o.name)) }
            if let m = minPSNR, let p = o.psnrDB, p < m { why.append(String(format: "PSNR %.2f dB < %.2f dB (output '%@')", p, m, o.name)) }
        }
        return why
    }

    /// `compare`: "quality gate failed: …" when `outputs` fall short; nil when the gate is met.
    public func failureMessage(_ outputs: [OutputMetrics]) -> String? {
        let why = shortfalls(outputs)
        return why.isEmpty ? nil : "quality gate failed: \(why.joined(separator: "; "))"
    }

    /// `convert`: when `outputs` fall short, the model written at `output` is
    /// moved aside (`setAside`) and the message says where it now is; nil
    /// when the gate is met (the file stays).
    public func rejectIfFailing(_ outputs: [OutputMetrics], writtenTo output: String) -> String? {
        guard let failure = failureMessage(outputs) else { return nil }
        let rejected = Self.setAside(output)
        return "\(failure); the model is kept as \(rejected)"
    }

    /// Renames a rejected model to `<path>.rejected` (replacing an older one),
    /// so that it does not stand where a Makefile would take it for a finished
    /// target. Returns the new path. Best effort: a file that cannot be moved stays.
    @discardableResult
    public static func setAside(_ path: String) -> String {
        let rejected = path + ".rejected"
        try? FileManager.default.removeItem(atPath: rejected)
        try? FileManager.default.moveItem(atPath: path, toPath: rejected)
        return rejected
    }

    /// What the gate says about a sweep.
    public struct SweepVerdict: Sendable, Equatable {
        /// The variants that meet the gate, in report order.
        public var passing: [Variant]
        /// How many variants the sweep measured.
        public var total: Int
        /// The passing variant with the largest size reduction.
        public var smallest: Variant?
        /// True when at least one variant passes.
        public var met: Bool { !passing.isEmpty }

        /// "quality gate: no variant passes", or
        /// "quality gate: 3 of 13 variants pass; smallest: linear 4-bit per-channel".
        public var message: String {
            guard let smallest else { return "quality gate: no variant passes" }
            return "quality gate: \(passing.count) of \(total) variants pass; smallest: \(smallest.label)"
        }
    }

    /// `sweep`: the variants of `report` that meet the gate, and the smallest of them.
    public func verdict(_ report: SweepReport) -> SweepVerdict {
        let passing = report.variants.filter { shortfalls($0.outputs).isEmpty }
        let smallest = passing.max { $0.reductionPercent(vs: report.reference) < $1.reductionPercent(vs: report.reference) }
        return SweepVerdict(passing: passing, total: report.variants.count, smallest: smallest)
    }
}
