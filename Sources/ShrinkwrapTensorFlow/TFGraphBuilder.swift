import ShrinkwrapIR
import TensorFlowSchema

/// Turns a flattened TensorFlow graph into the IR: the ops the outputs need
/// (from the inputs on), every unsupported one listed at once, translated in
/// dependency order.
enum TFGraphBuilder {
    /// `inputs` nil: every Placeholder the outputs depend on, named after its node.
    static func build(_ flat: TFFlatGraph, inputs: [(name: String, ref: String)]?, outputs: [(name: String, ref: String)],
                      variable: @escaping (TFOp) throws -> Tensor, version: String) throws -> Graph {
        let stops = Set((inputs ?? []).map { flat.resolve($0.ref) })
        let needed = try reachable(flat, from: outputs.map(\.ref), stoppingAt: stops)
        let ins = inputs ?? needed.filter { flat.ops[$0].op == "Placeholder" }.map { (flat.ops[$0].name, "\(flat.ops[$0].name):0") }
        try checkSupported(flat, needed.filter { !stops.contains("\(flat.ops[$0].name):0") })
        var c = TFContext(graph: flat, variable: variable)
        var inputInfos: [ValueInfo] = []
        for (name, ref) in ins {
            guard let (op, _) = flat.producer(of: ref) else {
                throw ImportError.malformed(SourceLocation(file: flat.file, place: "input '\(name)'"), reason: "names no node")
            }
            let info = inputInfo(name, op, c)
            c.bind(ref, to: info.name)
            inputInfos.append(info)
        }
        for i in try ordered(flat, needed) {
            let op = flat.ops[i]
            if stops.contains("\(op.name):0") || (op.op == "Placeholder" && c.value(of: "\(op.name):0") != nil) { continue }
            guard let translate = TFOps.table[op.op] else { continue }  // checked above
            try translate(&c, op)
        }
        var outputNames: [String] = []
        for (name, ref) in outputs {
            guard let v = c.value(of: ref) else {
                throw ImportError.malformed(SourceLocation(file: flat.file, place: "output '\(name)'"), reason: "tensor '\(ref)' is never computed")
            }
            if v == name && !outputNames.contains(name) && !inputInfos.contains(where: { $0.name == name }) {
                outputNames.append(name)
                continue
            }
            let out = c.defined.contains(name) || outputNames.contains(name) ? c.fresh(name) : name
            c.emit("Identity", [v], [out], name: out)
            outputNames.append(out)
        }
        let nodes = c.nodes.cancellingInverseTransposes(keeping: Set(outputNames))
        var read = Set(nodes.flatMap(\.inputs))
        read.formUnion(outputNames)
        let graph = Graph(name: "", inputs: inputInfos, outputs: outputNames.map { ValueInfo(name: $0, dtype: nil, shape: nil) },
                          nodes: nodes,
                          constants: c.constants.filter { read.contains($0.name) }, sourceFormat: "TensorFlow", sourceVersion: version)
        return try graph.checkedAgainstOpTable(file: flat.file)
    }

    /// The graph input for a Placeholder (or another op when the caller cut the graph there).
    static func inputInfo(_ name: String, _ op: TFOp, _ c: TFContext) -> ValueInfo {
        let dtype = (try? c.dtype(op, "dtype")) ?? (try? c.dtype(op, "T"))
        guard case .shape(let s)? = c.attr(op, "shape"), !s.unknownRank else { return ValueInfo(name: name, dtype: dtype, shape: nil) }
        let dims: [Dim] = s.dim.enumerated().map { k, d in
            d.size >= 0 ? .fixed(Int(d.size)) : .symbolic(k == 0 ? "batch" : "\(name)_d\(k)")
        }
        return ValueInfo(name: name, dtype: dtype, shape: dims)
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
