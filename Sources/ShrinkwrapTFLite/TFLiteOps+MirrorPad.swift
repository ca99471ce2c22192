import ShrinkwrapIR

/// MIRROR_PAD (REFLECT) → Pad with mode reflect, which the exporter writes
/// for ONNX's reflect pads. SYMMETRIC (the edge repeated) has no ONNX mode.
extension TFLiteOps {
    static func mirrorPad(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let o = try c.options(op, "MirrorPadOptions")
        let mode: Int8 = try c.option(o, 0, Int8(0), op)
        guard mode == 0 else { throw ImportError.unsupported(c.loc(op), what: "MIRROR_PAD mode SYMMETRIC (ONNX reflects without the edge)") }
        let p = try c.requireInts(op, 1, "paddings")
        guard p.count % 2 == 0 else { throw ImportError.malformed(c.loc(op), reason: "paddings \(p) are not [rank, 2]") }
        let befores = stride(from: 0, to: p.count, by: 2).map { p[$0] }, afters = stride(from: 1, to: p.count, by: 2).map { p[$0] }
        c.emit("Pad", [c.value(op.inputs[0]), c.int64Constant("pads", befores + afters)], [c.value(op.outputs[0])], ["mode": .string("reflect")])
    }
}
