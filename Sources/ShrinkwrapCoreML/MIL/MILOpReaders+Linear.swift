import ShrinkwrapIR

/// Dense layers and normalizations.
extension MILOpReaders {
    static let linear: [String: MILOpReader] = [
        "linear": { r in try r.linearLayer() },
        "matmul": { r in try r.matmul() },
        "scaled_dot_product_attention": { r in try r.attention() },
    ]

    static let normalization: [String: MILOpReader] = [
        "batch_norm": { r in try r.batchNorm() },
        "instance_norm": { r in try r.instanceNorm() },
        "layer_norm": { r in try r.layerNorm() },
        "l2_norm": { r in try r.l2Norm() },
        "local_response_norm": { r in
            let x = try r.x()
            r.node("LRN", [x], [r.out()], ["size": .int(try r.int("size", 1)), "alpha": .float(try r.float("alpha", 1e-4)),
                                            "beta": .float(try r.float("beta", 0.75)), "bias": .float(try r.float("k", 1))])
        },
    ]
}

extension MILReader {
    /// `v` with its last two axes swapped: a constant keeps its encoding (a new constant), else a Transpose.
    mutating func swappedLastAxes(_ v: String) throws -> String {
        let r = try needRank(v)
        guard r >= 2 else { throw bad("'\(v)' of rank \(r) cannot be transposed") }
        let perm = Array(0..<(r - 2)) + [r - 1, r - 2]
        if let c = graph.constant(named: v) {
            return constant(try c.encoding.transposed(perm), "\(v)_transposed")
        }
        let t = temp("transposed")
        node("Transpose", [v], [t], ["perm": .ints(perm)])
        types[t] = (types[v]?.dtype, shape(v).map { s in perm.map { s[$0] } })
        return t
    }

    /// linear: x · weightᵀ + bias, weight [out, in]. A rank-2 x is a Gemm
    /// (the weight stays as stored); other ranks a MatMul with the weight transposed.
    mutating func linearLayer() throws {
        let x = try self.x(), w = try self.x("weight")
        let b = try opt("bias")
        if rank(x) == 2 {
            node("Gemm", [x, w] + (b.map { [$0] } ?? []), [out()], ["transB": .int(1)])
            return
        }
        let wt = try swappedLastAxes(w)
        guard let b else { node("MatMul", [x, wt], [out()]); return }
        let m = temp("matmul")
        node("MatMul", [x, wt], [m])
        node("Add", [m, b], [out()])
    }

    mutating func matmul() throws {
        var x = try self.x("x"), y = try self.x("y")
        if try bool("transpose_x", false) { x = try swappedLastAxes(x) }
        if try bool("transpose_y", false) { y = try swappedLastAxes(y) }
        node("MatMul", [x, y], [out()])
    }

    /// scaled_dot_product_attention (iOS 18): softmax(Q·Kᵀ / √d + mask)·V; a bool mask adds −∞ where false.
    mutating func attention() throws {
        let q = try x("query"), k = try x("key"), v = try x("value")
        guard let d = shape(q)?.last, d > 0 else { throw refuse("query without a fixed last dimension") }
        let kt = try swappedLastAxes(k)
        let product = temp("scores"), scaled = temp("scaled"), weights = temp("weights")
        node("MatMul", [q, kt], [product])
        node("Mul", [product, scalar(1 / Float(d).squareRoot(), "\(out())_scale")], [scaled])
        var logits = scaled
        if let mask = try opt("attn_mask") {
            var additive = mask
            if types[mask]?.dtype == .bool || graph.constant(named: mask)?.encoding.dtype == .bool {
                additive = temp("mask")
                node("Where", [mask, scalar(0, "\(out())_zero"), scalar(-.infinity, "\(out())_minus_inf")], [additive])
            }
            logits = temp("masked")
            node("Add", [scaled, additive], [logits])
        }
        node("Softmax", [logits], [weights], ["axis": .int(-1)])
        node("MatMul", [weights, v], [out()])
    }

    /// A [count] constant of `value` named after the current op.
    mutating func filled(_ value: Float, count: Int, _ hint: String) -> String {
        constant(.dense(Tensor(Array(repeating: value, count: count), shape: [count])), "\(out())_\(hint)")
    }

    /// batch_norm: per channel (axis 1); gamma and beta default to 1 and 0.
    mutating func batchNorm() throws {
        let x = try self.x(), mean = try self.x("mean"), variance = try self.x("variance")
        guard let c = shape(mean)?.reduce(1, *) else { throw refuse("batch_norm mean without a fixed shape") }
        let gamma = try opt("gamma") ?? filled(1, count: c, "gamma")
        let beta = try opt("beta") ?? filled(0, count: c, "beta")
        node("BatchNormalization", [x, gamma, beta, mean, variance], [out()], ["epsilon": .float(try float("epsilon", 1e-5))])
    }

    mutating func instanceNorm() throws {
        let x = try self.x()
        let s = try needShape(x)
        guard s.count >= 3 else { throw bad("instance_norm input of rank \(s.count)") }
        let gamma = try opt("gamma") ?? filled(1, count: s[1], "gamma")
        let beta = try opt("beta") ?? filled(0, count: s[1], "beta")
        node("InstanceNormalization", [x, gamma, beta], [out()], ["epsilon": .float(try float("epsilon", 1e-5))])
    }

    /// layer_norm over trailing axes (LayerNormalization); other axis sets are composed (without gamma / beta).
    mutating func layerNorm() throws {
        let x = try self.x()
        let s = try needShape(x)
        let axes = try (intList("axes") ?? Array(0..<s.count)).map { try axis($0, rank: s.count) }.sorted()
        let eps = try float("epsilon", 1e-5)
        guard !axes.isEmpty else { throw bad("layer_norm without axes") }
        if axes == Array(axes[0]..<s.count) {
            let normalized = Array(s[axes[0]...])
            let n = normalized.reduce(1, *)
            var gamma = try opt("gamma") ?? constant(.dense(Tensor(Array(repeating: 1, count: n), shape: normalized)), "\(out())_gamma")
            var beta = try opt("beta") ?? constant(.dense(Tensor(Array(repeating: 0, count: n), shape: normalized)), "\(out())_beta")
            if let g = graph.constant(named: gamma), g.encoding.shape != normalized { gamma = constant(try g.encoding.reshaped(normalized), "\(gamma)_reshaped") }
            if let b = graph.constant(named: beta), b.encoding.shape != normalized { beta = constant(try b.encoding.reshaped(normalized), "\(beta)_reshaped") }
            node("LayerNormalization", [x, gamma, beta], [out()], ["axis": .int(axes[0]), "epsilon": .float(eps)])
            return
        }
        guard try opt("gamma") == nil, try opt("beta") == nil else { throw refuse("layer_norm over non-trailing axes \(axes) with gamma / beta") }
        let axesConst = ints(axes, "\(out())_axes")
        let mean = temp("mean"), centered = temp("centered"), sq = temp("squared"), variance = temp("variance")
        let shifted = temp("variance_eps"), std = temp("std")
        node("ReduceMean", [x, axesConst], [mean], ["keepdims": .int(1)])
        node("Sub", [x, mean], [centered])
        node("Mul", [centered, centered], [sq])
        node("ReduceMean", [sq, axesConst], [variance], ["keepdims": .int(1)])
        node("Add", [variance, scalar(eps, "\(out())_epsilon")], [shifted])
        node("Sqrt", [shifted], [std])
        node("Div", [centered, std], [out()])
    }

    /// l2_norm: x / sqrt(sum of squares over the last three axes + ε).
    mutating func l2Norm() throws {
        let x = try self.x()
        let r = try needRank(x)
        guard r >= 3 else { throw bad("l2_norm input of rank \(r)") }
        let sq = temp("squared"), sum = temp("sum"), shifted = temp("sum_eps"), norm = temp("norm")
        node("Mul", [x, x], [sq])
        node("ReduceSum", [sq, ints([r - 3, r - 2, r - 1], "\(out())_axes")], [sum], ["keepdims": .int(1)])
        node("Add", [sum, scalar(try float("epsilon", 1e-6), "\(out())_epsilon")], [shifted])
        node("Sqrt", [shifted], [norm])
        node("Div", [x, norm], [out()])
    }
}
