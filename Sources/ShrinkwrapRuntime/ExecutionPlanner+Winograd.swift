import ShrinkwrapIR

extension ExecutionPlanner {
    // MARK: 8. Winograd filters

    /// Stride-1, undilated, ungrouped Convs with constant float32 filters of 3, 5 or 7 taps along
    /// one axis (1-D convolutions, magika's 5-tap one) or 3 × 3 get their filters in the Winograd
    /// domain once, at load (`NNKernels.winogradFilters`: input 4, marked by
    /// `NNKernels.winogradAttribute`). The Conv kernel then multiplies α small GEMMs instead of the
    /// im2col one — F(4, 5): 8 products per 4 outputs instead of 20; F(4×4, 3×3): 36 per 16 instead
    /// of 144 — when the call's shapes make it pay, else it takes its other paths with the original
    /// filters. Values change by rounding only (the transforms are exact in real arithmetic; the
    /// filters' are computed in double precision): a few float32 ulps of the sums.
    ///
    /// Convs with fewer than 64 input or output channels (128 along one axis, where the transforms
    /// save 2–2.5× the products rather than 4×) keep the direct paths: their α GEMMs are too small
    /// for the transforms to pay (oww-embedding's 24–72-channel [3, 1] and [1, 3] convs took
    /// 1.4–4.4 times as long — its 72-channel ones on 30 × 8 planes 0.39 against 0.09 ms —, nudenet's
    /// 16- and 32-channel 3 × 3 ones up to 1.14; its 64-channel ones at 40 × 40 0.73, magika's
    /// 256 → 512 5-tap one 0.47).
    mutating func useWinogradFilters() {
        for i in graph.nodes.indices where graph.nodes[i].opType == "Conv" {
            let n = graph.nodes[i]
            // After the direct pass (input 5 set, input 4 left empty): 2-D Convs stay on the direct kernel.
            let direct = n.attributes[NNKernels.directAttribute] != nil
            guard n.outputs.count == 1, n.inputs.count >= 2, n.inputs.count <= (direct ? 6 : 4), n.attributes[NNKernels.winogradAttribute] == nil,
                  let w = floatConstant(n.inputs[1]), let wf = w.floats, w.rank == 3 || w.rank == 4 else { continue }
            if case .int(let g)? = n.attributes["group"], g != 1 { continue }
            guard Self.unitStridesAndDilations(n, rank: w.rank) else { continue }
            let filters = w.shape[0], channels = w.shape[1]
            let kh = w.rank == 4 ? w.shape[2] : 1, kw = w.shape[w.rank - 1]
            if direct && kh != 1 && kw != 1 { continue }
            let least = kh == 1 || kw == 1 ? 128 : 64
            guard filters >= least, channels >= least, let axes = NNKernels.winogradAxes(kh: kh, kw: kw),
                  axes.h.alpha * axes.w.alpha * filters * channels <= Self.winogradLimit,
                  let u = NNKernels.winogradFilters(wf, filters: filters, channels: channels, kh: kh, kw: kw) else { continue }
            let name = freshName("\(n.inputs[1])_winograd")
            graph.setConstant(Constant(name: name, tensor: u))
            var conv = n
            while conv.inputs.count < 5 { conv.inputs.append("") }
            conv.inputs[4] = name
            conv.attributes[NNKernels.winogradAttribute] = .ints([kh, kw])
            graph.nodes[i] = conv
        }
    }

    /// Largest Winograd filter tensor made for one Conv (elements): 64 Mi floats, 256 MiB.
    static let winogradLimit = 1 << 26
}
