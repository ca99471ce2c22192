import FlatBuffers
import ShrinkwrapIR

/// Stacking and shape translators: PACK, UNPACK, SHAPE, MIRROR_PAD.
extension TFLiteOps {
    /// PACK: each input gains a unit axis at `axis` (counted in the output's rank, as ONNX Unsqueeze counts),
    /// then they are concatenated along it.
    static func pack(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let o = try c.options(op, "PackOptions")
        let count = Int(try c.option(o, 0, Int32(0), op)), axis = Int(try c.option(o, 1, Int32(0), op))
        let ins = op.inputs.filter { $0 >= 0 }
        let rank = c.shape(ins[0]).count
        guard count == ins.count, axis >= -(rank + 1), axis <= rank else {
            throw ImportError.malformed(c.loc(op), reason: "values_count \(count) and axis \(axis) for \(ins.count) inputs of rank \(rank)")
        }
        let out = c.value(op.outputs[0])
        if ins.count == 1 {
            c.emit("Unsqueeze", [c.value(ins[0]), c.int64Constant("pack_axes", [axis])], [out])
            return
        }
        var parts: [String] = []
        for i in ins {
            let u = c.fresh(c.value(i) + "_packed")
            c.emit("Unsqueeze", [c.value(i), c.int64Constant("pack_axes", [axis])], [u])
            parts.append(u)
        }
        c.emit("Concat", parts, [out], ["axis": .int(axis)])
    }

    /// UNPACK: a Split into unit slices along `axis`, each then squeezed.
    static func unpack(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1, outputs: 1)
        let o = try c.options(op, "UnpackOptions")
        let num = Int(try c.option(o, 0, Int32(0), op)), axis = Int(try c.option(o, 1, Int32(0), op))
        let s = c.shape(op.inputs[0])
        let a = axis < 0 ? axis + s.count : axis
        guard a >= 0, a < s.count, num == op.outputs.count, s[a] == num else {
            throw ImportError.malformed(c.loc(op), reason: "num \(num) and axis \(axis) for \(op.outputs.count) outputs of shape \(s)")
        }
        let parts = op.outputs.map { c.fresh(c.value($0) + "_slice") }
        c.emit("Split", [c.value(op.inputs[0]), c.int64Constant("split", Array(repeating: 1, count: num))], parts, ["axis": .int(a)])
        for (part, out) in zip(parts, op.outputs) {
            c.emit("Squeeze", [part, c.int64Constant("unpack_axes", [a])], [c.value(out)])
        }
    }

    /// SHAPE: the IR's Shape gives int64; an INT32 output tensor (ShapeOptions.out_type) gets a Cast.
    static func shapeOf(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let out = c.value(op.outputs[0])
        switch c.model.tensors[op.outputs[0]].type {
        case 4:
            c.emit("Shape", [c.value(op.inputs[0])], [out])
        case 2:
            let wide = c.fresh(out + "_int64")
            c.emit("Shape", [c.value(op.inputs[0])], [wide])
            c.emit("Cast", [wide], [out], ["to": .int(DType.int32.onnxDataType)])
        case let t:
            throw ImportError.unsupported(c.loc(op), what: "SHAPE into a \(TFLiteModel.typeName(t)) tensor (INT32 and INT64 are read)")
        }
    }

    /// MIRROR_PAD: REFLECT (the edge not repeated) is Pad mode reflect. SYMMETRIC (the edge repeated) has no
    /// Pad mode: each padded axis becomes Concat(reversed first `before` entries, x, reversed last `after` entries),
    /// the reversals being Slices with step −1.
    static func mirrorPad(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let mode: Int8 = try c.option(try c.options(op, "MirrorPadOptions"), 0, Int8(0), op)
        let p = try c.requireInts(op, 1, "paddings")
        guard p.count % 2 == 0, p.allSatisfy({ $0 >= 0 }) else { throw ImportError.malformed(c.loc(op), reason: "paddings \(p) are not [rank, 2] of non-negative sizes") }
        let befores = stride(from: 0, to: p.count, by: 2).map { p[$0] }, afters = stride(from: 1, to: p.count, by: 2).map { p[$0] }
        let out = c.value(op.outputs[0])
        switch mode {
        case 0:
            c.emit("Pad", [c.value(op.inputs[0]), c.int64Constant("pads", befores + afters)], [out], ["mode": .string("reflect")])
        case 1:
            let axes = befores.indices.filter { befores[$0] > 0 || afters[$0] > 0 }
            guard let lastAxis = axes.last else { c.emit("Identity", [c.value(op.inputs[0])], [out]); return }
            var x = c.value(op.inputs[0])
            for a in axes {
                let y = a == lastAxis ? out : c.fresh(out + "_axis\(a)")
                var parts: [String] = []
                if befores[a] > 0 { parts.append(reversed(&c, x, axis: a, start: befores[a] - 1, end: Int(Int64.min))) }
                parts.append(x)
                if afters[a] > 0 { parts.append(reversed(&c, x, axis: a, start: -1, end: -1 - afters[a])) }
                c.emit("Concat", parts, [y], ["axis": .int(a)])
                x = y
            }
        default:
            throw ImportError.malformed(c.loc(op), reason: "mirror pad mode \(mode) is neither REFLECT (0) nor SYMMETRIC (1)")
        }
    }

    /// x[start, start − 1, …] down to (not including) `end` along `axis` (ONNX Slice indexing and clamping).
    private static func reversed(_ c: inout TFLiteContext, _ x: String, axis: Int, start: Int, end: Int) -> String {
        let y = c.fresh(x + "_mirror")
        c.emit("Slice", [x, c.int64Constant("starts", [start]), c.int64Constant("ends", [end]), c.int64Constant("axes", [axis]),
                         c.int64Constant("steps", [-1])], [y])
        return y
    }
}
