import Dispatch
import Foundation
import ShrinkwrapIR

/// What the compress pass did with one constant.
public struct CompressionLogEntry: Sendable, Equatable, Codable {
    public var name: String
    /// Consumers, as "Conv 'conv1'"; empty for an unused constant.
    public var usedBy: [String]
    public var shape: [Int]
    public var elements: Int
    /// The encoding after the pass ("float32" when left alone).
    public var encoding: String
    /// The rule applied ("kmeans-lut 4-bit per-tensor"), nil when skipped.
    public var rule: String?
    /// Why it was left alone, nil when compressed.
    public var skipped: String?
    public var bytesBefore: Int
    public var bytesAfter: Int
    /// Signal-to-quantization-noise ratio in dB; nil when the error is zero (or the weight is not compressed).
    public var sqnrDB: Double?
    public var maxAbsError: Double?
    /// Sum of squared errors over the tensor.
    public var sse: Double?
    /// Encoding time (the only field that varies between runs).
    public var milliseconds: Double?
    public var notes: [String]

    public var compressed: Bool { skipped == nil }
}

/// The whole log of one pass, in constant order.
public struct CompressionLog: Sendable, Equatable, Codable {
    public var entries: [CompressionLogEntry]
    /// Wall time of the whole pass (selection, encoding, error statistics).
    public var seconds: Double
    /// Wall time of the encoding alone (all workers), for comparisons with other tools' encoders.
    public var encodeSeconds: Double
    public var threads: Int
    /// BatchNormalizations folded into their Convs first (`CompressionPlan.foldBatchNorm`); nil when not asked.
    public var foldedBatchNorms: Int?

    public var bytesBefore: Int { entries.reduce(0) { $0 + $1.bytesBefore } }
    public var bytesAfter: Int { entries.reduce(0) { $0 + $1.bytesAfter } }
    public var compressedCount: Int { entries.filter(\.compressed).count }
}

/// The compress pass: rewrites the chosen constants of a graph into their
/// compressed encodings and logs every constant, compressed or not.
public enum CompressWeights {
    struct Task: Sendable {
        var index: Int
        var input: WeightInput
        var rule: CompressionRule
        var codec: any WeightCodec
    }

    /// Compresses `graph`'s weights in place as `plan` says (a weight a Loop carries
    /// through unchanged, as paddle2onnx's decoders do, is first read in place by
    /// the Loop's body: `hoistingLoopInvariants`), using up to
    /// `threads` threads (results do not depend on the count). Throws the
    /// first error in constant order, after every weight was tried.
    /// A log entry for constant `c`, as it is before compression.
    static func logEntry(_ c: Constant, users: [(node: Node, input: Int)]) -> CompressionLogEntry {
        let enc = c.encoding
        return CompressionLogEntry(
            name: c.name, usedBy: users.map { "\($0.node.opType) '\($0.node.label)'" }, shape: enc.shape,
            elements: enc.count, encoding: enc.kind, rule: nil, skipped: nil,
            bytesBefore: enc.storageBytes, bytesAfter: enc.storageBytes, sqnrDB: nil, maxAbsError: nil, sse: nil,
            milliseconds: nil, notes: [])
    }

    /// The output format's refusal of this weight's blocks or groups (e.g. Core ML's equal blocks), if any.
    static func misfit(_ fits: WeightLayoutFit?, _ g: Granularity, _ shape: [Int], _ oAxis: Int, _ iAxis: Int) -> String? {
        guard let fits else { return nil }
        switch g {
        case .perBlock(let b): return fits(.perBlock, b, shape, oAxis, iAxis)
        case .perGroupedChannel(let n): return fits(.perGroupedChannel, n, shape, oAxis, iAxis)
        case .perTensor, .perChannel: return nil
        }
    }

    /// `statistics`: calibration statistics by weight name, for the data-aware methods (`CompressionMethod`).
    public static func run(_ graph: inout Graph, plan: CompressionPlan, threads: Int = 1, fits: WeightLayoutFit? = nil,
                           statistics: [String: WeightStatistics] = [:]) throws(CompressionError) -> CompressionLog {
        let started = DispatchTime.now().uptimeNanoseconds
        var folded: Int? = nil
        if plan.foldBatchNorm {
            let (g, n) = graph.foldingBatchNormIntoConv()
            graph = g
            folded = n
        }
        if graph.hasControlFlow { graph = graph.hoistingLoopInvariants().graph }  // weights a Loop carries, read in place
        let uses = constantUses(graph)
        var entries: [CompressionLogEntry] = []
        var tasks: [Task] = []
        let updatable = Set(graph.metadata.updatableNodes)
        for c in graph.constants {
            let enc = c.encoding
            let users = uses[c.name] ?? []
            var entry = logEntry(c, users: users)
            func skip(_ why: String) { entry.skipped = why; entries.append(entry) }

            guard case .dense(let t) = enc else { skip("already compressed (\(enc.kind))"); continue }
            if let u = users.first(where: { !$0.node.name.isEmpty && updatable.contains($0.node.name) }) {
                skip("weight of updatable layer '\(u.node.label)' (Core ML trains it on device in float32)"); continue
            }
            guard t.dtype == .float32, let values = t.floats else { skip("\(t.dtype.rawValue) tensor (not a float32 weight)"); continue }
            let named = plan.byName[c.name]
            if named == .skip { skip("skipped by the plan's rule for this name"); continue }
            // Roles at every use; a tensor is a weight only if every use agrees.
            var axes: (Int, Int)? = nil
            var notWeight: String? = nil
            for u in users {
                switch OpTable.role(of: u.node, input: u.input, rank: t.rank, isConstant: graph.isConstant) {
                case .weight(let o, let i):
                    if let a = axes, a != (o, i) { notWeight = "used with different channel axes by its consumers" }
                    axes = (o, i)
                case .notWeight(let why):
                    notWeight = notWeight ?? why
                }
            }
            let rule: CompressionRule
            if case .compress(let r)? = named {
                rule = r
            } else {
                if users.isEmpty { skip("not used by any node"); continue }
                if let why = notWeight { skip(why); continue }
                if t.count < plan.minElements { skip("\(t.count) elements, fewer than the minimum \(plan.minElements)"); continue }
                let opTypes = users.map(\.node.opType)
                if let op = opTypes.first(where: { plan.byOpType[$0] != nil }), let choice = plan.byOpType[op] {
                    guard case .compress(let r) = choice else { skip("skipped by the plan's rule for \(op)"); continue }
                    rule = r
                } else if case .compress(let r)? = plan.global {
                    rule = r
                } else {
                    skip(plan.global == .skip ? "skipped by the plan's global rule" : "no rule applies"); continue
                }
            }
            let codec = try WeightCodecs.codec(named: rule.mode)
            let (oAxis, iAxis) = axes ?? (0, t.rank > 1 ? 1 : 0)
            if let why = misfit(fits, rule.options.granularity, t.shape, oAxis, iAxis) {
                entry.rule = rule.summary
                skip(why); continue
            }
            entry.rule = rule.summary
            tasks.append(Task(index: entries.count,
                              input: WeightInput(name: c.name, values: values, shape: t.shape, outputAxis: oAxis, inputAxis: iAxis,
                                                 statistics: rule.options.method.needsCalibration || plan.biasCorrection ? statistics[c.name] : nil),
                              rule: rule, codec: codec))
            entries.append(entry)
        }

        let (results, order, workers, encodeSeconds) = encodeAll(tasks, threads: threads)
        let jobs = tasks
        let stats = errorStats(jobs, results, order: order, workers: workers)
        for (k, task) in tasks.enumerated() {
            guard let r = results[k] else { continue }
            switch r {
            case .failure(let e): throw e
            case .success(let (res, ms)):
                var e = entries[task.index]
                let stats = stats[k] ?? ErrorStats(original: [], decoded: [])
                e.encoding = res.encoding.kind
                e.bytesAfter = res.encoding.storageBytes
                e.sse = stats.sse; e.sqnrDB = stats.sqnrDB; e.maxAbsError = stats.maxAbs
                e.milliseconds = ms
                e.notes = res.notes
                entries[task.index] = e
                graph.setConstant(Constant(name: task.input.name, encoding: res.encoding))
            }
        }
        if plan.biasCorrection { correctBiases(&graph, &entries, tasks: tasks, uses: uses) }
        halfCompanions(&graph, &entries, plan: plan)
        // Subgraphs (If's branches, Loop's body) keep their own weights: the same plan, depth first.
        var subgraphEncodeSeconds = 0.0
        for k in graph.nodes.indices {
            for (key, sub) in graph.nodes[k].subgraphs {
                var compressed = sub
                let log = try run(&compressed, plan: plan, threads: threads, fits: fits)
                graph.nodes[k].attributes[key] = .graph(compressed)
                entries += log.entries
                subgraphEncodeSeconds += log.encodeSeconds
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        var log = CompressionLog(entries: entries, seconds: seconds, encodeSeconds: encodeSeconds + subgraphEncodeSeconds, threads: workers)
        log.foldedBatchNorms = folded
        return log
    }

    /// Encodes every task, largest first, on up to `threads` workers; results land by index.
    static func encodeAll(_ tasks: [Task], threads: Int) -> (results: [Result<(CodecResult, Double), CompressionError>?], order: [Int],
                                                             workers: Int, seconds: Double) {
        let order = tasks.indices.sorted { tasks[$0].input.values.count > tasks[$1].input.values.count || (tasks[$0].input.values.count == tasks[$1].input.values.count && $0 < $1) }
        var results = [Result<(CodecResult, Double), CompressionError>?](repeating: nil, count: tasks.count)
        let encodeStart = DispatchTime.now().uptimeNanoseconds
        let queue = WorkCounter()
        let jobs = tasks
        let workers = max(1, min(threads, tasks.count))
        results.withUnsafeMutableBufferPointer { out in
            let outP = UnsafeSendableBuffer(out)
            let work = { @Sendable in
                while true {
                    let k = queue.take()
                    guard k < order.count else { return }
                    let task = jobs[order[k]]
                    let t0 = DispatchTime.now().uptimeNanoseconds
                    let r: Result<CodecResult, CompressionError> = Result { () throws(CompressionError) in
                        try WeightCodecs.encode(task.input, with: task.codec, task.rule.options)
                    }
                    let ms = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
                    outP.buffer[order[k]] = r.map { ($0, ms) }
                }
            }
            if workers == 1 { work() } else { DispatchQueue.concurrentPerform(iterations: workers) { _ in work() } }
        }
        let encodeSeconds = Double(DispatchTime.now().uptimeNanoseconds - encodeStart) / 1e9
        return (results, order, workers, encodeSeconds)
    }

    /// The error of every encoded weight against its original, on up to `workers` threads (after
    /// the encoding, so its time is not the encoders'); nil for a failed one.
    static func errorStats(_ jobs: [Task], _ results: [Result<(CodecResult, Double), CompressionError>?],
                           order: [Int], workers: Int) -> [ErrorStats?] {
        var stats = [ErrorStats?](repeating: nil, count: jobs.count)
        let queue = WorkCounter()
        stats.withUnsafeMutableBufferPointer { out in
            let outP = UnsafeSendableBuffer(out)
            let work = { @Sendable in
                while true {
                    let k = queue.take()
                    guard k < order.count else { return }
                    let j = order[k]
                    guard case .success(let (res, _))? = results[j] else { continue }
                    outP.buffer[j] = ErrorStats(original: jobs[j].input.values, decoded: res.encoding.decoded().floats ?? [])
                }
            }
            if workers == 1 { work() } else { DispatchQueue.concurrentPerform(iterations: workers) { _ in work() } }
        }
        return stats
    }

    /// Every read of each of `graph`'s constants: by its nodes, and by nodes of their
    /// subgraphs (at any depth) that read it from the enclosing scope (not shadowed there).
    static func constantUses(_ graph: Graph) -> [String: [(node: Node, input: Int)]] {
        var uses: [String: [(node: Node, input: Int)]] = [:]
        func walk(_ nodes: [Node], hidden: Set<String>) {
            for node in nodes {
                for (i, name) in node.inputs.enumerated() where !name.isEmpty && !hidden.contains(name) && graph.isConstant(name) {
                    uses[name, default: []].append((node, i))
                }
                for (_, sub) in node.subgraphs { walk(sub.nodes, hidden: hidden.union(sub.definedNames)) }
            }
        }
        walk(graph.nodes, hidden: [])
        return uses
    }
}

extension CompressWeights {
    /// A node whose weight became float16 gets its other float32 parameters
    /// (bias, …) in float16 as well: formats such as Core ML require the
    /// tensors of one layer to share a precision, and fp16 biases cost
    /// nothing in accuracy that the fp16 weight has not already cost. A
    /// parameter outside float16's range stays float32 (and the log says so).
    static func halfCompanions(_ graph: inout Graph, _ entries: inout [CompressionLogEntry], plan: CompressionPlan) {
        var index: [String: Int] = [:]
        for (k, e) in entries.enumerated() { index[e.name] = k }
        func hasHalfWeight(_ node: Node) -> Bool {
            node.inputs.contains { name in
                guard let k = index[name], entries[k].compressed, case .float16? = graph.constant(named: name)?.encoding else { return false }
                return true
            }
        }
        let halfNodes = Set(graph.nodes.indices.filter { hasHalfWeight(graph.nodes[$0]) })
        for (n, node) in graph.nodes.enumerated() where halfNodes.contains(n) {
            for name in node.inputs where !name.isEmpty {
                guard plan.byName[name] != .skip, let k = index[name], !entries[k].compressed, let c = graph.constant(named: name),
                      case .dense(let t) = c.encoding, t.dtype == .float32, let values = t.floats else { continue }
                // Only parameters that every reader pairs with an fp16 weight.
                guard graph.nodes.indices.allSatisfy({ !graph.nodes[$0].inputs.contains(name) || halfNodes.contains($0) }) else { continue }
                guard values.allSatisfy({ $0.isFinite && abs($0) < 65520 }) else {
                    entries[k].notes.append("stays float32 beside an fp16 weight: values beyond float16's range")
                    continue
                }
                let bits = values.map { Half.bits(from: $0) }
                guard let h = try? Float16Weights(shape: t.shape, bits: bits) else { continue }
                let enc = WeightEncoding.float16(h)
                let stats = ErrorStats(original: values, decoded: enc.decoded().floats ?? [])
                var e = entries[k]
                e.skipped = nil
                e.rule = "fp16 (with the fp16 weight of \(node.opType) '\(node.label)')"
                e.encoding = enc.kind
                e.bytesAfter = enc.storageBytes
                e.sse = stats.sse; e.sqnrDB = stats.sqnrDB; e.maxAbsError = stats.maxAbs
                entries[k] = e
                graph.setConstant(Constant(name: name, encoding: enc))
            }
        }
    }
}

/// Error of a decoded weight against the original.
public struct ErrorStats: Sendable, Equatable {
    public var sse: Double
    public var signal: Double
    public var maxAbs: Double

    public init(original: [Float], decoded: [Float]) {
        var sse = 0.0, sig = 0.0, mx = 0.0
        for (a, b) in zip(original, decoded) {
            let d = Double(a) - Double(b)
            sse += d * d
            sig += Double(a) * Double(a)
            mx = max(mx, abs(d))
        }
        self.sse = sse; self.signal = sig; self.maxAbs = mx
    }

    /// 10·log10(signal / noise); nil when there is no noise (or no signal).
    public var sqnrDB: Double? {
        guard sse > 0, signal > 0 else { return nil }
        return 10 * log10(signal / sse)
    }
}

/// Hands out 0, 1, 2, … to concurrent workers.
final class WorkCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var next = 0
    func take() -> Int {
        lock.lock(); defer { lock.unlock() }
        next += 1
        return next - 1
    }
}

/// A buffer pointer that may cross into concurrent closures; each index is written by one worker.
struct UnsafeSendableBuffer<T>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<T>
    init(_ b: UnsafeMutableBufferPointer<T>) { buffer = b }
}
