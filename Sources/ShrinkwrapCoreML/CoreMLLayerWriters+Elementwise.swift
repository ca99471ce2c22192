// Element-wise binary and unary ops → add / multiply / scale / bias / broadcastable / unary NeuralNetwork layers.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    // MARK: elementwise

    static let binary: Writer = { w, n in
        let ins = n.inputs.filter { !$0.isEmpty }
        guard !ins.isEmpty else { throw LayerWriterError("no input") }
        let ys = try w.shape(n.outputs[0])
        let consts = ins.filter { w.graph.isConstant($0) }
        let runtime = ins.filter { !w.graph.isConstant($0) }
        // One runtime operand and one constant: a scalar is an alpha; a per-channel or
        // full-size constant a scale / bias layer with its weights.
        if runtime.count == 1, consts.count == 1, ins.count == 2, ["Add", "Sum", "Mul", "Sub", "Div", "Pow"].contains(n.opType) {
            let x = runtime[0], c = consts[0]
            let xs = try w.shape(x), cs = try w.shape(c)
            let constFirst = ins[0] == c
            let count = cs.reduce(1, *)
            if xs == ys, count == 1, !(constFirst && (n.opType == "Sub" || n.opType == "Div" || n.opType == "Pow")) {
                let v = try w.values(c)[0]
                var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
                switch n.opType {
                case "Add", "Sum": l.add.alpha = v
                case "Sub": l.add.alpha = -v
                case "Mul": l.multiply.alpha = v
                case "Div": l.multiply.alpha = 1 / v
                default:
                    l.unary.type = .power; l.unary.alpha = v; l.unary.scale = 1
                }
                w.add(l)
                return
            }
            // Scale / bias layers: constant shape [C, 1, 1] / [C, H, W] / [1] against a (C, H, W) value.
            if xs == ys, ["Add", "Sum", "Mul"].contains(n.opType), let chw = biasShape(w, xs, cs) {
                var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
                if n.opType == "Mul" {
                    l.scale.shapeScale = chw.map { UInt64($0) }
                    l.scale.scale = try w.weights(c, reshape: chw)
                } else {
                    l.bias.shape = chw.map { UInt64($0) }
                    l.bias.bias = try w.weights(c, reshape: chw)
                }
                w.add(l)
                return
            }
        }
        let allSame = try ins.allSatisfy { try w.shape($0) == ys }
        let blobs = try ins.map { try w.inputBlob($0) }
        var l = w.layer(n.name, inputs: blobs, outputs: out(n))
        if allSame || w.rank5 {
            switch n.opType {
            case "Add", "Sum": l.add = .init(); w.add(l); return
            case "Mul": l.multiply = .init(); w.add(l); return
            case "Max": l.max = .init(); w.add(l); return
            case "Min": l.min = .init(); w.add(l); return
            default: break
            }
            if w.rank5, !allSame { throw CoreMLExporter.NeedsExactMapping.signal }
        }
        try w.needND("broadcastable \(n.opType)")
        guard blobs.count == 2 || ["Add", "Sum", "Mul", "Max", "Min"].contains(n.opType) else {
            throw LayerWriterError("\(blobs.count) inputs")
        }
        if blobs.count > 2 {
            // Variadic Sum / Max / Min with broadcasting: chain pairwise.
            var acc = blobs[0]
            for (i, b) in blobs.dropFirst().enumerated() {
                let last = i == blobs.count - 2
                let o = last ? n.outputs[0] : w.freshBlob("\(n.outputs[0])_part\(i)")
                var step = w.layer("\(n.name)_\(i)", inputs: [acc, b], outputs: [o])
                setBroadcastable(&step, n.opType)
                w.add(step)
                acc = o
            }
            return
        }
        setBroadcastable(&l, n.opType)
        w.add(l)
    }

    static func setBroadcastable(_ l: inout CoreML_Specification_NeuralNetworkLayer, _ op: String) {
        switch op {
        case "Add", "Sum": l.addBroadcastable = .init()
        case "Sub": l.subtractBroadcastable = .init()
        case "Mul": l.multiplyBroadcastable = .init()
        case "Div": l.divideBroadcastable = .init()
        case "Max": l.maxBroadcastable = .init()
        case "Min": l.minBroadcastable = .init()
        default: l.powBroadcastable = .init()
        }
    }

    /// The (C, H, W)-style shape a scale / bias layer needs for constant shape `cs`
    /// against value shape `xs`: [1], [C, 1, 1] or [C, H, W]; nil otherwise.
    static func biasShape(_ w: NNWriter, _ xs: [Int], _ cs: [Int]) -> [Int]? {
        guard cs.count <= xs.count else { return nil }
        let chw: [Int]
        if w.rank5 { guard let b = w.blobShape(xs) else { return nil }; chw = b } else {
            guard xs.count >= 3 else { return nil }
            chw = Array(xs.suffix(3))
        }
        let padded = Array(repeating: 1, count: xs.count - cs.count) + cs
        let count = cs.reduce(1, *)
        if count == 1 { return [1] }
        // Leading (batch) axes of the constant must be 1.
        let lead = w.rank5 ? padded.dropLast(xs.count == 2 ? 1 : 3) : padded.dropLast(3)
        guard lead.allSatisfy({ $0 == 1 }) else { return nil }
        let tail: [Int] = w.rank5 && xs.count == 2 ? [padded[1], 1, 1] : Array(padded.suffix(3))
        if tail == [chw[0], 1, 1] { return [chw[0], 1, 1] }
        if tail == chw { return chw }
        return nil
    }

    static let unary: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        switch n.opType {
        case "Exp": l.unary.type = .exp
        case "Log": l.unary.type = .log
        case "Sqrt": l.unary.type = .sqrt
        case "Reciprocal": l.unary.type = .inverse
        case "Abs": l.unary.type = .abs
        case "Neg": l.multiply.alpha = -1
        case "Floor": try w.needND("floor"); l.floor = .init()
        case "Ceil": try w.needND("ceil"); l.ceil = .init()
        case "Sign": try w.needND("sign"); l.sign = .init()
        case "Round": try w.needND("round"); l.round = .init()
        case "Erf": try w.needND("erf"); l.erf = .init()
        case "Gelu":
            try w.needND("gelu")
            l.gelu.mode = string(n, "approximate", "none") == "tanh" ? .tanhApproximation : .exact
        default: throw LayerWriterError("no unary layer")
        }
        // epsilon 0 reads as 1e-6: the smallest normal float keeps 1 / (x + ε) = 1 / x.
        if case .unary? = l.layer { l.unary.scale = 1; l.unary.epsilon = .leastNormalMagnitude }
        w.add(l)
    }
}
