import ShrinkwrapIR

/// Turns everything a graph computes from shapes alone into constants, for
/// exporters whose formats want static shapes (Core ML, TFLite): the
/// `Shape → Gather → Unsqueeze → Concat → Reshape` chains of converted CNNs
/// become one constant shape input.
///
/// Needs every runtime input to have a fixed shape. A value is *static* when
/// it is a constant, the result of Shape / Size on a value whose shape is
/// static, or the result of a deterministic op on static values only. A
/// value's *shape* is static unless an op makes it depend on data (NonZero,
/// Unique, …) or reads a non-static value where that value sets the output
/// shape (Reshape's shape, Slice's starts, …). Static values are computed
/// with the kernels themselves; shapes come from one run of the interpreter
/// on zero inputs. Nodes that become static are removed, the values still read
/// become constants, and constants nobody reads any more are dropped.
public enum StaticFolding {
    // What each op's output depends on comes from the op table (`OpTable`): its
    // shape-setting inputs, a data-dependent shape, a value read from input 0's shape
    // (Shape, Size). An op the table lacks is never folded.

    /// The folded graph, and how many nodes were folded away.
    public static func fold(_ graph: Graph) throws -> (graph: Graph, folded: Int) {
        let g = try graph.validatedAndSorted()
        var inputs: [String: Tensor] = [:]
        for i in g.runtimeInputs {
            guard let shape = i.staticShape else {
                throw KernelError.badGraphInput(name: i.name, reason: "shape \(i.shapeDescription) is not fixed; static folding needs fixed input shapes")
            }
            // Zero inputs are allocated: refuse declared shapes beyond 2^28 elements (1 GiB of float32).
            guard checkedElementCount(shape, limit: 1 << 28) != nil else {
                throw KernelError.badGraphInput(name: i.name, reason: "shape \(shape) is too large for static folding")
            }
            inputs[i.name] = Tensor.zeros(shape, dtype: i.dtype ?? .float32)
        }
        // Which values are static, and which have static shapes.
        var staticValue = Set(g.constants.map(\.name))
        var staticShape = staticValue.union(inputs.keys)
        var staticNodes: [Int] = []
        for (k, n) in g.nodes.enumerated() {
            guard let op = OpTable[n.opType] else { continue }
            let present = n.inputs.filter { !$0.isEmpty }
            let shapeOK = !op.dataDependentShape
                && present.allSatisfy { staticShape.contains($0) }
                && op.shapeInputs.allSatisfy { i in n.input(i).map { staticValue.contains($0) } ?? true }
            if shapeOK { for o in n.outputs where !o.isEmpty { staticShape.insert(o) } }
            let valueOK: Bool
            if op.readsShapeOnly {
                valueOK = n.input(0).map { staticShape.contains($0) } ?? false
            } else {
                valueOK = !op.dataDependentShape && !present.isEmpty && present.allSatisfy { staticValue.contains($0) }
            }
            if valueOK {
                for o in n.outputs where !o.isEmpty { staticValue.insert(o) }
                staticNodes.append(k)
            }
        }
        if staticNodes.isEmpty { return (g, 0) }

        // Shapes of every value from one run on zero inputs.
        var shapes: [String: [Int]] = [:]
        for (name, t) in inputs { shapes[name] = t.shape }
        for c in g.constants { shapes[c.name] = c.encoding.shape }
        let interpreter = try Interpreter(graph: g, options: .init(threads: 1, optimize: false))
        _ = try interpreter.run(inputs) { node, outs in
            for (o, t) in zip(node.outputs, outs) where !o.isEmpty { shapes[o] = t.shape }
        }

        var values: [String: Tensor] = [:]
        func value(_ name: String) -> Tensor? { values[name] ?? g.constant(named: name)?.encoding.decoded() }
        var removed = Set<Int>()
        for k in staticNodes {
            let n = g.nodes[k]
            let outs: [Tensor]
            if OpTable[n.opType]?.readsShapeOnly == true, let x = n.input(0), let shape = shapes[x] {
                outs = [try shapeOrSize(n, shape)]
            } else {
                guard let kernel = KernelRegistry.kernels[n.opType] else { continue }
                let args = n.inputs.map { $0.isEmpty ? nil : value($0) }
                if args.enumerated().contains(where: { !n.inputs[$0.offset].isEmpty && $0.element == nil }) { continue }
                outs = try kernel(KernelContext(node: n, inputs: args, threads: 1))
            }
            guard outs.count >= n.outputs.filter({ !$0.isEmpty }).count else { continue }
            for (o, t) in zip(n.outputs, outs) where !o.isEmpty { values[o] = t }
            removed.insert(k)
        }
        var out = g
        out.nodes = g.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        let read = Set(out.nodes.flatMap(\.readNames)).union(out.outputs.map(\.name))
        for k in removed.sorted() {
            for o in g.nodes[k].outputs where !o.isEmpty && read.contains(o) {
                if let t = values[o] { out.setConstant(Constant(name: o, tensor: t)) }
            }
        }
        let declared = Set(g.inputs.map(\.name))  // ONNX may list initializers as inputs: keep those
        for c in g.constants where !read.contains(c.name) && !declared.contains(c.name) { out.removeConstant(named: c.name) }
        return (try out.validatedAndSorted(), removed.count)
    }

    /// Shape (with start / end) and Size from a known shape.
    static func shapeOrSize(_ n: Node, _ shape: [Int]) throws -> Tensor {
        if n.opType == "Size" { return Tensor.scalar(int: Int64(shape.reduce(1, *))) }
        let r = shape.count
        func attr(_ name: String, _ d: Int) -> Int { if case .int(let v)? = n.attributes[name] { return v } else { return d } }
        var s = attr("start", 0), e = attr("end", r)
        if s < 0 { s += r }
        if e < 0 { e += r }
        s = min(max(s, 0), r); e = min(max(e, 0), r)
        let dims = s < e ? shape[s..<e].map { Int64($0) } : []
        return Tensor(ints: dims, shape: [dims.count])
    }
}
