extension LoweringPass {
    /// Pad (of a mode in `modes`, constant pads) that pads an axis outside the
    /// last `count`, but no more than `count` axes → Transpose moving the
    /// padded axes to the end (their order kept), the Pad there, Transpose
    /// back: for formats whose padding layer or op pads only trailing axes in
    /// those modes (Core ML NeuralNetwork's reflect / edge padding: the last two).
    public static func padOnTrailingAxes(_ count: Int, modes: Set<String>) -> LoweringPass {
        LoweringPass(
            "pad-on-trailing-axes",
            "Pad (\(modes.sorted().joined(separator: ", "))) of axes outside the last \(count) → Transposes around a Pad of the last \(count)"
        ) { g in
            for k in g.nodes.indices.reversed() where g.nodes[k].opType == "Pad" && modes.contains(g.nodes[k].string("mode", "constant")) {
                PadMoving.rewrite(&g, at: k, trailing: count)
            }
        }
    }
}

enum PadMoving {
    /// Per-axis (begin, end) pads of a Pad node with constant pads (and axes), or nil.
    static func pads(_ n: Node, rank r: Int, _ g: LoweringGraph) -> (begin: [Int], end: [Int])? {
        guard let pi = n.input(1), let pads = g.constants[pi]?.decoded().doubles else { return nil }
        var axes = Array(0..<r)
        if let ai = n.input(3) {
            guard let a = g.constants[ai]?.decoded().doubles else { return nil }
            axes = a.map { Int($0) < 0 ? Int($0) + r : Int($0) }
        }
        guard pads.count == 2 * axes.count, axes.allSatisfy({ $0 >= 0 && $0 < r }), Set(axes).count == axes.count,
              pads.allSatisfy({ $0 >= 0 && $0 < 1e9 }) else { return nil }
        var begin = [Int](repeating: 0, count: r), end = begin
        for (i, a) in axes.enumerated() { begin[a] = Int(pads[i]); end[a] = Int(pads[i + axes.count]) }
        return (begin, end)
    }

    static func rewrite(_ g: inout LoweringGraph, at k: Int, trailing count: Int) {
        let n = g.nodes[k]
        guard let x = n.input(0), let y = n.outputs.first, n.outputs.count == 1, let xs = g.shapes[x],
              let (begin, end) = pads(n, rank: xs.count, g) else { return }
        let r = xs.count
        let padded = (0..<r).filter { begin[$0] != 0 || end[$0] != 0 }
        guard padded.count <= count, padded.contains(where: { $0 < r - count }) else { return }
        // The unpadded axes first, then the padded ones.
        let p = (0..<r).filter { !padded.contains($0) } + padded
        let back = Permutation.inverse(p)
        let moved = Permutation.apply(p, to: xs)
        let xm = g.fresh(x + "_moved"), ym = g.fresh(y + "_moved")
        g.shapes[xm] = moved
        g.dtypes[xm] = g.dtypes[x]
        g.shapes[ym] = g.shapes[y].map { Permutation.apply(p, to: $0) }
        g.dtypes[ym] = g.dtypes[y] ?? g.dtypes[x]
        let newPads = Permutation.apply(p, to: begin) + Permutation.apply(p, to: end)
        let padsName = g.addConstant((n.input(1) ?? "pads") + "_moved",
                                     .dense(Tensor(ints: newPads.map { Int64($0) }, shape: [2 * r])))
        var inputs = [xm, padsName]
        if let v = n.input(2) { inputs.append(v) }
        g.nodes.replaceSubrange(k...k, with: [
            Node(name: g.fresh(n.name + "_in"), opType: "Transpose", inputs: [x], outputs: [xm], attributes: ["perm": .ints(p)]),
            Node(name: n.name, opType: "Pad", inputs: inputs, outputs: [ym], attributes: n.attributes, docString: n.docString),
            Node(name: g.fresh(n.name + "_out"), opType: "Transpose", inputs: [ym], outputs: [y], attributes: ["perm": .ints(back)]),
        ])
    }
}
