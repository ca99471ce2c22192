import ShrinkwrapIR

/// Loops for formats whose loops are subgraphs with static shapes (TFLite
/// WHILE, Core ML's loop layer): each Loop body is folded and every value in
/// it annotated with the one shape it has in every iteration, so that a
/// writer can lower the body like any prepared graph.
///
/// The normal form handed to exporters (after `ExportPreparation.prepare(…,
/// keepingLoops: true)`): inputs [M, cond, carried…] with M "" or a
/// one-element integer constant; no scan outputs; body inputs [iteration,
/// cond, carried…] and outputs [cond, carried…] with static shapes, each
/// carried output shaped and typed as its input; invariant carried values
/// hoisted (`hoistingLoopInvariants`), outer constants copied into the body
/// (`localizingLoopConstants`); `valueInfo` of the body holds a static shape
/// and type for every value a body node makes; no control flow nested inside.
enum LoopPreparation {
    /// Most iterations the annotation run follows a loop for; beyond it the shapes seen so far stand.
    static let annotatedIterations = 4096

    /// Refusals that do not need values: scan outputs, nested control flow, a non-constant trip count.
    static func checkForm(_ g: Graph, format: String) throws {
        for n in g.nodes where n.opType == "Loop" {
            guard case .graph(let body)? = n.attributes["body"] else { continue }
            let carried = n.inputs.count - 2
            func refuse(_ why: String) -> ExportError { .unsupported(format: format, what: "Loop '\(n.label)': \(why)") }
            if body.outputs.count > carried + 1 {
                throw refuse("\(body.outputs.count - carried - 1) scan output(s) (values stacked over iterations: their size is not static)")
            }
            if body.hasControlFlow { throw refuse("control flow inside its body is not written to this format") }
            if let m = n.input(0) {
                guard let t = g.constant(named: m)?.encoding.decoded(), t.count == 1, t.ints != nil else {
                    throw refuse("its trip count '\(m)' is not a constant integer (pin the inputs it depends on with --input-shape / --input-value)")
                }
            }
        }
    }

    /// The values each Loop reads (M, cond, initial carried values, captures), recorded during a run.
    static func loopReads(_ g: Graph) -> Set<String> {
        Set(g.nodes.filter { $0.opType == "Loop" }.flatMap(\.readNames))
    }

    /// Node `k` of `g` (a Loop in the form `checkForm` accepts) with its body
    /// folded and annotated, given the values the Loop read in a run.
    static func prepared(_ node: Node, in g: Graph, values: [String: Tensor], format: String) throws -> Node {
        guard case .graph(let body)? = node.attributes["body"] else { return node }
        func refuse(_ why: String) -> ExportError { .unsupported(format: format, what: "Loop '\(node.label)': \(why)") }
        func value(_ name: String) throws -> Tensor {
            if let t = values[name] ?? g.constant(named: name)?.encoding.decoded() { return t }
            throw refuse("no value for '\(name)' in the annotation run")
        }
        let carried = node.inputs.count - 2
        let iterShape = body.inputs[0].shape?.count == 1 ? [1] : [Int]()
        let condShape = body.inputs[1].shape?.count == 1 ? [1] : [Int]()
        var formal = [Tensor(ints: [0], shape: iterShape), Tensor(bools: [true], shape: condShape)]
        formal += try (0..<carried).map { try value(node.inputs[2 + $0]) }
        let captures = body.capturedNames
        let captured = try captures.map(value)

        // The body as a graph of its own: formal inputs, then the captures, all with static shapes.
        var standalone = body
        standalone.inputs = zip(body.inputs.map(\.name) + captures, formal + captured).map { name, t in
            ValueInfo(name: name, dtype: t.dtype, shape: t.shape.map { .fixed($0) })
        }
        standalone.valueInfo = [:]
        standalone = try StaticFolding.fold(standalone).graph

        // Follow the loop as the interpreter would, noting every value's shape in every iteration.
        var seen: [String: (dtype: DType, shape: [Int])] = [:]
        var changed: (name: String, from: [Int], to: [Int])?
        let interpreter = try Interpreter(graph: standalone, options: .init(threads: 1, optimize: false))
        let trip = try node.input(0).map { try value($0).ints?.first ?? 0 } ?? Int64.max
        var keepGoing = try node.input(1).map { try value($0).doubles.first != 0 } ?? true
        var state = formal
        var iteration: Int64 = 0
        repeat {
            state[0] = Tensor(ints: [iteration], shape: iterShape)
            state[1] = Tensor(bools: [keepGoing], shape: condShape)
            var feed: [String: Tensor] = [:]
            for (info, t) in zip(standalone.inputs, state + captured) { feed[info.name] = t }
            let result = try interpreter.run(feed) { n, outs in
                for (o, t) in zip(n.outputs, outs) where !o.isEmpty {
                    if let s = seen[o], s.shape != t.shape, changed == nil { changed = (o, s.shape, t.shape) }
                    seen[o] = (t.dtype, t.shape)
                }
            }
            let outs = try standalone.outputs.map { o in
                guard let t = result[o.name] ?? standalone.constant(named: o.name)?.encoding.decoded() ?? feed[o.name] else {
                    throw refuse("body output '\(o.name)' has no value")
                }
                return t
            }
            for j in 0..<carried where outs[1 + j].shape != state[2 + j].shape || outs[1 + j].dtype != state[2 + j].dtype {
                throw refuse("carried value '\(body.inputs[2 + j].name)' changes from \(state[2 + j].shape) \(state[2 + j].dtype) "
                             + "to \(outs[1 + j].shape) \(outs[1 + j].dtype) in an iteration; this format's loops need one shape")
            }
            if let c = changed {
                throw refuse("value '\(c.name)' in its body changes shape between iterations (\(c.from) then \(c.to)); this format's loops need one shape")
            }
            keepGoing = outs[0].doubles.first.map { $0 != 0 } ?? false
            state.replaceSubrange(2..., with: outs[1...])
            iteration += 1
        } while keepGoing && iteration < trip && iteration < annotatedIterations

        var annotated = standalone
        annotated.inputs = zip(body.inputs, formal).map { info, t in ValueInfo(name: info.name, dtype: t.dtype, shape: t.shape.map { .fixed($0) }) }
        for n in annotated.nodes {
            for o in n.outputs where !o.isEmpty {
                guard let s = seen[o] else { continue }
                annotated.valueInfo[o] = ValueInfo(name: o, dtype: s.dtype, shape: s.shape.map { .fixed($0) })
            }
        }
        for (k, o) in annotated.outputs.enumerated() {
            let t = k == 0 ? Tensor(bools: [true], shape: condShape) : formal[1 + k]
            annotated.outputs[k] = ValueInfo(name: o.name, dtype: k == 0 ? seen[o.name]?.dtype ?? .bool : t.dtype,
                                             shape: (seen[o.name]?.shape ?? t.shape).map { .fixed($0) })
        }
        var out = node
        out.attributes["body"] = .graph(annotated)
        return out
    }
}
