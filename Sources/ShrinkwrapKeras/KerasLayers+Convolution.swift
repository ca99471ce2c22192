import ShrinkwrapIR

/// Convolutions and pooling. Keras computes channels last; the IR's Conv and pools
/// compute channels first, so each is wrapped in Transposes (cancelled between
/// neighbours at the end of the import). TensorFlow's SAME padding puts the odd
/// pixel after: explicit pads when the size is known, auto_pad SAME_UPPER otherwise.
extension KerasLayers {
    static let convolutions: [String: Translator] = [
        "Conv1D": { c, call in try conv(&c, call, spatial: 1) },
        "Conv2D": { c, call in try conv(&c, call, spatial: 2) },
        "Conv3D": { c, call in try conv(&c, call, spatial: 3) },
        "DepthwiseConv2D": { c, call in try depthwise(&c, call, spatial: 2) },
        "DepthwiseConv1D": { c, call in try depthwise(&c, call, spatial: 1) },
        "SeparableConv2D": { c, call in try separable(&c, call, spatial: 2) },
        "SeparableConv1D": { c, call in try separable(&c, call, spatial: 1) },
        "Conv2DTranspose": { c, call in try convTranspose(&c, call, spatial: 2) },
        "Conv1DTranspose": { c, call in try convTranspose(&c, call, spatial: 1) },
    ]

    /// Kernel size, strides and dilations from the configuration, `spatial` each.
    struct Window {
        var kernel: [Int]
        var strides: [Int]
        var dilations: [Int]
        var padding: String

        var effectiveKernel: [Int] { zip(kernel, dilations).map { ($0 - 1) * $1 + 1 } }
    }

    static func window(_ c: KerasContext, _ call: KerasCall, spatial: Int, kernelKey: String = "kernel_size", stridesDefault: [Int]? = nil) throws -> Window {
        let cfg = call.config
        guard let k = cfg[kernelKey]?.ints(count: spatial), k.count == spatial,
              let s = cfg["strides"].flatMap({ $0.isNull ? nil : $0.ints(count: spatial) }) ?? stridesDefault ?? Optional(Array(repeating: 1, count: spatial)),
              s.count == spatial,
              let d = cfg["dilation_rate"]?.ints(count: spatial) ?? Optional(Array(repeating: 1, count: spatial)), d.count == spatial,
              (k + s + d).allSatisfy({ $0 > 0 }) else {
            throw c.malformed(call, "\(kernelKey), strides or dilation_rate is not \(spatial) positive integers")
        }
        let padding = (cfg["padding"]?.string ?? "valid").lowercased()
        guard ["valid", "same", "causal"].contains(padding) else { throw c.unsupported(call, "padding '\(padding)'") }
        return Window(kernel: k, strides: s, dilations: d, padding: padding)
    }

    static func checkChannelsLast(_ c: KerasContext, _ call: KerasCall) throws {
        if let f = call.config["data_format"]?.string, f != "channels_last" {
            throw c.unsupported(call, "data_format '\(f)' (channels-last models only)")
        }
    }

    /// Pads (ONNX order: all begins, then all ends) and output sizes; SAME without known sizes → auto_pad.
    static func geometry(_ w: Window, input: [Int?]) -> (attrs: [String: Attribute], sizes: [Int?]) {
        let ek = w.effectiveKernel
        var attrs: [String: Attribute] = ["strides": .ints(w.strides), "dilations": .ints(w.dilations)]
        var begins: [Int] = [], ends: [Int] = [], sizes: [Int?] = []
        var known = true
        for (i, n) in input.enumerated() {
            switch w.padding {
            case "same":
                sizes.append(n.map { ($0 + w.strides[i] - 1) / w.strides[i] })
                guard let n else { known = false; begins.append(0); ends.append(0); continue }
                let out = (n + w.strides[i] - 1) / w.strides[i]
                let total = max((out - 1) * w.strides[i] + ek[i] - n, 0)
                begins.append(total / 2); ends.append(total - total / 2)
            case "causal":
                begins.append(ek[i] - 1); ends.append(0)
                sizes.append(n.map { ($0 - 1) / w.strides[i] + 1 })
            default:
                begins.append(0); ends.append(0)
                sizes.append(n.map { $0 >= ek[i] ? ($0 - ek[i]) / w.strides[i] + 1 : 0 })
            }
        }
        if known { attrs["pads"] = .ints(begins + ends) } else { attrs["auto_pad"] = .string("SAME_UPPER") }
        return (attrs, sizes)
    }

    /// The channels-last input of a `spatial`-D layer: rank, channel count.
    static func image(_ c: KerasContext, _ call: KerasCall, spatial: Int) throws -> (x: KValue, channels: Int?) {
        try checkChannelsLast(c, call)
        let x = try call.input(c.file)
        guard x.rank == spatial + 2 else { throw c.malformed(call, "input of shape \(describe(x.shape)) for a \(spatial)-D layer") }
        return (x, x.shape[x.rank - 1])
    }

    /// Conv on channels-first data between Transposes, bias included, then the activation: an element-wise
    /// one before the Transpose back (so that a following channels-first op cancels the pair), softmax after.
    static func emitConv(_ c: inout KerasContext, _ call: KerasCall, _ x: KValue, op: String = "Conv", weight: String, bias: String?,
                         attrs: [String: Attribute], outShape: [Int?]) throws -> KValue {
        let y = c.emit(op, [c.toChannelsFirst(x), weight, bias ?? ""], attrs, out: call.outputName + "/nchw")
        return try finishChannelsFirst(&c, call, y, shape: outShape)
    }

    /// A channels-first result `y` of a layer with an `activation`, back to channels last with Keras' `shape`.
    static func finishChannelsFirst(_ c: inout KerasContext, _ call: KerasCall, _ y: String, shape: [Int?]) throws -> KValue {
        let r = shape.count
        let name = call.config["activation"]?.string ?? call.config["activation"]?["config"]?.string ?? "linear"
        if name == "softmax" || name == "log_softmax" {
            let out = KValue(name: c.toChannelsLast(y, rank: r, out: call.outputName + "/conv"), shape: shape)
            return try KerasLayers.activation(&c, call, call.config["activation"], out)
        }
        var inner = call
        inner.outputName = call.outputName + "/activation"
        let first = [shape[0], shape[r - 1]] + Array(shape[1..<(r - 1)])
        let a = try KerasLayers.activation(&c, inner, call.config["activation"], KValue(name: y, shape: first))
        return KValue(name: c.toChannelsLast(a.name, rank: r, out: call.outputName), shape: shape)
    }


    static func conv(_ c: inout KerasContext, _ call: KerasCall, spatial: Int) throws -> [KValue] {
        let (x, channels) = try image(c, call, spatial: spatial)
        let w = try window(c, call, spatial: spatial)
        let useBias = call.config["use_bias"]?.bool ?? true
        let groups = call.config["groups"]?.int ?? 1
        let weights = try c.layerWeights(call, counts: [useBias ? 2 : 1])
        let k = weights[0]
        // Keras kernel [k…, in / groups, out] → [out, in / groups, k…].
        guard k.rank == spatial + 2, Array(k.shape.prefix(spatial)) == w.kernel, groups > 0, let filters = k.shape.last,
              channels == nil || channels == k.shape[spatial] * groups else {
            throw c.malformed(call, "kernel \(k.shape) for kernel_size \(w.kernel), groups \(groups) and an input of shape \(describe(x.shape))")
        }
        let weight = c.weightConstant(call, "kernel") { k.permuted([spatial + 1, spatial] + Array(0..<spatial)) }
        let bias = useBias ? c.weightConstant(call, "bias") { weights[1] } : nil
        var (attrs, sizes) = geometry(w, input: Array(x.shape[1...spatial]))
        attrs["kernel_shape"] = .ints(w.kernel)
        attrs["group"] = .int(groups)
        return [try emitConv(&c, call, x, weight: weight, bias: bias, attrs: attrs, outShape: [x.shape[0]] + sizes + [filters])]
    }

    /// Depthwise kernel [k…, in, multiplier] → Conv weight [in · multiplier, 1, k…], one group per input channel.
    static func depthwiseWeight(_ k: Tensor, spatial: Int) -> Tensor {
        let inC = k.shape[spatial], m = k.shape[spatial + 1]
        return k.permuted([spatial, spatial + 1] + Array(0..<spatial)).reshaped([inC * m, 1] + Array(k.shape.prefix(spatial)))
    }

    static func depthwise(_ c: inout KerasContext, _ call: KerasCall, spatial: Int) throws -> [KValue] {
        let (x, channels) = try image(c, call, spatial: spatial)
        let w = try window(c, call, spatial: spatial)
        let useBias = call.config["use_bias"]?.bool ?? true
        let weights = try c.layerWeights(call, counts: [useBias ? 2 : 1])
        let k = weights[0]
        guard k.rank == spatial + 2, Array(k.shape.prefix(spatial)) == w.kernel, channels == nil || channels == k.shape[spatial] else {
            throw c.malformed(call, "depthwise kernel \(k.shape) for an input of shape \(describe(x.shape))")
        }
        let inC = k.shape[spatial], m = k.shape[spatial + 1]
        let weight = c.weightConstant(call, "depthwise_kernel") { depthwiseWeight(k, spatial: spatial) }
        let bias = useBias ? c.weightConstant(call, "bias") { weights[1] } : nil
        var (attrs, sizes) = geometry(w, input: Array(x.shape[1...spatial]))
        attrs["kernel_shape"] = .ints(w.kernel)
        attrs["group"] = .int(inC)
        return [try emitConv(&c, call, x, weight: weight, bias: bias, attrs: attrs, outShape: [x.shape[0]] + sizes + [inC * m])]
    }

    /// SeparableConv: a depthwise convolution (no bias), then a pointwise 1×1 one with the bias and the activation.
    static func separable(_ c: inout KerasContext, _ call: KerasCall, spatial: Int) throws -> [KValue] {
        let (x, channels) = try image(c, call, spatial: spatial)
        let w = try window(c, call, spatial: spatial)
        let useBias = call.config["use_bias"]?.bool ?? true
        let weights = try c.layerWeights(call, counts: [useBias ? 3 : 2])
        let dk = weights[0], pk = weights[1]
        guard dk.rank == spatial + 2, pk.rank == spatial + 2, Array(dk.shape.prefix(spatial)) == w.kernel,
              channels == nil || channels == dk.shape[spatial], pk.shape[spatial] == dk.shape[spatial] * dk.shape[spatial + 1] else {
            throw c.malformed(call, "kernels \(dk.shape) and \(pk.shape) for an input of shape \(describe(x.shape))")
        }
        let inC = dk.shape[spatial], filters = pk.shape[spatial + 1]
        let dw = c.weightConstant(call, "depthwise_kernel") { depthwiseWeight(dk, spatial: spatial) }
        let pw = c.weightConstant(call, "pointwise_kernel") { pk.permuted([spatial + 1, spatial] + Array(0..<spatial)) }
        let bias = useBias ? c.weightConstant(call, "bias") { weights[2] } : nil
        var (attrs, sizes) = geometry(w, input: Array(x.shape[1...spatial]))
        attrs["kernel_shape"] = .ints(w.kernel)
        attrs["group"] = .int(inC)
        let xin = c.toChannelsFirst(x)
        let d = c.emit("Conv", [xin, dw], attrs, out: call.outputName + "/depthwise")
        let ones = [Int](repeating: 1, count: spatial)
        let p = c.emit("Conv", [d, pw, bias ?? ""], ["kernel_shape": .ints(ones), "strides": .ints(ones), "group": .int(1)], out: call.outputName + "/nchw")
        return [try finishChannelsFirst(&c, call, p, shape: [x.shape[0]] + sizes + [filters])]
    }

    /// Conv*Transpose: kernel [k…, out, in] → [in, out, k…]; sizes as Keras' deconv_output_length.
    static func convTranspose(_ c: inout KerasContext, _ call: KerasCall, spatial: Int) throws -> [KValue] {
        let (x, channels) = try image(c, call, spatial: spatial)
        let w = try window(c, call, spatial: spatial)
        guard w.padding != "causal" else { throw c.unsupported(call, "causal padding on a transposed convolution") }
        let useBias = call.config["use_bias"]?.bool ?? true
        let weights = try c.layerWeights(call, counts: [useBias ? 2 : 1])
        let k = weights[0]
        guard k.rank == spatial + 2, Array(k.shape.prefix(spatial)) == w.kernel, channels == nil || channels == k.shape[spatial + 1] else {
            throw c.malformed(call, "kernel \(k.shape) for an input of shape \(describe(x.shape))")
        }
        let filters = k.shape[spatial]
        let outputPadding = call.config["output_padding"].flatMap { $0.isNull ? nil : $0.ints(count: spatial) }
        let weight = c.weightConstant(call, "kernel") { k.permuted([spatial + 1, spatial] + Array(0..<spatial)) }
        let bias = useBias ? c.weightConstant(call, "bias") { weights[1] } : nil
        var pads: [Int] = [], extra: [Int] = [], sizes: [Int?] = []
        for (i, ek) in w.effectiveKernel.enumerated() {
            let s = w.strides[i]
            if let op = outputPadding {
                let p = w.padding == "same" ? ek / 2 : 0
                pads.append(p); extra.append(op[i])
                sizes.append(x.shape[1 + i].map { ($0 - 1) * s + ek - 2 * p + op[i] })
            } else if w.padding == "same" {
                // TensorFlow's: the forward SAME convolution of an input of size n · s.
                let total = max(ek - s, 0)
                pads.append(total / 2); extra.append(max(s - ek, 0))
                sizes.append(x.shape[1 + i].map { $0 * s })
            } else {
                pads.append(0); extra.append(max(s - ek, 0))
                sizes.append(x.shape[1 + i].map { ($0 - 1) * s + ek + max(s - ek, 0) })
            }
        }
        let ends = zip(w.effectiveKernel, w.strides).enumerated().map { i, p in
            outputPadding != nil ? pads[i] : (w.padding == "same" ? max(p.0 - p.1, 0) - pads[i] : 0)
        }
        let attrs: [String: Attribute] = ["kernel_shape": .ints(w.kernel), "strides": .ints(w.strides), "dilations": .ints(w.dilations),
                                          "pads": .ints(pads + ends), "output_padding": .ints(extra)]
        return [try emitConv(&c, call, x, op: "ConvTranspose", weight: weight, bias: bias, attrs: attrs, outShape: [x.shape[0]] + sizes + [filters])]
    }

    // MARK: - Pooling

    static let pooling: [String: Translator] = {
        var t: [String: Translator] = [:]
        for n in 1...3 {
            t["MaxPooling\(n)D"] = { c, call in try pool(&c, call, spatial: n, op: "MaxPool") }
            t["AveragePooling\(n)D"] = { c, call in try pool(&c, call, spatial: n, op: "AveragePool") }
            t["GlobalMaxPooling\(n)D"] = { c, call in try globalPool(&c, call, spatial: n, op: "ReduceMax") }
            t["GlobalAveragePooling\(n)D"] = { c, call in try globalPool(&c, call, spatial: n, op: "ReduceMean") }
        }
        // Keras 2's aliases.
        for (alias, n) in [("MaxPool", "MaxPooling"), ("AvgPool", "AveragePooling"), ("GlobalMaxPool", "GlobalMaxPooling"), ("GlobalAvgPool", "GlobalAveragePooling")] {
            for d in 1...3 { t["\(alias)\(d)D"] = t["\(n)\(d)D"] }
        }
        return t
    }()

    static func pool(_ c: inout KerasContext, _ call: KerasCall, spatial: Int, op: String) throws -> [KValue] {
        let (x, _) = try image(c, call, spatial: spatial)
        guard let size = call.config["pool_size"]?.ints(count: spatial), size.count == spatial else { throw c.malformed(call, "pool_size is not \(spatial) integers") }
        let w = try window(c, call, spatial: spatial, kernelKey: "pool_size", stridesDefault: size)
        guard w.padding != "causal" else { throw c.unsupported(call, "causal padding on a pool") }
        var (attrs, sizes) = geometry(w, input: Array(x.shape[1...spatial]))
        attrs["dilations"] = nil
        attrs["kernel_shape"] = .ints(w.kernel)
        if op == "AveragePool" { attrs["count_include_pad"] = .int(0) }
        let y = c.emit(op, [c.toChannelsFirst(x)], attrs, out: call.outputName + "/nchw")
        return [KValue(name: c.toChannelsLast(y, rank: x.rank, out: call.outputName), shape: [x.shape[0]] + sizes + [x.shape[x.rank - 1]])]
    }

    /// Global pools reduce the spatial axes of the channels-last value directly.
    static func globalPool(_ c: inout KerasContext, _ call: KerasCall, spatial: Int, op: String) throws -> [KValue] {
        let (x, channels) = try image(c, call, spatial: spatial)
        let keep = call.config["keepdims"]?.bool ?? false
        let axes = c.int64s(call.outputName + "/axes", Array(1...spatial))
        let shape: [Int?] = keep ? [x.shape[0]] + Array(repeating: 1, count: spatial) + [channels] : [x.shape[0], channels]
        return [KValue(name: c.emit(op, [x.name, axes], ["keepdims": .int(keep ? 1 : 0)], out: call.outputName), shape: shape)]
    }
}
