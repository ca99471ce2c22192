extension Array where Element == Node {
    /// The nodes with Transpose pairs that undo each other removed (NCHW → NHWC → NCHW
    /// between two layout-sensitive ops), when the middle value has no other reader.
    /// What the channels-last importers (TFLite, Keras) do after wrapping each
    /// layout-sensitive op in Transposes; a value in `keeping` (a graph output) stays,
    /// made by an Identity.
    public func cancellingInverseTransposes(keeping keep: Set<String>) -> [Node] {
        var nodes = self
        var changed = true
        while changed {
            changed = false
            var readers: [String: Int] = [:]
            var producer: [String: Int] = [:]
            for (k, n) in nodes.enumerated() {
                for i in n.inputs { readers[i, default: 0] += 1 }
                for o in n.outputs { producer[o] = k }
            }
            for (k, n) in nodes.enumerated() where n.opType == "Transpose" {
                guard let mid = n.inputs.first, let p = producer[mid], nodes[p].opType == "Transpose",
                      readers[mid] == 1, !keep.contains(mid),
                      case .ints(let a)? = nodes[p].attributes["perm"], case .ints(let b)? = n.attributes["perm"],
                      a.count == b.count, b.indices.allSatisfy({ b[$0] >= 0 && b[$0] < a.count && a[b[$0]] == $0 }),
                      let source = nodes[p].inputs.first, let out = n.outputs.first else { continue }
                // out == source: rename readers of `out` to `source`, unless `out` is a graph output.
                if keep.contains(out) {
                    nodes[k] = Node(name: n.name, opType: "Identity", inputs: [source], outputs: [out])
                    nodes.remove(at: p)
                } else {
                    for j in nodes.indices { nodes[j].inputs = nodes[j].inputs.map { $0 == out ? source : $0 } }
                    nodes.remove(at: Swift.max(k, p))
                    nodes.remove(at: Swift.min(k, p))
                }
                changed = true
                break
            }
        }
        return nodes
    }
}
