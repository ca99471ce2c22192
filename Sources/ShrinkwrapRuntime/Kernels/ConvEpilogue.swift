import CKernels
import ShrinkwrapIR

/// What a Conv does to each output block while it is still in cache: add the
/// bias, then — when the interpreter's planner fused them into the Conv — a
/// BatchNormalization's per-channel y · a + b and an activation
/// (`FusedActivation`). The arithmetic is that of the separate kernels, in the
/// same order, so a fused float32 Conv gives the same bits as the unfused
/// nodes. (Folding the BatchNormalization into the weights instead rounds
/// every weight once more, an error shared by all positions of a channel: on
/// ppocr's real inputs it doubled the distance to a float64 evaluation.)
struct ConvEpilogue {
    let bias: [Float]?
    let scale: [Float]?
    let shift: [Float]?
    let activations: [FusedActivation]
    /// A residual the planner fused (`Add(conv, r)`), element for element of the output:
    /// `residual[k]` is added to `output[k]` after the BatchNormalization, before the activation.
    var residual: UnsafePointer<Float>?
    var output: UnsafeMutablePointer<Float>?

    init(bias: [Float]?, scale: [Float]?, shift: [Float]?, activations: [FusedActivation]) {
        self.bias = bias; self.scale = scale; self.shift = shift; self.activations = activations
    }

    /// The epilogue of the Conv `c` computes (its planner attributes read and checked against `channels`).
    init(_ c: KernelContext, bias: [Float]?, channels: Int) throws {
        let scale = try c.floats(NNKernels.fusedScaleAttribute), shift = try c.floats(NNKernels.fusedShiftAttribute)
        guard (scale == nil) == (shift == nil), scale.map({ $0.count == channels }) ?? true, shift.map({ $0.count == channels }) ?? true else {
            throw c.badAttribute(NNKernels.fusedScaleAttribute, "needs a scale and a shift of \(channels) values each")
        }
        self.init(bias: bias, scale: scale, shift: shift, activations: try FusedActivation.list(c, channels: channels))
    }

    /// This epilogue without its activations (returned apart), for a result whose residual add and
    /// activations run after it as their own kernels.
    func withoutActivations() -> (ConvEpilogue, [FusedActivation]) {
        (ConvEpilogue(bias: bias, scale: scale, shift: shift, activations: []), activations)
    }

    /// The same epilogue adding `residual` (laid out like `output`) to the output it writes.
    func adding(_ residual: UnsafePointer<Float>, to output: UnsafeMutablePointer<Float>) -> ConvEpilogue {
        var e = self
        e.residual = residual
        e.output = output
        return e
    }

    /// Applies it to `count` values of output channel `channel`: bias, BatchNormalization, residual
    /// (and a lone Relu) in one pass on CKernels' vector loop, then any other activation.
    @inline(__always)
    func apply(_ p: UnsafeMutablePointer<Float>, count: Int, channel: Int, skipBias: Bool = false) {
        let fusedRelu = activations == [.relu] && residual == nil
        var flags: Int32 = fusedRelu ? Int32(SK_EPILOGUE_RELU) : 0
        var b: Float = 0, a: Float = 1, s: Float = 0
        if !skipBias, let bias { b = bias[channel]; flags |= Int32(SK_EPILOGUE_BIAS) }
        if let scale, let shift { a = scale[channel]; s = shift[channel]; flags |= Int32(SK_EPILOGUE_AFFINE) }
        let r = residual.flatMap { r in output.map { r + (p - $0) } }
        if flags != 0 || r != nil { sk_conv_epilogue(SIMDKernels.level, p, count, b, a, s, flags, r) }
        if !fusedRelu { for a in activations { a.apply(p, count: count, channel: channel) } }
    }

    /// The part after the bias, on output planes `planes` (each `plane` long) the bias is already in;
    /// plane k belongs to channel k mod `channels`.
    func afterBias(_ y: UnsafeMutablePointer<Float>, planes: Range<Int>, plane: Int, channels: Int) {
        guard scale != nil || !activations.isEmpty || residual != nil else { return }
        for k in planes { apply(y + k * plane, count: plane, channel: k % max(channels, 1), skipBias: true) }
    }
}
