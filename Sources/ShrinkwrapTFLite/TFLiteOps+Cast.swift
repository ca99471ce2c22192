import ShrinkwrapIR

/// CAST → Cast to the output tensor's element type (CastOptions, when
/// present, repeats what the tensors declare).
extension TFLiteOps {
    static func cast(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let out = op.outputs[0]
        guard out >= 0, out < c.model.tensors.count, let to = TFLiteContext.dtype(c.model.tensors[out].type) else {
            throw ImportError.unsupported(c.loc(op), what: "CAST to an element type without an IR form")
        }
        c.emit("Cast", [c.value(op.inputs[0])], [c.value(out)], ["to": .int(to.onnxDataType)])
    }
}
