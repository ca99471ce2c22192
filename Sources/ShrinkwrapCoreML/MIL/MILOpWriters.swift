import ShrinkwrapIR

/// IR op → MIL op(s): one writer per op, one table. A writer throws
/// `MILWriterError` when the node's attributes or shapes have no MIL form;
/// the exporter collects these and lists them together.
enum MILOpWriters {
    typealias Writer = (inout MILWriter, Node) throws -> Void

    static let table: [String: Writer] = {
        var t: [String: Writer] = [
            "Conv": conv, "ConvTranspose": conv,
            "MaxPool": pool, "AveragePool": pool, "LpPool": pool,
            "GlobalAveragePool": globalPool, "GlobalMaxPool": globalPool,
            "BatchNormalization": batchNorm, "LRN": lrn, "InstanceNormalization": instanceNorm, "LayerNormalization": layerNorm,
            "Gemm": gemm, "MatMul": matmul,
            "Softmax": softmax, "LogSoftmax": softmax,
            "Clip": clip, "PRelu": prelu,
            "Identity": identity, "Dropout": identity,
            "Cast": castOp, "CastLike": castOp,
            "Reshape": reshape, "Flatten": reshape, "Squeeze": reshape, "Unsqueeze": reshape,
            "Transpose": transpose, "Concat": concat, "Split": split, "Slice": slice,
            "Pad": pad, "Gather": gather, "Where": whereOp, "Tile": tile, "Expand": expand,
            "ArgMax": argReduce, "ArgMin": argReduce,
            "DepthToSpace": depthToSpace, "SpaceToDepth": depthToSpace,
            "Neg": negOrReciprocal, "Reciprocal": negOrReciprocal,
            "Resize": resize,
            "LSTM": recurrent, "GRU": recurrent, "RNN": recurrent,
            "GatherElements": gatherElements, "GatherND": gatherND, "ScatterND": scatterND, "ScatterElements": scatterElements,
            "OneHot": oneHot, "CumSum": cumSum, "TopK": topK, "Trilu": trilu,
            "Shape": shapeOf, "Size": shapeOf, "ConstantOfShape": constantOfShape, "Range": range, "EyeLike": eyeLike,
            "Mod": mod, "Mish": composedActivation, "Swish": composedActivation, "Celu": composedActivation, "Shrink": shrink,
            "IsNaN": isNaNOrInf, "IsInf": isNaNOrInf, "Mean": mean, "Hardmax": hardmax,
            "LpNormalization": lpNormalization, "GlobalLpPool": globalLpPool, "GroupNormalization": groupNorm,
            "MeanVarianceNormalization": meanVarianceNormalization,
            "Loop": loop,
        ]
        for op in unaryOps.keys { t[op] = unary }
        for op in activationOps.keys { t[op] = activation }
        for op in binaryOps.keys { t[op] = binary }
        for op in reduceOps.keys { t[op] = reduce }
        t["Equal"] = equal  // booleans too
        return t
    }()

    /// IR elementwise ops with one input → MIL op.
    static let unaryOps: [String: String] = [
        "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Floor": "floor", "Ceil": "ceil", "Sign": "sign",
        "Round": "round", "Erf": "erf", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos",
        "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh",
        "Not": "logical_not",
    ]

    /// IR activations → MIL op (parameters set by `activation`).
    static let activationOps: [String: String] = [
        "Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "LeakyRelu": "leaky_relu", "Elu": "elu",
        "Softplus": "softplus", "Softsign": "softsign", "HardSigmoid": "sigmoid_hard", "Gelu": "gelu",
        "ThresholdedRelu": "thresholded_relu", "Selu": "elu",
    ]

    /// IR binary elementwise ops (numpy broadcasting in both) → MIL op.
    static let binaryOps: [String: String] = [
        "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "real_div", "Pow": "pow", "Max": "maximum", "Min": "minimum",
        "Sum": "add", "Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
        "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
    ]

    /// IR reductions → MIL op.
    static let reduceOps: [String: String] = [
        "ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max", "ReduceMin": "reduce_min",
        "ReduceProd": "reduce_prod", "ReduceL1": "reduce_l1_norm", "ReduceL2": "reduce_l2_norm",
        "ReduceLogSum": "reduce_log_sum", "ReduceLogSumExp": "reduce_log_sum_exp", "ReduceSumSquare": "reduce_sum_square",
    ]

    // MARK: helpers

    static func normalize(_ axis: Int, rank: Int) throws -> Int {
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0, a < max(rank, 1) else { throw MILWriterError("axis \(axis) outside rank \(rank)") }
        return a
    }

    /// The node's input `k`, required.
    static func input(_ n: Node, _ k: Int) throws -> String {
        guard let v = n.input(k), !v.isEmpty else { throw MILWriterError("input \(k) is missing") }
        return v
    }
}
