extension LoweringPass {
    /// An Identity from a value some node computes into a graph output: the
    /// node writes the output directly (readers of the value read the output).
    public static let computeIntoOutputs = LoweringPass(
        "compute-into-outputs", "Identity into a graph output → its producer writes the output"
    ) { g in
        var k = 0
        while k < g.nodes.count {
            let n = g.nodes[k]
            guard n.opType == "Identity", let x = n.input(0), let y = n.outputs.first, g.outputs.contains(y), !g.outputs.contains(x),
                  let p = g.nodes.firstIndex(where: { $0.outputs.contains(x) }) else { k += 1; continue }
            g.nodes[p].outputs = g.nodes[p].outputs.map { $0 == x ? y : $0 }
            for j in g.nodes.indices { g.nodes[j].inputs = g.nodes[j].inputs.map { $0 == x ? y : $0 } }
            g.nodes.remove(at: k)
        }
    }
}
