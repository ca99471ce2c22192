// NeuralNetwork activation layers → IR activation nodes (per-channel PReLU / parametric softplus parameters).
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    // MARK: activations

    /// A per-channel parameter (length 1 or C) shaped to broadcast on axis −3.
    static func channelParam(_ b: inout GraphBuilderState, _ w: CoreML_Specification_WeightParams, _ name: String,
                             _ x: String, _ p: String) throws -> String {
        let count: Int
        if !w.floatValue.isEmpty { count = w.floatValue.count } else if !w.float16Value.isEmpty { count = w.float16Value.count / 2 } else {
            throw LayerReaderError("quantized per-channel activation parameters")
        }
        if count == 1 { return b.constant(name, try b.weight(w, shape: [], place: p)) }
        guard try rank(b, x) >= 3 else { throw LayerReaderError("per-channel parameters need rank ≥ 3") }
        return b.constant(name, try b.weight(w, shape: [count, 1, 1], place: p))
    }

    static let activation: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = b.ranks[x]
        guard let kind = l.activation.nonlinearityType else { throw LayerReaderError("activation without a type") }
        switch kind {
        case .reLu: b.node("Relu", l.name, [x], [y], rank: r)
        case .leakyReLu(let a): b.node("LeakyRelu", l.name, [x], [y], ["alpha": .float(a.alpha)], rank: r)
        case .thresholdedReLu(let a): b.node("ThresholdedRelu", l.name, [x], [y], ["alpha": .float(a.alpha)], rank: r)
        case .tanh: b.node("Tanh", l.name, [x], [y], rank: r)
        case .sigmoid: b.node("Sigmoid", l.name, [x], [y], rank: r)
        case .sigmoidHard(let a): b.node("HardSigmoid", l.name, [x], [y], ["alpha": .float(a.alpha), "beta": .float(a.beta)], rank: r)
        case .elu(let a): b.node("Elu", l.name, [x], [y], ["alpha": .float(a.alpha)], rank: r)
        case .softsign: b.node("Softsign", l.name, [x], [y], rank: r)
        case .softplus: b.node("Softplus", l.name, [x], [y], rank: r)
        case .linear(let a):
            let t = b.temp("\(l.name)_scaled")
            b.node("Mul", "\(l.name)_alpha", [x, b.floats("\(l.name)_alpha", [a.alpha], shape: [])], [t], rank: r)
            b.node("Add", l.name, [t, b.floats("\(l.name)_beta", [a.beta], shape: [])], [y], rank: r)
        case .scaledTanh(let a):
            let t1 = b.temp("\(l.name)_in"), t2 = b.temp("\(l.name)_tanh")
            b.node("Mul", "\(l.name)_beta", [x, b.floats("\(l.name)_beta", [a.beta], shape: [])], [t1], rank: r)
            b.node("Tanh", "\(l.name)_tanh", [t1], [t2], rank: r)
            b.node("Mul", l.name, [t2, b.floats("\(l.name)_alpha", [a.alpha], shape: [])], [y], rank: r)
        case .preLu(let a):
            let slope = try channelParam(&b, a.alpha, "\(l.name)_alpha", x, "\(p) alpha")
            b.node("PRelu", l.name, [x, slope], [y], rank: r)
        case .parametricSoftplus(let a):
            let alpha = try channelParam(&b, a.alpha, "\(l.name)_alpha", x, "\(p) alpha")
            let beta = try channelParam(&b, a.beta, "\(l.name)_beta", x, "\(p) beta")
            let t1 = b.temp("\(l.name)_in"), t2 = b.temp("\(l.name)_softplus")
            b.node("Mul", "\(l.name)_beta", [x, beta], [t1], rank: r)
            b.node("Softplus", "\(l.name)_softplus", [t1], [t2], rank: r)
            b.node("Mul", l.name, [t2, alpha], [y], rank: r)
        }
    }
}
