import FlatBuffers
import ShrinkwrapIR

/// Convolution and pooling translators: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, pools.
extension TFLiteOps {
    static func conv(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        // Conv2DOptions: padding 0, stride_w 1, stride_h 2, fused_activation_function 3, dilation_w 4, dilation_h 5.
        // Filter [O, kh, kw, I] → [O, I, kh, kw]; groups = input channels / I.
        try convolution(&c, op, options: "Conv2DOptions", activationID: 3, dilationIDs: (4, 5), perm: [0, 3, 1, 2]) { channels, w in
            w[1] > 0 && channels % w[1] == 0 ? channels / w[1] : nil
        }
    }

    static func depthwise(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        // DepthwiseConv2DOptions: padding 0, stride_w 1, stride_h 2, depth_multiplier 3, activation 4, dilation_w 5, dilation_h 6.
        // Filter [1, kh, kw, C·M] → [C·M, 1, kh, kw]; one group per input channel.
        try convolution(&c, op, options: "DepthwiseConv2DOptions", activationID: 4, dilationIDs: (5, 6), perm: [3, 0, 1, 2]) { channels, w in
            w[1] == 1 && channels > 0 && w[0] % channels == 0 ? channels : nil
        }
    }

    /// CONV_2D and DEPTHWISE_CONV_2D: NHWC input → Conv in NCHW (explicit TensorFlow SAME pads) → fused activation → NHWC.
    static func convolution(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, options name: String, activationID: Int,
                            dilationIDs: (w: Int, h: Int), perm: [Int], groups: (Int, [Int]) -> Int?) throws {
        try arity(c, op, 2)
        let o = try c.options(op, name)
        let padding: Int8 = try c.option(o, 0, Int8(0), op)
        let sw = Int(try c.option(o, 1, Int32(1), op)), sh = Int(try c.option(o, 2, Int32(1), op))
        let act: Int8 = try c.option(o, activationID, Int8(0), op)
        let dw = Int(try c.option(o, dilationIDs.w, Int32(1), op)), dh = Int(try c.option(o, dilationIDs.h, Int32(1), op))
        let x = try spatial(c, op.inputs[0], op)
        let w = try weight(&c, op, 1, perm: perm, rank: 4)
        let (kh, kw) = (w.shape[2], w.shape[3])
        guard let group = groups(x.channels, w.shape), sw > 0, sh > 0, dw > 0, dh > 0 else {
            throw ImportError.malformed(c.loc(op), reason: "input channels \(x.channels), filter \(w.shape), strides \(sh)×\(sw), dilations \(dh)×\(dw)")
        }
        var attrs: [String: Attribute] = ["kernel_shape": .ints([kh, kw]), "strides": .ints([sh, sw]), "dilations": .ints([dh, dw]),
                                          "group": .int(group)]
        attrs["pads"] = padding == 0 ? pads(x, kernel: (kh, kw), strides: (sh, sw), dilations: (dh, dw)) : .ints([0, 0, 0, 0])
        let xin = c.toNCHW(c.value(op.inputs[0]))
        let y = c.fresh(c.value(op.outputs[0]) + "_nchw")
        c.emit("Conv", [xin, w.name, optionalInput(c, op, 2)], [y], attrs, name: c.value(op.outputs[0]))
        try finishNCHW(&c, op, y, activation: act)
    }

    static func pads(_ x: (h: Int, w: Int, channels: Int), kernel: (Int, Int), strides: (Int, Int), dilations: (Int, Int)) -> Attribute {
        let (t, b) = samePads(x.h, kernel: kernel.0, stride: strides.0, dilation: dilations.0)
        let (l, r) = samePads(x.w, kernel: kernel.1, stride: strides.1, dilation: dilations.1)
        return .ints([t, l, b, r])
    }

    /// Inputs: output_shape, filter [O, kh, kw, I], input, optional bias.
    static func transposeConv(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 3)
        let o = try c.options(op, "TransposeConvOptions")
        let padding: Int8 = try c.option(o, 0, Int8(0), op)
        let sw = Int(try c.option(o, 1, Int32(1), op)), sh = Int(try c.option(o, 2, Int32(1), op))
        let act: Int8 = try c.option(o, 3, Int8(0), op)
        let outShape = try c.requireInts(op, 0, "output shape")
        let x = try spatial(c, op.inputs[2], op)
        let w = try weight(&c, op, 1, perm: [3, 0, 1, 2], rank: 4)  // → [I, O, kh, kw]
        let (kh, kw) = (w.shape[2], w.shape[3])
        guard outShape.count == 4, sw > 0, sh > 0, w.shape[0] == x.channels else {
            throw ImportError.malformed(c.loc(op), reason: "output shape \(outShape), filter \(w.shape), input channels \(x.channels)")
        }
        // Total padding so that the output is exactly outShape; SAME puts the extra pixel after, VALID pads nothing.
        func axis(_ input: Int, _ k: Int, _ s: Int, _ out: Int) -> (Int, Int, Int) {
            let full = (input - 1) * s + k
            var total = full - out
            var extra = 0
            if total < 0 { extra = -total; total = 0 }
            if padding == 1 { return (0, 0, max(out - full, 0)) }
            return (total / 2, total - total / 2, extra)
        }
        let (t, b, eh) = axis(x.h, kh, sh, outShape[1])
        let (l, r, ew) = axis(x.w, kw, sw, outShape[2])
        let attrs: [String: Attribute] = ["kernel_shape": .ints([kh, kw]), "strides": .ints([sh, sw]), "pads": .ints([t, l, b, r]),
                                          "output_padding": .ints([eh, ew])]
        let xin = c.toNCHW(c.value(op.inputs[2]))
        let y = c.fresh(c.value(op.outputs[0]) + "_nchw")
        c.emit("ConvTranspose", [xin, w.name, optionalInput(c, op, 3)], [y], attrs, name: c.value(op.outputs[0]))
        try finishNCHW(&c, op, y, activation: act)
    }

    static func pool(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String) throws {
        try arity(c, op, 1)
        let o = try c.options(op, "Pool2DOptions")
        let padding: Int8 = try c.option(o, 0, Int8(0), op)
        let sw = Int(try c.option(o, 1, Int32(1), op)), sh = Int(try c.option(o, 2, Int32(1), op))
        let fw = Int(try c.option(o, 3, Int32(1), op)), fh = Int(try c.option(o, 4, Int32(1), op))
        let act: Int8 = try c.option(o, 5, Int8(0), op)
        guard sw > 0, sh > 0, fw > 0, fh > 0 else {
            throw ImportError.malformed(c.loc(op), reason: "filter \(fh)×\(fw), strides \(sh)×\(sw)")
        }
        let x = try spatial(c, op.inputs[0], op)
        var attrs: [String: Attribute] = ["kernel_shape": .ints([fh, fw]), "strides": .ints([sh, sw])]
        attrs["pads"] = padding == 0 ? pads(x, kernel: (fh, fw), strides: (sh, sw), dilations: (1, 1)) : .ints([0, 0, 0, 0])
        if onnx == "AveragePool" { attrs["count_include_pad"] = .int(0) }
        let xin = c.toNCHW(c.value(op.inputs[0]))
        let y = c.fresh(c.value(op.outputs[0]) + "_nchw")
        c.emit(onnx, [xin], [y], attrs, name: c.value(op.outputs[0]))
        try finishNCHW(&c, op, y, activation: act)
    }
}
