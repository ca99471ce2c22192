extension LoweringPass {
    /// Moves Transposes down through the ops a layout change commutes with
    /// (the op table's `layout`: element-wise ops, broadcasting arithmetic
    /// with constant operands transposed to match, Concat with its axis
    /// remapped) and removes pairs that undo each other, until nothing moves.
    /// A graph whose boundary is already NHWC (imported from TFLite) comes back
    /// without Transposes; an NCHW one keeps one at each end of every region.
    public static let sinkTransposes = LoweringPass(
        "sink-transposes", "Transposes moved down through element-wise ops and Concat; inverse pairs removed"
    ) { g in
        var changed = true
        while changed {
            changed = false
            if TransposeSinking.sinkOne(&g) { changed = true; continue }
            if TransposeSinking.cancelOne(&g) { changed = true }
        }
    }
}

enum TransposeSinking {
    /// Moves one Transpose below the element-wise op or concatenation that
    /// alone reads it. Returns false when none can move.
    static func sinkOne(_ g: inout LoweringGraph) -> Bool {
        let producer = g.producers
        var readers: [String: [Int]] = [:]
        for (k, n) in g.nodes.enumerated() { for i in n.inputs where !i.isEmpty { readers[i, default: []].append(k) } }
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
            guard outs.count == 1, let y = outs.first, let ys = g.shapes[y] else { continue }
            let move: (perm: [Int], inputs: [String], axis: Attribute?)?
            switch OpTable[u.opType]?.layout {
            case .elementwise?: move = elementwiseMove(u, j, rank: ys.count, g, transposeInto)
            case .broadcasting?: move = broadcastingMove(u, j, rank: ys.count, &g, transposeInto)
            case .concatenating?: move = broadcastingMove(u, j, rank: ys.count, &g, transposeInto)
            default: move = nil
            }
            guard let move else { continue }
            let y2 = g.fresh(y + "_t")
            g.shapes[y2] = Permutation.apply(Permutation.inverse(move.perm), to: ys)
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

    /// Removes one Transpose that undoes the Transpose feeding it (its readers
    /// read the first one's input instead). Returns false when there is none.
    static func cancelOne(_ g: inout LoweringGraph) -> Bool {
        let producer = g.producers
        for (k, n) in g.nodes.enumerated() where n.opType == "Transpose" {
            guard let mid = n.input(0), let pk = producer[mid], g.nodes[pk].opType == "Transpose",
                  let a = Permutation.of(g.nodes[pk]), let b = Permutation.of(n), a.count == b.count,
                  b.indices.allSatisfy({ a[b[$0]] == $0 }),
                  let source = g.nodes[pk].input(0), let out = n.outputs.first else { continue }
            if g.outputs.contains(out) {
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
