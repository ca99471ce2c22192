import FlatBuffers
import ShrinkwrapIR

/// CUSTOM op translators (`TFLiteOps.customTable`).
extension TFLiteOps {
    /// MediaPipe's Convolution2DTransposeBias (mediapipe/util/tflite/operations/transpose_conv_bias.cc):
    /// inputs data [N, H, W, I], weights [O, kh, kw, I], bias [O]; custom_options are the raw bytes of
    /// TfLiteTransposeConvParams, three little-endian int32: padding (TfLitePadding: 1 SAME, 2 VALID), stride_width,
    /// stride_height. The output is stride · (in − 1) + k − pad; SAME pads max(0, k − (in − 1) mod stride − 1) in total,
    /// half of it (rounded down) before, which is ONNX ConvTranspose with those explicit pads.
    static func transposeConvBias(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 3)
        let o = op.customOptions
        guard o.count >= 12 else {
            throw ImportError.malformed(c.loc(op), reason: "custom_options hold \(o.count) bytes; Convolution2DTransposeBias needs 12 (padding, stride_width, stride_height as int32)")
        }
        func int32(_ k: Int) -> Int {
            var v: UInt32 = 0
            for b in 0..<4 { v |= UInt32(o[o.startIndex + 4 * k + b]) << (8 * b) }
            return Int(Int32(bitPattern: v))
        }
        let padding = int32(0), sw = int32(1), sh = int32(2)
        guard padding == 1 || padding == 2 else {
            throw ImportError.malformed(c.loc(op), reason: "custom_options padding \(padding) is neither SAME (1) nor VALID (2)")
        }
        let x = try spatial(c, op.inputs[0], op)
        let w = try weight(&c, op, 1, perm: [3, 0, 1, 2], rank: 4)  // [O, kh, kw, I] → [I, O, kh, kw]
        let (kh, kw) = (w.shape[2], w.shape[3])
        let bias = c.constantEncoding(op.inputs[2])?.shape ?? c.shape(op.inputs[2])
        guard sw > 0, sh > 0, x.h > 0, x.w > 0, w.shape[0] == x.channels, bias == [w.shape[1]] else {
            throw ImportError.malformed(c.loc(op), reason: "input \(c.shape(op.inputs[0])), weights [I, O, kh, kw] = \(w.shape), bias \(bias), strides \(sh)×\(sw)")
        }
        func pads(_ input: Int, _ k: Int, _ s: Int) -> (Int, Int) {
            guard padding == 1 else { return (0, 0) }
            let total = max(0, k - (input - 1) % s - 1)
            return (total / 2, total - total / 2)
        }
        let (t, b) = pads(x.h, kh, sh), (l, r) = pads(x.w, kw, sw)
        let attrs: [String: Attribute] = ["kernel_shape": .ints([kh, kw]), "strides": .ints([sh, sw]), "pads": .ints([t, l, b, r])]
        let xin = c.toNCHW(c.value(op.inputs[0]))
        let y = c.fresh(c.value(op.outputs[0]) + "_nchw")
        c.emit("ConvTranspose", [xin, w.name, c.value(op.inputs[2])], [y], attrs, name: c.value(op.outputs[0]))
        try finishNCHW(&c, op, y, activation: 0)
    }
}
