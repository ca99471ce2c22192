import CoreMLSchema
import ShrinkwrapIR

/// while_loop → an IR Loop (ONNX semantics).
///
/// MIL runs `while cond(vars): vars = body(vars)`: two blocks, each taking the
/// loop vars; the cond block returns one bool, the body block new loop vars.
/// Read as ONNX: no trip count; the loop vars are the carried values (lists as
/// the tensors `MILOpReaders+Lists.swift` makes of them); the cond block runs
/// once before the loop on the initial vars (the initial condition) and again
/// at the end of the body on the new ones (the body's condition output), each
/// copy with fresh value names. Constants the body reads live in the enclosing
/// graph (the body captures them).
extension MILOpReaders {
    static let controlFlow: [String: MILOpReader] = [
        "while_loop": { r in try r.whileLoop() },
    ]

    /// Op types in `blocks` (at any depth) the importer does not read.
    static func unsupported(in blocks: [CoreML_Specification_MILSpec_Block]) -> [String] {
        var out: [String] = []
        for b in blocks {
            for o in b.operations {
                if table[o.type] == nil, !out.contains(o.type) { out.append(o.type) }
                for t in unsupported(in: o.blocks) where !out.contains(t) { out.append(t) }
            }
        }
        return out
    }
}

typealias MILBlock = CoreML_Specification_MILSpec_Block

extension MILReader {
    mutating func whileLoop() throws {
        guard op.blocks.count == 2 else { throw bad("a while_loop needs two blocks (cond, body), has \(op.blocks.count)") }
        let cond = op.blocks[0], body = op.blocks[1]
        let initial = bindings("loop_vars") == nil ? [] : try list("loop_vars")
        let n = initial.count
        guard cond.inputs.count == n, body.inputs.count == n, body.outputs.count == n, op.outputs.count == n else {
            throw bad("\(n) loop_vars, but the cond block takes \(cond.inputs.count), the body block takes \(body.inputs.count) "
                      + "and returns \(body.outputs.count), the op has \(op.outputs.count) outputs")
        }
        guard cond.outputs.count == 1 else { throw bad("the cond block returns \(cond.outputs.count) values, not one bool") }
        // The cond block is read twice (before the loop and in the body): blocks nested in it would double at every level.
        guard cond.operations.allSatisfy({ $0.blocks.isEmpty }) else { throw refuse("a while_loop whose cond block holds a nested loop or branch") }
        let loopOp = op, loopPlace = place
        let condInit = try condition(cond, on: initial, place: "\(loopPlace) cond block")
        op = loopOp; place = loopPlace
        let graphBody = try loopBody(body, cond: cond, initial: initial)
        op = loopOp; place = loopPlace
        let outputs = op.outputs.map(\.name)
        node("Loop", ["", condInit] + initial, outputs, ["body": .graph(graphBody)])
        for (o, v) in zip(outputs, initial) {
            if let l = lists[v] { defineList(o, l) }
        }
    }

    /// The cond block read on `arguments` (its value names made fresh): its bool output.
    mutating func condition(_ cond: MILBlock, on arguments: [String], place p: String) throws -> String {
        let copy = renamed(cond, inputs: arguments)
        try readOperations(copy.operations, place: p)
        guard let result = copy.outputs.first else { throw bad("the cond block returns nothing") }
        let v = try tensor(result, place: p)
        if types[v]?.dtype == .bool || literals[v]?.type == .bool { return v }
        let b = names.fresh("\(v)_bool")
        node("Cast", [v], [b], ["to": .int(DType.bool.onnxDataType)])
        return b
    }

    /// The ONNX body: inputs (iteration, cond, loop vars…), the body block then the cond block's
    /// copy, outputs (cond, loop vars…), each a value the body makes, once.
    mutating func loopBody(_ body: MILBlock, cond: MILBlock, initial: [String]) throws -> Graph {
        var sub = self
        sub.graph = Graph()
        sub.emptyLists = [:]
        for c in graph.constants { sub.graph.setConstant(c) }
        let iteration = sub.names.fresh("\(out())_iteration"), condIn = sub.names.fresh("\(out())_cond_in")
        var inputs = [ValueInfo(name: iteration, dtype: .int64, shape: []), ValueInfo(name: condIn, dtype: .bool, shape: [])]
        for (k, v) in body.inputs.enumerated() {
            let p = "\(place) body block input[\(k)] '\(v.name)'"
            guard !v.name.isEmpty, types[v.name] == nil else {
                throw ImportError.malformed(loc(p), reason: "the name is empty or already used")
            }
            switch (v.type.type, lists[initial[k]]) {
            case (.tensorType(let t)?, nil):
                sub.types[v.name] = (MILTypes.dtype(t.dataType), MILTypes.fixedShape(t))
            case (.listType?, let l?):
                sub.defineList(v.name, l)
            default:
                throw ImportError.malformed(loc(p), reason: "its type does not match loop_vars[\(k)] '\(initial[k])'")
            }
            let t = sub.types[v.name]
            inputs.append(ValueInfo(name: v.name, dtype: t?.dtype, shape: t?.shape.map { $0.map(Dim.fixed) }))
        }
        sub.graph.inputs = inputs
        try sub.readOperations(body.operations, place: "\(place) body block")
        sub.op = op; sub.place = place
        var results: [String] = []
        for (k, name) in body.outputs.enumerated() {
            let v = try sub.tensor(name, place: "\(place) body block output[\(k)]")
            if let l = lists[initial[k]], sub.lists[v]?.shape != l.shape {
                throw bad("the body turns list loop var \(k) of shape \(l.shape) into \(sub.lists[v].map { "\($0.shape)" } ?? "a tensor")")
            }
            results.append(v)
        }
        results.insert(try sub.condition(cond, on: results, place: "\(place) cond block (in the body)"), at: 0)
        sub.op = op; sub.place = place
        let made = Set(sub.graph.nodes.flatMap(\.outputs))
        var seen = Set<String>()
        for k in results.indices {
            if !made.contains(results[k]) || seen.contains(results[k]) {
                let copy = sub.names.fresh("\(results[k])_result")
                sub.node("Identity", [results[k]], [copy])
                sub.types[copy] = sub.types[results[k]]
                results[k] = copy
            }
            seen.insert(results[k])
        }
        let outputs = results.enumerated().map { k, v in
            ValueInfo(name: v, dtype: k == 0 ? .bool : inputs[k + 1].dtype, shape: k == 0 ? [] : sub.shape(v).map { $0.map(Dim.fixed) })
        }
        sub.graph.outputs = outputs
        sub.dropUnreadEmptyLists()
        for c in sub.graph.constants where !graph.isConstant(c.name) { graph.setConstant(c) }
        names = sub.names
        return Graph(name: out(), inputs: inputs, outputs: outputs, nodes: sub.graph.nodes)
    }

    /// `block` with its inputs bound to `inputs` and every value it defines (at any depth) given a fresh name.
    mutating func renamed(_ block: MILBlock, inputs: [String]) -> MILBlock {
        var map: [String: String] = [:]
        for (v, a) in zip(block.inputs, inputs) { map[v.name] = a }
        return renamed(block, map: &map)
    }

    private mutating func renamed(_ block: MILBlock, map: inout [String: String]) -> MILBlock {
        var b = block
        for k in b.operations.indices {
            var o = b.operations[k]
            for key in o.inputs.keys.sorted() {
                guard var argument = o.inputs[key] else { continue }
                for j in argument.arguments.indices {
                    if case .name(let n)? = argument.arguments[j].binding, let r = map[n] { argument.arguments[j].binding = .name(r) }
                }
                o.inputs[key] = argument
            }
            for j in o.blocks.indices {
                for i in o.blocks[j].inputs.indices {
                    let fresh = names.fresh(o.blocks[j].inputs[i].name)
                    map[o.blocks[j].inputs[i].name] = fresh
                    o.blocks[j].inputs[i].name = fresh
                }
                o.blocks[j] = renamed(o.blocks[j], map: &map)
            }
            for j in o.outputs.indices {
                let fresh = names.fresh(o.outputs[j].name)
                map[o.outputs[j].name] = fresh
                o.outputs[j].name = fresh
            }
            b.operations[k] = o
        }
        b.outputs = b.outputs.map { map[$0] ?? $0 }
        return b
    }
}
