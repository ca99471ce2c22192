import FlatBuffers
import ShrinkwrapIR

/// Recurrent writers: ONNX LSTM as UNIDIRECTIONAL_SEQUENCE_LSTM (one per direction).
extension TFLiteExportOps {
    /// ONNX LSTM (sequence-major, gates i, o, f, c) → a time-major
    /// UNIDIRECTIONAL_SEQUENCE_LSTM per direction (gates i, f, c, o; state in
    /// variable tensors starting at zero), each output reshaped to ONNX's
    /// [seq, 1, batch, hidden]. The IR's `shrinkwrap_cell_clip` becomes cell_clip.
    ///
    /// The reverse direction runs the forward op between two REVERSE_V2s on the
    /// time axis; a bidirectional LSTM is both, concatenated on the direction
    /// axis, as TensorFlow's converter writes a Keras Bidirectional layer (its
    /// BIDIRECTIONAL_SEQUENCE_LSTM is not what the converter emits, and XNNPACK
    /// and most delegates lack it, while this form runs on stock kernels).
    static func lstm(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let direction = n.string("direction", "forward")
        let reversed: [Bool]
        switch direction {
        case "forward": reversed = [false]
        case "reverse": reversed = [true]
        case "bidirectional": reversed = [false, true]
        default: throw TFLiteOpError("direction \(direction)")
        }
        guard n.int("layout", 0) == 0 else { throw TFLiteOpError("batch-major layout") }
        guard n.int("input_forget", 0) == 0 else { throw TFLiteOpError("coupled input and forget gates") }
        guard n.attributes["clip"] == nil else { throw TFLiteOpError("clip (ONNX clips the gates' inputs; TFLite clips the cell)") }
        guard n.attributes["activation_alpha"] == nil, n.attributes["activation_beta"] == nil else { throw TFLiteOpError("activation_alpha / beta") }
        let acts = (n.attributes["activations"]).flatMap { if case .strings(let a) = $0 { return a } else { return nil } }
            ?? Array([[String]](repeating: ["Sigmoid", "Tanh", "Tanh"], count: reversed.count).joined())
        let codes: [String: Int8] = ["Tanh": 4, "Relu": 1, "Sigmoid": 6]
        guard acts.count == 3 * reversed.count, (0..<reversed.count).allSatisfy({ acts[3 * $0..<3 * $0 + 3] == acts[0..<3] }),
              acts[0] == "Sigmoid", acts[1] == acts[2], let act = codes[acts[1]] else {
            throw TFLiteOpError("activations \(acts) (TFLite: sigmoid gates, one cell / output activation)")
        }
        for k in [4, 5, 6] where n.input(k) != nil {
            guard k != 4, let c = e.g.constants[e.resolve(n.inputs[k])], (c.decoded().floats ?? [1]).allSatisfy({ $0 == 0 }) else {
                throw TFLiteOpError(k == 4 ? "sequence_lens" : "an initial state that is not zero")
            }
        }
        let readers = Set(e.g.nodes.flatMap(\.inputs)).union(e.g.outputs)
        if n.outputs.dropFirst().contains(where: { !$0.isEmpty && readers.contains($0) }) {
            throw TFLiteOpError("the final states Y_h / Y_c are read (TFLite's op gives the sequence only)")
        }
        let x = try arity(n, 0), wName = try arity(n, 1), rName = try arity(n, 2)
        let xs = try e.shape(x), dirs = reversed.count
        guard xs.count == 3, let we = e.g.constants[e.resolve(wName)], let re = e.g.constants[e.resolve(rName)],
              we.shape.count == 3, re.shape.count == 3, we.shape[0] == dirs, we.shape[1] % 4 == 0 else {
            throw TFLiteOpError("input / weight shapes")
        }
        let hidden = we.shape[1] / 4, inSize = we.shape[2]
        guard re.shape == [dirs, 4 * hidden, hidden], inSize == xs[2] else { throw TFLiteOpError("recurrence weight \(re.shape) for \(hidden) cells") }
        guard let yName = n.outputs.first, !yName.isEmpty else { throw TFLiteOpError("no output Y") }
        let w2: WeightEncoding, r2: WeightEncoding
        do { w2 = try we.reshaped([dirs * 4 * hidden, inSize]); r2 = try re.reshaped([dirs * 4 * hidden, hidden]) } catch { throw TFLiteOpError(error.reason) }
        let peepholes = try n.input(7).map { try constFloats(e, $0, "peepholes") }
        guard peepholes.map({ $0.count == dirs * 3 * hidden }) ?? true else { throw TFLiteOpError("\(peepholes?.count ?? 0) peephole weights for \(hidden) cells") }
        var bias = [Float](repeating: 0, count: dirs * 4 * hidden)
        if let b = n.input(3) {
            let v = try constFloats(e, b, "bias")
            guard v.count == dirs * 8 * hidden else { throw TFLiteOpError("\(v.count) biases for \(hidden) cells") }
            for d in 0..<dirs { for j in 0..<(4 * hidden) { bias[d * 4 * hidden + j] = v[d * 8 * hidden + j] + v[d * 8 * hidden + 4 * hidden + j] } }
        }
        let cell = Cell(hidden: hidden, activation: act, clip: n.float("shrinkwrap_cell_clip", 0), w: w2, r: r2,
                        wBase: e.resolve(wName), rBase: e.resolve(rName), peepholeBase: n.input(7), peepholes: peepholes, bias: bias)
        var outs: [Int] = []
        for (d, reverse) in reversed.enumerated() {
            // The first direction keeps the names a forward-only LSTM always had.
            let suffix = d == 0 ? "" : "_backward"
            var input = try e.input(x)
            if reverse { input = try reverseTime(&e, input, shape: xs, name: x + "_reversed") }
            let seq = try sequenceLSTM(&e, n, cell, direction: d, suffix: suffix, input: input, output: yName + "_sequence" + suffix)
            let forward = reverse ? try reverseTime(&e, seq, shape: [xs[0], xs[1], hidden], name: yName + "_sequence" + suffix + "_reversed") : seq
            let y = dirs == 1 ? try e.output(n) : try e.temp(yName + "_direction\(d)", shape: [xs[0], 1, xs[1], hidden])
            try e.reshape(forward, to: [xs[0], 1, xs[1], hidden], into: y)
            outs.append(y)
        }
        if dirs > 1 {
            try e.op("CONCATENATION", outs, [try e.output(n)], options: "ConcatenationOptions") { b in b.table { t in t.add(0, Int32(1), default: 0) } }
        }
    }

    /// One direction's weights and settings, stacked over the directions.
    struct Cell {
        var hidden: Int, activation: Int8, clip: Float
        /// [directions · 4 · hidden, input] and [directions · 4 · hidden, hidden], ONNX gate order.
        var w: WeightEncoding, r: WeightEncoding
        var wBase: String, rBase: String, peepholeBase: String?
        var peepholes: [Float]?
        /// W and R biases summed, [directions · 4 · hidden].
        var bias: [Float]
    }

    /// The time axis (0) of `x` reversed by a REVERSE_V2.
    static func reverseTime(_ e: inout TFLiteEmitter, _ x: Int, shape: [Int], name: String) throws -> Int {
        let out = try e.temp(name, shape: shape)
        try e.op("REVERSE_V2", [x, try e.int32Constant("axis", [0])], [out], options: "ReverseV2Options")
        return out
    }

    /// A forward time-major UNIDIRECTIONAL_SEQUENCE_LSTM over `input` with
    /// direction `d`'s weights; returns its output tensor (named `output`).
    static func sequenceLSTM(_ e: inout TFLiteEmitter, _ n: Node, _ cell: Cell, direction d: Int, suffix: String,
                             input: Int, output name: String) throws -> Int {
        let hidden = cell.hidden, batch = e.file.tensors[input].shape[1]
        // ONNX gate k of (i, o, f, c) → TFLite slots in order (i, f, c, o).
        let order = [0, 2, 3, 1], names = ["input", "forget", "cell", "output"]
        func gate(_ enc: WeightEncoding, _ k: Int, _ base: String, _ what: String) throws -> Int {
            let first = (4 * d + k) * hidden
            return try e.constantTensor(e.g.fresh(base + suffix + "_" + what), try rows(enc, first..<first + hidden, weight: base), hybrid: nil)
        }
        var inputs: [Int] = [input]
        for (slot, k) in order.enumerated() { inputs.append(try gate(cell.w, k, cell.wBase, names[slot])) }
        for (slot, k) in order.enumerated() { inputs.append(try gate(cell.r, k, cell.rBase, names[slot])) }
        // Peepholes P = (i, o, f) → cell_to_input, cell_to_forget, cell_to_output.
        if let v = cell.peepholes, let p = cell.peepholeBase {
            for k in [0, 2, 1] {
                let first = (3 * d + k) * hidden
                inputs.append(e.floatConstant(p + suffix + "_" + ["input", "output", "forget"][k], Array(v[first..<first + hidden]), shape: [hidden]))
            }
        } else {
            inputs += [-1, -1, -1]
        }
        for k in order {
            let first = (4 * d + k) * hidden
            inputs.append(e.floatConstant(n.name + suffix + "_" + names[order.firstIndex(of: k) ?? 0] + "_bias", Array(cell.bias[first..<first + hidden]), shape: [hidden]))
        }
        inputs += [-1, -1]  // no projection
        for state in ["output_state", "cell_state"] {
            let t = try e.temp(n.name + suffix + "_" + state, shape: [batch, hidden])
            e.file.tensors[t].isVariable = true
            inputs.append(t)
        }
        inputs += [-1, -1, -1, -1]  // no layer normalization
        let output = try e.temp(name, shape: [e.file.tensors[input].shape[0], batch, hidden])
        let (act, clip) = (cell.activation, cell.clip)
        try e.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [output], options: "UnidirectionalSequenceLSTMOptions") { b in
            b.table { t in t.add(0, act, default: 0); t.add(1, clip, default: 0); t.add(3, true, default: false) }
        }
        return output
    }
}
