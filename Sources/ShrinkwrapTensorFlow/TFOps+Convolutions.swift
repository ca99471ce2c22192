import ShrinkwrapIR
import TensorFlowSchema

/// Convolutions, pooling, matrix products, batch normalization and resizing.
/// TensorFlow computes NHWC; the IR's Conv, pools and Resize compute NCHW, so
/// each is wrapped in Transposes (pairs that cancel are removed after the
/// import). SAME padding puts the odd pixel after: auto_pad SAME_UPPER.
extension TFOps {
    static let convolutions: [String: Translator] = [
        "Conv2D": { c, op in try conv(&c, op, depthwise: false) },
        "DepthwiseConv2dNative": { c, op in try conv(&c, op, depthwise: true) },
        "Conv2DBackpropInput": convTranspose,
        "MaxPool": { c, op in try pool(&c, op, "MaxPool") },
        "AvgPool": { c, op in try pool(&c, op, "AveragePool") },
        "MatMul": matMul,
        "BatchMatMul": batchMatMul, "BatchMatMulV2": batchMatMul, "BatchMatMulV3": batchMatMul,
        "FusedBatchNorm": batchNorm, "FusedBatchNormV2": batchNorm, "FusedBatchNormV3": batchNorm,
        "ResizeBilinear": { c, op in try resize(&c, op, linear: true) },
        "ResizeNearestNeighbor": { c, op in try resize(&c, op, linear: false) },
    ]

    // MARK: - Layout

    static func checkNHWC(_ c: TFContext, _ op: TFOp) throws {
        let format = c.string(op, "data_format", "NHWC")
        guard format == "NHWC" else { throw c.unsupported(op, "data_format \(format) (NHWC graphs only)") }
    }

    static func toNCHW(_ c: inout TFContext, _ v: String) -> String {
        c.apply("Transpose", [v], ["perm": .ints([0, 3, 1, 2])], base: v + "_nchw")
    }

    /// Emits `onnx` on NCHW inputs and transposes its result into `op`'s NHWC output.
    static func nchw(_ c: inout TFContext, _ op: TFOp, _ onnx: String, _ inputs: [String], _ attrs: [String: Attribute]) {
        let y = c.apply(onnx, inputs, attrs, base: op.name + "_nchw")
        c.emit("Transpose", [y], [c.output(op)], ["perm": .ints([0, 2, 3, 1])])
    }

    /// An attribute of four values [1, h, w, 1] (strides, dilations, ksize) as [h, w].
    static func spatial(_ c: TFContext, _ op: TFOp, _ key: String) throws -> [Int] {
        guard let v = c.ints(op, key) ?? (key == "dilations" ? [1, 1, 1, 1] : nil) else { throw c.malformed(op, "no '\(key)'") }
        guard v.count == 4, v[0] == 1, v[3] == 1, v[1] > 0, v[2] > 0 else {
            throw c.unsupported(op, "\(key) \(v) (expected [1, h, w, 1] with positive h, w)")
        }
        return [v[1], v[2]]
    }

    /// Padding attributes: SAME → auto_pad SAME_UPPER, VALID → none, EXPLICIT → pads.
    static func padding(_ c: TFContext, _ op: TFOp) throws -> [String: Attribute] {
        switch c.string(op, "padding", "") {
        case "SAME": return ["auto_pad": .string("SAME_UPPER")]
        case "VALID": return ["pads": .ints([0, 0, 0, 0])]
        case "EXPLICIT":
            guard let p = c.ints(op, "explicit_paddings"), p.count == 8, p.allSatisfy({ $0 >= 0 }), p[0] == 0, p[1] == 0, p[6] == 0, p[7] == 0 else {
                throw c.malformed(op, "explicit_paddings \(c.ints(op, "explicit_paddings") ?? [])")
            }
            return ["pads": .ints([p[2], p[4], p[3], p[5]])]
        case let other: throw c.unsupported(op, "padding '\(other)'")
        }
    }

    /// Input `i` (a TF filter or matrix) permuted by `perm`: at import when
    /// constant, else by a Transpose node.
    static func permuted(_ c: inout TFContext, _ op: TFOp, _ i: Int, perm: [Int], reshape: [Int]? = nil) throws -> (name: String, shape: [Int]?) {
        let v = try c.input(op, i)
        guard var t = c.known(op, i) else {
            guard reshape == nil else { throw c.unsupported(op, "a filter computed at run time") }
            return (c.apply("Transpose", [v], ["perm": .ints(perm)], base: v + "_t"), nil)
        }
        if let reshape {
            guard checkedElementCount(reshape) == t.storage.count else { throw c.malformed(op, "filter of shape \(t.shape)") }
            t = t.reshaped(reshape)
        }
        guard t.shape.count == perm.count, case .dense(let p)? = try? WeightEncoding.dense(t).transposed(perm) else {
            throw c.malformed(op, "input \(i) of shape \(t.shape) (rank \(perm.count) expected)")
        }
        return (c.constant(p, name: v + "_t"), p.shape)
    }

    // MARK: - Convolutions

    /// Conv2D (filter [kh, kw, in, out] → [out, in, kh, kw]) and
    /// DepthwiseConv2dNative (filter [kh, kw, C, M] → [C·M, 1, kh, kw], one group per channel).
    static func conv(_ c: inout TFContext, _ op: TFOp, depthwise: Bool) throws {
        try c.arity(op, 2)
        try checkNHWC(c, op)
        var attrs = try padding(c, op)
        attrs["strides"] = .ints(try spatial(c, op, "strides"))
        attrs["dilations"] = .ints(try spatial(c, op, "dilations"))
        let w: (name: String, shape: [Int]?)
        if depthwise {
            guard let f = c.known(op, 1), f.shape.count == 4 else { throw c.unsupported(op, "a depthwise filter that is not a rank-4 constant") }
            w = try permuted(&c, op, 1, perm: [3, 2, 0, 1], reshape: [f.shape[0], f.shape[1], 1, f.shape[2] * f.shape[3]])
            attrs["group"] = .int(f.shape[2])
        } else {
            w = try permuted(&c, op, 1, perm: [3, 2, 0, 1])
        }
        if let s = w.shape { attrs["kernel_shape"] = .ints([s[2], s[3]]) }
        let x = toNCHW(&c, try c.input(op, 0))
        nchw(&c, op, "Conv", [x, w.name], attrs)
    }

    /// Conv2DBackpropInput(input_sizes, filter [kh, kw, out, in], out_backprop): a ConvTranspose
    /// whose pads and output_padding give exactly input_sizes.
    static let convTranspose: Translator = { c, op in
        try c.arity(op, 3)
        try checkNHWC(c, op)
        let strides = try spatial(c, op, "strides"), dilations = try spatial(c, op, "dilations")
        let w = try permuted(&c, op, 1, perm: [3, 2, 0, 1])
        guard let partial = c.partialInts(op, 0), partial.count == 4, let h = partial[1], let wd = partial[2], let shape = w.shape else {
            throw c.unsupported(op, "input_sizes whose height and width are computed at run time, or a filter computed at run time")
        }
        let sizes = [0, h, wd, 0]
        let same: Bool
        switch c.string(op, "padding", "") {
        case "SAME": same = true
        case "VALID": same = false
        case let other: throw c.unsupported(op, "padding '\(other)'")
        }
        var begins: [Int] = [], ends: [Int] = [], extra: [Int] = []
        for axis in 0..<2 {
            let out = sizes[axis + 1], s = strides[axis], k = (shape[axis + 2] - 1) * dilations[axis] + 1
            let input = same ? (out + s - 1) / s : (out - k) / s + 1
            let total = same ? max((input - 1) * s + k - out, 0) : 0
            let padding = out - ((input - 1) * s + k - total)
            guard input > 0, padding >= 0, padding < max(s, dilations[axis]) else {
                throw c.malformed(op, "input_sizes \(sizes) do not fit the filter \(shape) and strides \(strides)")
            }
            begins.append(total / 2); ends.append(total - total / 2); extra.append(padding)
        }
        let attrs: [String: Attribute] = ["strides": .ints(strides), "dilations": .ints(dilations), "pads": .ints(begins + ends),
                                          "output_padding": .ints(extra), "kernel_shape": .ints([shape[2], shape[3]])]
        let x = toNCHW(&c, try c.input(op, 2))
        nchw(&c, op, "ConvTranspose", [x, w.name], attrs)
    }

    static func pool(_ c: inout TFContext, _ op: TFOp, _ onnx: String) throws {
        try c.arity(op, 1)
        try checkNHWC(c, op)
        var attrs = try padding(c, op)
        attrs["kernel_shape"] = .ints(try spatial(c, op, "ksize"))
        attrs["strides"] = .ints(try spatial(c, op, "strides"))
        if onnx == "AveragePool" { attrs["count_include_pad"] = .int(0) }
        let x = toNCHW(&c, try c.input(op, 0))
        nchw(&c, op, onnx, [x], attrs)
    }

    // MARK: - Matrix products

    /// MatMul: transpose_a / transpose_b (rank-2 operands).
    static let matMul: Translator = { c, op in
        try c.arity(op, 2)
        let a = c.bool(op, "transpose_a") ? try permuted(&c, op, 0, perm: [1, 0]).name : try c.input(op, 0)
        let b = c.bool(op, "transpose_b") ? try permuted(&c, op, 1, perm: [1, 0]).name : try c.input(op, 1)
        c.emit("MatMul", [a, b], [c.output(op)])
    }

    /// BatchMatMul: adj_x / adj_y swap the last two axes; an adjoint operand must be a constant (its rank known).
    static let batchMatMul: Translator = { c, op in
        try c.arity(op, 2)
        var inputs: [String] = []
        for (i, key) in [(0, "adj_x"), (1, "adj_y")] {
            guard c.bool(op, key) else { inputs.append(try c.input(op, i)); continue }
            guard let t = c.known(op, i), t.shape.count >= 2 else { throw c.unsupported(op, "\(key) on an operand computed at run time") }
            let r = t.shape.count
            inputs.append(try permuted(&c, op, i, perm: Array(0..<(r - 2)) + [r - 1, r - 2]).name)
        }
        c.emit("MatMul", inputs, [c.output(op)])
    }

    // MARK: - Normalization

    /// FusedBatchNorm (inference): y = x·s + b per channel (the last axis), s = scale / √(variance + ε),
    /// b = offset − mean·s, folded at import when the parameters are constants.
    static let batchNorm: Translator = { c, op in
        try c.arity(op, 5)
        try checkNHWC(c, op)
        guard case .b(false)? = c.attr(op, "is_training") else {  // TensorFlow's default is true
            throw c.unsupported(op, "is_training (batch statistics); only inference graphs are read")
        }
        let eps = c.float(op, "epsilon", 1e-4)
        let x = try c.input(op, 0)
        let params = (1...4).map { c.known(op, $0) }
        let scale: String, shift: String
        if case .float(let g)? = params[0]?.storage, case .float(let o)? = params[1]?.storage,
           case .float(let m)? = params[2]?.storage, case .float(let v)? = params[3]?.storage,
           g.count == o.count, g.count == m.count, g.count == v.count {
            let s = zip(g, v).map { $0 / ($1 + eps).squareRoot() }
            scale = c.constant(Tensor(s, shape: [s.count]), name: op.name + "_scale")
            shift = c.constant(Tensor(zip(o, zip(m, s)).map { $0 - $1.0 * $1.1 }, shape: [s.count]), name: op.name + "_shift")
        } else {
            let (g, o, m, v) = (try c.input(op, 1), try c.input(op, 2), try c.input(op, 3), try c.input(op, 4))
            let e = c.constant(.scalar(eps), name: op.name + "_epsilon")
            let root = c.apply("Sqrt", [c.apply("Add", [v, e], base: op.name + "_var")], base: op.name + "_std")
            scale = c.apply("Div", [g, root], base: op.name + "_scale")
            shift = c.apply("Sub", [o, c.apply("Mul", [m, scale], base: op.name + "_ms")], base: op.name + "_shift")
        }
        let y = c.apply("Mul", [x, scale], base: op.name + "_mul")
        c.emit("Add", [y, shift], [c.output(op)])
    }

    // MARK: - Resizing

    /// ResizeBilinear / ResizeNearestNeighbor(images NHWC, size [h, w]): a Resize on NCHW to
    /// sizes [N, C, h, w]; align_corners and half_pixel_centers pick the coordinate mapping.
    static func resize(_ c: inout TFContext, _ op: TFOp, linear: Bool) throws {
        try c.arity(op, 2)
        let align = c.bool(op, "align_corners"), half = c.bool(op, "half_pixel_centers")
        guard !(align && half) else { throw c.unsupported(op, "align_corners together with half_pixel_centers") }
        var attrs: [String: Attribute] = ["mode": .string(linear ? "linear" : "nearest")]
        if linear {
            attrs["coordinate_transformation_mode"] = .string(align ? "align_corners" : half ? "half_pixel" : "asymmetric")
        } else {
            // TensorFlow's nearest neighbour (as the TFLite importer writes it): floor without
            // centres, round (ties up) with align_corners, floor((out + ½)·scale) with half-pixel centres.
            attrs["coordinate_transformation_mode"] = .string(align ? "align_corners" : half ? "tf_half_pixel_for_nn" : "asymmetric")
            attrs["nearest_mode"] = .string(align ? "round_prefer_ceil" : "floor")
        }
        let x = toNCHW(&c, try c.input(op, 0))
        let shape = c.apply("Shape", [x], base: op.name + "_shape")
        let nc = c.apply("Slice", [shape, c.int64s([0], name: op.name + "_zero"), c.int64s([2], name: op.name + "_two")], base: op.name + "_nc")
        let hw = try c.int64Input(op, 1)
        let sizes = c.apply("Concat", [nc, hw], ["axis": .int(0)], base: op.name + "_sizes")
        nchw(&c, op, "Resize", [x, "", "", sizes], attrs)
    }
}
