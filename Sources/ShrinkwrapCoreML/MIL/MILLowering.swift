import ShrinkwrapIR

/// The lowering passes the ML Program exporter runs before writing, in
/// order: rewrites of the few IR ops MIL has no op for.
enum MILLowering {
    static let pipeline = LoweringPipeline([
        // MIL's gru resets after the recurrence matrix with no recurrent bias on the h gate (ONNX's
        // linear_before_reset = 1, Rb_h = 0), its gru and rnn take sigmoid / tanh / relu only: the GRU /
        // RNN nodes the writer refuses for that (its own predicate says which) are unrolled into per-step ops.
        .unrollGRUAndRNN { n, g in MILOpWriters.recurrentCellRefusal(n, constant: { g.constants[$0] }) != nil },
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
