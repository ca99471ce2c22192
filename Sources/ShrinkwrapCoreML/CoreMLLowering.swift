import ShrinkwrapIR

/// The lowering passes the Core ML NeuralNetwork exporter runs before writing,
/// in order. The layers cover the IR's NCHW layout and most ops directly; the
/// passes rewrite the few ops with no layer into ops that have one.
enum CoreMLLowering {
    static let pipeline = LoweringPipeline([
        // NeuralNetwork has a hard-sigmoid activation but no hard-swish.
        .decomposeHardSwish,
    ])
}
