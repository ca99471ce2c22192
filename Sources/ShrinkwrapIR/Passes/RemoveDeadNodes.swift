extension LoweringPass {
    /// Drops nodes none of whose outputs is read or is a graph output.
    public static let removeDeadNodes = LoweringPass("remove-dead-nodes", "drops nodes whose outputs nobody reads") { g in
        g.removeDeadNodes()
    }
}

extension LoweringGraph {
    /// Drops nodes none of whose outputs is read or is a graph output, until none is left.
    public mutating func removeDeadNodes() {
        var changed = true
        while changed {
            var read = outputs
            for n in nodes { read.formUnion(n.readNames) }  // subgraph captures count as reads
            let before = nodes.count
            nodes.removeAll { n in !n.outputs.contains { read.contains($0) } }
            changed = nodes.count != before
        }
    }
}
