import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime

/// Many small changes of one graph, each rerunning only what it changes.
///
/// `base` runs once per input and keeps the values the changes' rerun regions read from
/// outside themselves; each change then runs only the nodes downstream of the constants it
/// replaces (and any constant-only node they read that the run never materialized), from those
/// kept values. Outputs a change cannot reach are `base`'s own. Every change is compared with the
/// runner's reference outputs, as `compare` would compare the whole changed graph.
public struct DownstreamComparison: Sendable {
    /// Bytes of `base`'s intermediate values kept over all inputs.
    public let keptBytes: Int
    /// Per change, the nodes it reruns, and the base's node count.
    public let rerunNodes: [Int]
    public let baseNodes: Int

    /// Per change: one `OutputMetrics` per reference output, in the reference's output order.
    public let outputs: [[OutputMetrics]]
}

extension AgreementRunner {
    public struct DownstreamBudgetExceeded: UserFacingError {
        public let needed: Int
        public let budget: Int
        public var description: String {
            "the values a downstream rerun reads take \(needed) bytes over all inputs, more than the \(budget) allowed"
        }
    }

    /// Compares each change of `base` (constants replacing constants of the same name and shape)
    /// with the reference, rerunning only the nodes downstream of what it replaces.
    /// Throws `DownstreamBudgetExceeded` before any change runs when the kept values would pass
    /// `budget` bytes. Results do not depend on `threads`.
    public func compareDownstream(base: Graph, changes: [[Constant]], threads: Int,
                                  budget: Int = 1 << 30) throws -> DownstreamComparison {
        let g = try base.validatedAndSorted()
        let names = reference.outputs.map(\.name)
        for n in names where !g.outputs.contains(where: { $0.name == n }) {
            throw Error(description: "the base graph has no output '\(n)'")
        }
        for (k, change) in changes.enumerated() {
            for c in change where g.constant(named: c.name)?.encoding.shape != c.encoding.shape {
                throw Error(description: "change \(k) replaces '\(c.name)', not a constant of that shape in the base graph")
            }
        }
        let producer = Dictionary(g.nodes.enumerated().flatMap { i, n in n.outputs.filter { !$0.isEmpty }.map { ($0, i) } },
                                  uniquingKeysWith: { a, _ in a })
        func reads(_ n: Node) -> [String] { (n.inputs + n.capturedNames).filter { !$0.isEmpty } }

        // The nodes each distinct set of replaced names reaches, in graph order.
        var regionOf: [Set<String>: [Int]] = [:]
        for change in changes {
            let key = Set(change.map(\.name))
            if regionOf[key] != nil { continue }
            var dirty = key
            var region: [Int] = []
            for (i, n) in g.nodes.enumerated() where reads(n).contains(where: dirty.contains) {
                region.append(i)
                for o in n.outputs where !o.isEmpty { dirty.insert(o) }
            }
            regionOf[key] = region
        }
        // What the regions read from outside themselves, and the outputs: kept from base's runs.
        var wanted = Set(g.outputs.map(\.name))
        for region in regionOf.values {
            let inside = Set(region.flatMap { g.nodes[$0].outputs })
            for i in region { for r in reads(g.nodes[i]) where !inside.contains(r) && !g.isConstant(r) { wanted.insert(r) } }
        }
        let interpreter = try Interpreter(graph: g, options: .init(threads: threads, optimize: false))
        var kept: [[String: Tensor]] = []
        var bytes = 0
        for sample in inputs {
            let feed = Self.adapt(sample, to: g)
            var values: [String: Tensor] = [:]
            for i in g.runtimeInputs where wanted.contains(i.name) { values[i.name] = feed[i.name] }
            let outs = try interpreter.run(feed) { node, outs in
                for (name, t) in zip(node.outputs, outs) where wanted.contains(name) { values[name] = t }
            }
            for (name, t) in outs { values[name] = t }
            bytes += values.values.reduce(0) { $0 + $1.count * 4 }
            if bytes > budget { throw DownstreamBudgetExceeded(needed: bytes * inputs.count / (kept.count + 1), budget: budget) }
            kept.append(values)
        }
        // Each region grows by the producers of what the runs never materialized (constant-only nodes
        // folded at load), back to values every input has.
        var plans: [Set<String>: Graph] = [:]
        for (key, region) in regionOf {
            var members = Set(region)
            var pending = region
            while let i = pending.popLast() {
                for r in reads(g.nodes[i]) where !g.isConstant(r) && !kept.allSatisfy({ $0[r] != nil }) {
                    guard let p = producer[r] else { continue }
                    if members.insert(p).inserted { pending.append(p) }
                }
            }
            plans[key] = try Self.regionGraph(g, nodes: members.sorted(), kept: kept)
        }
        // Each change over every input; changes shared between workers, results kept by index.
        let work = changes.map { change -> Graph in
            guard var sub = plans[Set(change.map(\.name))] else { return Graph() }
            for c in change where sub.isConstant(c.name) { sub.setConstant(c) }
            return sub
        }
        let values = kept
        let results = try Self.inParallel(work.count, threads: threads) { k in
            try self.measure(region: work[k], kept: values, names: names)
        }
        let counts = changes.map { plans[Set($0.map(\.name))]?.nodes.count ?? 0 }
        return DownstreamComparison(keptBytes: bytes, rerunNodes: counts, baseNodes: g.nodes.count, outputs: results)
    }

    /// `nodes` of `g` as a graph of their own: inputs are what they read from outside (dtype and, where
    /// every input agrees, shape from the kept values); outputs the base outputs they make.
    static func regionGraph(_ g: Graph, nodes: [Int], kept: [[String: Tensor]]) throws -> Graph {
        let chosen = nodes.map { g.nodes[$0] }
        let made = Set(chosen.flatMap(\.outputs))
        var inputs: [ValueInfo] = []
        var seen = Set<String>()
        var constants: [Constant] = []
        for n in chosen {
            for r in (n.inputs + n.capturedNames) where !r.isEmpty && !made.contains(r) && seen.insert(r).inserted {
                if let c = g.constant(named: r) { constants.append(c); continue }
                let shapes = Set(kept.compactMap { $0[r]?.shape })
                guard let first = kept.first?[r], kept.allSatisfy({ $0[r] != nil }) else {
                    throw Error(description: "no kept value for '\(r)', read by node '\(n.label)'")
                }
                inputs.append(ValueInfo(name: r, dtype: first.dtype, shape: shapes.count == 1 ? first.shape.map { .fixed($0) } : nil))
            }
        }
        let outputs = g.outputs.filter { made.contains($0.name) }
        return Graph(name: g.name, inputs: inputs, outputs: outputs, nodes: chosen, constants: constants,
                     valueInfo: g.valueInfo, metadata: g.metadata, sourceFormat: g.sourceFormat, sourceVersion: g.sourceVersion)
    }

    /// One change's outputs over every input (1 thread), against the reference's.
    func measure(region: Graph, kept: [[String: Tensor]], names: [String]) throws -> [OutputMetrics] {
        var acc = names.map { MetricsAccumulator(name: $0, labels: labels) }
        let interpreter = region.nodes.isEmpty ? nil : try Interpreter(graph: region, options: .init(threads: 1))
        for (k, values) in kept.enumerated() {
            var feed: [String: Tensor] = [:]
            for i in region.runtimeInputs { feed[i.name] = values[i.name] }
            let got = try interpreter?.run(feed) ?? [:]
            for (i, n) in names.enumerated() {
                guard let r = outputs[k][n], let c = got[n] ?? values[n] else { throw Error(description: "output '\(n)' missing for input \(k)") }
                try acc[i].add(reference: r, candidate: c)
            }
        }
        return acc.map { $0.result() }
    }

    /// `body(k)` for k in 0..<count on up to `threads` workers, results in index order.
    public static func inParallel<T: Sendable>(_ count: Int, threads: Int, _ body: @escaping @Sendable (Int) throws -> T) throws -> [T] {
        let board = WorkBoard<T>(count)
        DispatchQueue.concurrentPerform(iterations: max(1, min(threads, count))) { _ in
            while case let k = board.claim(), k < count { board.put(k, Result { try body(k) }) }
        }
        return try board.items.enumerated().map { k, r in
            guard let r else { throw Error(description: "item \(k) was not run") }
            return try r.get()
        }
    }
}

/// Work items handed out in order, results kept by index, both under one lock.
private final class WorkBoard<T>: @unchecked Sendable {
    var next = 0
    var items: [Result<T, any Swift.Error>?]
    let lock = NSLock()
    init(_ n: Int) { items = Array(repeating: nil, count: n) }
    func claim() -> Int { lock.lock(); defer { lock.unlock() }; next += 1; return next - 1 }
    func put(_ k: Int, _ r: Result<T, any Swift.Error>) { lock.lock(); items[k] = r; lock.unlock() }
}
