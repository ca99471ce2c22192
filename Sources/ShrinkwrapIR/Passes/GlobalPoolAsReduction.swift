extension LoweringPass {
    /// GlobalMaxPool / GlobalAveragePool → ReduceMax / ReduceMean over the
    /// spatial axes (2 …), kept: for formats whose global-pooling layer or op
    /// covers only some ranks. Inputs of a rank in `kept` (those the format
    /// pools itself) are left alone.
    public static func globalPoolAsReduction(keepingRanks kept: Set<Int> = []) -> LoweringPass {
        LoweringPass(
            "global-pool-as-reduction",
            "GlobalMaxPool / GlobalAveragePool → ReduceMax / ReduceMean over axes 2 … (keepdims)"
                + (kept.isEmpty ? "" : " for inputs of rank other than \(kept.sorted().map(String.init).joined(separator: ", "))"),
            lowers: ["GlobalMaxPool", "GlobalAveragePool"]
        ) { g in
            for (k, n) in g.nodes.enumerated() where n.opType == "GlobalMaxPool" || n.opType == "GlobalAveragePool" {
                guard let x = n.input(0), let r = g.shapes[x]?.count, r >= 3, !kept.contains(r), n.outputs.count == 1 else { continue }
                g.nodes[k] = Node(name: n.name, opType: n.opType == "GlobalMaxPool" ? "ReduceMax" : "ReduceMean",
                                  inputs: [x], outputs: n.outputs,
                                  attributes: ["axes": .ints(Array(2..<r)), "keepdims": .int(1)], docString: n.docString)
            }
        }
    }
}
