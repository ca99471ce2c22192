import ShrinkwrapIR

/// WHILE (loop variables `v`: "while cond(v): v = body(v)", each a subgraph of the file) → the IR's Loop
/// with ONNX semantics: Loop(M = "", cond = cond(v0) inlined in the enclosing graph, v0), whose body is
/// (iteration, cond_in, v) → (cond(body(v)), body(v)). TFLite subgraphs read only their inputs and their
/// own constants, so the Loop body captures nothing.
extension TFLiteOps {
    static func whileLoop(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        guard let o = try c.options(op, "WhileOptions") else {
            throw ImportError.malformed(c.loc(op), reason: "WHILE without WhileOptions (no condition and body subgraphs)")
        }
        let condIndex = Int(try c.option(o, 0, Int32(0), op)), bodyIndex = Int(try c.option(o, 1, Int32(0), op))
        for (what, k) in [("cond", condIndex), ("body", bodyIndex)] {
            guard k >= 0, k < c.model.subgraphCount else {
                throw ImportError.malformed(c.loc(op), reason: "\(what)_subgraph_index \(k) is outside the \(c.model.subgraphCount) subgraphs")
            }
            guard !c.subgraphStack.contains(k) else {
                let chain = (c.subgraphStack + [k]).map(String.init).joined(separator: " → ")
                throw ImportError.malformed(c.loc(op), reason: "\(what) subgraph \(k) runs this WHILE again (a subgraph cycle: \(chain))")
            }
        }
        let n = op.inputs.count
        guard n > 0, op.inputs.allSatisfy({ $0 >= 0 }), op.outputs.count == n else {
            throw ImportError.malformed(c.loc(op), reason: "\(op.inputs.count) inputs and \(op.outputs.count) outputs; WHILE needs as many outputs as loop variables (at least one)")
        }
        let cond = c.model.subgraphs[condIndex], body = c.model.subgraphs[bodyIndex]
        guard cond.inputs.count == n, cond.outputs.count == 1 else {
            throw ImportError.malformed(c.loc(op), reason: "cond subgraph \(condIndex) has \(cond.inputs.count) inputs and \(cond.outputs.count) outputs; \(n) loop variables need \(n) and 1")
        }
        guard body.inputs.count == n, body.outputs.count == n else {
            throw ImportError.malformed(c.loc(op), reason: "body subgraph \(bodyIndex) has \(body.inputs.count) inputs and \(body.outputs.count) outputs; \(n) loop variables need \(n) of each")
        }
        if let k = cond.outputs.first, cond.tensors[k].type != 6 {
            throw ImportError.malformed(c.loc(op), reason: "cond subgraph \(condIndex) gives a \(TFLiteModel.typeName(cond.tensors[k].type)), not a BOOL")
        }
        // The first test, before any iteration, in the enclosing graph.
        let initial = op.inputs.map { c.value($0) }
        let first = try c.inlined(condIndex, inputs: initial)
        c.adopt(first)

        var infos: [ValueInfo] = []
        for t in op.inputs {
            let info = c.model.tensors[t]
            guard let d = TFLiteContext.dtype(info.type) else {
                throw ImportError.unsupported(c.loc(op), what: "a loop variable of type \(TFLiteModel.typeName(info.type))")
            }
            infos.append(ValueInfo(name: c.unique(c.value(t) + "_loop"), dtype: d, shape: info.shape.map { .fixed($0) }))
        }
        let iteration = ValueInfo(name: c.unique("while_iteration"), dtype: .int64, shape: [])
        let condIn = ValueInfo(name: c.unique("while_condition"), dtype: .bool, shape: [])
        let step = try c.inlined(bodyIndex, inputs: infos.map(\.name))
        let next = try c.inlined(condIndex, inputs: step.outputs)
        var nodes = step.nodes + next.nodes
        // Body outputs are distinct values the body's nodes make.
        let formal = Set([iteration.name, condIn.name] + infos.map(\.name))
        let constantNames = Set((step.constants + next.constants).map(\.name))
        var seen = Set<String>()
        var outputs: [ValueInfo] = []
        for (k, v) in ([next.outputs[0]] + step.outputs).enumerated() {
            var name = v
            if formal.contains(v) || constantNames.contains(v) || seen.contains(v) {
                name = c.fresh(v + "_out")
                nodes.append(Node(name: name, opType: "Identity", inputs: [v], outputs: [name]))
            }
            seen.insert(name)
            outputs.append(ValueInfo(name: name, dtype: k == 0 ? .bool : infos[k - 1].dtype, shape: nil))
        }
        let graph = Graph(name: body.name.isEmpty ? "while_body" : body.name, inputs: [iteration, condIn] + infos, outputs: outputs,
                          nodes: nodes, constants: step.constants + next.constants)
        c.emit("Loop", ["", first.outputs[0]] + initial, op.outputs.map { c.value($0) }, ["body": .graph(graph)])
    }
}

extension TFLiteContext {
    static let maxSubgraphDepth = 32
    static let maxInlinedOps = 1 << 20

    /// Subgraph `k`'s operators translated with its input tensors bound to the values `inputs` names: its nodes,
    /// the constants they read, and the names of its outputs. Value names stay unique across subgraphs.
    mutating func inlined(_ k: Int, inputs: [String]) throws -> (nodes: [Node], constants: [Constant], outputs: [String]) {
        let view = model.viewing(k)
        // Each WHILE inlines its condition twice: nested WHILEs could multiply a file's operators without end.
        inlinedOps += view.ops.count
        guard subgraphStack.count < Self.maxSubgraphDepth, inlinedOps <= Self.maxInlinedOps else {
            throw ImportError.unsupported(SourceLocation(file: file, place: "subgraphs[\(k)]"),
                                          what: "WHILE subgraphs nested \(subgraphStack.count) deep, \(inlinedOps) operators inlined (at most \(Self.maxSubgraphDepth) and \(Self.maxInlinedOps))")
        }
        var sub = TFLiteContext(model: view)
        sub.inlinedOps = inlinedOps
        sub.used = used
        sub.counter = counter
        sub.subgraphStack = subgraphStack + [k]
        var bound: [Int: String] = [:]
        for (t, name) in zip(view.inputs, inputs) where bound[t] == nil { bound[t] = name }
        let (folded, rows) = try sub.prepareTensors(bound: bound)
        try sub.translateOps(folded: folded, dequantizedRows: rows)
        let outs = view.outputs.map { sub.value($0) }
        let read = Set(sub.nodes.flatMap(\.inputs)).union(outs)
        var constants: [Constant] = []
        for (i, e) in sub.constantTensors.sorted(by: { $0.key < $1.key }) where bound[i] == nil && read.contains(sub.names[i]) {
            constants.append(Constant(name: sub.names[i], encoding: e))
        }
        for name in sub.constantOrder where read.contains(name) {
            if let cst = sub.constants[name] { constants.append(cst) }
        }
        used = sub.used
        counter = sub.counter
        inlinedOps = sub.inlinedOps
        return (sub.nodes.cancellingInverseTransposes(keeping: Set(outs)), constants, outs)
    }

    /// Takes an inlined subgraph's nodes and constants into the graph being built.
    mutating func adopt(_ part: (nodes: [Node], constants: [Constant], outputs: [String])) {
        nodes += part.nodes
        for cst in part.constants where constants[cst.name] == nil {
            constants[cst.name] = cst
            constantOrder.append(cst.name)
        }
    }
}
