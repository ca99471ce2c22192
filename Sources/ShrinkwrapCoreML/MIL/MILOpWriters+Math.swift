// Constants of known shape, comparisons on booleans, and activations or
// normalizations MIL has no single op for → MIL ops.
import ShrinkwrapIR

extension MILOpWriters {
    /// A constant of the output's compute type holding `v` (in row-major order).
    static func outputConstant(_ w: inout MILWriter, _ n: Node, _ v: [Double]) throws -> String {
        let t = try w.computeType(n.outputs[0])
        let base = n.outputs[0]
        switch t.dataType {
        case .int32: return w.builder.const(base, .int32(v.map { Int32(clamping: Int64(exactly: $0.rounded(.towardZero)) ?? 0) }, shape: t.shape))
        case .bool: return w.builder.const(base, .bools(v.map { $0 != 0 }, shape: t.shape))
        case .float16: return w.builder.const(base, .float16(v.map { Half.bits(from: Float($0)) }, shape: t.shape))
        case .float32: return w.builder.const(base, .float32(v.map { Float($0) }, shape: t.shape))
        default: throw MILWriterError("a \(t.dataType) output")
        }
    }

    /// Shape / Size of a value whose shape is fixed: constants.
    static let shapeOf: Writer = { w, n in
        let shape = try w.shape(try input(n, 0))
        if n.opType == "Size" {
            w.names[n.outputs[0]] = try outputConstant(&w, n, [Double(shape.reduce(1, *))])
            return
        }
        let r = shape.count
        let start = min(max(n.int("start", 0) < 0 ? n.int("start", 0) + r : n.int("start", 0), 0), r)
        let end = min(max(n.int("end", r) < 0 ? n.int("end", r) + r : n.int("end", r), start), r)
        guard try w.shape(n.outputs[0]) == [end - start] else { throw MILWriterError("output shape \(try w.shape(n.outputs[0]))") }
        w.names[n.outputs[0]] = try outputConstant(&w, n, shape[start..<end].map(Double.init))
    }

    /// ConstantOfShape: `fill` of the (fixed) output shape.
    static let constantOfShape: Writer = { w, n in
        var value = 0.0
        if case .tensor(let t)? = n.attributes["value"] {
            guard t.count == 1, let v = t.doubles.first else { throw MILWriterError("a value of \(t.count) elements") }
            value = v
        }
        let t = try w.computeType(n.outputs[0])
        guard !t.shape.contains(0) else { throw MILWriterError("an empty output") }
        let v: String
        switch t.dataType {
        case .int32: v = w.builder.int32(n.outputs[0] + "_value", Int(clamping: Int64(exactly: value.rounded(.towardZero)) ?? 0))
        case .bool: v = w.builder.bool(n.outputs[0] + "_value", value != 0)
        case .float16, .float32: v = w.float(n, "value", Float(value))
        default: throw MILWriterError("a \(t.dataType) output")
        }
        try w.emit(n, "fill", [("shape", .value(w.ints(n, "shape", t.shape))), ("value", .value(v))])
    }

    /// Range with constant bounds: a constant (run-time bounds give a shape MIL knows at run time only).
    /// Range: constant bounds give a constant. Bounds known at run time only,
    /// with a fixed output length L (a loop body's range: the length seen in
    /// every iteration), give start + delta · [0, 1, …, L−1].
    static let range: Writer = { w, n in
        let count = try w.shape(n.outputs[0]).reduce(1, *)
        let bounds = try (0..<3).map { k -> Double? in
            guard let c = w.graph.constant(named: try input(n, k)) else { return nil }
            return c.encoding.decoded().doubles.first
        }
        if let start = bounds[0], bounds[1] != nil, let delta = bounds[2] {
            w.names[n.outputs[0]] = try outputConstant(&w, n, (0..<count).map { start + Double($0) * delta })
            return
        }
        let t = try w.computeType(n.outputs[0])
        let steps: String
        switch t.dataType {
        case .int32: steps = w.builder.int32s(n.outputs[0] + "_steps", Array(0..<count))
        case .float32, .float16: steps = w.builder.const(n.outputs[0] + "_steps", MILWeights.floats((0..<count).map { Float($0) }, shape: [count], w))
        default: throw MILWriterError("a \(t.dataType) range")
        }
        var v = steps
        if bounds[2] != 1 {
            v = try step(&w, n, "mul", [("x", .value(v)), ("y", .value(try w.value(try input(n, 2))))], "scaled")
        }
        try w.emit(n, "add", [("x", .value(v)), ("y", .value(try w.value(try input(n, 0))))])
    }

    static let eyeLike: Writer = { w, n in
        let shape = try w.shape(n.outputs[0])
        guard shape.count == 2 else { throw MILWriterError("rank \(shape.count)") }
        let k = n.int("k", 0)
        w.names[n.outputs[0]] = try outputConstant(&w, n, (0..<shape[0]).flatMap { i in (0..<shape[1]).map { j in j - i == k ? 1.0 : 0 } })
    }

    /// Equal on booleans (MIL's equal compares fp16 / fp32 / int32): not(xor).
    static let equal: Writer = { w, n in
        let a = try w.value(try input(n, 0)), b = try w.value(try input(n, 1))
        guard try w.type(of: a).dataType == .bool else {
            try binary(&w, n)
            return
        }
        let x = w.builder.op1("logical_xor", [("x", .value(a)), ("y", .value(b))], output: w.builder.fresh(n.outputs[0] + "_xor"),
                              try w.computeType(n.outputs[0]))
        try w.emit(n, "logical_not", [("x", .value(x))])
    }

    /// Mod: MIL's mod is Python's (the divisor's sign), ONNX's integer Mod (fmod = 0).
    static let mod: Writer = { w, n in
        guard n.int("fmod", 0) == 0 else { throw MILWriterError("fmod = 1 (MIL's mod takes the divisor's sign)") }
        guard try w.computeType(n.outputs[0]).dataType == .int32 else { throw MILWriterError("float Mod needs fmod = 1") }
        try w.emit(n, "mod", [("x", .value(try w.value(try input(n, 0)))), ("y", .value(try w.value(try input(n, 1))))])
    }

    /// A fresh value of the output's type computed by `op`.
    static func step(_ w: inout MILWriter, _ n: Node, _ op: String, _ args: [(String, MILArgument)], _ suffix: String,
                     dataType: MILDataType? = nil) throws -> String {
        var t = try w.computeType(n.outputs[0])
        if let dataType { t.dataType = dataType }
        return w.builder.op1(op, args, output: w.builder.fresh(n.outputs[0] + "_" + suffix), t)
    }

    /// Mish: x · tanh(softplus(x)); Swish: x · sigmoid(αx) (silu when α = 1); Celu: α · elu(x / α).
    static let composedActivation: Writer = { w, n in
        let x = try w.value(try input(n, 0))
        switch n.opType {
        case "Mish":
            let sp = try step(&w, n, "softplus", [("x", .value(x))], "softplus")
            let th = try step(&w, n, "tanh", [("x", .value(sp))], "tanh")
            try w.emit(n, "mul", [("x", .value(x)), ("y", .value(th))])
        case "Swish":
            let alpha = n.float("alpha", 1)
            if alpha == 1 {
                try w.emit(n, "silu", [("x", .value(x))])
                return
            }
            let ax = try step(&w, n, "mul", [("x", .value(x)), ("y", .value(w.float(n, "alpha", alpha)))], "scaled")
            let s = try step(&w, n, "sigmoid", [("x", .value(ax))], "sigmoid")
            try w.emit(n, "mul", [("x", .value(x)), ("y", .value(s))])
        default:
            let alpha = n.float("alpha", 1)
            guard alpha != 0 else { throw MILWriterError("alpha 0") }
            let a = w.float(n, "alpha", alpha)
            let scaled = try step(&w, n, "real_div", [("x", .value(x)), ("y", .value(a))], "scaled")
            let e = try step(&w, n, "elu", [("x", .value(scaled)), ("alpha", .value(w.float(n, "elu_alpha", 1)))], "elu")
            try w.emit(n, "mul", [("x", .value(e)), ("y", .value(a))])
        }
    }

    /// Shrink: x + bias below −λ, x − bias above λ, 0 between.
    static let shrink: Writer = { w, n in
        let x = try w.value(try input(n, 0))
        let lambd = n.float("lambd", 0.5), bias = n.float("bias", 0)
        let below = try step(&w, n, "less", [("x", .value(x)), ("y", .value(w.float(n, "minus_lambd", -lambd)))], "below", dataType: .bool)
        let above = try step(&w, n, "greater", [("x", .value(x)), ("y", .value(w.float(n, "lambd", lambd)))], "above", dataType: .bool)
        let b = w.float(n, "bias", bias)
        let up = try step(&w, n, "add", [("x", .value(x)), ("y", .value(b))], "plus_bias")
        let down = try step(&w, n, "sub", [("x", .value(x)), ("y", .value(b))], "minus_bias")
        let upper = try step(&w, n, "select", [("cond", .value(above)), ("a", .value(down)), ("b", .value(w.float(n, "zero", 0)))], "upper")
        try w.emit(n, "select", [("cond", .value(below)), ("a", .value(up)), ("b", .value(upper))])
    }

    /// IsNaN: x ≠ x; IsInf: |x| = ∞ (or x = ±∞ for one sign).
    static let isNaNOrInf: Writer = { w, n in
        let x = try w.value(try input(n, 0))
        if n.opType == "IsNaN" {
            try w.emit(n, "not_equal", [("x", .value(x)), ("y", .value(x))])
            return
        }
        let pos = n.int("detect_positive", 1) != 0, neg = n.int("detect_negative", 1) != 0
        switch (pos, neg) {
        case (true, true):
            let t = try w.type(of: x)
            let a = w.builder.op1("abs", [("x", .value(x))], output: w.builder.fresh(n.outputs[0] + "_abs"), t)
            try w.emit(n, "equal", [("x", .value(a)), ("y", .value(w.float(n, "inf", .infinity)))])
        case (true, false): try w.emit(n, "equal", [("x", .value(x)), ("y", .value(w.float(n, "inf", .infinity)))])
        case (false, true): try w.emit(n, "equal", [("x", .value(x)), ("y", .value(w.float(n, "minus_inf", -.infinity)))])
        case (false, false): w.names[n.outputs[0]] = try outputConstant(&w, n, Array(repeating: 0, count: try w.shape(n.outputs[0]).reduce(1, *)))
        }
    }

    /// Mean: the sum, left to right, divided by the count.
    static let mean: Writer = { w, n in
        let operands = n.inputs.filter { !$0.isEmpty }
        guard !operands.isEmpty else { throw MILWriterError("no operands") }
        var acc = try w.value(operands[0])
        for b in operands.dropFirst() { acc = try step(&w, n, "add", [("x", .value(acc)), ("y", .value(try w.value(b)))], "partial") }
        try w.emit(n, "real_div", [("x", .value(acc)), ("y", .value(w.float(n, "count", Float(operands.count))))])
    }

    /// Hardmax: one_hot of the (first) arg-max along the axis.
    static let hardmax: Writer = { w, n in
        let x = try input(n, 0)
        let shape = try w.shape(x)
        let axis = try normalize(n.int("axis", -1), rank: shape.count)
        var reduced = shape
        reduced.remove(at: axis)
        let idx = w.builder.op1("reduce_argmax", [("x", .value(try w.value(x))), ("axis", .value(w.int(n, "argmax_axis", axis))),
                                                  ("keep_dims", .value(w.bool(n, "keep_dims", false)))],
                                output: w.builder.fresh(n.outputs[0] + "_argmax"), MILTensorType(dataType: .int32, shape: reduced))
        try w.emit(n, "one_hot", [("indices", .value(idx)), ("one_hot_vector_size", .value(w.int(n, "one_hot_vector_size", shape[axis]))),
                                  ("axis", .value(w.int(n, "axis", axis))), ("on_value", .value(w.float(n, "on_value", 1))),
                                  ("off_value", .value(w.float(n, "off_value", 0)))])
    }

    /// LpNormalization: x / ‖x‖ₚ along the axis (p = 1 or 2).
    static let lpNormalization: Writer = { w, n in
        let x = try input(n, 0)
        let axis = try normalize(n.int("axis", -1), rank: try w.shape(x).count)
        let p = n.int("p", 2)
        guard p == 1 || p == 2 else { throw MILWriterError("p = \(p)") }
        let xv = try w.value(x)
        var t = try w.computeType(n.outputs[0])
        t.shape[axis] = 1
        let norm = w.builder.op1(p == 1 ? "reduce_l1_norm" : "reduce_l2_norm", [("x", .value(xv)), ("axes", .value(w.ints(n, "axes", [axis]))),
                                                                               ("keep_dims", .value(w.bool(n, "keep_dims", true)))],
                                 output: w.builder.fresh(n.outputs[0] + "_norm"), t)
        try w.emit(n, "real_div", [("x", .value(xv)), ("y", .value(norm))])
    }

    /// GlobalLpPool: the p-norm over the spatial axes (p = 1 or 2).
    static let globalLpPool: Writer = { w, n in
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        let p = n.int("p", 2)
        guard p == 1 || p == 2, rank >= 3 else { throw MILWriterError("p = \(p), rank \(rank)") }
        try w.emit(n, p == 1 ? "reduce_l1_norm" : "reduce_l2_norm", [("x", .value(try w.value(x))), ("axes", .value(w.ints(n, "axes", Array(2..<rank)))),
                                                                    ("keep_dims", .value(w.bool(n, "keep_dims", true)))])
    }

    /// GroupNormalization: layer_norm over each group ([N, G, C/G · spatial]),
    /// then the per-channel scale and bias (opset 18's per-group ones repeated per channel).
    static let groupNorm: Writer = { w, n in
        let x = try input(n, 0)
        let shape = try w.shape(x)
        let groups = n.int("num_groups", 0)
        guard shape.count >= 2, groups >= 1, shape[1] % groups == 0 else { throw MILWriterError("\(groups) groups of shape \(shape)") }
        let c = shape[1], rest = shape.dropFirst(2).reduce(1, *)
        func perChannel(_ k: Int) throws -> [Float] {
            guard let name = n.input(k), let t = w.graph.constant(named: name), let v = t.encoding.decoded().floats else {
                throw MILWriterError("scale and bias must be constants")
            }
            if v.count == c { return v }
            guard v.count == groups else { throw MILWriterError("\(v.count) scale / bias values for \(c) channels") }
            return (0..<c).map { v[$0 / (c / groups)] }
        }
        let scale = try perChannel(1), bias = try perChannel(2)
        let grouped = try w.reshaped(try w.value(x), to: [shape[0], groups, c / groups * rest], base: n.outputs[0] + "_groups")
        var t = try w.computeType(n.outputs[0])
        t.shape = [shape[0], groups, c / groups * rest]
        let normed = w.builder.op1("layer_norm", [("x", .value(grouped)), ("axes", .value(w.ints(n, "axes", [2]))),
                                                  ("epsilon", .value(w.float(n, "epsilon", n.float("epsilon", 1e-5))))],
                                   output: w.builder.fresh(n.outputs[0] + "_normed"), t)
        let back = try w.reshaped(normed, to: shape, base: n.outputs[0] + "_ungrouped")
        let paramShape = [c] + [Int](repeating: 1, count: shape.count - 2)
        let s = try MILWeights.write(Constant(name: n.outputs[0] + "_scale", encoding: .dense(Tensor(scale, shape: paramShape))), in: &w)
        let b = try MILWeights.write(Constant(name: n.outputs[0] + "_bias", encoding: .dense(Tensor(bias, shape: paramShape))), in: &w)
        let scaled = try step(&w, n, "mul", [("x", .value(back)), ("y", .value(s))], "scaled")
        try w.emit(n, "add", [("x", .value(scaled)), ("y", .value(b))])
    }

    /// MeanVarianceNormalization: (x − mean) / (√var + 1e-9) over the axes
    /// (the epsilon after the root, as ONNX's function body and the interpreter have it).
    static let meanVarianceNormalization: Writer = { w, n in
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        let listed = try (n.ints("axes") ?? [0, 2, 3]).map { try normalize($0, rank: rank) }
        let axes = listed.isEmpty ? Array(0..<rank) : listed
        guard Set(axes).count == axes.count else { throw MILWriterError("axes \(axes) repeat") }
        let xv = try w.value(x)
        var reduced = try w.computeType(n.outputs[0])
        for a in axes { reduced.shape[a] = 1 }
        let axesValue = w.ints(n, "axes", axes), keep = w.bool(n, "keep_dims", true)
        let mean = w.builder.op1("reduce_mean", [("x", .value(xv)), ("axes", .value(axesValue)), ("keep_dims", .value(keep))],
                                 output: w.builder.fresh(n.outputs[0] + "_mean"), reduced)
        let d = try step(&w, n, "sub", [("x", .value(xv)), ("y", .value(mean))], "centered")
        let sq = try step(&w, n, "mul", [("x", .value(d)), ("y", .value(d))], "squared")
        let variance = w.builder.op1("reduce_mean", [("x", .value(sq)), ("axes", .value(axesValue)), ("keep_dims", .value(keep))],
                                     output: w.builder.fresh(n.outputs[0] + "_variance"), reduced)
        let sd = w.builder.op1("sqrt", [("x", .value(variance))], output: w.builder.fresh(n.outputs[0] + "_std"), reduced)
        let den = w.builder.op1("add", [("x", .value(sd)), ("y", .value(w.float(n, "epsilon", 1e-9)))], output: w.builder.fresh(n.outputs[0] + "_den"), reduced)
        try w.emit(n, "real_div", [("x", .value(d)), ("y", .value(den))])
    }
}
