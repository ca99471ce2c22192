import CoreMLSchema
import ShrinkwrapIR

/// IR op → NeuralNetwork layer(s): one writer per op, one table.
///
/// A writer throws `LayerWriterError` when the node's attributes or shapes
/// have no layer (the exporter collects these and reports them together),
/// and calls `needND` before it uses an N-dimensional layer (which, in
/// rank-5 mode, restarts the export with exact mapping).
enum CoreMLLayerWriters {
    typealias Writer = (inout NNWriter, Node) throws -> Void

    static let table: [String: Writer] = [
        "Conv": conv, "ConvTranspose": conv,
        "MaxPool": pool, "AveragePool": pool, "GlobalAveragePool": globalPool, "GlobalMaxPool": globalPool,
        "BatchNormalization": batchNorm,
        "Relu": activation, "LeakyRelu": activation, "Sigmoid": activation, "Tanh": activation, "Elu": activation,
        "Softplus": activation, "Softsign": activation, "HardSigmoid": activation, "ThresholdedRelu": activation,
        "PRelu": activation,
        "Clip": clip,
        "Softmax": softmax,
        "Flatten": flatten, "Reshape": reshape, "Squeeze": reshape, "Unsqueeze": reshape,
        "Transpose": transpose,
        "Concat": concat,
        "Split": split,
        "Slice": slice,
        "Identity": identity, "Dropout": identity, "Cast": identity,
        "Add": binary, "Sum": binary, "Mul": binary, "Sub": binary, "Div": binary, "Max": binary, "Min": binary, "Pow": binary,
        "Exp": unary, "Log": unary, "Sqrt": unary, "Reciprocal": unary, "Abs": unary, "Neg": unary,
        "Floor": unary, "Ceil": unary, "Sign": unary, "Round": unary, "Erf": unary, "Gelu": unary,
        "Gemm": gemm, "MatMul": matmul,
        "LRN": lrn,
        "Pad": pad,
        "Resize": resize,
        "Gather": gather,
        "ReduceSum": reduce, "ReduceMean": reduce, "ReduceMax": reduce, "ReduceMin": reduce, "ReduceProd": reduce,
        "ReduceL1": reduce, "ReduceL2": reduce, "ReduceLogSum": reduce, "ReduceLogSumExp": reduce, "ReduceSumSquare": reduce,
        "ArgMax": argMax,
        "LayerNormalization": layerNorm,
        "LSTM": lstm, "GRU": gru, "RNN": rnn,
        "InstanceNormalization": instanceNorm,
        "DepthToSpace": reorganize, "SpaceToDepth": reorganize,
    ]

    // MARK: attribute helpers

    static func int(_ n: Node, _ k: String, _ d: Int) -> Int { n.int(k, d) }
    static func float(_ n: Node, _ k: String, _ d: Float) -> Float { n.float(k, d) }
    static func ints(_ n: Node, _ k: String) -> [Int]? { n.ints(k) }
    static func string(_ n: Node, _ k: String, _ d: String) -> String { n.string(k, d) }

    static func out(_ n: Node) -> [String] { [n.outputs.first ?? ""] }

    static func normalize(_ axis: Int, rank: Int) throws -> Int {
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0, a < max(rank, 1) else { throw LayerWriterError("axis \(axis) outside rank \(rank)") }
        return a
    }

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
            let perChannel = count == channels && (ss.count < 3 || ss.count >= 3 && ss[ss.count - 3] == channels)
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

    // MARK: shapes

    /// Flatten, Reshape, Squeeze, Unsqueeze: in rank-5 mode a no-op when the
    /// (C, H, W) blob is unchanged, else a classic flatten / reshape; with
    /// exact mapping a static reshape.
    static let reshape: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        if w.rank5 {
            guard let bx = w.blobShape(xs), let by = w.blobShape(ys) else { throw CoreMLExporter.NeedsExactMapping.signal }
            if bx == by, !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
            var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
            if by == [bx.reduce(1, *), 1, 1] {
                l.flatten.mode = .channelFirst
            } else {
                l.reshape.targetShape = by.map { Int64($0) }
                l.reshape.mode = .channelFirst
            }
            w.add(l)
            return
        }
        if xs == ys, !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        try w.needND("reshapeStatic")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.reshapeStatic.targetShape = (ys.isEmpty ? [1] : ys).map { Int64($0) }
        w.add(l)
    }

    static let flatten = reshape

    static let transpose: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let r = try w.shape(x).count
        let perm = ints(n, "perm") ?? Array((0..<r).reversed())
        if perm == Array(0..<r), !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        try w.needND("transpose")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.transpose.axes = perm.map { UInt64($0) }
        w.add(l)
    }

    static let concat: Writer = { w, n in
        let ys = try w.shape(n.outputs[0])
        let axis = try normalize(int(n, "axis", 0), rank: ys.count)
        let ins = try n.inputs.filter { !$0.isEmpty }.map { try w.inputBlob($0) }
        var l = w.layer(n.name, inputs: ins, outputs: out(n))
        if w.rank5 ? axis == 1 : (ys.count >= 3 && axis == ys.count - 3) {
            l.concat = .init()
        } else {
            try w.needND("concatND")
            l.concatNd.axis = Int64(axis)
        }
        w.add(l)
    }

    static let split: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x)
        let axis = try normalize(int(n, "axis", 0), rank: xs.count)
        let sizes = try n.outputs.map { try w.shape($0)[axis] }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: n.outputs)
        if (w.rank5 ? axis == 1 : (xs.count >= 3 && axis == xs.count - 3)) && Set(sizes).count == 1 {
            l.split.nOutputs = UInt64(n.outputs.count)
        } else {
            try w.needND("splitND")
            l.splitNd.axis = Int64(axis)
            l.splitNd.numSplits = UInt64(n.outputs.count)
            l.splitNd.splitSizes = sizes.map { UInt64($0) }
        }
        w.add(l)
    }

    static let slice: Writer = { w, n in
        guard let x = n.input(0), let s = n.input(1), let e = n.input(2) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x)
        let starts = try w.intValues(s), ends = try w.intValues(e)
        let axes = try n.input(3).map { try w.intValues($0) } ?? Array(0..<starts.count)
        let steps = try n.input(4).map { try w.intValues($0) } ?? Array(repeating: 1, count: starts.count)
        guard starts.count == ends.count, axes.count == starts.count, steps.count == starts.count else {
            throw LayerWriterError("starts, ends, axes and steps differ in length")
        }
        try w.needND("sliceStatic")
        let r = xs.count
        var begin = Array(repeating: Int64(0), count: r), end = xs.map { Int64($0) }
        var stride = Array(repeating: Int64(1), count: r)
        var beginMask = Array(repeating: true, count: r), endMask = Array(repeating: true, count: r)
        for i in 0..<starts.count {
            let a = try normalize(axes[i], rank: r)
            guard steps[i] > 0 else { throw LayerWriterError("negative slice steps") }
            let d = xs[a]
            func clampIndex(_ v: Int) -> Int { let v2 = v < 0 ? v + d : v; return min(max(v2, 0), d) }
            begin[a] = Int64(clampIndex(starts[i])); end[a] = Int64(clampIndex(ends[i])); stride[a] = Int64(steps[i])
            beginMask[a] = false; endMask[a] = false
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.sliceStatic.beginIds = begin; l.sliceStatic.endIds = end; l.sliceStatic.strides = stride
        l.sliceStatic.beginMasks = beginMask; l.sliceStatic.endMasks = endMask
        w.add(l)
    }

    static let identity: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        if n.opType == "Cast" {
            let to = DType(onnxDataType: int(n, "to", 1))
            guard to?.isFloatingPoint == true || to == .int32 || to == .int64 else { throw LayerWriterError("cast to \(to.map { $0.rawValue } ?? "?")") }
        }
        if !w.isGraphOutput(n.outputs[0]) {
            w.setAlias(n.outputs[0], to: try w.inputBlob(x))
            return
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.activation.linear.alpha = 1
        w.add(l)
    }

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

    // MARK: linear algebra

    static let gemm: Writer = { w, n in
        guard let a = n.input(0), let b = n.input(1), w.graph.isConstant(b) else {
            throw LayerWriterError("B must be a constant weight")
        }
        if int(n, "transA", 0) != 0 { throw LayerWriterError("transA") }
        if float(n, "alpha", 1) != 1 || (n.input(2) != nil && float(n, "beta", 1) != 1) {
            throw LayerWriterError("alpha or beta ≠ 1")
        }
        let bs = try w.shape(b)
        guard bs.count == 2 else { throw LayerWriterError("B of rank \(bs.count)") }
        let transB = int(n, "transB", 0) != 0
        let (cout, cin) = transB ? (bs[0], bs[1]) : (bs[1], bs[0])
        var p = CoreML_Specification_InnerProductLayerParams()
        p.inputChannels = UInt64(cin); p.outputChannels = UInt64(cout)
        p.weights = try w.weights(b, transpose: transB ? nil : [1, 0])
        if let c = n.input(2) {
            guard w.graph.isConstant(c), try w.shape(c).reduce(1, *) == cout || w.shape(c).reduce(1, *) == 1 else {
                throw LayerWriterError("C must be a constant vector of \(cout)")
            }
            p.hasBias_p = true
            let cc = try w.shape(c).reduce(1, *)
            if cc == cout {
                p.bias = try w.weights(c, reshape: [cout])
            } else {
                guard cc == 1, let v = try w.values(c).first else { throw LayerWriterError("bias of \(cc) values for \(cout) channels") }
                p.bias.floatValue = Array(repeating: v, count: cout)
            }
        }
        try writeInnerProduct(&w, n, input: a, p)
    }

    /// innerProduct contracts the channel axis of a (C, 1, 1) blob in rank-5
    /// mode and the last axis of a rank 1–3 value with exact mapping.
    static func writeInnerProduct(_ w: inout NNWriter, _ n: Node, input a: String, _ p: CoreML_Specification_InnerProductLayerParams) throws {
        let xs = try w.shape(a)
        if w.rank5 {
            guard xs.count == 2 else { throw CoreMLExporter.NeedsExactMapping.signal }
        } else {
            guard (1...3).contains(xs.count) else { throw LayerWriterError("input of rank \(xs.count)") }
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(a)], outputs: out(n))
        l.innerProduct = p
        w.markUpdatable(&l, n)
        w.add(l)
    }

    static let matmul: Writer = { w, n in
        guard let a = n.input(0), let b = n.input(1) else { throw LayerWriterError("no input") }
        if w.graph.isConstant(b), try w.shape(b).count == 2, try (w.rank5 ? 2...2 : 1...3).contains(w.shape(a).count) {
            let bs = try w.shape(b)
            var p = CoreML_Specification_InnerProductLayerParams()
            p.inputChannels = UInt64(bs[0]); p.outputChannels = UInt64(bs[1])
            p.weights = try w.weights(b, transpose: [1, 0])
            try writeInnerProduct(&w, n, input: a, p)
            return
        }
        try w.needND("batchedMatmul")
        var l = w.layer(n.name, inputs: [try w.inputBlob(a), try w.inputBlob(b)], outputs: out(n))
        l.batchedMatmul = .init()
        w.add(l)
    }

    static let lrn: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.lrn.alpha = float(n, "alpha", 1e-4)
        l.lrn.beta = float(n, "beta", 0.75)
        l.lrn.k = float(n, "bias", 1)
        let size = int(n, "size", 1)
        guard size >= 1 else { throw LayerWriterError("size \(size)") }
        l.lrn.localSize = UInt64(size)
        w.add(l)
    }

    static let pad: Writer = { w, n in
        guard let x = n.input(0), let pi = n.input(1) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x)
        let r = xs.count
        let pads = try w.intValues(pi)
        guard pads.allSatisfy({ $0 >= 0 }) else { throw LayerWriterError("negative pads (cropping)") }
        var axes = Array(0..<r)
        if let ai = n.input(3) { axes = try w.intValues(ai).map { try normalize($0, rank: r) } }
        guard pads.count == 2 * axes.count else { throw LayerWriterError("pads \(pads) for \(axes.count) axes") }
        var begin = Array(repeating: 0, count: r), end = Array(repeating: 0, count: r)
        for (i, a) in axes.enumerated() { begin[a] = pads[i]; end[a] = pads[i + axes.count] }
        let value = try n.input(2).map { try w.values($0).first ?? 0 } ?? 0
        let mode = string(n, "mode", "constant")
        let spatialOnly = r == 4 && begin[0] == 0 && begin[1] == 0 && end[0] == 0 && end[1] == 0
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        if spatialOnly {
            l.padding.paddingAmounts.borderAmounts = (2..<4).map { a in
                var e = CoreML_Specification_BorderAmounts.EdgeSizes()
                e.startEdgeSize = UInt64(begin[a]); e.endEdgeSize = UInt64(end[a])
                return e
            }
            switch mode {
            case "constant": l.padding.constant.value = value
            case "reflect": l.padding.reflection = .init()
            case "edge": l.padding.replication = .init()
            default: throw LayerWriterError("pad mode \(mode)")
            }
        } else {
            guard mode == "constant" else { throw LayerWriterError("\(mode) padding outside the last two axes of a rank-4 value") }
            try w.needND("constantPad")
            l.constantPad.value = value
            l.constantPad.padAmounts = (0..<r).flatMap { [UInt64(begin[$0]), UInt64(end[$0])] }
        }
        w.add(l)
    }

    static let resize: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        guard xs.count == 4, ys.count == 4, ys[0] == xs[0], ys[1] == xs[1] else { throw LayerWriterError("only spatial resizing of rank-4 values") }
        guard xs[2] > 0, xs[3] > 0 else { throw LayerWriterError("resizing an empty value \(xs)") }
        let mode = string(n, "mode", "nearest")
        let ct = string(n, "coordinate_transformation_mode", "half_pixel")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        let integer = ys[2] % xs[2] == 0 && ys[3] % xs[3] == 0
        switch mode {
        case "nearest":
            // Core ML's nearest upsampling reads input ⌊i / s⌋: ONNX's asymmetric + floor, or
            // half-pixel + round (ties cannot occur for integer factors).
            guard integer else { throw LayerWriterError("nearest resizing by a non-integer factor") }
            let nm = string(n, "nearest_mode", "round_prefer_floor")
            let halfPixel = ["half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn"].contains(ct)
            guard (ct == "asymmetric" && nm == "floor") || (halfPixel && nm.hasPrefix("round")) else {
                throw LayerWriterError("nearest resizing with \(ct) coordinates and \(nm) rounding")
            }
            l.upsample.scalingFactor = [UInt64(ys[2] / xs[2]), UInt64(ys[3] / xs[3])]
            l.upsample.mode = .nn
        case "linear":
            switch ct {
            case "align_corners":
                l.resizeBilinear.targetSize = [UInt64(ys[2]), UInt64(ys[3])]
                l.resizeBilinear.mode.samplingMethod = .strictAlignEndpointsMode
                w.require(3, "resizeBilinear")
            case "asymmetric":
                guard integer else { throw LayerWriterError("bilinear resizing by a non-integer factor") }
                l.upsample.scalingFactor = [UInt64(ys[2] / xs[2]), UInt64(ys[3] / xs[3])]
                l.upsample.mode = .bilinear
            case "half_pixel", "pytorch_half_pixel":
                guard integer else { throw LayerWriterError("bilinear resizing by a non-integer factor") }
                try w.needND("upsample with half-pixel coordinates")
                l.upsample.scalingFactor = [UInt64(ys[2] / xs[2]), UInt64(ys[3] / xs[3])]
                l.upsample.mode = .bilinear
                l.upsample.linearUpsampleMode = .alignCornersFalse
                w.require(5, "upsample with half-pixel coordinates")
            default: throw LayerWriterError("bilinear resizing with \(ct) coordinates")
            }
        default: throw LayerWriterError("\(mode) resizing")
        }
        w.add(l)
    }

    static let gather: Writer = { w, n in
        guard let data = n.input(0), let idx = n.input(1) else { throw LayerWriterError("no input") }
        let ds = try w.shape(data)
        let axis = try normalize(int(n, "axis", 0), rank: ds.count)
        try w.needND("gather")
        if w.graph.isConstant(data), ds.count == 2, axis == 0, !w.graph.isConstant(idx) {
            // A table lookup: embeddingND reads [vocab, dim] as weights [dim, vocab] and needs a trailing index axis of 1.
            let ins = try w.shape(idx)
            let x1 = w.freshBlob("\(n.outputs[0])_ids")
            var e = w.layer("\(n.name)_expand", inputs: [try w.inputBlob(idx)], outputs: [x1])
            e.expandDims.axes = [Int64(ins.count)]
            w.add(e)
            var l = w.layer(n.name, inputs: [x1], outputs: out(n))
            l.embeddingNd.vocabSize = UInt64(ds[0])
            l.embeddingNd.embeddingSize = UInt64(ds[1])
            if case .affine(let a)? = w.graph.constant(named: data)?.encoding, a.scale.count > 1, a.blockShape[0] == 1 {
                try perRowEmbedding(&w, n, a, ids: x1, layer: l)
                return
            }
            l.embeddingNd.weights = try w.weights(data, transpose: [1, 0])
            w.markUpdatable(&l, n)
            w.add(l)
            return
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(data), try w.inputBlob(idx)], outputs: out(n))
        l.gather.axis = Int64(axis)
        w.add(l)
    }

    /// A table quantized with one scale per row (per vocabulary entry, how the compress pass
    /// quantizes embeddings) has no single Core ML weight: embeddingND scales its output
    /// channels, which are the table's columns. So the codes go into one embedding (scale 1),
    /// each row's scale and offset into a second, [vocab, 2] float table, and
    /// y = codes[ids] × scale[ids] + offset[ids] follows — the same storage, exactly the IR's values.
    static func perRowEmbedding(_ w: inout NNWriter, _ n: Node, _ a: AffineWeights, ids: String,
                                layer: CoreML_Specification_NeuralNetworkLayer) throws {
        guard a.shape.count == 2, a.blockShape.count == 2 else { throw LayerWriterError("table of shape \(a.shape)") }
        let (vocab, dim) = (a.shape[0], a.shape[1])
        guard a.blockShape[1] >= dim, a.scale.count == vocab else {
            throw LayerWriterError("table scales of block shape \(a.blockShape)")
        }
        let data = n.inputs[0], y = n.outputs[0]
        let codes = WeightEncoding.affine(try AffineWeights(shape: a.shape, bits: a.bits, signed: a.signed, q: a.q,
                                                            blockShape: a.shape, scale: [1], bias: [0]))
        var l = layer
        l.output = [w.freshBlob("\(y)_codes")]
        l.embeddingNd.weights = try w.params(codes, name: data) { e throws(WeightLayoutError) in try e.transposed([1, 0]) }
        w.markUpdatable(&l, n)
        w.add(l)
        var t = w.layer("\(n.name)_row_scale", inputs: [ids], outputs: [w.freshBlob("\(y)_row_affine")])
        t.embeddingNd.vocabSize = UInt64(vocab)
        t.embeddingNd.embeddingSize = 2
        t.embeddingNd.weights.floatValue = a.scale + a.bias  // [2, vocab]: scales, then offsets
        w.add(t)
        let parts = [w.freshBlob("\(y)_row_s"), w.freshBlob("\(y)_row_b")]
        var sp = w.layer("\(n.name)_row_split", inputs: t.output, outputs: parts)
        sp.splitNd.axis = -1; sp.splitNd.numSplits = 2; sp.splitNd.splitSizes = [1, 1]
        w.add(sp)
        let scaled = w.freshBlob("\(y)_scaled")
        var m = w.layer("\(n.name)_row_mul", inputs: [l.output[0], parts[0]], outputs: [scaled])
        m.multiplyBroadcastable = .init()
        w.add(m)
        var ad = w.layer("\(n.name)_row_add", inputs: [scaled, parts[1]], outputs: [y])
        ad.addBroadcastable = .init()
        w.add(ad)
    }

    static let reduce: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let r = try w.shape(x).count
        var axes: [Int]? = ints(n, "axes")
        if let ai = n.input(1) { axes = try w.intValues(ai) }
        let keep = int(n, "keepdims", 1) != 0
        if axes?.isEmpty ?? true, int(n, "noop_with_empty_axes", 0) != 0 {
            if !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        }
        let all = axes?.isEmpty ?? true
        let norm = try (axes ?? []).map { Int64(try normalize($0, rank: r)) }
        try w.needND("reduce")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        func set<T: ReduceND>(_ p: inout T) { p.axes = norm; p.keepDims = keep; p.reduceAll = all }
        switch n.opType {
        case "ReduceSum": var p = CoreML_Specification_ReduceSumLayerParams(); set(&p); l.reduceSum = p
        case "ReduceMean": var p = CoreML_Specification_ReduceMeanLayerParams(); set(&p); l.reduceMean = p
        case "ReduceMax": var p = CoreML_Specification_ReduceMaxLayerParams(); set(&p); l.reduceMax = p
        case "ReduceMin": var p = CoreML_Specification_ReduceMinLayerParams(); set(&p); l.reduceMin = p
        case "ReduceProd": var p = CoreML_Specification_ReduceProdLayerParams(); set(&p); l.reduceProd = p
        case "ReduceL1": var p = CoreML_Specification_ReduceL1LayerParams(); set(&p); l.reduceL1 = p
        case "ReduceL2": var p = CoreML_Specification_ReduceL2LayerParams(); set(&p); l.reduceL2 = p
        case "ReduceLogSum": var p = CoreML_Specification_ReduceLogSumLayerParams(); set(&p); l.reduceLogSum = p
        case "ReduceLogSumExp": var p = CoreML_Specification_ReduceLogSumExpLayerParams(); set(&p); l.reduceLogSumExp = p
        default: var p = CoreML_Specification_ReduceSumSquareLayerParams(); set(&p); l.reduceSumSquare = p
        }
        w.add(l)
    }

    static let argMax: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        if int(n, "select_last_index", 0) != 0 { throw LayerWriterError("select_last_index") }
        let r = try w.shape(x).count
        try w.needND("argMax")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.argMax.axis = Int64(try normalize(int(n, "axis", 0), rank: r))
        l.argMax.removeDim = int(n, "keepdims", 1) == 0
        w.add(l)
    }

    static let layerNorm: Writer = { w, n in
        guard let x = n.input(0), let g = n.input(1), w.graph.isConstant(g) else { throw LayerWriterError("scale must be a constant") }
        let xs = try w.shape(x)
        let axis = try normalize(int(n, "axis", -1), rank: xs.count)
        let normalized = Array(xs[axis...])
        let count = normalized.reduce(1, *)
        if n.outputs.count > 1, n.outputs[1...].contains(where: { !$0.isEmpty }) { throw LayerWriterError("mean / inv-std outputs") }
        try w.needND("layerNormalization")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.layerNormalization.normalizedShape = normalized.map { Int64($0) }
        l.layerNormalization.eps = float(n, "epsilon", 1e-5)
        l.layerNormalization.gamma = try w.weights(g, reshape: [count])
        if let b = n.input(2) {
            guard w.graph.isConstant(b) else { throw LayerWriterError("bias must be a constant") }
            l.layerNormalization.beta = try w.weights(b, reshape: [count])
        } else {
            l.layerNormalization.beta.floatValue = Array(repeating: 0, count: count)
        }
        w.add(l)
    }
}

/// The N-dimensional reduce layers share their fields.
protocol ReduceND {
    var axes: [Int64] { get set }
    var keepDims: Bool { get set }
    var reduceAll: Bool { get set }
}

extension CoreML_Specification_ReduceSumLayerParams: ReduceND {}
extension CoreML_Specification_ReduceMeanLayerParams: ReduceND {}
extension CoreML_Specification_ReduceMaxLayerParams: ReduceND {}
extension CoreML_Specification_ReduceMinLayerParams: ReduceND {}
extension CoreML_Specification_ReduceProdLayerParams: ReduceND {}
extension CoreML_Specification_ReduceL1LayerParams: ReduceND {}
extension CoreML_Specification_ReduceL2LayerParams: ReduceND {}
extension CoreML_Specification_ReduceLogSumLayerParams: ReduceND {}
extension CoreML_Specification_ReduceLogSumExpLayerParams: ReduceND {}
extension CoreML_Specification_ReduceSumSquareLayerParams: ReduceND {}
