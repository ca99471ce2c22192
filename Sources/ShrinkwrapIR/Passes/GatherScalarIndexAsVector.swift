extension LoweringPass {
    /// A Gather by one scalar index (x[k] along an axis, which drops the axis)
    /// as a Gather by a one-element index vector, which keeps the axis with
    /// size 1, then a Reshape to the scalar gather's shape: for formats with no
    /// rank-0 values (Core ML NeuralNetwork stores a scalar as [1], so its
    /// gather would keep the axis). Gathers of unknown shapes are left alone.
    public static let gatherScalarIndexAsVector = LoweringPass(
        "gather-scalar-index-as-vector", "Gather by a scalar index → Gather by a [1] index, Reshape dropping the axis"
    ) { g in
        var out: [Node] = []
        for n in g.nodes {
            let rank = n.input(0).flatMap { g.shapes[$0] }?.count ?? 0
            let axis = n.int("axis", 0) < 0 ? n.int("axis", 0) + rank : n.int("axis", 0)
            guard n.opType == "Gather", let x = n.input(0), let i = n.input(1), g.shapes[i] == [], n.outputs.count == 1,
                  let y = n.outputs.first, let xs = g.shapes[x], let ys = g.shapes[y], (0..<xs.count).contains(axis) else {
                out.append(n)
                continue
            }
            var kept = xs
            kept[axis] = 1
            let gathered = g.fresh(y + "_kept")
            (g.shapes[gathered], g.dtypes[gathered]) = (kept, g.dtypes[y] ?? g.dtypes[x])
            let vector: String
            if let c = g.constants[i], let v = try? c.reshaped([1]) {
                vector = g.addConstant(i + "_vector", v)
            } else {
                vector = g.fresh(i + "_vector")
                (g.shapes[vector], g.dtypes[vector]) = ([1], g.dtypes[i])
                let one = g.addConstant(n.name + "_index_shape", .dense(Tensor(ints: [1], shape: [1])))
                out.append(Node(name: g.fresh(n.name + "_index"), opType: "Reshape", inputs: [i, one], outputs: [vector]))
            }
            let shape = g.addConstant(n.name + "_shape", .dense(Tensor(ints: ys.map(Int64.init), shape: [ys.count])))
            out.append(Node(name: n.name, opType: "Gather", inputs: [x, vector], outputs: [gathered], attributes: n.attributes))
            out.append(Node(name: g.fresh(n.name + "_drop_axis"), opType: "Reshape", inputs: [gathered, shape], outputs: [y]))
        }
        g.nodes = out
    }
}
