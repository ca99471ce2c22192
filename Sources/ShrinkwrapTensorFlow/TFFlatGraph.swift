import ShrinkwrapIR
import TensorFlowSchema

/// One TensorFlow op of the flattened graph: a GraphDef node, or a node of a
/// function body inlined at its call (its name prefixed by the call's, "call/node").
struct TFOp {
    var name: String
    var op: String
    /// Data inputs as tensor references "node:k" (control inputs dropped).
    var inputs: [String]
    var attrs: [String: Tensorflow_AttrValue]
    /// Where the node was read, for errors: "node 'x'" or "node 'x' (function 'f')".
    var place: String
}

/// A GraphDef with the bodies of the functions its call nodes
/// (StatefulPartitionedCall, PartitionedCall, or an op named after a library
/// function) inlined: one list of ops whose inputs are "node:k" references,
/// plus aliases (a call's outputs → the body's return values, an inlined
/// argument → the caller's input). Node order is the file's (not necessarily
/// topological); `TFContext` sorts what it translates.
struct TFFlatGraph {
    let file: String
    private(set) var ops: [TFOp] = []
    private(set) var byName: [String: Int] = [:]
    /// Reference → the reference it stands for (follow with `resolve`).
    private(set) var aliases: [String: String] = [:]
    private let functions: [String: Tensorflow_FunctionDef]
    /// TF1 loops collapsed into `_TF1Loop` ops, by op name (`TF1Loop.collapse`).
    private(set) var loops: [String: TF1Loop] = [:]
    /// Ops some node waits for (a control input "^name"): never taken for outputs (a TF1 cond's pivots).
    private(set) var controlRead: Set<String> = []
    /// Nodes the file defines (graph and library): what inlining and unrolling may multiply.
    let nodesInFile: Int
    /// For a function body (`init(function:…)`): its arguments' and return values' references.
    private(set) var arguments: [String] = []
    private(set) var returns: [String] = []

    static let callOps: Set<String> = ["StatefulPartitionedCall", "PartitionedCall"]
    /// Inlining depth and the total op count over every inlined body.
    static let maxDepth = 32
    static let maxOps = 1 << 20

    /// Most ops inlining may make: a small multiple of the file's nodes (a few bytes
    /// of functions calling each other twice must not become a million ops).
    var inlineBudget: Int { min(Self.maxOps, 16 * nodesInFile + 4096) }
    /// Most ops unrolled loop bodies and taken branches may add.
    var unrollBudget: Int { min(Self.maxOps, 64 * nodesInFile + 65536) }

    init(graph: Tensorflow_GraphDef, file: String) throws {
        self.file = file
        var functions: [String: Tensorflow_FunctionDef] = [:]
        for f in graph.library.function { functions[f.signature.name] = f }
        self.functions = functions
        nodesInFile = graph.node.count + graph.library.function.reduce(0) { $0 + $1.nodeDef.count }
        try add(graph.node, scope: Scope(prefix: "", args: nil, function: nil), depth: 0)
        resolveAliases()
        try collapseLoops()
    }

    /// A function body on its own, for an op that runs it (a While's cond and
    /// body, an If's branches): each argument becomes an `_Arg` op named
    /// `prefix` + its name, the nodes are named `prefix` + theirs, and calls
    /// inside are inlined as in a graph. `depth` counts the functions around it.
    init(function f: Tensorflow_FunctionDef, prefix: String, library: TFFlatGraph, depth: Int) throws {
        file = library.file
        functions = library.functions
        nodesInFile = library.nodesInFile
        let sig = f.signature
        let place = "function '\(sig.name)'"
        guard depth < Self.maxDepth else {
            throw ImportError.unsupported(SourceLocation(file: file, place: place), what: "functions nested more than \(Self.maxDepth) deep")
        }
        var args: [String: String] = [:]
        for a in sig.inputArg {
            let name = prefix + a.name
            guard byName[name] == nil else {
                throw ImportError.malformed(SourceLocation(file: file, place: place), reason: "two arguments named '\(a.name)'")
            }
            byName[name] = ops.count
            ops.append(TFOp(name: name, op: "_Arg", inputs: [], attrs: [:], place: "argument '\(a.name)' (\(place))"))
            args[a.name] = name + ":0"
            arguments.append(name + ":0")
        }
        var scope = Scope(prefix: prefix, args: args, function: sig.name)
        for n in f.nodeDef { scope.bodyOps[n.name] = n.op }
        try add(f.nodeDef, scope: scope, depth: depth + 1)
        for out in sig.outputArg {
            guard let ret = f.ret[out.name] else {
                throw ImportError.malformed(SourceLocation(file: file, place: place), reason: "returns nothing for output '\(out.name)'")
            }
            returns.append(try reference(ret, scope: scope, place: "\(place) ret '\(out.name)'"))
        }
        resolveAliases()
        try collapseLoops()
    }

    /// One iteration's copy of a TF1 loop's body (`TF1Loop`): its arguments
    /// (loop variables, then invariants) become `_Arg` ops, every name gets
    /// `prefix`; `returns` are the condition, then each variable's next value.
    init(loop: TF1Loop, prefix: String, library: TFFlatGraph) {
        file = library.file
        functions = library.functions
        nodesInFile = library.nodesInFile
        let local = Set(loop.arguments).union(loop.body.map(\.name))
        func renamed(_ ref: String) -> String {
            guard let (node, k) = Self.split(ref), local.contains(node) else { return ref }
            return "\(prefix)\(node):\(k)"
        }
        for a in loop.arguments {
            byName[prefix + a] = ops.count
            ops.append(TFOp(name: prefix + a, op: "_Arg", inputs: [], attrs: [:], place: "loop variable '\(a)' (frame '\(loop.frame)')"))
            arguments.append(prefix + a + ":0")
        }
        for op in loop.body {
            byName[prefix + op.name] = ops.count
            ops.append(TFOp(name: prefix + op.name, op: op.op, inputs: op.inputs.map(renamed), attrs: op.attrs, place: op.place))
        }
        returns = ([loop.condition] + loop.next).map(renamed)
    }

    /// The TF1 loop an `_TF1Loop` op stands for.
    func loop(named name: String) -> TF1Loop? { loops[name] }

    /// Every alias pointed at its final target once (chains of calls returning their
    /// arguments would otherwise be walked on every lookup).
    private mutating func resolveAliases() {
        var final: [String: String] = [:]
        for key in aliases.keys {
            var chain: [String] = []
            var r = key
            while let next = aliases[r], final[r] == nil, chain.count <= aliases.count {
                chain.append(r)
                r = next
            }
            let target = final[r] ?? r
            for c in chain { final[c] = target }
        }
        aliases = final
    }

    /// TF1 while loops (Enter / Merge / Switch / NextIteration / Exit frames) as `_TF1Loop` ops.
    private mutating func collapseLoops() throws {
        guard ops.contains(where: { $0.op == "Enter" || $0.op == "RefEnter" }) else { return }
        let before = self
        let (kept, loops, exits) = try TF1Loop.collapse(ops, resolve: before.resolve, file: file)
        ops = kept
        byName = [:]
        for (k, op) in ops.enumerated() { byName[op.name] = k }
        for (exit, target) in exits { aliases[exit] = target }
        self.loops = loops
    }

    /// The library function of this name.
    func function(named name: String) -> Tensorflow_FunctionDef? { functions[name] }

    /// The op producing reference `ref` ("node:k"), after aliases.
    func producer(of ref: String) -> (op: TFOp, output: Int)? {
        let r = resolve(ref)
        guard let (name, k) = Self.split(r), let i = byName[name] else { return nil }
        return (ops[i], k)
    }

    /// `ref` with aliases followed (a bounded walk: a cycle of aliases stops).
    func resolve(_ ref: String) -> String {
        var r = ref
        var steps = 0
        while let next = aliases[r], steps <= aliases.count {
            r = next
            steps += 1
        }
        return r
    }

    /// "node:k" → (node, k); "node" → (node, 0).
    static func split(_ ref: String) -> (String, Int)? {
        guard let colon = ref.lastIndex(of: ":") else { return (ref, 0) }
        guard let k = Int(ref[ref.index(after: colon)...]), k >= 0 else { return nil }
        return (String(ref[..<colon]), k)
    }

    // MARK: - Flattening

    private struct Scope {
        var prefix: String
        /// A function body's argument names → the caller's references; nil in the main graph.
        var args: [String: String]?
        var function: String?
        /// Ops of the body by name (for "node:output_arg:index" references).
        var bodyOps: [String: String] = [:]
    }

    private mutating func add(_ nodes: [Tensorflow_NodeDef], scope: Scope, depth: Int) throws {
        var scope = scope
        for n in nodes { scope.bodyOps[n.name] = n.op }
        for n in nodes {
            let place = "node '\(scope.prefix)\(n.name)'" + (scope.function.map { " (function '\($0)')" } ?? "")
            guard ops.count < inlineBudget else {
                throw ImportError.unsupported(SourceLocation(file: file, place: place),
                                              what: "more than \(inlineBudget) ops after inlining functions (the file defines \(nodesInFile) nodes)")
            }
            var inputs: [String] = []
            for i in n.input {
                if i.hasPrefix("^") { controlRead.insert(scope.prefix + i.dropFirst()) } else { inputs.append(try reference(i, scope: scope, place: place)) }
            }
            let name = scope.prefix + n.name
            if let callee = calledFunction(n) {
                try inline(callee, at: name, inputs: inputs, place: place, depth: depth)
                continue
            }
            guard byName[name] == nil else {
                throw ImportError.malformed(SourceLocation(file: file, place: place), reason: "a second node of this name")
            }
            byName[name] = ops.count
            ops.append(TFOp(name: name, op: n.op, inputs: inputs, attrs: n.attr, place: place))
        }
    }

    private func calledFunction(_ n: Tensorflow_NodeDef) -> Tensorflow_FunctionDef? {
        if Self.callOps.contains(n.op), case .func(let f)? = n.attr["f"]?.value { return functions[f.name] }
        return functions[n.op]
    }

    /// A node input as a reference in the flattened graph.
    private func reference(_ input: String, scope: Scope, place: String) throws -> String {
        let bad = { ImportError.malformed(SourceLocation(file: self.file, place: place), reason: "input '\(input)' names nothing") }
        guard let args = scope.args else {
            guard let (node, k) = Self.split(input) else { throw bad() }
            return "\(node):\(k)"
        }
        // In a function body: "arg", or "node:output_arg:index".
        let parts = input.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 1 {
            guard let outer = args[input] else { throw bad() }
            return outer
        }
        guard parts.count <= 3, let op = scope.bodyOps[parts[0]] else { throw bad() }
        let index = parts.count == 3 ? Int(parts[2]) : 0
        guard let index, index >= 0 else { throw bad() }
        return "\(scope.prefix)\(parts[0]):\(Self.flatIndex(op: op, outputArg: parts[1], index: index))"
    }

    /// The output number of `outputArg`'s `index`-th tensor: ops with several
    /// output arguments are listed; the others have one (possibly a list).
    static func flatIndex(op: String, outputArg: String, index: Int) -> Int {
        let args: [String: [String]] = [
            "FusedBatchNorm": ["y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"],
            "FusedBatchNormV2": ["y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"],
            "FusedBatchNormV3": ["y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"],
            "Unique": ["y", "idx"],
            "TopKV2": ["values", "indices"],
        ]
        guard let names = args[op], let k = names.firstIndex(of: outputArg) else { return index }
        return k + index
    }

    private mutating func inline(_ f: Tensorflow_FunctionDef, at call: String, inputs: [String], place: String, depth: Int) throws {
        let location = SourceLocation(file: file, place: place)
        guard depth < Self.maxDepth else {
            throw ImportError.unsupported(location, what: "function calls nested more than \(Self.maxDepth) deep")
        }
        let sig = f.signature
        guard sig.inputArg.count == inputs.count else {
            throw ImportError.malformed(location, reason: "calls '\(sig.name)' with \(inputs.count) inputs; it takes \(sig.inputArg.count)")
        }
        var args: [String: String] = [:]
        for (a, ref) in zip(sig.inputArg, inputs) { args[a.name] = ref }
        var scope = Scope(prefix: call + "/", args: args, function: sig.name)
        for n in f.nodeDef { scope.bodyOps[n.name] = n.op }
        try add(f.nodeDef, scope: scope, depth: depth + 1)
        for (k, out) in sig.outputArg.enumerated() {
            guard let ret = f.ret[out.name] else {
                throw ImportError.malformed(location, reason: "function '\(sig.name)' returns nothing for output '\(out.name)'")
            }
            aliases["\(call):\(k)"] = try reference(ret, scope: scope, place: "function '\(sig.name)' ret '\(out.name)'")
        }
    }
}
