import ShrinkwrapIR

/// REVERSE_V2 → ONNX Slice with step −1 over the reversed axes (ONNX has no
/// reverse op; a Slice from the last element past the first is one).
extension TFLiteOps {
    static func reverse(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let axes = try c.requireInts(op, 1, "axis")
        guard !axes.isEmpty, Set(axes).count == axes.count else {
            throw ImportError.malformed(c.loc(op), reason: "REVERSE_V2 axes \(axes)")
        }
        let k = axes.count
        c.emit("Slice", [c.value(op.inputs[0]), c.int64Constant("starts", [Int](repeating: -1, count: k)),
                         c.int64Constant("ends", [Int](repeating: Int(Int64.min), count: k)),
                         c.int64Constant("axes", axes), c.int64Constant("steps", [Int](repeating: -1, count: k))],
               [c.value(op.outputs[0])])
    }
}
