import ShrinkwrapIR

/// The Keras layer translators: one entry per layer class (the one list the
/// importer, its unsupported-layer check and `shrinkwrap support` read).
enum KerasLayers {
    typealias Translator = (inout KerasContext, KerasCall) throws -> [KValue]

    static let table: [String: Translator] = {
        var t: [String: Translator] = [:]
        for part in [core, activationLayers, merging, reshaping, convolutions, pooling, normalization, recurrent] {
            t.merge(part) { a, _ in a }
        }
        return t
    }()

    // MARK: - Activations

    /// Keras' built-in activation named `name` applied to `x`.
    static func activation(_ c: inout KerasContext, _ call: KerasCall, _ spec: KerasJSON?, _ x: KValue) throws -> KValue {
        guard let spec, !spec.isNull else { return x }
        // Keras 3 may write {"module": "keras.activations", "class_name": "function", "config": "relu"}.
        guard let name = spec.string ?? spec["config"]?.string ?? spec["config"]?["name"]?.string else {
            throw c.unsupported(call, "a custom activation object")
        }
        return try activation(&c, call, named: name, x)
    }

    static func activation(_ c: inout KerasContext, _ call: KerasCall, named name: String, _ x: KValue) throws -> KValue {
        let out = call.outputName
        func op(_ type: String, _ attrs: [String: Attribute] = [:]) -> KValue {
            KValue(name: c.emit(type, [x.name], attrs, out: out), shape: x.shape)
        }
        let last = x.rank - 1
        switch name {
        case "linear", "": return x
        case "relu": return op("Relu")
        case "sigmoid": return op("Sigmoid")
        case "tanh": return op("Tanh")
        case "softmax": return op("Softmax", ["axis": .int(last)])
        case "log_softmax": return op("LogSoftmax", ["axis": .int(last)])
        case "softplus": return op("Softplus")
        case "softsign": return op("Softsign")
        case "selu": return op("Selu")
        case "elu": return op("Elu", ["alpha": .float(1)])
        case "exponential": return op("Exp")
        case "swish", "silu": return op("Swish", ["alpha": .float(1)])
        case "mish": return op("Mish")
        case "hard_silu", "hard_swish": return op("HardSwish")
        case "leaky_relu": return op("LeakyRelu", ["alpha": .float(0.2)])
        case "celu": return op("Celu", ["alpha": .float(1)])
        case "relu6": return clip(&c, x, 0, 6, out: out)
        case "hard_tanh": return clip(&c, x, -1, 1, out: out)
        case "sparse_sigmoid": return op("HardSigmoid", ["alpha": .float(0.5), "beta": .float(0.5)])
        case "soft_shrink": return op("Shrink", ["bias": .float(0.5), "lambd": .float(0.5)])
        case "hard_shrink": return op("Shrink", ["bias": .float(0), "lambd": .float(0.5)])
        case "tanh_shrink", "log_sigmoid", "squareplus", "sparse_plus": return try composite(&c, call, named: name, x)
        case "gelu": return op("Gelu", ["approximate": .string("none")])  // Keras 2 and 3: approximate=False
        case "hard_sigmoid":
            // Keras 2: clip(0.2 x + 0.5); Keras 3: relu6(x + 3) / 6.
            return c.isKeras3 ? op("HardSigmoid", ["alpha": .float(1.0 / 6), "beta": .float(0.5)])
                              : op("HardSigmoid", ["alpha": .float(0.2), "beta": .float(0.5)])
        default: throw c.unsupported(call, "activation '\(name)'")
        }
    }

    /// Keras 3's activations without an IR op, from element-wise ones (defaults as Keras': squareplus b = 4).
    static func composite(_ c: inout KerasContext, _ call: KerasCall, named name: String, _ x: KValue) throws -> KValue {
        let out = call.outputName
        func k(_ v: Float) -> String { c.constant(out + "/const", .scalar(v)) }
        func e(_ op: String, _ ins: [String], _ attrs: [String: Attribute] = [:], last: Bool = false) -> String {
            c.emit(op, ins, attrs, out: last ? out : out + "/" + op.lowercased())
        }
        switch name {
        case "tanh_shrink":  // x − tanh(x)
            return KValue(name: e("Sub", [x.name, e("Tanh", [x.name])], last: true), shape: x.shape)
        case "log_sigmoid":  // −softplus(−x)
            return KValue(name: e("Neg", [e("Softplus", [e("Neg", [x.name])])], last: true), shape: x.shape)
        case "squareplus":  // (x + √(x² + 4)) / 2
            let root = e("Sqrt", [e("Add", [e("Mul", [x.name, x.name]), k(4)])])
            return KValue(name: e("Mul", [e("Add", [x.name, root]), k(0.5)], last: true), shape: x.shape)
        case "sparse_plus":  // 0 below −1, (x + 1)² / 4 between, x above 1: (clip(x, −1, 1) + 1)² / 4, then x where x > 1
            let clipped = clip(&c, x, -1, 1, out: out + "/clipped").name
            let q = e("Mul", [e("Mul", [e("Add", [clipped, k(1)]), e("Add", [clipped, k(1)])]), k(0.25)])
            let above = e("Greater", [x.name, k(1)])
            return KValue(name: e("Where", [above, x.name, q], last: true), shape: x.shape)
        default:
            throw c.unsupported(call, "activation '\(name)'")
        }
    }

    static func clip(_ c: inout KerasContext, _ x: KValue, _ lo: Float?, _ hi: Float?, out: String) -> KValue {
        let l = lo.map { c.constant(out + "/min", .scalar($0)) } ?? ""
        let h = hi.map { c.constant(out + "/max", .scalar($0)) } ?? ""
        return KValue(name: c.emit("Clip", [x.name, l, h], out: out), shape: x.shape)
    }

    static let activationLayers: [String: Translator] = [
        "Activation": { c, call in [try activation(&c, call, call.config["activation"], try call.input(c.file))] },
        "ReLU": { c, call in
            let x = try call.input(c.file)
            let maxValue = call.config["max_value"]?.number.map(Float.init)
            let slope = Float(call.config["negative_slope"]?.number ?? 0)
            let threshold = Float(call.config["threshold"]?.number ?? 0)
            guard threshold == 0 else { throw c.unsupported(call, "ReLU with a threshold (\(threshold))") }
            if slope == 0 { return [maxValue == nil ? try activation(&c, call, named: "relu", x) : clip(&c, x, 0, maxValue, out: call.outputName)] }
            let leaky = KValue(name: c.emit("LeakyRelu", [x.name], ["alpha": .float(slope)], out: call.outputName + (maxValue == nil ? "" : "/leaky")),
                               shape: x.shape)
            return [maxValue == nil ? leaky : clip(&c, leaky, nil, maxValue, out: call.outputName)]
        },
        "LeakyReLU": { c, call in
            let x = try call.input(c.file)
            let alpha = call.config["negative_slope"]?.number ?? call.config["alpha"]?.number ?? 0.3
            return [KValue(name: c.emit("LeakyRelu", [x.name], ["alpha": .float(Float(alpha))], out: call.outputName), shape: x.shape)]
        },
        "ELU": { c, call in
            let x = try call.input(c.file)
            return [KValue(name: c.emit("Elu", [x.name], ["alpha": .float(Float(call.config["alpha"]?.number ?? 1))], out: call.outputName), shape: x.shape)]
        },
        "ThresholdedReLU": { c, call in
            let x = try call.input(c.file)
            let theta = Float(call.config["theta"]?.number ?? 1)
            return [KValue(name: c.emit("ThresholdedRelu", [x.name], ["alpha": .float(theta)], out: call.outputName), shape: x.shape)]
        },
        "Softmax": { c, call in
            let x = try call.input(c.file)
            guard let axes = call.config["axis"]?.ints() ?? Optional([-1]), axes.count == 1, let a = axes.first, a >= -x.rank, a < x.rank else {
                throw c.unsupported(call, "Softmax over several axes")
            }
            return [KValue(name: c.emit("Softmax", [x.name], ["axis": .int(a < 0 ? a + x.rank : a)], out: call.outputName), shape: x.shape)]
        },
        "PReLU": { c, call in
            let x = try call.input(c.file)
            let w = try c.layerWeights(call, counts: [1])
            let alpha = c.weightConstant(call, "alpha") { w[0] }
            return [KValue(name: c.emit("PRelu", [x.name, alpha], out: call.outputName), shape: x.shape)]
        },
    ]

    // MARK: - Core

    static let core: [String: Translator] = [
        "Dense": dense,
        "InputLayer": identity,  // bound to a graph input (or a nested model's caller) before any call runs
        "Dropout": identity, "SpatialDropout1D": identity, "SpatialDropout2D": identity, "SpatialDropout3D": identity,
        "GaussianNoise": identity, "GaussianDropout": identity, "AlphaDropout": identity, "ActivityRegularization": identity,
        "Embedding": { c, call in
            let x = try call.input(c.file)
            let w = try c.layerWeights(call, counts: [1])
            guard w[0].rank == 2 else { throw c.malformed(call, "embeddings of shape \(w[0].shape)") }
            let table = c.weightConstant(call, "embeddings") { w[0] }
            let ids = c.emit("Cast", [x.name], ["to": .int(Int(DType.int64.onnxDataType))], out: call.outputName + "/ids")
            return [KValue(name: c.emit("Gather", [table, ids], ["axis": .int(0)], out: call.outputName), shape: x.shape + [w[0].shape[1]])]
        },
        "Rescaling": { c, call in
            let x = try call.input(c.file)
            guard let scale = call.config["scale"]?.numbers, let offset = call.config["offset"]?.numbers ?? Optional([0]) else {
                throw c.malformed(call, "scale / offset are not numbers")
            }
            let s = c.constant(call.outputName + "/scale", Tensor(scale.map(Float.init), shape: scale.count == 1 ? [] : [scale.count]))
            let o = c.constant(call.outputName + "/offset", Tensor(offset.map(Float.init), shape: offset.count == 1 ? [] : [offset.count]))
            let m = c.emit("Mul", [x.name, s], out: call.outputName + "/scaled")
            return [KValue(name: c.emit("Add", [m, o], out: call.outputName), shape: x.shape)]
        },
    ]

    static func identity(_ c: inout KerasContext, _ call: KerasCall) throws -> [KValue] { [try call.input(c.file)] }

    /// Dense: x · kernel [in, units] + bias, then the activation; any input rank (the last axis is contracted).
    static func dense(_ c: inout KerasContext, _ call: KerasCall) throws -> [KValue] {
        let x = try call.input(c.file)
        let useBias = call.config["use_bias"]?.bool ?? true
        let w = try c.layerWeights(call, counts: [useBias ? 2 : 1])
        guard w[0].rank == 2, x.rank >= 2, x.shape[x.rank - 1] == nil || x.shape[x.rank - 1] == w[0].shape[0] else {
            throw c.malformed(call, "kernel \(w[0].shape) for an input of shape \(describe(x.shape))")
        }
        let units = w[0].shape[1]
        let kernel = c.weightConstant(call, "kernel") { w[0] }
        let linear = call.config["activation"]?.string.map { $0 == "linear" } ?? true
        var y = c.emit("MatMul", [x.name, kernel], out: call.outputName + (useBias || !linear ? "/matmul" : ""))
        if useBias {
            guard w[1].shape == [units] else { throw c.malformed(call, "bias \(w[1].shape) for \(units) units") }
            let bias = c.weightConstant(call, "bias") { w[1] }
            y = c.emit("Add", [y, bias], out: call.outputName + (linear ? "" : "/bias"))
        }
        return [try activation(&c, call, call.config["activation"], KValue(name: y, shape: Array(x.shape.dropLast()) + [units]))]
    }

    static func describe(_ shape: [Int?]) -> String { "[" + shape.map { $0.map(String.init) ?? "?" }.joined(separator: ", ") + "]" }

    /// An axis from the configuration (negative counts from the end) in 0..<rank.
    static func axis(_ c: KerasContext, _ call: KerasCall, _ value: KerasJSON?, default d: Int, rank: Int) throws -> Int {
        guard let a = value.map({ $0.int ?? $0.ints()?.first }) ?? d else { throw c.malformed(call, "axis is not an integer") }
        guard a >= -rank, a < rank else { throw c.malformed(call, "axis \(a) for rank \(rank)") }
        return a < 0 ? a + rank : a
    }
}
