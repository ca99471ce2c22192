// NeuralNetwork convolution, deconvolution and pooling layers → Conv / ConvTranspose / *Pool nodes.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    // MARK: convolution and pooling

    static func pads(_ b: GraphBuilderState, _ amounts: CoreML_Specification_BorderAmounts, _ p: String) throws -> [Int] {
        let e = amounts.borderAmounts
        if e.isEmpty { return [0, 0, 0, 0] }
        guard e.count == 2, e.allSatisfy({ $0.startEdgeSize <= 1 << 20 && $0.endEdgeSize <= 1 << 20 }) else {
            throw ImportError.malformed(b.loc(p), reason: "padding amounts need 2 entries (height, width) of sane size")
        }
        return [Int(e[0].startEdgeSize), Int(e[1].startEdgeSize), Int(e[0].endEdgeSize), Int(e[1].endEdgeSize)]
    }

    static let convolution: Reader = { b, l, p in
        let c = l.convolution
        guard l.input.count == 1 else { throw LayerReaderError("weights given as a second input") }
        let (x, y) = try one(&b, l, p)
        let groups = c.nGroups == 0 ? 1 : try dim(c.nGroups, "nGroups", b, p)
        let cout = try dim(c.outputChannels, "outputChannels", b, p), kc = try dim(c.kernelChannels, "kernelChannels", b, p)
        let k = c.kernelSize.isEmpty ? [3, 3] : try c.kernelSize.map { try dim($0, "kernelSize", b, p) }
        guard k.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "kernelSize has \(k.count) values") }
        guard cout % groups == 0 else { throw ImportError.malformed(b.loc(p), reason: "outputChannels \(cout) not divisible by nGroups \(groups)") }
        let wShape = c.isDeconvolution ? [kc, cout / groups, k[0], k[1]] : [cout, kc, k[0], k[1]]
        // Deconvolution weights carry their output channels on axis 1 (per-channel scales too).
        let w = b.constant("\(l.name)_weights", try b.weight(c.weights, shape: wShape, place: "\(p) weights", axis: c.isDeconvolution ? 1 : 0))
        var inputs = [x, w]
        if c.hasBias_p { inputs.append(b.constant("\(l.name)_bias", try b.weight(c.bias, shape: [cout], place: "\(p) bias"))) }
        var a: [String: Attribute] = ["kernel_shape": ints(k), "group": .int(groups)]
        a["strides"] = ints(c.stride.isEmpty ? [1, 1] : try c.stride.map { try dim($0, "stride", b, p) })
        if !c.isDeconvolution { a["dilations"] = ints(c.dilationFactor.isEmpty ? [1, 1] : try c.dilationFactor.map { try dim($0, "dilationFactor", b, p) }) }
        switch c.convolutionPaddingType {
        case .valid(let v)?: a["pads"] = ints(try pads(b, v.paddingAmounts, p))
        case .same(let s)?: a["auto_pad"] = .string(s.asymmetryMode == .topLeftHeavy ? "SAME_LOWER" : "SAME_UPPER")
        case nil: throw ImportError.malformed(b.loc(p), reason: "convolution without a padding type")
        }
        if c.isDeconvolution, !c.outputShape.isEmpty {
            guard c.outputShape.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "outputShape needs 2 values") }
            a["output_shape"] = ints(try c.outputShape.map { try dim($0, "outputShape", b, p) })
            // ONNX then derives the padding from the output shape: with SAME_UPPER / SAME_LOWER the odd
            // pixel goes after / before (Core ML's bottom-right / top-left heavy); otherwise before.
            a["pads"] = nil
        }
        b.node(c.isDeconvolution ? "ConvTranspose" : "Conv", l.name, inputs, [y], a, rank: b.ranks[x])
    }

    static let pooling: Reader = { b, l, p in
        let q = l.pooling
        let (x, y) = try one(&b, l, p)
        if q.globalPooling {
            let op = q.type == .max ? "GlobalMaxPool" : q.type == .average ? "GlobalAveragePool" : "GlobalLpPool"
            b.node(op, l.name, [x], [y], q.type == .l2 ? ["p": .int(2)] : [:], rank: b.ranks[x])
            return
        }
        let k = q.kernelSize.isEmpty ? [3, 3] : try q.kernelSize.map { try dim($0, "kernelSize", b, p) }
        let s = q.stride.isEmpty ? [1, 1] : try q.stride.map { try dim($0, "stride", b, p) }
        guard k.count == 2, s.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "kernelSize / stride need 2 values") }
        var a: [String: Attribute] = ["kernel_shape": ints(k), "strides": ints(s)]
        switch q.poolingPaddingType {
        case .valid(let v)?: a["pads"] = ints(try pads(b, v.paddingAmounts, p))
        case .same?: a["auto_pad"] = .string("SAME_UPPER")
        case .includeLastPixel(let v)?:
            let pp = v.paddingAmounts.isEmpty ? [0, 0] : v.paddingAmounts.map { Int(min($0, 1 << 20)) }
            guard pp.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "includeLastPixel padding needs 2 values") }
            a["pads"] = ints([pp[0], pp[1], pp[0], pp[1]])
            a["ceil_mode"] = .int(1)
        case nil: throw ImportError.malformed(b.loc(p), reason: "pooling without a padding type")
        }
        switch q.type {
        case .max: b.node("MaxPool", l.name, [x], [y], a, rank: b.ranks[x])
        case .average:
            a["count_include_pad"] = .int(q.avgPoolExcludePadding ? 0 : 1)
            b.node("AveragePool", l.name, [x], [y], a, rank: b.ranks[x])
        case .l2:
            a["p"] = .int(2)
            b.node("LpPool", l.name, [x], [y], a, rank: b.ranks[x])
        case .UNRECOGNIZED(let v): throw LayerReaderError("pooling type \(v)")
        }
    }
}
