import ShrinkwrapIR

/// SimpleRNN, GRU and LSTM as the IR's RNN, GRU and LSTM (ONNX semantics, time-major
/// layout between Transposes), Bidirectional as one bidirectional op, TimeDistributed.
extension KerasLayers {
    static let recurrent: [String: Translator] = [
        "SimpleRNN": { c, call in try rnn(&c, call, wrapper: nil) },
        "GRU": { c, call in try rnn(&c, call, wrapper: nil) },
        "LSTM": { c, call in try rnn(&c, call, wrapper: nil) },
        "Bidirectional": bidirectional,
        "TimeDistributed": timeDistributed,
    ]

    struct Cell {
        let op: String
        /// Keras' gate blocks in the IR's order (LSTM: Keras i f c o → i o f c).
        let gateOrder: [Int]
        var gates: Int { gateOrder.count }

        static func of(_ className: String) -> Cell? {
            switch className {
            case "LSTM": return Cell(op: "LSTM", gateOrder: [0, 3, 1, 2])
            case "GRU": return Cell(op: "GRU", gateOrder: [0, 1, 2])
            case "SimpleRNN": return Cell(op: "RNN", gateOrder: [0])
            default: return nil
            }
        }
    }

    /// Keras activation name → the recurrent op's function, with its alpha and beta.
    static func recurrentActivation(_ c: KerasContext, _ call: KerasCall, _ name: String) throws -> (String, Float?, Float?) {
        switch name {
        case "sigmoid": return ("Sigmoid", nil, nil)
        case "tanh": return ("Tanh", nil, nil)
        case "relu": return ("Relu", nil, nil)
        case "softsign": return ("Softsign", nil, nil)
        case "hard_sigmoid": return c.isKeras3 ? ("HardSigmoid", 1.0 / 6, 0.5) : ("HardSigmoid", 0.2, 0.5)
        case "linear": return ("Affine", 1, 0)
        default: throw c.unsupported(call, "recurrent activation '\(name)'")
        }
    }

    /// One direction's W [G·H, F], R [G·H, H] and B [2·G·H] from Keras' kernel [F, G·H], recurrent kernel [H, G·H] and bias.
    static func directionWeights(_ c: KerasContext, _ call: KerasCall, _ cell: Cell, _ w: ArraySlice<Tensor>, units h: Int, useBias: Bool,
                                 resetAfter: Bool) throws -> (w: [Float], r: [Float], b: [Float], inputSize: Int) {
        let g = cell.gates
        let kernel = w[w.startIndex], recurrent = w[w.startIndex + 1]
        guard kernel.rank == 2, kernel.shape[1] == g * h, recurrent.shape == [h, g * h], let kv = kernel.floats, let rv = recurrent.floats else {
            throw c.malformed(call, "kernels \(kernel.shape) and \(recurrent.shape) for \(h) units")
        }
        let f = kernel.shape[0]
        // Transposed, gate blocks reordered: row (block b, unit u) of W is column (gateOrder[b] · h + u) of the kernel.
        func rows(_ v: [Float], inner: Int) -> [Float] {
            var out = [Float](repeating: 0, count: g * h * inner)
            for (b, src) in cell.gateOrder.enumerated() {
                for u in 0..<h { for i in 0..<inner { out[(b * h + u) * inner + i] = v[i * g * h + src * h + u] } }
            }
            return out
        }
        func blocks(_ v: ArraySlice<Float>) -> [Float] {
            cell.gateOrder.flatMap { src in Array(v[(v.startIndex + src * h)..<(v.startIndex + (src + 1) * h)]) }
        }
        var b = [Float](repeating: 0, count: 2 * g * h)
        if useBias {
            let bias = w[w.startIndex + 2]
            guard let bv = bias.floats else { throw c.malformed(call, "bias is not float") }
            if resetAfter {
                guard bias.shape == [2, g * h] else { throw c.malformed(call, "bias \(bias.shape), expected [2, \(g * h)] (reset_after)") }
                b = blocks(bv[0..<(g * h)]) + blocks(bv[(g * h)...])
            } else {
                guard bias.shape == [g * h] else { throw c.malformed(call, "bias \(bias.shape), expected [\(g * h)]") }
                b = blocks(bv[...]) + [Float](repeating: 0, count: g * h)
            }
        }
        return (rows(kv, inner: f), rows(rv, inner: h), b, f)
    }

    /// A recurrent layer (`wrapper`: the Bidirectional layer whose weights and name it uses).
    static func rnn(_ c: inout KerasContext, _ call: KerasCall, wrapper: (merge: String?, backward: KerasJSON?)?) throws -> [KValue] {
        let cfg = call.config
        guard let cell = Cell.of(call.layer.className) else { throw c.unsupported(call, "a recurrent layer of class \(call.layer.className)") }
        let x = try call.input(c.file)
        guard x.rank == 3 else { throw c.malformed(call, "input of shape \(describe(x.shape)), expected [batch, time, features]") }
        if cfg["stateful"]?.bool == true { throw c.unsupported(call, "a stateful recurrent layer") }
        if cfg["time_major"]?.bool == true { throw c.unsupported(call, "time_major") }
        guard let h = cfg["units"]?.int, h > 0 else { throw c.malformed(call, "units is not a positive integer") }
        let useBias = cfg["use_bias"]?.bool ?? true
        let resetAfter = cell.op == "GRU" && (cfg["reset_after"]?.bool ?? true)
        let dirs = wrapper == nil ? 1 : 2
        let per = useBias ? 3 : 2
        let w = try c.layerWeights(call, counts: [per * dirs])
        var ws: [Float] = [], rs: [Float] = [], bs: [Float] = [], f = 0
        for d in 0..<dirs {
            let one = try directionWeights(c, call, cell, w[(d * per)..<((d + 1) * per)], units: h, useBias: useBias, resetAfter: resetAfter)
            ws += one.w; rs += one.r; bs += one.b; f = one.inputSize
        }
        guard x.shape[2] == nil || x.shape[2] == f else { throw c.malformed(call, "kernel for \(f) features, input \(describe(x.shape))") }
        let g = cell.gates
        let wName = c.weightConstant(call, "W") { Tensor(ws, shape: [dirs, g * h, f]) }
        let rName = c.weightConstant(call, "R") { Tensor(rs, shape: [dirs, g * h, h]) }
        let bName = c.weightConstant(call, "B") { Tensor(bs, shape: [dirs, 2 * g * h]) }
        let act = try recurrentActivation(c, call, cfg["activation"]?.string ?? "tanh")
        let gate = try recurrentActivation(c, call, cfg["recurrent_activation"]?.string ?? "sigmoid")
        let acts = cell.op == "LSTM" ? [gate, act, act] : cell.op == "GRU" ? [gate, act] : [act]
        let all = Array([[(String, Float?, Float?)]](repeating: acts, count: dirs).joined())
        var attrs: [String: Attribute] = ["hidden_size": .int(h), "activations": .strings(all.map(\.0)),
                                          "direction": .string(dirs == 2 ? "bidirectional" : (cfg["go_backwards"]?.bool == true ? "reverse" : "forward"))]
        if all.contains(where: { $0.1 != nil }) {
            attrs["activation_alpha"] = .floats(all.compactMap(\.1))
            attrs["activation_beta"] = .floats(all.compactMap(\.2))
        }
        if cell.op == "GRU" { attrs["linear_before_reset"] = .int(resetAfter ? 1 : 0) }
        let base = call.outputName
        let xt = c.emit("Transpose", [x.name], ["perm": .ints([1, 0, 2])], out: base + "/time_major")
        let outs = c.emit(cell.op, [xt, wName, rName, bName], attrs, outs: [base + "/Y", base + "/Y_h"] + (cell.op == "LSTM" ? [base + "/Y_c"] : []))
        return try rnnOutputs(&c, call, outs, x: x, units: h, dirs: dirs, merge: wrapper?.merge ?? "concat")
    }

    /// Keras' outputs from Y [T, D, N, H], Y_h and Y_c [D, N, H]: the sequence or the last output, merged over
    /// directions, then the states (return_state); a go_backwards sequence in processing order.
    static func rnnOutputs(_ c: inout KerasContext, _ call: KerasCall, _ outs: [String], x: KValue, units h: Int, dirs: Int, merge: String) throws -> [KValue] {
        let base = call.outputName
        let sequences = call.config["return_sequences"]?.bool ?? false
        var main: KValue
        if sequences {
            let nt = c.emit("Transpose", [outs[0]], ["perm": .ints([2, 0, 1, 3])], out: base + "/batch_major")  // [N, T, D, H]
            main = try mergeDirections(&c, call, KValue(name: nt, shape: [x.shape[0], x.shape[1], dirs, h]), axis: 2, merge: merge, out: base)
            if dirs == 1, call.config["go_backwards"]?.bool == true {
                let p = main.name
                let args = [c.int64s(base + "/starts", [-1]), c.int64s(base + "/ends", [Int(Int64.min)]), c.int64s(base + "/axes", [1]), c.int64s(base + "/steps", [-1])]
                main.name = c.emit("Slice", [p] + args, out: base + "/processing_order")
            }
        } else {
            let nd = c.emit("Transpose", [outs[1]], ["perm": .ints([1, 0, 2])], out: base + "/last")  // [N, D, H]
            main = try mergeDirections(&c, call, KValue(name: nd, shape: [x.shape[0], dirs, h]), axis: 1, merge: merge, out: base)
        }
        guard call.config["return_state"]?.bool == true else { return [main] }
        var states: [KValue] = []
        for s in outs.dropFirst() {
            for d in 0..<dirs {
                let idx = c.constant(base + "/direction", .scalar(int: Int64(d)))
                states.append(KValue(name: c.emit("Gather", [s, idx], ["axis": .int(0)], out: base + "/state"), shape: [x.shape[0], h]))
            }
        }
        // Keras orders a bidirectional layer's states forward h, c, then backward h, c.
        if dirs == 2, outs.count == 3 { states = [states[0], states[2], states[1], states[3]] }
        return [main] + states
    }

    /// Directions on `axis` (size D) merged: concatenated (reshaped away), summed, multiplied, averaged.
    static func mergeDirections(_ c: inout KerasContext, _ call: KerasCall, _ v: KValue, axis: Int, merge: String, out: String) throws -> KValue {
        var shape = v.shape
        let d = shape.remove(at: axis)
        let h = shape.remove(at: axis)
        switch merge {
        case "concat":
            let target = c.int64s(out + "/shape", Array(repeating: 0, count: axis) + [-1])
            return KValue(name: c.emit("Reshape", [v.name, target], out: out), shape: shape + [d.flatMap { a in h.map { a * $0 } }])
        case "sum", "mul", "ave":
            let op = merge == "sum" ? "ReduceSum" : merge == "mul" ? "ReduceProd" : "ReduceMean"
            let axes = c.int64s(out + "/axes", [axis])
            return KValue(name: c.emit(op, [v.name, axes], ["keepdims": .int(0)], out: out), shape: shape + [h])
        default: throw c.unsupported(call, "merge_mode '\(merge)'")
        }
    }

    static func bidirectional(_ c: inout KerasContext, _ call: KerasCall) throws -> [KValue] {
        guard let inner = call.config["layer"], let cls = inner["class_name"]?.string, let cfg = inner["config"] else {
            throw c.malformed(call, "a Bidirectional layer without its inner layer")
        }
        guard Cell.of(cls) != nil else { throw c.unsupported(call, "Bidirectional around \(cls)") }
        if let back = call.config["backward_layer"], !back.isNull, back["class_name"]?.string != cls {
            throw c.unsupported(call, "a backward layer of another class than the forward one")
        }
        let merge = call.config["merge_mode"].flatMap { $0.isNull ? "none" : $0.string } ?? "concat"
        guard merge != "none" else { throw c.unsupported(call, "merge_mode None (two separate outputs)") }
        var wrapped = call
        wrapped.layer.className = cls
        wrapped.layer.config = cfg
        return try rnn(&c, wrapped, wrapper: (merge: merge, backward: call.config["backward_layer"]))
    }

    /// TimeDistributed: a Dense inside reads [batch, time, features] directly; any other layer
    /// runs on [batch · time, …] and is reshaped back.
    static func timeDistributed(_ c: inout KerasContext, _ call: KerasCall) throws -> [KValue] {
        guard let inner = call.config["layer"], let cls = inner["class_name"]?.string, let cfg = inner["config"] else {
            throw c.malformed(call, "a TimeDistributed layer without its inner layer")
        }
        guard let translator = table[cls], cls != "TimeDistributed" else { throw c.unsupported(call, "TimeDistributed around \(cls)") }
        let x = try call.input(c.file)
        var wrapped = call
        wrapped.layer.className = cls
        wrapped.layer.config = cfg
        if cls == "Dense" { return try translator(&c, wrapped) }
        guard x.rank >= 3, let t = x.shape[1], x.shape[2...].allSatisfy({ $0 != nil }) else {
            throw c.unsupported(call, "TimeDistributed over an input of shape \(describe(x.shape)) (time and inner sizes must be known)")
        }
        let rest = x.shape[2...].compactMap { $0 }
        let folded = c.emit("Reshape", [x.name, c.int64s(call.outputName + "/fold", [-1] + rest)], out: call.outputName + "/folded")
        wrapped.inputs = [KValue(name: folded, shape: [nil] + rest.map { $0 })]
        wrapped.outputName = call.outputName + "/inner"
        let ys = try translator(&c, wrapped)
        return try ys.map { y in
            guard y.shape.dropFirst().allSatisfy({ $0 != nil }) else { throw c.unsupported(call, "an inner output of unknown size") }
            let shape = c.int64s(call.outputName + "/unfold", [-1, t] + y.shape.dropFirst().compactMap { $0 })
            return KValue(name: c.emit("Reshape", [y.name, shape], out: call.outputName), shape: [x.shape[0], t] + Array(y.shape.dropFirst()))
        }
    }
}
