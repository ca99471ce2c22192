import ShrinkwrapIR

/// The lowering passes the TFLite exporter runs before writing, in order.
/// NCHW (the IR's layout) → NHWC (TFLite's): layout-sensitive nodes are
/// wrapped in Transposes and renamed "NHWC.<op>", the Transposes sunk and
/// cancelled; a graph imported from TFLite (NHWC at its boundary) comes back
/// without Transposes, an ONNX graph keeps one at each end of every NHWC region.
enum TFLiteLowering {
    static let pipeline = LoweringPipeline([
        // Decompositions first, so that the Mul / Add / Clip they make move with the
        // Transposes like any arithmetic (TFLite has no batch-normalization or
        // hard-sigmoid op).
        .decomposeBatchNorm,
        .decomposeHardSigmoid,
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
