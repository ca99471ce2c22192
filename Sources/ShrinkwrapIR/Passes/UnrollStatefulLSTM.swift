extension LoweringPass {
    /// An LSTM whose initial state is computed at run time, or whose final
    /// state Y_h / Y_c is read (a streaming model carrying its state between
    /// calls, e.g. Silero VAD), unrolled over its fixed number of time steps
    /// into Gemm / Split / activations / Mul / Add: for formats whose sequence
    /// op keeps its state inside (TFLite's starts at zero and gives the
    /// sequence only). The input projection of every step and direction is one
    /// Gemm; each step adds h·Rᵀ. Any direction, the activations the IR has
    /// ops for; no peepholes, clip, sequence_lens or coupled gates, at most
    /// 1024 steps; other LSTMs are left to the writer.
    public static let unrollStatefulLSTM = LoweringPass(
        "unroll-stateful-lstm", "LSTM with a run-time initial state or read final state → per-step Gemm / Split / Sigmoid / Tanh / Mul / Add"
    ) { g in
        let read = RecurrentUnrolling.readValues(g)
        var out: [Node] = []
        for n in g.nodes {
            let stateful = [5, 6].contains { n.input($0).map { !g.isConstant($0) } ?? false }
                || n.outputs.dropFirst().contains { !$0.isEmpty && read.contains($0) }
            guard n.opType == "LSTM", stateful, let steps = LSTMUnrolling.steps(n, read, &g) else {
                out.append(n)
                continue
            }
            out += steps
        }
        g.nodes = out
    }
}

enum LSTMUnrolling {
    /// The nodes computing `n` step by step (writing the outputs in `read`), or nil when its form is not one this pass takes.
    static func steps(_ n: Node, _ read: Set<String>, _ g: inout LoweringGraph) -> [Node]? {
        guard n.int("input_forget", 0) == 0, n.input(7) == nil, let f = RecurrentUnrolling.form(n, gates: 4, g),
              let acts = RecurrentUnrolling.activations(n, defaults: ["Sigmoid", "Tanh", "Tanh"], dirs: f.dirs) else { return nil }
        let (batch, hidden) = (f.batch, f.hidden)
        var b = RecurrentUnrolling.Builder(g: g, base: n.name, dtype: f.dtype)
        // X·Wᵀ + b for every step at once, then one [batch, 4·hidden] slice per step and direction.
        guard let xs = RecurrentUnrolling.projection(&b, n, f, gates: 4) else { return nil }
        var rs: [String] = []
        for d in 0..<f.dirs {
            guard let r = RecurrentUnrolling.recurrentMatrix(f, d) else { return nil }
            rs.append(b.g.addConstant(n.inputs[2] + "_2d", r))
        }
        let h0 = RecurrentUnrolling.initialStates(&b, n, 5, f), c0 = RecurrentUnrolling.initialStates(&b, n, 6, f)
        var states: [[String]] = [], lastH: [String] = [], lastC: [String] = []
        for d in 0..<f.dirs {
            var h = h0[d], c = c0[d], seq = [String](repeating: "", count: f.steps)
            let (act, cellAct, outAct) = (acts[d][0], acts[d][1], acts[d][2])
            for t in f.order(d) {
                let gates = b.binary("Add", xs[d][t], b.gemm(h, rs[d], nil, [batch, 4 * hidden]))
                // ONNX gate order i, o, f, c.
                let parts = b.split(gates, axis: 1, into: 4, [batch, hidden])
                let i = b.activation(act, parts[0]), o = b.activation(act, parts[1])
                let forget = b.activation(act, parts[2]), cand = b.activation(cellAct, parts[3])
                c = b.binary("Add", b.binary("Mul", forget, c), b.binary("Mul", i, cand))
                h = b.binary("Mul", o, b.activation(outAct, c))
                seq[t] = h
            }
            states.append(seq)
            lastH.append(h)
            lastC.append(c)
        }
        let outputs = n.outputs + ["", "", ""]
        func wanted(_ k: Int) -> Bool { !outputs[k].isEmpty && read.contains(outputs[k]) }
        if wanted(0) { RecurrentUnrolling.writeSequence(&b, outputs[0], states, f) }
        if wanted(1) { RecurrentUnrolling.writeFinal(&b, outputs[1], lastH, f) }
        if wanted(2) { RecurrentUnrolling.writeFinal(&b, outputs[2], lastC, f) }
        g = b.g
        return b.nodes
    }
}
