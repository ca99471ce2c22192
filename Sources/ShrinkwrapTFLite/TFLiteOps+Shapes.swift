import FlatBuffers
import ShrinkwrapIR

/// Reduction and shape translators: reshape, squeeze, transpose, concat, split, slice, pad, gather, resize, LRN, depth ↔ space.
extension TFLiteOps {
    static func reduce(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String) throws {
        try arity(c, op, 2)
        let keep: Bool = try c.option(try c.options(op, "ReducerOptions"), 0, false, op)
        let axes = try c.requireInts(op, 1, "axes")
        c.emit(onnx, [c.value(op.inputs[0]), c.int64Constant("axes", axes)], [c.value(op.outputs[0])], ["keepdims": .int(keep ? 1 : 0)])
    }

    static func reshape(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        var shape: [Int]?
        if op.inputs.count > 1, op.inputs[1] >= 0, let e = c.constantEncoding(op.inputs[1]), let a = e.decoded().ints {
            shape = a.map { Int(clamping: $0) }
        } else if let o = try c.options(op, "ReshapeOptions"), let s = try c.optionInts(o, 0, op), !s.isEmpty || c.shape(op.outputs[0]).isEmpty {
            shape = s
        } else {
            let out = c.model.tensors[op.outputs[0]]
            let dynamic = out.signature?.contains(where: { $0 < 0 }) ?? false
            if !dynamic { shape = out.shape } else if op.inputs.count > 1, op.inputs[1] >= 0 {
                return try reshapeAtRunTime(&c, op)
            }
        }
        guard let shape else { throw ImportError.unsupported(c.loc(op), what: "a reshape to a shape computed at run time") }
        c.emit("Reshape", [c.value(op.inputs[0]), c.int64Constant("shape", shape)], [c.value(op.outputs[0])],
               shape.contains(0) ? ["allowzero": .int(1)] : [:])
    }

    /// A shape computed at run time (SHAPE → STRIDED_SLICE → PACK for a free batch): an INT32 shape is cast to int64.
    static func reshapeAtRunTime(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        let s = op.inputs[1]
        var shape = c.value(s)
        switch c.model.tensors[s].type {
        case 4: break
        case 2:
            let wide = c.fresh(shape + "_int64")
            c.emit("Cast", [shape], [wide], ["to": .int(DType.int64.onnxDataType)])
            shape = wide
        case let t:
            throw ImportError.unsupported(c.loc(op), what: "a reshape to a \(TFLiteModel.typeName(t)) shape")
        }
        c.emit("Reshape", [c.value(op.inputs[0]), shape], [c.value(op.outputs[0])])
    }

    static func squeeze(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let dims = try c.optionInts(try c.options(op, "SqueezeOptions"), 0, op) ?? []
        var ins = [c.value(op.inputs[0])]
        if !dims.isEmpty { ins.append(c.int64Constant("squeeze_axes", dims)) }
        c.emit("Squeeze", ins, [c.value(op.outputs[0])])
    }

    static func expandDims(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let axis = try c.requireInts(op, 1, "axis")
        c.emit("Unsqueeze", [c.value(op.inputs[0]), c.int64Constant("unsqueeze_axes", axis)], [c.value(op.outputs[0])])
    }

    static func transpose(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let perm = try c.requireInts(op, 1, "permutation")
        c.emit("Transpose", [c.value(op.inputs[0])], [c.value(op.outputs[0])], ["perm": .ints(perm)])
    }

    static func concatenation(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let o = try c.options(op, "ConcatenationOptions")
        let axis = Int(try c.option(o, 0, Int32(0), op))
        let act: Int8 = try c.option(o, 1, Int8(0), op)
        let ins = op.inputs.filter { $0 >= 0 }.map { c.value($0) }
        try c.withActivation(act, output: c.value(op.outputs[0]), op: op) { c, y in c.emit("Concat", ins, [y], ["axis": .int(axis)]) }
    }

    static func splitSizes(_ c: TFLiteContext, _ op: TFLiteModel.Op, input: Int, axis: Int, sizes: [Int]) throws -> (Int, [Int]) {
        let s = c.shape(input)
        let a = axis < 0 ? axis + s.count : axis
        guard a >= 0, a < s.count else { throw ImportError.malformed(c.loc(op), reason: "split axis \(axis) for shape \(s)") }
        var out = sizes
        if let k = out.firstIndex(of: -1) {
            out[k] = s[a] - out.enumerated().filter { $0.offset != k }.reduce(0) { $0 + $1.element }
        }
        guard out.allSatisfy({ $0 >= 0 }), out.reduce(0, +) == s[a] else {
            throw ImportError.malformed(c.loc(op), reason: "split sizes \(sizes) do not add up to \(s[a]) (axis \(axis) of \(s))")
        }
        return (a, out)
    }

    static func split(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let axis = try c.requireInts(op, 0, "axis").first ?? 0
        let x = op.inputs[1]
        let n = op.outputs.count
        let s = c.shape(x)
        let a = axis < 0 ? axis + s.count : axis
        guard n > 0, a >= 0, a < s.count, s[a] % n == 0 else {
            throw ImportError.malformed(c.loc(op), reason: "\(n) equal parts of axis \(axis) of shape \(s)")
        }
        let sizes = Array(repeating: s[a] / n, count: n)
        c.emit("Split", [c.value(x), c.int64Constant("split", sizes)], op.outputs.map { c.value($0) }, ["axis": .int(a)])
    }

    static func splitV(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 3)
        let given = try c.requireInts(op, 1, "split sizes")
        let axis = try c.requireInts(op, 2, "axis").first ?? 0
        let (a, sizes) = try splitSizes(c, op, input: op.inputs[0], axis: axis, sizes: given)
        c.emit("Split", [c.value(op.inputs[0]), c.int64Constant("split", sizes)], op.outputs.map { c.value($0) }, ["axis": .int(a)])
    }

    static func slice(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 3)
        if c.constantEncoding(op.inputs[1]) == nil { return try sliceAtRunTime(&c, op) }
        let begin = try c.requireInts(op, 1, "begin"), size = try c.requireInts(op, 2, "size")
        guard begin.count == size.count else { throw ImportError.malformed(c.loc(op), reason: "begin \(begin) and size \(size) differ in length") }
        let ends = zip(begin, size).map { b, s in s < 0 ? Int(Int64.max) : b + s }
        c.emit("Slice", [c.value(op.inputs[0]), c.int64Constant("starts", begin), c.int64Constant("ends", ends),
                         c.int64Constant("axes", Array(0..<begin.count))], [c.value(op.outputs[0])])
    }

    static func stridedSlice(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 4)
        let o = try c.options(op, "StridedSliceOptions")
        let beginMask = Int(try c.option(o, 0, Int32(0), op)), endMask = Int(try c.option(o, 1, Int32(0), op))
        let ellipsis = try c.option(o, 2, Int32(0), op), newAxis = try c.option(o, 3, Int32(0), op)
        let shrink = Int(try c.option(o, 4, Int32(0), op))
        let offset: Bool = try c.option(o, 5, false, op)
        guard ellipsis == 0, newAxis == 0, !offset else {
            throw ImportError.unsupported(c.loc(op), what: "strided slice with ellipsis_mask / new_axis_mask / offset")
        }
        let begin = try c.requireInts(op, 1, "begin"), end = try c.requireInts(op, 2, "end"), strides = try c.requireInts(op, 3, "strides")
        guard begin.count == end.count, end.count == strides.count, !strides.contains(0) else {
            throw ImportError.malformed(c.loc(op), reason: "begin \(begin), end \(end), strides \(strides)")
        }
        let big = Int(Int64.max), small = Int(Int64.min)
        var starts: [Int] = [], ends: [Int] = [], squeezed: [Int] = []
        for k in begin.indices {
            let s = strides[k]
            var b = begin[k], e = end[k]
            if shrink >> k & 1 == 1 {
                e = b == -1 ? big : b + 1
                squeezed.append(k)
            } else {
                if beginMask >> k & 1 == 1 { b = s > 0 ? 0 : big }
                if endMask >> k & 1 == 1 { e = s > 0 ? big : small }
            }
            starts.append(b)
            ends.append(e)
        }
        let out = c.value(op.outputs[0])
        let sliced = squeezed.isEmpty ? out : c.fresh(out + "_slice")
        c.emit("Slice", [c.value(op.inputs[0]), c.int64Constant("starts", starts), c.int64Constant("ends", ends),
                         c.int64Constant("axes", Array(0..<begin.count)),
                         c.int64Constant("steps", squeezed.isEmpty ? strides : strides.enumerated().map { squeezed.contains($0.offset) ? 1 : $0.element })],
               [sliced])
        if !squeezed.isEmpty { c.emit("Squeeze", [sliced, c.int64Constant("shrink_axes", squeezed)], [out]) }
    }

    static func pad(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let p = try c.requireInts(op, 1, "paddings")
        guard p.count % 2 == 0 else { throw ImportError.malformed(c.loc(op), reason: "paddings \(p) are not [rank, 2]") }
        let befores = stride(from: 0, to: p.count, by: 2).map { p[$0] }, afters = stride(from: 1, to: p.count, by: 2).map { p[$0] }
        var ins = [c.value(op.inputs[0]), c.int64Constant("pads", befores + afters)]
        if op.inputs.count > 2, op.inputs[2] >= 0 { ins.append(c.value(op.inputs[2])) }
        c.emit("Pad", ins, [c.value(op.outputs[0])])
    }

    static func gather(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let o = try c.options(op, "GatherOptions")
        let axis = Int(try c.option(o, 0, Int32(0), op)), batch = try c.option(o, 1, Int32(0), op)
        guard batch == 0 else { throw ImportError.unsupported(c.loc(op), what: "gather with batch_dims \(batch)") }
        c.emit("Gather", [c.value(op.inputs[0]), c.value(op.inputs[1])], [c.value(op.outputs[0])], ["axis": .int(axis)])
    }

    static func resize(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, bilinear: Bool) throws {
        try arity(c, op, 2)
        let o = try c.options(op, bilinear ? "ResizeBilinearOptions" : "ResizeNearestNeighborOptions")
        let align: Bool = try c.option(o, bilinear ? 2 : 0, false, op)
        let half: Bool = try c.option(o, bilinear ? 3 : 1, false, op)
        let size = try c.requireInts(op, 1, "size")
        let x = try spatial(c, op.inputs[0], op)
        guard size.count == 2 else { throw ImportError.malformed(c.loc(op), reason: "size \(size) is not [height, width]") }
        let n = max(c.shape(op.inputs[0]).first ?? 1, 1)
        var attrs: [String: Attribute] = ["mode": .string(bilinear ? "linear" : "nearest")]
        if bilinear {
            attrs["coordinate_transformation_mode"] = .string(align ? "align_corners" : half ? "half_pixel" : "asymmetric")
        } else {
            attrs["coordinate_transformation_mode"] = .string(align ? "align_corners" : half ? "tf_half_pixel_for_nn" : "asymmetric")
            attrs["nearest_mode"] = .string(align ? "round_prefer_ceil" : "floor")
        }
        let xin = c.toNCHW(c.value(op.inputs[0]))
        let y = c.fresh(c.value(op.outputs[0]) + "_nchw")
        c.emit("Resize", [xin, "", "", c.int64Constant("sizes", [n, x.channels, size[0], size[1]])], [y], attrs)
        try finishNCHW(&c, op, y, activation: 0)
    }

    /// TFLite: x / (bias + alpha · Σ x² over depth_radius channels either side)^beta;
    /// ONNX's LRN divides alpha by its window size (2 · radius + 1).
    static func localResponseNorm(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let o = try c.options(op, "LocalResponseNormalizationOptions")
        let radius = Int(try c.option(o, 0, Int32(0), op))
        let bias: Float = try c.option(o, 1, Float(0), op), alpha: Float = try c.option(o, 2, Float(0), op), beta: Float = try c.option(o, 3, Float(0), op)
        guard radius >= 0, radius < 1 << 20 else { throw ImportError.malformed(c.loc(op), reason: "depth_radius \(radius)") }
        _ = try spatial(c, op.inputs[0], op)
        let size = 2 * radius + 1
        let xin = c.toNCHW(c.value(op.inputs[0]))
        let y = c.fresh(c.value(op.outputs[0]) + "_nchw")
        c.emit("LRN", [xin], [y], ["size": .int(size), "alpha": .float(alpha * Float(size)), "beta": .float(beta), "bias": .float(bias)])
        try finishNCHW(&c, op, y, activation: 0)
    }

    static func spaceDepth(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String, options: String) throws {
        try arity(c, op, 1)
        let block = Int(try c.option(try c.options(op, options), 0, Int32(0), op))
        guard block >= 1 else { throw ImportError.malformed(c.loc(op), reason: "block size \(block)") }
        let xin = c.toNCHW(c.value(op.inputs[0]))
        let y = c.fresh(c.value(op.outputs[0]) + "_nchw")
        var attrs: [String: Attribute] = ["blocksize": .int(block)]
        if onnx == "DepthToSpace" { attrs["mode"] = .string("DCR") }
        c.emit(onnx, [xin], [y], attrs)
        try finishNCHW(&c, op, y, activation: 0)
    }
}
