import ShrinkwrapIR

/// Makes a graph ready for an exporter whose format wants static shapes
/// (Core ML NeuralNetwork, TFLite): fixed input shapes, shape-only
/// subgraphs folded to constants, and every value annotated with its shape
/// and element type. Exporters may not run the interpreter themselves
/// (formats never import the runtime), so the facade calls this first.
public enum ExportPreparation {
    /// What preparation changed, for the user.
    public struct Report: Sendable, Equatable {
        /// Input dimensions that were not fixed and became `batch`: "input 'x' axis 0 (N) → 1".
        public var fixedDimensions: [String] = []
        /// Nodes folded into constants.
        public var foldedNodes = 0
    }

    /// The prepared graph. A leading symbolic or unknown dimension (the
    /// batch) becomes `batch`; any other non-fixed dimension is an error,
    /// since the exporter cannot guess it. Ifs whose conditions become
    /// constant are inlined (`foldingConstantBranches`); control flow that
    /// stays is refused, since these formats cannot express it (`format`
    /// names the format in the message) — except Loops with `keepingLoops`,
    /// for formats that write them: those are kept in the normal form
    /// `LoopPreparation` describes, their bodies folded and annotated.
    public static func prepare(_ graph: Graph, batch: Int = 1, format: String = "this format",
                               keepingLoops: Bool = false) throws -> (graph: Graph, report: Report) {
        var g = graph
        var report = Report()
        for (k, input) in g.inputs.enumerated() where !g.isConstant(input.name) {
            guard let shape = input.shape else {
                throw KernelError.badGraphInput(name: input.name, reason: "rank is unknown; the exporter needs a fixed shape")
            }
            var fixed = shape
            for (axis, d) in shape.enumerated() where d.value == nil {
                guard axis == 0 else {
                    throw KernelError.badGraphInput(name: input.name,
                                                    reason: "dimension \(axis) (\(d)) is not fixed; the exporter needs fixed shapes beyond the batch axis")
                }
                fixed[axis] = .fixed(batch)
                report.fixedDimensions.append("input '\(input.name)' axis 0 (\(d)) → \(batch)")
            }
            g.inputs[k].shape = fixed
        }
        var (folded, count) = try StaticFolding.fold(g)
        // An inlined branch can make more values static, and the conditions of its own Ifs constant.
        while folded.hasControlFlow {
            let (inlined, branches) = folded.foldingConstantBranches()
            guard branches > 0 else { break }
            let (refolded, more) = try StaticFolding.fold(inlined)
            folded = refolded
            count += branches + more
        }
        if keepingLoops && folded.nodes.contains(where: { $0.opType == "Loop" }) {
            let (refolded, more) = try StaticFolding.fold(folded.hoistingLoopInvariants().graph.localizingLoopConstants())
            folded = refolded
            count += more
            try LoopPreparation.checkForm(folded, format: format)
        }
        g = folded
        report.foldedNodes = count
        try refuseControlFlow(g, format: format, keepingLoops: keepingLoops)

        var inputs: [String: Tensor] = [:]
        for i in g.runtimeInputs {
            guard let shape = i.staticShape, checkedElementCount(shape, limit: 1 << 28) != nil else {
                throw KernelError.badGraphInput(name: i.name, reason: "shape \(i.shapeDescription) is too large to annotate")
            }
            inputs[i.name] = Tensor.zeros(shape, dtype: i.dtype ?? .float32)
        }
        var info = g.valueInfo
        let interpreter = try Interpreter(graph: LoopPreparation.bounded(g), options: .init(threads: 1, optimize: false))
        let loopReads = LoopPreparation.loopReads(g)
        var loopValues = inputs.filter { loopReads.contains($0.key) }
        let results = try interpreter.run(inputs) { node, outs in
            for (o, t) in zip(node.outputs, outs) where !o.isEmpty {
                if loopReads.contains(o) { loopValues[o] = t }
                let doc = info[o]?.docString ?? ""
                info[o] = ValueInfo(name: o, dtype: t.dtype, shape: t.shape.map { .fixed($0) }, docString: doc)
            }
        }
        for (k, o) in g.outputs.enumerated() {
            if let t = results[o.name] {
                g.outputs[k].shape = t.shape.map { .fixed($0) }
                g.outputs[k].dtype = t.dtype
            }
        }
        g.valueInfo = info
        for k in g.nodes.indices where g.nodes[k].opType == "Loop" {
            g.nodes[k] = try LoopPreparation.prepared(g.nodes[k], in: g, values: loopValues, format: format)
        }
        return (g, report)
    }

    /// One line naming every If / Loop left (Loops are kept with `keepingLoops`): they have no
    /// counterpart in the fixed-shape formats.
    static func refuseControlFlow(_ g: Graph, format: String, keepingLoops: Bool = false) throws {
        let left = g.nodes.filter { $0.hasSubgraphs && !(keepingLoops && $0.opType == "Loop") }
        guard !left.isEmpty else { return }
        let what = left.map { n in
            n.opType == "If"
                ? "If '\(n.label)' (its condition is not constant: pin the inputs it depends on with --input-value / --input-shape)"
                : "\(n.opType) '\(n.label)' (a format without loops; .onnx keeps them)"
        }
        throw ExportError.unsupported(format: format, what: "control flow: " + what.joined(separator: "; "))
    }
}
