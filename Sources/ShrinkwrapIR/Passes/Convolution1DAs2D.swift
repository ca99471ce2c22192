extension LoweringPass {
    /// A 1-D convolution or pool (input [N, C, L]) as the 2-D op over a
    /// height-1 view, as TensorFlow's converter writes it: Reshape to
    /// [N, C, 1, L], the op with kernel [1, k], strides [1, s], pads
    /// [0, p0, 0, p1], dilations [1, d] and a constant weight reshaped to
    /// [O, I, 1, k] (its encoding kept, so per-channel scales stay on axis 0),
    /// then Reshape back. The Reshapes back are then moved down through
    /// element-wise ops and cancelled against the next op's Reshape to 4-D, so a
    /// chain of 1-D convolutions stays 4-D throughout. For formats whose
    /// convolutions and pools are 2-D only (TFLite).
    public static let convolution1DAs2D = LoweringPass(
        "convolution-1d-as-2d", "1-D Conv / ConvTranspose / pools → the 2-D op over a height-1 view between Reshapes"
    ) { g in
        var back = Set<String>()
        var out: [Node] = []
        for n in g.nodes {
            guard let m = Convolution1D.rewrite(n, &g) else {
                out.append(n)
                continue
            }
            out += m.nodes
            back.insert(m.back)
        }
        guard !back.isEmpty else { return }
        g.nodes = out
        while Convolution1D.sinkOne(&g, back: &back) {}
    }
}

enum Convolution1D {
    static let ops: Set<String> = ["Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"]

    /// The rank-3 shape `s` with a 1 inserted as the height axis: [N, C, L] → [N, C, 1, L].
    static func lifted(_ s: [Int]) -> [Int] { Array(s.prefix(2)) + [1] + Array(s.dropFirst(2)) }

    /// The nodes replacing `n` (Reshape, the 2-D op, Reshape back) and the
    /// value the Reshape back writes (`n`'s output), or nil when `n` is not a
    /// 1-D op this pass takes.
    static func rewrite(_ n: Node, _ g: inout LoweringGraph) -> (nodes: [Node], back: String)? {
        guard ops.contains(n.opType), let x = n.input(0), let xs = g.shapes[x], xs.count == 3,
              n.outputs.count == 1, let y = n.outputs.first, let ys = g.shapes[y], ys.count == 3,
              let attributes = liftedAttributes(n) else { return nil }
        var inputs = n.inputs
        var nodes: [Node] = []
        // The weight: a constant reshaped (encoding kept), or a runtime value through a Reshape.
        if n.opType == "Conv" || n.opType == "ConvTranspose" {
            guard let w = n.input(1), let ws = g.shapes[w], ws.count == 3 else { return nil }
            if let c = g.constants[w] {
                guard let lifted = try? c.reshaped(lifted(ws)) else { return nil }
                inputs[1] = g.addConstant(w + "_2d", lifted)
            } else {
                let (node, w4) = reshape(w, to: lifted(ws), &g, name: n.name + "_weight_2d")
                nodes.append(node)
                inputs[1] = w4
            }
        }
        let (before, x4) = reshape(x, to: lifted(xs), &g, name: n.name + "_to_2d")
        inputs[0] = x4
        let y4 = g.fresh(y + "_2d")
        g.shapes[y4] = lifted(ys)
        g.dtypes[y4] = g.dtypes[y]
        let shape = g.addConstant(y + "_shape", .dense(Tensor(ints: ys.map(Int64.init), shape: [3])))
        nodes += [
            before,
            Node(name: n.name, opType: n.opType, inputs: inputs, outputs: [y4], attributes: attributes, docString: n.docString),
            Node(name: g.fresh(n.name + "_to_1d"), opType: "Reshape", inputs: [y4, shape], outputs: [y]),
        ]
        return (nodes, y)
    }

    /// A Reshape of `v` to `shape` (a fresh value) and that value.
    static func reshape(_ v: String, to shape: [Int], _ g: inout LoweringGraph, name: String) -> (Node, String) {
        let out = g.fresh(v + "_2d")
        g.shapes[out] = shape
        g.dtypes[out] = g.dtypes[v]
        let s = g.addConstant(out + "_shape", .dense(Tensor(ints: shape.map(Int64.init), shape: [shape.count])))
        return (Node(name: g.fresh(name), opType: "Reshape", inputs: [v, s], outputs: [out]), out)
    }

    /// The 2-D attributes of a 1-D op: the height axis has kernel, stride and
    /// dilation 1 and no padding. Nil when an attribute is not 1-D.
    static func liftedAttributes(_ n: Node) -> [String: Attribute]? {
        var a = n.attributes
        for key in ["kernel_shape", "strides", "dilations", "output_padding", "output_shape"] {
            guard let v = n.ints(key) else { continue }
            guard v.count == 1 else { return nil }
            a[key] = .ints([key == "output_padding" ? 0 : 1] + v)
        }
        if let p = n.ints("pads") {
            guard p.count == 2 else { return nil }
            a["pads"] = .ints([0, p[0], 0, p[1]])
        }
        if n.opType == "MaxPool" && n.outputs.count > 1 { return nil }
        return a
    }

    /// Moves one Reshape back to 3-D (one writing a value of `back`) below the element-wise
    /// op that alone reads it, or removes it with a Reshape to the 4-D shape
    /// it came from that alone reads it. Returns false when none can move.
    static func sinkOne(_ g: inout LoweringGraph, back: inout Set<String>) -> Bool {
        var readers: [String: [Int]] = [:]
        for (k, n) in g.nodes.enumerated() { for i in n.inputs where !i.isEmpty { readers[i, default: []].append(k) } }
        for (i, r) in g.nodes.enumerated() where r.opType == "Reshape" && back.contains(r.outputs.first ?? "") {
            guard let a = r.input(0), let b = r.outputs.first, let s4 = g.shapes[a], !g.outputs.contains(b),
                  let rs = readers[b], let j = rs.first else { continue }
            // Read only by Reshapes (or Unsqueezes) back to the 4-D shape: they all read `a`.
            let restores = Set(rs).filter { k in
                let u = g.nodes[k]
                return ["Reshape", "Unsqueeze"].contains(u.opType) && u.inputs.first == b && u.outputs.count == 1
                    && u.inputs.dropFirst().allSatisfy { $0 != b } && g.shapes[u.outputs[0]] == s4
            }
            if restores.count == Set(rs).count {
                for k in restores.sorted(by: >) {
                    let u = g.nodes[k], y = u.outputs[0]
                    if g.outputs.contains(y) {
                        g.nodes[k] = Node(name: u.name, opType: "Identity", inputs: [a], outputs: [y])
                    } else {
                        for m in g.nodes.indices { g.nodes[m].inputs = g.nodes[m].inputs.map { $0 == y ? a : $0 } }
                        g.nodes.remove(at: k)
                    }
                }
                g.nodes.remove(at: i)  // before its readers
                back.remove(b)
                g.removeDeadNodes()
                return true
            }
            let u = g.nodes[j]
            guard Set(rs).count == 1, let y = u.outputs.first, u.outputs.count == 1 else { continue }
            guard let s3 = g.shapes[b], g.shapes[y] == s3, let inputs = liftedInputs(u, from: b, to: a, &g) else { continue }
            let y4 = g.fresh(y + "_2d")
            g.shapes[y4] = s4
            g.dtypes[y4] = g.dtypes[y]
            var u2 = u
            u2.inputs = inputs
            u2.outputs = [y4]
            var r2 = r
            r2.inputs[0] = y4
            r2.outputs = [y]
            g.nodes[j] = u2
            g.nodes.insert(r2, at: j + 1)
            g.nodes.remove(at: i)
            back.remove(b)
            back.insert(y)
            return true
        }
        return false
    }

    /// The inputs of element-wise `u` with `b` (3-D) read as `a` (its 4-D
    /// view) and constant operands lifted alike; nil when `u` does not commute.
    static func liftedInputs(_ u: Node, from b: String, to a: String, _ g: inout LoweringGraph) -> [String]? {
        switch OpTable[u.opType]?.layout {
        case .elementwise?:
            guard u.inputs.first == b,
                  u.inputs.dropFirst().allSatisfy({ $0.isEmpty || (g.constants[$0]?.count ?? 2) == 1 }) else { return nil }
            if u.opType == "Dropout" && u.outputs.count > 1 { return nil }
            return [a] + u.inputs.dropFirst()
        case .broadcasting?:
            var inputs = u.inputs
            var liftedConstants: [(Int, WeightEncoding)] = []
            for (k, v) in u.inputs.enumerated() where !v.isEmpty && v != b {
                guard let c = g.constants[v], c.shape.count <= 3,
                      let e = try? c.reshaped(lifted([Int](repeating: 1, count: 3 - c.shape.count) + c.shape)) else { return nil }
                liftedConstants.append((k, e))
            }
            for k in inputs.indices where inputs[k] == b { inputs[k] = a }
            for (k, e) in liftedConstants { inputs[k] = g.addConstant(u.inputs[k] + "_2d", e) }
            return inputs
        default:
            return nil
        }
    }
}
