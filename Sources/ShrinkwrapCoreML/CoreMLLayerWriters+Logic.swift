// Comparisons, logical ops, Where and Expand → the NeuralNetwork layers of specification 4
// (equal … greaterEqual, logicalAnd / Or / Xor / Not, whereBroadcastable, broadcastToStatic).
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    // MARK: logic

    /// Equal, Less, Greater, LessOrEqual, GreaterOrEqual: 1.0 where true, else
    /// 0.0. A scalar constant operand becomes the layer's alpha (the
    /// comparison flipped when the constant comes first); otherwise both
    /// operands broadcast.
    static let compare: Writer = { w, n in
        guard let a = n.input(0), let b = n.input(1) else { throw LayerWriterError("needs two inputs") }
        try w.needND("comparison layers")
        let ys = try w.shape(n.outputs[0])
        func scalarConstant(_ v: String) throws -> Float? {
            guard w.graph.isConstant(v), try w.shape(v).reduce(1, *) == 1 else { return nil }
            return try w.values(v).first
        }
        var op = n.opType
        var inputs = [a, b]
        var alpha: Float?
        if let v = try scalarConstant(b), !w.graph.isConstant(a), try w.shape(a) == ys {
            alpha = v
            inputs = [a]
        } else if let v = try scalarConstant(a), !w.graph.isConstant(b), try w.shape(b) == ys {
            alpha = v
            inputs = [b]
            op = flipped[op] ?? op
        }
        let blobs = try inputs.map { try w.inputBlob($0) }
        var l = w.layer(n.name, inputs: blobs, outputs: out(n))
        let k = alpha ?? 0
        switch op {
        case "Equal": l.equal.alpha = k
        case "Less": l.lessThan.alpha = k
        case "Greater": l.greaterThan.alpha = k
        case "LessOrEqual": l.lessEqual.alpha = k
        case "GreaterOrEqual": l.greaterEqual.alpha = k
        default: throw LayerWriterError("no comparison layer")
        }
        w.add(l)
    }

    /// a ∘ b ⇔ b ∘' a.
    static let flipped = ["Less": "Greater", "Greater": "Less", "LessOrEqual": "GreaterOrEqual", "GreaterOrEqual": "LessOrEqual"]

    /// And, Or, Xor (two broadcasting inputs) and Not, on 0.0 / non-zero values.
    static let logical: Writer = { w, n in
        let ins = n.inputs.filter { !$0.isEmpty }
        guard ins.count == (n.opType == "Not" ? 1 : 2) else { throw LayerWriterError("\(ins.count) inputs") }
        try w.needND("logical layers")
        var l = w.layer(n.name, inputs: try ins.map { try w.inputBlob($0) }, outputs: out(n))
        switch n.opType {
        case "And": l.logicalAnd = .init()
        case "Or": l.logicalOr = .init()
        case "Xor": l.logicalXor = .init()
        default: l.logicalNot = .init()
        }
        w.add(l)
    }

    /// Where(condition, a, b): the three inputs broadcast.
    static let whereOp: Writer = { w, n in
        guard let c = n.input(0), let a = n.input(1), let b = n.input(2) else { throw LayerWriterError("needs three inputs") }
        try w.needND("whereBroadcastable")
        var l = w.layer(n.name, inputs: try [c, a, b].map { try w.inputBlob($0) }, outputs: out(n))
        l.whereBroadcastable = .init()
        w.add(l)
    }

    /// Expand: the output's static shape is the target (the shape input may be computed).
    static let expand: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        if xs == ys, !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        try w.needND("broadcastToStatic")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.broadcastToStatic.targetShape = (ys.isEmpty ? [1] : ys).map { UInt64($0) }
        w.add(l)
    }
}
