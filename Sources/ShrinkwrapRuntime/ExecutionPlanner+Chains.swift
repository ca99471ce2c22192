import ShrinkwrapIR

extension ExecutionPlanner {
    /// Kernels for the node types only the planner writes.
    static let internalKernels: [String: Kernel] = [ElementwiseChain.opType: ElementwiseChain.kernel,
                                                     OneHotMatMul.opType: OneHotMatMul.kernel]

    // MARK: 7. elementwise chains

    /// Runs of float elementwise nodes (`ElementwiseChain.accepts`) in which every value but the
    /// last is read only by the next node of the run become one `ElementwiseChain` node, placed
    /// where the run's last node was: exporters' spelled-out HardSwish (Add, Clip, Mul, Div), SiLU
    /// (Sigmoid, Mul), GELU and LayerNorm tails then make one pass over memory instead of one per
    /// node. Values keep their bits (the chain applies each node's own element function).
    mutating func fuseElementwiseChains() {
        let r = readers()
        let graphOutputs = Set(graph.outputs.map(\.name))
        var members: [[Int]] = []  // node indices per chain
        var chainOfTail: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() where ElementwiseChain.accepts(n) && ElementwiseChain.parameters(n) != nil {
            // Join the chain whose last value this node reads, when nothing else reads that value.
            let joined = n.inputs.first { v in
                guard let ci = chainOfTail[v], !graphOutputs.contains(v) else { return false }
                return r[v] == n.inputs.filter { $0 == v }.count && ci >= 0
            }
            if let v = joined, let ci = chainOfTail[v] {
                chainOfTail[v] = nil
                members[ci].append(i)
                chainOfTail[n.outputs[0]] = ci
            } else {
                chainOfTail[n.outputs[0]] = members.count
                members.append([i])
            }
        }
        var replaced: [Int: Node] = [:]  // last member's index → the chain node
        var removed = Set<Int>()
        for chain in members where chain.count >= 2 {
            guard let last = chain.last, let node = chainNode(chain.map { graph.nodes[$0] }) else { continue }
            replaced[last] = node
            removed.formUnion(chain)
        }
        if replaced.isEmpty { return }
        graph.nodes = graph.nodes.indices.compactMap { i in replaced[i] ?? (removed.contains(i) ? nil : graph.nodes[i]) }
    }

    /// The chain node computing `nodes` (in order, each after the first reading the one before).
    func chainNode(_ nodes: [Node]) -> Node? {
        var inputs: [String] = []
        var number: [String: Int] = [:]
        var ops: [String] = [], operands: [Int] = [], parameters: [Float] = []
        for n in nodes {
            for v in n.inputs where !v.isEmpty && number[v] == nil && !nodes.contains(where: { $0.outputs[0] == v }) {
                number[v] = inputs.count
                inputs.append(v)
            }
        }
        for (k, n) in nodes.enumerated() {
            guard let p = ElementwiseChain.parameters(n) else { return nil }
            var refs = n.inputs.map { $0.isEmpty ? -1 : (number[$0] ?? -2) }
            guard !refs.contains(-2) else { return nil }
            refs += [Int](repeating: -1, count: 3 - refs.count)
            ops.append(n.opType)
            operands += refs
            parameters += p
            number[n.outputs[0]] = inputs.count + k
        }
        guard let last = nodes.last else { return nil }
        let label = nodes.map(\.opType).joined(separator: "+")
        return Node(name: "\(last.label) (\(label))", opType: ElementwiseChain.opType, inputs: inputs, outputs: last.outputs,
                    attributes: [ElementwiseChain.opsAttribute: .strings(ops), ElementwiseChain.operandsAttribute: .ints(operands),
                                 ElementwiseChain.parametersAttribute: .floats(parameters)])
    }
}
