import ShrinkwrapIR
import TensorFlowSchema

/// TensorFlow op translators: one entry per TF op type. Values stay NHWC as
/// TensorFlow computes them; layout-sensitive ops (TFOps+Convolutions) wrap
/// themselves in Transposes to NCHW and back.
enum TFOps {
    typealias Translator = (inout TFContext, TFOp) throws -> Void

    /// Every op the importer translates.
    static let table: [String: Translator] = {
        var t: [String: Translator] = [:]
        for (tf, onnx) in unary { t[tf] = { c, op in try simple(&c, op, onnx, arity: 1) } }
        for (tf, onnx) in binary { t[tf] = { c, op in try simple(&c, op, onnx, arity: 2) } }
        for (tf, onnx) in reductions { t[tf] = { c, op in try reduce(&c, op, onnx) } }
        for (k, v) in structural { t[k] = v }
        for (k, v) in elementwise { t[k] = v }
        for (k, v) in convolutions { t[k] = v }
        for (k, v) in shapes { t[k] = v }
        for (k, v) in indexing { t[k] = v }
        for (k, v) in lists { t[k] = v }
        for (k, v) in controlFlowOps { t[k] = v }
        return t
    }()

    /// Control flow not translated (TF1's frames, Case): refused with its own reason.
    static let controlFlow: Set<String> = ["Case", "StatelessCase",
                                           "Enter", "Exit", "NextIteration", "LoopCond", "For", "RefEnter"]

    static let unary: [String: String] = [
        "Relu": "Relu", "Elu": "Elu", "Selu": "Selu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Softplus": "Softplus",
        "Softsign": "Softsign", "Exp": "Exp", "Log": "Log", "Neg": "Neg", "Sqrt": "Sqrt", "Abs": "Abs", "Floor": "Floor",
        "Ceil": "Ceil", "Round": "Round", "Sin": "Sin", "Cos": "Cos", "Erf": "Erf", "Reciprocal": "Reciprocal", "Inv": "Reciprocal",
        "Sign": "Sign", "LogicalNot": "Not", "IsNan": "IsNaN",
    ]

    static let binary: [String: String] = [
        "Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Div": "Div", "Maximum": "Max", "Minimum": "Min",
        "Pow": "Pow", "Equal": "Equal", "Less": "Less", "Greater": "Greater", "LessEqual": "LessOrEqual",
        "GreaterEqual": "GreaterOrEqual", "LogicalAnd": "And", "LogicalOr": "Or",
    ]

    static let reductions: [String: String] = [
        "Mean": "ReduceMean", "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin", "Prod": "ReduceProd",
    ]

    /// An op that maps to one IR op on its first `arity` inputs.
    static func simple(_ c: inout TFContext, _ op: TFOp, _ onnx: String, arity: Int, _ attrs: [String: Attribute] = [:]) throws {
        try c.arity(op, arity)
        let inputs = try (0..<arity).map { try c.input(op, $0) }
        c.emit(onnx, inputs, [c.output(op)], attrs)
    }

    /// Mean / Sum / Max / Min / Prod: axes (input 1) as an int64 input; keep_dims.
    static func reduce(_ c: inout TFContext, _ op: TFOp, _ onnx: String) throws {
        try c.arity(op, 2)
        let x = try c.input(op, 0)
        if let axes = c.known(op, 1), axes.storage.count == 0 {  // no axes: TensorFlow reduces nothing
            c.alias(op, 0, to: x)
            return
        }
        c.emit(onnx, [x, try c.axesInput(op, 1)], [c.output(op)], ["keepdims": .int(c.bool(op, "keep_dims") ? 1 : 0)])
    }

    // MARK: - Structural

    static let structural: [String: Translator] = [
        "Const": { c, op in
            guard case .tensor(let p)? = c.attr(op, "value") else { throw c.malformed(op, "no 'value' tensor") }
            let name = c.constant(try TFTensorProto.tensor(p, at: c.loc(op)), name: op.name)
            c.alias(op, 0, to: name)
        },
        "Identity": forward, "StopGradient": forward, "Snapshot": forward, "PreventGradient": forward,
        "CheckNumerics": forward, "EnsureShape": forward, "PlaceholderWithDefault": forward, "ReadVariableOp": forward,
        "IdentityN": { c, op in
            for k in op.inputs.indices { c.alias(op, k, to: try c.anyInput(op, k)) }
        },
        "NoOp": { _, _ in },
        "VarHandleOp": { c, op in
            let name = c.constant(try c.variable(op), name: op.name)
            c.alias(op, 0, to: name)
        },
        "Placeholder": { c, op in throw c.unsupported(op, "a Placeholder that is not among the graph's inputs") },
    ]

    /// Identity-like ops: output 0 is input 0 (a tensor or a TensorList).
    static let forward: Translator = { c, op in
        try c.arity(op, 1)
        c.alias(op, 0, to: try c.anyInput(op, 0))
    }

    // MARK: - Elementwise with a twist

    static let elementwise: [String: Translator] = [
        "Relu6": { c, op in
            try c.arity(op, 1)
            let lo = c.constant(.scalar(0), name: op.name + "_min"), hi = c.constant(.scalar(6), name: op.name + "_max")
            c.emit("Clip", [try c.input(op, 0), lo, hi], [c.output(op)])
        },
        "LeakyRelu": { c, op in try simple(&c, op, "LeakyRelu", arity: 1, ["alpha": .float(c.float(op, "alpha", 0.2))]) },
        "Softmax": { c, op in try simple(&c, op, "Softmax", arity: 1, ["axis": .int(-1)]) },
        "LogSoftmax": { c, op in try simple(&c, op, "LogSoftmax", arity: 1, ["axis": .int(-1)]) },
        "Rsqrt": { c, op in
            try c.arity(op, 1)
            let s = c.apply("Sqrt", [try c.input(op, 0)], base: op.name + "_sqrt")
            c.emit("Reciprocal", [s], [c.output(op)])
        },
        "Square": { c, op in
            try c.arity(op, 1)
            let x = try c.input(op, 0)
            c.emit("Mul", [x, x], [c.output(op)])
        },
        "SquaredDifference": { c, op in
            try c.arity(op, 2)
            let d = c.apply("Sub", [try c.input(op, 0), try c.input(op, 1)], base: op.name + "_diff")
            c.emit("Mul", [d, d], [c.output(op)])
        },
        "NotEqual": { c, op in
            try c.arity(op, 2)
            let e = c.apply("Equal", [try c.input(op, 0), try c.input(op, 1)], base: op.name + "_eq")
            c.emit("Not", [e], [c.output(op)])
        },
        // x / y, 0 where y is 0 (what basic-pitch's log-spectrogram normalization divides with).
        "DivNoNan": { c, op in
            try c.arity(op, 2)
            let x = try c.input(op, 0), y = try c.input(op, 1)
            let zero = c.apply("Sub", [y, y], base: op.name + "_zero")
            let isZero = c.apply("Equal", [y, zero], base: op.name + "_is_zero")
            let q = c.apply("Div", [x, y], base: op.name + "_div")
            c.emit("Where", [isZero, zero, q], [c.output(op)])
        },
        "AddN": { c, op in
            let inputs = try op.inputs.indices.map { try c.input(op, $0) }
            guard !inputs.isEmpty else { throw c.malformed(op, "no inputs") }
            c.emit("Sum", inputs, [c.output(op)])
        },
        "Select": { c, op in try simple(&c, op, "Where", arity: 3) },
        "SelectV2": { c, op in try simple(&c, op, "Where", arity: 3) },
        "Cast": { c, op in try simple(&c, op, "Cast", arity: 1, ["to": .int(try c.dtype(op, "DstT").onnxDataType)]) },
        "BiasAdd": { c, op in
            guard c.string(op, "data_format", "NHWC") == "NHWC" else { throw c.unsupported(op, "data_format \(c.string(op, "data_format", ""))") }
            try simple(&c, op, "Add", arity: 2)
        },
        "ArgMax": { c, op in try argExtreme(&c, op, "ArgMax") },
        "ArgMin": { c, op in try argExtreme(&c, op, "ArgMin") },
    ]

    /// ArgMax / ArgMin: the axis (input 1) must be a constant; output_type int64 (default) or int32.
    static func argExtreme(_ c: inout TFContext, _ op: TFOp, _ onnx: String) throws {
        try c.arity(op, 2)
        let axis = try c.ints(op, 1, "dimension")
        guard axis.count == 1 else { throw c.malformed(op, "dimension \(axis) is not one axis") }
        let outType = (try? c.dtype(op, "output_type")) ?? .int64
        let attrs: [String: Attribute] = ["axis": .int(axis[0]), "keepdims": .int(0)]
        if outType == .int64 {
            c.emit(onnx, [try c.input(op, 0)], [c.output(op)], attrs)
        } else {
            let i = c.apply(onnx, [try c.input(op, 0)], attrs, base: op.name + "_i64")
            c.emit("Cast", [i], [c.output(op)], ["to": .int(outType.onnxDataType)])
        }
    }
}
