extension LoweringPass {
    /// BatchNormalization (inference) with constant parameters → Mul + Add by
    /// per-channel constants: for formats without the layer, and so that the
    /// layout passes move it like any element-wise op.
    public static let decomposeBatchNorm = LoweringPass(
        "decompose-batchnorm", "BatchNormalization with constant parameters → Mul + Add by per-channel constants",
        lowers: ["BatchNormalization"]
    ) { g in
        var out: [Node] = []
        for n in g.nodes {
            guard n.opType == "BatchNormalization", n.inputs.count >= 5, let x = n.input(0), let y = n.outputs.first,
                  let rank = g.shapes[x]?.count, rank >= 2,
                  let scale = g.constants[n.inputs[1]]?.decoded().doubles, let bias = g.constants[n.inputs[2]]?.decoded().doubles,
                  let mean = g.constants[n.inputs[3]]?.decoded().doubles, let variance = g.constants[n.inputs[4]]?.decoded().doubles,
                  scale.count == bias.count, mean.count == scale.count, variance.count == scale.count else {
                out.append(n)
                continue
            }
            var eps = 1e-5
            if case .float(let e)? = n.attributes["epsilon"] { eps = Double(e) }
            let c = scale.count
            var s = [Float](), t = [Float]()
            for k in 0..<c {
                let m = scale[k] / (variance[k] + eps).squareRoot()
                s.append(Float(m))
                t.append(Float(bias[k] - mean[k] * m))
            }
            let shape = [c] + [Int](repeating: 1, count: rank - 2)
            let sName = g.addConstant(y + "_bn_scale", .dense(Tensor(s, shape: shape)))
            let tName = g.addConstant(y + "_bn_shift", .dense(Tensor(t, shape: shape)))
            let mid = g.fresh(y + "_bn_scaled")
            g.shapes[mid] = g.shapes[y] ?? g.shapes[x]
            g.dtypes[mid] = .float32
            out.append(Node(name: n.name + "_scale", opType: "Mul", inputs: [x, sName], outputs: [mid]))
            out.append(Node(name: n.name, opType: "Add", inputs: [mid, tName], outputs: [y]))
        }
        g.nodes = out
    }
}
