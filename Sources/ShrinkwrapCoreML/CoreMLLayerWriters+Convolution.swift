// Conv / ConvTranspose, pooling, batch and instance normalization, DepthToSpace / SpaceToDepth → NeuralNetwork layers.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    // MARK: convolution and pooling

    static func padding(_ n: Node, spatial: Int) throws -> (valid: [(Int, Int)]?, same: CoreML_Specification_SamePadding.SamePaddingMode?) {
        switch string(n, "auto_pad", "NOTSET") {
        case "SAME_UPPER": return (nil, .bottomRightHeavy)
        case "SAME_LOWER": return (nil, .topLeftHeavy)
        case "VALID": return (Array(repeating: (0, 0), count: spatial), nil)
        default:
            let p = ints(n, "pads") ?? Array(repeating: 0, count: 2 * spatial)
            guard p.count == 2 * spatial, p.allSatisfy({ $0 >= 0 }) else { throw LayerWriterError("pads \(p)") }
            return ((0..<spatial).map { (p[$0], p[$0 + spatial]) }, nil)
        }
    }

    static func valid(_ amounts: [(Int, Int)]) -> CoreML_Specification_ValidPadding {
        var v = CoreML_Specification_ValidPadding()
        v.paddingAmounts.borderAmounts = amounts.map { a in
            var e = CoreML_Specification_BorderAmounts.EdgeSizes()
            e.startEdgeSize = UInt64(a.0); e.endEdgeSize = UInt64(a.1)
            return e
        }
        return v
    }

    /// Conv / ConvTranspose with 2-D kernels, and 1-D ones through a trailing
    /// axis of 1 ([N, C, L] → [N, C, L, 1] → convolution → squeeze).
    static let conv: Writer = { w, n in
        let deconv = n.opType == "ConvTranspose"
        guard let x = n.input(0), let wName = n.input(1), w.graph.isConstant(wName) else {
            throw LayerWriterError("the weight must be a constant")
        }
        let ws = try w.shape(wName)
        guard ws.count == 4 || ws.count == 3 else { throw LayerWriterError("only 1-D and 2-D convolutions have a layer (weight rank \(ws.count))") }
        let oneD = ws.count == 3
        if oneD { try w.needND("1-D convolution") }
        let spatial = oneD ? 1 : 2
        for k in ["strides", "dilations"] {
            if let v = ints(n, k), v.count != spatial || v.contains(where: { $0 < 1 }) { throw LayerWriterError("\(k) \(v) for \(spatial)-D") }
        }
        func two(_ v: [Int]?, _ d: Int) -> [UInt64] { (v ?? Array(repeating: d, count: spatial)).map { UInt64($0) } + (oneD ? [UInt64(d)] : []) }
        let groups = int(n, "group", 1)
        let (deconvChannels, overflow) = ws[1].multipliedReportingOverflow(by: groups)
        // Both weight layouts have the channels the groups split on axis 0 (output channels of a
        // convolution, input channels of a deconvolution).
        guard groups >= 1, !overflow, ws[0] % groups == 0 else { throw LayerWriterError("group \(groups) for weights \(ws)") }
        var c = CoreML_Specification_ConvolutionLayerParams()
        c.outputChannels = UInt64(deconv ? deconvChannels : ws[0])
        // Deconvolution weights are [Cin, Cout / groups, kH, kW] with kernelChannels = Cin (Core ML's validator
        // expects kernelChannels × outputChannels / nGroups × kH × kW values).
        c.kernelChannels = UInt64(deconv ? ws[0] : ws[1])
        c.nGroups = UInt64(groups)
        c.kernelSize = [UInt64(ws[2]), oneD ? 1 : UInt64(ws[3])]
        c.stride = two(ints(n, "strides"), 1)
        c.dilationFactor = two(ints(n, "dilations"), 1)
        let pads = try padding(n, spatial: oneD ? 1 : 2)
        if deconv, let v = pads.valid, v.contains(where: { $0.0 != $0.1 }),
           v.allSatisfy({ $0.1 == $0.0 || $0.1 == $0.0 + 1 }) || v.allSatisfy({ $0.0 == $0.1 || $0.0 == $0.1 + 1 }) {
            // TensorFlow's SAME transposed convolution: the odd pixel of padding after (or before). With
            // outputShape, same padding with that asymmetry says so; valid padding would put it before.
            c.same.asymmetryMode = v.allSatisfy({ $0.1 >= $0.0 }) ? .bottomRightHeavy : .topLeftHeavy
        } else if let v = pads.valid {
            c.valid = valid(v + (oneD ? [(0, 0)] : []))
        } else if let s = pads.same {
            c.same.asymmetryMode = s
        }
        if deconv {
            let outShape = try w.shape(n.outputs[0])
            guard outShape.count == ws.count, outShape.allSatisfy({ $0 >= 0 }) else {
                throw LayerWriterError("output shape \(outShape) for a \(spatial)-D deconvolution")
            }
            c.isDeconvolution = true
            c.outputShape = [UInt64(outShape[2]), oneD ? 1 : UInt64(outShape[3])]
            if ints(n, "dilations").map({ $0.contains { $0 != 1 } }) == true { throw LayerWriterError("dilated deconvolution") }
        }
        c.weights = try w.weights(wName, reshape: oneD ? ws + [1] : nil, channelAxis: deconv ? 1 : 0)
        if let b = n.input(2) {
            guard w.graph.isConstant(b) else { throw LayerWriterError("the bias must be a constant") }
            c.hasBias_p = true
            c.bias = try w.weights(b)
        }
        var src = try w.inputBlob(x)
        let dst = oneD ? w.freshBlob("\(n.outputs[0])_4d") : n.outputs[0]
        if oneD {
            let e = w.freshBlob("\(src)_4d")
            var l = w.layer("\(n.name)_expand", inputs: [src], outputs: [e])
            l.expandDims.axes = [3]
            w.add(l)
            src = e
        }
        var l = w.layer(n.name, inputs: [src], outputs: [dst])
        l.convolution = c
        w.markUpdatable(&l, n)
        w.add(l)
        if oneD {
            var q = w.layer("\(n.name)_squeeze", inputs: [dst], outputs: out(n))
            q.squeeze.axes = [3]
            w.add(q)
        }
    }

    static let pool: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        guard xs.count == 4, let k = ints(n, "kernel_shape"), k.count == 2 else { throw LayerWriterError("only 2-D pooling has a layer") }
        if (ints(n, "dilations") ?? [1, 1]) != [1, 1] { throw LayerWriterError("dilated pooling") }
        if n.outputs.count > 1, !n.outputs[1].isEmpty { throw LayerWriterError("max-pool indices output") }
        var p = CoreML_Specification_PoolingLayerParams()
        p.type = n.opType == "MaxPool" ? .max : .average
        p.kernelSize = k.map { UInt64($0) }
        let strides = ints(n, "strides") ?? [1, 1]
        p.stride = strides.map { UInt64($0) }
        p.avgPoolExcludePadding = int(n, "count_include_pad", 0) == 0
        let pads = try padding(n, spatial: 2)
        if let s = pads.same {
            guard s == .bottomRightHeavy else { throw LayerWriterError("SAME_LOWER pooling") }
            p.same = CoreML_Specification_SamePadding()
        } else if var v = pads.valid {
            // ceil_mode: grow the end padding so that valid padding yields the ceil-mode size.
            for i in 0..<2 {
                let floorSize = (xs[2 + i] + v[i].0 + v[i].1 - k[i]) / strides[i] + 1
                if ys[2 + i] > floorSize {
                    let extra = (ys[2 + i] - 1) * strides[i] + k[i] - (xs[2 + i] + v[i].0 + v[i].1)
                    guard p.type == .max || !p.avgPoolExcludePadding else {
                        throw LayerWriterError("ceil_mode average pooling that counts padding")
                    }
                    v[i].1 += extra
                }
            }
            p.valid = valid(v)
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.pooling = p
        w.add(l)
    }

    static let globalPool: Writer = { w, n in
        guard let x = n.input(0), try w.shape(x).count == 4 else { throw LayerWriterError("only 2-D global pooling has a layer") }
        var p = CoreML_Specification_PoolingLayerParams()
        p.type = n.opType == "GlobalMaxPool" ? .max : .average
        p.globalPooling = true
        p.kernelSize = [1, 1]; p.stride = [1, 1]
        p.valid = valid([(0, 0), (0, 0)])
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.pooling = p
        w.add(l)
    }

    static let batchNorm: Writer = { w, n in
        guard let x = n.input(0), n.inputs.count >= 5, n.inputs[1...4].allSatisfy({ w.graph.isConstant($0) }) else {
            throw LayerWriterError("scale, bias, mean and variance must be constants")
        }
        let xs = try w.shape(x)
        guard xs.count >= 3 || (w.rank5 && xs.count == 2) else { throw LayerWriterError("batchnorm on rank \(xs.count)") }
        var b = CoreML_Specification_BatchnormLayerParams()
        b.channels = UInt64(xs[1])
        b.epsilon = float(n, "epsilon", 1e-5)
        b.gamma = try w.weights(n.inputs[1])
        b.beta = try w.weights(n.inputs[2])
        b.mean = try w.weights(n.inputs[3])
        b.variance = try w.weights(n.inputs[4])
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: [n.outputs[0]])
        l.batchnorm = b
        w.markUpdatable(&l, n)
        w.add(l)
    }

    /// InstanceNormalization: batchnorm computing each instance's mean and variance.
    static let instanceNorm: Writer = { w, n in
        guard let x = n.input(0), n.inputs.count >= 3, n.inputs[1...2].allSatisfy({ w.graph.isConstant($0) }) else {
            throw LayerWriterError("scale and bias must be constants")
        }
        let xs = try w.shape(x)
        guard xs.count == 4 else { throw LayerWriterError("instance normalization of rank \(xs.count) (Core ML normalizes [C, H, W])") }
        var b = CoreML_Specification_BatchnormLayerParams()
        b.channels = UInt64(xs[1])
        b.epsilon = float(n, "epsilon", 1e-5)
        b.computeMeanVar = true
        b.instanceNormalization = true
        b.gamma = try w.weights(n.inputs[1])
        b.beta = try w.weights(n.inputs[2])
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.batchnorm = b
        w.add(l)
    }

    /// DepthToSpace (DCR: Core ML's DEPTH_TO_SPACE; CRD: PIXEL_SHUFFLE, specification 5) and SpaceToDepth.
    static let reorganize: Writer = { w, n in
        guard let x = n.input(0), try w.shape(x).count == 4 else { throw LayerWriterError("only [N, C, H, W] values") }
        let size = int(n, "blocksize", 0)
        guard size >= 1 else { throw LayerWriterError("blocksize \(size)") }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.reorganizeData.blockSize = UInt64(size)
        if n.opType == "SpaceToDepth" {
            l.reorganizeData.mode = .spaceToDepth
        } else if string(n, "mode", "DCR") == "CRD" {
            try w.needND("pixel shuffle")
            l.reorganizeData.mode = .pixelShuffle
            w.require(5, "pixel shuffle (DepthToSpace CRD)")
        } else {
            l.reorganizeData.mode = .depthToSpace
        }
        w.add(l)
    }
}
