/// What the passes unrolling ONNX's recurrent ops (LSTM, GRU, RNN) over a
/// fixed number of time steps share: the node's checked form, the input
/// projection of the whole sequence as one Gemm, the initial states, the
/// activations as IR ops, the Y / Y_h outputs, and the builder of the nodes.
enum RecurrentUnrolling {
    /// Unrolling makes ~12 nodes a step and direction: a longer fixed sequence is left to the writer (which says why it cannot).
    static let maxSteps = 1024

    /// A recurrent node in a form the passes take: time-major, constant W and R, known shapes.
    struct Form {
        let steps: Int, batch: Int, input: Int, hidden: Int
        /// Per direction: whether it runs from the last step to the first.
        let reversed: [Bool]
        let w: WeightEncoding, r: WeightEncoding
        /// B's values [dirs, 2·gates·H] (Wb then Rb), nil when B is absent.
        let bias: [Float]?
        let dtype: DType
        var dirs: Int { reversed.count }
        /// Step indices in the order direction `d` visits them.
        func order(_ d: Int) -> [Int] { reversed[d] ? Array((0..<steps).reversed()) : Array(0..<steps) }
    }

    /// The form of `n` (with `gates` stacked gates), or nil when the passes leave it to the writer:
    /// batch-first layout, clip, sequence_lens, W or R not constant, unknown shapes, more than `maxSteps` steps.
    static func form(_ n: Node, gates: Int, _ g: LoweringGraph) -> Form? {
        let reversed: [Bool]
        switch n.string("direction", "forward") {
        case "forward": reversed = [false]
        case "reverse": reversed = [true]
        case "bidirectional": reversed = [false, true]
        default: return nil
        }
        let dirs = reversed.count
        guard n.int("layout", 0) == 0, n.attributes["clip"] == nil, n.input(4) == nil,
              let x = n.input(0), let xs = g.shapes[x], xs.count == 3,
              let w = n.input(1).flatMap({ g.constants[$0] }), let r = n.input(2).flatMap({ g.constants[$0] }),
              w.shape.count == 3, w.shape[0] == dirs, w.shape[1] > 0, w.shape[1] % gates == 0, w.shape[2] == xs[2] else { return nil }
        let (steps, batch, hidden) = (xs[0], xs[1], w.shape[1] / gates)
        guard steps >= 1, steps <= maxSteps, batch >= 1, r.shape == [dirs, gates * hidden, hidden],
              n.int("hidden_size", hidden) == hidden else { return nil }
        var bias: [Float]?
        if let b = n.input(3) {
            guard let v = g.constants[b]?.decoded().floats, v.count == dirs * 2 * gates * hidden else { return nil }
            bias = v
        }
        for k in [5, 6] { if let s = n.input(k), g.shapes[s] != [dirs, batch, hidden] { return nil } }
        return Form(steps: steps, batch: batch, input: xs[2], hidden: hidden, reversed: reversed, w: w, r: r, bias: bias,
                    dtype: g.dtypes[x] ?? .float32)
    }

    /// Values the graph's nodes (their subgraphs too) read, and its outputs: an unrolled node writes only those.
    static func readValues(_ g: LoweringGraph) -> Set<String> {
        var read = g.outputs
        for n in g.nodes { read.formUnion(n.readNames) }
        return read
    }

    // MARK: the parts every unrolled node has

    /// X·Wᵀ + Wb + Rb for every step and direction at once (one Gemm; without gate `exceptGate`'s Rb);
    /// then, per direction, the [batch, gates·H] slice of each step, in time order. Nil when W cannot
    /// be reshaped keeping its encoding.
    static func projection(_ b: inout Builder, _ n: Node, _ f: Form, gates: Int, exceptGate: Int? = nil) -> [[String]]? {
        let width = gates * f.hidden, rows = f.steps * f.batch
        guard let w2 = try? f.w.reshaped([f.dirs * width, f.input]) else { return nil }
        let wName = b.g.addConstant(n.inputs[1] + "_2d", w2)
        let biasName = inputBias(f, gates: gates, exceptGate: exceptGate).map { b.g.addConstant(n.name + "_bias", .dense(Tensor($0, shape: [$0.count]))) }
        let projected = b.gemm(b.reshape(n.inputs[0], [rows, f.input]), wName, biasName, [rows, f.dirs * width])
        return b.split(projected, axis: 1, into: f.dirs, [rows, width]).map { perDirection in
            let perStep = b.split(b.reshape(perDirection, [f.steps, f.batch, width]), axis: 0, into: f.steps, [1, f.batch, width])
            return perStep.map { b.reshape($0, [f.batch, width]) }
        }
    }

    /// The bias of the input projection, per direction [gates·H]: Wb + Rb, except gate `exceptGate`'s Rb
    /// (a GRU's h gate with linear_before_reset = 1: the reset multiplies it); nil without B.
    static func inputBias(_ f: Form, gates: Int, exceptGate: Int?) -> [Float]? {
        guard let v = f.bias else { return nil }
        let width = gates * f.hidden
        return (0..<f.dirs).flatMap { d in
            (0..<width).map { j in v[d * 2 * width + j] + (j / f.hidden == exceptGate ? 0 : v[d * 2 * width + width + j]) }
        }
    }

    /// Direction `d`'s R as a [gates·H, H] matrix, keeping its encoding (nil when it cannot).
    static func recurrentMatrix(_ f: Form, _ d: Int) -> WeightEncoding? {
        let shape = Array(f.r.shape.dropFirst())
        return try? (f.dirs == 1 ? f.r : f.r.rows(d..<(d + 1))).reshaped(shape)
    }

    /// Initial state input `k` [dirs, batch, H] as one [batch, H] value per direction; zeros when absent.
    static func initialStates(_ b: inout Builder, _ n: Node, _ k: Int, _ f: Form) -> [String] {
        let shape = [f.batch, f.hidden]
        guard let s = n.input(k) else {
            let zeros = b.g.addConstant(n.name + "_zero_state", .dense(Tensor([Float](repeating: 0, count: f.batch * f.hidden), shape: shape)))
            return Array(repeating: zeros, count: f.dirs)
        }
        return b.split(s, axis: 0, into: f.dirs, [1] + shape).map { b.reshape($0, shape) }
    }

    /// Writes Y [steps, dirs, batch, H] into `out` from each direction's state after every step (in time order).
    static func writeSequence(_ b: inout Builder, _ out: String, _ states: [[String]], _ f: Form) {
        let perDirection = states.map { seq in
            b.concat(seq.map { b.reshape($0, [1, 1, f.batch, f.hidden]) }, axis: 0, [f.steps, 1, f.batch, f.hidden],
                     into: f.dirs == 1 ? out : nil)
        }
        if f.dirs > 1 { b.concat(perDirection, axis: 1, [f.steps, f.dirs, f.batch, f.hidden], into: out) }
    }

    /// Writes a final state [dirs, batch, H] into `out` from each direction's [batch, H].
    static func writeFinal(_ b: inout Builder, _ out: String, _ last: [String], _ f: Form) {
        let parts = last.map { b.reshape($0, [1, f.batch, f.hidden], into: f.dirs == 1 ? out : nil) }
        if f.dirs > 1 { b.concat(parts, axis: 0, [f.dirs, f.batch, f.hidden], into: out) }
    }

    // MARK: activations

    /// One of a recurrent node's activation functions, with its alpha and beta.
    struct Activation: Equatable {
        /// ONNX's name, lowercased.
        let name: String
        let alpha: Float, beta: Float
    }

    /// Activation name (lowercased) → the IR op computing it (nil: made of Mul / Add / Tanh here) and the
    /// defaults of the alpha and beta it takes (nil: takes none); alphas and betas are consumed in the
    /// order of the functions that take them, as the interpreter's kernel does.
    static let activationTable: [String: (op: String?, alpha: Float?, beta: Float?)] = [
        "sigmoid": ("Sigmoid", nil, nil), "tanh": ("Tanh", nil, nil), "relu": ("Relu", nil, nil),
        "softsign": ("Softsign", nil, nil), "softplus": ("Softplus", nil, nil),
        "hardsigmoid": ("HardSigmoid", 0.2, 0.5), "leakyrelu": ("LeakyRelu", 0.01, nil),
        "thresholdedrelu": ("ThresholdedRelu", 1, nil), "elu": ("Elu", 1, nil),
        "affine": (nil, 1, 0), "scaledtanh": (nil, 1, 1),
    ]

    /// The node's activations per direction (`defaults` for each when absent), or nil when one is unknown.
    static func activations(_ n: Node, defaults: [String], dirs: Int) -> [[Activation]]? {
        var names = Array([[String]](repeating: defaults, count: dirs).joined())
        if case .strings(let s)? = n.attributes["activations"], !s.isEmpty { names = s.count == defaults.count && dirs == 2 ? s + s : s }
        guard names.count == defaults.count * dirs else { return nil }
        var alphas: ArraySlice<Float> = [], betas: ArraySlice<Float> = []
        if case .floats(let a)? = n.attributes["activation_alpha"] { alphas = a[...] }
        if case .floats(let v)? = n.attributes["activation_beta"] { betas = v[...] }
        var out: [Activation] = []
        for name in names {
            guard let entry = activationTable[name.lowercased()] else { return nil }
            let alpha = entry.alpha.map { alphas.popFirst() ?? $0 } ?? 0, beta = entry.beta.map { betas.popFirst() ?? $0 } ?? 0
            out.append(Activation(name: name.lowercased(), alpha: alpha, beta: beta))
        }
        return (0..<dirs).map { d in Array(out[(d * defaults.count)..<((d + 1) * defaults.count)]) }
    }

    // MARK: building

    /// Makes the nodes and values of one unrolled node.
    struct Builder {
        var g: LoweringGraph
        let base: String
        let dtype: DType
        var nodes: [Node] = []
        /// The shape and scalar constants made so far, shared by every step that needs one.
        var shapeConstants: [[Int]: String] = [:], scalars: [Float: String] = [:]

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
            let s = shapeConstants[shape] ?? g.addConstant(base + "_shape", .dense(Tensor(ints: shape.map(Int64.init), shape: [shape.count])))
            shapeConstants[shape] = s
            add("Reshape", [v, s], [y])
            return y
        }

        /// `count` equal parts of `v` along `axis` (`v` itself when one).
        mutating func split(_ v: String, axis: Int, into count: Int, _ shape: [Int]) -> [String] {
            guard count > 1 else { return [v] }
            let outs = (0..<count).map { _ in value(shape) }
            add("Split", [v], outs, ["axis": .int(axis)])
            return outs
        }

        /// `parts` joined along `axis` (the one part itself when one, or an Identity into `out`).
        @discardableResult
        mutating func concat(_ parts: [String], axis: Int, _ shape: [Int], into out: String? = nil) -> String {
            if parts.count == 1, out == nil { return parts[0] }
            let y = out ?? value(shape)
            add(parts.count == 1 ? "Identity" : "Concat", parts, [y], parts.count == 1 ? [:] : ["axis": .int(axis)])
            return y
        }

        /// a·bᵀ (+ c): `b` is a constant [cols, inner].
        mutating func gemm(_ a: String, _ b: String, _ c: String?, _ shape: [Int]) -> String {
            let y = value(shape)
            add("Gemm", [a, b] + (c.map { [$0] } ?? []), [y], ["transB": .int(1)])
            return y
        }

        mutating func unary(_ op: String, _ x: String, _ attributes: [String: Attribute] = [:]) -> String {
            let y = value(g.shapes[x] ?? [])
            add(op, [x], [y], attributes)
            return y
        }

        mutating func binary(_ op: String, _ a: String, _ c: String) -> String {
            let y = value(g.shapes[a] ?? [])
            add(op, [a, c], [y])
            return y
        }

        mutating func scalar(_ v: Float) -> String {
            let c = scalars[v] ?? g.addConstant(base + "_scalar", .dense(Tensor([v], shape: [])))
            scalars[v] = c
            return c
        }

        /// `a` applied to `x`.
        mutating func activation(_ a: Activation, _ x: String) -> String {
            switch a.name {
            case "affine": return binary("Add", binary("Mul", x, scalar(a.alpha)), scalar(a.beta))
            case "scaledtanh": return binary("Mul", unary("Tanh", binary("Mul", x, scalar(a.beta))), scalar(a.alpha))
            default:
                let entry = activationTable[a.name]
                var attributes: [String: Attribute] = [:]
                if entry?.alpha != nil { attributes["alpha"] = .float(a.alpha) }
                if entry?.beta != nil { attributes["beta"] = .float(a.beta) }
                return unary(entry?.op ?? "Identity", x, attributes)
            }
        }
    }
}
