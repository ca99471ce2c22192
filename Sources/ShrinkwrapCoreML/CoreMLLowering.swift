import ShrinkwrapIR

/// The lowering passes the Core ML NeuralNetwork exporter runs before writing,
/// in order. The layers cover the IR's NCHW layout and most ops directly; the
/// passes rewrite the few ops with no layer into ops that have one.
enum CoreMLLowering {
    static let pipeline = LoweringPipeline([
        // NeuralNetwork has a hard-sigmoid activation but no hard-swish.
        .decomposeHardSwish,
        // …and a sigmoid activation but no swish.
        .decomposeSwish,
        // The pooling layer's global pooling covers [N, C, H, W] only.
        .globalPoolAsReduction(keepingRanks: [4]),
        // The PReLU activation takes one slope or one per channel (axis −3).
        .preluSlopeOnChannelAxis,
        // The padding layer's reflect / edge modes pad the last two axes only.
        .padOnTrailingAxes(2, modes: ["reflect", "edge"]),
        // The clip layer takes its bounds as numbers.
        .clipRuntimeBoundsAsMinMax,
        // The upsample layer scales by whole factors: other nearest resizes gather their source rows.
        .resizeNearestAsGather,
    ])
}
