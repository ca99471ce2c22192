import Foundation
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapRuntime

/// Timing inference: the library side of `shrinkwrap bench`.
public enum Benchmark {
    /// Run times in milliseconds, summarised.
    public struct Statistics: Sendable, Equatable {
        public var runs: Int
        /// The middle value; for an even count, the upper of the two middle values.
        public var median: Double
        public var mean: Double
        public var min: Double

        /// nil for no times.
        public init?(milliseconds times: [Double]) {
            guard !times.isEmpty else { return nil }
            let sorted = times.sorted()
            runs = times.count
            median = sorted[sorted.count / 2]
            mean = times.reduce(0, +) / Double(times.count)
            min = sorted[0]
        }
    }

    /// Where the time of one run went.
    public struct Profile: Sendable {
        /// Every node in first-run order: "OpType label" (with its run count when a loop ran it
        /// more than once), milliseconds summed over its runs, the shape of its last first output.
        public var nodes: [(name: String, ms: Double, shape: [Int])]
        /// Milliseconds and node count per op type.
        public var ops: [String: (ms: Double, count: Int)]
        /// The whole run, in milliseconds.
        public var totalMs: Double

        public init(nodes: [(name: String, ms: Double, shape: [Int])], ops: [String: (ms: Double, count: Int)], totalMs: Double) {
            self.nodes = nodes
            self.ops = ops
            self.totalMs = totalMs
        }

        /// "slowest nodes:" (the `top` slowest), then "by op:" (every op type, slowest first).
        public func lines(top: Int = 8) -> [String] {
            var out = ["slowest nodes:"]
            for (name, ms, shape) in nodes.sorted(by: { $0.1 > $1.1 }).prefix(max(0, top)) {
                out.append(String(format: "  %8.3f ms  ", ms) + name + " → \(shape)")
            }
            out.append("by op:")
            for (op, e) in ops.sorted(by: { ($0.value.ms, $1.key) > ($1.value.ms, $0.key) }) {
                let name = op.count >= 22 ? op : op + String(repeating: " ", count: 22 - op.count)
                out.append("  " + name + String(format: " %4d nodes %9.3f ms %5.1f%%", e.count, e.ms, 100 * e.ms / max(totalMs, 1e-9)))
            }
            return out
        }
    }

    /// What `run` measured.
    public struct Result: Sendable {
        /// Milliseconds per timed run, in order.
        public var times: [Double]
        public var statistics: Statistics
        /// Worker threads the interpreter used.
        public var threads: Int
        /// The matrix-multiply backend (`GEMM.backendName`).
        public var gemm: String
        /// With `profile`: one more, observed, run.
        public var profile: Profile?

        /// What the runs ran on: "random inputs (seed 1)", or the data's description.
        public var inputs: String

        public init(times: [Double], statistics: Statistics, threads: Int, gemm: String, profile: Profile?, inputs: String) {
            self.times = times
            self.statistics = statistics
            self.threads = threads
            self.gemm = gemm
            self.profile = profile
            self.inputs = inputs
        }

        /// The summary line: `{"model": …, "median_ms": …}` with `json`, else
        /// "MODEL: 20 runs, 2 threads, GEMM …: median 1.23 ms, mean 1.25 ms, min 1.20 ms (on INPUTS)".
        public func summary(model: String, json: Bool) -> String {
            let s = statistics
            if json {
                return String(format: "{\"model\": %@, \"runs\": %d, \"threads\": %d, \"median_ms\": %.3f, \"mean_ms\": %.3f, \"min_ms\": %.3f, \"gemm\": %@, \"inputs\": %@}",
                              Self.jsonString(model), s.runs, threads, s.median, s.mean, s.min, Self.jsonString(gemm), Self.jsonString(inputs))
            }
            return String(format: "%@: %d runs, %d threads, GEMM %@: median %.2f ms, mean %.2f ms, min %.2f ms (on %@)",
                          model, s.runs, threads, gemm, s.median, s.mean, s.min, inputs)
        }

        /// `text` as a JSON string literal.
        static func jsonString(_ text: String) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .withoutEscapingSlashes
            guard let data = try? encoder.encode(text), let quoted = String(data: data, encoding: .utf8) else { return "\"\"" }
            return quoted
        }
    }

    /// Times `graph` on `samples` (nil: seeded random inputs, `ModelRunner.syntheticInputs`,
    /// seed 1): `warmup` untimed runs (at least one: it also checks that the inputs fit), then `runs` timed
    /// ones (at least 1), then, with `profile`, nine runs timed node by node (medians).
    /// Run k (warm-up and timed alike) takes sample k mod the sample count, so
    /// every sample is timed as often as `runs` allows; the profile runs the first.
    public static func run(_ graph: Graph, samples given: InputSet? = nil, runs: Int, warmup: Int, threads: Int?,
                           profile: Bool) throws -> Result {
        let samples = try given?.samples ?? [ModelRunner.syntheticInputs(graph: graph, seed: 1)]
        guard let first = samples.first else { throw ModelRunner.RunError(description: "bench: the data hold no samples") }
        let interpreter = try Interpreter(graph: graph, options: .init(threads: threads))
        do {
            _ = try interpreter.run(first)
        } catch let error as UserFacingError where given == nil {
            throw ModelRunner.RunError(description: error.description + freeDimensionHint(graph))
        }
        for k in 1..<max(1, warmup) { _ = try interpreter.run(samples[k % samples.count]) }
        var times: [Double] = []
        for k in 0..<max(1, runs) {
            let sample = samples[k % samples.count]
            let t0 = DispatchTime.now().uptimeNanoseconds
            _ = try interpreter.run(sample)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
        }
        let observed = profile ? try self.profile(interpreter, inputs: first) : nil
        guard let statistics = Statistics(milliseconds: times) else { throw ModelRunner.RunError(description: "bench: no timed runs") }
        return Result(times: times, statistics: statistics, threads: interpreter.options.threads, gemm: GEMM.backendName, profile: observed,
                      inputs: given?.description ?? "random inputs (seed 1)")
    }

    /// For a random-input run that failed: which free dims were set to 1, and what to do instead.
    static func freeDimensionHint(_ graph: Graph) -> String {
        let free = graph.runtimeInputs.compactMap { i -> String? in
            let dims = (i.shape ?? []).enumerated().filter { $0.element.value == nil }.map { String($0.offset) }
            return dims.isEmpty ? nil : "\(i.name)[\(dims.joined(separator: ","))]"
        }
        guard !free.isEmpty else { return "" }
        return " (the random inputs set the free dims \(free.joined(separator: ", ")) to 1: pin them with --input-shape, or time real inputs with --data)"
    }

    /// Runs of `interpreter` timed node by node, the nodes of loop bodies and branches
    /// included (each node's time summed over the times it ran in one run; the If / Loop
    /// node itself keeps only its own overhead). A node's time is its median over `rounds`
    /// runs: a single observed run is at the mercy of one descheduling.
    static func profile(_ interpreter: Interpreter, inputs: [String: Tensor], rounds: Int = 9) throws -> Profile {
        var order: [String] = []
        var perNode: [String: (ms: [Double], shape: [Int], runs: Int, op: String, label: String)] = [:]
        var totals: [Double] = []
        for round in 0..<max(1, rounds) {
            var thisRun: [String: Double] = [:]
            var last = DispatchTime.now().uptimeNanoseconds
            let t0 = last
            _ = try interpreter.run(inputs, observe: { node, outs in
                let now = DispatchTime.now().uptimeNanoseconds
                let name = "\(node.opType) \(node.label)"
                thisRun[name, default: 0] += Double(now - last) / 1e6
                if round == 0 {
                    if let e = perNode[name] {
                        perNode[name] = (e.ms, outs.first?.shape ?? [], e.runs + 1, e.op, e.label)
                    } else {
                        perNode[name] = ([], outs.first?.shape ?? [], 1, node.opType, node.label)
                        order.append(name)
                    }
                }
                last = now
            }, intoSubgraphs: true)
            totals.append(Double(last - t0) / 1e6)
            for (name, ms) in thisRun { perNode[name]?.ms.append(ms) }
        }
        func median(_ v: [Double]) -> Double { v.isEmpty ? 0 : v.sorted()[v.count / 2] }
        var perOp: [String: (ms: Double, nodes: Set<String>)] = [:]
        for e in perNode.values {
            perOp[e.op, default: (0, [])].ms += median(e.ms)
            perOp[e.op, default: (0, [])].nodes.insert(e.label)
        }
        let nodes = order.compactMap { name in
            perNode[name].map { e in (name: e.runs > 1 ? "\(name) (\(e.runs) runs)" : name, ms: median(e.ms), shape: e.shape) }
        }
        return Profile(nodes: nodes, ops: perOp.mapValues { ($0.ms, $0.nodes.count) }, totalMs: median(totals))
    }
}
