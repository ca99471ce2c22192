import FlatBuffers
import ShrinkwrapIR

/// Recurrent writers: ONNX LSTM as UNIDIRECTIONAL_SEQUENCE_LSTM.
extension TFLiteExportOps {
    /// ONNX LSTM (forward, sequence-major, gates i, o, f, c) → a time-major
    /// UNIDIRECTIONAL_SEQUENCE_LSTM (gates i, f, c, o; state in variable
    /// tensors starting at zero), its output reshaped to ONNX's [seq, 1, batch, hidden].
    /// The IR's `shrinkwrap_cell_clip` becomes cell_clip.
    static func lstm(_ e: inout TFLiteEmitter, _ n: Node) throws {
        guard n.string("direction", "forward") == "forward" else { throw TFLiteOpError("direction \(n.string("direction", "forward")) (TFLite's is forward)") }
        guard n.int("layout", 0) == 0 else { throw TFLiteOpError("batch-major layout") }
        guard n.int("input_forget", 0) == 0 else { throw TFLiteOpError("coupled input and forget gates") }
        guard n.attributes["clip"] == nil else { throw TFLiteOpError("clip (ONNX clips the gates' inputs; TFLite clips the cell)") }
        guard n.attributes["activation_alpha"] == nil, n.attributes["activation_beta"] == nil else { throw TFLiteOpError("activation_alpha / beta") }
        let acts = (n.attributes["activations"]).flatMap { if case .strings(let a) = $0 { return a } else { return nil } } ?? ["Sigmoid", "Tanh", "Tanh"]
        let codes: [String: Int8] = ["Tanh": 4, "Relu": 1, "Sigmoid": 6]
        guard acts.count == 3, acts[0] == "Sigmoid", acts[1] == acts[2], let act = codes[acts[1]] else {
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
        let xs = try e.shape(x)
        guard xs.count == 3, let we = e.g.constants[e.resolve(wName)], let re = e.g.constants[e.resolve(rName)],
              we.shape.count == 3, re.shape.count == 3, we.shape[0] == 1, we.shape[1] % 4 == 0 else {
            throw TFLiteOpError("input / weight shapes")
        }
        let hidden = we.shape[1] / 4, inSize = we.shape[2], batch = xs[1]
        guard re.shape == [1, 4 * hidden, hidden], inSize == xs[2] else { throw TFLiteOpError("recurrence weight \(re.shape) for \(hidden) cells") }
        let w2: WeightEncoding, r2: WeightEncoding
        do { w2 = try we.reshaped([4 * hidden, inSize]); r2 = try re.reshaped([4 * hidden, hidden]) } catch { throw TFLiteOpError(error.reason) }
        // ONNX gate k of (i, o, f, c) → TFLite slots in order (i, f, c, o).
        let order = [0, 2, 3, 1], names = ["input", "forget", "cell", "output"]
        func gate(_ enc: WeightEncoding, _ k: Int, _ base: String, _ what: String) throws -> Int {
            try e.constantTensor(e.g.fresh(base + "_" + what), try rows(enc, k * hidden..<(k + 1) * hidden, weight: base), hybrid: nil)
        }
        var inputs: [Int] = [try e.input(x)]
        for (slot, k) in order.enumerated() { inputs.append(try gate(w2, k, e.resolve(wName), names[slot])) }
        for (slot, k) in order.enumerated() { inputs.append(try gate(r2, k, e.resolve(rName), names[slot])) }
        // Peepholes P = (i, o, f) → cell_to_input, cell_to_forget, cell_to_output.
        if let p = n.input(7) {
            let v = try constFloats(e, p, "peepholes")
            guard v.count == 3 * hidden else { throw TFLiteOpError("\(v.count) peephole weights for \(hidden) cells") }
            for k in [0, 2, 1] { inputs.append(e.floatConstant(p + "_" + ["input", "output", "forget"][k], Array(v[k * hidden..<(k + 1) * hidden]), shape: [hidden])) }
        } else {
            inputs += [-1, -1, -1]
        }
        var bias = [Float](repeating: 0, count: 4 * hidden)
        if let b = n.input(3) {
            let v = try constFloats(e, b, "bias")
            guard v.count == 8 * hidden else { throw TFLiteOpError("\(v.count) biases for \(hidden) cells") }
            for j in 0..<(4 * hidden) { bias[j] = v[j] + v[4 * hidden + j] }
        }
        for k in order { inputs.append(e.floatConstant(n.name + "_" + names[order.firstIndex(of: k) ?? 0] + "_bias", Array(bias[k * hidden..<(k + 1) * hidden]), shape: [hidden])) }
        inputs += [-1, -1]  // no projection
        for state in ["output_state", "cell_state"] {
            let t = try e.temp(n.name + "_" + state, shape: [batch, hidden])
            e.file.tensors[t].isVariable = true
            inputs.append(t)
        }
        inputs += [-1, -1, -1, -1]  // no layer normalization
        guard let yName = n.outputs.first, !yName.isEmpty else { throw TFLiteOpError("no output Y") }
        let seq = try e.temp(yName + "_sequence", shape: [xs[0], batch, hidden])
        let clip = n.float("shrinkwrap_cell_clip", 0)
        try e.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [seq], options: "UnidirectionalSequenceLSTMOptions") { b in
            b.table { t in t.add(0, act, default: 0); t.add(1, clip, default: 0); t.add(3, true, default: false) }
        }
        try e.reshape(seq, to: [xs[0], 1, batch, hidden], into: try e.output(n))
    }
}
