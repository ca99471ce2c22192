import ShrinkwrapIR

/// The lowering passes the Core ML NeuralNetwork exporter runs before writing,
/// in order. The layers cover the IR's NCHW layout and most ops directly; the
/// passes rewrite the few ops with no layer into ops that have one.
enum CoreMLLowering {
    static let pipeline = LoweringPipeline([
        // The GRU layer runs one direction and resets the state before the recursion matrix (ONNX's
        // linear_before_reset = 0), the simple recurrent layer one direction: the GRU / RNN nodes the
        // writer refuses for that (its own predicate says which) are unrolled into per-step layers.
        .unrollGRUAndRNN { n, _ in CoreMLLayerWriters.recurrentCellRefusal(n) != nil },
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
        // Core ML has no rank-0 values (a scalar is [1]): its gather by one index would keep the axis.
        .gatherScalarIndexAsVector,
        // The slice layers step forward only: a reversal (Keras' go_backwards sequence) gathers its rows.
        .sliceNegativeStepsAsGather,
        // The upsample layer scales by whole factors: other nearest resizes gather their source rows.
        .resizeNearestAsGather,
    ])
}
