import ShrinkwrapIR
import TensorFlowSchema

/// Control flow resolved at import. A While — TF2's functional loop, or a TF1
/// loop frame collapsed by `TF1Loop` — whose condition is known at import is
/// unrolled (its body translated once per iteration, TensorLists followed item
/// by item); an If whose condition is known takes its branch; a TF1 cond's
/// Switch whose predicate is known sends its data one way (the other output
/// is dead, and so is every op only it feeds) and its Merge takes the branch
/// computed. Keras' LSTM / GRU / SimpleRNN in a SavedModel or a frozen graph
/// are such loops, over the sequence's fixed length. Conditions are folded
/// (`TFFolding`); values computed from input shapes (a sequence length from
/// `Shape`) are asked of the evaluator. A condition that depends on data is refused.
extension TFOps {
    /// Most iterations one loop is unrolled to.
    static let maxIterations = 1 << 16

    static let controlFlowOps: [String: Translator] = [
        "While": unrollWhile, "StatelessWhile": unrollWhile,
        "If": takeBranch, "StatelessIf": takeBranch,
        "_TF1Loop": unrollTF1Loop,
        "Switch": takeSwitch, "RefSwitch": takeSwitch, "Merge": merge, "RefMerge": merge,
    ]

    /// While / StatelessWhile: cond and body are library functions on the loop variables.
    static let unrollWhile: Translator = { c, op in
        let initial = try op.inputs.indices.map { try c.anyInput(op, $0) }
        guard case .list(let types)? = c.attr(op, "T"), types.type.count == initial.count else {
            throw c.malformed(op, "its attribute 'T' does not list the types of its \(initial.count) loop variables")
        }
        let final = try unroll(&c, op, initial: initial, types: types.type,
                               condition: { c, vars, prefix in
                                   let out = try c.call(op, function: "cond", args: vars, prefix: prefix)
                                   guard out.count == 1 else { throw c.malformed(op, "its condition returns \(out.count) values, not 1") }
                                   return out[0]
                               },
                               body: { c, vars, prefix in try c.call(op, function: "body", args: vars, prefix: prefix) })
        for (k, v) in final.enumerated() { c.alias(op, k, to: v) }
    }

    /// A TF1 loop frame (`TF1Loop`): condition and next values computed by one copy of its body per iteration.
    static let unrollTF1Loop: Translator = { c, op in
        guard let loop = c.graph.loop(named: op.name) else { throw c.malformed(op, "no loop frame of this name") }
        let args = try op.inputs.indices.map { try c.anyInput(op, $0) }
        guard args.count == loop.arguments.count else { throw c.malformed(op, "\(args.count) values enter a loop of \(loop.arguments.count)") }
        let invariants = Array(args[loop.variables...])
        let final = try unroll(&c, op, initial: Array(args[..<loop.variables]), types: loop.types,
                               condition: { c, vars, prefix in
                                   let body = TFFlatGraph(loop: loop, prefix: prefix, library: c.graph)
                                   return try c.run(body, args: vars + invariants, outputs: [body.returns[0]], for: op, what: "the loop's condition")[0]
                               },
                               body: { c, vars, prefix in
                                   let body = TFFlatGraph(loop: loop, prefix: prefix, library: c.graph)
                                   return try c.run(body, args: vars + invariants, outputs: Array(body.returns.dropFirst()), for: op, what: "the loop's body")
                               })
        for (k, v) in final.enumerated() { c.alias(op, k, to: v) }
    }

    typealias LoopStep<R> = (inout TFContext, [String], String) throws -> R

    /// Unrolls a loop: `condition` on the variables, then `body` for their next
    /// values, while the condition is known and true. Variables computed from
    /// input shapes are asked of the evaluator once, when the first condition
    /// is not known.
    static func unroll(_ c: inout TFContext, _ op: TFOp, initial: [String], types: [Tensorflow_DataType],
                       condition: LoopStep<String>, body: LoopStep<[String]>) throws -> [String] {
        var vars = initial
        var iteration = 0
        var askedEvaluator = false
        while true {
            let cond = try condition(&c, vars, "\(op.name)/cond\(iteration)\(askedEvaluator && iteration == 0 ? "b" : "")/")
            let go = c.knownValue(cond)
            if go == nil && iteration == 0 && !askedEvaluator {
                // Loop variables computed from input shapes (a trip count): asked once, then the condition again.
                askedEvaluator = true
                try learnShapeDerived(&c, op, initial, types: types)
                continue
            }
            guard let go, go.storage.count == 1, let truth = go.bools?.first ?? go.ints.map({ $0[0] != 0 }) else {
                throw c.unsupported(op, "a loop whose condition is computed from data at run time (only loops with a trip count known at import are unrolled)")
            }
            if !truth { return vars }
            guard iteration < maxIterations else { throw c.unsupported(op, "a loop of more than \(maxIterations) iterations") }
            let next = try body(&c, vars, "\(op.name)/\(iteration)/")
            guard next.count == vars.count else {
                throw c.malformed(op, "its body returns \(next.count) values for \(vars.count) loop variables")
            }
            vars = next
            iteration += 1
        }
    }

    /// Asks the evaluator for the loop's integer variables not known at import
    /// (`types`: their element types); those it computes become known.
    static func learnShapeDerived(_ c: inout TFContext, _ op: TFOp, _ initial: [String], types: [Tensorflow_DataType]) throws {
        guard types.count == initial.count else { throw c.malformed(op, "\(types.count) types for \(initial.count) loop variables") }
        let wanted = initial.indices.filter { k in
            (types[k] == .dtInt32 || types[k] == .dtInt64) && c.lists[initial[k]] == nil && c.knownValue(initial[k]) == nil
        }.map { initial[$0] }
        let names = Array(Set(wanted)).sorted()
        guard !names.isEmpty else { return }
        for (name, value) in zip(names, try c.evaluated(names, for: op)) where value.storage.count <= TFFolding.limit {
            c.learn(name, value)
        }
    }

    /// If / StatelessIf: the branch its condition (input 0, known at import) picks, on the other inputs.
    static let takeBranch: Translator = { c, op in
        try c.arity(op, 1)
        let taken = try truth(&c, op, try c.input(op, 0), refusing: "a branch whose condition is computed from data at run time")
        let args = try (1..<op.inputs.count).map { try c.anyInput(op, $0) }
        let outs = try c.call(op, function: taken ? "then_branch" : "else_branch", args: args, prefix: "\(op.name)/\(taken ? "then" : "else")/")
        for (k, v) in outs.enumerated() { c.alias(op, k, to: v) }
    }

    /// Switch (a TF1 cond, e.g. Keras' learning phase in a frozen TF1 graph): its
    /// predicate (input 1, known at import) sends the data to output 1 (true) or 0
    /// (false); the other output is dead, and so is every op only it feeds.
    static let takeSwitch: Translator = { c, op in
        try c.arity(op, 2)
        let taken = try truth(&c, op, try c.input(op, 1), refusing: "a TF1 cond whose predicate is computed from data at run time")
        c.alias(op, taken ? 1 : 0, to: try c.anyInput(op, 0))
        c.kill(op, taken ? 0 : 1)
    }

    /// Merge: the one input computed (the branch taken); output 1 is its index.
    static let merge: Translator = { c, op in
        let inputs = op.inputs.map { c.value(of: $0) }
        guard let k = inputs.firstIndex(where: { $0 != nil && $0 != TFContext.dead }), let v = inputs[k] else {
            return c.skip(op, as: TFContext.dead)
        }
        c.alias(op, 0, to: v)
        let index = c.constant(.scalar(int: Int64(k), dtype: .int32), name: op.name + "_index")
        c.alias(op, 1, to: index)
    }

    /// A condition's truth: known at import, or computed from input shapes by the evaluator.
    static func truth(_ c: inout TFContext, _ op: TFOp, _ value: String, refusing what: String) throws -> Bool {
        var known = c.knownValue(value)
        if known == nil { known = try c.evaluated([value], for: op).first }
        guard let known, known.storage.count == 1,
              let truth = known.bools?.first ?? known.ints.map({ $0[0] != 0 }) ?? known.floats.map({ $0[0] != 0 }) else {
            throw c.unsupported(op, what)
        }
        return truth
    }
}
