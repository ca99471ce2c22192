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
    let activation: FusedActivation?

    init(bias: [Float]?, scale: [Float]?, shift: [Float]?, activation: FusedActivation?) {
        self.bias = bias; self.scale = scale; self.shift = shift; self.activation = activation
    }

    /// The epilogue of the Conv `c` computes (its planner attributes read and checked against `channels`).
    init(_ c: KernelContext, bias: [Float]?, channels: Int) throws {
        let scale = try c.floats(NNKernels.fusedScaleAttribute), shift = try c.floats(NNKernels.fusedShiftAttribute)
        guard (scale == nil) == (shift == nil), scale.map({ $0.count == channels }) ?? true, shift.map({ $0.count == channels }) ?? true else {
            throw c.badAttribute(NNKernels.fusedScaleAttribute, "needs a scale and a shift of \(channels) values each")
        }
        self.init(bias: bias, scale: scale, shift: shift, activation: try FusedActivation(c, channels: channels))
    }

    /// This epilogue without its activation, and the activation, when the activation must wait
    /// for the result's rounding to `dtype` (float16 values round before the separate node runs).
    func splitForRounding(_ dtype: DType) -> (ConvEpilogue, FusedActivation?) {
        guard dtype != .float32, let activation, !activation.commutesWithRounding else { return (self, nil) }
        return (ConvEpilogue(bias: bias, scale: scale, shift: shift, activation: nil), activation)
    }

    /// Applies it to `count` values of output channel `channel`, in one pass (two with an
    /// activation other than Relu).
    @inline(__always)
    func apply(_ p: UnsafeMutablePointer<Float>, count: Int, channel: Int) {
        let fusedRelu = activation == .relu, relu = ActivationKernels.ReluF()
        let b = bias?[channel] ?? 0
        if let scale, let shift {
            let a = scale[channel], s = shift[channel]
            switch (bias != nil, fusedRelu) {
            case (true, true): for i in 0..<count { p[i] = relu((p[i] + b) * a + s) }
            case (true, false): for i in 0..<count { p[i] = (p[i] + b) * a + s }
            case (false, true): for i in 0..<count { p[i] = relu(p[i] * a + s) }
            case (false, false): for i in 0..<count { p[i] = p[i] * a + s }
            }
        } else if bias != nil {
            if fusedRelu {
                for i in 0..<count { p[i] = relu(p[i] + b) }
            } else {
                for i in 0..<count { p[i] += b }
            }
        } else if fusedRelu {
            for i in 0..<count { p[i] = relu(p[i]) }
        }
        if let activation, !fusedRelu { activation.apply(p, count: count, channel: channel) }
    }

    /// The part after the bias, on output planes `planes` (each `plane` long) the bias is already in;
    /// plane k belongs to channel k mod `channels`.
    func afterBias(_ y: UnsafeMutablePointer<Float>, planes: Range<Int>, plane: Int, channels: Int) {
        guard scale != nil || activation != nil else { return }
        let rest = ConvEpilogue(bias: nil, scale: scale, shift: shift, activation: activation)
        for k in planes { rest.apply(y + k * plane, count: plane, channel: k % max(channels, 1)) }
    }
}
