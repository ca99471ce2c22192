import ShrinkwrapIR

extension ExecutionPlanner {
    // MARK: 9. one-hot matrix products

    /// MatMul(Cast(Equal(Expand(r, s), iota) → float32), W): a one-hot encoding of integer indices
    /// times a constant K × N matrix, where `iota` is a constant 0 ..< K along its last axis (the
    /// same along the others), becomes one `OneHotMatMul` node that looks the rows up (same bits:
    /// see there). The Expand is optional; the Equal, Cast and Expand values must have no other
    /// reader, and W must be finite (0 · ∞ would make the MatMul's whole column NaN).
    mutating func fuseOneHotMatMuls() {
        let r = readers()
        let graphOutputs = Set(graph.outputs.map(\.name))
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        func onlyReader(_ v: String) -> Node? {
            guard r[v] == 1, !graphOutputs.contains(v), let i = producer[v] else { return nil }
            return graph.nodes[i]
        }
        var replaced: [Int: Node] = [:]
        var removed = Set<Int>()
        for (mi, mm) in graph.nodes.enumerated() where mm.opType == "MatMul" && mm.inputs.count == 2 && mm.outputs.count == 1 {
            guard let cast = onlyReader(mm.inputs[0]), cast.opType == "Cast", case .int(DType.float32.onnxDataType)? = cast.attributes["to"],
                  let equal = onlyReader(cast.inputs[0]), equal.opType == "Equal", equal.inputs.count == 2,
                  let w = floatConstant(mm.inputs[1]), w.rank == 2, let wf = w.floats, wf.allSatisfy(\.isFinite)
            else { continue }
            let k = w.shape[0]
            guard let side = (0..<2).first(where: { isIota(equal.inputs[$0], count: k) }) else { continue }
            var indices = equal.inputs[1 - side], shape = ""
            var chain = [cast, equal]
            if let expand = onlyReader(indices), expand.opType == "Expand", expand.inputs.count == 2 {
                indices = expand.inputs[0]
                shape = expand.inputs[1]
                chain.append(expand)
            }
            let node = Node(name: "\(mm.label) (one-hot lookup)", opType: OneHotMatMul.opType,
                            inputs: [indices, shape, equal.inputs[side], mm.inputs[1]], outputs: mm.outputs)
            let members = chain.compactMap { m in graph.nodes.firstIndex { $0.outputs == m.outputs } }
            guard members.count == chain.count, removed.isDisjoint(with: members) else { continue }
            replaced[mi] = node
            removed.formUnion(members)
        }
        if replaced.isEmpty { return }
        graph.nodes = graph.nodes.indices.compactMap { i in replaced[i] ?? (removed.contains(i) ? nil : graph.nodes[i]) }
    }

    /// Whether `name` is an integer constant whose last axis is 0 ..< count on every row.
    func isIota(_ name: String, count: Int) -> Bool {
        guard let t = graph.constant(named: name)?.encoding.decoded(), t.dtype != .bool, let v = t.ints,
              t.shape.last == count, count > 0 else { return false }
        for (i, x) in v.enumerated() where x != Int64(i % count) { return false }
        return true
    }
}
