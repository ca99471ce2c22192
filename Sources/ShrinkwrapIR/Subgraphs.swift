/// Subgraphs (If's branches, Loop's body) and the values they read from the
/// graphs around them.
///
/// A subgraph is a `Graph` held in a node attribute (`Attribute.graph`). Its
/// nodes may read values of any enclosing graph by name, as ONNX allows: those
/// names are the subgraph's *captures*. For ordering, liveness and dead-node
/// removal a node with subgraphs reads its own inputs plus its subgraphs'
/// captures (`Node.readNames`); every part of Shrinkwrap that asks "who reads
/// this value" asks that.
extension Node {
    /// The node's subgraph attributes, by attribute name in sorted order.
    public var subgraphs: [(name: String, graph: Graph)] {
        attributes.keys.sorted().compactMap { key in
            if case .graph(let g)? = attributes[key] { return (key, g) }
            return nil
        }
    }

    public var hasSubgraphs: Bool { attributes.values.contains { if case .graph = $0 { return true } else { return false } } }

    /// Values of enclosing graphs the node's subgraphs read, sorted (none for a node without subgraphs).
    public var capturedNames: [String] {
        guard hasSubgraphs else { return [] }
        var names = Set<String>()
        for (_, g) in subgraphs { names.formUnion(g.capturedNames) }
        return names.sorted()
    }

    /// Every value the node reads: its present inputs, then its subgraphs' captures.
    public var readNames: [String] {
        let own = inputs.filter { !$0.isEmpty }
        guard hasSubgraphs else { return own }
        return own + capturedNames.filter { !own.contains($0) }
    }
}

extension Graph {
    /// Names this graph itself defines: inputs, constants and node outputs.
    public var definedNames: Set<String> {
        var d = Set(inputs.map(\.name))
        for c in constants { d.insert(c.name) }
        for n in nodes { for o in n.outputs where !o.isEmpty { d.insert(o) } }
        return d
    }

    /// Names this graph reads but does not define (values of the enclosing
    /// graphs, for a subgraph), nested subgraphs' captures included; sorted.
    public var capturedNames: [String] {
        let defined = definedNames
        var out = Set<String>()
        for n in nodes { for i in n.readNames where !defined.contains(i) { out.insert(i) } }
        for o in outputs where !defined.contains(o.name) { out.insert(o.name) }
        return out.sorted()
    }

    /// Every name used anywhere in the graph and its subgraphs: values, node names,
    /// constants, inputs and outputs (what a fresh name must avoid).
    public var allNames: Set<String> {
        var names = Set<String>()
        names.formUnion(inputs.map(\.name))
        names.formUnion(outputs.map(\.name))
        names.formUnion(constants.map(\.name))
        for n in nodes {
            names.insert(n.name)
            names.formUnion(n.inputs)
            names.formUnion(n.outputs)
            for (_, g) in n.subgraphs { names.formUnion(g.allNames) }
        }
        return names
    }

    /// Whether any node, at any depth, has a subgraph.
    public var hasControlFlow: Bool { nodes.contains { $0.hasSubgraphs } }

    /// Every subgraph at any depth, depth first.
    public var allSubgraphs: [Graph] {
        nodes.flatMap { n in n.subgraphs.flatMap { [$0.graph] + $0.graph.allSubgraphs } }
    }

    /// Every node of the graph and of its subgraphs, depth first (subgraph nodes after their owner).
    public var allNodes: [Node] {
        var out: [Node] = []
        for n in nodes {
            out.append(n)
            for (_, g) in n.subgraphs { out += g.allNodes }
        }
        return out
    }

    /// The graph with `map` applied to every reference to a name it does not
    /// define itself (node inputs, outputs that are captures), at every depth.
    /// Renames an enclosing graph's values inside a subgraph.
    public func renamingCaptures(_ map: [String: String]) -> Graph {
        let own = definedNames
        let outer = map.filter { !own.contains($0.key) }
        if outer.isEmpty { return self }
        var g = self
        for k in g.nodes.indices {
            g.nodes[k].inputs = g.nodes[k].inputs.map { outer[$0] ?? $0 }
            for (key, sub) in g.nodes[k].subgraphs { g.nodes[k].attributes[key] = .graph(sub.renamingCaptures(outer)) }
        }
        for k in g.outputs.indices { if let r = outer[g.outputs[k].name] { g.outputs[k].name = r } }
        return g
    }

    /// Checks every subgraph of `node` (recursively): each is valid, sorted, and reads
    /// only its own values or those of `scope` (what the enclosing graphs define).
    func validatedSubgraphs(of node: Node, scope: Set<String>) throws -> Node {
        guard node.hasSubgraphs else { return node }
        var n = node
        for (key, sub) in node.subgraphs {
            do {
                n.attributes[key] = .graph(try sub.validatedAndSorted(outerScope: scope))
            } catch let e as GraphError {
                throw GraphError.inSubgraph(node: node.label, attribute: key, e.description)
            }
        }
        return n
    }
}

extension Graph {
    /// Whether `v` is absent (ONNX's meaning of a missing condition: true) or
    /// a constant of this graph that is true everywhere.
    public func isAlwaysTrue(_ v: String?) -> Bool {
        guard let v, !v.isEmpty else { return true }
        guard let c = constant(named: v) else { return false }
        return c.encoding.decoded().doubles.allSatisfy { $0 != 0 }
    }
}

extension Node {
    /// For an ONNX Loop in `graph` with `body`: whether its condition can
    /// ever stop it (its initial condition or the body's condition output is
    /// not always true). When not, only the trip count ends the loop.
    public func loopNeedsCondition(in graph: Graph, body: Graph) -> Bool {
        guard body.inputs.count > 1, let condOut = body.outputs.first?.name else { return true }
        return !(graph.isAlwaysTrue(input(1)) && (condOut == body.inputs[1].name || body.isAlwaysTrue(condOut)))
    }
}
