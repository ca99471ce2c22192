extension LoweringPass {
    /// Moves Transposes down through the ops a layout change commutes with
    /// (the op table's `layout`: element-wise ops, broadcasting arithmetic
    /// with constant operands transposed to match, Concat with its axis
    /// remapped) and removes pairs that undo each other, until nothing moves.
    /// A graph whose boundary is already NHWC (imported from TFLite) comes back
    /// without Transposes; an NCHW one keeps one at each end of every region.
    public static let sinkTransposes = LoweringPass(
        "sink-transposes", "Transposes moved down through element-wise ops and Concat; inverse pairs removed"
    ) { g in TransposeSinking.run(&g, throughPads: false) }

    /// `sinkTransposes` for the interpreter's planner: Pads (constant pads, no axes) also let
    /// Transposes through, their pads permuted, and values need no known shape (the rank
    /// comes from the permutation).
    public static let sinkTransposesForExecution = LoweringPass(
        "sink-transposes-for-execution", "Transposes moved down through element-wise ops, Concat and Pad; inverse pairs removed"
    ) { g in
        // Also with a Transpose read by several sinkable nodes given one copy each (which then sink
        // on their own), when that leaves fewer Transposes.
        var split = g
        TransposeSinking.run(&split, throughPads: true, splittingFanOut: true)
        TransposeSinking.run(&g, throughPads: true)
        if split.nodes.filter({ $0.opType == "Transpose" }).count < g.nodes.filter({ $0.opType == "Transpose" }).count { g = split }
    }
}

enum TransposeSinking {
    static func run(_ g: inout LoweringGraph, throughPads: Bool, splittingFanOut: Bool = false) {
        var changed = true
        while changed {
            changed = false
            if sinkOne(&g, throughPads: throughPads) { changed = true; continue }
            if cancelOne(&g) { changed = true; continue }
            if splittingFanOut && splitOne(&g, throughPads: throughPads) { changed = true }
        }
    }

    /// Gives each reader of a Transpose read by several nodes its own copy, when every reader
    /// is a node a Transpose can sink through (or another Transpose) and the value is neither a
    /// graph output nor captured by a subgraph. Returns false when there is none.
    static func splitOne(_ g: inout LoweringGraph, throughPads: Bool) -> Bool {
        var readers: [String: [Int]] = [:]
        for (k, n) in g.nodes.enumerated() { for i in Set(n.readNames) { readers[i, default: []].append(k) } }
        func sinkable(_ n: Node) -> Bool {
            if n.hasSubgraphs { return false }
            if n.opType == "Transpose" || (throughPads && n.opType == "Pad") { return true }
            switch OpTable[n.opType]?.layout {
            case .elementwise?, .broadcasting?, .concatenating?: return true
            default: return false
            }
        }
        for (k, t) in g.nodes.enumerated() where t.opType == "Transpose" {
            guard let v = t.outputs.first, !g.outputs.contains(v), let rs = readers[v], rs.count > 1,
                  rs.allSatisfy({ sinkable(g.nodes[$0]) }) else { continue }
            var copies: [Node] = []
            for r in rs {
                let v2 = g.fresh(v + "_copy")
                if let shape = g.shapes[v] { g.shapes[v2] = shape }
                g.dtypes[v2] = g.dtypes[v]
                g.nodes[r].inputs = g.nodes[r].inputs.map { $0 == v ? v2 : $0 }
                copies.append(Node(name: g.fresh(t.name + "_copy"), opType: "Transpose", inputs: t.inputs, outputs: [v2], attributes: t.attributes))
            }
            g.nodes.replaceSubrange(k...k, with: copies)
            return true
        }
        return false
    }

    /// Moves one Transpose below the element-wise op or concatenation that
    /// alone reads it (and, `throughPads`, a Pad). Returns false when none can move.
    static func sinkOne(_ g: inout LoweringGraph, throughPads: Bool = false) -> Bool {
        let producer = g.producers
        var readers: [String: [Int]] = [:]
        // What a subgraph captures counts as read by the node that owns it.
        for (k, n) in g.nodes.enumerated() { for i in n.readNames { readers[i, default: []].append(k) } }
        let nodes = g.nodes, outputs = g.outputs
        /// The Transpose feeding `v` with permutation `p`, read only by node `j`.
        func transposeInto(_ v: String, _ j: Int) -> (input: String, perm: [Int])? {
            guard let k = producer[v], nodes[k].opType == "Transpose", let p = Permutation.of(nodes[k]),
                  let src = nodes[k].input(0), !outputs.contains(v),
                  Set(readers[v] ?? []) == [j] else { return nil }
            return (src, p)
        }
        for (j, u) in nodes.enumerated() {
            let outs = u.outputs.filter { !$0.isEmpty }
            guard outs.count == 1, let y = outs.first else { continue }
            // Without a known shape, the rank is the permutation's (its input's, then the op's result's).
            let ys = g.shapes[y]
            guard let rank = ys?.count ?? u.inputs.lazy.compactMap({ transposeInto($0, j)?.perm.count }).first else { continue }
            let move: (perm: [Int], inputs: [String], axis: Attribute?)?
            switch OpTable[u.opType]?.layout {
            case .elementwise?: move = elementwiseMove(u, j, rank: rank, g, transposeInto)
            case .broadcasting?: move = broadcastingMove(u, j, rank: rank, &g, transposeInto)
            case .concatenating?: move = broadcastingMove(u, j, rank: rank, &g, transposeInto)
            default: move = throughPads && u.opType == "Pad" ? padMove(u, j, rank: rank, &g, transposeInto) : nil
            }
            guard let move else { continue }
            let y2 = g.fresh(y + "_t")
            if let ys { g.shapes[y2] = Permutation.apply(Permutation.inverse(move.perm), to: ys) }
            g.dtypes[y2] = g.dtypes[y]
            var u2 = u
            u2.inputs = move.inputs
            u2.outputs = u.outputs.map { $0 == y ? y2 : $0 }
            if let axis = move.axis { u2.attributes["axis"] = axis }
            g.nodes[j] = u2
            g.nodes.insert(Node(name: g.fresh(u.name + "_transpose"), opType: "Transpose", inputs: [y2], outputs: [y],
                                attributes: ["perm": .ints(move.perm)]), at: j + 1)
            g.removeDeadNodes()
            return true
        }
        return false
    }

    typealias TransposeInto = (String, Int) -> (input: String, perm: [Int])?

    /// An op applied element by element to input 0 (its other inputs scalars).
    static func elementwiseMove(_ u: Node, _ j: Int, rank r: Int, _ g: LoweringGraph,
                                _ transposeInto: TransposeInto) -> (perm: [Int], inputs: [String], axis: Attribute?)? {
        guard let x = u.input(0), let t = transposeInto(x, j), t.perm.count == r else { return nil }
        // The other inputs (Clip's bounds) must be scalars.
        guard u.inputs.dropFirst().allSatisfy({ $0.isEmpty || (g.constants[$0]?.count ?? 2) == 1 }) else { return nil }
        if u.opType == "Dropout" && u.outputs.count > 1 && !u.outputs[1].isEmpty { return nil }
        var inputs = u.inputs
        inputs[0] = t.input
        return (t.perm, inputs, nil)
    }

    /// Broadcasting arithmetic (constant operands transposed to match) or a
    /// concatenation (every input transposed alike, the axis remapped).
    static func broadcastingMove(_ u: Node, _ j: Int, rank r: Int, _ g: inout LoweringGraph,
                                 _ transposeInto: TransposeInto) -> (perm: [Int], inputs: [String], axis: Attribute?)? {
        let concat = OpTable[u.opType]?.layout == .concatenating
        var p: [Int]?
        var newInputs = u.inputs
        var newConstants: [(index: Int, encoding: WeightEncoding)] = []
        for (k, v) in u.inputs.enumerated() where !v.isEmpty {
            if let t = transposeInto(v, j), t.perm.count == r, p == nil || p == t.perm {
                p = t.perm
                newInputs[k] = t.input
            } else if !concat, let c = g.constants[v], c.shape.count <= r {
                newConstants.append((k, c))
            } else {
                return nil
            }
        }
        guard let q = p else { return nil }
        let inv = Permutation.inverse(q)
        var converted: [(Int, WeightEncoding)] = []
        for (k, c) in newConstants {
            let full = [Int](repeating: 1, count: r - c.shape.count) + c.shape
            guard let e = try? c.reshaped(full).transposed(inv) else { return nil }
            converted.append((k, e))
        }
        var axisAttr: Attribute?
        if concat {
            guard case .int(let a)? = u.attributes["axis"] else { return nil }
            let axis = a < 0 ? a + r : a
            guard axis >= 0, axis < r else { return nil }
            axisAttr = .int(q[axis])
        }
        for (k, e) in converted { newInputs[k] = g.addConstant(u.inputs[k] + "_nhwc", e) }
        return (q, newInputs, axisAttr)
    }

    /// Pad(Transpose(x, p), pads) = Transpose(Pad(x, pads'), p) with pads' of axis p[i] = pads of
    /// axis i: constant pads over every axis (no axes input), any mode.
    static func padMove(_ u: Node, _ j: Int, rank r: Int, _ g: inout LoweringGraph,
                        _ transposeInto: TransposeInto) -> (perm: [Int], inputs: [String], axis: Attribute?)? {
        guard let x = u.input(0), let t = transposeInto(x, j), t.perm.count == r, u.input(3) == nil,
              let padsName = u.input(1), case .dense(let padsTensor)? = g.constants[padsName],
              let pads = padsTensor.ints, pads.count == 2 * r else { return nil }
        var moved = pads
        for i in 0..<r { moved[t.perm[i]] = pads[i]; moved[r + t.perm[i]] = pads[r + i] }
        var inputs = u.inputs
        inputs[0] = t.input
        inputs[1] = g.addConstant(padsName + "_permuted", .dense(Tensor(ints: moved, shape: [2 * r], dtype: padsTensor.dtype)))
        return (t.perm, inputs, nil)
    }

    /// Removes one Transpose that undoes the Transpose feeding it (its readers
    /// read the first one's input instead). Returns false when there is none.
    static func cancelOne(_ g: inout LoweringGraph) -> Bool {
        let producer = g.producers
        for (k, n) in g.nodes.enumerated() where n.opType == "Transpose" {
            guard let mid = n.input(0), let pk = producer[mid], g.nodes[pk].opType == "Transpose",
                  let a = Permutation.of(g.nodes[pk]), let b = Permutation.of(n), a.count == b.count,
                  b.indices.allSatisfy({ a[b[$0]] == $0 }),
                  let source = g.nodes[pk].input(0), let out = n.outputs.first else { continue }
            // A value a graph output or a subgraph capture names stays, as an Identity.
            if g.outputs.contains(out) || g.nodes.contains(where: { $0.hasSubgraphs && $0.capturedNames.contains(out) }) {
                g.nodes[k] = Node(name: n.name, opType: "Identity", inputs: [source], outputs: [out])
            } else {
                g.nodes.remove(at: k)
                for j in g.nodes.indices { g.nodes[j].inputs = g.nodes[j].inputs.map { $0 == out ? source : $0 } }
            }
            g.removeDeadNodes()
            return true
        }
        return false
    }
}
