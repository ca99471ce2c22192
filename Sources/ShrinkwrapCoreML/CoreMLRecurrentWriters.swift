import CoreMLSchema
import Foundation
import ShrinkwrapIR

/// ONNX LSTM / GRU / RNN → Core ML's recurrent layers.
///
/// Core ML's recurrent layers work on rank-5 blobs even in N-d networks:
/// the sequence is [Seq, Batch, I, 1, 1], each state [1, Batch, H, 1, 1],
/// the inputs are `[x, h0 (, c0)]` (bidirectional LSTM: `x, h0f, c0f, h0b, c0b`)
/// and the outputs exactly `[y, h_T (, c_T)]` per direction. So the writers
/// expand ONNX's [Seq, Batch, I] input to rank 5, cut the stacked gate
/// weights into one matrix per gate (keeping their compressed encoding), and
/// reshape the outputs back to ONNX's Y [Seq, dirs, Batch, H] and
/// Y_h / Y_c [dirs, Batch, H].
///
/// Gate orders: ONNX LSTM i, o, f, c ↔ Core ML input, output, forget, block
/// input; ONNX GRU z, r, h ↔ update, reset, output. Core ML has one bias per
/// gate, so ONNX's Wb + Rb are added; GRU needs linear_before_reset = 0
/// (Core ML resets the state before the recursion matrix). Core ML clips
/// every gate pre-activation to ±50, which the usual squashing activations
/// never notice; ONNX's `clip` has no counterpart and is refused.
extension CoreMLLayerWriters {
    /// The weight params of one LSTM direction, for the precision check.
    static func lstmParams(_ p: CoreML_Specification_LSTMWeightParams) -> [CoreML_Specification_WeightParams] {
        [p.inputGateWeightMatrix, p.forgetGateWeightMatrix, p.blockInputWeightMatrix, p.outputGateWeightMatrix,
         p.inputGateRecursionMatrix, p.forgetGateRecursionMatrix, p.blockInputRecursionMatrix, p.outputGateRecursionMatrix,
         p.inputGateBiasVector, p.forgetGateBiasVector, p.blockInputBiasVector, p.outputGateBiasVector,
         p.inputGatePeepholeVector, p.forgetGatePeepholeVector, p.outputGatePeepholeVector]
    }

    /// The checked shape of an ONNX recurrent node.
    struct RecurrentShape {
        var seq: Int, batch: Int, input: Int, hidden: Int, dirs: Int
    }

    static func recurrentShape(_ w: inout NNWriter, _ n: Node, gates: Int) throws -> RecurrentShape {
        guard let x = n.input(0), let wN = n.input(1), let rN = n.input(2), w.graph.isConstant(wN), w.graph.isConstant(rN) else {
            throw LayerWriterError("W and R must be constants")
        }
        try w.needND("recurrent layer on an N-d value")
        if int(n, "layout", 0) != 0 { throw LayerWriterError("batch-major layout (layout = 1)") }
        if n.input(4) != nil { throw LayerWriterError("sequence_lens (Core ML runs every sequence to its full length)") }
        if n.attributes["clip"] != nil { throw LayerWriterError("clip (Core ML clips gate inputs at ±50 only)") }
        let xs = try w.shape(x), ws = try w.shape(wN), rs = try w.shape(rN)
        guard xs.count == 3 else { throw LayerWriterError("input of rank \(xs.count)") }
        guard ws.count == 3, rs.count == 3, ws[1] % gates == 0 else { throw LayerWriterError("W \(ws) / R \(rs)") }
        let hidden = ws[1] / gates
        guard ws[2] == xs[2], rs == [ws[0], ws[1], hidden], hidden > 0 else { throw LayerWriterError("W \(ws) / R \(rs) for input \(xs)") }
        let direction = string(n, "direction", "forward")
        let dirs = direction == "bidirectional" ? 2 : 1
        guard ws[0] == dirs, ["forward", "reverse", "bidirectional"].contains(direction) else {
            throw LayerWriterError("direction \(direction) with \(ws[0]) weight sets")
        }
        return RecurrentShape(seq: xs[0], batch: xs[1], input: xs[2], hidden: hidden, dirs: dirs)
    }

    /// Core ML activation params for ONNX's `activations` (with `activation_alpha` / `_beta`), `perDirection` each.
    static func recurrentActivations(_ n: Node, defaults: [String], dirs: Int) throws -> [[CoreML_Specification_ActivationParams]] {
        var names = defaults + (dirs == 2 ? defaults : [])
        if case .strings(let s)? = n.attributes["activations"] { names = s }
        guard names.count == defaults.count * dirs else { throw LayerWriterError("\(names.count) activations for \(dirs) direction(s)") }
        var alphas: ArraySlice<Float> = [], betas: ArraySlice<Float> = []
        if case .floats(let a)? = n.attributes["activation_alpha"] { alphas = a[...] }
        if case .floats(let b)? = n.attributes["activation_beta"] { betas = b[...] }
        var out: [CoreML_Specification_ActivationParams] = []
        for name in names {
            var a = CoreML_Specification_ActivationParams()
            switch name.lowercased() {
            case "sigmoid": a.sigmoid = .init()
            case "tanh": a.tanh = .init()
            case "relu": a.reLu = .init()
            case "hardsigmoid":
                a.sigmoidHard.alpha = alphas.popFirst() ?? 0.2
                a.sigmoidHard.beta = betas.popFirst() ?? 0.5
            case "affine":
                a.linear.alpha = alphas.popFirst() ?? 1
                a.linear.beta = betas.popFirst() ?? 0
            case "scaledtanh":
                a.scaledTanh.alpha = alphas.popFirst() ?? 1
                a.scaledTanh.beta = betas.popFirst() ?? 1
            default: throw LayerWriterError("recurrent activation \(name)")
            }
            out.append(a)
        }
        return (0..<dirs).map { d in Array(out[(d * defaults.count)..<((d + 1) * defaults.count)]) }
    }

    /// One gate's matrix of W or R [dirs, gates·H, cols]: direction `dir`, rows `[gate·H, +H)`
    /// (per-channel scales and tables are cut with it).
    static func gateMatrix(_ w: inout NNWriter, _ name: String, dir: Int, gate: Int, gates: Int, s: RecurrentShape) throws
        -> CoreML_Specification_WeightParams {
        guard let c = w.graph.constant(named: name) else { throw LayerWriterError("'\(name)' is not a constant") }
        let shape = c.encoding.shape
        return try w.params(c.encoding, name: name) { e throws(WeightLayoutError) in
            try e.rows(dir..<(dir + 1)).reshaped(Array(shape.dropFirst())).rows((gate * s.hidden)..<((gate + 1) * s.hidden))
        }
    }

    /// Core ML's per-gate bias vectors: Wb + Rb of ONNX's B [dirs, 2·gates·H], float16 when B is.
    static func gateBiases(_ w: inout NNWriter, _ n: Node, gates: Int, s: RecurrentShape) throws -> [[CoreML_Specification_WeightParams]]? {
        guard let bN = n.input(3) else { return nil }
        guard let c = w.graph.constant(named: bN) else { throw LayerWriterError("B must be a constant") }
        guard try w.shape(bN) == [s.dirs, 2 * gates * s.hidden] else { throw LayerWriterError("B of shape \(try w.shape(bN))") }
        let v = try w.values(bN)
        var half = false
        switch c.encoding {
        case .float16: half = true; w.require(2, "float16 weights")
        case .dense: break
        default: throw LayerWriterError("B must be float32 or float16")
        }
        return (0..<s.dirs).map { d in
            (0..<gates).map { g in
                let base = d * 2 * gates * s.hidden
                let sum = (0..<s.hidden).map { i in v[base + g * s.hidden + i] + v[base + (gates + g) * s.hidden + i] }
                var p = CoreML_Specification_WeightParams()
                if half {
                    var bytes = [UInt8](repeating: 0, count: 2 * sum.count)
                    for (i, f) in sum.enumerated() {
                        let b = Half.bits(from: f)
                        bytes[2 * i] = UInt8(truncatingIfNeeded: b); bytes[2 * i + 1] = UInt8(truncatingIfNeeded: b >> 8)
                    }
                    p.float16Value = Data(bytes)
                } else {
                    p.floatValue = sum
                }
                return p
            }
        }
    }

    /// ONNX X [Seq, Batch, I] → a [Seq, Batch, I, 1, 1] blob.
    static func sequenceBlob(_ w: inout NNWriter, _ n: Node, _ x: String) throws -> String {
        let b = w.freshBlob("\(n.outputs.first ?? n.name)_x5")
        var l = w.layer("\(n.name)_x5", inputs: [try w.inputBlob(x)], outputs: [b])
        l.expandDims.axes = [3, 4]
        w.add(l)
        return b
    }

    /// Initial states: ONNX [dirs, Batch, H] input `index` → one [1, Batch, H, 1, 1] blob per direction
    /// (nil when absent or a constant zero: Core ML starts from zeros).
    static func stateBlobs(_ w: inout NNWriter, _ n: Node, index: Int, tag: String, s: RecurrentShape) throws -> [String]? {
        guard let v = n.input(index) else { return nil }
        guard try w.shape(v) == [s.dirs, s.batch, s.hidden] else { throw LayerWriterError("\(tag) of shape \(try w.shape(v))") }
        if w.graph.isConstant(v), try w.values(v).allSatisfy({ $0 == 0 }) { return nil }
        let src = try w.inputBlob(v)
        return (0..<s.dirs).map { d in
            let o = w.freshBlob("\(n.outputs.first ?? n.name)_\(tag)\(d)")
            var l = w.layer("\(n.name)_\(tag)\(d)", inputs: [src], outputs: [o])
            if s.dirs == 1 {
                l.expandDims.axes = [3, 4]
            } else {
                // One direction's slice, then the two trailing axes: reshape does both.
                let cut = w.freshBlob("\(o)_cut")
                var c = w.layer("\(n.name)_\(tag)\(d)_cut", inputs: [src], outputs: [cut])
                c.sliceStatic.beginIds = [Int64(d), 0, 0]; c.sliceStatic.endIds = [Int64(d + 1), Int64(s.batch), Int64(s.hidden)]
                c.sliceStatic.strides = [1, 1, 1]
                c.sliceStatic.beginMasks = [false, true, true]; c.sliceStatic.endMasks = [false, true, true]
                w.add(c)
                l.input = [cut]
                l.reshapeStatic.targetShape = [1, Int64(s.batch), Int64(s.hidden), 1, 1]
            }
            w.add(l)
            return o
        }
    }

    /// A [1, Batch, H, 1, 1] blob of zeros (a state the layer needs positionally).
    static func zeroState(_ w: inout NNWriter, _ n: Node, tag: String, s: RecurrentShape) -> String {
        let o = w.freshBlob("\(n.outputs.first ?? n.name)_\(tag)_zero")
        var l = w.layer("\(n.name)_\(tag)_zero", inputs: [], outputs: [o])
        l.loadConstantNd.shape = [1, UInt64(s.batch), UInt64(s.hidden), 1, 1]
        l.loadConstantNd.data.floatValue = Array(repeating: 0, count: s.batch * s.hidden)
        w.add(l)
        return o
    }

    /// Whether ONNX output `i` is used.
    static func wants(_ w: NNWriter, _ n: Node, _ i: Int) -> Bool {
        guard i < n.outputs.count, !n.outputs[i].isEmpty else { return false }
        return w.consumerCount(n.outputs[i]) > 0 || w.isGraphOutput(n.outputs[i])
    }

    /// Core ML's per-direction outputs back to ONNX: `y` [Seq, Batch, dirs·H, 1, 1] → Y [Seq, dirs, Batch, H];
    /// each state list [1, Batch, H, 1, 1] per direction → output `index` [dirs, Batch, H].
    static func writeOutputs(_ w: inout NNWriter, _ n: Node, s: RecurrentShape, y: String, states: [(index: Int, blobs: [String])]) {
        let seq = Int64(s.seq), batch = Int64(s.batch), hidden = Int64(s.hidden)
        if wants(w, n, 0) {
            var l = w.layer("\(n.name)_Y", inputs: [y], outputs: [s.dirs == 1 ? n.outputs[0] : w.freshBlob("\(n.outputs[0])_sbdh")])
            l.reshapeStatic.targetShape = s.dirs == 1 ? [seq, 1, batch, hidden] : [seq, batch, 2, hidden]
            w.add(l)
            if s.dirs == 2 {
                var t = w.layer("\(n.name)_Y_t", inputs: l.output, outputs: [n.outputs[0]])
                t.transpose.axes = [0, 2, 1, 3]
                w.add(t)
            }
        }
        for (index, blobs) in states where wants(w, n, index) {
            let parts = blobs.enumerated().map { d, b -> String in
                let o = blobs.count == 1 ? n.outputs[index] : w.freshBlob("\(n.outputs[index])_\(d)")
                var l = w.layer("\(n.name)_out\(index)_\(d)", inputs: [b], outputs: [o])
                l.reshapeStatic.targetShape = [1, batch, hidden]
                w.add(l)
                return o
            }
            if parts.count > 1 {
                var c = w.layer("\(n.name)_out\(index)", inputs: parts, outputs: [n.outputs[index]])
                c.concatNd.axis = 0
                w.add(c)
            }
        }
    }

    static let lstm: Writer = { w, n in
        let s = try recurrentShape(&w, n, gates: 4)
        let acts = try recurrentActivations(n, defaults: ["Sigmoid", "Tanh", "Tanh"], dirs: s.dirs)
        let biases = try gateBiases(&w, n, gates: 4, s: s)
        var peep: [Float]? = nil
        if let pN = n.input(7) {
            guard try w.shape(pN) == [s.dirs, 3 * s.hidden] else { throw LayerWriterError("P of shape \(try w.shape(pN))") }
            peep = try w.values(pN)
        }
        var params = CoreML_Specification_LSTMParams()
        params.sequenceOutput = wants(w, n, 0)
        params.hasBiasVectors_p = biases != nil
        params.hasPeepholeVectors_p = peep != nil
        params.coupledInputAndForgetGate = int(n, "input_forget", 0) != 0
        // The IR's cell-state bound when it has one; else what coremltools writes: effectively no clipping.
        if case .float(let clip)? = n.attributes["shrinkwrap_cell_clip"], clip > 0, clip.isFinite {
            params.cellClipThreshold = clip
        } else {
            params.cellClipThreshold = 50_000
        }
        var sets: [CoreML_Specification_LSTMWeightParams] = []
        for d in 0..<s.dirs {
            var p = CoreML_Specification_LSTMWeightParams()
            let (wN, rN) = (n.inputs[1], n.inputs[2])
            // ONNX gate g: 0 input, 1 output, 2 forget, 3 cell (block input).
            p.inputGateWeightMatrix = try gateMatrix(&w, wN, dir: d, gate: 0, gates: 4, s: s)
            p.outputGateWeightMatrix = try gateMatrix(&w, wN, dir: d, gate: 1, gates: 4, s: s)
            p.forgetGateWeightMatrix = try gateMatrix(&w, wN, dir: d, gate: 2, gates: 4, s: s)
            p.blockInputWeightMatrix = try gateMatrix(&w, wN, dir: d, gate: 3, gates: 4, s: s)
            p.inputGateRecursionMatrix = try gateMatrix(&w, rN, dir: d, gate: 0, gates: 4, s: s)
            p.outputGateRecursionMatrix = try gateMatrix(&w, rN, dir: d, gate: 1, gates: 4, s: s)
            p.forgetGateRecursionMatrix = try gateMatrix(&w, rN, dir: d, gate: 2, gates: 4, s: s)
            p.blockInputRecursionMatrix = try gateMatrix(&w, rN, dir: d, gate: 3, gates: 4, s: s)
            if let b = biases?[d] {
                p.inputGateBiasVector = b[0]; p.outputGateBiasVector = b[1]; p.forgetGateBiasVector = b[2]; p.blockInputBiasVector = b[3]
            }
            if let peep {
                // ONNX P: i, o, f.
                let base = d * 3 * s.hidden
                func part(_ k: Int) -> CoreML_Specification_WeightParams {
                    var v = CoreML_Specification_WeightParams()
                    v.floatValue = Array(peep[(base + k * s.hidden)..<(base + (k + 1) * s.hidden)])
                    return v
                }
                p.inputGatePeepholeVector = part(0); p.outputGatePeepholeVector = part(1); p.forgetGatePeepholeVector = part(2)
            }
            sets.append(p)
        }
        let x5 = try sequenceBlob(&w, n, n.inputs[0])
        let h0 = try stateBlobs(&w, n, index: 5, tag: "h0", s: s)
        let c0 = try stateBlobs(&w, n, index: 6, tag: "c0", s: s)
        var inputs = [x5]
        if h0 != nil || c0 != nil {
            let h = h0 ?? (0..<s.dirs).map { d in zeroState(&w, n, tag: "h0\(d)", s: s) }
            let c = c0 ?? (0..<s.dirs).map { d in zeroState(&w, n, tag: "c0\(d)", s: s) }
            for d in 0..<s.dirs { inputs += [h[d], c[d]] }
        }
        let base = n.outputs.first(where: { !$0.isEmpty }) ?? n.name
        let y = w.freshBlob("\(base)_y5")
        let hT = (0..<s.dirs).map { d in w.freshBlob("\(base)_h\(d)_5") }
        let cT = (0..<s.dirs).map { d in w.freshBlob("\(base)_c\(d)_5") }
        var l = w.layer(n.name, inputs: inputs, outputs: [y] + (0..<s.dirs).flatMap { [hT[$0], cT[$0]] })
        if s.dirs == 1 {
            var u = CoreML_Specification_UniDirectionalLSTMLayerParams()
            u.inputVectorSize = UInt64(s.input); u.outputVectorSize = UInt64(s.hidden)
            u.activations = acts[0]
            u.params = params
            u.weightParams = sets[0]
            u.reverseInput = string(n, "direction", "forward") == "reverse"
            l.uniDirectionalLstm = u
        } else {
            var b = CoreML_Specification_BiDirectionalLSTMLayerParams()
            b.inputVectorSize = UInt64(s.input); b.outputVectorSize = UInt64(s.hidden)
            b.activationsForwardLstm = acts[0]; b.activationsBackwardLstm = acts[1]
            b.params = params
            b.weightParams = sets
            l.biDirectionalLstm = b
        }
        w.add(l)
        writeOutputs(&w, n, s: s, y: y, states: [(1, hT), (2, cT)])
    }

    /// Why Core ML's GRU / simple recurrent layer cannot compute GRU / RNN node `n` as its attributes
    /// ask (nil when it can): the writers throw it, and CoreMLLowering unrolls the nodes it names.
    static func recurrentCellRefusal(_ n: Node) -> String? {
        let gru = n.opType == "GRU"
        guard gru || n.opType == "RNN" else { return nil }
        if string(n, "direction", "forward") == "bidirectional" {
            return gru ? "bidirectional GRU (Core ML's GRU layer runs one direction)"
                : "bidirectional RNN (Core ML's simple recurrent layer runs one direction)"
        }
        if gru && int(n, "linear_before_reset", 0) != 0 { return "linear_before_reset = 1 (Core ML resets before the recursion)" }
        do {
            _ = try recurrentActivations(n, defaults: gru ? ["Sigmoid", "Tanh"] : ["Tanh"], dirs: 1)
        } catch {
            return (error as? LayerWriterError)?.reason ?? "\(error)"
        }
        return nil
    }

    static let gru: Writer = { w, n in
        let s = try recurrentShape(&w, n, gates: 3)
        if let why = recurrentCellRefusal(n) { throw LayerWriterError(why) }
        let acts = try recurrentActivations(n, defaults: ["Sigmoid", "Tanh"], dirs: 1)[0]
        var q = CoreML_Specification_GRULayerParams()
        q.inputVectorSize = UInt64(s.input); q.outputVectorSize = UInt64(s.hidden)
        q.activations = acts
        q.sequenceOutput = wants(w, n, 0)
        q.reverseInput = string(n, "direction", "forward") == "reverse"
        let (wN, rN) = (n.inputs[1], n.inputs[2])
        // ONNX gate g: 0 update (z), 1 reset (r), 2 hidden (Core ML's output gate).
        q.updateGateWeightMatrix = try gateMatrix(&w, wN, dir: 0, gate: 0, gates: 3, s: s)
        q.resetGateWeightMatrix = try gateMatrix(&w, wN, dir: 0, gate: 1, gates: 3, s: s)
        q.outputGateWeightMatrix = try gateMatrix(&w, wN, dir: 0, gate: 2, gates: 3, s: s)
        q.updateGateRecursionMatrix = try gateMatrix(&w, rN, dir: 0, gate: 0, gates: 3, s: s)
        q.resetGateRecursionMatrix = try gateMatrix(&w, rN, dir: 0, gate: 1, gates: 3, s: s)
        q.outputGateRecursionMatrix = try gateMatrix(&w, rN, dir: 0, gate: 2, gates: 3, s: s)
        if let b = try gateBiases(&w, n, gates: 3, s: s)?[0] {
            q.hasBiasVectors_p = true
            q.updateGateBiasVector = b[0]; q.resetGateBiasVector = b[1]; q.outputGateBiasVector = b[2]
        }
        try writeSingleState(&w, n, s: s) { l in l.gru = q }
    }

    static let rnn: Writer = { w, n in
        let s = try recurrentShape(&w, n, gates: 1)
        if let why = recurrentCellRefusal(n) { throw LayerWriterError(why) }
        let acts = try recurrentActivations(n, defaults: ["Tanh"], dirs: 1)[0]
        var q = CoreML_Specification_SimpleRecurrentLayerParams()
        q.inputVectorSize = UInt64(s.input); q.outputVectorSize = UInt64(s.hidden)
        q.activation = acts[0]
        q.sequenceOutput = wants(w, n, 0)
        q.reverseInput = string(n, "direction", "forward") == "reverse"
        q.weightMatrix = try gateMatrix(&w, n.inputs[1], dir: 0, gate: 0, gates: 1, s: s)
        q.recursionMatrix = try gateMatrix(&w, n.inputs[2], dir: 0, gate: 0, gates: 1, s: s)
        if let b = try gateBiases(&w, n, gates: 1, s: s)?[0] {
            q.hasBiasVector_p = true
            q.biasVector = b[0]
        }
        try writeSingleState(&w, n, s: s) { l in l.simpleRecurrent = q }
    }

    /// GRU and RNN: inputs [x (, h0)], outputs [y, h_T].
    static func writeSingleState(_ w: inout NNWriter, _ n: Node, s: RecurrentShape,
                                 _ set: (inout CoreML_Specification_NeuralNetworkLayer) -> Void) throws {
        let x5 = try sequenceBlob(&w, n, n.inputs[0])
        let h0 = try stateBlobs(&w, n, index: 5, tag: "h0", s: s)
        let base = n.outputs.first(where: { !$0.isEmpty }) ?? n.name
        let y = w.freshBlob("\(base)_y5"), hT = w.freshBlob("\(base)_h_5")
        var l = w.layer(n.name, inputs: [x5] + (h0 ?? []), outputs: [y, hT])
        set(&l)
        w.add(l)
        writeOutputs(&w, n, s: s, y: y, states: [(1, [hT])])
    }
}
