import Foundation
import ShrinkwrapCompression
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapReport
import ShrinkwrapRuntime

extension Tune {
    /// Every candidate's encoding of every weight: one compress pass per candidate (on every thread),
    /// so each weight is encoded exactly as a plan rule naming it encodes it. Weights in graph order.
    static func encodeAll(_ original: Graph, candidates: [TuneCandidate], options o: TuneOptions,
                          stats: [String: WeightStatistics], threads: Int) throws -> [Weight] {
        var byName: [String: Int] = [:]
        var weights: [Weight] = []
        for (ci, c) in candidates.enumerated() {
            var g = original
            var plan = CompressionPlan(c.rule)
            if let m = o.minElements { plan.minElements = m }
            plan.biasCorrection = o.biasCorrection
            let log = try Models.compress(&g, plan: plan, threads: threads, for: o.format, options: o.exportOptions, statistics: stats)
            for e in log.entries where e.compressed && e.rule == c.rule.summary {
                guard let enc = g.constant(named: e.name)?.encoding else { continue }
                let k: Int
                if let known = byName[e.name] { k = known } else {
                    k = weights.count
                    byName[e.name] = k
                    weights.append(Weight(name: e.name, shape: e.shape, elements: e.elements, bytes32: e.bytesBefore,
                                          options: [Option?](repeating: nil, count: candidates.count)))
                }
                var option = Option(encoding: enc, bytes: e.bytesAfter, notes: e.notes)
                if o.biasCorrection {
                    for node in original.nodes where node.input(1) == e.name {
                        if let b = node.input(2), let changed = g.constant(named: b), changed != original.constant(named: b) { option.companions.append(changed) }
                    }
                }
                weights[k].options[ci] = option
            }
        }
        let order = Dictionary(uniqueKeysWithValues: original.constants.enumerated().map { ($1.name, $0) })
        return weights.sorted { (order[$0.name] ?? 0) < (order[$1.name] ?? 0) }
    }

    /// Each weight alone at each candidate, the rest float32, against the original on `runner`'s inputs.
    static func measureSensitivity(_ weights: inout [Weight], original: Graph, runner: AgreementRunner, threads: Int,
                                   progress: SweepProgress?) throws {
        var jobs: [(w: Int, c: Int)] = []
        for (wi, w) in weights.enumerated() { for (ci, o) in w.options.enumerated() where o != nil { jobs.append((wi, ci)) } }
        let started = Date()
        let changes = jobs.map { job -> [Constant] in
            guard let o = weights[job.w].options[job.c] else { return [] }
            return [Constant(name: weights[job.w].name, encoding: o.encoding)] + o.companions
        }
        // Only what each weight reaches reruns, from the original's own values (kept once); past the
        // memory budget, every run is a whole one.
        var measured: [[OutputMetrics]]
        var how = ""
        do {
            let d = try runner.compareDownstream(base: original, changes: changes, threads: threads)
            measured = d.outputs
            let share = Double(d.rerunNodes.reduce(0, +)) / Double(max(1, d.rerunNodes.count * d.baseNodes))
            how = String(format: ", each rerunning %.0f%% of the nodes on average from %.0f MB of kept values", 100 * share, Double(d.keptBytes) / 1e6)
        } catch let e as AgreementRunner.DownstreamBudgetExceeded {
            progress?("sensitivity: whole runs (\(e.description))")
            let graphs = jobs.indices.map { k -> Graph in
                var g = original
                for c in changes[k] { g.setConstant(c) }
                return g
            }
            measured = try Sweep.compareAll(graphs, runner: runner, threads: threads, weightBytes: Sweep.size(original, fileBytes: nil).weightBytes) { _, _ in }.map(\.outputs)
        }
        for (k, job) in jobs.enumerated() {
            let outputs = measured[k]
            weights[job.w].options[job.c]?.noise = noise(outputs)
            if let first = outputs.first, let a = first.top1Agreement {
                weights[job.w].options[job.c]?.flips = Int(((100 - a) / 100 * Double(first.inputs)).rounded())
            }
            weights[job.w].options[job.c]?.psnr = outputs.first?.psnrDB
            weights[job.w].options[job.c]?.kl = outputs.first?.meanKL
        }
        progress?(String(format: "sensitivity: %d runs of %d inputs in %.1f s", jobs.count, runner.inputCount, Date().timeIntervalSince(started)) + how)
    }

    /// Output error energy over output energy, summed over the outputs (0 when identical).
    static func noise(_ outputs: [OutputMetrics]) -> Double {
        outputs.reduce(0) { sum, o in sum + (o.snrDB.map { pow(10, -$0 / 10) } ?? 0) }
    }

    /// The path from the most expensive settings to the cheapest. Per weight, its options (float32
    /// and each candidate) on the lower frontier of bytes against noise; each step takes the move, to
    /// any cheaper frontier option of any weight, with the least noise added per byte saved (ties: the
    /// earlier weight, then the more expensive option).
    static func path(_ weights: [Weight]) -> [Point] {
        // Frontier per weight, bytes descending: (candidate index or nil, bytes, noise).
        let frontiers: [[(c: Int?, bytes: Int, noise: Double)]] = weights.map { w in
            var all: [(c: Int?, bytes: Int, noise: Double)] = [(nil, w.bytes32, 0)]
            for (ci, o) in w.options.enumerated() { if let o { all.append((ci, o.bytes, o.noise)) } }
            all.sort { $0.bytes < $1.bytes || ($0.bytes == $1.bytes && ($0.noise < $1.noise || ($0.noise == $1.noise && ($0.c ?? -1) < ($1.c ?? -1)))) }
            var kept: [(c: Int?, bytes: Int, noise: Double)] = []
            for o in all where kept.isEmpty || o.noise < (kept.last?.noise ?? 0) && o.bytes > (kept.last?.bytes ?? 0) { kept.append(o) }
            return kept.reversed()
        }
        var at = [Int](repeating: 0, count: weights.count)
        func point() -> Point {
            Point(choice: frontiers.indices.map { frontiers[$0][at[$0]].c },
                  bytes: frontiers.indices.reduce(0) { $0 + frontiers[$1][at[$1]].bytes },
                  predicted: frontiers.indices.reduce(0) { $0 + frontiers[$1][at[$1]].noise })
        }
        var points = [point()]
        while true {
            var best: (w: Int, j: Int, ratio: Double)? = nil
            for (w, f) in frontiers.enumerated() {
                let cur = f[at[w]]
                for j in (at[w] + 1)..<max(at[w] + 1, f.count) {
                    let ratio = (f[j].noise - cur.noise) / Double(cur.bytes - f[j].bytes)
                    if ratio < (best?.ratio ?? .infinity) || best == nil { best = (w, j, ratio) }
                }
            }
            guard let move = best else { break }
            at[move.w] = move.j
            points.append(point())
        }
        return points
    }

    /// The original with the encodings of `p`'s choices.
    static func apply(_ p: Point, _ weights: [Weight], to original: Graph) -> Graph {
        var g = original
        for (w, c) in zip(weights, p.choice) {
            if let c, let o = w.options[c] {
                g.setConstant(Constant(name: w.name, encoding: o.encoding))
                for c in o.companions { g.setConstant(c) }
            }
        }
        return g
    }

    /// `p` as a plan: a name rule per weight (float32 ones skipped by name), nothing global.
    static func plan(_ p: Point, _ weights: [Weight], candidates: [TuneCandidate], minElements: Int?) -> CompressionPlan {
        var plan = CompressionPlan()
        for (w, c) in zip(weights, p.choice) { plan.byName[w.name] = c.map { .compress(candidates[$0].rule) } ?? .skip }
        if let minElements { plan.minElements = minElements }
        return plan
    }

    static func makeReport(model path: String, graph: Graph, points: [Point], weights: [Weight], candidates: [TuneCandidate], chosen: Int,
                           met: Bool, final: [OutputMetrics], log: CompressionLog, curve: [TuneReport.Point], validation: InputSet,
                           calibration: InputSet?, options o: TuneOptions, calibrationTop1: Double?, compressed: Graph) throws -> TuneReport {
        let p = points[chosen]
        let logged = Dictionary(log.entries.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let rows = zip(weights, p.choice).map { w, c -> TuneReport.Weight in
            let settings = w.options.enumerated().compactMap { ci, opt -> TuneReport.Setting? in
                opt.map { TuneReport.Setting(candidate: candidates[ci].summary, bytes: $0.bytes, noise: $0.noise, flips: $0.flips,
                                             psnrDB: $0.psnr, kl: $0.kl, chosen: ci == c) }
            }
            return TuneReport.Weight(name: w.name, shape: w.shape, elements: w.elements,
                                     choice: c.map { candidates[$0].summary } ?? "float32", bytesBefore: w.bytes32,
                                     bytesAfter: logged[w.name]?.bytesAfter ?? w.bytes32, settings: settings)
        }
        func info(_ s: InputSet) -> DataInfo { DataInfo(description: s.description, count: s.samples.count, sha256: s.sha256, random: s.random) }
        var options: [String: String] = ["candidates": candidates.map(\.summary).joined(separator: "; "),
                                         "sensitivity_inputs": String(o.sensitivityInputs)]
        if let m = o.minElements { options["min_elements"] = String(m) }
        if let f = o.format { options["format"] = f.mainExtension }
        options["fold_batchnorm"] = o.foldBatchNorm ? "true" : "false"
        options["bias_correction"] = o.biasCorrection ? "true" : "false"
        return TuneReport(
            tool: "shrinkwrap \(shrinkwrapVersion)",
            model: ModelInfo(file: URL(fileURLWithPath: path).lastPathComponent, sha256: SHA256.hex(try Models.sourceBytes(path)), format: graph.sourceFormat),
            validation: info(validation), calibration: calibration.map(info), options: options, target: o.minAgreement,
            maxBitsPerWeight: o.maxBitsPerWeight, met: met, reference: Sweep.size(graph, fileBytes: nil),
            result: Sweep.size(compressed, fileBytes: nil), outputs: final, calibrationTop1: calibrationTop1, weights: rows, curve: curve)
    }

    /// Every Conv and Gemm with a float32 constant weight and no bias given a zero one (a new constant).
    static func withExplicitBiases(_ g: Graph) -> Graph {
        var out = g
        for (k, n) in g.nodes.enumerated() where (n.opType == "Conv" || n.opType == "Gemm") && n.input(2) == nil {
            guard let w = n.input(1), let c = g.constant(named: w), c.encoding.dtype == .float32 else { continue }
            let shape = c.encoding.shape
            let rows: Int
            if n.opType == "Conv" { rows = shape.first ?? 0 } else {
                var transB = false
                if case .int(let t)? = n.attributes["transB"] { transB = t != 0 }
                rows = shape.count == 2 ? (transB ? shape[0] : shape[1]) : 0
            }
            guard rows > 0 else { continue }
            var name = w + "_bias", i = 1
            while out.constant(named: name) != nil || out.nodes.contains(where: { $0.outputs.contains(name) }) { i += 1; name = w + "_bias\(i)" }
            out.setConstant(Constant(name: name, tensor: Tensor([Float](repeating: 0, count: rows), shape: [rows])))
            var node = n
            node.inputs = Array(node.inputs.prefix(2)) + [name]
            out.nodes[k] = node
        }
        return out
    }
}
