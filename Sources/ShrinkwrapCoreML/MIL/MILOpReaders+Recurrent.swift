import ShrinkwrapIR

/// lstm, gru and rnn as the IR's (ONNX) LSTM / GRU / RNN.
///
/// MIL lays a recurrent layer out as x [s, b, I], states [b, D·H], weights
/// [G·H, I] per direction, one bias [G·H] (input and hidden biases summed),
/// outputs [s, b, D·H] (or [1, b, D·H] for the last step), [b, D·H] states.
/// The IR's: W [D, G·H, I], R [D, G·H, H], B [D, 2·G·H], states [D, b, H],
/// Y [s, D, b, H]. Gate blocks are reordered by nodes on the weight constants
/// (which keep their encoding; static folding computes the result):
/// - LSTM: MIL [input, forget, output, cell] → ONNX [i, o, f, c]; peepholes [i, f, o] → [i, o, f];
/// - GRU: MIL [reset, output (new), update] → ONNX [z, r, h]; MIL applies the reset
///   gate to the hidden product only, ONNX's linear_before_reset = 1 with the bias as the input bias.
extension MILOpReaders {
    static let recurrent: [String: MILOpReader] = [
        "lstm": { r in try r.recurrent(.lstm) },
        "gru": { r in try r.recurrent(.gru) },
        "rnn": { r in try r.recurrent(.rnn) },
    ]
}

enum MILCell {
    case lstm, gru, rnn

    var gates: Int { self == .lstm ? 4 : self == .gru ? 3 : 1 }
    var op: String { self == .lstm ? "LSTM" : self == .gru ? "GRU" : "RNN" }
    /// ONNX gate k is MIL gate order[k].
    var order: [Int] { self == .lstm ? [0, 2, 1, 3] : self == .gru ? [2, 0, 1] : [0] }
}

extension MILReader {
    /// MIL activation names → the IR's.
    func activation(_ key: String, _ d: String) throws -> String {
        let name = try string(key, d)
        guard let ir = ["sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"][name] else { throw refuse("\(key) '\(name)'") }
        return ir
    }

    /// Rows of `v` ([G·H, …]) split into G gate blocks and put back in ONNX order.
    mutating func reorderedGates(_ v: String, _ cell: MILCell, order: [Int]? = nil) throws -> String {
        let order = order ?? cell.order
        guard order.count > 1 else { return v }
        let parts = (0..<order.count).map { _ in temp("gate") }
        node("Split", [v], parts, ["axis": .int(0), "num_outputs": .int(order.count)])
        let y = temp("reordered")
        node("Concat", order.map { parts[$0] }, [y], ["axis": .int(0)])
        return y
    }

    /// `v` with a leading axis of 1.
    mutating func leadingAxis(_ v: String) -> String {
        let y = temp("unsqueezed")
        node("Unsqueeze", [v, ints([0], "\(out())_axis0")], [y])
        return y
    }

    /// Concat along axis 0 (one value: itself).
    mutating func stacked(_ values: [String]) -> String {
        guard values.count > 1 else { return values[0] }
        let y = temp("directions")
        node("Concat", values, [y], ["axis": .int(0)])
        return y
    }

    /// One direction's W, R, B (and LSTM peepholes), in the IR's layout.
    mutating func directionWeights(_ cell: MILCell, suffix: String, hidden: Int) throws -> (w: String, r: String, b: String, p: String?) {
        let w = leadingAxis(try reorderedGates(try x("weight_ih" + suffix), cell))
        let r = leadingAxis(try reorderedGates(try x("weight_hh" + suffix), cell))
        let g = cell.gates * hidden
        let bias = try opt("bias" + suffix).map { try reorderedGates($0, cell) } ?? filled(0, count: g, "bias\(suffix)")
        let b = temp("bias")
        node("Concat", [bias, filled(0, count: g, "hidden_bias\(suffix)")], [b], ["axis": .int(0)])
        var p: String? = nil
        if cell == .lstm, let peep = try opt("peephole" + suffix) { p = leadingAxis(try reorderedGates(peep, cell, order: [0, 2, 1])) }
        return (w, r, leadingAxis(b), p)
    }

    /// [b, D·H] → [D, b, H].
    mutating func stateIn(_ v: String, directions: Int, hidden: Int) throws -> String {
        let s = try needShape(v)
        guard s.count == 2, s[1] == directions * hidden else { throw bad("state '\(v)' of shape \(s), expected [batch, \(directions * hidden)]") }
        let r = temp("state"), t = temp("state_t")
        node("Reshape", [v, ints([s[0], directions, hidden], "\(out())_state_shape")], [r])
        node("Transpose", [r], [t], ["perm": .ints([1, 0, 2])])
        return t
    }

    /// [D, b, H] → [b, D·H] named `name` (with a leading 1 when `step`).
    mutating func stateOut(_ v: String, _ name: String, batch: Int, width: Int, step: Bool) {
        let t = temp("state_out")
        node("Transpose", [v], [t], ["perm": .ints([1, 0, 2])])
        node("Reshape", [t, ints(step ? [1, batch, width] : [batch, width], "\(name)_shape")], [name])
    }

    mutating func recurrent(_ cell: MILCell) throws {
        let x = try self.x()
        let xs = try needShape(x)
        guard xs.count == 3 else { throw bad("input of shape \(xs), expected [seq, batch, input]") }
        let direction = try string("direction", "forward")
        guard ["forward", "reverse", "bidirectional"].contains(direction), cell == .lstm || direction != "bidirectional" else {
            throw refuse("direction '\(direction)'")
        }
        guard let ws = shape(try self.x("weight_hh")), ws.count == 2, ws[0] == cell.gates * ws[1] else { throw bad("weight_hh without a [G·H, H] shape") }
        let hidden = ws[1], dirs = direction == "bidirectional" ? 2 : 1
        if cell == .gru, try bool("reset_after", false) || opt("input_bias") != nil { throw refuse("gru with reset_after / input_bias") }
        var attributes: [String: Attribute] = ["hidden_size": .int(hidden), "direction": .string(direction)]
        switch cell {
        case .lstm:
            let acts = [try activation("recurrent_activation", "sigmoid"), try activation("cell_activation", "tanh"), try activation("activation", "tanh")]
            attributes["activations"] = .strings(Array(Array(repeating: acts, count: dirs).joined()))
            if let clip = try param("clip")?.floatValues?.first { attributes["clip"] = .float(clip) }
        case .gru:
            attributes["activations"] = .strings([try activation("recurrent_activation", "sigmoid"), try activation("activation", "tanh")])
            attributes["linear_before_reset"] = .int(1)
        case .rnn:
            attributes["activations"] = .strings([try activation("activation", "tanh")])
        }
        var parts = [try directionWeights(cell, suffix: "", hidden: hidden)]
        if dirs == 2 { parts.append(try directionWeights(cell, suffix: "_back", hidden: hidden)) }
        var inputs = [x, stacked(parts.map(\.w)), stacked(parts.map(\.r)), stacked(parts.map(\.b)), ""]
        inputs.append(try stateIn(try self.x("initial_h"), directions: dirs, hidden: hidden))
        if cell == .lstm {
            inputs.append(try stateIn(try self.x("initial_c"), directions: dirs, hidden: hidden))
            let peepholes = parts.compactMap(\.p)
            if peepholes.count == dirs { inputs.append(stacked(peepholes)) }
        }
        let y = temp("y"), yh = temp("y_h"), yc = temp("y_c")
        node(cell.op, inputs, cell == .lstm ? [y, yh, yc] : [y, yh], attributes)
        let batch = xs[1], width = dirs * hidden
        if try bool("output_sequence", false) {
            let t = temp("y_t")
            node("Transpose", [y], [t], ["perm": .ints([0, 2, 1, 3])])
            node("Reshape", [t, ints([xs[0], batch, width], "\(out())_shape")], [out()])
        } else {
            stateOut(yh, out(), batch: batch, width: width, step: true)
        }
        if op.outputs.count > 1 { stateOut(yh, out(1), batch: batch, width: width, step: false) }
        if cell == .lstm, op.outputs.count > 2 { stateOut(yc, out(2), batch: batch, width: width, step: false) }
    }
}
