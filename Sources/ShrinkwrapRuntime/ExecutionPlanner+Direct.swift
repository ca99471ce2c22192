import ShrinkwrapIR

extension ExecutionPlanner {
    // MARK: 8. Direct-conv filters

    /// When the kernels run at the AVX-512 level (`SIMDKernels.level` at load), Convs with one or two
    /// spatial dims, constant float32 filters and at most 1024 taps — all but depthwise ones, whatever
    /// their stride, dilation or groups — get their filters repacked for sk_conv_direct once, at load
    /// (input 5, marked by `NNKernels.directAttribute`). That kernel keeps 16 to 64 filters in the lanes
    /// of its accumulators and broadcasts the input, so it needs neither im2col nor OpenBLAS's packing on
    /// every call, and it runs at the FMA units' peak (225–267 GFLOPS on one Zen 5 core for nudenet's
    /// 3 × 3 convs, against 117 for im2col + OpenBLAS). The Conv kernel packs the filters itself when
    /// the planner did not (`NNKernels.directFilters`), so this pass changes no bits, only the time.
    ///
    /// The Winograd pass after this one adds its filters to 1-D ones only: Winograd along one axis
    /// (magika's 256 → 512 5-tap conv: 8 products per 4 outputs instead of 20) stays ahead, 2.0 against
    /// 2.8 ms on one Zen 5 core; the Conv takes it whenever its shapes make it pay (`WinogradPlan.pays`),
    /// else the direct kernel (silero-vad's 4-wide 129 → 128 conv). In 2-D, F(4×4, 3×3) lost everywhere
    /// measured (64–512 channels, 10 × 10 to 40 × 40 planes: 1.0–1.6× the direct time).
    mutating func useDirectFilters() {
        guard SIMDKernels.level == SIMDKernels.avx512 else { return }
        for i in graph.nodes.indices where graph.nodes[i].opType == "Conv" {
            let n = graph.nodes[i]
            guard n.outputs.count == 1, n.inputs.count >= 2, n.inputs.count <= 4, n.attributes[NNKernels.directAttribute] == nil,
                  let w = floatConstant(n.inputs[1]), let wf = w.floats, w.rank == 3 || w.rank == 4 else { continue }
            var group = 1
            if case .int(let g)? = n.attributes["group"] { group = g }
            let filters = w.shape[0], perFilter = w.shape.dropFirst().reduce(1, *), taps = perFilter / max(w.shape[1], 1)
            guard group >= 1, filters % group == 0, filters > 0, perFilter > 0, taps <= 1024,
                  !(w.shape[1] == 1 && group > 1),  // depthwise: its own kernels
                  filters * perFilter <= Self.directLimit else { continue }
            let packed = NNKernels.directPacked(wf, groups: group, filtersPerGroup: filters / group, rows: perFilter)
            let name = freshName("\(n.inputs[1])_direct")
            graph.setConstant(Constant(name: name, tensor: Tensor(packed, shape: [packed.count])))
            var conv = n
            while conv.inputs.count < 5 { conv.inputs.append("") }
            conv.inputs.append(name)
            conv.attributes[NNKernels.directAttribute] = .int(1)
            graph.nodes[i] = conv
        }
    }

    /// Whether Conv `n` (filters of rank `rank`) has strides and dilations of 1.
    static func unitStridesAndDilations(_ n: Node, rank: Int) -> Bool {
        let ones = [Int](repeating: 1, count: rank - 2)
        if case .ints(let s)? = n.attributes["strides"], s != ones { return false }
        if case .ints(let d)? = n.attributes["dilations"], d != ones { return false }
        return true
    }

    /// Largest filter tensor repacked for one Conv (elements): 64 Mi floats, 256 MiB.
    static let directLimit = 1 << 26
}
