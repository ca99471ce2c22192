/// fold-constant-branches: an If whose condition is a constant is replaced by
/// the nodes of the branch it takes. The branch's values and constants join
/// the graph, renamed only where a name is already taken (NameAllocator,
/// suffixed); a branch output computed in the branch takes the If output's
/// name, any other (a captured value, a constant) is copied by an Identity.
///
/// Runs on a `Graph` rather than a `LoweringGraph`: it has to come before the
/// shape annotation of `ExportPreparation`, which alternates it with static
/// folding (an inlined branch can make more values static, and its own Ifs'
/// conditions constant). Formats without control flow (TFLite, Core ML) get
/// a model like silero-vad's once the input deciding the branch is pinned.
extension Graph {
    /// The graph with every If on a constant condition inlined (nested Ifs that
    /// become constant on the way too), and how many Ifs were folded.
    public func foldingConstantBranches() -> (graph: Graph, folded: Int) {
        var g = self
        var folded = 0
        var changed = true
        while changed {
            changed = false
            for k in g.nodes.indices where g.nodes[k].opType == "If" {
                guard let taken = g.constantCondition(of: g.nodes[k]) else { continue }
                guard case .graph(let branch)? = g.nodes[k].attributes[taken ? "then_branch" : "else_branch"],
                      branch.outputs.count == g.nodes[k].outputs.count, branch.inputs.isEmpty else { continue }
                g.inline(branch, replacing: k)
                folded += 1
                changed = true
                break  // indices moved: start over
            }
        }
        return (g, folded)
    }

    /// The value of an If's condition when it is a one-element constant.
    func constantCondition(of n: Node) -> Bool? {
        guard let c = n.input(0), let t = constant(named: c)?.encoding.decoded(), t.count == 1 else { return nil }
        return t.doubles[0] != 0
    }

    /// Replaces node `k` (an If) by `branch`'s nodes and constants.
    mutating func inline(_ branch: Graph, replacing k: Int) {
        let owner = nodes[k]
        // Names the rest of the graph uses (the If's own subgraphs left out): the branch keeps its
        // names unless they are among these.
        var rest = self
        rest.nodes[k].attributes = [:]
        var names = NameAllocator(.suffixed, taken: rest.allNames)
        let local = branch.definedNames
        let producedInBranch = Set(branch.nodes.flatMap(\.outputs))
        var map: [String: String] = [:]
        var copies: [(from: String, to: String)] = []
        for (out, target) in zip(branch.outputs.map(\.name), owner.outputs) where !target.isEmpty {
            if producedInBranch.contains(out) && map[out] == nil && !branch.constants.contains(where: { $0.name == out }) {
                map[out] = target
            } else {
                copies.append((out, target))
            }
        }
        for name in local.sorted() where map[name] == nil { map[name] = names.fresh(name) }
        for c in branch.constants { setConstant(Constant(name: map[c.name] ?? c.name, encoding: c.encoding)) }
        var inlined: [Node] = []
        for n in branch.nodes {
            var m = n
            m.name = n.name.isEmpty ? n.name : names.fresh(n.name)
            m.inputs = n.inputs.map { map[$0] ?? $0 }
            m.outputs = n.outputs.map { map[$0] ?? $0 }
            for (key, sub) in n.subgraphs { m.attributes[key] = .graph(sub.renamingCaptures(map)) }
            inlined.append(m)
        }
        for (from, to) in copies {
            inlined.append(Node(name: names.fresh("\(owner.label)_\(to)"), opType: "Identity", inputs: [map[from] ?? from], outputs: [to]))
        }
        for (name, info) in branch.valueInfo where local.contains(name) {
            let renamed = map[name] ?? name
            if valueInfo[renamed] == nil { valueInfo[renamed] = ValueInfo(name: renamed, dtype: info.dtype, shape: info.shape) }
        }
        nodes.replaceSubrange(k...k, with: inlined)
    }
}
