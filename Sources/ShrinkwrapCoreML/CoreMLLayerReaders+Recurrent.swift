// NeuralNetwork recurrent layers (LSTM, GRU, simple RNN) → ONNX-style LSTM / GRU / RNN nodes.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    // MARK: recurrent layers

    static func recurrentActivation(_ a: CoreML_Specification_ActivationParams) throws -> (String, Float?, Float?) {
        switch a.nonlinearityType {
        case .sigmoid?: return ("Sigmoid", nil, nil)
        case .tanh?: return ("Tanh", nil, nil)
        case .reLu?: return ("Relu", nil, nil)
        case .linear(let l)?: return ("Affine", l.alpha, l.beta)
        case .sigmoidHard(let h)?: return ("HardSigmoid", h.alpha, h.beta)
        case .scaledTanh(let t)?: return ("ScaledTanh", t.alpha, t.beta)
        default: throw LayerReaderError("recurrent activation \(String(describing: a.nonlinearityType))")
        }
    }

    /// ONNX's activations list; alpha / beta are listed only for the functions that take them, in order.
    static func activationAttributes(_ acts: [CoreML_Specification_ActivationParams], directions: Int = 1) throws -> [String: Attribute] {
        let parsed = try acts.map(recurrentActivation)
        let all = Array([[(String, Float?, Float?)]](repeating: parsed, count: directions).joined())
        var a: [String: Attribute] = ["activations": .strings(all.map(\.0))]
        let withParams = all.filter { $0.1 != nil }
        if !withParams.isEmpty {
            a["activation_alpha"] = .floats(withParams.map { $0.1 ?? 0 })
            a["activation_beta"] = .floats(withParams.map { $0.2 ?? 0 })
        }
        return a
    }

    /// Concatenated float matrices (recurrent weights are decoded: ONNX packs the gates into one tensor).
    static func stack(_ b: GraphBuilderState, _ parts: [(CoreML_Specification_WeightParams, String)], rows: Int, cols: Int, p: String) throws -> [Float] {
        var out: [Float] = []
        for (w, what) in parts {
            let e = try b.weight(w, shape: [rows, cols], place: "\(p) \(what)")
            out += e.decoded().floats ?? []
        }
        return out
    }

    /// Core ML [Seq, Batch, I, 1, 1] → ONNX [Seq, Batch, I].
    static func sequenceInput(_ b: inout GraphBuilderState, _ l: Layer, _ x: String) throws -> String {
        let r = try rank(b, x)
        if r == 3 { return x }
        guard r == 5 || (b.rank5 && r == 4) else { throw LayerReaderError("input of rank \(r) (expected [Seq, Batch, I, 1, 1])") }
        let t = b.temp("\(l.name)_x")
        // Rank-5 blobs [1, C, 1, 1] in the rank-5 mapping are one step of one batch.
        let shape = r == 5 ? [0, 0, -1] : [1, 1, -1]
        return b.node("Reshape", "\(l.name)_x", [x, b.ints("\(l.name)_x_shape", shape)], [t], rank: 3)
    }

    /// Optional initial state [1, Batch, H, 1, 1] → ONNX [1, Batch, H].
    static func stateInput(_ b: inout GraphBuilderState, _ l: Layer, _ blob: String?, _ tag: String, hidden: Int, _ p: String) throws -> String {
        guard let blob, !blob.isEmpty else { return "" }
        let v = try b.value(blob, place: p)
        let t = b.temp("\(l.name)_\(tag)")
        return b.node("Reshape", "\(l.name)_\(tag)", [v, b.ints("\(l.name)_\(tag)_shape", [1, -1, hidden])], [t], rank: 3)
    }

    /// ONNX [.., Batch, H] outputs back to Core ML [S, Batch, H, 1, 1] (rank-5 mapping: [1, H, 1, 1]).
    static func stateOutput(_ b: inout GraphBuilderState, _ l: Layer, _ v: String, _ blob: String, _ p: String, onnxRank: Int) throws {
        let y = try b.define(blob, place: p)
        if b.rank5 {
            b.node("Reshape", "\(l.name)_\(blob)_blob", [v, b.ints("\(l.name)_\(blob)_shape", [1, -1, 1, 1])], [y], rank: 4)
        } else {
            b.node("Unsqueeze", "\(l.name)_\(blob)_blob", [v, b.ints("\(l.name)_\(blob)_axes", [3, 4])], [y], rank: 5)
        }
    }

    static let lstm: Reader = { b, l, p in
        let bidirectional: Bool
        let inSize: Int, hidden: Int
        let params: CoreML_Specification_LSTMParams
        let weights: [CoreML_Specification_LSTMWeightParams]
        let acts: [CoreML_Specification_ActivationParams]
        var reverse = false
        switch l.layer {
        case .uniDirectionalLstm(let u)?:
            bidirectional = false
            inSize = try dim(u.inputVectorSize, "inputVectorSize", b, p); hidden = try dim(u.outputVectorSize, "outputVectorSize", b, p)
            params = u.params; weights = [u.weightParams]; acts = u.activations; reverse = u.reverseInput
        case .biDirectionalLstm(let u)?:
            bidirectional = true
            inSize = try dim(u.inputVectorSize, "inputVectorSize", b, p); hidden = try dim(u.outputVectorSize, "outputVectorSize", b, p)
            params = u.params; weights = u.weightParams; acts = u.activationsForwardLstm
            guard u.activationsBackwardLstm.count == acts.count else { throw LayerReaderError("backward activations differ") }
        default: throw LayerReaderError("no reader")
        }
        let dirs = bidirectional ? 2 : 1
        guard weights.count == dirs else { throw ImportError.malformed(b.loc(p), reason: "\(weights.count) weight sets for \(dirs) directions") }
        guard acts.count == 3 else { throw ImportError.malformed(b.loc(p), reason: "\(acts.count) activations (expected 3)") }
        guard !l.input.isEmpty, l.output.count == 1 + 2 * dirs else {
            throw ImportError.malformed(b.loc(p), reason: "\(l.input.count) inputs and \(l.output.count) outputs")
        }
        if params.cellClipThreshold != 0 && params.cellClipThreshold < 1e4 {
            // Core ML clamps the cell state; ONNX's clip bounds the gate inputs. Equal unless the cell state leaves ±threshold.
        }
        let (W, R, B, P) = try lstmGateWeights(b, weights, params, inSize: inSize, hidden: hidden, p)
        let x = try sequenceInput(&b, l, try b.value(l.input[0], place: p))
        let (h0, c0) = try lstmInitialStates(&b, l, bidirectional: bidirectional, hidden: hidden, p)
        let wC = b.floats("\(l.name)_W", W, shape: [dirs, 4 * hidden, inSize])
        let rC = b.floats("\(l.name)_R", R, shape: [dirs, 4 * hidden, hidden])
        let bC = b.floats("\(l.name)_B", B, shape: [dirs, 8 * hidden])
        var inputs = [x, wC, rC, bC, "", h0, c0]
        if !P.isEmpty { inputs.append(b.floats("\(l.name)_P", P, shape: [dirs, 3 * hidden])) }
        var a = try activationAttributes(acts, directions: dirs)
        a["hidden_size"] = .int(hidden)
        a["direction"] = .string(bidirectional ? "bidirectional" : reverse ? "reverse" : "forward")
        if params.coupledInputAndForgetGate { a["input_forget"] = .int(1) }
        let yAll = b.temp("\(l.name)_Y"), yH = b.temp("\(l.name)_Y_h"), yC = b.temp("\(l.name)_Y_c")
        b.node("LSTM", l.name, inputs, [yAll, yH, yC], a, rank: 4)
        try lstmOutputs(&b, l, Y: yAll, Yh: yH, Yc: yC, sequenceOutput: params.sequenceOutput, dirs: dirs, p)
    }

    /// The LSTM weights of every direction packed as ONNX's W, R, B and P (empty without peepholes),
    /// in ONNX gate order i, o, f, c (Core ML: input, forget, block input z, output).
    static func lstmGateWeights(_ b: GraphBuilderState, _ weights: [CoreML_Specification_LSTMWeightParams],
                                _ params: CoreML_Specification_LSTMParams, inSize: Int, hidden: Int,
                                _ p: String) throws -> (W: [Float], R: [Float], B: [Float], P: [Float]) {
        var W: [Float] = [], R: [Float] = [], B: [Float] = [], P: [Float] = []
        for w in weights {
            W += try stack(b, [(w.inputGateWeightMatrix, "W_i"), (w.outputGateWeightMatrix, "W_o"), (w.forgetGateWeightMatrix, "W_f"),
                               (w.blockInputWeightMatrix, "W_z")], rows: hidden, cols: inSize, p: p)
            R += try stack(b, [(w.inputGateRecursionMatrix, "R_i"), (w.outputGateRecursionMatrix, "R_o"), (w.forgetGateRecursionMatrix, "R_f"),
                               (w.blockInputRecursionMatrix, "R_z")], rows: hidden, cols: hidden, p: p)
            func vector(_ w: CoreML_Specification_WeightParams, _ what: String) throws -> [Float] {
                params.hasBiasVectors_p ? try stack(b, [(w, what)], rows: 1, cols: hidden, p: p) : Array(repeating: 0, count: hidden)
            }
            var bf = try vector(w.forgetGateBiasVector, "b_f")
            if params.forgetBias { bf = bf.map { $0 + 1 } }
            B += try vector(w.inputGateBiasVector, "b_i") + vector(w.outputGateBiasVector, "b_o") + bf + vector(w.blockInputBiasVector, "b_z")
            B += Array(repeating: 0, count: 4 * hidden)
            if params.hasPeepholeVectors_p {
                P += try stack(b, [(w.inputGatePeepholeVector, "p_i"), (w.outputGatePeepholeVector, "p_o"), (w.forgetGatePeepholeVector, "p_f")],
                               rows: 1, cols: hidden, p: p)
            }
        }
        return (W, R, B, P)
    }

    /// The LSTM's optional initial states as ONNX's initial_h and initial_c ("" when absent).
    static func lstmInitialStates(_ b: inout GraphBuilderState, _ l: Layer, bidirectional: Bool, hidden: Int,
                                  _ p: String) throws -> (h0: String, c0: String) {
        let h0: String, c0: String
        if bidirectional {
            // Core ML passes each direction's states separately; ONNX stacks them.
            let hf = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0f", hidden: hidden, p)
            let cf = try stateInput(&b, l, l.input.count > 2 ? l.input[2] : nil, "c0f", hidden: hidden, p)
            let hb = try stateInput(&b, l, l.input.count > 3 ? l.input[3] : nil, "h0b", hidden: hidden, p)
            let cb = try stateInput(&b, l, l.input.count > 4 ? l.input[4] : nil, "c0b", hidden: hidden, p)
            if [hf, cf, hb, cb].contains(where: { !$0.isEmpty }) {
                guard ![hf, cf, hb, cb].contains(where: { $0.isEmpty }) else { throw LayerReaderError("some initial states but not all") }
                let h = b.temp("\(l.name)_h0"), c = b.temp("\(l.name)_c0")
                h0 = b.node("Concat", "\(l.name)_h0", [hf, hb], [h], ["axis": .int(0)], rank: 3)
                c0 = b.node("Concat", "\(l.name)_c0", [cf, cb], [c], ["axis": .int(0)], rank: 3)
            } else { h0 = ""; c0 = "" }
        } else {
            h0 = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0", hidden: hidden, p)
            c0 = try stateInput(&b, l, l.input.count > 2 ? l.input[2] : nil, "c0", hidden: hidden, p)
        }
        return (h0, c0)
    }

    /// A one-direction ONNX GRU / RNN's Y / Y_h back to the Core ML layer's
    /// outputs: y (the whole sequence, or the last step) and h_T.
    static func singleDirectionOutputs(_ b: inout GraphBuilderState, _ l: Layer, Y yAll: String, Yh yH: String,
                                       sequenceOutput: Bool, _ p: String) throws {
        let y3 = b.temp("\(l.name)_y")
        if sequenceOutput {
            b.node("Squeeze", "\(l.name)_y_s", [yAll, b.ints("\(l.name)_dir", [1])], [y3], rank: 3)
        } else {
            b.node("Identity", "\(l.name)_y_s", [yH], [y3], rank: 3)
        }
        try stateOutput(&b, l, y3, l.output[0], p, onnxRank: 3)
        try stateOutput(&b, l, yH, l.output[1], p, onnxRank: 3)
    }

    /// The ONNX LSTM's Y / Y_h / Y_c back to the Core ML layer's outputs: y, then h_T and c_T per direction.
    static func lstmOutputs(_ b: inout GraphBuilderState, _ l: Layer, Y yAll: String, Yh yH: String, Yc yC: String,
                            sequenceOutput seqOut: Bool, dirs: Int, _ p: String) throws {
        // y: the whole sequence [S, dirs, B, H] → [S, B, dirs·H], or the last step.
        let y3 = b.temp("\(l.name)_y")
        if seqOut {
            let t = b.temp("\(l.name)_y_sbdh")
            b.node("Transpose", "\(l.name)_y_t", [yAll], [t], ["perm": ints([0, 2, 1, 3])], rank: 4)
            b.node("Reshape", "\(l.name)_y_r", [t, b.ints("\(l.name)_y_shape", [0, 0, -1])], [y3], rank: 3)
        } else {
            // Final outputs of both directions: Y_h [dirs, B, H] → [1, B, dirs·H].
            let t = b.temp("\(l.name)_yh_t")
            b.node("Transpose", "\(l.name)_yh_t", [yH], [t], ["perm": ints([1, 0, 2])], rank: 3)
            b.node("Reshape", "\(l.name)_y_r", [t, b.ints("\(l.name)_y_shape", [1, 0, -1])], [y3], rank: 3)
        }
        try stateOutput(&b, l, y3, l.output[0], p, onnxRank: 3)
        for d in 0..<dirs {
            let h = b.temp("\(l.name)_h\(d)"), c = b.temp("\(l.name)_c\(d)")
            b.node("Slice", "\(l.name)_h\(d)", [yH, b.ints("\(l.name)_h\(d)_s", [d]), b.ints("\(l.name)_h\(d)_e", [d + 1]),
                                                b.ints("\(l.name)_h\(d)_a", [0])], [h], rank: 3)
            b.node("Slice", "\(l.name)_c\(d)", [yC, b.ints("\(l.name)_c\(d)_s", [d]), b.ints("\(l.name)_c\(d)_e", [d + 1]),
                                                b.ints("\(l.name)_c\(d)_a", [0])], [c], rank: 3)
            try stateOutput(&b, l, h, l.output[1 + 2 * d], p, onnxRank: 3)
            try stateOutput(&b, l, c, l.output[2 + 2 * d], p, onnxRank: 3)
        }
    }

    static let gru: Reader = { b, l, p in
        let q = l.gru
        let inSize = try dim(q.inputVectorSize, "inputVectorSize", b, p), hidden = try dim(q.outputVectorSize, "outputVectorSize", b, p)
        guard !l.input.isEmpty, l.output.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "\(l.output.count) outputs (expected 2)") }
        guard q.activations.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "\(q.activations.count) activations (expected 2)") }
        // ONNX gate order z, r, h.
        let W = try stack(b, [(q.updateGateWeightMatrix, "W_z"), (q.resetGateWeightMatrix, "W_r"), (q.outputGateWeightMatrix, "W_o")],
                          rows: hidden, cols: inSize, p: p)
        let R = try stack(b, [(q.updateGateRecursionMatrix, "R_z"), (q.resetGateRecursionMatrix, "R_r"), (q.outputGateRecursionMatrix, "R_o")],
                          rows: hidden, cols: hidden, p: p)
        var B = Array(repeating: Float(0), count: 6 * hidden)
        if q.hasBiasVectors_p {
            let bv = try stack(b, [(q.updateGateBiasVector, "b_z"), (q.resetGateBiasVector, "b_r"), (q.outputGateBiasVector, "b_o")],
                               rows: 1, cols: hidden, p: p)
            for i in 0..<(3 * hidden) { B[i] = bv[i] }
        }
        let x = try sequenceInput(&b, l, try b.value(l.input[0], place: p))
        let h0 = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0", hidden: hidden, p)
        var a = try activationAttributes(q.activations)
        a["hidden_size"] = .int(hidden)
        a["direction"] = .string(q.reverseInput ? "reverse" : "forward")
        a["linear_before_reset"] = .int(0)
        let yAll = b.temp("\(l.name)_Y"), yH = b.temp("\(l.name)_Y_h")
        b.node("GRU", l.name, [x, b.floats("\(l.name)_W", W, shape: [1, 3 * hidden, inSize]), b.floats("\(l.name)_R", R, shape: [1, 3 * hidden, hidden]),
                              b.floats("\(l.name)_B", B, shape: [1, 6 * hidden]), "", h0], [yAll, yH], a, rank: 4)
        try singleDirectionOutputs(&b, l, Y: yAll, Yh: yH, sequenceOutput: q.sequenceOutput, p)
    }

    static let simpleRecurrent: Reader = { b, l, p in
        let q = l.simpleRecurrent
        let inSize = try dim(q.inputVectorSize, "inputVectorSize", b, p), hidden = try dim(q.outputVectorSize, "outputVectorSize", b, p)
        guard !l.input.isEmpty, l.output.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "\(l.output.count) outputs (expected 2)") }
        let W = try stack(b, [(q.weightMatrix, "W")], rows: hidden, cols: inSize, p: p)
        let R = try stack(b, [(q.recursionMatrix, "R")], rows: hidden, cols: hidden, p: p)
        var B = Array(repeating: Float(0), count: 2 * hidden)
        if q.hasBiasVector_p {
            let bv = try stack(b, [(q.biasVector, "b")], rows: 1, cols: hidden, p: p)
            for i in 0..<hidden { B[i] = bv[i] }
        }
        let x = try sequenceInput(&b, l, try b.value(l.input[0], place: p))
        let h0 = try stateInput(&b, l, l.input.count > 1 ? l.input[1] : nil, "h0", hidden: hidden, p)
        var a = try activationAttributes([q.activation])
        a["hidden_size"] = .int(hidden)
        a["direction"] = .string(q.reverseInput ? "reverse" : "forward")
        let yAll = b.temp("\(l.name)_Y"), yH = b.temp("\(l.name)_Y_h")
        b.node("RNN", l.name, [x, b.floats("\(l.name)_W", W, shape: [1, hidden, inSize]), b.floats("\(l.name)_R", R, shape: [1, hidden, hidden]),
                              b.floats("\(l.name)_B", B, shape: [1, 2 * hidden]), "", h0], [yAll, yH], a, rank: 4)
        try singleDirectionOutputs(&b, l, Y: yAll, Yh: yH, sequenceOutput: q.sequenceOutput, p)
    }
}
