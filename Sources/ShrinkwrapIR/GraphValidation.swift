extension Graph {
    /// Checks that every node input is defined, that no value is defined twice
    /// and that the outputs are produced; reorders nodes topologically (stable:
    /// nodes already in order keep their order) and reports cycles. Subgraphs
    /// are checked too; a node with subgraphs depends on what they capture.
    public func validatedAndSorted() throws -> Graph { try validatedAndSorted(outerScope: []) }

    /// As `validatedAndSorted()`, for a subgraph that may also read `outerScope`.
    public func validatedAndSorted(outerScope: Set<String>) throws -> Graph {
        var defined = Set<String>(inputs.map(\.name))
        for c in constants { defined.insert(c.name) }
        // Which node produces which value.
        var producer: [String: Int] = [:]
        for (i, n) in nodes.enumerated() {
            for o in n.outputs where !o.isEmpty {
                // A node output may not reuse an input's or a constant's name either: which
                // value a reader (or a shape table) would see under that name is ambiguous.
                if producer[o] != nil || defined.contains(o) {
                    throw GraphError.duplicateValue(value: o, node: n.label)
                }
                producer[o] = i
            }
        }
        // Dependencies.
        var indegree = [Int](repeating: 0, count: nodes.count)
        var users = [[Int]](repeating: [], count: nodes.count)
        for (i, n) in nodes.enumerated() {
            for inp in n.readNames {
                if let p = producer[inp] {
                    users[p].append(i)
                    indegree[i] += 1
                } else if !defined.contains(inp) && !outerScope.contains(inp) {
                    if !n.inputs.contains(inp), let (key, _) = n.subgraphs.first(where: { $0.graph.capturedNames.contains(inp) }) {
                        throw GraphError.inSubgraph(node: n.label, attribute: key, "reads undefined value '\(inp)'")
                    }
                    throw GraphError.undefinedValue(node: n.label, value: inp)
                }
            }
        }
        // Kahn's algorithm with a min-heap-free stable order: repeatedly take the
        // lowest-index ready node. Nodes in order are O(n) via a moving cursor.
        var ready = [Bool](repeating: false, count: nodes.count)
        var pending: [Int] = []  // sorted ascending
        for i in 0..<nodes.count where indegree[i] == 0 { ready[i] = true; pending.append(i) }
        var order: [Int] = []
        order.reserveCapacity(nodes.count)
        var done = [Bool](repeating: false, count: nodes.count)
        while !pending.isEmpty {
            let i = pending.removeFirst()
            done[i] = true
            order.append(i)
            for u in users[i] {
                indegree[u] -= 1
                if indegree[u] == 0 && !ready[u] {
                    ready[u] = true
                    // Insert keeping ascending order.
                    var lo = 0, hi = pending.count
                    while lo < hi { let m = (lo + hi) / 2; if pending[m] < u { lo = m + 1 } else { hi = m } }
                    pending.insert(u, at: lo)
                }
            }
        }
        if order.count != nodes.count {
            let stuck = (0..<nodes.count).filter { !done[$0] }.map { nodes[$0].label }
            throw GraphError.cycle(nodes: stuck)
        }
        for o in outputs where producer[o.name] == nil && !defined.contains(o.name) && !outerScope.contains(o.name) {
            throw GraphError.undefinedOutput(o.name)
        }
        var g = self
        if order != Array(0..<nodes.count) { g.nodes = order.map { nodes[$0] } }
        if g.hasControlFlow {
            let scope = outerScope.union(defined).union(producer.keys)
            for k in g.nodes.indices { g.nodes[k] = try g.validatedSubgraphs(of: g.nodes[k], scope: scope) }
        }
        return g
    }
}
