extension LoweringPass {
    /// Swish(x) = x · Sigmoid(α · x) → (Mul) + Sigmoid + Mul: for formats with a sigmoid
    /// but no swish (TFLite, Core ML NeuralNetwork; Keras' "swish" / "silu" activation,
    /// EfficientNet's throughout).
    public static let decomposeSwish = LoweringPass(
        "decompose-swish", "Swish → x · Sigmoid(α · x)", lowers: ["Swish"]
    ) { g in
        var out: [Node] = []
        for n in g.nodes {
            guard n.opType == "Swish", n.outputs.count == 1, let x = n.input(0), let y = n.outputs.first else {
                out.append(n)
                continue
            }
            let alpha = n.float("alpha", 1)
            var arg = x
            if alpha != 1 {
                let a = g.addConstant(y + "_alpha", .dense(.scalar(alpha)))
                arg = g.fresh(y + "_scaled")
                g.shapes[arg] = g.shapes[y] ?? g.shapes[x]
                g.dtypes[arg] = g.dtypes[y] ?? g.dtypes[x]
                out.append(Node(name: g.fresh(n.name + "_scale"), opType: "Mul", inputs: [x, a], outputs: [arg]))
            }
            let gate = g.fresh(y + "_gate")
            g.shapes[gate] = g.shapes[y] ?? g.shapes[x]
            g.dtypes[gate] = g.dtypes[y] ?? g.dtypes[x]
            out.append(Node(name: g.fresh(n.name + "_gate"), opType: "Sigmoid", inputs: [arg], outputs: [gate]))
            out.append(Node(name: n.name, opType: "Mul", inputs: [x, gate], outputs: [y]))
        }
        g.nodes = out
    }
}
