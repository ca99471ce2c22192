import ShrinkwrapIR

/// BROADCAST_TO → Expand (the shape a constant): what the exporter writes
/// for ONNX Expand (magika's byte mask), read back.
extension TFLiteOps {
    static func broadcastTo(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        if c.constantEncoding(op.inputs[1]) == nil { return try broadcastToAtRunTime(&c, op) }
        let shape = try c.requireInts(op, 1, "shape")
        c.emit("Expand", [c.value(op.inputs[0]), c.int64Constant("shape", shape)], [c.value(op.outputs[0])])
    }
}
