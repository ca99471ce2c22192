import ShrinkwrapIR
import TensorFlowSchema

/// Control flow resolved at import: a While (TF2's functional loop, or a TF1
/// loop frame collapsed by `TF1Loop`) whose condition
/// is known at import is unrolled (its body translated once per iteration,
/// TensorLists followed item by item), an If whose condition is known takes
/// its branch. Keras' LSTM / GRU / SimpleRNN in a SavedModel or a frozen
/// graph are such loops, over the sequence's fixed length. The condition's
/// inputs are folded (`TFFolding`); those computed from input shapes (the
/// sequence length from `Shape`) are asked of the evaluator once, before
/// the first iteration. A condition that depends on data is refused.
extension TFOps {
    /// Most iterations one loop is unrolled to.
    static let maxIterations = 1 << 16

    static let controlFlowOps: [String: Translator] = [
        "While": unrollWhile, "StatelessWhile": unrollWhile,
        "If": takeBranch, "StatelessIf": takeBranch,
        "_TF1Loop": unrollTF1Loop,
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
        let condition = try c.input(op, 0)
        var known = c.knownValue(condition)
        if known == nil {
            let values = try c.evaluated([condition], for: op)
            known = values.first
        }
        guard let known, known.storage.count == 1, let truth = known.bools?.first ?? known.ints.map({ $0[0] != 0 }) ?? known.floats.map({ $0[0] != 0 }) else {
            throw c.unsupported(op, "a branch whose condition is computed from data at run time")
        }
        let args = try (1..<op.inputs.count).map { try c.anyInput(op, $0) }
        let outs = try c.call(op, function: truth ? "then_branch" : "else_branch", args: args, prefix: "\(op.name)/\(truth ? "then" : "else")/")
        for (k, v) in outs.enumerated() { c.alias(op, k, to: v) }
    }
}
