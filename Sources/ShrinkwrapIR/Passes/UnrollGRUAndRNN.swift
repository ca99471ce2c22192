extension LoweringPass {
    /// GRU and RNN nodes that `selected` picks, unrolled over their fixed number of time steps into one
    /// Gemm projecting the whole input sequence, then per step and direction Gemm (h·Rᵀ) / Split /
    /// activations / Mul / Add / Sub: for formats with no such op, or one that computes another form
    /// (Core ML's GRU resets before the recursion, MIL's adds the h gate's recurrent bias outside it).
    /// Any direction, linear_before_reset 0 or 1, initial_h given or zeros, B or none, the activations
    /// the IR has ops for (and Affine, ScaledTanh); float32 only. Nodes with sequence_lens, clip,
    /// layout = 1, unknown or more than 1024 steps, or another activation are left to the writer.
    public static func unrollGRUAndRNN(where selected: @escaping @Sendable (Node, LoweringGraph) -> Bool = { _, _ in true }) -> LoweringPass {
        LoweringPass(
            "unroll-gru-rnn", "GRU / RNN over a fixed number of steps → one input Gemm, then per step Gemm / Split / activations / Mul / Add / Sub",
            lowers: ["GRU", "RNN"]
        ) { g in
            let read = RecurrentUnrolling.readValues(g)
            var out: [Node] = []
            for n in g.nodes {
                guard n.opType == "GRU" || n.opType == "RNN", selected(n, g), let steps = GRUAndRNNUnrolling.steps(n, read, &g) else {
                    out.append(n)
                    continue
                }
                out += steps
            }
            g.nodes = out
        }
    }
}

enum GRUAndRNNUnrolling {
    /// One direction's recurrent weights (constant names) and activations.
    struct Direction {
        /// R [gates·H, H]; with linear_before_reset = 0, only the z and r rows [2·H, H].
        let r: String
        /// GRU with linear_before_reset = 0: the h gate's rows of R [H, H], which multiply r ⊙ h.
        let rh: String?
        /// GRU with linear_before_reset = 1: [0, 0, Rb_h], added to h·Rᵀ inside the reset.
        let recurrentBias: String?
        let acts: [RecurrentUnrolling.Activation]
    }

    /// The nodes computing GRU or RNN `n` step by step (writing the outputs in `read`), or nil when its form is not one the pass takes.
    static func steps(_ n: Node, _ read: Set<String>, _ g: inout LoweringGraph) -> [Node]? {
        let gru = n.opType == "GRU", gates = gru ? 3 : 1
        guard let f = RecurrentUnrolling.form(n, gates: gates, g), f.dtype == .float32,
              let acts = RecurrentUnrolling.activations(n, defaults: gru ? ["Sigmoid", "Tanh"] : ["Tanh"], dirs: f.dirs) else { return nil }
        let resetAfter = gru && n.int("linear_before_reset", 0) != 0
        var b = RecurrentUnrolling.Builder(g: g, base: n.name, dtype: f.dtype)
        guard let directions = weights(&b, n, f, gates: gates, resetAfter: resetAfter, acts: acts),
              let xs = RecurrentUnrolling.projection(&b, n, f, gates: gates, exceptGate: resetAfter ? 2 : nil)
        else { return nil }
        let h0 = RecurrentUnrolling.initialStates(&b, n, 5, f)
        var states: [[String]] = [], last: [String] = []
        for (d, dir) in directions.enumerated() {
            var h = h0[d], seq = [String](repeating: "", count: f.steps)
            for t in f.order(d) {
                h = gru ? gruStep(&b, xs[d][t], h, dir, f) : b.activation(dir.acts[0], b.binary("Add", xs[d][t], b.gemm(h, dir.r, nil, [f.batch, f.hidden])))
                seq[t] = h
            }
            states.append(seq)
            last.append(h)
        }
        let outputs = n.outputs + ["", ""]
        if !outputs[0].isEmpty, read.contains(outputs[0]) { RecurrentUnrolling.writeSequence(&b, outputs[0], states, f) }
        if !outputs[1].isEmpty, read.contains(outputs[1]) { RecurrentUnrolling.writeFinal(&b, outputs[1], last, f) }
        g = b.g
        return b.nodes
    }

    /// Each direction's R (cut as the step needs it, keeping its encoding), recurrent bias and activations;
    /// nil when R cannot be cut keeping its encoding.
    static func weights(_ b: inout RecurrentUnrolling.Builder, _ n: Node, _ f: RecurrentUnrolling.Form, gates: Int, resetAfter: Bool,
                        acts: [[RecurrentUnrolling.Activation]]) -> [Direction]? {
        let h = f.hidden, width = gates * h
        var out: [Direction] = []
        for d in 0..<f.dirs {
            guard let r = RecurrentUnrolling.recurrentMatrix(f, d) else { return nil }
            var rh: String?, recurrentBias: String?, kept = r
            if gates == 3 && !resetAfter {
                guard let zr = try? r.rows(0..<(2 * h)), let hRows = try? r.rows((2 * h)..<width) else { return nil }
                kept = zr
                rh = b.g.addConstant(n.inputs[2] + "_h", hRows)
            }
            if resetAfter, let v = f.bias {
                let start = d * 2 * width + width + 2 * h
                let rbh = Array(v[start..<(start + h)])
                if rbh.contains(where: { $0 != 0 }) {
                    recurrentBias = b.g.addConstant(n.name + "_recurrent_bias", .dense(Tensor([Float](repeating: 0, count: 2 * h) + rbh, shape: [width])))
                }
            }
            out.append(Direction(r: b.g.addConstant(n.inputs[2] + "_2d", kept), rh: rh, recurrentBias: recurrentBias, acts: acts[d]))
        }
        return out
    }

    /// One GRU step from `x` (this step's [batch, 3·H] projection) and state `h`; returns the new state.
    /// z = f(x_z + h·R_zᵀ), r = f(x_r + h·R_rᵀ); ĥ = g(x_h + r ⊙ (h·R_hᵀ + Rb_h)) (linear_before_reset = 1)
    /// or g(x_h + (r ⊙ h)·R_hᵀ); the new state (1 − z) ⊙ ĥ + z ⊙ h, computed as ĥ + z ⊙ (h − ĥ).
    static func gruStep(_ b: inout RecurrentUnrolling.Builder, _ x: String, _ h: String, _ dir: Direction, _ f: RecurrentUnrolling.Form) -> String {
        let (batch, hidden) = (f.batch, f.hidden)
        let xg = b.split(x, axis: 1, into: 3, [batch, hidden])
        let recurrent = b.gemm(h, dir.r, dir.recurrentBias, [batch, (dir.rh == nil ? 3 : 2) * hidden])
        let rg = b.split(recurrent, axis: 1, into: dir.rh == nil ? 3 : 2, [batch, hidden])
        let z = b.activation(dir.acts[0], b.binary("Add", xg[0], rg[0]))
        let r = b.activation(dir.acts[0], b.binary("Add", xg[1], rg[1]))
        let reset: String
        if let rh = dir.rh {
            reset = b.gemm(b.binary("Mul", r, h), rh, nil, [batch, hidden])
        } else {
            reset = b.binary("Mul", r, rg[2])
        }
        let candidate = b.activation(dir.acts[1], b.binary("Add", xg[2], reset))
        return b.binary("Add", candidate, b.binary("Mul", z, b.binary("Sub", h, candidate)))
    }
}
