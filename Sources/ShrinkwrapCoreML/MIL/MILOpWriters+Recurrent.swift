// ONNX LSTM / GRU / RNN → MIL lstm / gru / rnn.
import ShrinkwrapIR

/// Facts from coremltools mil/ops/defs/iOS15/recurrent.py (and iOS17's, which
/// only adds fp16; before iOS 17 the three ops compute in fp32, so a float16
/// program casts around them):
/// - x is [S, B, I]; initial states and final states are [B, D·H] (forward
///   half first); the sequence output is [S, B, D·H] (output_sequence) —
///   both directions aligned with the input steps, as torch's
///   (frontend/torch/ops.py `_add_mil_lstm` maps them 1:1 to torch's output).
/// - lstm's weights and bias are in gate order [i, f, o, z] (ONNX: i, o, f, c),
///   bias = input bias + recurrent bias; bidirectional is one op (`*_back` weights).
/// - gru's are [r, o, z] (ONNX: z, r, h) with ONE bias and
///   o_t = act(W_io x + r ⊙ (W_ho h) + b_o), per the torch frontend's
///   `_add_gru_layer`: ONNX's linear_before_reset = 1 with a zero recurrent
///   bias on the h gate. Forward or reverse only: bidirectional is two ops.
/// - rnn: h_t = act(W_ih x + W_hh h + b), forward or reverse.
/// Weights are reordered: float weights are written in the op's type; a
/// compressed weight keeps its encoding (gates cut with `rows` and stacked in
/// MIL's order with `stackingRows`), or the op is refused saying why.
extension MILOpWriters {
    struct RecurrentForm {
        let op: String
        let gates: Int
        /// MIL gate k is ONNX gate order[k].
        let order: [Int]
        /// MIL parameter of each ONNX activation (ONNX order f, g, h).
        let activationKeys: [String]
        let defaults: [String]
    }

    static let recurrentForms: [String: RecurrentForm] = [
        "LSTM": RecurrentForm(op: "lstm", gates: 4, order: [0, 2, 1, 3], activationKeys: ["recurrent_activation", "cell_activation", "activation"],
                              defaults: ["Sigmoid", "Tanh", "Tanh"]),
        "GRU": RecurrentForm(op: "gru", gates: 3, order: [1, 2, 0], activationKeys: ["recurrent_activation", "activation"], defaults: ["Sigmoid", "Tanh"]),
        "RNN": RecurrentForm(op: "rnn", gates: 1, order: [0], activationKeys: ["activation"], defaults: ["Tanh"]),
    ]

    struct RecurrentShape {
        var seq: Int, batch: Int, input: Int, hidden: Int, dirs: Int
        var batchFirst: Bool
        /// The type the MIL op computes in.
        var type: MILDataType
    }

    static let recurrent: Writer = { w, n in
        guard let form = recurrentForms[n.opType] else { throw MILWriterError("no MIL op") }
        let s = try recurrentShape(w, n, form)
        try checkRecurrentAttributes(w, n, s)
        let acts = try recurrentActivations(n, form, dirs: s.dirs)
        let x = try recurrentSequence(&w, n, s)
        let h0 = try recurrentState(&w, n, 5, s)
        let needY = !n.outputs.isEmpty && !n.outputs[0].isEmpty && w.isRead(n.outputs[0])
        let base = n.outputs.first(where: { !$0.isEmpty }) ?? n.name
        let yType = MILTensorType(dataType: s.type, shape: [needY ? s.seq : 1, s.batch, s.dirs * s.hidden])
        let hType = MILTensorType(dataType: s.type, shape: [s.batch, s.dirs * s.hidden])
        var args: [(String, MILArgument)] = [("x", .value(x)), ("initial_h", .value(h0))]
        let results: [String]
        if n.opType == "LSTM" {
            args.append(("initial_c", .value(try recurrentState(&w, n, 6, s))))
            args += try recurrentWeights(&w, n, form, s, dir: 0, suffix: "")
            if s.dirs == 2 { args += try recurrentWeights(&w, n, form, s, dir: 1, suffix: "_back") }
            let direction = s.dirs == 2 ? "bidirectional" : n.string("direction", "forward")
            args += try recurrentParameters(&w, n, form, acts, direction: direction, sequence: needY)
            results = w.builder.op("lstm", args, outputs: [(w.builder.fresh(base + "_y"), yType), (w.builder.fresh(base + "_h"), hType),
                                                          (w.builder.fresh(base + "_c"), hType)])
        } else {
            results = try recurrentPerDirection(&w, n, form, s, acts, x: x, h0: h0, needY: needY)
        }
        try recurrentOutput(&w, n, 0, results[0], s, sequence: true)
        for k in 1..<results.count { try recurrentOutput(&w, n, k, results[k], s, sequence: false) }
    }

    /// GRU and RNN: one op per direction; the two directions' outputs concatenated as lstm's are.
    static func recurrentPerDirection(_ w: inout MILWriter, _ n: Node, _ form: RecurrentForm, _ s: RecurrentShape, _ acts: [String],
                                      x: String, h0: String, needY: Bool) throws -> [String] {
        let base = n.outputs.first(where: { !$0.isEmpty }) ?? n.name
        let yType = MILTensorType(dataType: s.type, shape: [needY ? s.seq : 1, s.batch, s.hidden])
        let hType = MILTensorType(dataType: s.type, shape: [s.batch, s.hidden])
        var states = [h0]
        if s.dirs == 2 {
            states = w.builder.op("split", [("x", .value(h0)), ("split_sizes", .value(w.ints(n, "h0_split_sizes", [s.hidden, s.hidden]))),
                                            ("axis", .value(w.int(n, "h0_split_axis", 1)))],
                                  outputs: [(w.builder.fresh(base + "_h0_forward"), hType), (w.builder.fresh(base + "_h0_reverse"), hType)])
        }
        var ys: [String] = [], hs: [String] = []
        for d in 0..<s.dirs {
            let direction = s.dirs == 2 ? (d == 0 ? "forward" : "reverse") : n.string("direction", "forward")
            var args: [(String, MILArgument)] = [("x", .value(x)), ("initial_h", .value(states[d]))]
            args += try recurrentWeights(&w, n, form, s, dir: d, suffix: "")
            args += try recurrentParameters(&w, n, form, acts, direction: direction, sequence: needY)
            let r = w.builder.op(form.op, args, outputs: [(w.builder.fresh(base + "_y"), yType), (w.builder.fresh(base + "_h"), hType)])
            ys.append(r[0]); hs.append(r[1])
        }
        guard s.dirs == 2 else { return [ys[0], hs[0]] }
        let y = w.builder.op1("concat", [("values", .values(ys)), ("axis", .value(w.int(n, "y_concat_axis", 2))),
                                         ("interleave", .value(w.bool(n, "y_concat_interleave", false)))],
                              output: w.builder.fresh(base + "_y"), MILTensorType(dataType: s.type, shape: [needY ? s.seq : 1, s.batch, 2 * s.hidden]))
        let h = w.builder.op1("concat", [("values", .values(hs)), ("axis", .value(w.int(n, "h_concat_axis", 1))),
                                         ("interleave", .value(w.bool(n, "h_concat_interleave", false)))],
                              output: w.builder.fresh(base + "_h"), MILTensorType(dataType: s.type, shape: [s.batch, 2 * s.hidden]))
        return [y, h]
    }

    static func recurrentShape(_ w: MILWriter, _ n: Node, _ form: RecurrentForm) throws -> RecurrentShape {
        let x = try input(n, 0), wN = try input(n, 1), rN = try input(n, 2)
        guard w.graph.isConstant(wN), w.graph.isConstant(rN) else { throw MILWriterError("W and R must be constants (MIL's weights are)") }
        let xs = try w.shape(x), ws = try w.shape(wN), rs = try w.shape(rN)
        guard xs.count == 3, ws.count == 3, rs.count == 3, ws[1] % form.gates == 0 else { throw MILWriterError("X \(xs), W \(ws), R \(rs)") }
        let batchFirst = n.int("layout", 0) != 0
        let hidden = ws[1] / form.gates
        let (seq, batch) = batchFirst ? (xs[1], xs[0]) : (xs[0], xs[1])
        guard hidden > 0, ws[2] == xs[2], rs == [ws[0], ws[1], hidden], seq > 0, batch > 0 else {
            throw MILWriterError("W \(ws) / R \(rs) for input \(xs)")
        }
        let direction = n.string("direction", "forward")
        let dirs = direction == "bidirectional" ? 2 : 1
        guard ["forward", "reverse", "bidirectional"].contains(direction), ws[0] == dirs else {
            throw MILWriterError("direction \(direction) with \(ws[0]) weight sets")
        }
        let type: MILDataType = w.floatType == .float16 && w.target < .iOS17 ? .float32 : w.floatType
        return RecurrentShape(seq: seq, batch: batch, input: xs[2], hidden: hidden, dirs: dirs, batchFirst: batchFirst, type: type)
    }

    /// What the MIL ops cannot express.
    static func checkRecurrentAttributes(_ w: MILWriter, _ n: Node, _ s: RecurrentShape) throws {
        // ONNX clips every activation input; MIL's lstm documents a clip of the cell gate only.
        if n.attributes["clip"] != nil { throw MILWriterError("clip (MIL's lstm clips the cell gate, ONNX every gate input)") }
        if n.int("input_forget", 0) != 0 { throw MILWriterError("input_forget (coupled gates)") }
        if let l = n.input(4), !l.isEmpty {
            guard let lens = w.constInts(l), lens.allSatisfy({ $0 == s.seq }) else {
                throw MILWriterError("sequence_lens shorter than the sequence (MIL runs every sequence to its full length)")
            }
        }
        if n.opType == "LSTM", let p = n.input(7), !p.isEmpty {
            guard let c = w.graph.constant(named: p), c.encoding.decoded().doubles.allSatisfy({ $0 == 0 }) else {
                throw MILWriterError("peepholes (MIL's lstm documents no peephole formula to match ONNX's)")
            }
        }
        if let why = recurrentCellRefusal(n, constant: { w.graph.constant(named: $0)?.encoding }) { throw MILWriterError(why) }
    }

    /// Why MIL's gru / rnn cannot compute GRU / RNN node `n` as its attributes and bias ask (nil when
    /// they can): the writer throws it, and MILLowering unrolls the nodes it names.
    static func recurrentCellRefusal(_ n: Node, constant: (String) -> WeightEncoding?) -> String? {
        guard n.opType == "GRU" || n.opType == "RNN", let form = recurrentForms[n.opType] else { return nil }
        if n.opType == "GRU" && n.int("linear_before_reset", 0) == 0 {
            return "linear_before_reset = 0 (MIL's gru resets after the recurrence matrix: r ⊙ (W_h h))"
        }
        let dirs = n.string("direction", "forward") == "bidirectional" ? 2 : 1
        do {
            _ = try recurrentActivations(n, form, dirs: dirs)
        } catch {
            return (error as? MILWriterError)?.reason ?? "\(error)"
        }
        // MIL's gru adds its h-gate bias outside r ⊙ (W_h h): ONNX's Rb_h must be zero.
        if n.opType == "GRU", let b = n.input(3), let v = constant(b)?.decoded().floats, v.count % (6 * dirs) == 0 {
            let h = v.count / (6 * dirs)
            if (0..<dirs).contains(where: { d in v[(d * 6 * h + 5 * h)..<((d + 1) * 6 * h)].contains { $0 != 0 } }) {
                return "a recurrent bias on the h gate (MIL's gru adds it outside the reset)"
            }
        }
        return nil
    }

    /// MIL activation names per ONNX activation slot; both directions must agree (MIL has one set).
    static func recurrentActivations(_ n: Node, _ form: RecurrentForm, dirs: Int) throws -> [String] {
        var names = form.defaults + (dirs == 2 ? form.defaults : [])
        if case .strings(let v)? = n.attributes["activations"] { names = v }
        guard names.count == form.defaults.count * dirs else { throw MILWriterError("\(names.count) activations for \(dirs) direction(s)") }
        let known = ["sigmoid": "sigmoid", "tanh": "tanh", "relu": "relu"]
        let mapped = try names.map { name -> String in
            guard let m = known[name.lowercased()] else { throw MILWriterError("activation \(name) (MIL's parameters for it are not documented)") }
            return m
        }
        let k = form.defaults.count
        guard dirs == 1 || Array(mapped[..<k]) == Array(mapped[k...]) else { throw MILWriterError("different activations per direction") }
        return Array(mapped[..<k])
    }

    static func recurrentParameters(_ w: inout MILWriter, _ n: Node, _ form: RecurrentForm, _ acts: [String], direction: String,
                                    sequence: Bool) throws -> [(String, MILArgument)] {
        var args: [(String, MILArgument)] = [("direction", .value(w.string(n, "direction", direction))),
                                             ("output_sequence", .value(w.bool(n, "output_sequence", sequence)))]
        for (key, act) in zip(form.activationKeys, acts) { args.append((key, .value(w.string(n, key, act)))) }
        return args
    }

    /// weight_ih, weight_hh and bias of direction `dir`, gates in MIL's order.
    static func recurrentWeights(_ w: inout MILWriter, _ n: Node, _ form: RecurrentForm, _ s: RecurrentShape, dir: Int,
                                 suffix: String) throws -> [(String, MILArgument)] {
        let base = (n.outputs.first(where: { !$0.isEmpty }) ?? n.name) + (dir == 1 ? "_reverse" : "")
        func matrix(_ k: Int, cols: Int) throws -> [Float] {
            guard let c = w.graph.constant(named: try input(n, k)), let v = c.encoding.decoded().floats else { throw MILWriterError("input \(k) is not a float constant") }
            let block = s.hidden * cols, per = form.gates * block
            guard v.count == s.dirs * per else { throw MILWriterError("input \(k) has \(v.count) values") }
            return form.order.flatMap { g in v[(dir * per + g * block)..<(dir * per + (g + 1) * block)] }
        }
        /// A compressed weight keeps its encoding: direction `dir`'s rows, gates cut and stacked in MIL's order.
        func weight(_ k: Int, cols: Int, name: String) throws -> String {
            let shape = [form.gates * s.hidden, cols]
            guard let c = w.graph.constant(named: try input(n, k)), c.encoding.isCompressed else {
                return recurrentConst(&w, name, try matrix(k, cols: cols), shape, s.type)
            }
            guard s.type == w.floatType else {
                throw MILWriterError("compressed weight '\(c.name)': the recurrence computes in float32 inside a float16 program before iOS 17 (use --target iOS17)")
            }
            let per = form.gates * s.hidden
            do {
                // [dirs, gates·H, cols]: this direction's slice (axis 0), its leading 1 dropped, then the gates.
                let flat = try c.encoding.rows(dir..<(dir + 1)).reshaped([per, cols])
                let parts = try form.order.map { g in try flat.rows((g * s.hidden)..<((g + 1) * s.hidden)) }
                return try MILWeights.write(Constant(name: name, encoding: try WeightEncoding.stackingRows(parts)), in: &w)
            } catch let e as WeightLayoutError {
                throw MILWriterError("compressed weight '\(c.name)' cannot keep its encoding when its gates are reordered (\(e.reason)); compress it per tensor or per output channel")
            }
        }
        var args: [(String, MILArgument)] = [
            ("weight_ih" + suffix, .value(try weight(1, cols: s.input, name: base + "_weight_ih"))),
            ("weight_hh" + suffix, .value(try weight(2, cols: s.hidden, name: base + "_weight_hh"))),
        ]
        if let b = n.input(3), !b.isEmpty {
            guard let c = w.graph.constant(named: b), let v = c.encoding.decoded().floats, v.count == s.dirs * 2 * form.gates * s.hidden else {
                throw MILWriterError("B must be a float constant of shape [\(s.dirs), \(2 * form.gates * s.hidden)]")
            }
            let H = s.hidden, off = dir * 2 * form.gates * H
            func gate(_ g: Int, recurrent: Bool) -> ArraySlice<Float> {
                let start = off + (recurrent ? form.gates * H : 0) + g * H
                return v[start..<(start + H)]
            }
            var bias: [Float] = []
            // (A GRU's Rb_h is zero: checkRecurrentAttributes refused the node otherwise.)
            for g in form.order { bias += zip(gate(g, recurrent: false), gate(g, recurrent: true)).map { $0 + $1 } }
            args.append(("bias" + suffix, .value(recurrentConst(&w, base + "_bias", bias, [form.gates * H], s.type))))
        }
        return args
    }

    static func recurrentConst(_ w: inout MILWriter, _ name: String, _ v: [Float], _ shape: [Int], _ dt: MILDataType) -> String {
        w.builder.const(name, dt == .float16 ? .float16(v.map(Half.bits(from:)), shape: shape) : .float32(v, shape: shape))
    }

    /// X as MIL's [S, B, I] in the op's type.
    static func recurrentSequence(_ w: inout MILWriter, _ n: Node, _ s: RecurrentShape) throws -> String {
        var v = try w.value(try input(n, 0))
        let base = (n.outputs.first(where: { !$0.isEmpty }) ?? n.name) + "_x"
        if s.batchFirst {
            v = w.builder.op1("transpose", [("x", .value(v)), ("perm", .value(w.ints(n, "x_perm", [1, 0, 2])))], output: w.builder.fresh(base),
                              MILTensorType(dataType: try w.type(of: v).dataType, shape: [s.seq, s.batch, s.input]))
        }
        if try w.type(of: v).dataType != s.type { v = w.cast(v, to: s.type, base: base + "_cast") }
        return v
    }

    /// Initial state input `k` ([D, B, H], batch-first [B, D, H]) as MIL's [B, D·H]; zeros when absent.
    static func recurrentState(_ w: inout MILWriter, _ n: Node, _ k: Int, _ s: RecurrentShape) throws -> String {
        let base = (n.outputs.first(where: { !$0.isEmpty }) ?? n.name) + (k == 5 ? "_h0" : "_c0")
        let target = [s.batch, s.dirs * s.hidden]
        guard let irName = n.input(k), !irName.isEmpty else {
            return recurrentConst(&w, base, [Float](repeating: 0, count: target.reduce(1, *)), target, s.type)
        }
        let expected = s.batchFirst ? [s.batch, s.dirs, s.hidden] : [s.dirs, s.batch, s.hidden]
        guard try w.shape(irName) == expected else { throw MILWriterError("input \(k) of shape \(try w.shape(irName)), not \(expected)") }
        var v = try w.value(irName)
        if !s.batchFirst && s.dirs == 2 && s.batch > 1 {
            v = w.builder.op1("transpose", [("x", .value(v)), ("perm", .value(w.ints(n, "state_perm", [1, 0, 2])))], output: w.builder.fresh(base + "_bdh"),
                              MILTensorType(dataType: try w.type(of: v).dataType, shape: [s.batch, s.dirs, s.hidden]))
        }
        v = try w.reshaped(v, to: target, base: base)
        if try w.type(of: v).dataType != s.type { v = w.cast(v, to: s.type, base: base + "_cast") }
        return v
    }

    /// Output `k` from the MIL result `v` ([S, B, D·H] or [B, D·H]) in ONNX's
    /// layout: Y [S, D, B, H] (batch-first [B, S, D, H]), Y_h / Y_c [D, B, H] (batch-first [B, D, H]).
    static func recurrentOutput(_ w: inout MILWriter, _ n: Node, _ k: Int, _ v: String, _ s: RecurrentShape, sequence: Bool) throws {
        guard k < n.outputs.count, !n.outputs[k].isEmpty, w.isRead(n.outputs[k]) else { return }
        let out = n.outputs[k]
        let mid = sequence ? [s.seq, s.batch, s.dirs, s.hidden] : [s.batch, s.dirs, s.hidden]
        let perm = sequence ? (s.batchFirst ? [1, 0, 2, 3] : [0, 2, 1, 3]) : (s.batchFirst ? [0, 1, 2] : [1, 0, 2])
        let final = perm.map { mid[$0] }
        let target = try w.computeType(out)
        guard target.shape == final else { throw MILWriterError("output \(k) of shape \(target.shape), not \(final)") }
        // Moving axes of size 1 only is a reshape.
        let moved = perm.filter { mid[$0] != 1 }
        let transpose = moved != moved.sorted()
        var steps: [(String, [(String, MILArgument)], [Int], MILDataType)] = []
        steps.append(("reshape", [("shape", .value(w.ints(n, "out\(k)_shape", transpose ? mid : final)))], transpose ? mid : final, s.type))
        if transpose { steps.append(("transpose", [("perm", .value(w.ints(n, "out\(k)_perm", perm)))], final, s.type)) }
        if target.dataType != s.type {
            steps.append(("cast", [("dtype", .value(w.string(n, "out\(k)_dtype", target.dataType == .float16 ? "fp16" : "fp32")))], final, target.dataType))
        }
        var cur = v
        for (j, (op, args, shape, dt)) in steps.enumerated() {
            let name = j == steps.count - 1 ? w.define(out) : w.builder.fresh(out + "_" + op)
            cur = w.builder.op1(op, [("x", .value(cur))] + args, output: name, MILTensorType(dataType: dt, shape: shape))
        }
    }
}
