import ShrinkwrapIR
import TensorFlowSchema

/// Turns a flattened TensorFlow graph into the IR: the ops the outputs need
/// (from the inputs on), every unsupported one listed at once, translated in
/// dependency order.
enum TFGraphBuilder {
    /// `inputs` nil: every Placeholder the outputs depend on, named after its node.
    /// `declared`: the signature's TensorInfo of inputs and outputs by name (a SavedModel's), for their types and shapes.
    /// `found`: the outputs were guessed (ops nobody reads), so those in a TF1 cond's branch not taken are dropped.
    static func build(_ flat: TFFlatGraph, inputs: [(name: String, ref: String)]?, outputs: [(name: String, ref: String)],
                      declared: [String: Tensorflow_TensorInfo] = [:], found: Bool = false,
                      variable: @escaping (TFOp) throws -> Tensor, evaluate: ImportEvaluator?, version: String) throws -> Graph {
        let stops = Set((inputs ?? []).map { flat.resolve($0.ref) })
        let needed = try reachable(flat, from: outputs.map(\.ref), stoppingAt: stops)
        let ins = inputs ?? needed.filter { flat.ops[$0].op == "Placeholder" }.map { (flat.ops[$0].name, "\(flat.ops[$0].name):0") }
        var c = TFContext(graph: flat, variable: variable, evaluate: evaluate)
        for (name, ref) in ins {
            guard let (op, _) = flat.producer(of: ref) else {
                throw ImportError.malformed(SourceLocation(file: flat.file, place: "input '\(name)'"), reason: "names no node")
            }
            let info = inputInfo(name, op, c)
            c.bind(ref, to: info.name)
            c.inputInfos.append(info)
        }
        try translate(&c, outputs: outputs.map(\.ref), stops: stops)
        var outputNames: [String] = []
        var taken: Set<String> = []  // output names so far (sets: a file may name thousands of outputs)
        let inputNames = Set(c.inputInfos.map(\.name))
        var outputs = outputs
        if found {
            outputs.removeAll { c.value(of: $0.ref) == TFContext.dead }
            guard !outputs.isEmpty else {
                throw ImportError.malformed(SourceLocation(file: flat.file, place: "GraphDef"), reason: "every op nobody reads lies in a branch not taken")
            }
        }
        for (name, ref) in outputs {
            guard let v = c.value(of: ref) else {
                throw ImportError.malformed(SourceLocation(file: flat.file, place: "output '\(name)'"), reason: "tensor '\(ref)' is never computed")
            }
            guard c.lists[v] == nil else {
                throw ImportError.unsupported(SourceLocation(file: flat.file, place: "output '\(name)'"), what: "a TensorList as a graph output")
            }
            guard v != TFContext.dead else {
                throw ImportError.malformed(SourceLocation(file: flat.file, place: "output '\(name)'"), reason: "tensor '\(ref)' lies in a branch not taken")
            }
            if v == name && !taken.contains(name) && !inputNames.contains(name) {
                outputNames.append(name)
                taken.insert(name)
                continue
            }
            let out = c.defined.contains(name) || taken.contains(name) ? c.fresh(name) : name
            c.nodes.append(Node(name: out, opType: "Identity", inputs: [v], outputs: [out]))
            outputNames.append(out)
            taken.insert(out)
        }
        let outputInfos = zip(outputNames, outputs).map { outputInfo($0, $1.ref, flat, declared: declared[$1.name]) }
        let nodes = live(c.nodes.cancellingInverseTransposes(keeping: Set(outputNames)), outputs: outputNames)
        var read = Set(nodes.flatMap(\.inputs))
        read.formUnion(outputNames)
        let graph = Graph(name: "", inputs: c.inputInfos, outputs: outputInfos,
                          nodes: nodes,
                          constants: c.constants.filter { read.contains($0.name) }, sourceFormat: "TensorFlow", sourceVersion: version)
        return try graph.checkedAgainstOpTable(file: flat.file)
    }

    /// Translates the ops of `c.graph` that `outputs` need, in dependency order,
    /// not looking past `stops` (inputs bound already); every unsupported op listed at once.
    /// Ops after a TF1 cond's Switch may lie in a branch not taken, which is
    /// skipped: those are checked as they come, after translating the rest.
    static func translate(_ c: inout TFContext, outputs: [String], stops: Set<String>) throws {
        let flat = c.graph
        let needed = try reachable(flat, from: outputs, stoppingAt: stops)
        let maybeDead = downstreamOfSwitches(flat, needed)
        try checkSupported(flat, needed.filter { !stops.contains("\(flat.ops[$0].name):0") && !maybeDead.contains($0) })
        var missing: [Int] = []
        for i in try ordered(flat, needed) {
            let op = flat.ops[i]
            if stops.contains("\(op.name):0") || (op.op == "Placeholder" && c.value(of: "\(op.name):0") != nil) { continue }
            let inputs = op.inputs.map { c.value(of: $0) }
            if inputs.contains(TFContext.missing) {
                c.skip(op, as: TFContext.missing)
                continue
            }
            if inputs.contains(TFContext.dead) && !["Merge", "RefMerge"].contains(op.op) {
                c.skip(op, as: TFContext.dead)
                continue
            }
            guard let translate = TFOps.table[op.op] else {
                missing.append(i)
                c.skip(op, as: TFContext.missing)
                continue
            }
            try translate(&c, op)
        }
        if !missing.isEmpty { try checkSupported(flat, missing) }
    }

    /// The ops of `needed` that read a Switch, directly or not.
    static func downstreamOfSwitches(_ flat: TFFlatGraph, _ needed: [Int]) -> Set<Int> {
        let switches = needed.filter { ["Switch", "RefSwitch"].contains(flat.ops[$0].op) }
        guard !switches.isEmpty else { return [] }
        let set = Set(needed)
        var readers: [Int: [Int]] = [:]
        for i in needed {
            for input in flat.ops[i].inputs {
                if let (op, _) = flat.producer(of: input), let j = flat.byName[op.name], set.contains(j) { readers[j, default: []].append(i) }
            }
        }
        var found = Set<Int>()
        var pending = switches
        while let k = pending.popLast() {
            for r in readers[k] ?? [] where found.insert(r).inserted { pending.append(r) }
        }
        return found
    }

    /// `nodes` (in dependency order) without those no output depends on: the
    /// conditions of unrolled loops, values only shape arithmetic read.
    static func live(_ nodes: [Node], outputs: [String]) -> [Node] {
        var needed = Set(outputs)
        var keep = [Bool](repeating: false, count: nodes.count)
        for (k, n) in nodes.enumerated().reversed() where n.outputs.contains(where: { needed.contains($0) }) {
            keep[k] = true
            needed.formUnion(n.readNames)
        }
        return nodes.indices.filter { keep[$0] }.map { nodes[$0] }
    }

    /// The graph input for a Placeholder (or another op when the caller cut the graph there).
    static func inputInfo(_ name: String, _ op: TFOp, _ c: TFContext) -> ValueInfo {
        let dtype = (try? c.dtype(op, "dtype")) ?? (try? c.dtype(op, "T"))
        guard case .shape(let s)? = c.attr(op, "shape") else { return ValueInfo(name: name, dtype: dtype, shape: nil) }
        return ValueInfo(name: name, dtype: dtype, shape: dims(s, name: name))
    }

    /// A TensorFlow shape as IR dims: unknown sizes symbolic ("batch" on axis 0); nil for an unknown rank.
    static func dims(_ s: Tensorflow_TensorShapeProto, name: String) -> [Dim]? {
        guard !s.unknownRank else { return nil }
        return s.dim.enumerated().map { k, d in d.size >= 0 ? .fixed(Int(d.size)) : .symbolic(k == 0 ? "batch" : "\(name)_d\(k)") }
    }

    /// An output's type and shape as the model declares them: the signature's
    /// TensorInfo, else the producing op's attributes (T / dtype / out_type,
    /// _output_shapes); unknown parts stay nil.
    static func outputInfo(_ name: String, _ ref: String, _ flat: TFFlatGraph, declared: Tensorflow_TensorInfo?) -> ValueInfo {
        if let declared, let dtype = DType(tensorFlow: declared.dtype) {
            return ValueInfo(name: name, dtype: dtype, shape: declared.hasTensorShape ? dims(declared.tensorShape, name: name) : nil)
        }
        guard let (op, k) = flat.producer(of: ref) else { return ValueInfo(name: name, dtype: nil, shape: nil) }
        var dtype: DType?
        for key in ["T", "dtype", "out_type", "DstT", "Tout"] {
            switch op.attrs[key]?.value {
            case .type(let t)?: dtype = DType(tensorFlow: t)
            case .list(let l)? where k < l.type.count: dtype = DType(tensorFlow: l.type[k])
            default: continue
            }
            break
        }
        var shape: [Dim]?
        if case .list(let l)? = op.attrs["_output_shapes"]?.value, k < l.shape.count { shape = dims(l.shape[k], name: name) }
        return ValueInfo(name: name, dtype: dtype, shape: shape)
    }

    /// Indices of the ops the outputs depend on (data inputs only), not looking past `stops`.
    static func reachable(_ flat: TFFlatGraph, from outputs: [String], stoppingAt stops: Set<String>) throws -> [Int] {
        var seen: Set<Int> = []
        var stack: [Int] = []
        for ref in outputs {
            guard let (op, _) = flat.producer(of: ref), let i = flat.byName[op.name] else {
                throw ImportError.malformed(SourceLocation(file: flat.file, place: "output '\(ref)'"), reason: "names no node")
            }
            if seen.insert(i).inserted { stack.append(i) }
        }
        while let i = stack.popLast() {
            if stops.contains("\(flat.ops[i].name):0") { continue }
            for input in flat.ops[i].inputs {
                guard let (op, _) = flat.producer(of: input), let j = flat.byName[op.name] else {
                    throw ImportError.malformed(SourceLocation(file: flat.file, place: flat.ops[i].place), reason: "input '\(input)' names no node")
                }
                if seen.insert(j).inserted { stack.append(j) }
            }
        }
        return seen.sorted()
    }

    /// Every op without a translator, at once: "Op (node 'x')".
    static func checkSupported(_ flat: TFFlatGraph, _ needed: [Int]) throws {
        var missing: [String] = []
        for i in needed where TFOps.table[flat.ops[i].op] == nil {
            let op = flat.ops[i]
            var why = ""
            if TFOps.controlFlow.contains(op.op) { why = ": control flow is not supported" }
            if TFFlatGraph.callOps.contains(op.op) { why = ": calls a function the library lacks" }
            missing.append("\(op.op) (\(op.place)\(why))")
        }
        guard missing.isEmpty else { throw ImportError.unsupportedOps(file: flat.file, ops: missing) }
    }

    /// `needed` in dependency order (Kahn's algorithm); a cycle is an error.
    static func ordered(_ flat: TFFlatGraph, _ needed: [Int]) throws -> [Int] {
        let set = Set(needed)
        var pending: [Int: Int] = [:]
        var readers: [Int: [Int]] = [:]
        for i in needed {
            var count = 0
            for input in flat.ops[i].inputs {
                guard let (op, _) = flat.producer(of: input), let j = flat.byName[op.name], set.contains(j) else { continue }
                readers[j, default: []].append(i)
                count += 1
            }
            pending[i] = count
        }
        var ready = needed.filter { pending[$0] == 0 }.reversed() as [Int]
        var order: [Int] = []
        while let i = ready.popLast() {
            order.append(i)
            for r in readers[i] ?? [] {
                pending[r, default: 0] -= 1
                if pending[r] == 0 { ready.append(r) }
            }
        }
        guard order.count == needed.count else {
            let stuck = needed.filter { (pending[$0] ?? 0) > 0 }.prefix(5).map { flat.ops[$0].name }
            throw ImportError.malformed(SourceLocation(file: flat.file, place: "GraphDef"), reason: "the graph has a cycle through \(stuck)")
        }
        return order
    }
}
