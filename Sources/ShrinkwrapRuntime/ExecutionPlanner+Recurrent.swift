import ShrinkwrapIR

extension ExecutionPlanner {
    // MARK: 9. Recurrent weights

    /// RNN, GRU and LSTM nodes with a constant R get it transposed once, at load (input 8, marked by
    /// `RecurrentKernels.transposedRAttribute`): each time step then multiplies h by Rᵀ as stored
    /// (`RecurrentKernels.transposedRecurrentWeights`, which transposes on every call otherwise).
    mutating func transposeRecurrentWeights() {
        for i in graph.nodes.indices where ["RNN", "GRU", "LSTM"].contains(graph.nodes[i].opType) {
            let n = graph.nodes[i]
            guard n.inputs.count >= 3, n.inputs.count <= 8, n.attributes[RecurrentKernels.transposedRAttribute] == nil,
                  let r = floatConstant(n.inputs[2]), let rv = r.floats, r.rank == 3 else { continue }
            let t = RecurrentKernels.transposed(rv, dirs: r.shape[0], rows: r.shape[1], columns: r.shape[2])
            let name = freshName("\(n.inputs[2])_transposed")
            graph.setConstant(Constant(name: name, tensor: Tensor(t, shape: [r.shape[0], r.shape[2], r.shape[1]])))
            var node = n
            while node.inputs.count < 8 { node.inputs.append("") }
            node.inputs.append(name)
            node.attributes[RecurrentKernels.transposedRAttribute] = .int(1)
            graph.nodes[i] = node
        }
    }
}
