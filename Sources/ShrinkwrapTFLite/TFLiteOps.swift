import FlatBuffers
import ShrinkwrapIR

/// TFLite builtin op → IR nodes (ONNX semantics). One entry per builtin.
enum TFLiteOps {
    typealias Translator = (inout TFLiteContext, TFLiteModel.Op) throws -> Void

    static let table: [String: Translator] = {
        var t: [String: Translator] = [:]
        t["CONV_2D"] = conv
        t["DEPTHWISE_CONV_2D"] = depthwise
        t["TRANSPOSE_CONV"] = transposeConv
        t["FULLY_CONNECTED"] = fullyConnected
        for (name, onnx, options) in [("ADD", "Add", "AddOptions"), ("SUB", "Sub", "SubOptions"),
                                      ("MUL", "Mul", "MulOptions"), ("DIV", "Div", "DivOptions")] {
            t[name] = { c, op in try binary(&c, op, onnx, options: options) }
        }
        for (name, onnx) in [("MINIMUM", "Min"), ("MAXIMUM", "Max"), ("POW", "Pow")] {
            t[name] = { c, op in try binary(&c, op, onnx, options: nil) }
        }
        t["AVERAGE_POOL_2D"] = { c, op in try pool(&c, op, "AveragePool") }
        t["MAX_POOL_2D"] = { c, op in try pool(&c, op, "MaxPool") }
        for (name, onnx) in [("MEAN", "ReduceMean"), ("SUM", "ReduceSum"), ("REDUCE_MAX", "ReduceMax"),
                             ("REDUCE_MIN", "ReduceMin"), ("REDUCE_PROD", "ReduceProd")] {
            t[name] = { c, op in try reduce(&c, op, onnx) }
        }
        for (name, onnx) in [("LOGISTIC", "Sigmoid"), ("TANH", "Tanh"), ("RELU", "Relu"), ("HARD_SWISH", "HardSwish"),
                             ("SQRT", "Sqrt"), ("EXP", "Exp"), ("LOG", "Log"), ("ABS", "Abs"), ("NEG", "Neg"),
                             ("FLOOR", "Floor"), ("CEIL", "Ceil"), ("SIN", "Sin"), ("COS", "Cos"), ("LOG_SOFTMAX", "LogSoftmax")] {
            t[name] = { c, op in try unary(&c, op, onnx) }
        }
        t["RELU6"] = { c, op in try clip(&c, op, 0, 6) }
        t["RELU_N1_TO_1"] = { c, op in try clip(&c, op, -1, 1) }
        t["RELU_0_TO_1"] = { c, op in try clip(&c, op, 0, 1) }
        t["LEAKY_RELU"] = leakyRelu
        t["PRELU"] = { c, op in try arity(c, op, 2); c.emit("PRelu", [c.value(op.inputs[0]), c.value(op.inputs[1])], [c.value(op.outputs[0])]) }
        t["SOFTMAX"] = softmax
        t["RESHAPE"] = reshape
        t["SQUEEZE"] = squeeze
        t["EXPAND_DIMS"] = expandDims
        t["TRANSPOSE"] = transpose
        t["CONCATENATION"] = concatenation
        t["SPLIT"] = split
        t["SPLIT_V"] = splitV
        t["SLICE"] = slice
        t["STRIDED_SLICE"] = stridedSlice
        t["PAD"] = pad
        t["PADV2"] = pad
        t["GATHER"] = gather
        t["RESIZE_BILINEAR"] = { c, op in try resize(&c, op, bilinear: true) }
        t["RESIZE_NEAREST_NEIGHBOR"] = { c, op in try resize(&c, op, bilinear: false) }
        t["SQUARED_DIFFERENCE"] = squaredDifference
        t["RSQRT"] = rsqrt
        t["BATCH_MATMUL"] = batchMatMul
        t["DEPTH_TO_SPACE"] = { c, op in try spaceDepth(&c, op, "DepthToSpace", options: "DepthToSpaceOptions") }
        t["SPACE_TO_DEPTH"] = { c, op in try spaceDepth(&c, op, "SpaceToDepth", options: "SpaceToDepthOptions") }
        t["LOCAL_RESPONSE_NORMALIZATION"] = localResponseNorm
        t["UNIDIRECTIONAL_SEQUENCE_LSTM"] = sequenceLSTM
        return t
    }()

    // MARK: - Helpers

    static func arity(_ c: TFLiteContext, _ op: TFLiteModel.Op, _ inputs: Int, outputs: Int = 1) throws {
        guard op.inputs.count >= inputs, op.outputs.count >= outputs,
              op.inputs.prefix(inputs).allSatisfy({ $0 >= 0 }) else {
            throw ImportError.malformed(c.loc(op), reason: "\(op.inputs.count) inputs and \(op.outputs.count) outputs; expected at least \(inputs) and \(outputs)")
        }
    }

    /// TensorFlow's SAME padding: (before, after), the extra pixel after.
    static func samePads(_ size: Int, kernel: Int, stride: Int, dilation: Int) -> (Int, Int) {
        let out = (size + stride - 1) / stride
        let total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
        return (total / 2, total - total / 2)
    }

    /// Applies the fused activation to an NCHW result, then transposes it into the NHWC output.
    static func finishNCHW(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ y: String, activation: Int8) throws {
        let out = c.value(op.outputs[0])
        if activation == 0 { c.toNHWC(y, into: out); return }
        let a = c.fresh(out + "_act")
        try c.activation(activation, y, a, op: op)
        c.toNHWC(a, into: out)
    }

    /// A weight transposed for the IR, under the tensor's own name when nothing else reads the original.
    static func weight(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ k: Int, perm: [Int], rank: Int) throws -> (name: String, shape: [Int]) {
        let i = op.inputs[k]
        guard let e = c.constantEncoding(i) else {
            throw ImportError.unsupported(c.loc(op), what: "a filter computed at run time (input \(k)); only constant filters are supported")
        }
        guard e.shape.count == rank else {
            throw ImportError.malformed(c.loc(op), reason: "filter shape \(e.shape) is not rank \(rank)")
        }
        let transposed: WeightEncoding
        do { transposed = try e.transposed(perm) } catch {
            throw ImportError.badTensor(c.loc(tensor: i), reason: error.reason)
        }
        if c.readers[i] == 1 {
            c.constantTensors[i] = transposed
            return (c.value(i), transposed.shape)
        }
        return (c.addConstant(c.value(i) + "_nchw", transposed), transposed.shape)
    }

    static func optionalInput(_ c: TFLiteContext, _ op: TFLiteModel.Op, _ k: Int) -> String {
        k < op.inputs.count && op.inputs[k] >= 0 ? c.value(op.inputs[k]) : ""
    }

    /// H and W of an NHWC input, when the file gives them.
    static func spatial(_ c: TFLiteContext, _ i: Int, _ op: TFLiteModel.Op) throws -> (h: Int, w: Int, channels: Int) {
        let s = c.shape(i)
        guard s.count == 4 else { throw ImportError.unsupported(c.loc(op), what: "input of rank \(s.count) (NHWC rank 4 expected)") }
        return (s[1], s[2], s[3])
    }

    // MARK: - Convolutions and pooling

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

    // MARK: - Dense and element-wise

    static func fullyConnected(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let o = try c.options(op, "FullyConnectedOptions")
        let act: Int8 = try c.option(o, 0, Int8(0), op)
        let format: Int8 = try c.option(o, 1, Int8(0), op)
        let keep: Bool = try c.option(o, 2, false, op)
        guard format == 0 else { throw ImportError.unsupported(c.loc(op), what: "shuffled fully-connected weights (weights_format \(format))") }
        let wShape = c.constantEncoding(op.inputs[1])?.shape ?? c.shape(op.inputs[1])
        guard wShape.count == 2 else { throw ImportError.malformed(c.loc(op), reason: "weights shape \(wShape) is not [units, depth]") }
        let (units, depth) = (wShape[0], wShape[1])
        let xs = c.shape(op.inputs[0])
        var x = c.value(op.inputs[0])
        if xs.count != 2 || xs.last != depth {
            let flat = c.fresh(x + "_2d")
            c.emit("Reshape", [x, c.int64Constant("fc_shape", [-1, depth])], [flat])
            x = flat
        }
        let out = c.value(op.outputs[0])
        let outShape = c.shape(op.outputs[0])
        let needsReshape = keep && xs.count != 2 && !xs.isEmpty
        let gemmOut = needsReshape || act != 0 ? c.fresh(out + "_gemm") : out
        // A weight read at run time is not transposed at import: Gemm's transB reads it as stored.
        c.emit("Gemm", [x, c.value(op.inputs[1]), optionalInput(c, op, 2)], [gemmOut], ["transB": .int(1)], name: out)
        var y = gemmOut
        if needsReshape {
            let r = act != 0 ? c.fresh(out + "_nd") : out
            let target = outShape.count == xs.count ? outShape : Array(xs.dropLast()) + [units]
            c.emit("Reshape", [y, c.int64Constant("fc_out_shape", target.enumerated().map { $0.offset == 0 ? -1 : $0.element })], [r])
            y = r
        }
        if act != 0 { try c.activation(act, y, out, op: op) }
    }

    static func binary(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String, options: String?) throws {
        try arity(c, op, 2)
        var act: Int8 = 0
        if let options {
            let o = try c.options(op, options)
            act = try c.option(o, 0, Int8(0), op)
        }
        let a = c.value(op.inputs[0]), b = c.value(op.inputs[1])
        try c.withActivation(act, output: c.value(op.outputs[0]), op: op) { c, y in c.emit(onnx, [a, b], [y]) }
    }

    static func unary(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String) throws {
        try arity(c, op, 1)
        let attrs: [String: Attribute] = onnx == "LogSoftmax" ? ["axis": .int(-1)] : [:]
        c.emit(onnx, [c.value(op.inputs[0])], [c.value(op.outputs[0])], attrs)
    }

    static func clip(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ lo: Float, _ hi: Float) throws {
        try arity(c, op, 1)
        c.emit("Clip", [c.value(op.inputs[0]), c.floatConstant("clip_min", lo), c.floatConstant("clip_max", hi)], [c.value(op.outputs[0])])
    }

    static func leakyRelu(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let alpha: Float = try c.option(try c.options(op, "LeakyReluOptions"), 0, Float(0), op)
        c.emit("LeakyRelu", [c.value(op.inputs[0])], [c.value(op.outputs[0])], ["alpha": .float(alpha)])
    }

    static func softmax(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let beta: Float = try c.option(try c.options(op, "SoftmaxOptions"), 0, Float(0), op)
        var x = c.value(op.inputs[0])
        if beta != 1 {
            let scaled = c.fresh(x + "_beta")
            c.emit("Mul", [x, c.floatConstant("softmax_beta", beta)], [scaled])
            x = scaled
        }
        c.emit("Softmax", [x], [c.value(op.outputs[0])], ["axis": .int(-1)])
    }

    static func squaredDifference(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let d = c.fresh(c.value(op.outputs[0]) + "_diff")
        c.emit("Sub", [c.value(op.inputs[0]), c.value(op.inputs[1])], [d])
        c.emit("Mul", [d, d], [c.value(op.outputs[0])])
    }

    static func rsqrt(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let s = c.fresh(c.value(op.outputs[0]) + "_sqrt")
        c.emit("Sqrt", [c.value(op.inputs[0])], [s])
        c.emit("Reciprocal", [s], [c.value(op.outputs[0])])
    }

    static func batchMatMul(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let o = try c.options(op, "BatchMatMulOptions")
        let adj = [try c.option(o, 0, false, op), try c.option(o, 1, false, op)]
        var ins: [String] = []
        for k in 0..<2 {
            var v = c.value(op.inputs[k])
            if adj[k] {
                let r = c.shape(op.inputs[k]).count
                guard r >= 2 else { throw ImportError.malformed(c.loc(op), reason: "adjoint of a rank-\(r) input") }
                let t = c.fresh(v + "_adj")
                c.emit("Transpose", [v], [t], ["perm": .ints(Array(0..<(r - 2)) + [r - 1, r - 2])])
                v = t
            }
            ins.append(v)
        }
        c.emit("MatMul", ins, [c.value(op.outputs[0])])
    }

    // MARK: - Reductions and shapes

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
            if !dynamic { shape = out.shape }
        }
        guard let shape else { throw ImportError.unsupported(c.loc(op), what: "a reshape to a shape computed at run time") }
        c.emit("Reshape", [c.value(op.inputs[0]), c.int64Constant("shape", shape)], [c.value(op.outputs[0])],
               shape.contains(0) ? ["allowzero": .int(1)] : [:])
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

// MARK: - Recurrent

extension TFLiteOps {
    /// Gate weights stacked by rows into one weight, keeping a common encoding:
    /// float32, float16, or 8-bit affine with one scale per row (per-tensor
    /// gate scales repeated); mixed encodings are decoded to float32.
    static func stackRows(_ parts: [WeightEncoding]) throws(WeightLayoutError) -> WeightEncoding {
        guard let first = parts.first else { throw WeightLayoutError("no gate weights") }
        let cols = first.shape.count == 2 ? first.shape[1] : (first.shape.count == 1 ? 1 : 0)
        guard parts.allSatisfy({ ($0.shape.count == 2 && $0.shape[1] == cols) || ($0.shape.count == 1 && cols == 1) }) else {
            throw WeightLayoutError("gate weights of shapes \(parts.map(\.shape)) do not stack")
        }
        let rows = parts.reduce(0) { $0 + ($1.shape.first ?? 0) }
        let shape = first.shape.count == 2 ? [rows, cols] : [rows]
        let affines = parts.compactMap { e -> AffineWeights? in if case .affine(let a) = e { return a } else { return nil } }
        if affines.count == parts.count, affines.allSatisfy({ $0.bits == 8 && $0.signed == affines[0].signed && $0.shape.count == 2 }) {
            var q: [Int16] = [], scale: [Float] = [], bias: [Float] = []
            for a in affines {
                let r = a.shape[0]
                q += a.q
                if a.scale.count == 1 {
                    scale += Array(repeating: a.scale[0], count: r)
                    bias += Array(repeating: a.bias[0], count: r)
                } else if a.scaleShape == [r, 1] {
                    scale += a.scale
                    bias += a.bias
                } else {
                    return try denseStack(parts, shape: shape)
                }
            }
            return .affine(try AffineWeights(shape: shape, bits: 8, signed: affines[0].signed, q: q, blockShape: [1, cols], scale: scale, bias: bias))
        }
        let halves = parts.compactMap { e -> Float16Weights? in if case .float16(let h) = e { return h } else { return nil } }
        if halves.count == parts.count {
            return .float16(try Float16Weights(shape: shape, bits: halves.flatMap(\.bits)))
        }
        return try denseStack(parts, shape: shape)
    }

    /// The parts decoded to float32 and concatenated (integer weights converted; any other type refused).
    static func denseStack(_ parts: [WeightEncoding], shape: [Int]) throws(WeightLayoutError) -> WeightEncoding {
        var values: [Float] = []
        for p in parts {
            let t = p.decoded()
            guard let v = t.floats ?? t.ints?.map(Float.init) else { throw WeightLayoutError("a \(t.dtype) gate weight") }
            values += v
        }
        guard values.count == shape.reduce(1, *) else { throw WeightLayoutError("\(values.count) gate weights for shape \(shape)") }
        return .dense(Tensor(values, shape: shape))
    }

    /// UNIDIRECTIONAL_SEQUENCE_LSTM → ONNX LSTM (gates i, o, f, c), peepholes
    /// as P, and cell_clip as the IR's `shrinkwrap_cell_clip` (the Keras
    /// converter always writes 10). CIFG, projection and layer norm are refused.
    static func sequenceLSTM(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        guard op.inputs.count >= 20, op.outputs.count >= 1 else {
            throw ImportError.malformed(c.loc(op), reason: "\(op.inputs.count) inputs; UNIDIRECTIONAL_SEQUENCE_LSTM has 20 or 24")
        }
        let o = try c.options(op, "UnidirectionalSequenceLSTMOptions")
        let act: Int8 = try c.option(o, 0, Int8(4), op)
        let cellClip: Float = try c.option(o, 1, Float(0), op), projClip: Float = try c.option(o, 2, Float(0), op)
        let timeMajor: Bool = try c.option(o, 3, false, op)
        func has(_ k: Int) -> Bool { k < op.inputs.count && op.inputs[k] >= 0 }
        let cifg = !has(1)
        var refused: [String] = []
        if has(16) || has(17) { refused.append("projection") }
        if (20..<24).contains(where: has) { refused.append("layer normalization") }
        if projClip != 0 { refused.append("projection clipping") }
        // TFLite's CIFG computes i = 1 − f; ONNX's input_forget couples the other way round (f = 1 − i).
        if cifg { refused.append("coupled input and forget gates (CIFG)") }
        let activations: [Int8: String] = [1: "Relu", 4: "Tanh", 6: "Sigmoid"]
        guard let g = activations[act] else { throw ImportError.unsupported(c.loc(op), what: "LSTM activation \(act)") }
        if !refused.isEmpty { throw ImportError.unsupported(c.loc(op), what: "LSTM with " + refused.joined(separator: ", ")) }
        func weight(_ k: Int) throws -> WeightEncoding {
            guard let e = c.constantEncoding(op.inputs[k]) else {
                throw ImportError.unsupported(c.loc(op), what: "LSTM weight (input \(k)) computed at run time")
            }
            return e
        }
        // TFLite gate inputs i, f, c, o → ONNX order i, o, f, c.
        let w = try [1, 4, 2, 3].map(weight), r = try [5, 8, 6, 7].map(weight), b = try [12, 15, 13, 14].map(weight)
        guard let hidden = w.first?.shape.first, let inSize = w.first?.shape.last, hidden > 0,
              w.allSatisfy({ $0.shape == [hidden, inSize] }), r.allSatisfy({ $0.shape == [hidden, hidden] }),
              b.allSatisfy({ $0.shape == [hidden] }) else {
            throw ImportError.malformed(c.loc(op), reason: "LSTM gate shapes: input \(w.map(\.shape)), recurrent \(r.map(\.shape)), bias \(b.map(\.shape))")
        }
        let stackedW: WeightEncoding, stackedR: WeightEncoding
        do {
            stackedW = try stackRows(w)
            stackedR = try stackRows(r)
        } catch {
            throw ImportError.badTensor(c.loc(op), reason: error.reason)
        }
        func rank3(_ e: WeightEncoding, _ base: String) throws -> String {
            let reshaped: WeightEncoding
            do { reshaped = try e.reshaped([1] + e.shape) } catch { throw ImportError.badTensor(c.loc(op), reason: error.reason) }
            return c.addConstant(base, reshaped)
        }
        let out = c.value(op.outputs[0])
        let wName = try rank3(stackedW, out + "_W"), rName = try rank3(stackedR, out + "_R")
        let biases = b.flatMap { $0.decoded().floats ?? [] } + Array(repeating: 0, count: 4 * hidden)
        guard biases.count == 8 * hidden else { throw ImportError.malformed(c.loc(op), reason: "LSTM gate biases are not \(hidden) each") }
        let bName = c.addConstant(out + "_B", .dense(Tensor(biases, shape: [1, 8 * hidden])))
        var pName = ""
        if has(9) || has(10) || has(11) {
            let peep = try [9, 11, 10].map { k -> [Float] in
                let v = has(k) ? (try weight(k)).decoded().floats ?? [] : Array(repeating: 0, count: hidden)
                guard v.count == hidden else {
                    throw ImportError.malformed(c.loc(op), reason: "peephole weights (input \(k)) hold \(v.count) values for \(hidden) cells")
                }
                return v
            }
            pName = c.addConstant(out + "_P", .dense(Tensor(peep.flatMap { $0 }, shape: [1, 3 * hidden])))
        }
        var x = c.value(op.inputs[0])
        if !timeMajor {
            let t = c.fresh(x + "_tbi")
            c.emit("Transpose", [x], [t], ["perm": .ints([1, 0, 2])])
            x = t
        }
        let y = c.fresh(out + "_y")
        var attrs: [String: Attribute] = ["hidden_size": .int(hidden), "activations": .strings(["Sigmoid", g, g])]
        if cellClip > 0 { attrs["shrinkwrap_cell_clip"] = .float(cellClip) }
        c.emit("LSTM", [x, wName, rName, bName, "", "", "", pName], [y], attrs, name: out)
        let squeezed = timeMajor ? out : c.fresh(out + "_tbh")
        c.emit("Squeeze", [y, c.int64Constant("lstm_axes", [1])], [squeezed])
        if !timeMajor { c.emit("Transpose", [squeezed], [out], ["perm": .ints([1, 0, 2])]) }
    }
}
