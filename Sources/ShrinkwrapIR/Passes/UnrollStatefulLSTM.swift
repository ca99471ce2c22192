extension LoweringPass {
    /// A forward LSTM whose initial state is computed at run time, or whose
    /// final state Y_h / Y_c is read (a streaming model carrying its state
    /// between calls, e.g. Silero VAD), unrolled over its fixed number of time
    /// steps into Gemm / Split / Sigmoid / Tanh / Mul / Add: for formats whose
    /// sequence op keeps its state inside (TFLite's starts at zero and gives
    /// the sequence only). The input projection of every step is one Gemm; each
    /// step adds h·Rᵀ. Default activations, no peepholes, clip, sequence_lens
    /// or coupled gates, at most 1024 steps; other LSTMs are left to the writer.
    public static let unrollStatefulLSTM = LoweringPass(
        "unroll-stateful-lstm", "forward LSTM with a run-time initial state or read final state → per-step Gemm / Split / Sigmoid / Tanh / Mul / Add"
    ) { g in
        var readers = g.outputs
        for n in g.nodes { readers.formUnion(n.inputs) }
        var out: [Node] = []
        for n in g.nodes {
            let stateful = [5, 6].contains { n.input($0).map { !g.isConstant($0) } ?? false }
                || n.outputs.dropFirst().contains { !$0.isEmpty && readers.contains($0) }
            guard n.opType == "LSTM", stateful, let steps = LSTMUnrolling.steps(n, &g) else {
                out.append(n)
                continue
            }
            out += steps
        }
        g.nodes = out
    }
}

enum LSTMUnrolling {
    static let maxSteps = 1024

    /// The nodes computing `n` step by step, or nil when its form is not one this pass takes.
    static func steps(_ n: Node, _ g: inout LoweringGraph) -> [Node]? {
        guard n.string("direction", "forward") == "forward", n.int("layout", 0) == 0, n.int("input_forget", 0) == 0,
              n.attributes["clip"] == nil, n.attributes["activations"] == nil, n.input(4) == nil, n.input(7) == nil,
              let x = n.input(0), let xs = g.shapes[x], xs.count == 3,
              let w = n.input(1).flatMap({ g.constants[$0] }), let r = n.input(2).flatMap({ g.constants[$0] }),
              w.shape.count == 3, w.shape[0] == 1, w.shape[1] % 4 == 0, w.shape[2] == xs[2] else { return nil }
        let (steps, batch, hidden) = (xs[0], xs[1], w.shape[1] / 4)
        // Unrolling makes ~12 nodes a step: a long fixed sequence is left to the writer (which says why it cannot).
        guard steps >= 1, steps <= maxSteps, r.shape == [1, 4 * hidden, hidden],
              let w2 = try? w.reshaped([4 * hidden, xs[2]]), let r2 = try? r.reshaped([4 * hidden, hidden]) else { return nil }
        var bias = [Float](repeating: 0, count: 4 * hidden)
        if let b = n.input(3) {
            guard let v = g.constants[b]?.decoded().floats, v.count == 8 * hidden else { return nil }
            for j in bias.indices { bias[j] = v[j] + v[4 * hidden + j] }
        }
        for k in [5, 6] { if let s = n.input(k), g.shapes[s] != [1, batch, hidden] { return nil } }
        var b = Builder(g: g, base: n.name, dtype: g.dtypes[x] ?? .float32)
        let wName = b.g.addConstant(n.inputs[1] + "_2d", w2), rName = b.g.addConstant(n.inputs[2] + "_2d", r2)
        let biasName = b.g.addConstant(n.name + "_bias", .dense(Tensor(bias, shape: [4 * hidden])))
        // X·Wᵀ + b for every step at once, then one [batch, 4·hidden] slice per step.
        let flat = b.reshape(x, [steps * batch, xs[2]])
        let projected = b.value([steps * batch, 4 * hidden])
        b.add("Gemm", [flat, wName, biasName], [projected], ["transB": .int(1)])
        let perStep = b.split(b.reshape(projected, [steps, batch, 4 * hidden]), axis: 0, into: steps, [1, batch, 4 * hidden])
        func initial(_ k: Int) -> String {
            if let s = n.input(k) { return b.reshape(s, [batch, hidden]) }
            return b.g.addConstant(n.name + "_zero_state", .dense(Tensor([Float](repeating: 0, count: batch * hidden), shape: [batch, hidden])))
        }
        var h = initial(5), c = initial(6)
        var ys: [String] = []
        for t in 0..<steps {
            let recurrent = b.value([batch, 4 * hidden])
            b.add("Gemm", [h, rName], [recurrent], ["transB": .int(1)])
            let gates = b.value([batch, 4 * hidden])
            b.add("Add", [b.reshape(perStep[t], [batch, 4 * hidden]), recurrent], [gates])
            // ONNX gate order i, o, f, c.
            let parts = b.split(gates, axis: 1, into: 4, [batch, hidden])
            let i = b.unary("Sigmoid", parts[0]), o = b.unary("Sigmoid", parts[1])
            let f = b.unary("Sigmoid", parts[2]), cand = b.unary("Tanh", parts[3])
            c = b.binary("Add", b.binary("Mul", f, c), b.binary("Mul", i, cand))
            h = b.binary("Mul", o, b.unary("Tanh", c))
            ys.append(h)
        }
        let outputs = n.outputs + ["", "", ""]
        if !outputs[0].isEmpty {
            let stacked = ys.map { b.reshape($0, [1, 1, batch, hidden]) }
            b.add(steps == 1 ? "Identity" : "Concat", stacked, [outputs[0]], steps == 1 ? [:] : ["axis": .int(0)])
        }
        if !outputs[1].isEmpty { b.reshape(h, [1, batch, hidden], into: outputs[1]) }
        if !outputs[2].isEmpty { b.reshape(c, [1, batch, hidden], into: outputs[2]) }
        g = b.g
        return b.nodes
    }

    /// Makes the nodes and values of one unrolled LSTM.
    struct Builder {
        var g: LoweringGraph
        let base: String
        let dtype: DType
        var nodes: [Node] = []

        mutating func value(_ shape: [Int]) -> String {
            let v = g.fresh(base + "_v")
            g.shapes[v] = shape
            g.dtypes[v] = dtype
            return v
        }

        mutating func add(_ op: String, _ inputs: [String], _ outputs: [String], _ attributes: [String: Attribute] = [:]) {
            nodes.append(Node(name: g.fresh(base + "_" + op.lowercased()), opType: op, inputs: inputs, outputs: outputs, attributes: attributes))
        }

        @discardableResult
        mutating func reshape(_ v: String, _ shape: [Int], into out: String? = nil) -> String {
            let y = out ?? value(shape)
            let s = g.addConstant(base + "_shape", .dense(Tensor(ints: shape.map(Int64.init), shape: [shape.count])))
            add("Reshape", [v, s], [y])
            return y
        }

        mutating func split(_ v: String, axis: Int, into count: Int, _ shape: [Int]) -> [String] {
            guard count > 1 else { return [v] }
            let outs = (0..<count).map { _ in value(shape) }
            add("Split", [v], outs, ["axis": .int(axis)])
            return outs
        }

        mutating func unary(_ op: String, _ x: String) -> String {
            let y = value(g.shapes[x] ?? [])
            add(op, [x], [y])
            return y
        }

        mutating func binary(_ op: String, _ a: String, _ c: String) -> String {
            let y = value(g.shapes[a] ?? [])
            add(op, [a, c], [y])
            return y
        }
    }
}
