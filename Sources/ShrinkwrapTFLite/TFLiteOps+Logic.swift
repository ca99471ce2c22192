import FlatBuffers
import ShrinkwrapIR

/// Comparison and selection translators: NOT_EQUAL, SQUARE, SELECT / SELECT_V2
/// (EQUAL, LESS, …, LOGICAL_AND / OR / NOT map one to one in the table).
extension TFLiteOps {
    static func notEqual(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let eq = c.fresh(c.value(op.outputs[0]) + "_eq")
        c.emit("Equal", [c.value(op.inputs[0]), c.value(op.inputs[1])], [eq])
        c.emit("Not", [eq], [c.value(op.outputs[0])])
    }

    static func square(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let x = c.value(op.inputs[0])
        c.emit("Mul", [x, x], [c.value(op.outputs[0])])
    }

    /// SELECT_V2 broadcasts like ONNX Where. SELECT (v1) also takes a rank-1 condition over the first
    /// dimension of higher-rank values: that condition gets trailing unit axes first.
    static func select(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, v2: Bool) throws {
        try arity(c, op, 3)
        var cond = c.value(op.inputs[0])
        let condRank = c.shape(op.inputs[0]).count, valueRank = c.shape(op.inputs[1]).count
        if !v2, condRank == 1, valueRank > 1 {
            let expanded = c.fresh(cond + "_rows")
            c.emit("Unsqueeze", [cond, c.int64Constant("select_axes", Array(1..<valueRank))], [expanded])
            cond = expanded
        }
        c.emit("Where", [cond, c.value(op.inputs[1]), c.value(op.inputs[2])], [c.value(op.outputs[0])])
    }
}
