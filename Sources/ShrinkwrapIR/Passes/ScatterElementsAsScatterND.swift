extension LoweringPass {
    /// ScatterElements(data, indices, updates, axis) with reduction "none" → ScatterND into zeros
    /// (reduction "add", the form TFLite's SCATTER_ND computes: zeros of a shape, updates added at
    /// the indices) and a Where that takes the scattered values where anything was written:
    ///
    ///     idx    = indices (a negative index + the axis's size), as full coordinates [..., r]:
    ///              the element's own position on every axis but `axis`, idx on `axis`
    ///     values = ScatterND(zeros, idx, updates, add)
    ///     hit    = ScatterND(zeros, idx, ones, add) > 0
    ///     y      = Where(hit, values, data)
    ///
    /// A position two indices name gets the sum of their updates; ONNX leaves that case undefined
    /// for reduction "none". Needs static shapes; the other reductions keep the op.
    public static let scatterElementsAsScatterND = LoweringPass(
        "scatter-elements-as-scatter-nd", "ScatterElements → ScatterND into zeros (add) + Where on the written positions",
        lowers: ["ScatterElements"]
    ) { g in
        var out: [Node] = []
        for n in g.nodes {
            guard n.opType == "ScatterElements", n.string("reduction", "none") == "none", n.outputs.count == 1,
                  let x = n.input(0), let i = n.input(1), let u = n.input(2), let y = n.outputs.first,
                  let ds = g.shapes[x], let s = g.shapes[i], g.shapes[u] == s, s.count == ds.count, !s.isEmpty,
                  !s.contains(0), let dt = g.dtypes[x], g.dtypes[u] == dt, g.dtypes[i] == .int64 || g.dtypes[i] == .int32 else {
                out.append(n)
                continue
            }
            let r = s.count
            var a = n.int("axis", 0)
            if a < 0 { a += r }
            guard a >= 0, a < r else { out.append(n); continue }
            out += scatterNodes(&g, n, data: x, indices: i, updates: u, y: y, axis: a, shape: s, dataShape: ds, dtype: dt)
        }
        g.nodes = out
    }

    static func scatterNodes(_ g: inout LoweringGraph, _ n: Node, data x: String, indices i: String, updates u: String, y: String,
                             axis a: Int, shape s: [Int], dataShape ds: [Int], dtype dt: DType) -> [Node] {
        var out: [Node] = []
        let r = s.count
        func value(_ base: String, _ shape: [Int], _ d: DType) -> String {
            let v = g.fresh(y + "_" + base)
            g.shapes[v] = shape
            g.dtypes[v] = d
            return v
        }
        func node(_ op: String, _ ins: [String], _ o: String, _ attrs: [String: Attribute] = [:]) {
            out.append(Node(name: g.fresh(n.name + "_" + op.lowercased()), opType: op, inputs: ins, outputs: [o], attributes: attrs))
        }
        // The index on `axis`, int64, a negative one counted from the end, as a [..., 1] column.
        var idx = i
        if g.dtypes[i] != .int64 {
            idx = value("indices64", s, .int64)
            node("Cast", [i], idx, ["to": .int(DType.int64.onnxDataType)])
        }
        let zero64 = g.addConstant(y + "_zero", .dense(Tensor(ints: [0], shape: [])))
        let size = g.addConstant(y + "_axis_size", .dense(Tensor(ints: [Int64(ds[a])], shape: [])))
        let negative = value("negative", s, .bool), wrapped = value("wrapped", s, .int64), fixed = value("index", s, .int64)
        node("Less", [idx, zero64], negative)
        node("Add", [idx, size], wrapped)
        node("Where", [negative, wrapped, idx], fixed)
        let column = value("index_column", s + [1], .int64)
        node("Unsqueeze", [fixed, g.addConstant(y + "_last_axis", .dense(Tensor(ints: [Int64(r)], shape: [1])))], column)
        // Every other axis: the element's own position there (a constant grid).
        var parts: [String] = []
        let count = s.reduce(1, *)
        for k in 0..<r {
            if k == a { parts.append(column); continue }
            let inner = s[(k + 1)...].reduce(1, *)
            let grid = (0..<count).map { Int64(($0 / inner) % s[k]) }
            parts.append(g.addConstant(y + "_grid\(k)", .dense(Tensor(ints: grid, shape: s + [1]))))
        }
        let coords = value("coordinates", s + [r], .int64)
        node("Concat", parts, coords, ["axis": .int(r)])
        let zeros = g.addConstant(y + "_zeros", .dense(Tensor.zeros(ds, dtype: dt)))
        let ones = g.addConstant(y + "_ones", .dense(Tensor([Float](repeating: 1, count: count), shape: s)))
        let zerosF = dt == .float32 ? zeros : g.addConstant(y + "_zeros_f32", .dense(Tensor.zeros(ds)))
        let values = value("values", ds, dt), hits = value("hits", ds, .float32), hit = value("hit", ds, .bool)
        node("ScatterND", [zeros, coords, u], values, ["reduction": .string("add")])
        node("ScatterND", [zerosF, coords, ones], hits, ["reduction": .string("add")])
        node("Greater", [hits, g.addConstant(y + "_half", .dense(Tensor([0.5], shape: [])))], hit)
        out.append(Node(name: n.name, opType: "Where", inputs: [hit, values, x], outputs: [y]))
        return out
    }
}
