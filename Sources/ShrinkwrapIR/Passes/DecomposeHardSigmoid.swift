extension LoweringPass {
    /// HardSigmoid(x) = clip(α·x + β, 0, 1) → Mul by α, Add β, Clip to [0, 1]:
    /// for formats without the op (TFLite; paddle2onnx's MobileNetV3 OCR models
    /// use it in every squeeze-excite block). Float32 only (the constants it
    /// makes are float32); other element types keep the op.
    public static let decomposeHardSigmoid = LoweringPass(
        "decompose-hardsigmoid", "float32 HardSigmoid → Mul by alpha, Add beta, Clip to [0, 1]", lowers: ["HardSigmoid"]
    ) { g in
        var out: [Node] = []
        for n in g.nodes {
            guard n.opType == "HardSigmoid", n.outputs.count == 1, let x = n.input(0), let y = n.outputs.first,
                  (g.dtypes[x] ?? .float32) == .float32 else {
                out.append(n)
                continue
            }
            func scalar(_ what: String, _ v: Float) -> String { g.addConstant(y + "_" + what, .dense(Tensor([v], shape: []))) }
            let alpha = scalar("alpha", n.float("alpha", 0.2)), beta = scalar("beta", n.float("beta", 0.5))
            let zero = scalar("zero", 0), one = scalar("one", 1)
            let scaled = g.fresh(y + "_scaled"), shifted = g.fresh(y + "_shifted")
            for v in [scaled, shifted] {
                g.shapes[v] = g.shapes[y] ?? g.shapes[x]
                g.dtypes[v] = .float32
            }
            out.append(Node(name: g.fresh(n.name + "_scale"), opType: "Mul", inputs: [x, alpha], outputs: [scaled]))
            out.append(Node(name: g.fresh(n.name + "_shift"), opType: "Add", inputs: [scaled, beta], outputs: [shifted]))
            out.append(Node(name: n.name, opType: "Clip", inputs: [shifted, zero, one], outputs: [y]))
        }
        g.nodes = out
    }
}
