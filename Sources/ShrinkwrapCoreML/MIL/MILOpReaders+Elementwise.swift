import ShrinkwrapIR

/// Elementwise MIL ops: binary arithmetic and comparisons (numpy
/// broadcasting, as the IR's), unary math, activations, reductions.
extension MILOpReaders {
    static let elementwise: [String: MILOpReader] = {
        var t: [String: MILOpReader] = [:]
        let binary = ["add": "Add", "sub": "Sub", "mul": "Mul", "real_div": "Div", "pow": "Pow", "maximum": "Max", "minimum": "Min",
                      "equal": "Equal", "less": "Less", "less_equal": "LessOrEqual", "greater": "Greater",
                      "greater_equal": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"]
        for (mil, ir) in binary { t[mil] = { r in r.node(ir, [try r.x("x"), try r.x("y")], [r.out()]) } }
        let unary = ["exp": "Exp", "sqrt": "Sqrt", "abs": "Abs", "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign",
                     "erf": "Erf", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
                     "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "logical_not": "Not"]
        for (mil, ir) in unary { t[mil] = { r in r.node(ir, [try r.x()], [r.out()]) } }
        t["not_equal"] = { r in
            let eq = r.temp("equal")
            r.node("Equal", [try r.x("x"), try r.x("y")], [eq])
            r.node("Not", [eq], [r.out()])
        }
        // mod: numpy's (the divisor's sign), ONNX Mod with fmod = 0.
        t["mod"] = { r in r.node("Mod", [try r.x("x"), try r.x("y")], [r.out()], ["fmod": .int(0)]) }
        t["floor_div"] = { r in try r.floorDiv() }
        t["square"] = { r in let x = try r.x(); r.node("Mul", [x, x], [r.out()]) }
        // log(x + ε), 1 / sqrt(x + ε), 1 / (x + ε): ε defaults as coremltools documents them.
        // 1e-45 in float32 is the smallest subnormal.
        t["log"] = { r in r.node("Log", [try r.plusEpsilon(Float.leastNonzeroMagnitude)], [r.out()]) }
        t["rsqrt"] = { r in
            let s = r.temp("sqrt")
            r.node("Sqrt", [try r.plusEpsilon(1e-12)], [s])
            r.node("Reciprocal", [s], [r.out()])
        }
        t["inverse"] = { r in r.node("Reciprocal", [try r.plusEpsilon(1e-4)], [r.out()]) }
        t["select"] = { r in r.node("Where", [try r.x("cond"), try r.x("a"), try r.x("b")], [r.out()]) }
        return t
    }()

    static let activations: [String: MILOpReader] = [
        "relu": { r in r.node("Relu", [try r.x()], [r.out()]) },
        "sigmoid": { r in r.node("Sigmoid", [try r.x()], [r.out()]) },
        "tanh": { r in r.node("Tanh", [try r.x()], [r.out()]) },
        "softsign": { r in r.node("Softsign", [try r.x()], [r.out()]) },
        "softplus": { r in r.node("Softplus", [try r.x()], [r.out()]) },
        "silu": { r in r.node("Swish", [try r.x()], [r.out()], ["alpha": .float(1)]) },
        "relu6": { r in r.node("Clip", [try r.x(), r.scalar(0, "zero"), r.scalar(6, "six")], [r.out()]) },
        "clip": { r in
            r.node("Clip", [try r.x(), r.scalar(try r.float("alpha", 0), "alpha"), r.scalar(try r.float("beta", 1), "beta")], [r.out()])
        },
        "leaky_relu": { r in r.node("LeakyRelu", [try r.x()], [r.out()], ["alpha": .float(try r.float("alpha", 0.01))]) },
        "elu": { r in r.node("Elu", [try r.x()], [r.out()], ["alpha": .float(try r.float("alpha", 1))]) },
        "sigmoid_hard": { r in
            r.node("HardSigmoid", [try r.x()], [r.out()], ["alpha": .float(try r.float("alpha", 0.2)), "beta": .float(try r.float("beta", 0.5))])
        },
        "prelu": { r in try r.prelu() },
        "gelu": { r in try r.gelu() },
        "softmax": { r in
            let x = try r.x()
            r.node("Softmax", [x], [r.out()], ["axis": .int(try r.axis(try r.int("axis", -1), rank: try r.needRank(x)))])
        },
        "linear_activation": { r in
            let m = r.temp("scaled")
            r.node("Mul", [try r.x(), r.scalar(try r.float("alpha", 1), "alpha")], [m])
            r.node("Add", [m, r.scalar(try r.float("beta", 0), "beta")], [r.out()])
        },
    ]

    static let reductions: [String: MILOpReader] = {
        var t: [String: MILOpReader] = [:]
        let ops = ["reduce_sum": "ReduceSum", "reduce_mean": "ReduceMean", "reduce_max": "ReduceMax", "reduce_min": "ReduceMin",
                   "reduce_prod": "ReduceProd", "reduce_l1_norm": "ReduceL1", "reduce_l2_norm": "ReduceL2",
                   "reduce_log_sum": "ReduceLogSum", "reduce_log_sum_exp": "ReduceLogSumExp", "reduce_sum_square": "ReduceSumSquare"]
        for (mil, ir) in ops { t[mil] = { r in try r.reduce(ir) } }
        t["reduce_argmax"] = { r in try r.argReduce("ArgMax") }
        t["reduce_argmin"] = { r in try r.argReduce("ArgMin") }
        return t
    }()
}

extension MILReader {
    /// x + epsilon (input "epsilon", `d` when absent); x itself when epsilon is 0.
    mutating func plusEpsilon(_ d: Float) throws -> String {
        let x = try self.x()
        let eps = try float("epsilon", d)
        if eps == 0 { return x }
        let y = temp("plus_eps")
        node("Add", [x, scalar(eps, "epsilon")], [y])
        return y
    }

    /// floor(x / y); integers divide as floats (exact below 2^24).
    mutating func floorDiv() throws {
        let x = try self.x("x"), y = try self.x("y")
        let isInt = types[out()]?.dtype.map { !$0.isFloatingPoint } ?? false
        let q = temp("quotient")
        if isInt {
            let fx = temp("x_float"), fy = temp("y_float"), fq = temp("floor")
            node("Cast", [x], [fx], ["to": .int(DType.float32.onnxDataType)])
            node("Cast", [y], [fy], ["to": .int(DType.float32.onnxDataType)])
            node("Div", [fx, fy], [q])
            node("Floor", [q], [fq])
            node("Cast", [fq], [out()], ["to": .int((types[out()]?.dtype ?? .int32).onnxDataType)])
        } else {
            node("Div", [x, y], [q])
            node("Floor", [q], [out()])
        }
    }

    /// prelu: one slope per channel (axis 1).
    mutating func prelu() throws {
        let x = try self.x()
        let r = try needRank(x)
        guard let alpha = try param("alpha")?.floatValues else { throw bad("prelu needs a constant alpha") }
        guard r >= 2 else { throw bad("prelu input of rank \(r)") }
        let slope = constant(.dense(Tensor(alpha, shape: [alpha.count] + Array(repeating: 1, count: r - 2))), "\(out())_alpha")
        node("PRelu", [x, slope], [out()])
    }

    /// gelu: EXACT (erf), TANH_APPROXIMATION, SIGMOID_APPROXIMATION (x · σ(1.702 x)).
    mutating func gelu() throws {
        let x = try self.x()
        switch try string("mode", "EXACT") {
        case "EXACT": node("Gelu", [x], [out()])
        case "TANH_APPROXIMATION": node("Gelu", [x], [out()], ["approximate": .string("tanh")])
        case "SIGMOID_APPROXIMATION": node("Swish", [x], [out()], ["alpha": .float(1.702)])
        case let m: throw refuse("gelu mode '\(m)'")
        }
    }

    /// reduce_*: axes (all when absent), keep_dims.
    mutating func reduce(_ ir: String) throws {
        let x = try self.x()
        let keep: Attribute = .int(try bool("keep_dims", false) ? 1 : 0)
        if let axes = try intList("axes") {
            node(ir, [x, ints(axes, "\(out())_axes")], [out()], ["keepdims": keep])
        } else {
            node(ir, [x], [out()], ["keepdims": keep])
        }
    }

    /// reduce_argmax / reduce_argmin: one axis; MIL gives int32.
    mutating func argReduce(_ ir: String) throws {
        let x = try self.x()
        let a = try axis(try int("axis", -1), rank: try needRank(x))
        int32Output(ir, [x], ["axis": .int(a), "keepdims": .int(try bool("keep_dims", false) ? 1 : 0)])
    }
}
