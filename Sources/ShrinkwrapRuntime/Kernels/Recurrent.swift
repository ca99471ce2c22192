import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Recurrent kernels: RNN, GRU and LSTM in ONNX form (layout 0 and 1,
/// forward / reverse / bidirectional, sequence_lens, clip, custom activations).
///
/// The input projection X·Wᵀ runs as one GEMM over all time steps; each step
/// then runs one (GRU with linear_before_reset=0: two) GEMM H·Rᵀ over the batch.
/// With sequence_lens, a batch entry stops after its length: later rows of Y
/// are zero and Y_h / Y_c hold the state after its last step; the reverse
/// direction starts at each entry's own last step.
public enum RecurrentKernels {
    public static func rnn(_ c: KernelContext) throws -> [Tensor] { try run(c, cell: .rnn) }
    public static func gru(_ c: KernelContext) throws -> [Tensor] { try run(c, cell: .gru) }
    public static func lstm(_ c: KernelContext) throws -> [Tensor] { try run(c, cell: .lstm) }

    enum Cell {
        case rnn, gru, lstm
        var gates: Int { switch self { case .rnn: return 1; case .gru: return 3; case .lstm: return 4 } }
        var defaultActivations: [String] {
            switch self {
            case .rnn: return ["Tanh"]
            case .gru: return ["Sigmoid", "Tanh"]
            case .lstm: return ["Sigmoid", "Tanh", "Tanh"]
            }
        }
    }

    /// One activation function with its alpha / beta.
    struct Activation {
        enum Kind { case sigmoid, tanh, relu, hardSigmoid, affine, leakyRelu, thresholdedRelu, scaledTanh, elu, softsign, softplus }
        let kind: Kind
        let alpha: Float
        let beta: Float

        /// Parses a name; `alphas` / `betas` are consumed in order by the functions that use them.
        init?(_ name: String, alphas: inout ArraySlice<Float>, betas: inout ArraySlice<Float>) {
            let table: [String: (Kind, Float?, Float?)] = [
                "sigmoid": (.sigmoid, nil, nil), "tanh": (.tanh, nil, nil), "relu": (.relu, nil, nil),
                "hardsigmoid": (.hardSigmoid, 0.2, 0.5), "affine": (.affine, 1, 0), "leakyrelu": (.leakyRelu, 0.01, nil),
                "thresholdedrelu": (.thresholdedRelu, 1, nil), "scaledtanh": (.scaledTanh, 1, 1), "elu": (.elu, 1, nil),
                "softsign": (.softsign, nil, nil), "softplus": (.softplus, nil, nil),
            ]
            guard let (k, da, db) = table[name.lowercased()] else { return nil }
            kind = k
            var a: Float = 0, b: Float = 0
            if let d = da { a = alphas.popFirst() ?? d }
            if let d = db { b = betas.popFirst() ?? d }
            alpha = a; beta = b
        }

        /// Applies the function in place to `n` values.
        func apply(_ p: UnsafeMutablePointer<Float>, _ n: Int) {
            switch kind {
            case .sigmoid: SIMDKernels.apply(.sigmoid, p, p, count: n)
            case .tanh: SIMDKernels.apply(.tanh, p, p, count: n)
            case .relu: for i in 0..<n { p[i] = max(p[i], 0) }
            case .hardSigmoid: for i in 0..<n { p[i] = min(max(alpha * p[i] + beta, 0), 1) }
            case .affine: for i in 0..<n { p[i] = alpha * p[i] + beta }
            case .leakyRelu: for i in 0..<n { let x = p[i]; p[i] = x >= 0 ? x : alpha * x }
            case .thresholdedRelu: for i in 0..<n { let x = p[i]; p[i] = x > alpha ? x : 0 }
            case .scaledTanh: for i in 0..<n { p[i] = alpha * tanhf(beta * p[i]) }
            case .elu: for i in 0..<n { let x = p[i]; p[i] = x >= 0 ? x : alpha * (expf(x) - 1) }
            case .softsign: for i in 0..<n { let x = p[i]; p[i] = x / (1 + abs(x)) }
            case .softplus: for i in 0..<n { let x = p[i]; p[i] = x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)) }
            }
        }
    }

    /// Validated inputs, converted to time-major, direction-major layouts.
    struct Setup {
        var seq = 0, batch = 0, inputSize = 0, hidden = 0, dirs = 1
        var x: [Float] = []        // [seq, batch, input]
        var w: [Float] = []        // [dirs, G·H, input]
        var r: [Float] = []        // [dirs, G·H, H]
        var rt: [Float] = []       // [dirs, H, G·H]: R transposed, for the step's h · Rᵀ
        var bias: [Float] = []     // [dirs, 2·G·H] (Wb then Rb)
        var lens: [Int] = []       // [batch]
        var h0: [Float] = []       // [dirs, batch, H]
        var c0: [Float] = []       // [dirs, batch, H]
        var peep: [Float] = []     // [dirs, 3·H] (i, o, f) or empty
        var acts: [[Activation]] = []  // per direction
        var clip: Float = .infinity
        /// Bound of the LSTM cell state (not ONNX: `shrinkwrap_cell_clip`, from TFLite's cell_clip and Core ML's cellClipThreshold).
        var cellClip: Float = .infinity
        var reverse: [Bool] = []   // per direction
        var layout = 0
        var dtype: DType = .float32
    }

    static func setup(_ c: KernelContext, cell: Cell) throws -> Setup {
        var s = Setup()
        let g = cell.gates
        let (xt, xv) = try c.floatInput(0)
        let (wt, wv) = try c.floatInput(1)
        let (rt, rv) = try c.floatInput(2)
        s.dtype = xt.dtype
        s.layout = try c.int("layout", default: 0)
        guard s.layout == 0 || s.layout == 1 else { throw c.badAttribute("layout", "must be 0 or 1, got \(s.layout)") }
        let direction = try c.string("direction", default: "forward")
        switch direction {
        case "forward": s.reverse = [false]
        case "reverse": s.reverse = [true]
        case "bidirectional": s.reverse = [false, true]
        default: throw c.badAttribute("direction", "unknown direction '\(direction)'")
        }
        s.dirs = s.reverse.count
        guard xt.rank == 3 else { throw c.fail("X must be 3-D, has shape \(xt.shape)") }
        s.seq = s.layout == 0 ? xt.shape[0] : xt.shape[1]
        s.batch = s.layout == 0 ? xt.shape[1] : xt.shape[0]
        s.inputSize = xt.shape[2]
        guard wt.rank == 3, wt.shape[0] == s.dirs, wt.shape[1] % g == 0, wt.shape[2] == s.inputSize else {
            throw c.fail("W has shape \(wt.shape), expected [\(s.dirs), \(g)·hidden, \(s.inputSize)]")
        }
        s.hidden = wt.shape[1] / g
        let hs = try c.int("hidden_size", default: s.hidden)
        if hs != s.hidden {
            throw c.badAttribute("hidden_size", "\(hs) does not match W's shape \(wt.shape)")
        }
        let h = s.hidden, b = s.batch, d = s.dirs
        guard rt.shape == [d, g * h, h] else { throw c.fail("R has shape \(rt.shape), expected \([d, g * h, h])") }
        _ = try c.checkedCount([s.seq, d, b, g * h])
        // X to time-major.
        if s.layout == 0 || s.seq <= 1 || b <= 1 {
            s.x = xv
        } else {
            // [batch, seq, input] → [seq, batch, input]
            var out = [Float](repeating: 0, count: xv.count)
            let ii = s.inputSize
            for t in 0..<s.seq { for bb in 0..<b { for i in 0..<ii { out[(t * b + bb) * ii + i] = xv[(bb * s.seq + t) * ii + i] } } }
            s.x = out
        }
        s.w = wv
        s.r = rv
        s.rt = try transposedRecurrentWeights(c, rv, dirs: d, rows: g * h, hidden: h)
        if let bt = c.optionalInput(3) {
            guard bt.shape == [d, 2 * g * h], let bv = bt.floats else { throw c.fail("B has shape \(bt.shape), expected \([d, 2 * g * h])") }
            s.bias = bv
        } else {
            s.bias = [Float](repeating: 0, count: d * 2 * g * h)
        }
        s.lens = [Int](repeating: s.seq, count: b)
        if let lt = c.optionalInput(4) {
            guard lt.count == b, let lv = lt.ints else { throw c.fail("sequence_lens must be \(b) integers, has shape \(lt.shape)") }
            for (i, v) in lv.enumerated() {
                guard v >= 0 && v <= Int64(s.seq) else { throw c.fail("sequence_lens[\(i)] = \(v) out of range 0...\(s.seq)") }
                s.lens[i] = Int(v)
            }
        }
        func state(_ i: Int, _ name: String) throws -> [Float] {
            guard let t = c.optionalInput(i) else { return [Float](repeating: 0, count: d * b * h) }
            let expected = s.layout == 0 ? [d, b, h] : [b, d, h]
            guard t.shape == expected, let v = t.floats else { throw c.fail("\(name) has shape \(t.shape), expected \(expected)") }
            return s.layout == 0 ? v : swapFirstTwo(v, b, d, h)
        }
        s.h0 = try state(5, "initial_h")
        if cell == .lstm {
            s.c0 = try state(6, "initial_c")
            if let pt = c.optionalInput(7) {
                guard pt.shape == [d, 3 * h], let pv = pt.floats else { throw c.fail("P has shape \(pt.shape), expected \([d, 3 * h])") }
                s.peep = pv
            }
        }
        if c.node.attributes["shrinkwrap_cell_clip"] != nil {
            let cl = try c.float("shrinkwrap_cell_clip", default: .infinity)
            guard cl > 0 else { throw c.badAttribute("shrinkwrap_cell_clip", "must be positive, got \(cl)") }
            s.cellClip = cl
        }
        if c.node.attributes["clip"] != nil {
            let cl = try c.float("clip", default: .infinity)
            guard cl > 0 else { throw c.badAttribute("clip", "must be positive, got \(cl)") }
            s.clip = cl
        }
        var names = try c.strings("activations") ?? []
        let per = cell.defaultActivations.count
        if names.isEmpty { names = Array([[String]](repeating: cell.defaultActivations, count: d).joined()) }
        if names.count == per && d == 2 { names += names }
        guard names.count == per * d else {
            throw c.badAttribute("activations", "expected \(per * d) functions, got \(names.count)")
        }
        var alphas = ArraySlice(try c.floats("activation_alpha") ?? [])
        var betas = ArraySlice(try c.floats("activation_beta") ?? [])
        for di in 0..<d {
            var list: [Activation] = []
            for k in 0..<per {
                let name = names[di * per + k]
                guard let a = Activation(name, alphas: &alphas, betas: &betas) else {
                    throw c.badAttribute("activations", "unsupported activation '\(name)'")
                }
                list.append(a)
            }
            s.acts.append(list)
        }
        return s
    }

    /// The planner-internal attribute marking a recurrent node whose R the planner transposed at load
    /// (input 8: [dirs, H, G·H]).
    public static let transposedRAttribute = "__shrinkwrap_transposed_r"

    /// R [dirs, rows, hidden] as [dirs, hidden, rows]: the planner's (input 8), else transposed now, so
    /// the planner changes no bits. The steps then multiply h by it without a transpose: OpenBLAS's
    /// small kernel for h · Rᵀ (one row, a dot product per gate) took 39 % of oww-hey-mycroft.
    static func transposedRecurrentWeights(_ c: KernelContext, _ r: [Float], dirs: Int, rows: Int, hidden: Int) throws -> [Float] {
        if try c.int(transposedRAttribute, default: 0) == 1 {
            guard let t = c.optionalInput(8), let v = t.floats, v.count == r.count else {
                throw c.badAttribute(transposedRAttribute, "needs R transposed as input 8")
            }
            return v
        }
        return transposed(r, dirs: dirs, rows: rows, columns: hidden)
    }

    /// [dirs, rows, columns] → [dirs, columns, rows].
    static func transposed(_ v: [Float], dirs: Int, rows: Int, columns: Int) -> [Float] {
        var out = [Float](repeating: 0, count: v.count)
        for d in 0..<dirs {
            let base = d * rows * columns
            for i in 0..<rows { for j in 0..<columns { out[base + j * rows + i] = v[base + i * columns + j] } }
        }
        return out
    }

    /// [a, b, n] → [b, a, n].
    static func swapFirstTwo(_ v: [Float], _ a: Int, _ b: Int, _ n: Int) -> [Float] {
        var out = [Float](repeating: 0, count: v.count)
        for i in 0..<a { for j in 0..<b { for k in 0..<n { out[(j * a + i) * n + k] = v[(i * b + j) * n + k] } } }
        return out
    }

    static func run(_ c: KernelContext, cell: Cell) throws -> [Tensor] {
        let s = try setup(c, cell: cell)
        let o = StepOptions(cell: cell,
                            linearBeforeReset: try c.int("linear_before_reset", default: 0) != 0,
                            inputForget: try c.int("input_forget", default: 0) != 0,
                            threads: c.threads)
        if s.dirs == 2 && o.threads >= 2 { return outputTensors(bothDirectionsAtOnce(s, o), s, cell: cell) }
        var out = Outputs(s)
        var buffers = StepBuffers(s, cell: cell)
        for d in 0..<s.dirs { runDirection(d, s, o, &buffers, &out) }
        return outputTensors(out, s, cell: cell)
    }

    /// A bidirectional layer's directions are independent: one thread each, with the arithmetic
    /// of one after the other (each direction's steps on one thread, its input projection too),
    /// so the bits do not change. Sequences of small steps cannot use two threads any other way.
    private static func bothDirectionsAtOnce(_ s: Setup, _ o: StepOptions) -> Outputs {
        let one = StepOptions(cell: o.cell, linearBeforeReset: o.linearBeforeReset, inputForget: o.inputForget, threads: 1)
        var parts = [Outputs(s), Outputs(s)]
        parts.withUnsafeMutableBufferPointer { pp in
            guard let base = pp.baseAddress else { return }
            let p = SendablePointer(base)
            parallelChunks(2, threads: 2) { range in
                for d in range {
                    var buffers = StepBuffers(s, cell: o.cell)
                    runDirection(d, s, one, &buffers, &p.p[d])
                }
            }
        }
        // Direction 1's values into direction 0's outputs.
        var out = parts[0]
        let B = s.batch, H = s.hidden, BH = B * H
        for t in 0..<s.seq {
            let at = (t * 2 + 1) * BH
            out.y.replaceSubrange(at..<(at + BH), with: parts[1].y[at..<(at + BH)])
        }
        out.yh.replaceSubrange(BH..<(2 * BH), with: parts[1].yh[BH..<(2 * BH)])
        out.yc.replaceSubrange(BH..<(2 * BH), with: parts[1].yc[BH..<(2 * BH)])
        return out
    }

    // MARK: - Steps of `run`

    /// The attributes the time steps read, besides those in `Setup`.
    private struct StepOptions {
        let cell: Cell
        let linearBeforeReset: Bool
        let inputForget: Bool
        let threads: Int
    }

    /// Y, Y_h and Y_c while they are computed: time-major, direction-major.
    private struct Outputs {
        var y: [Float]   // [T, D, B, H]
        var yh: [Float]  // [D, B, H]
        var yc: [Float]  // [D, B, H]

        init(_ s: Setup) {
            y = [Float](repeating: 0, count: s.seq * s.dirs * s.batch * s.hidden)
            yh = [Float](repeating: 0, count: s.dirs * s.batch * s.hidden)
            yc = [Float](repeating: 0, count: s.dirs * s.batch * s.hidden)
        }
    }

    /// The buffers every direction and time step reuses.
    private struct StepBuffers {
        var xw: [Float]       // [T, B, G·H]: X·W[d]ᵀ plus the additive biases, per direction
        var hr: [Float]       // [B, G·H]: H·R[d]ᵀ, then the gates
        var hState: [Float]   // [B, H]
        var cState: [Float]   // [B, H]
        var scratch: [Float]  // [B, H]: r ⊙ H for GRU
        var hr2: [Float]      // [B, H]: (r ⊙ H)·R_hᵀ for GRU
        var rowOf: [Int]      // [B]: time index per batch entry at this step (-1: past its length)

        init(_ s: Setup, cell: Cell) {
            let B = s.batch, H = s.hidden, GH = cell.gates * s.hidden
            xw = [Float](repeating: 0, count: s.seq * B * GH)
            hr = [Float](repeating: 0, count: B * GH)
            hState = [Float](repeating: 0, count: B * H)
            cState = [Float](repeating: 0, count: B * H)
            scratch = [Float](repeating: 0, count: B * H)
            hr2 = [Float](repeating: 0, count: B * H)
            rowOf = [Int](repeating: -1, count: B)
        }
    }

    /// Base addresses of the step buffers while the gates are computed.
    private struct StepPointers {
        let xw: UnsafeMutablePointer<Float>
        let hr: UnsafeMutablePointer<Float>
        let h: UnsafeMutablePointer<Float>
        let c: UnsafeMutablePointer<Float>
        let scratch: UnsafeMutablePointer<Float>
    }

    /// Direction `d` over the whole sequence: its hidden states go to Y, its last state to Y_h / Y_c.
    private static func runDirection(_ d: Int, _ s: Setup, _ o: StepOptions, _ buf: inout StepBuffers, _ out: inout Outputs) {
        projectInputs(d, s, o, into: &buf.xw)
        let rbh = o.cell == .gru ? gruCandidateRecurrentBias(d, s) : []
        loadInitialState(d, s, cell: o.cell, &buf)
        for step in 0..<s.seq {
            guard selectRows(step: step, d, s, &buf.rowOf) else { break }
            multiplyRecurrentWeights(d, s, o, &buf)
            computeGates(d, s, o, rbh: rbh, &buf)
            if o.cell == .gru { finishGRUStep(d, s, o, &buf) }
            storeHiddenState(d, s, buf, into: &out.y)
        }
        storeFinalState(d, s, cell: o.cell, buf, &out)
    }

    /// xw = X · W[d]ᵀ for every time step in one GEMM, plus the biases that are
    /// purely additive (all of Wb and Rb except GRU's candidate Rb with linear_before_reset).
    private static func projectInputs(_ d: Int, _ s: Setup, _ o: StepOptions, into xw: inout [Float]) {
        let T = s.seq, B = s.batch, H = s.hidden, I = s.inputSize
        let GH = o.cell.gates * H
        let wOff = d * GH * I, bOff = d * 2 * GH
        s.x.withUnsafeBufferPointer { xp in
            s.w.withUnsafeBufferPointer { wp in
                xw.withUnsafeMutableBufferPointer { op in
                    guard let xb = xp.baseAddress, let wb = wp.baseAddress, let ob = op.baseAddress else { return }
                    GEMM.sgemm(transA: false, transB: true, m: T * B, n: GH, k: I, a: xb, lda: I,
                               b: wb + wOff, ldb: I, c: ob, ldc: GH, threads: o.threads)
                }
            }
        }
        var addBias = [Float](repeating: 0, count: GH)
        for j in 0..<GH {
            addBias[j] = s.bias[bOff + j]
            let isGRUCandidate = o.cell == .gru && j >= 2 * H
            if !(isGRUCandidate && o.linearBeforeReset) { addBias[j] += s.bias[bOff + GH + j] }
        }
        for row in 0..<(T * B) { for j in 0..<GH { xw[row * GH + j] += addBias[j] } }
    }

    /// GRU's candidate recurrent bias Rb_h of direction `d`.
    private static func gruCandidateRecurrentBias(_ d: Int, _ s: Setup) -> [Float] {
        let H = s.hidden, GH = Cell.gru.gates * H
        let bOff = d * 2 * GH
        return Array(s.bias[(bOff + GH + 2 * H)..<(bOff + GH + 3 * H)])
    }

    /// The state before the first step: initial_h (and initial_c) of direction `d`.
    private static func loadInitialState(_ d: Int, _ s: Setup, cell: Cell, _ buf: inout StepBuffers) {
        let B = s.batch, H = s.hidden
        for i in 0..<(B * H) { buf.hState[i] = s.h0[d * B * H + i] }
        if cell == .lstm { for i in 0..<(B * H) { buf.cState[i] = s.c0[d * B * H + i] } }
    }

    /// The time index each batch entry reads at `step` (its own last step first
    /// for the reverse direction; -1 past its length); false when no entry is left.
    private static func selectRows(step: Int, _ d: Int, _ s: Setup, _ rowOf: inout [Int]) -> Bool {
        var any = false
        for b in 0..<s.batch {
            if step < s.lens[b] {
                rowOf[b] = s.reverse[d] ? s.lens[b] - 1 - step : step
                any = true
            } else {
                rowOf[b] = -1
            }
        }
        return any
    }

    /// hr = H · R[d]ᵀ (for GRU with linear_before_reset = 0, only the z and r gates).
    private static func multiplyRecurrentWeights(_ d: Int, _ s: Setup, _ o: StepOptions, _ buf: inout StepBuffers) {
        let B = s.batch, H = s.hidden
        let GH = o.cell.gates * H
        let rOff = d * GH * H
        let nR = o.cell == .gru && !o.linearBeforeReset ? 2 * H : GH
        buf.hState.withUnsafeBufferPointer { hp in
            s.rt.withUnsafeBufferPointer { rp in
                buf.hr.withUnsafeMutableBufferPointer { op in
                    guard let hb = hp.baseAddress, let rb = rp.baseAddress, let ob = op.baseAddress else { return }
                    // Shrinkwrap's kernel: its bits depend on nothing but the row, the column and H (not
                    // on the batch size or the split between threads).
                    GEMM.portable(transA: false, transB: false, m: B, n: nR, k: H, alpha: 1, a: hb, lda: H,
                                  b: rb + rOff, ldb: GH, beta: 0, c: ob, ldc: GH, threads: o.threads)
                }
            }
        }
    }

    /// The gates of every active batch entry from hr and xw: the new state for
    /// RNN and LSTM; for GRU the z and r gates and what the candidate needs.
    private static func computeGates(_ d: Int, _ s: Setup, _ o: StepOptions, rbh: [Float], _ buf: inout StepBuffers) {
        let acts = s.acts[d]
        let rowOf = buf.rowOf
        buf.xw.withUnsafeMutableBufferPointer { xwp in
        buf.hr.withUnsafeMutableBufferPointer { hrp in
        buf.hState.withUnsafeMutableBufferPointer { hp in
        buf.cState.withUnsafeMutableBufferPointer { cp in
        buf.scratch.withUnsafeMutableBufferPointer { sp in
            guard let xwb = xwp.baseAddress, let hrb = hrp.baseAddress, let hb = hp.baseAddress,
                  let cb = cp.baseAddress, let sb = sp.baseAddress else { return }
            let p = StepPointers(xw: xwb, hr: hrb, h: hb, c: cb, scratch: sb)
            switch o.cell {
            case .rnn: rnnCells(p, rowOf, s, acts)
            case .lstm: lstmCells(d, p, rowOf, s, o, acts)
            case .gru: gruGates(p, rowOf, s, o, acts, rbh: rbh)
            }
        }}}}}
    }

    /// Clamps `n` gate values to ±`bound` (the `clip` attribute; infinite: no clipping).
    @inline(__always)
    private static func clipped(_ g: UnsafeMutablePointer<Float>, _ n: Int, _ bound: Float) {
        if bound.isFinite { for i in 0..<n { g[i] = min(max(g[i], -bound), bound) } }
    }

    /// RNN: H = f(xw + hr), clipped before f.
    private static func rnnCells(_ p: StepPointers, _ rowOf: [Int], _ s: Setup, _ acts: [Activation]) {
        let B = s.batch, H = s.hidden, GH = H
        for b in 0..<B where rowOf[b] >= 0 {
            let g = p.hr + b * GH
            let xr = p.xw + (rowOf[b] * B + b) * GH
            for j in 0..<H { g[j] += xr[j] }
            clipped(g, H, s.clip)
            acts[0].apply(g, H)
            for j in 0..<H { p.h[b * H + j] = g[j] }
        }
    }

    /// LSTM: gates i, o, f, c (peepholes, input_forget, cell clip); the new C and H.
    private static func lstmCells(_ d: Int, _ p: StepPointers, _ rowOf: [Int], _ s: Setup, _ o: StepOptions,
                                  _ acts: [Activation]) {
        let B = s.batch, H = s.hidden, GH = Cell.lstm.gates * H
        let hasP = !s.peep.isEmpty
        let pOff = d * 3 * H
        for b in 0..<B where rowOf[b] >= 0 {
            let g = p.hr + b * GH
            let xr = p.xw + (rowOf[b] * B + b) * GH
            for j in 0..<GH { g[j] += xr[j] }
            let gi = g, go = g + H, gf = g + 2 * H, gc = g + 3 * H
            let cPrev = p.c + b * H
            if hasP {
                for j in 0..<H {
                    gi[j] += s.peep[pOff + j] * cPrev[j]
                    gf[j] += s.peep[pOff + 2 * H + j] * cPrev[j]
                }
            }
            clipped(gi, H, s.clip); acts[0].apply(gi, H)
            if o.inputForget {
                for j in 0..<H { gf[j] = 1 - gi[j] }
            } else {
                clipped(gf, H, s.clip); acts[0].apply(gf, H)
            }
            clipped(gc, H, s.clip); acts[1].apply(gc, H)
            for j in 0..<H { cPrev[j] = gf[j] * cPrev[j] + gi[j] * gc[j] }
            if s.cellClip.isFinite { for j in 0..<H { cPrev[j] = min(max(cPrev[j], -s.cellClip), s.cellClip) } }
            if hasP { for j in 0..<H { go[j] += s.peep[pOff + H + j] * cPrev[j] } }
            clipped(go, H, s.clip); acts[0].apply(go, H)
            // Reuse the cell-gate slot for h(C).
            for j in 0..<H { gc[j] = cPrev[j] }
            acts[2].apply(gc, H)
            for j in 0..<H { p.h[b * H + j] = go[j] * gc[j] }
        }
    }

    /// GRU, first half: the z and r gates; with linear_before_reset the
    /// candidate's pre-activation, else r ⊙ H in the scratch buffer.
    private static func gruGates(_ p: StepPointers, _ rowOf: [Int], _ s: Setup, _ o: StepOptions, _ acts: [Activation],
                                 rbh: [Float]) {
        let B = s.batch, H = s.hidden, GH = Cell.gru.gates * H
        for b in 0..<B where rowOf[b] >= 0 {
            let g = p.hr + b * GH
            let xr = p.xw + (rowOf[b] * B + b) * GH
            for j in 0..<(2 * H) { g[j] += xr[j] }
            clipped(g, 2 * H, s.clip)
            acts[0].apply(g, 2 * H)
            let hPrev = p.h + b * H
            if o.linearBeforeReset {
                let gh = g + 2 * H
                for j in 0..<H { gh[j] = xr[2 * H + j] + g[H + j] * (gh[j] + rbh[j]) }
            } else {
                for j in 0..<H { p.scratch[b * H + j] = g[H + j] * hPrev[j] }
            }
        }
    }

    /// GRU, second half: (without linear_before_reset) the candidate's
    /// pre-activation from (r ⊙ H) · R_hᵀ, then the candidate and the new H.
    private static func finishGRUStep(_ d: Int, _ s: Setup, _ o: StepOptions, _ buf: inout StepBuffers) {
        let B = s.batch, H = s.hidden
        let GH = Cell.gru.gates * H
        let rOff = d * GH * H
        let rowOf = buf.rowOf
        if !o.linearBeforeReset {
            // (r ⊙ H) · R_hᵀ for all rows, then the candidate.
            buf.scratch.withUnsafeBufferPointer { sp in
                s.r.withUnsafeBufferPointer { rp in
                    buf.hr2.withUnsafeMutableBufferPointer { op in
                        guard let sb = sp.baseAddress, let rb = rp.baseAddress, let ob = op.baseAddress else { return }
                        GEMM.sgemm(transA: false, transB: true, m: B, n: H, k: H, a: sb, lda: H,
                                   b: rb + rOff + 2 * H * H, ldb: H, c: ob, ldc: H, threads: o.threads)
                    }
                }
            }
            for b in 0..<B where rowOf[b] >= 0 {
                let xr = (rowOf[b] * B + b) * GH
                for j in 0..<H { buf.hr[b * GH + 2 * H + j] = buf.xw[xr + 2 * H + j] + buf.hr2[b * H + j] }
            }
        }
        let candidate = s.acts[d][1]
        buf.hr.withUnsafeMutableBufferPointer { hrp in
            buf.hState.withUnsafeMutableBufferPointer { hp in
                guard let hrb = hrp.baseAddress, let hb = hp.baseAddress else { return }
                for b in 0..<B where rowOf[b] >= 0 {
                    let g = hrb + b * GH
                    let gh = g + 2 * H
                    clipped(gh, H, s.clip)
                    candidate.apply(gh, H)
                    for j in 0..<H {
                        let z = g[j]
                        hb[b * H + j] = (1 - z) * gh[j] + z * hb[b * H + j]
                    }
                }
            }
        }
    }

    /// Copies the new hidden state of every active batch entry into Y at its time index.
    private static func storeHiddenState(_ d: Int, _ s: Setup, _ buf: StepBuffers, into y: inout [Float]) {
        let B = s.batch, H = s.hidden, D = s.dirs
        for b in 0..<B where buf.rowOf[b] >= 0 {
            let dst = ((buf.rowOf[b] * D + d) * B + b) * H
            for j in 0..<H { y[dst + j] = buf.hState[b * H + j] }
        }
    }

    /// Y_h (and Y_c) of direction `d`: the state after its last step.
    private static func storeFinalState(_ d: Int, _ s: Setup, cell: Cell, _ buf: StepBuffers, _ out: inout Outputs) {
        let B = s.batch, H = s.hidden
        for i in 0..<(B * H) { out.yh[d * B * H + i] = buf.hState[i] }
        if cell == .lstm { for i in 0..<(B * H) { out.yc[d * B * H + i] = buf.cState[i] } }
    }

    /// The output tensors: in layout 1 batch-major, rounded to the input's dtype.
    private static func outputTensors(_ out: Outputs, _ s: Setup, cell: Cell) -> [Tensor] {
        let T = s.seq, B = s.batch, H = s.hidden, D = s.dirs
        var y = out.y, yh = out.yh, yc = out.yc
        var yShape = [T, D, B, H], hShape = [D, B, H]
        if s.layout == 1 {
            // [T, D, B, H] → [B, T, D, H]: batched 2-D transpose of [T·D] × [B·H] rows of H.
            var batchMajor = [Float](repeating: 0, count: y.count)
            for t in 0..<T { for dd in 0..<D { for b in 0..<B { for j in 0..<H {
                batchMajor[((b * T + t) * D + dd) * H + j] = y[((t * D + dd) * B + b) * H + j]
            } } } }
            y = batchMajor
            yh = swapFirstTwo(yh, D, B, H)
            yc = swapFirstTwo(yc, D, B, H)
            yShape = [B, T, D, H]
            hShape = [B, D, H]
        }
        let dt = s.dtype
        var outs = [Tensor(dtype: dt, shape: yShape, storage: .float(dt.rounded(y))),
                    Tensor(dtype: dt, shape: hShape, storage: .float(dt.rounded(yh)))]
        if cell == .lstm { outs.append(Tensor(dtype: dt, shape: hShape, storage: .float(dt.rounded(yc)))) }
        return outs
    }
}
