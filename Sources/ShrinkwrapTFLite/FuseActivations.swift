import ShrinkwrapIR

extension TFLiteLowering {
    /// The attribute naming the fused activation of the op that writes a
    /// node (TFLite ActivationFunctionType: 1 RELU, 2 RELU_N1_TO_1, 3 RELU6, 4 TANH).
    static let fusedActivation = "tflite.fused_activation"

    /// A Relu / Clip(0, 6) / Clip(−1, 1) alone reading the output of a
    /// convolution, fully connected layer or element-wise arithmetic becomes
    /// that op's fused activation, as TFLite's converter writes it. (TF 2.12's
    /// kernels refuse a fused TANH in FULLY_CONNECTED and any fused activation
    /// in CONCATENATION, so those stay separate ops.)
    static let fuseActivations = LoweringPass(
        "fuse-activations", "Relu / Relu6 / Clip(−1, 1) alone after a convolution, dense layer or arithmetic → its fused activation"
    ) { g in
        var k = 0
        while k < g.nodes.count {
            let a = g.nodes[k]
            guard let c = activationCode(a, g), let x = a.input(0), let y = a.outputs.first, !g.outputs.contains(x),
                  let p = g.nodes.firstIndex(where: { $0.outputs == [x] }), canFuse(into: g.nodes[p], g),
                  g.nodes.filter({ $0.inputs.contains(x) }).count == 1 else { k += 1; continue }
            g.nodes[p].attributes[fusedActivation] = .int(c)
            g.nodes[p].outputs = [y]
            g.nodes.remove(at: k)
        }
    }

    /// The ActivationFunctionType `n` is, if it is one.
    static func activationCode(_ n: Node, _ g: LoweringGraph) -> Int? {
        switch n.opType {
        case "Relu": return 1
        case "Clip":
            func bound(_ k: Int, _ attr: String) -> Float? {
                if let v = n.input(k) { return g.constants[v]?.decoded().floats?.first }
                if case .float(let f)? = n.attributes[attr] { return f }
                return nil
            }
            let lo = bound(1, "min"), hi = bound(2, "max")
            if lo == 0 && hi == 6 { return 3 }
            if lo == -1 && hi == 1 { return 2 }
            if lo == 0 && (hi == nil || hi == .infinity) { return 1 }
            return nil
        default: return nil
        }
    }

    /// Whether `p` is written as a TFLite op with a fused activation that TF's kernels accept.
    static func canFuse(into p: Node, _ g: LoweringGraph) -> Bool {
        guard p.outputs.count == 1, p.attributes[fusedActivation] == nil else { return false }
        switch p.opType {
        case "Add", "Sub", "Mul", "Div": return p.inputs.filter { !$0.isEmpty }.count == 2
        case "MatMul": return p.input(1).flatMap { g.constants[$0]?.shape.count } == 2
        case "Gemm":
            guard let b = p.input(1), g.isConstant(b), p.float("alpha", 1) == 1, p.int("transA", 0) == 0 else { return false }
            guard let c = p.input(2) else { return true }
            guard let ce = g.constants[c], let n = g.shapes[p.outputs[0]]?.last else { return false }
            return p.float("beta", 1) == 1 && ce.count == n
        case "NHWC.Conv":
            guard let x = p.input(0), let cin = g.shapes[x]?.last, let w = p.input(1), let ws = g.constants[w]?.shape, ws.count == 4 else { return false }
            let groups = p.int("group", 1)
            return groups == 1 || (groups == cin && ws[1] == 1 && ws[0] % cin == 0)
        default: return false
        }
    }
}
