import ShrinkwrapIR

/// The lowering passes the TFLite exporter runs before writing, in order.
/// NCHW (the IR's layout) → NHWC (TFLite's): layout-sensitive nodes are
/// wrapped in Transposes and renamed "NHWC.<op>", the Transposes sunk and
/// cancelled; a graph imported from TFLite (NHWC at its boundary) comes back
/// without Transposes, an ONNX graph keeps one at each end of every NHWC region.
enum TFLiteLowering {
    static let pipeline = LoweringPipeline([
        // First: TFLite's convolutions and pools are 2-D only, so a 1-D one becomes the
        // 2-D op over a height-1 view (as TensorFlow's converter writes it); the rank-4
        // node it leaves is then wrapped in Transposes to NHWC like any image op, and the
        // Reshapes between consecutive 1-D ops are already gone, so those Transposes cancel.
        // (A rank-3 GlobalMaxPool / GlobalAveragePool goes the same way.)
        .convolution1DAs2D,
        // TFLite's LSTM keeps its state inside, starting at zero, and gives the sequence
        // only: a streaming LSTM (state in as inputs, out as outputs) is unrolled.
        .unrollStatefulLSTM,
        // TFLite has no GRU or RNN builtin: every one is unrolled into per-step FULLY_CONNECTED /
        // SPLIT / LOGISTIC / TANH / MUL / ADD / SUB. Before the decompositions, which take the
        // HardSigmoid activations it makes.
        .unrollGRUAndRNN(),
        // Decompositions first, so that the Mul / Add / Clip they make move with the
        // Transposes like any arithmetic (TFLite has no batch-normalization or
        // hard-sigmoid op).
        .decomposeBatchNorm,
        .decomposeHardSigmoid,
        // No SWISH builtin either (TensorFlow's converter writes LOGISTIC + MUL too).
        .decomposeSwish,
        // TFLite has no ScatterElements: a scatter into zeros (SCATTER_ND) and a SELECT_V2.
        .scatterElementsAsScatterND,
        .wrapChannelsLast(ops: spatialOps, prefix: "NHWC."),
        .sinkTransposes,
        .removeDeadNodes,
        // Before fusing: a Relu whose output is a graph output is then the last node.
        .computeIntoOutputs,
        // Last: an activation fuses only into the node that directly writes its input,
        // which the Transposes no longer separate.
        fuseActivations,
    ])

    /// Ops that compute in NHWC in TFLite (input 0 is the image).
    static let spatialOps: Set<String> = [
        "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
        "LRN", "Resize", "DepthToSpace", "SpaceToDepth",
    ]
}
