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
}
