// N-dimensional NeuralNetwork layers (specification 4+): broadcasting math, gather, transpose, matmul, squeeze, reduce, layer norm.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    // MARK: N-dimensional layers

    static let simpleND: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = b.ranks[x]
        switch l.layer {
        case .clip(let c)?:
            b.node("Clip", l.name, [x, b.floats("\(l.name)_min", [c.minVal], shape: []), b.floats("\(l.name)_max", [c.maxVal], shape: [])], [y], rank: r)
        case .ceil?: b.node("Ceil", l.name, [x], [y], rank: r)
        case .floor?: b.node("Floor", l.name, [x], [y], rank: r)
        case .sign?: b.node("Sign", l.name, [x], [y], rank: r)
        case .round?: b.node("Round", l.name, [x], [y], rank: r)
        case .erf?: b.node("Erf", l.name, [x], [y], rank: r)
        case .gelu(let g)?:
            switch g.mode {
            case .exact: b.node("Gelu", l.name, [x], [y], rank: r)
            case .tanhApproximation: b.node("Gelu", l.name, [x], [y], ["approximate": .string("tanh")], rank: r)
            case .sigmoidApproximation:
                let t = b.temp("\(l.name)_scaled"), s = b.temp("\(l.name)_sigmoid")
                b.node("Mul", "\(l.name)_scale", [x, b.floats("\(l.name)_k", [1.702], shape: [])], [t], rank: r)
                b.node("Sigmoid", "\(l.name)_sigmoid", [t], [s], rank: r)
                b.node("Mul", l.name, [x, s], [y], rank: r)
            case .UNRECOGNIZED(let v): throw LayerReaderError("gelu mode \(v)")
            }
        default: throw LayerReaderError("no reader")
        }
    }

    static let broadcastable: Reader = { b, l, p in
        guard l.input.count == 2, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 2 inputs and 1 output") }
        var a = try b.value(l.input[0], place: p), c = try b.value(l.input[1], place: p)
        let y = try b.define(l.output[0], place: p)
        if b.graph.inputs.contains(where: { $0.name == a }) != b.graph.inputs.contains(where: { $0.name == c }) {
            // An int32 input against a float value: Core ML computes in float.
            a = b.asFloat(a); c = b.asFloat(c)
        }
        let op: String
        switch l.layer {
        case .addBroadcastable?: op = "Add"
        case .subtractBroadcastable?: op = "Sub"
        case .multiplyBroadcastable?: op = "Mul"
        case .divideBroadcastable?: op = "Div"
        case .maxBroadcastable?: op = "Max"
        case .minBroadcastable?: op = "Min"
        default: op = "Pow"
        }
        let r = [b.ranks[a], b.ranks[c]].compactMap { $0 }.max()
        b.node(op, l.name, [a, c], [y], rank: r)
    }

    static let gather: Reader = { b, l, p in
        guard l.input.count == 2, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 2 inputs and 1 output") }
        let data = try b.value(l.input[0], place: p), idx = try b.value(l.input[1], place: p)
        let y = try b.define(l.output[0], place: p)
        let i = b.temp("\(l.name)_indices")
        b.node("Cast", "\(l.name)_cast", [idx], [i], ["to": .int(7)], rank: b.ranks[idx])
        let r = (b.ranks[data]).flatMap { d in b.ranks[idx].map { d - 1 + $0 } }
        b.node("Gather", l.name, [data, i], [y], ["axis": .int(Int(l.gather.axis))], rank: r)
    }

    static let transpose: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axes = l.transpose.axes.map { Int(min($0, 64)) }
        guard Set(axes) == Set(0..<axes.count) else { throw ImportError.malformed(b.loc(p), reason: "transpose axes \(l.transpose.axes)") }
        b.node("Transpose", l.name, [x], [y], ["perm": ints(axes)], rank: axes.count)
    }

    static let batchedMatmul: Reader = { b, l, p in
        let q = l.batchedMatmul
        if q.int8DynamicQuantize { throw LayerReaderError("int8 dynamic quantization") }
        guard l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "expected one output") }
        if l.input.count == 1 {
            let x = try b.value(l.input[0], place: p)
            let y = try b.define(l.output[0], place: p)
            let cin = try dim(q.weightMatrixFirstDimension, "weightMatrixFirstDimension", b, p)
            let cout = try dim(q.weightMatrixSecondDimension, "weightMatrixSecondDimension", b, p)
            // Stored column-major: the bytes are [Cout, Cin].
            let we = try b.weight(q.weights, shape: [cout, cin], place: "\(p) weights")
            let wt: WeightEncoding
            do throws(WeightLayoutError) { wt = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
            let w = b.constant("\(l.name)_weights", wt)
            let r = b.ranks[x]
            if q.hasBias_p {
                let t = b.temp("\(l.name)_matmul")
                b.node("MatMul", "\(l.name)_matmul", [x, w], [t], rank: r)
                b.node("Add", l.name, [t, b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [cout], place: "\(p) bias"))], [y], rank: r)
            } else {
                b.node("MatMul", l.name, [x, w], [y], rank: r)
            }
            return
        }
        guard l.input.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "needs 1 or 2 inputs") }
        var a = try b.value(l.input[0], place: p), c = try b.value(l.input[1], place: p)
        let y = try b.define(l.output[0], place: p)
        func swapLast(_ v: String, _ tag: String) throws -> String {
            let r = try rank(b, v)
            guard r >= 2 else { throw LayerReaderError("transposing a rank-\(r) operand") }
            let t = b.temp("\(l.name)_\(tag)T")
            return b.node("Transpose", "\(l.name)_\(tag)T", [v], [t], ["perm": ints(Array(0..<(r - 2)) + [r - 1, r - 2])], rank: r)
        }
        if q.transposeA { a = try swapLast(a, "a") }
        if q.transposeB { c = try swapLast(c, "b") }
        let r = [b.ranks[a], b.ranks[c]].compactMap { $0 }.max().map { max($0, 2) }
        b.node("MatMul", l.name, [a, c], [y], rank: r)
    }

    static let squeeze: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.squeeze
        let r = try rank(b, x)
        if q.squeezeAll { throw LayerReaderError("squeezeAll (needs the shape)") }
        let axes = q.axes.map { Int($0) }
        if r == 1 { b.node("Identity", l.name, [x], [y], rank: 1); return }
        b.node("Squeeze", l.name, [x, b.ints("\(l.name)_axes", axes)], [y], rank: max(r - axes.count, 1))
    }

    static let expandDims: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axes = l.expandDims.axes.map { Int($0) }
        let r = b.ranks[x].map { $0 + axes.count }
        b.node("Unsqueeze", l.name, [x, b.ints("\(l.name)_axes", axes)], [y], rank: r)
    }

    static let flattenTo2D: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        b.node("Flatten", l.name, [x], [y], ["axis": .int(Int(l.flattenTo2D.axis))], rank: 2)
    }

    static let reshapeStatic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let t = l.reshapeStatic.targetShape.map { Int($0) }
        guard !t.isEmpty, t.allSatisfy({ $0 >= -1 && $0 <= 1 << 31 }) else { throw ImportError.malformed(b.loc(p), reason: "targetShape \(t)") }
        b.node("Reshape", l.name, [x, b.ints("\(l.name)_shape", t)], [y], rank: t.count)
    }

    static let tile: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let reps = try l.tile.reps.map { try dim($0, "reps", b, p) }
        b.node("Tile", l.name, [x, b.ints("\(l.name)_reps", reps)], [y], rank: reps.count)
    }

    static let argMax: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = b.ranks[x]
        let t = b.temp("\(l.name)_index")
        let keep = !l.argMax.removeDim
        b.node("ArgMax", "\(l.name)_argmax", [x], [t], ["axis": .int(Int(l.argMax.axis)), "keepdims": .int(keep ? 1 : 0)],
               rank: r.map { keep ? $0 : max($0 - 1, 1) })
        b.node("Cast", l.name, [t], [y], ["to": .int(1)], rank: b.ranks[t])
    }

    static let reduceND: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let op: String, axes: [Int64], keep: Bool, all: Bool
        func get<T: ReduceND>(_ q: T, _ name: String) -> (String, [Int64], Bool, Bool) { (name, q.axes, q.keepDims, q.reduceAll) }
        switch l.layer {
        case .reduceL1(let q)?: (op, axes, keep, all) = get(q, "ReduceL1")
        case .reduceL2(let q)?: (op, axes, keep, all) = get(q, "ReduceL2")
        case .reduceMax(let q)?: (op, axes, keep, all) = get(q, "ReduceMax")
        case .reduceMin(let q)?: (op, axes, keep, all) = get(q, "ReduceMin")
        case .reduceSum(let q)?: (op, axes, keep, all) = get(q, "ReduceSum")
        case .reduceProd(let q)?: (op, axes, keep, all) = get(q, "ReduceProd")
        case .reduceMean(let q)?: (op, axes, keep, all) = get(q, "ReduceMean")
        case .reduceLogSum(let q)?: (op, axes, keep, all) = get(q, "ReduceLogSum")
        case .reduceSumSquare(let q)?: (op, axes, keep, all) = get(q, "ReduceSumSquare")
        case .reduceLogSumExp(let q)?: (op, axes, keep, all) = get(q, "ReduceLogSumExp")
        default: throw LayerReaderError("no reader")
        }
        let r = try rank(b, x)
        let list = all ? Array(0..<r) : axes.map { Int($0) }
        let outRank = keep ? r : max(r - list.count, 1)
        if !keep, list.count == r {
            // Core ML keeps a full reduction as shape (1).
            let t = b.temp("\(l.name)_all")
            b.node(op, l.name, [x, b.ints("\(l.name)_axes", list)], [t], ["keepdims": .int(0)], rank: 0)
            b.node("Reshape", "\(l.name)_vector", [t, b.ints("\(l.name)_shape", [1])], [y], rank: 1)
            return
        }
        b.node(op, l.name, [x, b.ints("\(l.name)_axes", list)], [y], ["keepdims": .int(keep ? 1 : 0)], rank: outRank)
    }

    static let layerNormalization: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.layerNormalization
        let shape = q.normalizedShape.map { Int($0) }
        guard !shape.isEmpty, shape.allSatisfy({ $0 > 0 }), checkedElementCount(shape) != nil else {
            throw ImportError.malformed(b.loc(p), reason: "normalizedShape \(q.normalizedShape)")
        }
        let g = b.constant("\(l.name)_gamma", try b.weight(q.gamma, shape: shape, place: "\(p) gamma"))
        let be = b.constant("\(l.name)_beta", try b.weight(q.beta, shape: shape, place: "\(p) beta"))
        b.node("LayerNormalization", l.name, [x, g, be], [y], ["axis": .int(-shape.count), "epsilon": .float(q.eps)], rank: b.ranks[x])
    }
}
