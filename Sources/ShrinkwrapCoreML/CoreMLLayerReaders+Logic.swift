// Comparison, logical, whereBroadcastable and broadcastToStatic layers (specification 4) → IR nodes.
// Core ML's comparisons give 1.0 / 0.0 and its logical ops read non-zero as
// true, so boolean IR values are cast at the layer's edges.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    // MARK: logic

    /// A float blob as a boolean IR value (non-zero is true).
    static func asBool(_ b: inout GraphBuilderState, _ v: String, _ name: String) -> String {
        b.node("Cast", "\(name)_bool", [v], [b.temp("\(v)_bool")], ["to": .int(9)], rank: b.ranks[v])
    }

    /// A boolean result `t` written to float blob `y` as 1.0 / 0.0.
    static func asFloat(_ b: inout GraphBuilderState, _ t: String, to y: String, _ name: String) {
        b.node("Cast", "\(name)_float", [t], [y], ["to": .int(1)], rank: b.ranks[t])
    }

    /// equal … greaterEqual: two broadcasting inputs, or one compared with alpha.
    static let compare: Reader = { b, l, p in
        guard (1...2).contains(l.input.count), l.output.count == 1 else {
            throw ImportError.malformed(b.loc(p), reason: "needs 1 or 2 inputs and 1 output")
        }
        var a = try b.value(l.input[0], place: p)
        let y = try b.define(l.output[0], place: p)
        let op: String, alpha: Float
        var negate = false
        switch l.layer {
        case .equal(let q)?: op = "Equal"; alpha = q.alpha
        case .notEqual(let q)?: op = "Equal"; alpha = q.alpha; negate = true
        case .lessThan(let q)?: op = "Less"; alpha = q.alpha
        case .lessEqual(let q)?: op = "LessOrEqual"; alpha = q.alpha
        case .greaterThan(let q)?: op = "Greater"; alpha = q.alpha
        case .greaterEqual(let q)?: op = "GreaterOrEqual"; alpha = q.alpha
        default: throw LayerReaderError("no reader")
        }
        var c = l.input.count == 2 ? try b.value(l.input[1], place: p) : b.floats("\(l.name)_alpha", [alpha], shape: [])
        if b.graph.inputs.contains(where: { $0.name == a }) != b.graph.inputs.contains(where: { $0.name == c }) {
            // An int32 input against a float value: Core ML computes in float.
            a = b.asFloat(a); c = b.asFloat(c)
        }
        let r = [b.ranks[a], b.ranks[c]].compactMap { $0 }.max()
        var t = b.node(op, l.name, [a, c], [b.temp("\(l.name)_bool")], rank: r)
        if negate { t = b.node("Not", "\(l.name)_not", [t], [b.temp("\(l.name)_not")], rank: r) }
        asFloat(&b, t, to: y, l.name)
    }

    /// logicalAnd / Or / Xor (two broadcasting inputs) and logicalNot.
    static let logical: Reader = { b, l, p in
        let not: Bool
        if case .logicalNot? = l.layer { not = true } else { not = false }
        guard l.input.count == (not ? 1 : 2), l.output.count == 1 else {
            throw ImportError.malformed(b.loc(p), reason: "needs \(not ? 1 : 2) inputs and 1 output")
        }
        let ins = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let op: String
        switch l.layer {
        case .logicalAnd?: op = "And"
        case .logicalOr?: op = "Or"
        case .logicalXor?: op = "Xor"
        default: op = "Not"
        }
        let bools = ins.map { asBool(&b, $0, l.name) }
        let r = ins.compactMap { b.ranks[$0] }.max()
        let t = b.node(op, l.name, bools, [b.temp("\(l.name)_bool")], rank: r)
        asFloat(&b, t, to: y, l.name)
    }

    /// whereBroadcastable(condition, a, b): condition non-zero picks a.
    static let whereBroadcastable: Reader = { b, l, p in
        guard l.input.count == 3, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 3 inputs and 1 output") }
        let ins = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let c = asBool(&b, ins[0], l.name)
        b.node("Where", l.name, [c, ins[1], ins[2]], [y], rank: ins.compactMap { b.ranks[$0] }.max())
    }

    static let broadcastToStatic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let shape = l.broadcastToStatic.targetShape
        guard !shape.isEmpty, shape.allSatisfy({ $0 >= 1 && $0 <= 1 << 31 }) else {
            throw ImportError.malformed(b.loc(p), reason: "broadcastToStatic targetShape \(shape)")
        }
        b.node("Expand", l.name, [x, b.ints("\(l.name)_shape", shape.map { Int($0) })], [y], rank: shape.count)
    }
}
