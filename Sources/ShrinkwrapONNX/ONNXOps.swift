import ShrinkwrapIR

/// Translates one ONNX node (attributes already converted) into IR nodes.
typealias ONNXTranslator = (inout GraphBuilder, Node, String) throws -> Void

/// The ONNX op → IR translator table. Most ops pass through unchanged (IR op
/// semantics are ONNX's at the newest opset); ops whose form changed across
/// opsets have a translator in `ONNXOps+Legacy.swift` that rewrites old forms.
enum ONNXOps {
    /// Ops whose every supported opset already has the newest form.
    static let passThrough: [String] = [
        // tensor / shape
        "Identity", "Flatten", "Reshape", "Transpose", "Concat", "Gather", "GatherElements", "GatherND",
        "ScatterElements", "ScatterND", "Expand", "Tile", "Shape", "Size", "ConstantOfShape", "Range",
        "EyeLike", "OneHot", "Trilu", "NonZero", "CumSum", "Compress", "Where",
        // elementwise
        "Mod", "Sum", "Mean", "Max", "Min",
        "GreaterOrEqual", "LessOrEqual", "Not",
        "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Floor", "Ceil", "Round", "Sign",
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf",
        "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
        "Softplus", "Softsign", "Gelu", "Mish", "ThresholdedRelu", "Shrink", "Swish",
        "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
        "ArgMax", "ArgMin", "Cast", "CastLike",
        // neural network
        "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool",
        "Gemm", "MatMul", "InstanceNormalization", "LayerNormalization", "GroupNormalization", "LRN",
        "LpNormalization", "MeanVarianceNormalization",
        "DepthToSpace", "SpaceToDepth",
        "LSTM", "GRU", "RNN",
    ]

    static let translators: [String: ONNXTranslator] = {
        var t: [String: ONNXTranslator] = [:]
        for op in passThrough {
            t[op] = { b, n, _ in
                // Attributes older opsets had and newer ones dropped (their meaning is the default now):
                // Gemm's `broadcast` (before 7; Gemm broadcasts C since), `consumed_inputs` (before 6).
                var n = n
                n.attributes["consumed_inputs"] = nil
                if n.opType == "Gemm" { n.attributes["broadcast"] = nil }
                b.emit(n)
            }
        }
        // Forms that changed across opsets (ONNXOps+Legacy.swift).
        t["Constant"] = ONNXOps.constant
        t["Clip"] = ONNXOps.clip
        t["Split"] = ONNXOps.split
        t["Squeeze"] = ONNXOps.axesToInput(sinceOpset: 13)
        t["Unsqueeze"] = ONNXOps.axesToInput(sinceOpset: 13)
        t["ReduceSum"] = ONNXOps.axesToInput(sinceOpset: 13)
        for op in ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"] {
            t[op] = ONNXOps.axesToInput(sinceOpset: 18)
        }
        t["Pad"] = ONNXOps.pad
        t["Slice"] = ONNXOps.slice
        t["Resize"] = ONNXOps.resize
        t["Upsample"] = ONNXOps.upsample
        t["Softmax"] = ONNXOps.softmaxFamily
        t["LogSoftmax"] = ONNXOps.softmaxFamily
        t["Hardmax"] = ONNXOps.softmaxFamily
        t["BatchNormalization"] = ONNXOps.batchNorm
        t["Dropout"] = ONNXOps.dropout
        t["TopK"] = ONNXOps.topK
        t["PRelu"] = ONNXOps.preluLegacy
        t["DequantizeLinear"] = ONNXOps.dequantizeLinear
        t["If"] = ONNXOps.ifNode  // ONNXControlFlow.swift
        t["Loop"] = ONNXOps.loop
        t["Scatter"] = ONNXOps.renamed("ScatterElements")  // deprecated in opset 11, same meaning
        for op in ["Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"] {
            t[op] = ONNXOps.legacyBroadcast
        }
        return t
    }()

    /// Every ONNX op the importer accepts, sorted.
    static var supportedOps: [String] { translators.keys.sorted() }
}

extension ONNXImporter {
    /// Every ONNX op (default domain) the importer accepts, sorted.
    public static var supportedOps: [String] { ONNXOps.supportedOps }
}
