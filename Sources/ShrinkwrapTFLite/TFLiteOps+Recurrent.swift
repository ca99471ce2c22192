import FlatBuffers
import ShrinkwrapIR

/// Recurrent translators: UNIDIRECTIONAL_SEQUENCE_LSTM as ONNX LSTM, gate weights stacked.
extension TFLiteOps {
    /// Gate weights stacked by rows into one weight, keeping a common encoding:
    /// float32, float16, or 8-bit affine with one scale per row (per-tensor
    /// gate scales repeated); mixed encodings are decoded to float32.
    static func stackRows(_ parts: [WeightEncoding]) throws(WeightLayoutError) -> WeightEncoding {
        guard let first = parts.first else { throw WeightLayoutError("no gate weights") }
        let cols = first.shape.count == 2 ? first.shape[1] : (first.shape.count == 1 ? 1 : 0)
        guard parts.allSatisfy({ ($0.shape.count == 2 && $0.shape[1] == cols) || ($0.shape.count == 1 && cols == 1) }) else {
            throw WeightLayoutError("gate weights of shapes \(parts.map(\.shape)) do not stack")
        }
        let rows = parts.reduce(0) { $0 + ($1.shape.first ?? 0) }
        let shape = first.shape.count == 2 ? [rows, cols] : [rows]
        let affines = parts.compactMap { e -> AffineWeights? in if case .affine(let a) = e { return a } else { return nil } }
        if affines.count == parts.count, affines.allSatisfy({ $0.bits == 8 && $0.signed == affines[0].signed && $0.shape.count == 2 }) {
            var q: [Int16] = [], scale: [Float] = [], bias: [Float] = []
            for a in affines {
                let r = a.shape[0]
                q += a.q
                if a.scale.count == 1 {
                    scale += Array(repeating: a.scale[0], count: r)
                    bias += Array(repeating: a.bias[0], count: r)
                } else if a.scaleShape == [r, 1] {
                    scale += a.scale
                    bias += a.bias
                } else {
                    return try denseStack(parts, shape: shape)
                }
            }
            return .affine(try AffineWeights(shape: shape, bits: 8, signed: affines[0].signed, q: q, blockShape: [1, cols], scale: scale, bias: bias))
        }
        let halves = parts.compactMap { e -> Float16Weights? in if case .float16(let h) = e { return h } else { return nil } }
        if halves.count == parts.count {
            return .float16(try Float16Weights(shape: shape, bits: halves.flatMap(\.bits)))
        }
        return try denseStack(parts, shape: shape)
    }

    /// The parts decoded to float32 and concatenated (integer weights converted; any other type refused).
    static func denseStack(_ parts: [WeightEncoding], shape: [Int]) throws(WeightLayoutError) -> WeightEncoding {
        var values: [Float] = []
        for p in parts {
            let t = p.decoded()
            guard let v = t.floats ?? t.ints?.map(Float.init) else { throw WeightLayoutError("a \(t.dtype) gate weight") }
            values += v
        }
        guard values.count == shape.reduce(1, *) else { throw WeightLayoutError("\(values.count) gate weights for shape \(shape)") }
        return .dense(Tensor(values, shape: shape))
    }

    /// UNIDIRECTIONAL_SEQUENCE_LSTM → ONNX LSTM (gates i, o, f, c), peepholes
    /// as P, and cell_clip as the IR's `shrinkwrap_cell_clip` (the Keras
    /// converter always writes 10). CIFG, projection and layer norm are refused.
    static func sequenceLSTM(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        guard op.inputs.count >= 20, op.outputs.count >= 1 else {
            throw ImportError.malformed(c.loc(op), reason: "\(op.inputs.count) inputs; UNIDIRECTIONAL_SEQUENCE_LSTM has 20 or 24")
        }
        let o = try c.options(op, "UnidirectionalSequenceLSTMOptions")
        let act: Int8 = try c.option(o, 0, Int8(4), op)
        let cellClip: Float = try c.option(o, 1, Float(0), op), projClip: Float = try c.option(o, 2, Float(0), op)
        let timeMajor: Bool = try c.option(o, 3, false, op)
        func has(_ k: Int) -> Bool { k < op.inputs.count && op.inputs[k] >= 0 }
        let cifg = !has(1)
        var refused: [String] = []
        if has(16) || has(17) { refused.append("projection") }
        if (20..<24).contains(where: has) { refused.append("layer normalization") }
        if projClip != 0 { refused.append("projection clipping") }
        // TFLite's CIFG computes i = 1 − f; ONNX's input_forget couples the other way round (f = 1 − i).
        if cifg { refused.append("coupled input and forget gates (CIFG)") }
        let activations: [Int8: String] = [1: "Relu", 4: "Tanh", 6: "Sigmoid"]
        guard let g = activations[act] else { throw ImportError.unsupported(c.loc(op), what: "LSTM activation \(act)") }
        if !refused.isEmpty { throw ImportError.unsupported(c.loc(op), what: "LSTM with " + refused.joined(separator: ", ")) }
        func weight(_ k: Int) throws -> WeightEncoding {
            guard let e = c.constantEncoding(op.inputs[k]) else {
                throw ImportError.unsupported(c.loc(op), what: "LSTM weight (input \(k)) computed at run time")
            }
            return e
        }
        // TFLite gate inputs i, f, c, o → ONNX order i, o, f, c.
        let w = try [1, 4, 2, 3].map(weight), r = try [5, 8, 6, 7].map(weight), b = try [12, 15, 13, 14].map(weight)
        guard let hidden = w.first?.shape.first, let inSize = w.first?.shape.last, hidden > 0,
              w.allSatisfy({ $0.shape == [hidden, inSize] }), r.allSatisfy({ $0.shape == [hidden, hidden] }),
              b.allSatisfy({ $0.shape == [hidden] }) else {
            throw ImportError.malformed(c.loc(op), reason: "LSTM gate shapes: input \(w.map(\.shape)), recurrent \(r.map(\.shape)), bias \(b.map(\.shape))")
        }
        let stackedW: WeightEncoding, stackedR: WeightEncoding
        do {
            stackedW = try stackRows(w)
            stackedR = try stackRows(r)
        } catch {
            throw ImportError.badTensor(c.loc(op), reason: error.reason)
        }
        func rank3(_ e: WeightEncoding, _ base: String) throws -> String {
            let reshaped: WeightEncoding
            do { reshaped = try e.reshaped([1] + e.shape) } catch { throw ImportError.badTensor(c.loc(op), reason: error.reason) }
            return c.addConstant(base, reshaped)
        }
        let out = c.value(op.outputs[0])
        let wName = try rank3(stackedW, out + "_W"), rName = try rank3(stackedR, out + "_R")
        let biases = b.flatMap { $0.decoded().floats ?? [] } + Array(repeating: 0, count: 4 * hidden)
        guard biases.count == 8 * hidden else { throw ImportError.malformed(c.loc(op), reason: "LSTM gate biases are not \(hidden) each") }
        let bName = c.addConstant(out + "_B", .dense(Tensor(biases, shape: [1, 8 * hidden])))
        var pName = ""
        if has(9) || has(10) || has(11) {
            let peep = try [9, 11, 10].map { k -> [Float] in
                let v = has(k) ? (try weight(k)).decoded().floats ?? [] : Array(repeating: 0, count: hidden)
                guard v.count == hidden else {
                    throw ImportError.malformed(c.loc(op), reason: "peephole weights (input \(k)) hold \(v.count) values for \(hidden) cells")
                }
                return v
            }
            pName = c.addConstant(out + "_P", .dense(Tensor(peep.flatMap { $0 }, shape: [1, 3 * hidden])))
        }
        var x = c.value(op.inputs[0])
        if !timeMajor {
            let t = c.fresh(x + "_tbi")
            c.emit("Transpose", [x], [t], ["perm": .ints([1, 0, 2])])
            x = t
        }
        let y = c.fresh(out + "_y")
        var attrs: [String: Attribute] = ["hidden_size": .int(hidden), "activations": .strings(["Sigmoid", g, g])]
        if cellClip > 0 { attrs["shrinkwrap_cell_clip"] = .float(cellClip) }
        c.emit("LSTM", [x, wName, rName, bName, "", "", "", pName], [y], attrs, name: out)
        let squeezed = timeMajor ? out : c.fresh(out + "_tbh")
        c.emit("Squeeze", [y, c.int64Constant("lstm_axes", [1])], [squeezed])
        if !timeMajor { c.emit("Transpose", [squeezed], [out], ["perm": .ints([1, 0, 2])]) }
    }
}
