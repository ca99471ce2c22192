import ONNXSchema
import ShrinkwrapIR

// Reading If and Loop: their subgraphs become `Attribute.graph` values, built
// by a nested GraphBuilder that shares the importer's name allocator, and
// their structure (branch outputs, body inputs and outputs) is checked here
// so that the interpreter and the exporters can rely on it.

extension GraphBuilder {
    /// Adds every op of `g` and its subgraphs that has no translator, once each, in order.
    static func collectUnsupported(_ g: Onnx_GraphProto, into list: inout [String]) {
        for p in g.node {
            let domain = p.domain == "ai.onnx" ? "" : p.domain
            if !domain.isEmpty || ONNXOps.translators[p.opType] == nil {
                let key = domain.isEmpty ? p.opType : "\(domain).\(p.opType)"
                if !list.contains(key) { list.append(key) }
            }
            for a in p.attribute {
                if a.hasG { collectUnsupported(a.g, into: &list) }
                for sub in a.graphs { collectUnsupported(sub, into: &list) }
            }
        }
    }

    /// Reserves every value and initializer name of `g` and its subgraphs, so
    /// that names the importer invents collide with none of them at any depth.
    static func reserveNames(_ g: Onnx_GraphProto, in names: inout NameAllocator) {
        names.reserve(g.initializer.map(\.name))
        names.reserve(g.input.map(\.name))
        names.reserve(g.output.map(\.name))
        for n in g.node {
            names.reserve(n.output)
            names.reserve(n.input)
            for a in n.attribute where a.hasG { reserveNames(a.g, in: &names) }
        }
    }

    /// A subgraph attribute as a `Graph`; its initializers become its own constants.
    mutating func subgraph(_ p: Onnx_GraphProto, place: String) throws -> Graph {
        var sub = GraphBuilder(file: file, opset: opset, tensors: tensors)
        sub.names = names
        sub.scope = scope + place + ": "
        let g = try sub.buildGraph(p)
        names = sub.names
        return g
    }
}

extension ONNXOps {
    /// If(cond) with then_branch / else_branch: each branch takes no inputs and
    /// makes as many outputs as the node has.
    static func ifNode(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        guard n.inputs.count == 1, !n.inputs[0].isEmpty else {
            throw ImportError.malformed(b.location(place), reason: "If needs exactly one condition input, has \(n.inputs.count)")
        }
        for key in ["then_branch", "else_branch"] {
            guard case .graph(let g)? = n.attributes[key] else {
                throw ImportError.malformed(b.location(place), reason: "If has no '\(key)' subgraph")
            }
            guard g.outputs.count == n.outputs.count else {
                throw ImportError.malformed(b.location(place), reason: "If's \(key) has \(g.outputs.count) outputs, the node \(n.outputs.count)")
            }
            guard g.inputs.isEmpty else {
                throw ImportError.malformed(b.location(place), reason: "If's \(key) declares \(g.inputs.count) inputs; branches take none")
            }
        }
        try checkOnlySubgraphAttributes(b, n, place, ["then_branch", "else_branch"])
        b.emit(n)
    }

    /// Loop(M, cond, v_initial × N) with body (iteration, cond, v × N) → (cond, v × N, scan × K);
    /// the node's outputs are v_final × N then the K scans.
    static func loop(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        guard case .graph(let body)? = n.attributes["body"] else {
            throw ImportError.malformed(b.location(place), reason: "Loop has no 'body' subgraph")
        }
        guard n.inputs.count >= 2 else {
            throw ImportError.malformed(b.location(place), reason: "Loop needs inputs M and cond (either may be empty), has \(n.inputs.count)")
        }
        let carried = n.inputs.count - 2
        guard body.inputs.count == carried + 2 else {
            throw ImportError.malformed(b.location(place),
                                        reason: "Loop body has \(body.inputs.count) inputs; \(carried) loop-carried values need \(carried + 2)")
        }
        guard body.outputs.count >= carried + 1, n.outputs.count == body.outputs.count - 1 else {
            throw ImportError.malformed(b.location(place),
                                        reason: "Loop body has \(body.outputs.count) outputs for \(carried) loop-carried values and \(n.outputs.count) node outputs (needs 1 + carried + scans = 1 + node outputs)")
        }
        for (k, v) in n.inputs.dropFirst(2).enumerated() where v.isEmpty {
            throw ImportError.malformed(b.location(place), reason: "Loop's loop-carried input \(k) is empty")
        }
        try checkOnlySubgraphAttributes(b, n, place, ["body"])
        b.emit(n)
    }

    private static func checkOnlySubgraphAttributes(_ b: GraphBuilder, _ n: Node, _ place: String, _ allowed: Set<String>) throws {
        if let extra = n.attributes.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw ImportError.unsupported(b.location(place), what: "\(n.opType) attribute '\(extra)'")
        }
    }
}
