extension LoweringPass {
    /// PRelu whose constant slope varies along one axis other than the
    /// channel axis (rank − 3, where a per-channel PReLU layer reads it), as
    /// in models imported from TFLite (NHWC values, slope [1, 1, C]): a
    /// Transpose brings that axis to rank − 3, the PRelu runs there with the
    /// slope as [C, 1, 1], and a Transpose takes the result back. A Transpose
    /// this would undo (the one feeding the PRelu, or one reading its result)
    /// is skipped instead, so Conv → NHWC → PRelu → NCHW → Conv keeps no
    /// Transpose. Only PRelu nodes and the Transposes next to them change.
    public static let preluSlopeOnChannelAxis = LoweringPass(
        "prelu-slope-on-channel-axis",
        "PRelu with a slope along a non-channel axis → Transpose, per-channel PRelu, Transpose (inverse pairs skipped)"
    ) { g in
        var changed = false
        for k in g.nodes.indices.reversed() where g.nodes[k].opType == "PRelu" {
            if PReluChannelAxis.rewrite(&g, at: k) { changed = true }
        }
        if changed { g.removeDeadNodes() }
    }
}

enum PReluChannelAxis {
    /// The permutation that moves axis `a` of a rank-`r` value to `target`, the others kept in order.
    static func moving(_ a: Int, to target: Int, rank r: Int) -> [Int] {
        var p = (0..<r).filter { $0 != a }
        p.insert(a, at: target)
        return p
    }

    /// Rewrites the PRelu at index `k` when its slope lies along a single
    /// non-channel axis. Returns false (graph untouched) otherwise.
    static func rewrite(_ g: inout LoweringGraph, at k: Int) -> Bool {
        let n = g.nodes[k]
        guard let x = n.input(0), let s = n.input(1), let y = n.outputs.first, n.outputs.count == 1,
              let slope = g.constants[s], let xs = g.shapes[x], xs.count >= 3, slope.shape.count <= xs.count else { return false }
        let r = xs.count, target = r - 3
        let padded = [Int](repeating: 1, count: r - slope.shape.count) + slope.shape
        let varying = (0..<r).filter { padded[$0] != 1 }
        guard varying.count == 1, let a = varying.first, a != target, padded[a] == xs[a],
              let perChannel = try? slope.reshaped([xs[a], 1, 1]) else { return false }
        let p = moving(a, to: target, rank: r), back = Permutation.inverse(p)
        let moved = Permutation.apply(p, to: xs)
        let producers = g.producers
        var newNodes: [Node] = []
        // The input, moved: the source of a Transpose that `p` undoes, or a new Transpose.
        var source = x
        if let pk = producers[x], g.nodes[pk].opType == "Transpose", let q = Permutation.of(g.nodes[pk]), q.count == r,
           (0..<r).allSatisfy({ q[p[$0]] == $0 }), let src = g.nodes[pk].input(0) {
            source = src
        } else {
            source = g.fresh(x + "_moved")
            g.shapes[source] = moved
            g.dtypes[source] = g.dtypes[x]
            newNodes.append(Node(name: g.fresh(n.name + "_in"), opType: "Transpose", inputs: [x], outputs: [source],
                                 attributes: ["perm": .ints(p)]))
        }
        let slopeName = g.addConstant(s + "_per_channel", perChannel)
        let y2 = g.fresh(y + "_moved")
        g.shapes[y2] = moved
        g.dtypes[y2] = g.dtypes[y] ?? g.dtypes[x]
        newNodes.append(Node(name: n.name, opType: "PRelu", inputs: [source, slopeName], outputs: [y2], docString: n.docString))
        newNodes.append(Node(name: g.fresh(n.name + "_out"), opType: "Transpose", inputs: [y2], outputs: [y],
                             attributes: ["perm": .ints(back)]))
        g.nodes.replaceSubrange(k...k, with: newNodes)
        // Readers that transpose the result straight back read the moved result instead.
        for j in g.nodes.indices where g.nodes[j].opType == "Transpose" && g.nodes[j].inputs.first == y {
            guard let t = Permutation.of(g.nodes[j]), t.count == r, (0..<r).allSatisfy({ back[t[$0]] == $0 }),
                  let o = g.nodes[j].outputs.first else { continue }
            if g.outputs.contains(o) {
                g.nodes[j] = Node(name: g.nodes[j].name, opType: "Identity", inputs: [y2], outputs: [o])
            } else {
                for i in g.nodes.indices { g.nodes[i].inputs = g.nodes[i].inputs.map { $0 == o ? y2 : $0 } }
            }
        }
        return true
    }
}
