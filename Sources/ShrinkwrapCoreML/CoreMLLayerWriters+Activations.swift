// Activations, Clip and Softmax → NeuralNetwork activation / unary / clip / softmax layers.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    // MARK: activations

    static let activation: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        var a = CoreML_Specification_ActivationParams()
        switch n.opType {
        case "Relu": a.reLu = .init()
        case "LeakyRelu": a.leakyReLu.alpha = float(n, "alpha", 0.01)
        case "Sigmoid": a.sigmoid = .init()
        case "Tanh": a.tanh = .init()
        case "Elu": a.elu.alpha = float(n, "alpha", 1)
        case "Softplus": a.softplus = .init()
        case "Softsign": a.softsign = .init()
        case "HardSigmoid":
            a.sigmoidHard.alpha = float(n, "alpha", 0.2)
            a.sigmoidHard.beta = float(n, "beta", 0.5)
        case "ThresholdedRelu": a.thresholdedReLu.alpha = float(n, "alpha", 1)
        case "PRelu":
            guard let slope = n.input(1), w.graph.isConstant(slope) else { throw LayerWriterError("the slope must be a constant") }
            let xs = try w.shape(x), ss = try w.shape(slope)
            let count = ss.reduce(1, *)
            // Core ML: one alpha, or one per channel (axis -3).
            let channels = xs.count >= 3 ? xs[xs.count - 3] : (xs.count == 2 ? xs[1] : 1)
            // The slope broadcasts against x's trailing axes (ONNX rules): per channel only when it
            // varies along nothing but the channel axis ([C, 1, 1] for NCHW; a [C] slope runs along W).
            let channelAxis = xs.count >= 3 ? xs.count - 3 : 1
            let offset = xs.count - ss.count
            let perChannel = count == channels && offset >= 0 && ss.indices.allSatisfy { ss[$0] == 1 || offset + $0 == channelAxis }
                && (xs.count >= 3 || w.rank5)
            guard count == 1 || perChannel else { throw LayerWriterError("slope shape \(ss) is neither a scalar nor per channel") }
            a.preLu.alpha = try w.weights(slope, reshape: [count])
        default: throw LayerWriterError("no activation")
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.activation = a
        w.add(l)
    }

    static let clip: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        var lo = -Float.greatestFiniteMagnitude, hi = Float.greatestFiniteMagnitude
        if let m = n.input(1) { lo = try w.values(m).first ?? lo }
        if let m = n.input(2) { hi = try w.values(m).first ?? hi }
        if lo == 0, hi == .greatestFiniteMagnitude {
            var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
            l.activation.reLu = .init()
            w.add(l)
            return
        }
        if w.rank5 {
            // Classic layers only: max(x, lo) = threshold(lo); min(y, hi) = −threshold(−hi, −y).
            var src = try w.inputBlob(x)
            if lo > -Float.greatestFiniteMagnitude {
                let o = hi < .greatestFiniteMagnitude ? w.freshBlob("\(n.outputs[0])_lo") : n.outputs[0]
                var t = w.layer("\(n.name)_min", inputs: [src], outputs: [o])
                t.unary.type = .threshold; t.unary.alpha = lo; t.unary.scale = 1
                w.add(t)
                src = o
            }
            if hi < .greatestFiniteMagnitude {
                let neg = w.freshBlob("\(n.outputs[0])_neg")
                var t = w.layer("\(n.name)_max", inputs: [src], outputs: [neg])
                t.unary.type = .threshold; t.unary.alpha = -hi; t.unary.scale = -1
                w.add(t)
                var back = w.layer("\(n.name)_negate", inputs: [neg], outputs: out(n))
                back.activation.linear.alpha = -1
                w.add(back)
            }
            return
        }
        try w.needND("clip")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.clip.minVal = lo; l.clip.maxVal = hi
        w.add(l)
    }

    static let softmax: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let r = try w.shape(x).count
        let axis = try normalize(int(n, "axis", -1), rank: r)
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        if w.rank5 ? axis == 1 : (r >= 3 && axis == r - 3) {
            l.softmax = .init()
        } else {
            try w.needND("softmaxND")
            l.softmaxNd.axis = Int64(axis)
        }
        w.add(l)
    }
}
