// Convolution, pooling, normalization and linear layers → MIL ops.
import ShrinkwrapIR

extension MILOpWriters {
    /// `pad_type` and `pad` ([begin0, end0, begin1, end1, …]) from ONNX's auto_pad / pads.
    static func padding(_ w: inout MILWriter, _ n: Node, spatial: Int) throws -> [(String, MILArgument)] {
        let padType: String
        var pads = [Int](repeating: 0, count: 2 * spatial)
        switch n.string("auto_pad", "NOTSET") {
        case "SAME_UPPER": padType = "same"
        case "SAME_LOWER": padType = "same_lower"
        case "VALID": padType = "valid"
        default:
            padType = "custom"
            let p = n.ints("pads") ?? pads
            guard p.count == 2 * spatial, p.allSatisfy({ $0 >= 0 }) else { throw MILWriterError("pads \(p) for \(spatial)-D") }
            pads = (0..<spatial).flatMap { [p[$0], p[$0 + spatial]] }
        }
        return [("pad_type", .value(w.string(n, "pad_type", padType))), ("pad", .value(w.ints(n, "pad", pads)))]
    }

    static func spatialInts(_ n: Node, _ key: String, spatial: Int, default d: Int) throws -> [Int] {
        let v = n.ints(key) ?? Array(repeating: d, count: spatial)
        guard v.count == spatial, v.allSatisfy({ $0 >= 1 }) else { throw MILWriterError("\(key) \(v) for \(spatial)-D") }
        return v
    }

    static let conv: Writer = { w, n in
        let deconv = n.opType == "ConvTranspose"
        let x = try input(n, 0), wt = try input(n, 1)
        let ws = try w.shape(wt)
        let spatial = ws.count - 2
        guard (1...3).contains(spatial) else { throw MILWriterError("\(spatial)-D convolution") }
        let groups = n.int("group", 1)
        guard groups >= 1 else { throw MILWriterError("group \(groups)") }
        var args: [(String, MILArgument)] = [("x", .value(try w.value(x))), ("weight", .value(try w.value(wt)))]
        if let b = n.input(2), !b.isEmpty {
            guard w.graph.isConstant(b) else { throw MILWriterError("the bias must be a constant") }
            args.append(("bias", .value(try w.value(b))))
        }
        args.append(("strides", .value(w.ints(n, "strides", try spatialInts(n, "strides", spatial: spatial, default: 1)))))
        args.append(("dilations", .value(w.ints(n, "dilations", try spatialInts(n, "dilations", spatial: spatial, default: 1)))))
        args.append(("groups", .value(w.int(n, "groups", groups))))
        if deconv, (n.ints("output_padding") ?? []).contains(where: { $0 != 0 }), n.ints("output_shape") == nil {
            try convTransposeCropped(&w, n, args, spatial: spatial)
            return
        }
        args += try padding(&w, n, spatial: spatial)
        if deconv {
            let outputPadding = n.ints("output_padding") ?? []
            if outputPadding.contains(where: { $0 != 0 }) || n.ints("output_shape") != nil {
                args.append(("output_shape", .value(w.ints(n, "output_shape", try w.shape(n.outputs[0])))))
            }
        }
        try w.emit(n, deconv ? "conv_transpose" : "conv", args)
    }

    static let pool: Writer = { w, n in
        let x = try input(n, 0)
        guard let kernel = n.ints("kernel_shape"), (1...3).contains(kernel.count) else { throw MILWriterError("kernel_shape") }
        let spatial = kernel.count
        if try spatialInts(n, "dilations", spatial: spatial, default: 1).contains(where: { $0 != 1 }) {
            throw MILWriterError("dilated pooling")
        }
        var args: [(String, MILArgument)] = [("x", .value(try w.value(x))), ("kernel_sizes", .value(w.ints(n, "kernel_sizes", kernel))),
                                             ("strides", .value(w.ints(n, "strides", try spatialInts(n, "strides", spatial: spatial, default: 1))))]
        args += try padding(&w, n, spatial: spatial)
        let type: String
        switch n.opType {
        case "MaxPool":
            guard n.outputs.count < 2 || n.outputs[1].isEmpty else { throw MILWriterError("the Indices output") }
            type = "max_pool"
            args.append(("ceil_mode", .value(w.bool(n, "ceil_mode", n.int("ceil_mode", 0) != 0))))
        case "AveragePool":
            type = "avg_pool"
            args.append(("exclude_padding_from_average", .value(w.bool(n, "exclude_padding_from_average", n.int("count_include_pad", 0) == 0))))
            args.append(("ceil_mode", .value(w.bool(n, "ceil_mode", n.int("ceil_mode", 0) != 0))))
        default:
            guard n.int("p", 2) == 2 else { throw MILWriterError("LpPool with p = \(n.int("p", 2)) (MIL has p = 2)") }
            type = "l2_pool"
        }
        try w.emit(n, type, args)
    }

    static let globalPool: Writer = { w, n in
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        guard rank >= 3 else { throw MILWriterError("rank \(rank)") }
        try w.emit(n, n.opType == "GlobalMaxPool" ? "reduce_max" : "reduce_mean",
                   [("x", .value(try w.value(x))), ("axes", .value(w.ints(n, "axes", Array(2..<rank)))),
                    ("keep_dims", .value(w.bool(n, "keep_dims", true)))])
    }

    static let batchNorm: Writer = { w, n in
        let x = try input(n, 0)
        let params = try (1...4).map { try input(n, $0) }
        guard params.allSatisfy(w.graph.isConstant) else { throw MILWriterError("scale, bias, mean and variance must be constants") }
        guard n.outputs.dropFirst().allSatisfy(\.isEmpty) else { throw MILWriterError("training outputs") }
        let shape = try w.shape(x)
        guard (2...5).contains(shape.count) else { throw MILWriterError("rank \(shape.count)") }
        var xv = try w.value(x)
        if shape.count == 2 { xv = try w.reshaped(xv, to: shape + [1], base: n.outputs[0] + "_rank3") }
        let args: [(String, MILArgument)] = [
            ("x", .value(xv)), ("mean", .value(try w.value(params[2]))), ("variance", .value(try w.value(params[3]))),
            ("gamma", .value(try w.value(params[0]))), ("beta", .value(try w.value(params[1]))),
            ("epsilon", .value(w.float(n, "epsilon", n.float("epsilon", 1e-5)))),
        ]
        if shape.count == 2 {
            var t = try w.computeType(n.outputs[0])
            t.shape = shape + [1]
            let y = w.builder.op1("batch_norm", args, output: w.builder.fresh(n.outputs[0] + "_rank3"), t)
            try w.emit(n, "reshape", [("x", .value(y)), ("shape", .value(w.ints(n, "shape", shape)))])
        } else {
            try w.emit(n, "batch_norm", args)
        }
    }

    static let instanceNorm: Writer = { w, n in
        let x = try input(n, 0), scale = try input(n, 1), bias = try input(n, 2)
        guard w.graph.isConstant(scale), w.graph.isConstant(bias) else { throw MILWriterError("scale and bias must be constants") }
        let rank = try w.shape(x).count
        guard rank == 3 || rank == 4 else { throw MILWriterError("rank \(rank)") }
        try w.emit(n, "instance_norm", [("x", .value(try w.value(x))), ("gamma", .value(try w.value(scale))), ("beta", .value(try w.value(bias))),
                                        ("epsilon", .value(w.float(n, "epsilon", n.float("epsilon", 1e-5))))])
    }

    static let layerNorm: Writer = { w, n in
        let x = try input(n, 0)
        let shape = try w.shape(x)
        let axis = try normalize(n.int("axis", -1), rank: shape.count)
        guard n.outputs.dropFirst().allSatisfy(\.isEmpty) else { throw MILWriterError("mean / inverse std outputs") }
        let normalized = Array(shape[axis...])
        var args: [(String, MILArgument)] = [("x", .value(try w.value(x))), ("axes", .value(w.ints(n, "axes", Array(axis..<shape.count))))]
        for (k, key) in [(1, "gamma"), (2, "beta")] {
            guard let p = n.input(k), !p.isEmpty else { continue }
            guard w.graph.isConstant(p) else { throw MILWriterError("\(key) must be a constant") }
            args.append((key, .value(try w.weight(p, reshapedTo: normalized))))
        }
        args.append(("epsilon", .value(w.float(n, "epsilon", n.float("epsilon", 1e-5)))))
        try w.emit(n, "layer_norm", args)
    }

    static let lrn: Writer = { w, n in
        let size = n.int("size", 1)
        guard size >= 1 else { throw MILWriterError("size \(size)") }
        // Both divide by (k + alpha / size · Σ x²)^beta over `size` channels.
        try w.emit(n, "local_response_norm", [("x", .value(try w.value(try input(n, 0)))), ("size", .value(w.int(n, "size", size))),
                                              ("alpha", .value(w.float(n, "alpha", n.float("alpha", 1e-4)))),
                                              ("beta", .value(w.float(n, "beta", n.float("beta", 0.75)))),
                                              ("k", .value(w.float(n, "k", n.float("bias", 1))))])
    }

    static let gemm: Writer = { w, n in
        let a = try input(n, 0), b = try input(n, 1)
        let transA = n.int("transA", 0) != 0, transB = n.int("transB", 0) != 0
        let alpha = n.float("alpha", 1), beta = n.float("beta", 1)
        let bs = try w.shape(b)
        let c = n.input(2).flatMap { $0.isEmpty ? nil : $0 }
        let outputs = bs.count == 2 ? (transB ? bs[0] : bs[1]) : -1
        let biasOK = c.map { w.graph.isConstant($0) && (try? w.shape($0).reduce(1, *)) == outputs && beta == 1 } ?? true
        if w.graph.isConstant(b), !transA, alpha == 1, biasOK, bs.count == 2 {
            var args: [(String, MILArgument)] = [("x", .value(try w.value(a))), ("weight", .value(try w.weight(b, transposed: !transB)))]
            if let c { args.append(("bias", .value(try w.weight(c, reshapedTo: [outputs])))) }
            try w.emit(n, "linear", args)
            return
        }
        var t = try w.computeType(n.outputs[0])
        var y = w.builder.op1("matmul", [("x", .value(try w.value(a))), ("y", .value(try w.value(b))),
                                         ("transpose_x", .value(w.bool(n, "transpose_x", transA))),
                                         ("transpose_y", .value(w.bool(n, "transpose_y", transB)))],
                              output: w.builder.fresh(n.outputs[0] + "_matmul"), t)
        if alpha != 1 {
            y = w.builder.op1("mul", [("x", .value(y)), ("y", .value(w.float(n, "alpha", alpha)))], output: w.builder.fresh(n.outputs[0] + "_alpha"), t)
        }
        if let c {
            var cv = try w.value(c)
            if beta != 1 {
                t.shape = try w.shape(c)
                cv = w.builder.op1("mul", [("x", .value(cv)), ("y", .value(w.float(n, "beta", beta)))], output: w.builder.fresh(n.outputs[0] + "_beta"), t)
            }
            try w.emit(n, "add", [("x", .value(y)), ("y", .value(cv))])
        } else {
            try w.emit(n, "identity", [("x", .value(y))])
        }
    }

    static let matmul: Writer = { w, n in
        let a = try input(n, 0), b = try input(n, 1)
        let bs = try w.shape(b), asz = try w.shape(a)
        if w.graph.isConstant(b), bs.count == 2, asz.count >= 1 {
            try w.emit(n, "linear", [("x", .value(try w.value(a))), ("weight", .value(try w.weight(b, transposed: true)))])
            return
        }
        guard asz.count >= 1, bs.count >= 1 else { throw MILWriterError("scalar operands") }
        try w.emit(n, "matmul", [("x", .value(try w.value(a))), ("y", .value(try w.value(b))),
                                 ("transpose_x", .value(w.bool(n, "transpose_x", false))), ("transpose_y", .value(w.bool(n, "transpose_y", false)))])
    }
}

extension MILWriter {
    /// A constant weight written with its encoding reshaped (same elements,
    /// encodings kept; refused when the scales cannot follow).
    mutating func weight(_ irName: String, reshapedTo shape: [Int]) throws -> String {
        guard let c = graph.constant(named: irName) else { return try value(irName) }
        if c.encoding.shape == shape { return try value(irName) }
        return try derivedWeight(irName, key: "reshape\(shape)") {
            do { return try $0.reshaped(shape) } catch { throw MILWriterError("weight '\(irName)': \(error)") }
        }
    }

    /// A constant 2-D weight, transposed when asked (encodings kept: codes and scales move).
    mutating func weight(_ irName: String, transposed: Bool) throws -> String {
        guard transposed else { return try value(irName) }
        return try derivedWeight(irName, key: "transposed") {
            do { return try $0.transposed([1, 0]) } catch { throw MILWriterError("weight '\(irName)': \(error)") }
        }
    }

    /// A weight derived from a constant, written once per derivation.
    mutating func derivedWeight(_ irName: String, key: String, _ f: (WeightEncoding) throws -> WeightEncoding) throws -> String {
        let cacheKey = "\(irName)\u{0}\(key)"
        if let v = names[cacheKey] { return v }
        guard let c = graph.constant(named: irName) else { throw MILWriterError("'\(irName)' is not a constant") }
        let v = try MILWeights.write(Constant(name: irName, encoding: try f(c.encoding)), in: &self)
        names[cacheKey] = v
        return v
    }

    /// `reshape(v, shape)` into a fresh value.
    mutating func reshaped(_ v: String, to shape: [Int], base: String) throws -> String {
        var t = try type(of: v)
        t.shape = shape
        let s = builder.int32s(base + "_shape", shape)
        return builder.op1("reshape", [("x", .value(v)), ("shape", .value(s))], output: builder.fresh(base), t)
    }
}
