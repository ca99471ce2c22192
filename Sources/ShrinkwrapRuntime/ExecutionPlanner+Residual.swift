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
}
