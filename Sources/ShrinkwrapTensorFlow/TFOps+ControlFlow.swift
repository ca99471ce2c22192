import ShrinkwrapIR
import TensorFlowSchema

/// TF2's functional control flow, resolved at import: a While whose condition
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
    ]

    static let unrollWhile: Translator = { c, op in
        let initial = try op.inputs.indices.map { try c.anyInput(op, $0) }
        var vars = initial
        var iteration = 0
        var askedEvaluator = false
        while true {
            let cond = try c.call(op, function: "cond", args: vars, prefix: "\(op.name)/cond\(iteration)/")
            guard cond.count == 1 else { throw c.malformed(op, "its condition returns \(cond.count) values, not 1") }
            var go = c.knownValue(cond[0])
            if go == nil && iteration == 0 && !askedEvaluator {
                // Loop variables computed from input shapes (a trip count): asked once, then the condition again.
                askedEvaluator = true
                try learnShapeDerived(&c, op, initial)
                continue
            }
            guard let go, go.storage.count == 1, let truth = go.bools?.first ?? go.ints.map({ $0[0] != 0 }) else {
                throw c.unsupported(op, "a loop whose condition is computed from data at run time (only loops with a trip count known at import are unrolled)")
            }
            if !truth { break }
            guard iteration < maxIterations else { throw c.unsupported(op, "a loop of more than \(maxIterations) iterations") }
            let next = try c.call(op, function: "body", args: vars, prefix: "\(op.name)/\(iteration)/")
            guard next.count == vars.count else {
                throw c.malformed(op, "its body returns \(next.count) values for \(vars.count) loop variables")
            }
            vars = next
            iteration += 1
        }
        for (k, v) in vars.enumerated() { c.alias(op, k, to: v) }
    }

    /// Asks the evaluator for the loop's integer inputs not known at import
    /// (types from the `T` attribute); those it computes become known.
    static func learnShapeDerived(_ c: inout TFContext, _ op: TFOp, _ initial: [String]) throws {
        guard case .list(let types)? = c.attr(op, "T"), types.type.count == initial.count else {
            throw c.malformed(op, "its attribute 'T' does not list the types of its \(initial.count) loop variables")
        }
        let wanted = initial.indices.filter { k in
            (types.type[k] == .dtInt32 || types.type[k] == .dtInt64) && c.lists[initial[k]] == nil && c.knownValue(initial[k]) == nil
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
