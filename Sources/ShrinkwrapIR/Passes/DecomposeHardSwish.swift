extension LoweringPass {
    /// HardSwish(x) = x · HardSigmoid(x; α = 1/6, β = 0.5) → HardSigmoid + Mul:
    /// for formats with a hard-sigmoid but no hard-swish (Core ML NeuralNetwork;
    /// paddle2onnx's PP-OCRv5 and MobileNetV3 models use it throughout).
    public static let decomposeHardSwish = LoweringPass(
        "decompose-hardswish", "HardSwish → x · HardSigmoid(x; 1/6, 0.5)", lowers: ["HardSwish"]
    ) { g in
        var out: [Node] = []
        for n in g.nodes {
            guard n.opType == "HardSwish", n.outputs.count == 1, let x = n.input(0), let y = n.outputs.first else {
                out.append(n)
                continue
            }
            let gate = g.fresh(y + "_gate")
            g.shapes[gate] = g.shapes[y] ?? g.shapes[x]
            g.dtypes[gate] = g.dtypes[y] ?? g.dtypes[x]
            out.append(Node(name: g.fresh(n.name + "_gate"), opType: "HardSigmoid", inputs: [x], outputs: [gate],
                            attributes: ["alpha": .float(1.0 / 6), "beta": .float(0.5)]))
            out.append(Node(name: n.name, opType: "Mul", inputs: [x, gate], outputs: [y]))
        }
        g.nodes = out
    }
}
