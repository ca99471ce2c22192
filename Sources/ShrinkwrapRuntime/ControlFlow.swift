import ShrinkwrapIR

/// A subgraph compiled once for repeated runs: its own interpreter, with the
/// values it captures from the enclosing graphs as extra inputs.
final class SubgraphRunner: @unchecked Sendable {
    /// The subgraph's declared inputs (Loop: iteration number, condition, carried values).
    let formal: [ValueInfo]
    /// Enclosing-graph values the subgraph reads, in `Node.capturedNames` order.
    let captures: [String]
    let outputs: [ValueInfo]
    private let interpreter: Interpreter
    /// For each runtime input of the compiled body, its position in formal values + captured values.
    private let feedOrder: [Int]

    /// `outer` gives the enclosing graph's constants: those the subgraph reads become its own, so that
    /// its planner folds what it computes from them once (e.g. a weight concatenated in a branch).
    init(_ g: Graph, owner: Node, attribute: String, options: Interpreter.Options, outer: Graph? = nil) throws {
        var standalone = g
        for name in g.capturedNames {
            if let c = outer?.constant(named: name) { standalone.setConstant(c) }
        }
        formal = g.inputs
        captures = standalone.capturedNames
        outputs = g.outputs
        // Loop-carried values may change type details and shape from one iteration to
        // the next: the declared formal inputs are not checked, only bound by position.
        standalone.inputs = g.inputs.map { ValueInfo(name: $0.name, dtype: nil, shape: nil) }
            + captures.map { ValueInfo(name: $0, dtype: nil, shape: nil) }
        let names = standalone.inputs.map(\.name)
        // A formal input the body also holds as a constant keeps the constant (as a named feed would).
        feedOrder = standalone.runtimeInputs.compactMap { i in names.lastIndex(of: i.name) }
        do {
            interpreter = try Interpreter(graph: standalone, options: options)
        } catch let e as GraphError {
            throw KernelError.invalidAttribute(node: owner.label, op: owner.opType, attribute: attribute, reason: e.description)
        }
    }

    /// Runs the subgraph: formal inputs by position, then captured values (in `captures` order).
    func run(_ formalValues: [Tensor], captured: [Tensor], observe: ((Node, [Tensor]) -> Void)? = nil) throws -> [Tensor] {
        // Formal values first, by position; a body that declares more inputs than its owner
        // gives (an If branch with inputs) finds them missing.
        let all = formalValues + captured
        let skip = max(0, formal.count - formalValues.count)
        let feeds = try feedOrder.map { p -> Tensor in
            let at = p < formal.count ? p : p - skip
            guard p < formal.count ? p < formalValues.count : at < all.count else {
                throw KernelError.badGraphInput(name: p < formal.count ? formal[p].name : captures[p - formal.count], reason: "no value given")
            }
            return all[at]
        }
        return try interpreter.run(positional: feeds, observe: observe, intoSubgraphs: observe != nil)
    }
}

/// If and Loop with ONNX semantics. The interpreter compiles a node's
/// subgraphs once (`kernel(for:options:)`) and hands the kernel the node's
/// inputs followed by the values its subgraphs capture (`Node.capturedNames`).
public enum ControlFlow {
    /// Most iterations one Loop node may run. A Loop's trip count comes from
    /// the file (or never ends: M omitted, or INT64_MAX with a condition), so
    /// it is bounded; past the limit the node fails with an error.
    nonisolated(unsafe) public static var iterationLimit = 1 << 20

    /// A kernel for `node` (If or Loop) with its subgraphs compiled.
    /// `outer`: the graph the node belongs to (its constants become the subgraphs' own).
    public static func kernel(for node: Node, options: Interpreter.Options, outer: Graph? = nil) throws -> Kernel {
        func branch(_ key: String) throws -> SubgraphRunner {
            guard case .graph(let g)? = node.attributes[key] else {
                throw KernelError.invalidAttribute(node: node.label, op: node.opType, attribute: key, reason: "missing subgraph")
            }
            return try SubgraphRunner(g, owner: node, attribute: key, options: options, outer: outer)
        }
        let captures = node.capturedNames
        let explicit = node.inputs.count
        /// Where each capture of `runner` is among the node's inputs (looked up once, not per run).
        func positions(_ runner: SubgraphRunner) -> [(String, Int?)] {
            runner.captures.map { name in (name, captures.firstIndex(of: name).map { explicit + $0 }) }
        }
        func captured(_ c: KernelContext, _ at: [(String, Int?)]) throws -> [Tensor] {
            try at.map { name, k in
                guard let k, k < c.inputs.count, let t = c.inputs[k] else { throw c.fail("captured value '\(name)' has no value") }
                return t
            }
        }
        switch node.opType {
        case "If":
            let thenBranch = try branch("then_branch"), elseBranch = try branch("else_branch")
            for b in [thenBranch, elseBranch] where b.outputs.count != node.outputs.count {
                throw KernelError.invalidInput(node: node.label, op: "If",
                                               reason: "a branch has \(b.outputs.count) outputs, the node \(node.outputs.count)")
            }
            let thenAt = positions(thenBranch), elseAt = positions(elseBranch)
            return { c in
                let yes = try condition(c, try c.input(0), what: "condition")
                return try (yes ? thenBranch : elseBranch).run([], captured: try captured(c, yes ? thenAt : elseAt), observe: c.observe)
            }
        case "Loop":
            let body = try branch("body")
            try checkLoopShape(node, body)
            let bodyAt = positions(body)
            return { c in try runLoop(c, body: body, captured: try captured(c, bodyAt)) }
        default:
            throw KernelError.noKernel(op: node.opType)
        }
    }

    /// The registry's kernel: compiles the subgraphs on every call (the
    /// interpreter compiles them once instead).
    static func uncompiled(_ c: KernelContext) throws -> [Tensor] {
        try kernel(for: c.node, options: .init(threads: c.threads))(c)
    }

    /// One bool from a one-element tensor (a number counts as true when not zero).
    static func condition(_ c: KernelContext, _ t: Tensor, what: String) throws -> Bool {
        guard t.count == 1 else { throw c.fail("the \(what) must have one element, has shape \(t.shape)") }
        switch t.storage {
        case .bool(let b): return b[0]
        case .int(let v): return v[0] != 0
        case .float(let v): return v[0] != 0
        }
    }

    /// Loop: inputs (M, cond, v_initial × N); body inputs (iteration, cond, v × N);
    /// body outputs (cond, v × N, scan × K); node outputs (v_final × N, scans × K).
    static func checkLoopShape(_ node: Node, _ body: SubgraphRunner) throws {
        let n = node.inputs.count - 2
        func bad(_ reason: String) -> KernelError { .invalidInput(node: node.label, op: "Loop", reason: reason) }
        guard n >= 0 else { throw bad("needs inputs M and cond (either may be empty), has \(node.inputs.count)") }
        guard body.formal.count == n + 2 else {
            throw bad("the body has \(body.formal.count) inputs; \(n) loop-carried values need \(n + 2)")
        }
        guard body.outputs.count >= n + 1 else {
            throw bad("the body has \(body.outputs.count) outputs; \(n) loop-carried values need at least \(n + 1)")
        }
        guard node.outputs.count <= body.outputs.count - 1 else {
            throw bad("the node has \(node.outputs.count) outputs; the body makes \(body.outputs.count - 1)")
        }
    }

    static func runLoop(_ c: KernelContext, body: SubgraphRunner, captured: [Tensor]) throws -> [Tensor] {
        let n = c.node.inputs.count - 2
        let k = body.outputs.count - 1 - n
        var tripLimit: Int64?
        if let m = c.optionalInput(0) {
            guard m.count == 1, let v = m.ints?.first else { throw c.fail("M must be one integer, has shape \(m.shape) (\(m.dtype))") }
            tripLimit = v
        }
        var keepGoing = try c.optionalInput(1).map { try condition(c, $0, what: "condition") } ?? true
        var carried = try (0..<n).map { try c.input(2 + $0) }
        // ONNX runtimes give the iteration number and condition the rank the body declares ([] or [1]).
        let iterShape = body.formal[0].shape?.count == 1 ? [1] : [Int]()
        let condShape = body.formal[1].shape?.count == 1 ? [1] : [Int]()
        var scans = [ScanAccumulator](repeating: ScanAccumulator(), count: k)
        var i: Int64 = 0
        while keepGoing && (tripLimit.map { i < $0 } ?? true) {
            guard i < Int64(iterationLimit) else {
                throw c.fail("more than \(iterationLimit) iterations (M = \(tripLimit.map(String.init) ?? "none")); the interpreter's limit")
            }
            let outs = try body.run([Tensor(ints: [i], shape: iterShape), Tensor(bools: [keepGoing], shape: condShape)] + carried,
                                    captured: captured, observe: c.observe)
            keepGoing = try condition(c, outs[0], what: "body's condition output")
            carried = Array(outs[1..<(1 + n)])
            for s in 0..<k { try scans[s].append(outs[1 + n + s], c, output: s) }
            i += 1
        }
        var results = carried
        for s in 0..<k { results.append(scans[s].stacked(declared: body.outputs[1 + n + s])) }
        return Array(results.prefix(c.node.outputs.count))
    }
}

/// One scan output of a Loop: each iteration's value, stacked along a new axis 0.
struct ScanAccumulator {
    var shape: [Int]?
    var dtype: DType = .float32
    var iterations = 0
    var storage: TensorStorage?

    mutating func append(_ t: Tensor, _ c: KernelContext, output: Int) throws {
        if let shape, shape != t.shape || dtype != t.dtype {
            throw c.fail("scan output \(output) changes from \(shape) \(dtype) to \(t.shape) \(t.dtype) at iteration \(iterations)")
        }
        _ = try c.checkedCount([iterations + 1] + t.shape)
        shape = t.shape
        dtype = t.dtype
        switch (storage, t.storage) {
        case (nil, _): storage = t.storage
        case (.float(var a)?, .float(let b)): storage = nil; a += b; storage = .float(a)
        case (.int(var a)?, .int(let b)): storage = nil; a += b; storage = .int(a)
        case (.bool(var a)?, .bool(let b)): storage = nil; a += b; storage = .bool(a)
        default: throw c.fail("scan output \(output) changes storage at iteration \(iterations)")
        }
        iterations += 1
    }

    /// The stacked tensor; without iterations, an empty one of the declared type and shape.
    func stacked(declared: ValueInfo) -> Tensor {
        if let shape, let storage { return Tensor(dtype: dtype, shape: [iterations] + shape, storage: storage) }
        return Tensor.zeros([0] + (declared.staticShape ?? []), dtype: declared.dtype ?? .float32)
    }
}
