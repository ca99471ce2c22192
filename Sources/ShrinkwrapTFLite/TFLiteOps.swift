import FlatBuffers
import ShrinkwrapIR

/// TFLite builtin op → IR nodes (ONNX semantics). One entry per builtin.
/// The translators are in TFLiteOps+<family>.swift; the table and shared helpers here.
enum TFLiteOps {
    typealias Translator = (inout TFLiteContext, TFLiteModel.Op) throws -> Void

    static let table: [String: Translator] = {
        var t: [String: Translator] = [:]
        t["CONV_2D"] = conv
        t["DEPTHWISE_CONV_2D"] = depthwise
        t["TRANSPOSE_CONV"] = transposeConv
        t["FULLY_CONNECTED"] = fullyConnected
        for (name, onnx, options) in [("ADD", "Add", "AddOptions"), ("SUB", "Sub", "SubOptions"),
                                      ("MUL", "Mul", "MulOptions"), ("DIV", "Div", "DivOptions")] {
            t[name] = { c, op in try binary(&c, op, onnx, options: options) }
        }
        for (name, onnx) in [("MINIMUM", "Min"), ("MAXIMUM", "Max"), ("POW", "Pow")] {
            t[name] = { c, op in try binary(&c, op, onnx, options: nil) }
        }
        t["AVERAGE_POOL_2D"] = { c, op in try pool(&c, op, "AveragePool") }
        t["MAX_POOL_2D"] = { c, op in try pool(&c, op, "MaxPool") }
        for (name, onnx) in [("MEAN", "ReduceMean"), ("SUM", "ReduceSum"), ("REDUCE_MAX", "ReduceMax"),
                             ("REDUCE_MIN", "ReduceMin"), ("REDUCE_PROD", "ReduceProd")] {
            t[name] = { c, op in try reduce(&c, op, onnx) }
        }
        for (name, onnx) in [("LOGISTIC", "Sigmoid"), ("TANH", "Tanh"), ("RELU", "Relu"), ("HARD_SWISH", "HardSwish"),
                             ("SQRT", "Sqrt"), ("EXP", "Exp"), ("LOG", "Log"), ("ABS", "Abs"), ("NEG", "Neg"),
                             ("FLOOR", "Floor"), ("CEIL", "Ceil"), ("SIN", "Sin"), ("COS", "Cos"), ("LOG_SOFTMAX", "LogSoftmax")] {
            t[name] = { c, op in try unary(&c, op, onnx) }
        }
        t["RELU6"] = { c, op in try clip(&c, op, 0, 6) }
        t["RELU_N1_TO_1"] = { c, op in try clip(&c, op, -1, 1) }
        t["RELU_0_TO_1"] = { c, op in try clip(&c, op, 0, 1) }
        t["LEAKY_RELU"] = leakyRelu
        t["PRELU"] = { c, op in try arity(c, op, 2); c.emit("PRelu", [c.value(op.inputs[0]), c.value(op.inputs[1])], [c.value(op.outputs[0])]) }
        t["SOFTMAX"] = softmax
        t["RESHAPE"] = reshape
        t["SQUEEZE"] = squeeze
        t["EXPAND_DIMS"] = expandDims
        t["TRANSPOSE"] = transpose
        t["CONCATENATION"] = concatenation
        t["SPLIT"] = split
        t["SPLIT_V"] = splitV
        t["SLICE"] = slice
        t["STRIDED_SLICE"] = stridedSlice
        t["PAD"] = pad
        t["PADV2"] = pad
        t["GATHER"] = gather
        t["RESIZE_BILINEAR"] = { c, op in try resize(&c, op, bilinear: true) }
        t["RESIZE_NEAREST_NEIGHBOR"] = { c, op in try resize(&c, op, bilinear: false) }
        t["SQUARED_DIFFERENCE"] = squaredDifference
        t["RSQRT"] = rsqrt
        t["BATCH_MATMUL"] = batchMatMul
        t["DEPTH_TO_SPACE"] = { c, op in try spaceDepth(&c, op, "DepthToSpace", options: "DepthToSpaceOptions") }
        t["SPACE_TO_DEPTH"] = { c, op in try spaceDepth(&c, op, "SpaceToDepth", options: "SpaceToDepthOptions") }
        t["LOCAL_RESPONSE_NORMALIZATION"] = localResponseNorm
        t["UNIDIRECTIONAL_SEQUENCE_LSTM"] = sequenceLSTM
        for (name, onnx) in [("EQUAL", "Equal"), ("LESS", "Less"), ("LESS_EQUAL", "LessOrEqual"), ("GREATER", "Greater"),
                             ("GREATER_EQUAL", "GreaterOrEqual"), ("LOGICAL_AND", "And"), ("LOGICAL_OR", "Or")] {
            t[name] = { c, op in try binary(&c, op, onnx, options: nil) }
        }
        t["NOT_EQUAL"] = notEqual
        t["LOGICAL_NOT"] = { c, op in try unary(&c, op, "Not") }
        t["SQUARE"] = square
        t["SELECT"] = { c, op in try select(&c, op, v2: false) }
        t["SELECT_V2"] = { c, op in try select(&c, op, v2: true) }
        t["SHAPE"] = shapeOf
        t["PACK"] = pack
        t["UNPACK"] = unpack
        t["REVERSE_V2"] = reverse
        t["CAST"] = cast
        t["BROADCAST_TO"] = broadcastTo
        t["MIRROR_PAD"] = mirrorPad
        t["ARG_MAX"] = { c, op in try argExtreme(&c, op, "ArgMax") }
        t["ARG_MIN"] = { c, op in try argExtreme(&c, op, "ArgMin") }
        t["TILE"] = tile
        t["ONE_HOT"] = oneHot
        t["RANGE"] = range
        t["SCATTER_ND"] = scatterND
        t["WHILE"] = whileLoop
        return t
    }()

    /// CUSTOM ops by custom_code (their names in `TFLiteModel.Op` are "CUSTOM(code)").
    static let customTable: [String: Translator] = [
        "Convolution2DTransposeBias": transposeConvBias,
    ]

    /// The translator of a builtin ("CONV_2D") or a custom op ("CUSTOM(code)").
    static func translator(_ name: String) -> Translator? {
        if let t = table[name] { return t }
        guard name.hasPrefix("CUSTOM("), name.hasSuffix(")") else { return nil }
        return customTable[String(name.dropFirst(7).dropLast())]
    }

    // MARK: - Helpers

    static func arity(_ c: TFLiteContext, _ op: TFLiteModel.Op, _ inputs: Int, outputs: Int = 1) throws {
        guard op.inputs.count >= inputs, op.outputs.count >= outputs,
              op.inputs.prefix(inputs).allSatisfy({ $0 >= 0 }) else {
            throw ImportError.malformed(c.loc(op), reason: "\(op.inputs.count) inputs and \(op.outputs.count) outputs; expected at least \(inputs) and \(outputs)")
        }
    }

    /// TensorFlow's SAME padding: (before, after), the extra pixel after.
    static func samePads(_ size: Int, kernel: Int, stride: Int, dilation: Int) -> (Int, Int) {
        let out = (size + stride - 1) / stride
        let total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
        return (total / 2, total - total / 2)
    }

    /// Applies the fused activation to an NCHW result, then transposes it into the NHWC output.
    static func finishNCHW(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ y: String, activation: Int8) throws {
        let out = c.value(op.outputs[0])
        if activation == 0 { c.toNHWC(y, into: out); return }
        let a = c.fresh(out + "_act")
        try c.activation(activation, y, a, op: op)
        c.toNHWC(a, into: out)
    }

    /// A weight transposed for the IR, under the tensor's own name when nothing else reads the original.
    static func weight(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ k: Int, perm: [Int], rank: Int) throws -> (name: String, shape: [Int]) {
        let i = op.inputs[k]
        guard let e = c.constantEncoding(i) else {
            throw ImportError.unsupported(c.loc(op), what: "a filter computed at run time (input \(k)); only constant filters are supported")
        }
        guard e.shape.count == rank else {
            throw ImportError.malformed(c.loc(op), reason: "filter shape \(e.shape) is not rank \(rank)")
        }
        let transposed: WeightEncoding
        do { transposed = try e.transposed(perm) } catch {
            throw ImportError.badTensor(c.loc(tensor: i), reason: error.reason)
        }
        if c.readers[i] == 1 {
            c.constantTensors[i] = transposed
            return (c.value(i), transposed.shape)
        }
        return (c.addConstant(c.value(i) + "_nchw", transposed), transposed.shape)
    }

    static func optionalInput(_ c: TFLiteContext, _ op: TFLiteModel.Op, _ k: Int) -> String {
        k < op.inputs.count && op.inputs[k] >= 0 ? c.value(op.inputs[k]) : ""
    }

    /// H and W of an NHWC input, when the file gives them.
    static func spatial(_ c: TFLiteContext, _ i: Int, _ op: TFLiteModel.Op) throws -> (h: Int, w: Int, channels: Int) {
        let s = c.shape(i)
        guard s.count == 4 else { throw ImportError.unsupported(c.loc(op), what: "input of rank \(s.count) (NHWC rank 4 expected)") }
        return (s[1], s[2], s[3])
    }
}
