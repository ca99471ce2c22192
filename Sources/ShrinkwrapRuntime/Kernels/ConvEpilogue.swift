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

    /// This epilogue after the bias as CKernels' per-lane epilogue (sk_depthwise_lanes runs it on the
    /// accumulators: the same bits as `apply`), given to `body`; nil when it holds a residual or an
    /// activation that epilogue does not have.
    func withLaneEpilogue<R>(_ body: (UnsafePointer<sk_lane_epilogue>) -> R) -> R? {
        guard residual == nil, activations.count <= Int(SK_LANE_EPILOGUE_MAX) else { return nil }
        var ops: [Int32] = [], p0: [Float] = [], p1: [Float] = [], slopeStarts: [Int?] = [], slopes: [Float] = []
        for a in activations {
            var op: Int32, x: Float = 0, y: Float = 0, start: Int? = nil
            switch a {
            case .relu: op = Int32(SK_ACT_RELU)
            case .clip(let lo, let hi): (op, x, y) = (Int32(SK_ACT_CLIP), lo, hi)
            case .leakyRelu(let alpha): (op, x) = (Int32(SK_ACT_LEAKY_RELU), alpha)
            case .prelu(let k):
                op = Int32(SK_ACT_PRELU)
                if k.count == 1 { x = k[0] } else { start = slopes.count; slopes += k }
            case .vector(.hardSwish): op = Int32(SK_ACT_HARDSWISH)
            case .vector(.hardSigmoid(let alpha, let beta)): (op, x, y) = (Int32(SK_ACT_HARDSIGMOID), alpha, beta)
            case .max(let v, let first): (op, x, y) = (Int32(SK_ACT_MAX), v, first ? 1 : 0)
            case .min(let v, let first): (op, x, y) = (Int32(SK_ACT_MIN), v, first ? 1 : 0)
            case .hardSwishOps: op = Int32(SK_ACT_HARDSWISH_OPS)
            case .arithmetic(let kind, let v, let first):
                let codes: [FusedActivation.Arithmetic: Int32] = [.add: Int32(SK_ACT_ADD), .sub: Int32(SK_ACT_SUB),
                                                                  .mul: Int32(SK_ACT_MUL), .div: Int32(SK_ACT_DIV)]
                (op, x, y) = (codes[kind] ?? 0, v, first ? 1 : 0)
            default: return nil
            }
            ops.append(op); p0.append(x); p1.append(y); slopeStarts.append(start)
        }
        return (scale ?? []).withUnsafeBufferPointer { sb in
            (shift ?? []).withUnsafeBufferPointer { hb in
                slopes.withUnsafeBufferPointer { kb in
                    var e = sk_lane_epilogue()
                    if scale != nil, shift != nil { e.scale = sb.baseAddress; e.shift = hb.baseAddress }
                    e.count = Int32(ops.count)
                    withUnsafeMutableBytes(of: &e.op) { $0.bindMemory(to: Int32.self).update(fromContentsOf: ops) }
                    withUnsafeMutableBytes(of: &e.p0) { $0.bindMemory(to: Float.self).update(fromContentsOf: p0) }
                    withUnsafeMutableBytes(of: &e.p1) { $0.bindMemory(to: Float.self).update(fromContentsOf: p1) }
                    withUnsafeMutableBytes(of: &e.slopes) { raw in
                        let out = raw.bindMemory(to: UnsafePointer<Float>?.self)
                        for (i, start) in slopeStarts.enumerated() { out[i] = start.flatMap { s in kb.baseAddress.map { $0 + s } } }
                    }
                    return withUnsafePointer(to: &e) { body($0) }
                }
            }
        }
    }
}
