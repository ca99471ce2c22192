import CoreMLSchema
import ShrinkwrapIR

/// NeuralNetwork layer → IR nodes: one reader per layer kind, one table.
///
/// Semantics follow Core ML's NeuralNetwork.proto. Classic layers name their
/// axes from the end (C = −3, H = −2, W = −1), which is how they are read
/// here, so they work on rank-5 blobs (seen as [1, C, H, W]) and N-d values
/// alike. A reader throws `LayerReaderError` for a form it cannot express;
/// the importer reports all of them together.
enum CoreMLLayerReaders {
    typealias Layer = CoreML_Specification_NeuralNetworkLayer
    typealias Reader = (inout GraphBuilderState, Layer, String) throws -> Void

    static let table: [String: Reader] = [
        "convolution": convolution, "pooling": pooling, "activation": activation, "innerProduct": innerProduct,
        "embedding": embedding, "embeddingND": embeddingND, "batchnorm": batchnorm, "softmax": softmax, "softmaxND": softmax,
        "lrn": lrn, "padding": padding, "constantPad": padding, "upsample": upsample, "resizeBilinear": resizeBilinear,
        "unary": unary, "add": multiInput, "multiply": multiInput, "average": multiInput, "max": multiInput, "min": multiInput,
        "scale": scaleBias, "bias": scaleBias, "reduce": reduceClassic, "loadConstant": loadConstant, "loadConstantND": loadConstant,
        "reshape": reshapeClassic, "flatten": flattenClassic, "permute": permute, "concat": concat, "concatND": concat,
        "split": split, "splitND": split, "slice": sliceClassic, "sliceStatic": sliceStatic,
        "uniDirectionalLSTM": lstm, "biDirectionalLSTM": lstm, "gru": gru, "simpleRecurrent": simpleRecurrent,
        "clip": simpleND, "ceil": simpleND, "floor": simpleND, "sign": simpleND, "round": simpleND, "erf": simpleND, "gelu": simpleND,
        "addBroadcastable": broadcastable, "subtractBroadcastable": broadcastable, "multiplyBroadcastable": broadcastable,
        "divideBroadcastable": broadcastable, "maxBroadcastable": broadcastable, "minBroadcastable": broadcastable,
        "powBroadcastable": broadcastable,
        "gather": gather, "transpose": transpose, "batchedMatmul": batchedMatmul, "squeeze": squeeze, "expandDims": expandDims,
        "flattenTo2D": flattenTo2D, "reshapeStatic": reshapeStatic, "tile": tile, "argMax": argMax,
        "reduceL1": reduceND, "reduceL2": reduceND, "reduceMax": reduceND, "reduceMin": reduceND, "reduceSum": reduceND,
        "reduceProd": reduceND, "reduceMean": reduceND, "reduceLogSum": reduceND, "reduceSumSquare": reduceND, "reduceLogSumExp": reduceND,
        "layerNormalization": layerNormalization, "reorganizeData": reorganizeData,
    ]

    /// Official names of the layer kinds outside our schema subset (they parse as unknown fields).
    static let otherKinds: [Int: String] = [
        600: "copy",
        605: "branch",
        615: "loop",
        620: "loopBreak",
        625: "loopContinue",
        635: "rangeStatic",
        640: "rangeDynamic",
        700: "exp2",
        710: "sin",
        715: "cos",
        720: "tan",
        730: "asin",
        735: "acos",
        740: "atan",
        750: "sinh",
        755: "cosh",
        760: "tanh",
        770: "asinh",
        775: "acosh",
        780: "atanh",
        815: "equal",
        820: "notEqual",
        825: "lessThan",
        827: "lessEqual",
        830: "greaterThan",
        832: "greaterEqual",
        840: "logicalOr",
        845: "logicalXor",
        850: "logicalNot",
        855: "logicalAnd",
        865: "modBroadcastable",
        895: "floorDivBroadcastable",
        925: "stack",
        935: "scatter",
        940: "gatherND",
        945: "scatterND",
        952: "gatherAlongAxis",
        954: "scatterAlongAxis",
        960: "reverse",
        965: "reverseSeq",
        1000: "sliceDynamic",
        1005: "slidingWindows",
        1015: "topK",
        1020: "argMin",
        1065: "getShape",
        1080: "fillLike",
        1085: "fillStatic",
        1090: "fillDynamic",
        1100: "broadcastToLike",
        1105: "broadcastToStatic",
        1110: "broadcastToDynamic",
        1135: "reshapeLike",
        1145: "reshapeDynamic",
        1150: "rankPreservingReshape",
        1170: "randomNormalLike",
        1175: "randomNormalStatic",
        1180: "randomNormalDynamic",
        1190: "randomUniformLike",
        1195: "randomUniformStatic",
        1200: "randomUniformDynamic",
        1210: "randomBernoulliLike",
        1215: "randomBernoulliStatic",
        1220: "randomBernoulliDynamic",
        1230: "categoricalDistribution",
        1313: "whereNonZero",
        1315: "matrixBandPart",
        1320: "lowerTriangular",
        1325: "upperTriangular",
        1330: "whereBroadcastable",
        1400: "NonMaximumSuppression",
        1450: "oneHot",
        1455: "cumSum",
        1460: "clampedReLU",
        1461: "argSort",
        1465: "pooling3d",
        1466: "globalPooling3d",
        1470: "sliceBySize",
        1471: "convolution3d",
    ]

    /// The kind of a layer our schema does not know, from its first unknown field number ≥ 100.
    static func unknownKind(_ l: Layer) -> String {
        let bytes = [UInt8](l.unknownFields.data)
        var i = 0
        while i < bytes.count {
            var key: UInt64 = 0, shift: UInt64 = 0
            while i < bytes.count, shift < 64 {
                let b = bytes[i]; i += 1
                key |= UInt64(b & 0x7F) << shift
                shift += 7
                if b & 0x80 == 0 { break }
            }
            let field = Int(key >> 3)
            if field >= 100 { return otherKinds[field].map { "\($0) (field \(field))" } ?? "layer field \(field)" }
            // Skip this field's value.
            switch key & 7 {
            case 0: while i < bytes.count, bytes[i] & 0x80 != 0 { i += 1 }; i += 1
            case 1: i += 8
            case 5: i += 4
            case 2:
                var len: UInt64 = 0, s2: UInt64 = 0
                while i < bytes.count, s2 < 64 { let b = bytes[i]; i += 1; len |= UInt64(b & 0x7F) << s2; s2 += 7; if b & 0x80 == 0 { break } }
                guard len < UInt64(bytes.count) else { return "unknown" }
                i += Int(len)
            default: return "unknown"
            }
        }
        return "no layer kind"
    }

    /// The proto field name of a layer kind.
    static func kindName(_ k: Layer.OneOf_Layer) -> String {
        let s = String(describing: k)
        let name = s.split(separator: "(").first.map(String.init) ?? s
        switch name {
        case "loadConstantNd": return "loadConstantND"
        case "embeddingNd": return "embeddingND"
        case "softmaxNd": return "softmaxND"
        case "concatNd": return "concatND"
        case "splitNd": return "splitND"
        case "uniDirectionalLstm": return "uniDirectionalLSTM"
        case "biDirectionalLstm": return "biDirectionalLSTM"
        default: return name
        }
    }

    // MARK: helpers

    static func one(_ b: inout GraphBuilderState, _ l: Layer, _ p: String) throws -> (x: String, y: String) {
        guard l.input.count == 1, l.output.count == 1 else {
            throw ImportError.malformed(b.loc(p), reason: "expected 1 input and 1 output, found \(l.input.count) and \(l.output.count)")
        }
        return (try b.value(l.input[0], place: p), try b.define(l.output[0], place: p))
    }

    static func rank(_ b: GraphBuilderState, _ v: String) throws -> Int {
        guard let r = b.ranks[v] else { throw LayerReaderError("the rank of '\(v)' is not known") }
        return r
    }

    static func dim(_ v: UInt64, _ what: String, _ b: GraphBuilderState, _ p: String) throws -> Int {
        guard v > 0, v <= 1 << 31 else { throw ImportError.malformed(b.loc(p), reason: "\(what) = \(v)") }
        return Int(v)
    }

    static func ints(_ v: [Int]) -> Attribute { .ints(v) }

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

    // MARK: dense layers

    /// y = x · Wᵀ + b over the last axis (rank 1–3), or over C·H·W of a rank-4 blob.
    static let innerProduct: Reader = { b, l, p in
        let q = l.innerProduct
        if q.int8DynamicQuantize { throw LayerReaderError("int8 dynamic quantization") }
        let (x, y) = try one(&b, l, p)
        let cin = try dim(q.inputChannels, "inputChannels", b, p), cout = try dim(q.outputChannels, "outputChannels", b, p)
        let we = try b.weight(q.weights, shape: [cout, cin], place: "\(p) weights")
        let bias = q.hasBias_p ? b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [cout], place: "\(p) bias")) : ""
        let r = try rank(b, x)
        func gemm(_ input: String, _ output: String) {
            let w = b.constant("\(l.name)_weights", we)
            b.node("Gemm", l.name, bias.isEmpty ? [input, w] : [input, w, bias], [output], ["transB": .int(1)], rank: 2)
        }
        switch r {
        case 2: gemm(x, y)
        case 1, 3:
            let wt: WeightEncoding
            do throws(WeightLayoutError) { wt = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
            let w = b.constant("\(l.name)_weights", wt)
            if bias.isEmpty {
                b.node("MatMul", l.name, [x, w], [y], rank: r)
            } else {
                let t = b.temp("\(l.name)_matmul")
                b.node("MatMul", "\(l.name)_matmul", [x, w], [t], rank: r)
                b.node("Add", l.name, [t, bias], [y], rank: r)
            }
        case 4, 5:
            // Contract the last three axes: [..., C, H, W] → [..., Cout, 1, 1].
            let lead = r - 3
            let flat = b.temp("\(l.name)_flat"), mm = b.temp("\(l.name)_gemm")
            b.node("Flatten", "\(l.name)_flatten", [x], [flat], ["axis": .int(lead)], rank: 2)
            gemm(flat, mm)
            let lastShape = r == 4 ? [-1, cout, 1, 1] : [1, -1, cout, 1, 1]
            b.node("Reshape", "\(l.name)_reshape", [mm, b.ints("\(l.name)_shape", lastShape)], [y], rank: r)
        default: throw LayerReaderError("input of rank \(r)")
        }
    }

    /// Indices (as floats) → rows of the table.
    static func lookup(_ b: inout GraphBuilderState, _ l: Layer, _ p: String, table: WeightEncoding, bias: String,
                       ids: String, output: String, rank r: Int) throws {
        let idx = b.temp("\(l.name)_ids")
        b.node("Cast", "\(l.name)_cast", [ids], [idx], ["to": .int(7)], rank: r)
        let w = b.constant("\(l.name)_weights", table)
        if bias.isEmpty {
            b.node("Gather", l.name, [w, idx], [output], ["axis": .int(0)], rank: r + 1)
        } else {
            let t = b.temp("\(l.name)_rows")
            b.node("Gather", l.name, [w, idx], [t], ["axis": .int(0)], rank: r + 1)
            b.node("Add", "\(l.name)_bias", [t, bias], [output], rank: r + 1)
        }
    }

    static let embedding: Reader = { b, l, p in
        let q = l.embedding
        let (x, y) = try one(&b, l, p)
        let vocab = try dim(q.inputDim, "inputDim", b, p), out = try dim(q.outputChannels, "outputChannels", b, p)
        let we = try b.weight(q.weights, shape: [out, vocab], place: "\(p) weights")
        let table: WeightEncoding
        do throws(WeightLayoutError) { table = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
        let bias = q.hasBias_p ? b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [out], place: "\(p) bias")) : ""
        // (..., 1, 1, 1) indices → (..., out, 1, 1).
        let r = try rank(b, x)
        guard r >= 4 else { throw LayerReaderError("input of rank \(r) (expected [..., 1, 1, 1])") }
        let sq = b.temp("\(l.name)_squeezed"), rows = b.temp("\(l.name)_rows")
        b.node("Squeeze", "\(l.name)_squeeze", [x, b.ints("\(l.name)_axes", [-3, -2, -1])], [sq], rank: r - 3)
        try lookup(&b, l, p, table: table, bias: bias, ids: sq, output: rows, rank: r - 3)
        b.node("Unsqueeze", "\(l.name)_unsqueeze", [rows, b.ints("\(l.name)_hw", [-2, -1])], [y], rank: r)
    }

    static let embeddingND: Reader = { b, l, p in
        let q = l.embeddingNd
        let (x, y) = try one(&b, l, p)
        let vocab = try dim(q.vocabSize, "vocabSize", b, p), out = try dim(q.embeddingSize, "embeddingSize", b, p)
        let we = try b.weight(q.weights, shape: [out, vocab], place: "\(p) weights")
        let table: WeightEncoding
        do throws(WeightLayoutError) { table = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
        let bias = q.hasBias_p ? b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [out], place: "\(p) bias")) : ""
        let r = try rank(b, x)
        guard r >= 2 else { throw LayerReaderError("input of rank \(r) (expected [..., 1])") }
        let sq = b.temp("\(l.name)_squeezed")
        b.node("Squeeze", "\(l.name)_squeeze", [x, b.ints("\(l.name)_axes", [-1])], [sq], rank: r - 1)
        try lookup(&b, l, p, table: table, bias: bias, ids: sq, output: y, rank: r - 1)
    }

    static let batchnorm: Reader = { b, l, p in
        let q = l.batchnorm
        let (x, y) = try one(&b, l, p)
        let c = try dim(q.channels, "channels", b, p)
        let r = try rank(b, x)
        let eps = q.epsilon == 0 ? Float(1e-5) : q.epsilon
        guard r >= 3 else { throw LayerReaderError("input of rank \(r) (batchnorm needs [..., C, H, W])") }
        let gamma = b.constant("\(l.name)_gamma", try b.weight(q.gamma, shape: [c], place: "\(p) gamma"))
        let beta = b.constant("\(l.name)_beta", try b.weight(q.beta, shape: [c], place: "\(p) beta"))
        var input = x, output = y
        var shapeOf = ""
        if r == 3 {
            input = b.temp("\(l.name)_4d"); output = b.temp("\(l.name)_out4d")
            b.node("Unsqueeze", "\(l.name)_to4d", [x, b.ints("\(l.name)_axis0", [0])], [input], rank: 4)
        } else if r > 4 {
            // Channel axis −3 of a higher rank: view as [N, C, H, W] and back.
            input = b.temp("\(l.name)_4d"); output = b.temp("\(l.name)_out4d")
            shapeOf = b.temp("\(l.name)_shape_of")
            let tail = b.temp("\(l.name)_chw"), full = b.temp("\(l.name)_nchw")
            b.node("Shape", "\(l.name)_shape", [x], [shapeOf], rank: 1)
            b.node("Slice", "\(l.name)_tail", [shapeOf, b.ints("\(l.name)_s", [-3]), b.ints("\(l.name)_e", [Int(Int32.max)])], [tail], rank: 1)
            b.node("Concat", "\(l.name)_nchw_shape", [b.ints("\(l.name)_lead", [-1]), tail], [full], ["axis": .int(0)], rank: 1)
            b.node("Reshape", "\(l.name)_to4d", [x, full], [input], rank: 4)
        }
        if q.computeMeanVar {
            guard q.instanceNormalization else { throw LayerReaderError("batch statistics computed at run time") }
            b.node("InstanceNormalization", l.name, [input, gamma, beta], [output], ["epsilon": .float(eps)], rank: 4)
        } else {
            let mean = b.constant("\(l.name)_mean", try b.weight(q.mean, shape: [c], place: "\(p) mean"))
            let variance = b.constant("\(l.name)_variance", try b.weight(q.variance, shape: [c], place: "\(p) variance"))
            b.node("BatchNormalization", l.name, [input, gamma, beta, mean, variance], [output], ["epsilon": .float(eps)], rank: 4)
        }
        if r == 3 {
            b.node("Squeeze", "\(l.name)_from4d", [output, b.ints("\(l.name)_axis0b", [0])], [y], rank: 3)
        } else if r > 4 {
            b.node("Reshape", "\(l.name)_from4d", [output, shapeOf], [y], rank: r)
        }
    }

    static let softmax: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axis = { if case .softmaxNd(let s)? = l.layer { return Int(s.axis) } else { return -3 } }()
        b.node("Softmax", l.name, [x], [y], ["axis": .int(axis)], rank: b.ranks[x])
    }

    static let lrn: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.lrn
        let size = try dim(q.localSize, "localSize", b, p)
        guard try rank(b, x) == 4 else { throw LayerReaderError("LRN on a value that is not [N, C, H, W]") }
        b.node("LRN", l.name, [x], [y], ["alpha": .float(q.alpha), "beta": .float(q.beta), "bias": .float(q.k == 0 ? 1 : q.k),
                                           "size": .int(size)], rank: 4)
    }

    /// reorganizeData: DEPTH_TO_SPACE is ONNX's DCR DepthToSpace, PIXEL_SHUFFLE its CRD one.
    static let reorganizeData: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.reorganizeData
        let size = try dim(q.blockSize, "blockSize", b, p)
        guard size >= 1 else { throw LayerReaderError("blockSize 0") }
        guard try rank(b, x) == 4 else { throw LayerReaderError("data reorganization of a value that is not [N, C, H, W]") }
        switch q.mode {
        case .spaceToDepth: b.node("SpaceToDepth", l.name, [x], [y], ["blocksize": .int(size)], rank: 4)
        case .depthToSpace: b.node("DepthToSpace", l.name, [x], [y], ["blocksize": .int(size), "mode": .string("DCR")], rank: 4)
        case .pixelShuffle: b.node("DepthToSpace", l.name, [x], [y], ["blocksize": .int(size), "mode": .string("CRD")], rank: 4)
        case .UNRECOGNIZED(let v): throw LayerReaderError("reorganization mode \(v)")
        }
    }

    static let padding: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = try rank(b, x)
        if case .constantPad(let c)? = l.layer {
            if c.padToGivenOutputSizeMode { throw LayerReaderError("padToGivenOutputSizeMode") }
            guard c.padAmounts.count == 2 * r, c.padAmounts.allSatisfy({ $0 <= 1 << 20 }) else {
                throw ImportError.malformed(b.loc(p), reason: "\(c.padAmounts.count) pad amounts for rank \(r)")
            }
            let a = c.padAmounts.map { Int($0) }
            let pads = (0..<r).map { a[2 * $0] } + (0..<r).map { a[2 * $0 + 1] }
            b.node("Pad", l.name, [x, b.ints("\(l.name)_pads", pads), b.floats("\(l.name)_value", [c.value], shape: [])], [y],
                   ["mode": .string("constant")], rank: r)
            return
        }
        let q = l.padding
        let pp = try pads(b, q.paddingAmounts, p)  // [top, left, bottom, right]
        var inputs = [x, b.ints("\(l.name)_pads", pp)]
        let mode: String
        switch q.paddingType {
        case .constant(let c)?: mode = "constant"; inputs.append(b.floats("\(l.name)_value", [c.value], shape: []))
        case .reflection?: mode = "reflect"; inputs.append("")
        case .replication?: mode = "edge"; inputs.append("")
        case nil: throw ImportError.malformed(b.loc(p), reason: "padding without a type")
        }
        inputs.append(b.ints("\(l.name)_axes", [-2, -1]))
        b.node("Pad", l.name, inputs, [y], ["mode": .string(mode)], rank: r)
    }

    static let upsample: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.upsample
        let r = try rank(b, x)
        var scales: [Float]
        if !q.fractionalScalingFactor.isEmpty {
            guard q.fractionalScalingFactor.count == 2, q.fractionalScalingFactor.allSatisfy({ $0 > 0 && $0 < 1e4 }) else {
                throw ImportError.malformed(b.loc(p), reason: "fractionalScalingFactor")
            }
            scales = q.fractionalScalingFactor
        } else {
            let f = q.scalingFactor.isEmpty ? [1, 1] : q.scalingFactor.map { $0 == 0 ? 1 : $0 }
            guard f.count == 2, f.allSatisfy({ $0 <= 1 << 12 }) else { throw ImportError.malformed(b.loc(p), reason: "scalingFactor \(q.scalingFactor)") }
            scales = f.map { Float($0) }
        }
        var a: [String: Attribute] = [:]
        switch q.mode {
        case .nn:
            a["mode"] = .string("nearest"); a["coordinate_transformation_mode"] = .string("asymmetric"); a["nearest_mode"] = .string("floor")
        case .bilinear:
            a["mode"] = .string("linear")
            switch q.linearUpsampleMode {
            case .default: a["coordinate_transformation_mode"] = .string("asymmetric")
            case .alignCornersTrue: a["coordinate_transformation_mode"] = .string("align_corners")
            case .alignCornersFalse: a["coordinate_transformation_mode"] = .string("half_pixel")
            case .UNRECOGNIZED(let v): throw LayerReaderError("linear upsample mode \(v)")
            }
        case .UNRECOGNIZED(let v): throw LayerReaderError("interpolation mode \(v)")
        }
        guard r >= 3 else { throw LayerReaderError("input of rank \(r) (upsampling needs [..., C, H, W])") }
        scales = Array(repeating: 1, count: r - 2) + scales
        b.node("Resize", l.name, [x, "", b.floats("\(l.name)_scales", scales)], [y], a, rank: r)
    }

    static let resizeBilinear: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.resizeBilinear
        let r = try rank(b, x)
        let size = q.targetSize.isEmpty ? [1, 1] : try q.targetSize.map { try dim($0, "targetSize", b, p) }
        guard size.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "targetSize needs 2 values") }
        let ct: String
        switch q.mode.samplingMethod {
        case .strictAlignEndpointsMode: ct = "align_corners"
        case .alignEndpointsMode:
            guard size.allSatisfy({ $0 > 1 }) else { throw LayerReaderError("ALIGN_ENDPOINTS_MODE to a size of 1") }
            ct = "align_corners"
        case .upsampleMode: ct = "asymmetric"
        default: throw LayerReaderError("sampling mode \(q.mode.samplingMethod)")
        }
        // Output size [.., H', W']: from the input's leading dims at run time.
        let shapeOf = b.temp("\(l.name)_in_shape"), lead = b.temp("\(l.name)_lead"), sizes = b.temp("\(l.name)_sizes")
        b.node("Shape", "\(l.name)_shape", [x], [shapeOf], rank: 1)
        b.node("Slice", "\(l.name)_lead", [shapeOf, b.ints("\(l.name)_s", [0]), b.ints("\(l.name)_e", [-2])], [lead], rank: 1)
        b.node("Concat", "\(l.name)_sizes", [lead, b.ints("\(l.name)_hw", size)], [sizes], ["axis": .int(0)], rank: 1)
        b.node("Resize", l.name, [x, "", "", sizes], [y], ["mode": .string("linear"), "coordinate_transformation_mode": .string(ct)], rank: r)
    }

    static let unary: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.unary
        let r = b.ranks[x]
        var v = x
        let scale = q.scale == 0 ? Float(1) : q.scale
        if scale != 1 {
            let t = b.temp("\(l.name)_scaled")
            v = b.node("Mul", "\(l.name)_scale", [v, b.floats("\(l.name)_scale", [scale], shape: [])], [t], rank: r)
        }
        if q.shift != 0 {
            let t = b.temp("\(l.name)_shifted")
            v = b.node("Add", "\(l.name)_shift", [v, b.floats("\(l.name)_shift", [q.shift], shape: [])], [t], rank: r)
        }
        let eps = q.epsilon == 0 ? Float(1e-6) : q.epsilon
        func plusEps() -> String {
            let t = b.temp("\(l.name)_eps")
            return b.node("Add", "\(l.name)_epsilon", [v, b.floats("\(l.name)_epsilon", [eps], shape: [])], [t], rank: r)
        }
        switch q.type {
        case .sqrt: b.node("Sqrt", l.name, [v], [y], rank: r)
        case .rsqrt:
            let s = b.temp("\(l.name)_sqrt")
            b.node("Sqrt", "\(l.name)_sqrt", [plusEps()], [s], rank: r)
            b.node("Reciprocal", l.name, [s], [y], rank: r)
        case .inverse: b.node("Reciprocal", l.name, [plusEps()], [y], rank: r)
        case .power: b.node("Pow", l.name, [v, b.floats("\(l.name)_exponent", [q.alpha], shape: [])], [y], rank: r)
        case .exp: b.node("Exp", l.name, [v], [y], rank: r)
        case .log: b.node("Log", l.name, [v], [y], rank: r)
        case .abs: b.node("Abs", l.name, [v], [y], rank: r)
        case .threshold: b.node("Max", l.name, [v, b.floats("\(l.name)_threshold", [q.alpha], shape: [])], [y], rank: r)
        case .UNRECOGNIZED(let t): throw LayerReaderError("unary function \(t)")
        }
    }

    /// add / multiply / average / max / min: one input with alpha, or several (numpy broadcasting covers Core ML's).
    static let multiInput: Reader = { b, l, p in
        guard !l.input.isEmpty, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs inputs and one output") }
        let xs = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let r = xs.compactMap { b.ranks[$0] }.max()
        let op: String
        switch l.layer {
        case .add(let a)?:
            if xs.count == 1 { b.node("Add", l.name, [xs[0], b.floats("\(l.name)_alpha", [a.alpha], shape: [])], [y], rank: r); return }
            op = "Sum"
        case .multiply(let a)?:
            if xs.count == 1 { b.node("Mul", l.name, [xs[0], b.floats("\(l.name)_alpha", [a.alpha], shape: [])], [y], rank: r); return }
            op = "Mul"
        case .average?: op = "Mean"
        case .max?: op = "Max"
        default: op = "Min"
        }
        if xs.count == 1 { b.node("Identity", l.name, xs, [y], rank: r); return }
        if op == "Mul", xs.count > 2 {
            var acc = xs[0]
            for (i, x) in xs.dropFirst().enumerated() {
                let o = i == xs.count - 2 ? y : b.temp("\(l.name)_part\(i)")
                acc = b.node("Mul", i == xs.count - 2 ? l.name : "\(l.name)_\(i)", [acc, x], [o], rank: r)
            }
            return
        }
        b.node(op, l.name, xs, [y], rank: r)
    }

    /// scale / bias: constants of shape [1], [C], [1, H, W] or [C, H, W] against the last three axes.
    static let scaleBias: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = try rank(b, x)
        func param(_ w: CoreML_Specification_WeightParams, _ s: [UInt64], _ what: String) throws -> String {
            let dims = try s.map { try dim($0, "\(what) shape", b, p) }
            let shape: [Int]
            switch dims.count {
            case 0: shape = [1]
            case 1: shape = dims[0] == 1 ? [1] : [dims[0], 1, 1]
            case 3: shape = dims
            default: throw ImportError.malformed(b.loc(p), reason: "\(what) shape \(s) (expected 1 or 3 values)")
            }
            if shape.count == 3 { guard r >= 3 else { throw LayerReaderError("input of rank \(r)") } }
            return b.constant("\(l.name)_\(what)", try b.weight(w, shape: shape, place: "\(p) \(what)"))
        }
        if case .bias(let q)? = l.layer {
            b.node("Add", l.name, [x, try param(q.bias, q.shape, "bias")], [y], rank: r)
            return
        }
        let q = l.scale
        let s = try param(q.scale, q.shapeScale, "scale")
        if q.hasBias_p {
            let t = b.temp("\(l.name)_scaled")
            b.node("Mul", "\(l.name)_scale", [x, s], [t], rank: r)
            b.node("Add", l.name, [t, try param(q.bias, q.shapeBias, "bias")], [y], rank: r)
        } else {
            b.node("Mul", l.name, [x, s], [y], rank: r)
        }
    }

    static let reduceClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.reduce
        let r = try rank(b, x)
        let axes: [Int]
        switch q.axis {
        case .chw: axes = [-3, -2, -1]
        case .hw: axes = [-2, -1]
        case .c: axes = [-3]
        case .h: axes = [-2]
        case .w: axes = [-1]
        case .UNRECOGNIZED(let v): throw LayerReaderError("reduce axis \(v)")
        }
        guard r >= -axes[0] else { throw LayerReaderError("input of rank \(r)") }
        let axesConst = b.ints("\(l.name)_axes", axes)
        let keep: [String: Attribute] = ["keepdims": .int(1)]
        switch q.mode {
        case .sum: b.node("ReduceSum", l.name, [x, axesConst], [y], keep, rank: r)
        case .avg: b.node("ReduceMean", l.name, [x, axesConst], [y], keep, rank: r)
        case .prod: b.node("ReduceProd", l.name, [x, axesConst], [y], keep, rank: r)
        case .sumsquare: b.node("ReduceSumSquare", l.name, [x, axesConst], [y], keep, rank: r)
        case .l1: b.node("ReduceL1", l.name, [x, axesConst], [y], keep, rank: r)
        case .l2: b.node("ReduceL2", l.name, [x, axesConst], [y], keep, rank: r)
        case .max: b.node("ReduceMax", l.name, [x, axesConst], [y], keep, rank: r)
        case .min: b.node("ReduceMin", l.name, [x, axesConst], [y], keep, rank: r)
        case .logsum:
            // Core ML: Σ log(x + ε).
            let eps = q.epsilon == 0 ? Float(1e-6) : q.epsilon
            let t = b.temp("\(l.name)_eps"), lg = b.temp("\(l.name)_log")
            b.node("Add", "\(l.name)_epsilon", [x, b.floats("\(l.name)_epsilon", [eps], shape: [])], [t], rank: r)
            b.node("Log", "\(l.name)_log", [t], [lg], rank: r)
            b.node("ReduceSum", l.name, [lg, axesConst], [y], keep, rank: r)
        case .argmax:
            guard axes.count == 1 else { throw LayerReaderError("ARGMAX over several axes") }
            let t = b.temp("\(l.name)_index")
            b.node("ArgMax", "\(l.name)_argmax", [x], [t], ["axis": .int(axes[0]), "keepdims": .int(1)], rank: r)
            b.node("Cast", l.name, [t], [y], ["to": .int(1)], rank: r)
        case .UNRECOGNIZED(let v): throw LayerReaderError("reduce mode \(v)")
        }
    }

    static let loadConstant: Reader = { b, l, p in
        guard l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "expected one output") }
        let y = try b.define(l.output[0], place: p)
        let dims: [Int], w: CoreML_Specification_WeightParams
        if case .loadConstantNd(let q)? = l.layer {
            dims = try q.shape.map { try dim($0, "shape", b, p) }
            w = q.data
        } else {
            let q = l.loadConstant
            guard q.shape.count == 3 else { throw ImportError.malformed(b.loc(p), reason: "loadConstant shape needs 3 values") }
            let chw = try q.shape.map { try dim($0, "shape", b, p) }
            dims = b.rank5 ? [1] + chw : [1, 1] + chw
            w = q.data
        }
        let c = b.constant("\(l.name)_value", try b.weight(w, shape: dims, place: "\(p) data"))
        b.node("Identity", l.name, [c], [y], rank: dims.count)
    }

    static let reshapeClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.reshape
        guard b.rank5 else { throw LayerReaderError("rank-5 reshape with exact array mapping") }
        guard q.targetShape.count == 3 else { throw LayerReaderError("target shape with a sequence axis") }
        let t = try q.targetShape.map { v -> Int in
            guard v > 0, v <= 1 << 31 else { throw ImportError.malformed(b.loc(p), reason: "targetShape \(q.targetShape)") }
            return Int(v)
        }
        if q.mode == .channelFirst {
            b.node("Reshape", l.name, [x, b.ints("\(l.name)_shape", [1] + t)], [y], rank: 4)
        } else {
            // Channel-last: read in (H, W, C) order, fill (H', W', C'), then back to (C', H', W').
            let a = b.temp("\(l.name)_hwc"), r2 = b.temp("\(l.name)_reshaped")
            b.node("Transpose", "\(l.name)_to_hwc", [x], [a], ["perm": ints([0, 2, 3, 1])], rank: 4)
            b.node("Reshape", "\(l.name)_reshape", [a, b.ints("\(l.name)_shape", [1, t[1], t[2], t[0]])], [r2], rank: 4)
            b.node("Transpose", l.name, [r2], [y], ["perm": ints([0, 3, 1, 2])], rank: 4)
        }
    }

    static let flattenClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = try rank(b, x)
        guard r >= 3 else { throw LayerReaderError("input of rank \(r)") }
        let shape = Array(repeating: 0, count: r - 3) + [-1, 1, 1]
        if l.flatten.mode == .channelFirst {
            b.node("Reshape", l.name, [x, b.ints("\(l.name)_shape", shape)], [y], rank: r)
        } else {
            let a = b.temp("\(l.name)_hwc")
            b.node("Transpose", "\(l.name)_to_hwc", [x], [a], ["perm": ints(Array(0..<(r - 3)) + [r - 2, r - 1, r - 3])], rank: r)
            b.node("Reshape", l.name, [a, b.ints("\(l.name)_shape", shape)], [y], rank: r)
        }
    }

    static let permute: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axis = l.permute.axis.map { Int(min($0, 9)) }
        guard axis.isEmpty || Set(axis) == Set(0..<4) && axis.count == 4 else {
            throw ImportError.malformed(b.loc(p), reason: "permute axes \(l.permute.axis)")
        }
        guard b.rank5 else { throw LayerReaderError("rank-5 permute with exact array mapping") }
        let a = axis.isEmpty ? [0, 1, 2, 3] : axis
        guard a[0] == 0 else { throw LayerReaderError("moves the sequence axis") }
        b.node("Transpose", l.name, [x], [y], ["perm": ints([0, a[1], a[2], a[3]])], rank: 4)
    }

    static let concat: Reader = { b, l, p in
        guard !l.input.isEmpty, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs inputs and one output") }
        let xs = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let axis: Int
        if case .concatNd(let c)? = l.layer {
            if c.interleave { throw LayerReaderError("interleave") }
            axis = Int(c.axis)
        } else {
            if l.concat.sequenceConcat { throw LayerReaderError("sequence concat") }
            axis = -3
        }
        b.node("Concat", l.name, xs, [y], ["axis": .int(axis)], rank: b.ranks[xs[0]])
    }

    static let split: Reader = { b, l, p in
        guard l.input.count == 1, !l.output.isEmpty else { throw ImportError.malformed(b.loc(p), reason: "needs one input and outputs") }
        let x = try b.value(l.input[0], place: p)
        let ys = try l.output.map { try b.define($0, place: p) }
        if case .splitNd(let s)? = l.layer {
            var inputs = [x]
            if !s.splitSizes.isEmpty {
                guard s.splitSizes.count == ys.count else { throw ImportError.malformed(b.loc(p), reason: "\(s.splitSizes.count) sizes for \(ys.count) outputs") }
                inputs.append(b.ints("\(l.name)_sizes", try s.splitSizes.map { try dim($0, "splitSizes", b, p) }))
            }
            b.node("Split", l.name, inputs, ys, ["axis": .int(Int(s.axis)), "num_outputs": .int(ys.count)], rank: b.ranks[x])
        } else {
            b.node("Split", l.name, [x], ys, ["axis": .int(-3), "num_outputs": .int(ys.count)], rank: b.ranks[x])
        }
    }

    static let sliceClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.slice
        let axis: Int
        switch q.axis {
        case .channelAxis: axis = -3
        case .heightAxis: axis = -2
        case .widthAxis: axis = -1
        case .UNRECOGNIZED(let v): throw LayerReaderError("slice axis \(v)")
        }
        let stride = q.stride == 0 ? 1 : try dim(q.stride, "stride", b, p)
        let end = q.endIndex == 0 ? Int(Int32.max) : Int(q.endIndex)
        b.node("Slice", l.name, [x, b.ints("\(l.name)_starts", [Int(q.startIndex)]), b.ints("\(l.name)_ends", [end]),
                                 b.ints("\(l.name)_axes", [axis]), b.ints("\(l.name)_steps", [stride])], [y], rank: b.ranks[x])
    }

    static let sliceStatic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.sliceStatic
        let r = try rank(b, x)
        guard q.beginIds.count == r, q.endIds.count == r, q.strides.count == r, q.beginMasks.count == r, q.endMasks.count == r else {
            throw ImportError.malformed(b.loc(p), reason: "slice parameters do not have one entry per axis (rank \(r))")
        }
        let big = Int(Int32.max)
        var starts: [Int] = [], ends: [Int] = [], steps: [Int] = []
        for i in 0..<r {
            let s = Int(q.strides[i])
            guard s != 0 else { throw ImportError.malformed(b.loc(p), reason: "stride 0") }
            starts.append(q.beginMasks[i] ? (s > 0 ? 0 : big) : Int(max(min(q.beginIds[i], Int64(big)), -Int64(big))))
            ends.append(q.endMasks[i] ? (s > 0 ? big : -big) : Int(max(min(q.endIds[i], Int64(big)), -Int64(big))))
            steps.append(s)
        }
        guard q.squeezeMasks.isEmpty || q.squeezeMasks.count == r else {
            throw ImportError.malformed(b.loc(p), reason: "\(q.squeezeMasks.count) squeeze masks for rank \(r)")
        }
        let squeeze = q.squeezeMasks.enumerated().filter { $0.element }.map(\.offset)
        for a in squeeze {
            guard abs(starts[a]) < big else { throw ImportError.malformed(b.loc(p), reason: "begin index \(starts[a]) on a squeezed axis") }
            ends[a] = starts[a] == -1 ? big : starts[a] + 1; steps[a] = 1
        }
        let out = squeeze.isEmpty ? y : b.temp("\(l.name)_sliced")
        b.node("Slice", l.name, [x, b.ints("\(l.name)_starts", starts), b.ints("\(l.name)_ends", ends),
                                 b.ints("\(l.name)_axes", Array(0..<r)), b.ints("\(l.name)_steps", steps)], [out], rank: r)
        if !squeeze.isEmpty {
            b.node("Squeeze", "\(l.name)_squeeze", [out, b.ints("\(l.name)_squeeze_axes", squeeze)], [y], rank: max(r - squeeze.count, 1))
        }
    }

    // MARK: N-dimensional layers

    static let simpleND: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = b.ranks[x]
        switch l.layer {
        case .clip(let c)?:
            b.node("Clip", l.name, [x, b.floats("\(l.name)_min", [c.minVal], shape: []), b.floats("\(l.name)_max", [c.maxVal], shape: [])], [y], rank: r)
        case .ceil?: b.node("Ceil", l.name, [x], [y], rank: r)
        case .floor?: b.node("Floor", l.name, [x], [y], rank: r)
        case .sign?: b.node("Sign", l.name, [x], [y], rank: r)
        case .round?: b.node("Round", l.name, [x], [y], rank: r)
        case .erf?: b.node("Erf", l.name, [x], [y], rank: r)
        case .gelu(let g)?:
            switch g.mode {
            case .exact: b.node("Gelu", l.name, [x], [y], rank: r)
            case .tanhApproximation: b.node("Gelu", l.name, [x], [y], ["approximate": .string("tanh")], rank: r)
            case .sigmoidApproximation:
                let t = b.temp("\(l.name)_scaled"), s = b.temp("\(l.name)_sigmoid")
                b.node("Mul", "\(l.name)_scale", [x, b.floats("\(l.name)_k", [1.702], shape: [])], [t], rank: r)
                b.node("Sigmoid", "\(l.name)_sigmoid", [t], [s], rank: r)
                b.node("Mul", l.name, [x, s], [y], rank: r)
            case .UNRECOGNIZED(let v): throw LayerReaderError("gelu mode \(v)")
            }
        default: throw LayerReaderError("no reader")
        }
    }

    static let broadcastable: Reader = { b, l, p in
        guard l.input.count == 2, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 2 inputs and 1 output") }
        let a = try b.value(l.input[0], place: p), c = try b.value(l.input[1], place: p)
        let y = try b.define(l.output[0], place: p)
        let op: String
        switch l.layer {
        case .addBroadcastable?: op = "Add"
        case .subtractBroadcastable?: op = "Sub"
        case .multiplyBroadcastable?: op = "Mul"
        case .divideBroadcastable?: op = "Div"
        case .maxBroadcastable?: op = "Max"
        case .minBroadcastable?: op = "Min"
        default: op = "Pow"
        }
        let r = [b.ranks[a], b.ranks[c]].compactMap { $0 }.max()
        b.node(op, l.name, [a, c], [y], rank: r)
    }

    static let gather: Reader = { b, l, p in
        guard l.input.count == 2, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 2 inputs and 1 output") }
        let data = try b.value(l.input[0], place: p), idx = try b.value(l.input[1], place: p)
        let y = try b.define(l.output[0], place: p)
        let i = b.temp("\(l.name)_indices")
        b.node("Cast", "\(l.name)_cast", [idx], [i], ["to": .int(7)], rank: b.ranks[idx])
        let r = (b.ranks[data]).flatMap { d in b.ranks[idx].map { d - 1 + $0 } }
        b.node("Gather", l.name, [data, i], [y], ["axis": .int(Int(l.gather.axis))], rank: r)
    }

    static let transpose: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axes = l.transpose.axes.map { Int(min($0, 64)) }
        guard Set(axes) == Set(0..<axes.count) else { throw ImportError.malformed(b.loc(p), reason: "transpose axes \(l.transpose.axes)") }
        b.node("Transpose", l.name, [x], [y], ["perm": ints(axes)], rank: axes.count)
    }

    static let batchedMatmul: Reader = { b, l, p in
        let q = l.batchedMatmul
        if q.int8DynamicQuantize { throw LayerReaderError("int8 dynamic quantization") }
        guard l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "expected one output") }
        if l.input.count == 1 {
            let x = try b.value(l.input[0], place: p)
            let y = try b.define(l.output[0], place: p)
            let cin = try dim(q.weightMatrixFirstDimension, "weightMatrixFirstDimension", b, p)
            let cout = try dim(q.weightMatrixSecondDimension, "weightMatrixSecondDimension", b, p)
            // Stored column-major: the bytes are [Cout, Cin].
            let we = try b.weight(q.weights, shape: [cout, cin], place: "\(p) weights")
            let wt: WeightEncoding
            do throws(WeightLayoutError) { wt = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
            let w = b.constant("\(l.name)_weights", wt)
            let r = b.ranks[x]
            if q.hasBias_p {
                let t = b.temp("\(l.name)_matmul")
                b.node("MatMul", "\(l.name)_matmul", [x, w], [t], rank: r)
                b.node("Add", l.name, [t, b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [cout], place: "\(p) bias"))], [y], rank: r)
            } else {
                b.node("MatMul", l.name, [x, w], [y], rank: r)
            }
            return
        }
        guard l.input.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "needs 1 or 2 inputs") }
        var a = try b.value(l.input[0], place: p), c = try b.value(l.input[1], place: p)
        let y = try b.define(l.output[0], place: p)
        func swapLast(_ v: String, _ tag: String) throws -> String {
            let r = try rank(b, v)
            guard r >= 2 else { throw LayerReaderError("transposing a rank-\(r) operand") }
            let t = b.temp("\(l.name)_\(tag)T")
            return b.node("Transpose", "\(l.name)_\(tag)T", [v], [t], ["perm": ints(Array(0..<(r - 2)) + [r - 1, r - 2])], rank: r)
        }
        if q.transposeA { a = try swapLast(a, "a") }
        if q.transposeB { c = try swapLast(c, "b") }
        let r = [b.ranks[a], b.ranks[c]].compactMap { $0 }.max().map { max($0, 2) }
        b.node("MatMul", l.name, [a, c], [y], rank: r)
    }

    static let squeeze: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.squeeze
        let r = try rank(b, x)
        if q.squeezeAll { throw LayerReaderError("squeezeAll (needs the shape)") }
        let axes = q.axes.map { Int($0) }
        if r == 1 { b.node("Identity", l.name, [x], [y], rank: 1); return }
        b.node("Squeeze", l.name, [x, b.ints("\(l.name)_axes", axes)], [y], rank: max(r - axes.count, 1))
    }

    static let expandDims: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axes = l.expandDims.axes.map { Int($0) }
        let r = b.ranks[x].map { $0 + axes.count }
        b.node("Unsqueeze", l.name, [x, b.ints("\(l.name)_axes", axes)], [y], rank: r)
    }

    static let flattenTo2D: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        b.node("Flatten", l.name, [x], [y], ["axis": .int(Int(l.flattenTo2D.axis))], rank: 2)
    }

    static let reshapeStatic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let t = l.reshapeStatic.targetShape.map { Int($0) }
        guard !t.isEmpty, t.allSatisfy({ $0 >= -1 && $0 <= 1 << 31 }) else { throw ImportError.malformed(b.loc(p), reason: "targetShape \(t)") }
        b.node("Reshape", l.name, [x, b.ints("\(l.name)_shape", t)], [y], rank: t.count)
    }

    static let tile: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let reps = try l.tile.reps.map { try dim($0, "reps", b, p) }
        b.node("Tile", l.name, [x, b.ints("\(l.name)_reps", reps)], [y], rank: reps.count)
    }

    static let argMax: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = b.ranks[x]
        let t = b.temp("\(l.name)_index")
        let keep = !l.argMax.removeDim
        b.node("ArgMax", "\(l.name)_argmax", [x], [t], ["axis": .int(Int(l.argMax.axis)), "keepdims": .int(keep ? 1 : 0)],
               rank: r.map { keep ? $0 : max($0 - 1, 1) })
        b.node("Cast", l.name, [t], [y], ["to": .int(1)], rank: b.ranks[t])
    }

    static let reduceND: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let op: String, axes: [Int64], keep: Bool, all: Bool
        func get<T: ReduceND>(_ q: T, _ name: String) -> (String, [Int64], Bool, Bool) { (name, q.axes, q.keepDims, q.reduceAll) }
        switch l.layer {
        case .reduceL1(let q)?: (op, axes, keep, all) = get(q, "ReduceL1")
        case .reduceL2(let q)?: (op, axes, keep, all) = get(q, "ReduceL2")
        case .reduceMax(let q)?: (op, axes, keep, all) = get(q, "ReduceMax")
        case .reduceMin(let q)?: (op, axes, keep, all) = get(q, "ReduceMin")
        case .reduceSum(let q)?: (op, axes, keep, all) = get(q, "ReduceSum")
        case .reduceProd(let q)?: (op, axes, keep, all) = get(q, "ReduceProd")
        case .reduceMean(let q)?: (op, axes, keep, all) = get(q, "ReduceMean")
        case .reduceLogSum(let q)?: (op, axes, keep, all) = get(q, "ReduceLogSum")
        case .reduceSumSquare(let q)?: (op, axes, keep, all) = get(q, "ReduceSumSquare")
        case .reduceLogSumExp(let q)?: (op, axes, keep, all) = get(q, "ReduceLogSumExp")
        default: throw LayerReaderError("no reader")
        }
        let r = try rank(b, x)
        let list = all ? Array(0..<r) : axes.map { Int($0) }
        let outRank = keep ? r : max(r - list.count, 1)
        if !keep, list.count == r {
            // Core ML keeps a full reduction as shape (1).
            let t = b.temp("\(l.name)_all")
            b.node(op, l.name, [x, b.ints("\(l.name)_axes", list)], [t], ["keepdims": .int(0)], rank: 0)
            b.node("Reshape", "\(l.name)_vector", [t, b.ints("\(l.name)_shape", [1])], [y], rank: 1)
            return
        }
        b.node(op, l.name, [x, b.ints("\(l.name)_axes", list)], [y], ["keepdims": .int(keep ? 1 : 0)], rank: outRank)
    }

    static let layerNormalization: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.layerNormalization
        let shape = q.normalizedShape.map { Int($0) }
        guard !shape.isEmpty, shape.allSatisfy({ $0 > 0 }), checkedElementCount(shape) != nil else {
            throw ImportError.malformed(b.loc(p), reason: "normalizedShape \(q.normalizedShape)")
        }
        let g = b.constant("\(l.name)_gamma", try b.weight(q.gamma, shape: shape, place: "\(p) gamma"))
        let be = b.constant("\(l.name)_beta", try b.weight(q.beta, shape: shape, place: "\(p) beta"))
        b.node("LayerNormalization", l.name, [x, g, be], [y], ["axis": .int(-shape.count), "epsilon": .float(q.eps)], rank: b.ranks[x])
    }

    // MARK: recurrent layers

    static func recurrentActivation(_ a: CoreML_Specification_ActivationParams) throws -> (String, Float?, Float?) {
        switch a.nonlinearityType {
        case .sigmoid?: return ("Sigmoid", nil, nil)
        case .tanh?: return ("Tanh", nil, nil)
        case .reLu?: return ("Relu", nil, nil)
        case .linear(let l)?: return ("Affine", l.alpha, l.beta)
        case .sigmoidHard(let h)?: return ("HardSigmoid", h.alpha, h.beta)
        case .scaledTanh(let t)?: return ("ScaledTanh", t.alpha, t.beta)
        default: throw LayerReaderError("recurrent activation \(String(describing: a.nonlinearityType))")
        }
    }

    /// ONNX's activations list; alpha / beta are listed only for the functions that take them, in order.
    static func activationAttributes(_ acts: [CoreML_Specification_ActivationParams], directions: Int = 1) throws -> [String: Attribute] {
        let parsed = try acts.map(recurrentActivation)
        let all = Array([[(String, Float?, Float?)]](repeating: parsed, count: directions).joined())
        var a: [String: Attribute] = ["activations": .strings(all.map(\.0))]
        let withParams = all.filter { $0.1 != nil }
        if !withParams.isEmpty {
            a["activation_alpha"] = .floats(withParams.map { $0.1 ?? 0 })
            a["activation_beta"] = .floats(withParams.map { $0.2 ?? 0 })
        }
        return a
    }

    /// Concatenated float matrices (recurrent weights are decoded: ONNX packs the gates into one tensor).
    static func stack(_ b: GraphBuilderState, _ parts: [(CoreML_Specification_WeightParams, String)], rows: Int, cols: Int, p: String) throws -> [Float] {
        var out: [Float] = []
        for (w, what) in parts {
            let e = try b.weight(w, shape: [rows, cols], place: "\(p) \(what)")
            out += e.decoded().floats ?? []
        }
        return out
    }

    /// Core ML [Seq, Batch, I, 1, 1] → ONNX [Seq, Batch, I].
    static func sequenceInput(_ b: inout GraphBuilderState, _ l: Layer, _ x: String) throws -> String {
        let r = try rank(b, x)
        if r == 3 { return x }
        guard r == 5 || (b.rank5 && r == 4) else { throw LayerReaderError("input of rank \(r) (expected [Seq, Batch, I, 1, 1])") }
        let t = b.temp("\(l.name)_x")
        // Rank-5 blobs [1, C, 1, 1] in the rank-5 mapping are one step of one batch.
        let shape = r == 5 ? [0, 0, -1] : [1, 1, -1]
        return b.node("Reshape", "\(l.name)_x", [x, b.ints("\(l.name)_x_shape", shape)], [t], rank: 3)
    }

    /// Optional initial state [1, Batch, H, 1, 1] → ONNX [1, Batch, H].
    static func stateInput(_ b: inout GraphBuilderState, _ l: Layer, _ blob: String?, _ tag: String, hidden: Int, _ p: String) throws -> String {
        guard let blob, !blob.isEmpty else { return "" }
        let v = try b.value(blob, place: p)
        let t = b.temp("\(l.name)_\(tag)")
        return b.node("Reshape", "\(l.name)_\(tag)", [v, b.ints("\(l.name)_\(tag)_shape", [1, -1, hidden])], [t], rank: 3)
    }

    /// ONNX [.., Batch, H] outputs back to Core ML [S, Batch, H, 1, 1] (rank-5 mapping: [1, H, 1, 1]).
    static func stateOutput(_ b: inout GraphBuilderState, _ l: Layer, _ v: String, _ blob: String, _ p: String, onnxRank: Int) throws {
        let y = try b.define(blob, place: p)
        if b.rank5 {
            b.node("Reshape", "\(l.name)_\(blob)_blob", [v, b.ints("\(l.name)_\(blob)_shape", [1, -1, 1, 1])], [y], rank: 4)
        } else {
            b.node("Unsqueeze", "\(l.name)_\(blob)_blob", [v, b.ints("\(l.name)_\(blob)_axes", [3, 4])], [y], rank: 5)
        }
    }

    static let lstm: Reader = { b, l, p in
        let bidirectional: Bool
        let inSize: Int, hidden: Int
        let params: CoreML_Specification_LSTMParams
        let weights: [CoreML_Specification_LSTMWeightParams]
        let acts: [CoreML_Specification_ActivationParams]
        var reverse = false
        switch l.layer {
        case .uniDirectionalLstm(let u)?:
            bidirectional = false
            inSize = try dim(u.inputVectorSize, "inputVectorSize", b, p); hidden = try dim(u.outputVectorSize, "outputVectorSize", b, p)
            params = u.params; weights = [u.weightParams]; acts = u.activations; reverse = u.reverseInput
        case .biDirectionalLstm(let u)?:
            bidirectional = true
            inSize = try dim(u.inputVectorSize, "inputVectorSize", b, p); hidden = try dim(u.outputVectorSize, "outputVectorSize", b, p)
            params = u.params; weights = u.weightParams; acts = u.activationsForwardLstm
            guard u.activationsBackwardLstm.count == acts.count else { throw LayerReaderError("backward activations differ") }
        default: throw LayerReaderError("no reader")
        }
        let dirs = bidirectional ? 2 : 1
        guard weights.count == dirs else { throw ImportError.malformed(b.loc(p), reason: "\(weights.count) weight sets for \(dirs) directions") }
        guard acts.count == 3 else { throw ImportError.malformed(b.loc(p), reason: "\(acts.count) activations (expected 3)") }
        guard !l.input.isEmpty, l.output.count == 1 + 2 * dirs else {
            throw ImportError.malformed(b.loc(p), reason: "\(l.input.count) inputs and \(l.output.count) outputs")
        }
        if params.cellClipThreshold != 0 && params.cellClipThreshold < 1e4 {
            // Core ML clamps the cell state; ONNX's clip bounds the gate inputs. Equal unless the cell state leaves ±threshold.
        }
        // ONNX gate order i, o, f, c (Core ML: input, forget, block input z, output).
        var W: [Float] = [], R: [Float] = [], B: [Float] = [], P: [Float] = []
        for w in weights {
            W += try stack(b, [(w.inputGateWeightMatrix, "W_i"), (w.outputGateWeightMatrix, "W_o"), (w.forgetGateWeightMatrix, "W_f"),
                               (w.blockInputWeightMatrix, "W_z")], rows: hidden, cols: inSize, p: p)
            R += try stack(b, [(w.inputGateRecursionMatrix, "R_i"), (w.outputGateRecursionMatrix, "R_o"), (w.forgetGateRecursionMatrix, "R_f"),
                               (w.blockInputRecursionMatrix, "R_z")], rows: hidden, cols: hidden, p: p)
            func vector(_ w: CoreML_Specification_WeightParams, _ what: String) throws -> [Float] {
                params.hasBiasVectors_p ? try stack(b, [(w, what)], rows: 1, cols: hidden, p: p) : Array(repeating: 0, count: hidden)
            }
            var bf = try vector(w.forgetGateBiasVector, "b_f")
            if params.forgetBias { bf = bf.map { $0 + 1 } }
            B += try vector(w.inputGateBiasVector, "b_i") + vector(w.outputGateBiasVector, "b_o") + bf + vector(w.blockInputBiasVector, "b_z")
            B += Array(repeating: 0, count: 4 * hidden)
            if params.hasPeepholeVectors_p {
                P += try stack(b, [(w.inputGatePeepholeVector, "p_i"), (w.outputGatePeepholeVector, "p_o"), (w.forgetGatePeepholeVector, "p_f")],
                               rows: 1, cols: hidden, p: p)
            }
        }
        let x = try sequenceInput(&b, l, try b.value(l.input[0], place: p))
        let h0: String, c0: String
        if bidirectional {
            // Core ML passes each direction's states separately; ONNX stacks them.
            let hf = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0f", hidden: hidden, p)
            let cf = try stateInput(&b, l, l.input.count > 2 ? l.input[2] : nil, "c0f", hidden: hidden, p)
            let hb = try stateInput(&b, l, l.input.count > 3 ? l.input[3] : nil, "h0b", hidden: hidden, p)
            let cb = try stateInput(&b, l, l.input.count > 4 ? l.input[4] : nil, "c0b", hidden: hidden, p)
            if [hf, cf, hb, cb].contains(where: { !$0.isEmpty }) {
                guard ![hf, cf, hb, cb].contains(where: { $0.isEmpty }) else { throw LayerReaderError("some initial states but not all") }
                let h = b.temp("\(l.name)_h0"), c = b.temp("\(l.name)_c0")
                h0 = b.node("Concat", "\(l.name)_h0", [hf, hb], [h], ["axis": .int(0)], rank: 3)
                c0 = b.node("Concat", "\(l.name)_c0", [cf, cb], [c], ["axis": .int(0)], rank: 3)
            } else { h0 = ""; c0 = "" }
        } else {
            h0 = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0", hidden: hidden, p)
            c0 = try stateInput(&b, l, l.input.count > 2 ? l.input[2] : nil, "c0", hidden: hidden, p)
        }
        let wC = b.floats("\(l.name)_W", W, shape: [dirs, 4 * hidden, inSize])
        let rC = b.floats("\(l.name)_R", R, shape: [dirs, 4 * hidden, hidden])
        let bC = b.floats("\(l.name)_B", B, shape: [dirs, 8 * hidden])
        var inputs = [x, wC, rC, bC, "", h0, c0]
        if !P.isEmpty { inputs.append(b.floats("\(l.name)_P", P, shape: [dirs, 3 * hidden])) }
        var a = try activationAttributes(acts, directions: dirs)
        a["hidden_size"] = .int(hidden)
        a["direction"] = .string(bidirectional ? "bidirectional" : reverse ? "reverse" : "forward")
        if params.coupledInputAndForgetGate { a["input_forget"] = .int(1) }
        let yAll = b.temp("\(l.name)_Y"), yH = b.temp("\(l.name)_Y_h"), yC = b.temp("\(l.name)_Y_c")
        b.node("LSTM", l.name, inputs, [yAll, yH, yC], a, rank: 4)
        // y: the whole sequence [S, dirs, B, H] → [S, B, dirs·H], or the last step.
        let seqOut = params.sequenceOutput
        let y3 = b.temp("\(l.name)_y")
        if seqOut {
            let t = b.temp("\(l.name)_y_sbdh")
            b.node("Transpose", "\(l.name)_y_t", [yAll], [t], ["perm": ints([0, 2, 1, 3])], rank: 4)
            b.node("Reshape", "\(l.name)_y_r", [t, b.ints("\(l.name)_y_shape", [0, 0, -1])], [y3], rank: 3)
        } else {
            // Final outputs of both directions: Y_h [dirs, B, H] → [1, B, dirs·H].
            let t = b.temp("\(l.name)_yh_t")
            b.node("Transpose", "\(l.name)_yh_t", [yH], [t], ["perm": ints([1, 0, 2])], rank: 3)
            b.node("Reshape", "\(l.name)_y_r", [t, b.ints("\(l.name)_y_shape", [1, 0, -1])], [y3], rank: 3)
        }
        try stateOutput(&b, l, y3, l.output[0], p, onnxRank: 3)
        for d in 0..<dirs {
            let h = b.temp("\(l.name)_h\(d)"), c = b.temp("\(l.name)_c\(d)")
            b.node("Slice", "\(l.name)_h\(d)", [yH, b.ints("\(l.name)_h\(d)_s", [d]), b.ints("\(l.name)_h\(d)_e", [d + 1]),
                                                b.ints("\(l.name)_h\(d)_a", [0])], [h], rank: 3)
            b.node("Slice", "\(l.name)_c\(d)", [yC, b.ints("\(l.name)_c\(d)_s", [d]), b.ints("\(l.name)_c\(d)_e", [d + 1]),
                                                b.ints("\(l.name)_c\(d)_a", [0])], [c], rank: 3)
            try stateOutput(&b, l, h, l.output[1 + 2 * d], p, onnxRank: 3)
            try stateOutput(&b, l, c, l.output[2 + 2 * d], p, onnxRank: 3)
        }
    }

    static let gru: Reader = { b, l, p in
        let q = l.gru
        let inSize = try dim(q.inputVectorSize, "inputVectorSize", b, p), hidden = try dim(q.outputVectorSize, "outputVectorSize", b, p)
        guard !l.input.isEmpty, l.output.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "\(l.output.count) outputs (expected 2)") }
        guard q.activations.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "\(q.activations.count) activations (expected 2)") }
        // ONNX gate order z, r, h.
        let W = try stack(b, [(q.updateGateWeightMatrix, "W_z"), (q.resetGateWeightMatrix, "W_r"), (q.outputGateWeightMatrix, "W_o")],
                          rows: hidden, cols: inSize, p: p)
        let R = try stack(b, [(q.updateGateRecursionMatrix, "R_z"), (q.resetGateRecursionMatrix, "R_r"), (q.outputGateRecursionMatrix, "R_o")],
                          rows: hidden, cols: hidden, p: p)
        var B = Array(repeating: Float(0), count: 6 * hidden)
        if q.hasBiasVectors_p {
            let bv = try stack(b, [(q.updateGateBiasVector, "b_z"), (q.resetGateBiasVector, "b_r"), (q.outputGateBiasVector, "b_o")],
                               rows: 1, cols: hidden, p: p)
            for i in 0..<(3 * hidden) { B[i] = bv[i] }
        }
        let x = try sequenceInput(&b, l, try b.value(l.input[0], place: p))
        let h0 = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0", hidden: hidden, p)
        var a = try activationAttributes(q.activations)
        a["hidden_size"] = .int(hidden)
        a["direction"] = .string(q.reverseInput ? "reverse" : "forward")
        a["linear_before_reset"] = .int(0)
        let yAll = b.temp("\(l.name)_Y"), yH = b.temp("\(l.name)_Y_h")
        b.node("GRU", l.name, [x, b.floats("\(l.name)_W", W, shape: [1, 3 * hidden, inSize]), b.floats("\(l.name)_R", R, shape: [1, 3 * hidden, hidden]),
                              b.floats("\(l.name)_B", B, shape: [1, 6 * hidden]), "", h0], [yAll, yH], a, rank: 4)
        let y3 = b.temp("\(l.name)_y")
        if q.sequenceOutput {
            b.node("Squeeze", "\(l.name)_y_s", [yAll, b.ints("\(l.name)_dir", [1])], [y3], rank: 3)
        } else {
            b.node("Identity", "\(l.name)_y_s", [yH], [y3], rank: 3)
        }
        try stateOutput(&b, l, y3, l.output[0], p, onnxRank: 3)
        try stateOutput(&b, l, yH, l.output[1], p, onnxRank: 3)
    }

    static let simpleRecurrent: Reader = { b, l, p in
        let q = l.simpleRecurrent
        let inSize = try dim(q.inputVectorSize, "inputVectorSize", b, p), hidden = try dim(q.outputVectorSize, "outputVectorSize", b, p)
        guard !l.input.isEmpty, l.output.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "\(l.output.count) outputs (expected 2)") }
        let W = try stack(b, [(q.weightMatrix, "W")], rows: hidden, cols: inSize, p: p)
        let R = try stack(b, [(q.recursionMatrix, "R")], rows: hidden, cols: hidden, p: p)
        var B = Array(repeating: Float(0), count: 2 * hidden)
        if q.hasBiasVector_p {
            let bv = try stack(b, [(q.biasVector, "b")], rows: 1, cols: hidden, p: p)
            for i in 0..<hidden { B[i] = bv[i] }
        }
        let x = try sequenceInput(&b, l, try b.value(l.input[0], place: p))
        let h0 = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0", hidden: hidden, p)
        var a = try activationAttributes([q.activation])
        a["hidden_size"] = .int(hidden)
        a["direction"] = .string(q.reverseInput ? "reverse" : "forward")
        let yAll = b.temp("\(l.name)_Y"), yH = b.temp("\(l.name)_Y_h")
        b.node("RNN", l.name, [x, b.floats("\(l.name)_W", W, shape: [1, hidden, inSize]), b.floats("\(l.name)_R", R, shape: [1, hidden, hidden]),
                              b.floats("\(l.name)_B", B, shape: [1, 2 * hidden]), "", h0], [yAll, yH], a, rank: 4)
        let y3 = b.temp("\(l.name)_y")
        if q.sequenceOutput {
            b.node("Squeeze", "\(l.name)_y_s", [yAll, b.ints("\(l.name)_dir", [1])], [y3], rank: 3)
        } else {
            b.node("Identity", "\(l.name)_y_s", [yH], [y3], rank: 3)
        }
        try stateOutput(&b, l, y3, l.output[0], p, onnxRank: 3)
        try stateOutput(&b, l, yH, l.output[1], p, onnxRank: 3)
    }
}
