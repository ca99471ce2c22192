import ShrinkwrapIR
import TensorFlowSchema

/// Importer state while TensorFlow ops become IR nodes: the flattened graph,
/// the nodes and constants emitted, and which IR value each TF tensor is.
struct TFContext {
    /// The graph being translated: the model's, or while a loop or branch runs
    /// one, that function's body (`call`).
    private(set) var graph: TFFlatGraph
    var file: String { graph.file }
    var nodes: [Node] = []
    private(set) var constants: [Constant] = []
    /// IR value names whose value is known at import (constants), with that value.
    private(set) var known: [String: Tensor] = [:]
    /// TF reference "node:k" (resolved) → IR value name.
    private(set) var values: [String: String] = [:]
    /// Nodes whose outputs are never computed, by node name: `dead` (in a TF1
    /// cond's branch not taken) or `missing` (an op without a translator, or reading one).
    private var uncomputed: [String: String] = [:]
    static let dead = "\u{1}dead", missing = "\u{1}missing"
    private(set) var defined: Set<String> = []
    private var used: NameAllocator
    /// The tensor a variable handle (VarHandleOp node name) holds.
    let variable: (TFOp) throws -> Tensor
    /// TensorLists by the name standing for them in `values` (never an IR value).
    var lists: [String: TFList] = [:]
    /// The graph's inputs, for `evaluate`.
    var inputInfos: [ValueInfo] = []
    /// Computes values the graph derives from input shapes (a loop's trip count); nil: refused.
    let evaluate: ImportEvaluator?
    /// Ops of function bodies translated so far (loops unrolled, branches taken), and how deep the calls are.
    private var calledOps = 0
    private var depth = 0

    init(graph: TFFlatGraph, variable: @escaping (TFOp) throws -> Tensor, evaluate: ImportEvaluator?) {
        self.graph = graph
        self.variable = variable
        self.evaluate = evaluate
        used = NameAllocator(taken: graph.ops.map(\.name))
    }

    /// Where `op` is, with its type (not for the importer's own `_`-prefixed ops, whose place says what they are).
    func loc(_ op: TFOp) -> SourceLocation { SourceLocation(file: file, place: op.op.hasPrefix("_") ? op.place : "\(op.place) (\(op.op))") }
    func malformed(_ op: TFOp, _ reason: String) -> ImportError { .malformed(loc(op), reason: reason) }
    func unsupported(_ op: TFOp, _ what: String) -> ImportError { .unsupported(loc(op), what: what) }

    // MARK: - Names

    /// A fresh name for an intermediate value.
    mutating func fresh(_ base: String) -> String { used.fresh(base + "__t") }

    /// The IR name of output `k` of `op`: the node's name for output 0, "name:k" after.
    mutating func output(_ op: TFOp, _ k: Int = 0) -> String {
        var name = k == 0 ? op.name : "\(op.name):\(k)"
        if defined.contains(name) { name = fresh(name) }
        values["\(op.name):\(k)"] = name
        defined.insert(name)
        return name
    }

    /// Makes output `k` of `op` the IR value `value` (Identity-like ops emit nothing).
    mutating func alias(_ op: TFOp, _ k: Int, to value: String) { values["\(op.name):\(k)"] = value }

    /// Binds a TF reference to an IR value (graph inputs).
    mutating func bind(_ ref: String, to value: String) {
        values[graph.resolve(ref)] = value
        defined.insert(value)
    }

    /// The IR value of a TF reference, if translated (`dead` / `missing` when it never will be).
    func value(of ref: String) -> String? {
        let r = graph.resolve(ref)
        if let v = values[r] { return v }
        guard let (node, _) = TFFlatGraph.split(r) else { return nil }
        return uncomputed[node]
    }

    /// Marks every output of `op` as never computed (`dead` or `missing`).
    mutating func skip(_ op: TFOp, as sentinel: String) { uncomputed[op.name] = sentinel }

    /// Marks output `k` of `op` as dead (a Switch's branch not taken).
    mutating func kill(_ op: TFOp, _ k: Int) { values["\(op.name):\(k)"] = Self.dead }

    /// The IR value of `op`'s data input `i` (a tensor, not a TensorList).
    func input(_ op: TFOp, _ i: Int) throws -> String {
        let v = try anyInput(op, i)
        guard lists[v] == nil else { throw unsupported(op, "input \(i) ('\(op.inputs[i])') is a TensorList, which only the list ops read") }
        return v
    }

    /// What stands for `op`'s input `i`: an IR value or a TensorList (ops that pass either on).
    func anyInput(_ op: TFOp, _ i: Int) throws -> String {
        guard i < op.inputs.count else { throw malformed(op, "has \(op.inputs.count) inputs, needs at least \(i + 1)") }
        guard let v = value(of: op.inputs[i]) else { throw malformed(op, "input \(i) ('\(op.inputs[i])') is not computed before it") }
        return v
    }

    /// The TensorList `op`'s input `i` is.
    func list(_ op: TFOp, _ i: Int) throws -> TFList {
        guard let l = lists[try anyInput(op, i)] else { throw malformed(op, "input \(i) ('\(op.inputs[i])') is not a TensorList") }
        return l
    }

    func arity(_ op: TFOp, _ n: Int) throws {
        guard op.inputs.count >= n else { throw malformed(op, "has \(op.inputs.count) inputs, needs \(n)") }
    }

    // MARK: - Emitting

    /// Emits a node; integer / boolean arithmetic on known values becomes a constant instead (`TFFolding`).
    mutating func emit(_ opType: String, _ inputs: [String], _ outputs: [String], _ attrs: [String: Attribute] = [:], name: String = "") {
        for o in outputs { defined.insert(o) }
        let args = inputs.compactMap { known[$0] }
        if outputs.count == 1, args.count == inputs.count, let t = TFFolding.fold(opType, args, attrs) {
            constants.append(Constant(name: outputs[0], tensor: t))
            known[outputs[0]] = t
            return
        }
        nodes.append(Node(name: name.isEmpty ? (outputs.first ?? opType) : name, opType: opType, inputs: inputs, outputs: outputs, attributes: attrs))
    }

    /// Emits `opType` on `inputs` into a fresh value and returns it.
    mutating func apply(_ opType: String, _ inputs: [String], _ attrs: [String: Attribute] = [:], base: String) -> String {
        let out = fresh(base)
        emit(opType, inputs, [out], attrs)
        return out
    }

    /// Adds a constant (under `name` when free) and returns its IR name.
    @discardableResult
    mutating func constant(_ tensor: Tensor, name: String) -> String {
        let n = defined.contains(name) ? fresh(name) : name
        constants.append(Constant(name: n, tensor: tensor))
        known[n] = tensor
        defined.insert(n)
        return n
    }

    mutating func int64s(_ values: [Int], name: String) -> String {
        constant(Tensor(ints: values.map(Int64.init), shape: [values.count]), name: name)
    }

    /// Records that IR value `value` (computed by nodes) is `tensor` whatever the inputs.
    mutating func learn(_ value: String, _ tensor: Tensor) { known[value] = tensor }

    /// Known values of IR values by name.
    func knownValue(_ value: String) -> Tensor? { known[value] }

    // MARK: - Functions

    /// Translates library function `f` (named by `op`'s attribute `key`) on
    /// `args` into this graph, its values named under `prefix`; returns the
    /// IR values it returns. Loops and branches run their bodies this way.
    mutating func call(_ op: TFOp, function key: String, args: [String], prefix: String) throws -> [String] {
        guard case .func(let ref)? = attr(op, key), let f = graph.function(named: ref.name) else {
            throw malformed(op, "attribute '\(key)' names no library function")
        }
        let body = try TFFlatGraph(function: f, prefix: prefix, library: graph, depth: depth)
        return try run(body, args: args, outputs: body.returns, for: op, what: "'\(ref.name)'")
    }

    /// Translates the ops of `body` that `outputs` need, its arguments bound to
    /// `args`, and returns the IR values of `outputs` (a function call, one
    /// iteration of a loop).
    mutating func run(_ body: TFFlatGraph, args: [String], outputs: [String], for op: TFOp, what: String) throws -> [String] {
        guard body.arguments.count == args.count else {
            throw malformed(op, "passes \(args.count) values to \(what), which takes \(body.arguments.count)")
        }
        guard depth < TFFlatGraph.maxDepth else { throw unsupported(op, "loops and branches nested more than \(TFFlatGraph.maxDepth) deep") }
        calledOps += body.ops.count
        guard calledOps <= graph.unrollBudget else {
            throw unsupported(op, "more than \(graph.unrollBudget) ops in the bodies of loops and branches (the file defines \(graph.nodesInFile) nodes)")
        }
        let (outerGraph, outerValues, outerUncomputed) = (graph, values, uncomputed)
        graph = body
        values = [:]
        uncomputed = [:]
        depth += 1
        defer {
            graph = outerGraph
            values = outerValues
            uncomputed = outerUncomputed
            depth -= 1
        }
        for (a, v) in zip(body.arguments, args) { values[a] = v }
        try TFGraphBuilder.translate(&self, outputs: outputs, stops: Set(body.arguments))
        return try outputs.enumerated().map { k, r in
            guard let v = value(of: r) else { throw malformed(op, "\(what) never computes its output \(k)") }
            return v
        }
    }

    /// The values of IR values `names`, computed from the graph so far by `evaluate`.
    func evaluated(_ names: [String], for op: TFOp) throws -> [Tensor] {
        guard let evaluate else {
            throw unsupported(op, "values computed from input shapes at run time (this importer was given no evaluator)")
        }
        let read = Set(nodes.flatMap(\.inputs)).union(names)
        let g = Graph(name: "", inputs: inputInfos, outputs: names.map { ValueInfo(name: $0, dtype: nil, shape: nil) }, nodes: nodes,
                      constants: constants.filter { read.contains($0.name) })
        let values: [Tensor]
        do { values = try evaluate(g) } catch { throw unsupported(op, "cannot compute \(names) at import: \(error)") }
        guard values.count == names.count else { throw unsupported(op, "cannot compute \(names) at import") }
        return values
    }

    // MARK: - Constant inputs

    /// The value of input `i` when it is known at import.
    func known(_ op: TFOp, _ i: Int) -> Tensor? {
        guard i < op.inputs.count, let v = value(of: op.inputs[i]) else { return nil }
        return known[v]
    }

    /// Input `i` as integers, which must be known at import.
    func ints(_ op: TFOp, _ i: Int, _ what: String) throws -> [Int] {
        guard let t = known(op, i) else { throw unsupported(op, "\(what) (input \(i)) computed at run time; it must be a constant") }
        switch t.storage {
        case .int(let a): return a.map { Int(truncatingIfNeeded: $0) }
        case .float(let a) where a.allSatisfy({ $0 == $0.rounded() && abs($0) < 1e15 }): return a.map { Int($0) }
        default: throw malformed(op, "\(what) (input \(i)) is not integers")
        }
    }

    /// Input `i`'s integer elements as far as they are known at import: all of a
    /// constant, or those of a Pack of scalars that are constants (a shape whose
    /// batch size is computed at run time). nil when nothing is known.
    func partialInts(_ op: TFOp, _ i: Int) -> [Int?]? {
        if let all = try? ints(op, i, "") { return all }
        guard i < op.inputs.count, let (pack, _) = graph.producer(of: op.inputs[i]), pack.op == "Pack", pack.inputs.count <= 64 else { return nil }
        return pack.inputs.map { ref in
            guard let v = value(of: ref), let t = known[v], t.storage.count == 1, case .int(let a) = t.storage else { return nil }
            return a.first.map { Int(truncatingIfNeeded: $0) }
        }
    }

    /// Input `i` as an int64 value for an ONNX shape-like input: the constant
    /// converted at import, else a Cast.
    mutating func int64Input(_ op: TFOp, _ i: Int) throws -> String {
        let v = try input(op, i)
        if let t = known[v], case .int(let a) = t.storage {
            return t.dtype == .int64 ? v : constant(Tensor(ints: a, shape: t.shape), name: v + "_i64")
        }
        return apply("Cast", [v], ["to": .int(DType.int64.onnxDataType)], base: v + "_i64")
    }

    /// Input `i` (a scalar or a list of axes) as a 1-D int64 input.
    mutating func axesInput(_ op: TFOp, _ i: Int) throws -> String {
        if let t = known(op, i), case .int(let a) = t.storage {
            return constant(Tensor(ints: a, shape: [a.count]), name: op.name + "_axes")
        }
        let v = try int64Input(op, i)
        return apply("Reshape", [v, int64s([-1], name: op.name + "_flat")], base: op.name + "_axes")
    }

    // MARK: - Attributes

    func attr(_ op: TFOp, _ key: String) -> Tensorflow_AttrValue.OneOf_Value? { op.attrs[key]?.value }

    func int(_ op: TFOp, _ key: String, _ d: Int) -> Int {
        if case .i(let v)? = attr(op, key) { return Int(truncatingIfNeeded: v) }
        return d
    }

    func float(_ op: TFOp, _ key: String, _ d: Float) -> Float {
        if case .f(let v)? = attr(op, key) { return v }
        return d
    }

    func bool(_ op: TFOp, _ key: String) -> Bool {
        if case .b(let v)? = attr(op, key) { return v }
        return false
    }

    func string(_ op: TFOp, _ key: String, _ d: String) -> String {
        if case .s(let v)? = attr(op, key) { return String(decoding: v, as: UTF8.self) }
        return d
    }

    func ints(_ op: TFOp, _ key: String) -> [Int]? {
        if case .list(let l)? = attr(op, key) { return l.i.map { Int(truncatingIfNeeded: $0) } }
        return nil
    }

    func dtype(_ op: TFOp, _ key: String) throws -> DType {
        guard case .type(let t)? = attr(op, key) else { throw malformed(op, "no type attribute '\(key)'") }
        guard let d = DType(tensorFlow: t) else { throw unsupported(op, "tensors of type \(t)") }
        return d
    }
}
