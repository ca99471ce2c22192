import FlatBuffers
import ShrinkwrapIR

/// NHWC writers: windows and padding, convolutions, pooling, LRN, resize, depth ↔ space.
extension TFLiteExportOps {
    /// TensorFlow's SAME padding of one axis: (before, after).
    static func samePads(input: Int, kernel: Int, stride: Int, dilation: Int) -> (Int, Int) {
        let eff = (kernel - 1) * dilation + 1
        let out = (input + stride - 1) / stride
        let total = max((out - 1) * stride + eff - input, 0)
        return (total / 2, total - total / 2)
    }

    struct Window {
        var kernel: [Int], strides: [Int], dilations: [Int]
        /// [top, left, bottom, right].
        var pads: [Int]
        /// TFLite padding: 0 SAME, 1 VALID (after `pads` are applied by a PAD op when `explicit`).
        var padding: Int8
        var explicit: Bool
    }

    /// Kernel, strides, dilations and the padding of a 2-D convolution or pool
    /// over an NHWC input of spatial size `hw`.
    static func window(_ n: Node, kernel: [Int], hw: [Int]) throws -> Window {
        let strides = n.ints("strides") ?? [1, 1], dil = n.ints("dilations") ?? [1, 1]
        guard kernel.count == 2, strides.count == 2, dil.count == 2, strides.allSatisfy({ $0 >= 1 }), dil.allSatisfy({ $0 >= 1 }),
              kernel.allSatisfy({ $0 >= 1 }) else {
            throw TFLiteOpError("kernel \(kernel), strides \(strides), dilations \(dil) are not 2-D")
        }
        let same = (0..<2).map { samePads(input: hw[$0], kernel: kernel[$0], stride: strides[$0], dilation: dil[$0]) }
        var pads: [Int]
        switch n.string("auto_pad", "NOTSET") {
        case "SAME_UPPER": pads = [same[0].0, same[1].0, same[0].1, same[1].1]
        case "SAME_LOWER": pads = [same[0].1, same[1].1, same[0].0, same[1].0]
        case "VALID": pads = [0, 0, 0, 0]
        default:
            pads = n.ints("pads") ?? [0, 0, 0, 0]
            guard pads.count == 4, pads.allSatisfy({ $0 >= 0 }) else { throw TFLiteOpError("pads \(pads)") }
        }
        if pads == [0, 0, 0, 0] { return Window(kernel: kernel, strides: strides, dilations: dil, pads: pads, padding: 1, explicit: false) }
        if pads == [same[0].0, same[1].0, same[0].1, same[1].1] {
            return Window(kernel: kernel, strides: strides, dilations: dil, pads: pads, padding: 0, explicit: false)
        }
        return Window(kernel: kernel, strides: strides, dilations: dil, pads: pads, padding: 1, explicit: true)
    }

    /// Spatial output size TFLite computes for `w` over `hw` (after explicit pads).
    static func outputSize(_ w: Window, hw: [Int]) -> [Int] {
        (0..<2).map { k in
            if w.padding == 0 { return (hw[k] + w.strides[k] - 1) / w.strides[k] }
            let padded = hw[k] + (w.explicit ? w.pads[k] + w.pads[k + 2] : 0)
            let eff = (w.kernel[k] - 1) * w.dilations[k] + 1
            return padded >= eff ? (padded - eff) / w.strides[k] + 1 : 0
        }
    }

    /// A PAD / PADV2 op giving the NHWC input its explicit spatial pads.
    static func padSpatial(_ e: inout TFLiteEmitter, _ x: String, _ pads: [Int], value: Float) throws -> Int {
        let s = try e.shape(x)
        let padded = [s[0], s[1] + pads[0] + pads[2], s[2] + pads[1] + pads[3], s[3]]
        let out = try e.temp(x + "_padded", shape: padded)
        let p = try e.int32Constant("paddings", [0, 0, pads[0], pads[2], pads[1], pads[3], 0, 0], shape: [4, 2])
        if value == 0 {
            try e.op("PAD", [try e.input(x), p], [out], options: "PadOptions")
        } else {
            try e.op("PADV2", [try e.input(x), p, e.floatConstant("pad_value", [value], shape: [])], [out], options: "PadV2Options")
        }
        return out
    }

    static func conv(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0), wName = try arity(n, 1)
        guard let we = e.g.constants[e.resolve(wName)] else { throw TFLiteOpError("the weight is computed at run time") }
        let ws = we.shape
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        guard ws.count == 4 else { throw TFLiteOpError("weight rank \(ws.count)") }
        let groups = n.int("group", 1)
        let cin = xs[3], cout = ws[0]
        var w = try window(n, kernel: n.ints("kernel_shape") ?? [ws[2], ws[3]], hw: [xs[1], xs[2]])
        guard outputSize(w, hw: [xs[1], xs[2]]) == [ys[1], ys[2]] else {
            throw TFLiteOpError("output \(ys[1])×\(ys[2]) does not follow from TFLite's padding rules")
        }
        var input = try e.input(x)
        if w.explicit {
            input = try padSpatial(&e, x, w.pads, value: 0)
            w.explicit = false
        }
        let bias: Int
        if let b = n.input(2) { bias = try e.input(b) } else { bias = e.floatConstant(wName + "_zero_bias", [Float](repeating: 0, count: cout), shape: [cout]) }
        let y = try e.output(n)
        let (pad, sw, sh, dw, dh) = (w.padding, Int32(w.strides[1]), Int32(w.strides[0]), Int32(w.dilations[1]), Int32(w.dilations[0]))
        let act = activation(n)
        if groups == 1 {
            let filter = try e.weight(wName, perm: [0, 2, 3, 1], hybrid: .init(axis: 0))
            try e.op("CONV_2D", [input, filter, bias], [y], options: "Conv2DOptions", version: e.file.tensors[filter].type == 9 ? 2 : 1) { b in
                b.table { t in
                    t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0); t.add(3, act, default: 0)
                    t.add(4, dw, default: 1); t.add(5, dh, default: 1)
                }
            }
        } else if groups == cin, ws[1] == 1, cout % cin == 0 {
            let filter = try e.weight(wName, perm: [1, 2, 3, 0], hybrid: .init(axis: 3))
            let mult = Int32(cout / cin)
            try e.op("DEPTHWISE_CONV_2D", [input, filter, bias], [y], options: "DepthwiseConv2DOptions",
                     version: e.file.tensors[filter].type == 9 ? 4 : (dw != 1 || dh != 1 ? 2 : 1)) { b in
                b.table { t in
                    t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0); t.add(3, mult, default: 0)
                    t.add(4, act, default: 0); t.add(5, dw, default: 1); t.add(6, dh, default: 1)
                }
            }
        } else {
            // Grouped: split the channels, one CONV_2D per group, concatenate.
            guard groups > 1, cin % groups == 0, cout % groups == 0, ws[1] == cin / groups else {
                throw TFLiteOpError("\(groups) groups over \(cin) input and \(cout) output channels")
            }
            let gin = cin / groups, gout = cout / groups
            let inShape = e.file.tensors[input].shape
            let parts = try (0..<groups).map { k in try e.temp(x + "_group\(k)", shape: [inShape[0], inShape[1], inShape[2], gin]) }
            try e.op("SPLIT", [try e.int32Constant("axis", [3], shape: []), input], parts, options: "SplitOptions") { b in
                b.table { t in t.add(0, Int32(groups), default: 0) }
            }
            let wt: WeightEncoding
            do { wt = try we.transposed([0, 2, 3, 1]) } catch { throw TFLiteOpError("weight: \(error.reason)") }
            let biasValues: [Float]
            if let b = n.input(2) { biasValues = try constFloats(e, b, "bias") } else { biasValues = [Float](repeating: 0, count: cout) }
            guard biasValues.count == cout else { throw TFLiteOpError("\(biasValues.count) biases for \(cout) channels") }
            var outs: [Int] = []
            for k in 0..<groups {
                let slice = try rows(wt, k * gout..<(k + 1) * gout, weight: wName)
                let filter = try e.constantTensor(e.resolve(wName) + "_group\(k)", slice, hybrid: .init(axis: 0))
                let gb = e.floatConstant(wName + "_bias_group\(k)", Array(biasValues[k * gout..<(k + 1) * gout]), shape: [gout])
                let out = try e.temp(n.outputs[0] + "_group\(k)", shape: [ys[0], ys[2], ys[3], gout])
                try e.op("CONV_2D", [parts[k], filter, gb], [out], options: "Conv2DOptions", version: e.file.tensors[filter].type == 9 ? 2 : 1) { b in
                    b.table { t in
                        t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0)
                        t.add(4, dw, default: 1); t.add(5, dh, default: 1)
                    }
                }
                outs.append(out)
            }
            try e.op("CONCATENATION", outs, [y], options: "ConcatenationOptions") { b in b.table { t in t.add(0, Int32(3), default: 0) } }
        }
    }

    /// Rows `range` (axis 0) of a weight, keeping its encoding.
    static func rows(_ w: WeightEncoding, _ range: Range<Int>, weight: String) throws -> WeightEncoding {
        let shape = w.shape
        guard let first = shape.first, range.lowerBound >= 0, range.upperBound <= first else { throw TFLiteOpError("weight '\(weight)': rows \(range)") }
        let inner = shape.dropFirst().reduce(1, *)
        let sub = [range.count] + shape.dropFirst()
        let span = range.lowerBound * inner..<range.upperBound * inner
        do {
            switch w {
            case .dense(let t):
                switch t.storage {
                case .float(let a): return .dense(Tensor(dtype: t.dtype, shape: sub, storage: .float(Array(a[span]))))
                case .int(let a): return .dense(Tensor(dtype: t.dtype, shape: sub, storage: .int(Array(a[span]))))
                case .bool(let a): return .dense(Tensor(dtype: t.dtype, shape: sub, storage: .bool(Array(a[span]))))
                }
            case .float16(let h): return .float16(try Float16Weights(shape: sub, bits: Array(h.bits[span])))
            case .affine(let a):
                if a.scale.count == 1 {
                    return .affine(try AffineWeights(shape: sub, bits: a.bits, signed: a.signed, q: Array(a.q[span]),
                                                     blockShape: sub.map { max($0, 1) }, scale: a.scale, bias: a.bias))
                }
                guard a.blockShape.first == 1, zip(a.blockShape.dropFirst(), shape.dropFirst()).allSatisfy({ $0 >= $1 }) else {
                    throw TFLiteOpError("weight '\(weight)' is quantized in blocks \(a.blockShape) that a grouped convolution cannot split")
                }
                return .affine(try AffineWeights(shape: sub, bits: a.bits, signed: a.signed, q: Array(a.q[span]), blockShape: a.blockShape,
                                                 scale: Array(a.scale[range]), bias: Array(a.bias[range])))
            case .palette(let p):
                throw TFLiteOpError("weight '\(weight)' is a \(p.bits)-bit palette (LUT); TFLite has no lookup-table weights — write Core ML (.mlmodel) for LUT modes")
            }
        } catch let err as WeightLayoutError {
            throw TFLiteOpError("weight '\(weight)': \(err.reason)")
        }
    }

    static func convTranspose(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0), wName = try arity(n, 1)
        guard let we = e.g.constants[e.resolve(wName)] else { throw TFLiteOpError("the weight is computed at run time") }
        let ws = we.shape
        guard ws.count == 4 else { throw TFLiteOpError("weight rank \(ws.count)") }
        guard n.int("group", 1) == 1 else { throw TFLiteOpError("groups \(n.int("group", 1)) (TFLite's TRANSPOSE_CONV has none)") }
        guard (n.ints("dilations") ?? [1, 1]).allSatisfy({ $0 == 1 }) else { throw TFLiteOpError("dilations (TRANSPOSE_CONV has none)") }
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        let strides = n.ints("strides") ?? [1, 1]
        let kernel = n.ints("kernel_shape") ?? [ws[2], ws[3]]
        guard strides.count == 2, kernel.count == 2 else { throw TFLiteOpError("not 2-D") }
        let outPad = n.ints("output_padding") ?? [0, 0]
        guard outPad.count == 2 else { throw TFLiteOpError("output_padding \(outPad)") }
        if let p = n.ints("pads"), p.count != 4 { throw TFLiteOpError("pads \(p)") }
        // TFLite crops the full deconvolution at `pad` before: 0 for VALID; for SAME the
        // padding a forward convolution of the output size would take, ((⌈out/s⌉ − 1)·s + k − out) / 2.
        var befores: [Int] = [], sames: [Int] = []
        for k in 0..<2 {
            let full = (xs[k + 1] - 1) * strides[k] + kernel[k], out = ys[k + 1]
            guard out <= full else { throw TFLiteOpError("output \(out) beyond the full deconvolution \(full) (output_padding)") }
            befores.append(beginPad(n, k, xs, ys, strides, kernel, outPad))
            let fwd = (out + strides[k] - 1) / strides[k]
            sames.append(max((fwd - 1) * strides[k] + kernel[k] - out, 0) / 2)
        }
        // SAME first: TFLite's converter writes VALID only when nothing is cropped, and XNNPACK's
        // delegate corrupts memory on a VALID transposed convolution that crops.
        var uncropped = true
        for k in 0..<2 {
            let full: Int = (xs[k + 1] - 1) * strides[k] + kernel[k]
            if full != ys[k + 1] { uncropped = false }
        }
        let padding: Int8
        if befores == sames { padding = 0 } else if befores == [0, 0] && uncropped { padding = 1 } else {
            throw TFLiteOpError("pads before \(befores) match neither TFLite's SAME \(sames) nor an uncropped VALID")
        }
        let filter = try e.weight(wName, perm: [1, 2, 3, 0])
        let shape = try e.int32Constant(n.outputs[0] + "_output_shape", ys)
        var inputs = [shape, filter, try e.input(x)]
        if let b = n.input(2) { inputs.append(try e.input(b)) }
        let (sw, sh) = (Int32(strides[1]), Int32(strides[0]))
        let pad = padding
        try e.op("TRANSPOSE_CONV", inputs, [try e.output(n)], options: "TransposeConvOptions", version: inputs.count == 4 ? 3 : 1) { b in
            b.table { t in t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0) }
        }
    }

    static func beginPad(_ n: Node, _ k: Int, _ xs: [Int], _ ys: [Int], _ strides: [Int], _ kernel: [Int], _ outPad: [Int]) -> Int {
        let full = (xs[k + 1] - 1) * strides[k] + kernel[k]
        let total = full + outPad[k] - ys[k + 1]
        switch n.string("auto_pad", "NOTSET") {
        case "SAME_UPPER": return total / 2
        case "SAME_LOWER": return total - total / 2
        case "VALID": return 0
        default: return (n.ints("pads") ?? [0, 0, 0, 0])[k]
        }
    }

    /// Max / average pooling. TFLite pools with SAME (an average leaving the
    /// padding out of its count) or VALID. Anything else is explicit padding
    /// + VALID: max pools pad with −∞ (also the end a ceil_mode window needs);
    /// an average that must not count some of the padded positions is scaled
    /// by a constant k² / count per output position.
    static func pool(_ e: inout TFLiteEmitter, _ n: Node, max isMax: Bool) throws {
        let x = try arity(n, 0)
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        guard let kernel = n.ints("kernel_shape") else { throw TFLiteOpError("no kernel_shape") }
        guard (n.ints("dilations") ?? [1, 1]).allSatisfy({ $0 == 1 }) else { throw TFLiteOpError("dilated pooling") }
        var w = try window(n, kernel: kernel, hw: [xs[1], xs[2]])
        let includePad = n.int("count_include_pad", 0) != 0
        let target = [ys[1], ys[2]]
        let direct = !w.explicit && outputSize(w, hw: [xs[1], xs[2]]) == target
            && (isMax || !includePad || w.pads == [0, 0, 0, 0])
        var scale: [Float]?
        if !direct {
            // Explicit pads (SAME's own when SAME was chosen), then what a ceil_mode window adds at the end.
            w.padding = 1
            w.explicit = true
            var extra = [0, 0]
            for k in 0..<2 {
                let padded = xs[k + 1] + w.pads[k] + w.pads[k + 2]
                extra[k] = max((target[k] - 1) * w.strides[k] + w.kernel[k] - padded, 0)
            }
            let declared = w.pads
            w.pads[2] += extra[0]
            w.pads[3] += extra[1]
            guard outputSize(w, hw: [xs[1], xs[2]]) == target else {
                throw TFLiteOpError("output \(target[0])×\(target[1]) does not follow from the kernel, strides and pads")
            }
            if !isMax {
                // Positions an ONNX average counts: the input, plus the declared pads when count_include_pad.
                var counts: [Float] = []
                var needed = false
                for oh in 0..<target[0] {
                    for ow in 0..<target[1] {
                        var c = 1
                        for (k, o) in [oh, ow].enumerated() {
                            let start = o * w.strides[k] - w.pads[k]
                            let lo = includePad ? -declared[k] : 0, hi = xs[k + 1] + (includePad ? declared[k + 2] : 0)
                            c *= max(min(start + w.kernel[k], hi) - max(start, lo), 0)
                        }
                        let full = w.kernel[0] * w.kernel[1]
                        if c != full { needed = true }
                        counts.append(c > 0 ? Float(full) / Float(c) : 0)
                    }
                }
                if needed { scale = counts }
            }
        }
        let input = w.explicit && w.pads != [0, 0, 0, 0] ? try padSpatial(&e, x, w.pads, value: isMax ? -Float.greatestFiniteMagnitude : 0) : try e.input(x)
        let y = try e.output(n)
        let out = scale == nil ? y : try e.temp(n.outputs[0] + "_sum_over_k2", shape: ys)
        let (pad, sw, sh, fw, fh) = (w.padding, Int32(w.strides[1]), Int32(w.strides[0]), Int32(w.kernel[1]), Int32(w.kernel[0]))
        try e.op(isMax ? "MAX_POOL_2D" : "AVERAGE_POOL_2D", [input], [out], options: "Pool2DOptions") { b in
            b.table { t in
                t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0)
                t.add(3, fw, default: 0); t.add(4, fh, default: 0)
            }
        }
        if let scale {
            let c = e.floatConstant(n.outputs[0] + "_count_scale", scale, shape: [1, target[0], target[1], 1])
            try e.op("MUL", [out, c], [y], options: "MulOptions")
        }
    }

    static func globalPool(_ e: inout TFLiteEmitter, _ n: Node, _ op: String) throws {
        let x = try arity(n, 0)
        try e.op(op, [try e.input(x), try e.int32Constant("axes", [1, 2])], [try e.output(n)], options: "ReducerOptions") { b in
            b.table { t in t.add(0, true, default: false) }
        }
    }

    static func lrn(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let size = n.int("size", 0)
        guard size >= 1, size % 2 == 1 else { throw TFLiteOpError("size \(size) (TFLite's window is symmetric: odd sizes only)") }
        let radius = Int32((size - 1) / 2), bias = n.float("bias", 1), alpha = n.float("alpha", 1e-4) / Float(size), beta = n.float("beta", 0.75)
        try e.op("LOCAL_RESPONSE_NORMALIZATION", [try e.input(try arity(n, 0))], [try e.output(n)], options: "LocalResponseNormalizationOptions") { b in
            b.table { t in t.add(0, radius, default: 0); t.add(1, bias, default: 0); t.add(2, alpha, default: 0); t.add(3, beta, default: 0) }
        }
    }

    static func resize(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        guard xs[0] == ys[0], xs[3] == ys[3] else { throw TFLiteOpError("resizes the batch or channel axis") }
        guard n.int("antialias", 0) == 0 else { throw TFLiteOpError("antialias") }
        let mode = n.string("mode", "nearest"), ctm = n.string("coordinate_transformation_mode", "half_pixel")
        var align = false, half = false
        switch (mode, ctm) {
        case ("linear", "asymmetric"), ("nearest", "asymmetric"): break
        case ("linear", "align_corners"): align = true
        case ("linear", "half_pixel"): half = true
        case ("linear", "pytorch_half_pixel") where ys[1] > 1 && ys[2] > 1: half = true
        case ("nearest", "align_corners"): align = true
        case ("nearest", "tf_half_pixel_for_nn"): half = true
        default: throw TFLiteOpError("mode \(mode) with coordinate_transformation_mode \(ctm)")
        }
        if mode == "nearest" {
            let nm = n.string("nearest_mode", "round_prefer_floor")
            let expected = align ? "round_prefer_ceil" : "floor"
            guard nm == expected else { throw TFLiteOpError("nearest_mode \(nm) with \(ctm) (TFLite rounds like \(expected))") }
        }
        let size = try e.int32Constant("size", [ys[1], ys[2]])
        let (a, h) = (align, half)
        if mode == "linear" {
            try e.op("RESIZE_BILINEAR", [try e.input(x), size], [try e.output(n)], options: "ResizeBilinearOptions", version: h ? 3 : 1) { b in
                b.table { t in t.add(2, a, default: false); t.add(3, h, default: false) }
            }
        } else {
            try e.op("RESIZE_NEAREST_NEIGHBOR", [try e.input(x), size], [try e.output(n)], options: "ResizeNearestNeighborOptions", version: h ? 3 : 1) { b in
                b.table { t in t.add(0, a, default: false); t.add(1, h, default: false) }
            }
        }
    }

    static func spaceDepth(_ e: inout TFLiteEmitter, _ n: Node, _ op: String, _ options: String) throws {
        if op == "DEPTH_TO_SPACE", n.string("mode", "DCR") != "DCR" { throw TFLiteOpError("mode \(n.string("mode", "DCR")) (TFLite's is DCR)") }
        let block = Int32(n.int("blocksize", 0))
        guard block >= 1 else { throw TFLiteOpError("blocksize \(block)") }
        try e.op(op, [try e.input(try arity(n, 0))], [try e.output(n)], options: options) { b in b.table { t in t.add(0, block, default: 0) } }
    }
}
