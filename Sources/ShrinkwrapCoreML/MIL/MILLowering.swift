import ShrinkwrapIR

/// The lowering passes the ML Program exporter runs before writing, in
/// order: rewrites of the few IR ops MIL has no op for.
enum MILLowering {
    static let pipeline = LoweringPipeline([
        // MIL has sigmoid_hard but no hard-swish.
        .decomposeHardSwish,
        // MIL's pad reflects or replicates the last two axes only.
        .padOnTrailingAxes(2, modes: ["reflect", "edge"]),
        // MIL's clip takes its bounds as constants.
        .clipRuntimeBoundsAsMinMax,
        // MIL's nearest upsampling scales by whole factors: other nearest resizes gather their source rows.
        .resizeNearestAsGather,
    ])
}
