extension LoweringPass {
    /// A Slice with a negative step on some axis (a reversal: Keras' go_backwards
    /// sequence, x[::-1]) as one Gather per sliced axis with the constant indices
    /// ONNX's formulas pick: for formats whose slice layer steps forward only.
    /// Slices with run-time bounds or an empty result are left alone.
    public static let sliceNegativeStepsAsGather = LoweringPass(
        "slice-negative-steps-as-gather", "Slice with a negative step → a Gather of constant indices per sliced axis"
    ) { g in
        for k in g.nodes.indices.reversed() where g.nodes[k].opType == "Slice" {
            if let replacement = NegativeStepSlice.rewrite(&g, g.nodes[k]) { g.nodes.replaceSubrange(k...k, with: replacement) }
        }
    }
}

enum NegativeStepSlice {
    static func rewrite(_ g: inout LoweringGraph, _ n: Node) -> [Node]? {
        guard let x = n.input(0), let y = n.outputs.first, n.outputs.count == 1, let xs = g.shapes[x],
              let starts = ints(n.input(1), g), let ends = ints(n.input(2), g), starts.count == ends.count else { return nil }
        let axes = n.input(3) == nil ? Array(0..<starts.count) : ints(n.input(3), g)?.map { $0 < 0 ? $0 + xs.count : $0 }
        let steps = n.input(4) == nil ? Array(repeating: 1, count: starts.count) : ints(n.input(4), g)
        guard let axes, let steps, axes.count == starts.count, steps.count == starts.count, Set(axes).count == axes.count,
              axes.allSatisfy({ (0..<xs.count).contains($0) }), steps.contains(where: { $0 < 0 }), !steps.contains(0) else { return nil }
        var picks: [(axis: Int, indices: [Int])] = []
        for (i, a) in axes.enumerated() {
            let idx = indices(start: starts[i], end: ends[i], step: steps[i], size: xs[a])
            guard !idx.isEmpty else { return nil }
            if idx != Array(0..<xs[a]) { picks.append((a, idx)) }
        }
        var nodes: [Node] = [], current = x, shape = xs
        for (j, pick) in picks.enumerated() {
            let c = g.addConstant(n.name + "_indices\(pick.axis)", .dense(Tensor(ints: pick.indices.map { Int64($0) }, shape: [pick.indices.count])))
            shape[pick.axis] = pick.indices.count
            let out = j == picks.count - 1 ? y : g.fresh(y + "_axis\(pick.axis)")
            if out != y { g.shapes[out] = shape; g.dtypes[out] = g.dtypes[x] }
            nodes.append(Node(name: j == 0 ? n.name : g.fresh(n.name + "_axis\(pick.axis)"), opType: "Gather", inputs: [current, c], outputs: [out],
                              attributes: ["axis": .int(pick.axis)]))
            current = out
        }
        return nodes.isEmpty ? nil : nodes
    }

    /// A constant integer input's values.
    static func ints(_ name: String?, _ g: LoweringGraph) -> [Int]? {
        name.flatMap { g.constants[$0]?.decoded().ints }.map { $0.map { Int(clamping: $0) } }
    }

    /// The positions ONNX's Slice takes along an axis of `size`: start and end counted from the end when
    /// negative, then clamped to [0, size] (step > 0) or [−1, size − 1] (step < 0).
    static func indices(start: Int, end: Int, step: Int, size: Int) -> [Int] {
        func clamped(_ v: Int, _ lo: Int, _ hi: Int) -> Int { min(max(v < 0 ? v &+ size : v, lo), hi) }
        let hi = step > 0 ? size : size - 1
        let s = clamped(start, 0, hi), e = clamped(end, step > 0 ? 0 : -1, hi)
        return Array(stride(from: s, to: e, by: step))
    }
}
