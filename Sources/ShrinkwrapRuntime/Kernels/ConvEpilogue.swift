import ShrinkwrapIR

/// What a Conv does to each output block while it is still in cache: add the
/// bias, then — when the interpreter's planner fused them into the Conv — a
/// BatchNormalization's per-channel y · a + b and a Relu. The arithmetic is
/// that of the separate kernels, in the same order, so a fused Conv gives the
/// same bits as the unfused nodes. (Folding the BatchNormalization into the
/// weights instead rounds every weight once more, an error shared by all
/// positions of a channel: on ppocr's real inputs it doubled the distance to
/// a float64 evaluation.)
struct ConvEpilogue {
    let bias: [Float]?
    let scale: [Float]?
    let shift: [Float]?
    let relu: Bool

    init(bias: [Float]?, scale: [Float]?, shift: [Float]?, relu: Bool) {
        self.bias = bias; self.scale = scale; self.shift = shift; self.relu = relu
    }

    /// The epilogue of the Conv `c` computes (its planner attributes read and checked against `channels`).
    init(_ c: KernelContext, bias: [Float]?, channels: Int) throws {
        let scale = try c.floats(NNKernels.fusedScaleAttribute), shift = try c.floats(NNKernels.fusedShiftAttribute)
        guard (scale == nil) == (shift == nil), scale.map({ $0.count == channels }) ?? true, shift.map({ $0.count == channels }) ?? true else {
            throw c.badAttribute(NNKernels.fusedScaleAttribute, "needs a scale and a shift of \(channels) values each")
        }
        self.init(bias: bias, scale: scale, shift: shift,
                  relu: try c.string(NNKernels.fusedActivationAttribute, default: "") == "Relu")
    }

    /// Applies it to `count` values of output channel `channel`, in one pass.
    @inline(__always)
    func apply(_ p: UnsafeMutablePointer<Float>, count: Int, channel: Int) {
        let b = bias?[channel] ?? 0
        if let scale, let shift {
            let a = scale[channel], s = shift[channel]
            switch (bias != nil, relu) {
            case (true, true): for i in 0..<count { let v = (p[i] + b) * a + s; p[i] = v < 0 ? 0 : v }
            case (true, false): for i in 0..<count { p[i] = (p[i] + b) * a + s }
            case (false, true): for i in 0..<count { let v = p[i] * a + s; p[i] = v < 0 ? 0 : v }
            case (false, false): for i in 0..<count { p[i] = p[i] * a + s }
            }
        } else if bias != nil {
            if relu {
                for i in 0..<count { let v = p[i] + b; p[i] = v < 0 ? 0 : v }
            } else {
                for i in 0..<count { p[i] += b }
            }
        } else if relu {
            for i in 0..<count { let v = p[i]; p[i] = v < 0 ? 0 : v }
        }
    }

    /// The part after the bias, on a whole output of `batch` × channels planes the bias is already in.
    func afterBias(_ y: UnsafeMutablePointer<Float>, batch: Int, plane: Int) {
        let rest = ConvEpilogue(bias: nil, scale: scale, shift: shift, relu: relu)
        guard scale != nil || relu else { return }
        let channels = scale?.count ?? bias?.count ?? 0
        if channels == 0 {  // Relu only, channel count not needed
            rest.apply(y, count: batch * plane, channel: 0)
            return
        }
        for k in 0..<(batch * channels) { rest.apply(y + k * plane, count: plane, channel: k % channels) }
    }
}
