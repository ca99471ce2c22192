// Elementwise ops, activations, reductions and shape ops → MIL ops.
import ShrinkwrapIR

extension MILOpWriters {
    static let unary: Writer = { w, n in
        guard let op = unaryOps[n.opType] else { throw MILWriterError("no MIL op") }
        try w.emit(n, op, [("x", .value(try w.value(try input(n, 0))))])
    }

    /// Neg → x · (−1); Reciprocal → 1 / x (MIL's inverse adds an epsilon).
    static let negOrReciprocal: Writer = { w, n in
        let x = try w.value(try input(n, 0))
        let t = try w.type(of: x)
        let one: String
        switch t.dataType {
        case .int32: one = w.builder.const(n.outputs[0] + "_one", .int32([n.opType == "Neg" ? -1 : 1], shape: []))
        default: one = w.float(n, "one", n.opType == "Neg" ? -1 : 1)
        }
        if n.opType == "Neg" {
            try w.emit(n, "mul", [("x", .value(x)), ("y", .value(one))])
        } else {
            try w.emit(n, "real_div", [("x", .value(one)), ("y", .value(x))])
        }
    }

    static let activation: Writer = { w, n in
        guard let op = activationOps[n.opType] else { throw MILWriterError("no MIL op") }
        let x = try w.value(try input(n, 0))
        var args: [(String, MILArgument)] = [("x", .value(x))]
        switch n.opType {
        case "LeakyRelu": args.append(("alpha", .value(w.float(n, "alpha", n.float("alpha", 0.01)))))
        case "Elu": args.append(("alpha", .value(w.float(n, "alpha", n.float("alpha", 1)))))
        case "ThresholdedRelu": args.append(("alpha", .value(w.float(n, "alpha", n.float("alpha", 1)))))
        case "HardSigmoid":
            args.append(("alpha", .value(w.float(n, "alpha", n.float("alpha", 0.2)))))
            args.append(("beta", .value(w.float(n, "beta", n.float("beta", 0.5)))))
        case "Gelu":
            switch n.string("approximate", "none") {
            case "none": args.append(("mode", .value(w.string(n, "mode", "EXACT"))))
            case "tanh": args.append(("mode", .value(w.string(n, "mode", "TANH_APPROXIMATION"))))
            case let m: throw MILWriterError("approximate '\(m)'")
            }
        case "Selu":
            // selu(x) = gamma · elu(x, alpha)
            let t = try w.computeType(n.outputs[0])
            let e = w.builder.op1("elu", [("x", .value(x)), ("alpha", .value(w.float(n, "alpha", n.float("alpha", 1.67326319))))],
                                  output: w.builder.fresh(n.outputs[0] + "_elu"), t)
            try w.emit(n, "mul", [("x", .value(e)), ("y", .value(w.float(n, "gamma", n.float("gamma", 1.05070102))))])
            return
        default: break
        }
        try w.emit(n, op, args)
    }

    static let binary: Writer = { w, n in
        guard let op = binaryOps[n.opType] else { throw MILWriterError("no MIL op") }
        let operands = n.inputs.filter { !$0.isEmpty }
        guard operands.count >= 2 else {
            guard operands.count == 1, ["Sum", "Max", "Min"].contains(n.opType) else { throw MILWriterError("\(operands.count) operands") }
            try w.emit(n, "identity", [("x", .value(try w.value(operands[0])))])
            return
        }
        // Variadic Sum / Max / Min: a chain, left to right (as the interpreter folds them).
        var acc = try w.value(operands[0])
        let t = try w.computeType(n.outputs[0])
        for (k, b) in operands.dropFirst().enumerated() {
            let args: [(String, MILArgument)] = [("x", .value(acc)), ("y", .value(try w.value(b)))]
            if k == operands.count - 2 {
                try w.emit(n, op, args)
            } else {
                acc = w.builder.op1(op, args, output: w.builder.fresh(n.outputs[0] + "_partial"), t)
            }
        }
    }

    static let softmax: Writer = { w, n in
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        let axis = try normalize(n.int("axis", -1), rank: rank)
        let xv = try w.value(x)
        if n.opType == "Softmax" {
            try w.emit(n, "softmax", [("x", .value(xv)), ("axis", .value(w.int(n, "axis", axis)))])
            return
        }
        // log_softmax(x) = x − log(Σ exp x), the sum taken stably by reduce_log_sum_exp.
        var t = try w.computeType(n.outputs[0])
        t.shape[axis] = 1
        let lse = w.builder.op1("reduce_log_sum_exp", [("x", .value(xv)), ("axes", .value(w.ints(n, "axes", [axis]))),
                                                      ("keep_dims", .value(w.bool(n, "keep_dims", true)))],
                                output: w.builder.fresh(n.outputs[0] + "_lse"), t)
        try w.emit(n, "sub", [("x", .value(xv)), ("y", .value(lse))])
    }

    static let clip: Writer = { w, n in
        let x = try w.value(try input(n, 0))
        let lo = w.constFloats(n.input(1))?.first ?? (n.attributes["min"] != nil ? n.float("min", 0) : nil)
        let hi = w.constFloats(n.input(2))?.first ?? (n.attributes["max"] != nil ? n.float("max", 0) : nil)
        if (n.input(1).map { !$0.isEmpty && w.constFloats($0) == nil } ?? false) || (n.input(2).map { !$0.isEmpty && w.constFloats($0) == nil } ?? false) {
            throw MILWriterError("bounds that are not constants")
        }
        switch (lo, hi) {
        case let (l?, h?): try w.emit(n, "clip", [("x", .value(x)), ("alpha", .value(w.float(n, "alpha", l))), ("beta", .value(w.float(n, "beta", h)))])
        case let (l?, nil): try w.emit(n, "maximum", [("x", .value(x)), ("y", .value(w.float(n, "min", l)))])
        case let (nil, h?): try w.emit(n, "minimum", [("x", .value(x)), ("y", .value(w.float(n, "max", h)))])
        case (nil, nil): try w.emit(n, "identity", [("x", .value(x))])
        }
    }

    static let prelu: Writer = { w, n in
        let x = try input(n, 0), slope = try input(n, 1)
        let shape = try w.shape(x), ss = try w.shape(slope)
        let channels = shape.count >= 3 ? shape[1] : -1
        // One slope per channel of a [N, C, …] input (the slope broadcasts along axis 1): MIL's prelu.
        let aligned = [Int](repeating: 1, count: max(shape.count - ss.count, 0)) + ss
        if w.graph.isConstant(slope), channels > 0, aligned.count == shape.count,
           aligned.enumerated().allSatisfy({ $0.offset == 1 ? $0.element == channels : $0.element == 1 }) {
            try w.emit(n, "prelu", [("x", .value(try w.value(x))), ("alpha", .value(try w.weight(slope, reshapedTo: [channels])))])
            return
        }
        // Otherwise relu(x) + slope · min(x, 0), with numpy broadcasting.
        let t = try w.computeType(n.outputs[0])
        let xv = try w.value(x)
        let pos = w.builder.op1("relu", [("x", .value(xv))], output: w.builder.fresh(n.outputs[0] + "_pos"), t)
        let neg = w.builder.op1("minimum", [("x", .value(xv)), ("y", .value(w.float(n, "zero", 0)))], output: w.builder.fresh(n.outputs[0] + "_neg"), try w.computeType(x))
        let scaled = w.builder.op1("mul", [("x", .value(neg)), ("y", .value(try w.value(slope)))], output: w.builder.fresh(n.outputs[0] + "_scaled"), t)
        try w.emit(n, "add", [("x", .value(pos)), ("y", .value(scaled))])
    }

    static let identity: Writer = { w, n in
        guard n.outputs.dropFirst().allSatisfy({ $0.isEmpty || !w.isRead($0) }) else { throw MILWriterError("a mask output that is read") }
        try w.emit(n, "identity", [("x", .value(try w.value(try input(n, 0))))])
    }

    static let castOp: Writer = { w, n in
        let x = try w.value(try input(n, 0))
        let to = try w.computeType(n.outputs[0]).dataType
        let from = try w.type(of: x).dataType
        if to == from {
            try w.emit(n, "identity", [("x", .value(x))])
            return
        }
        let names: [MILDataType: String] = [.float32: "fp32", .float16: "fp16", .int32: "int32", .bool: "bool"]
        guard let dtype = names[to] else { throw MILWriterError("cast to \(to)") }
        try w.emit(n, "cast", [("x", .value(x)), ("dtype", .value(w.string(n, "dtype", dtype)))])
    }

    static let reduce: Writer = { w, n in
        guard let op = reduceOps[n.opType] else { throw MILWriterError("no MIL op") }
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        var axes = n.ints("axes")
        if let a = n.input(1), !a.isEmpty {
            guard let v = w.constInts(a) else { throw MILWriterError("axes that are not constants") }
            axes = v
        }
        if axes?.isEmpty ?? true {
            if n.int("noop_with_empty_axes", 0) != 0 {
                try w.emit(n, "identity", [("x", .value(try w.value(x)))])
                return
            }
            axes = Array(0..<rank)
        }
        let normalized = try (axes ?? []).map { try normalize($0, rank: rank) }
        try w.emit(n, op, [("x", .value(try w.value(x))), ("axes", .value(w.ints(n, "axes", normalized))),
                           ("keep_dims", .value(w.bool(n, "keep_dims", n.int("keepdims", 1) != 0)))])
    }

    static let argReduce: Writer = { w, n in
        let x = try input(n, 0)
        guard n.int("select_last_index", 0) == 0 else { throw MILWriterError("select_last_index") }
        let axis = try normalize(n.int("axis", 0), rank: try w.shape(x).count)
        try w.emit(n, n.opType == "ArgMax" ? "reduce_argmax" : "reduce_argmin",
                   [("x", .value(try w.value(x))), ("axis", .value(w.int(n, "axis", axis))),
                    ("keep_dims", .value(w.bool(n, "keep_dims", n.int("keepdims", 1) != 0)))])
    }

    static let whereOp: Writer = { w, n in
        try w.emit(n, "select", [("cond", .value(try w.value(try input(n, 0)))), ("a", .value(try w.value(try input(n, 1)))),
                                 ("b", .value(try w.value(try input(n, 2))))])
    }

    // MARK: shapes

    /// Every op whose output shape is known: a reshape to it.
    static let reshape: Writer = { w, n in
        let x = try input(n, 0)
        try w.emit(n, "reshape", [("x", .value(try w.value(x))), ("shape", .value(w.ints(n, "shape", try w.shape(n.outputs[0]))))])
    }

    static let transpose: Writer = { w, n in
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        let perm = n.ints("perm") ?? Array((0..<rank).reversed())
        guard perm.count == rank, Set(perm) == Set(0..<rank) else { throw MILWriterError("perm \(perm)") }
        try w.emit(n, "transpose", [("x", .value(try w.value(x))), ("perm", .value(w.ints(n, "perm", perm)))])
    }

    static let concat: Writer = { w, n in
        let parts = n.inputs.filter { !$0.isEmpty }
        let rank = try w.shape(n.outputs[0]).count
        let axis = try normalize(n.int("axis", 0), rank: rank)
        // Empty parts add nothing (MIL refuses a zero-sized operand).
        let kept = try parts.filter { try w.shape($0)[axis] > 0 }
        guard !kept.isEmpty else { throw MILWriterError("every part is empty") }
        if kept.count == 1 {
            try w.emit(n, "identity", [("x", .value(try w.value(kept[0])))])
            return
        }
        try w.emit(n, "concat", [("values", .values(try kept.map { try w.value($0) })), ("axis", .value(w.int(n, "axis", axis))),
                                 ("interleave", .value(w.bool(n, "interleave", false)))])
    }

    static let split: Writer = { w, n in
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        let axis = try normalize(n.int("axis", 0), rank: rank)
        guard n.outputs.allSatisfy({ !$0.isEmpty }) else { throw MILWriterError("an unnamed output") }
        let sizes = try n.outputs.map { try w.shape($0)[axis] }
        let outs = try n.outputs.map { ($0, try w.computeType($0)) }
        let args: [(String, MILArgument)] = [("x", .value(try w.value(x))), ("split_sizes", .value(w.ints(n, "split_sizes", sizes))),
                                             ("axis", .value(w.int(n, "axis", axis)))]
        let named = outs.map { (w.define($0.0), $0.1) }
        w.builder.op("split", args, outputs: named)
    }

    static let slice: Writer = { w, n in
        let x = try input(n, 0)
        let shape = try w.shape(x)
        let rank = shape.count
        func values(_ k: Int, _ attr: String) throws -> [Int]? {
            if let v = n.input(k), !v.isEmpty {
                guard let c = w.constInts(v) else { throw MILWriterError("\(attr) that are not constants") }
                return c
            }
            return n.ints(attr)
        }
        if let v = n.input(1), w.constInts(v) == nil {
            try sliceFromRunTimeStarts(&w, n, axes: try values(3, "axes"), steps: try values(4, "steps"))
            return
        }
        guard let starts = try values(1, "starts"), let ends = try values(2, "ends") else { throw MILWriterError("starts / ends") }
        let axes = try values(3, "axes") ?? Array(0..<starts.count)
        let steps = try values(4, "steps") ?? Array(repeating: 1, count: starts.count)
        guard starts.count == ends.count, axes.count == starts.count, steps.count == starts.count else { throw MILWriterError("inconsistent lengths") }
        var begin = [Int](repeating: 0, count: rank), end = shape, stride = [Int](repeating: 1, count: rank)
        var endMask = [Bool](repeating: false, count: rank)
        for k in starts.indices {
            let a = try normalize(axes[k], rank: rank)
            let d = shape[a], step = steps[k]
            guard step != 0 else { throw MILWriterError("step 0") }
            var s = starts[k] < 0 ? starts[k] + d : starts[k]
            var e = ends[k] < 0 ? ends[k] + d : ends[k]
            if step > 0 {
                s = min(max(s, 0), d); e = min(max(e, 0), d)
            } else {
                s = min(max(s, 0), d - 1); e = min(max(e, -1), d - 1)
                // MIL reads a negative end from the back: "before index 0" is the end mask.
                if e == -1 { endMask[a] = true; e = 0 }
            }
            begin[a] = s; end[a] = e; stride[a] = step
        }
        try w.emit(n, "slice_by_index", [("x", .value(try w.value(x))), ("begin", .value(w.ints(n, "begin", begin))),
                                         ("end", .value(w.ints(n, "end", end))), ("stride", .value(w.ints(n, "stride", stride))),
                                         ("end_mask", .value(w.builder.const(n.outputs[0] + "_end_mask", .bools(endMask, shape: [rank]))))])
    }

    /// A Slice whose starts are known at run time only, and whose output
    /// shape is fixed (a loop body's slice of one step: the shape seen in every
    /// iteration): `slice_by_size` from the starts (negative ones counted from
    /// the end) with the output's sizes. Steps of 1 only.
    static func sliceFromRunTimeStarts(_ w: inout MILWriter, _ n: Node, axes given: [Int]?, steps: [Int]?) throws {
        let x = try input(n, 0), startsName = try input(n, 1)
        let shape = try w.shape(x), out = try w.shape(n.outputs[0])
        let count = try w.shape(startsName).reduce(1, *)
        let axes = try (given ?? Array(0..<count)).map { try normalize($0, rank: shape.count) }
        guard axes.count == count, Set(axes).count == count else { throw MILWriterError("starts and axes of different lengths") }
        guard (steps ?? []).allSatisfy({ $0 == 1 }) else { throw MILWriterError("run-time starts with steps other than 1") }
        let starts = try w.value(startsName)
        guard try w.type(of: starts).dataType == .int32 else { throw MILWriterError("starts of type \(try w.type(of: starts).dataType)") }
        // begin[a] = starts[k] for axis a = axes[k], else 0: the starts and a zero, gathered per axis.
        let base = n.outputs[0] + "_begin"
        let padded = w.builder.op1("concat", [("values", .values([starts, w.builder.int32s(base + "_zero", [0])])), ("axis", .value(w.builder.int32(base + "_axis", 0))),
                                              ("interleave", .value(w.builder.bool(base + "_interleave", false)))],
                                   output: w.builder.fresh(base + "_padded"), MILTensorType(dataType: .int32, shape: [count + 1]))
        let pick = shape.indices.map { a in axes.firstIndex(of: a) ?? count }
        let begin = w.builder.op1("gather", [("x", .value(padded)), ("indices", .value(w.builder.int32s(base + "_pick", pick))),
                                             ("axis", .value(w.builder.int32(base + "_pick_axis", 0)))],
                                  output: w.builder.fresh(base + "_raw"), MILTensorType(dataType: .int32, shape: [shape.count]))
        let wrapped = try wrappedIndicesUnchecked(&w, n, begin, dims: shape)
        try w.emit(n, "slice_by_size", [("x", .value(try w.value(x))), ("begin", .value(wrapped)), ("size", .value(w.ints(n, "size", out)))])
    }

    static let pad: Writer = { w, n in
        let x = try input(n, 0)
        let rank = try w.shape(x).count
        var pads = n.ints("pads")
        if let p = n.input(1), !p.isEmpty {
            guard let v = w.constInts(p) else { throw MILWriterError("pads that are not constants") }
            pads = v
        }
        guard var p = pads else { throw MILWriterError("no pads") }
        if let a = n.input(3), !a.isEmpty {
            guard let axes = w.constInts(a), p.count == 2 * axes.count else { throw MILWriterError("axes that are not constants") }
            var full = [Int](repeating: 0, count: 2 * rank)
            for (k, axis) in axes.enumerated() {
                let ax = try normalize(axis, rank: rank)
                full[ax] = p[k]; full[ax + rank] = p[k + axes.count]
            }
            p = full
        }
        guard p.count == 2 * rank, p.allSatisfy({ $0 >= 0 }) else { throw MILWriterError("pads \(p) (negative pads crop)") }
        let mode = n.string("mode", "constant")
        let milMode: String
        switch mode {
        case "constant": milMode = "constant"
        case "reflect": milMode = "reflect"
        case "edge": milMode = "replicate"
        default: throw MILWriterError("mode '\(mode)'")
        }
        var begin = Array(p[..<rank]), endPads = Array(p[rank...])
        if milMode != "constant" {
            // Reflect / replicate pad the last two axes (the lowering moved other pads there or refused).
            guard rank >= 2, begin.dropLast(2).allSatisfy({ $0 == 0 }), endPads.dropLast(2).allSatisfy({ $0 == 0 }) else {
                throw MILWriterError("\(mode) pads outside the last two axes")
            }
            begin = Array(begin.suffix(2)); endPads = Array(endPads.suffix(2))
        }
        let interleaved = zip(begin, endPads).flatMap { [$0, $1] }
        var value: Float = n.float("value", 0)
        if let cv = n.input(2), !cv.isEmpty {
            guard let v = w.constFloats(cv)?.first ?? w.constInts(cv).map({ Float($0.first ?? 0) }) else { throw MILWriterError("a constant value that is not a constant") }
            value = v
        }
        try w.emit(n, "pad", [("x", .value(try w.value(x))), ("pad", .value(w.ints(n, "pad", interleaved))), ("mode", .value(w.string(n, "mode", milMode))),
                              ("constant_val", .value(w.float(n, "constant_val", value)))])
    }

    static let gather: Writer = { w, n in
        let x = try input(n, 0), idx = try input(n, 1)
        let shape = try w.shape(x)
        let axis = try normalize(n.int("axis", 0), rank: shape.count)
        var iv: String
        if let c = w.constInts(idx) {
            let d = shape[axis]
            guard c.allSatisfy({ $0 >= -d && $0 < d }) else { throw MILWriterError("indices outside [-\(d), \(d))") }
            iv = w.builder.const(n.outputs[0] + "_indices", .int32(c.map { Int32($0 < 0 ? $0 + d : $0) }, shape: try w.shape(idx)))
        } else {
            iv = try w.value(idx)
        }
        try w.emit(n, "gather", [("x", .value(try w.value(x))), ("indices", .value(iv)), ("axis", .value(w.int(n, "axis", axis)))])
    }

    /// Tile; repeats known at run time only come from the fixed input and
    /// output shapes (a loop body's tile: the shapes seen in every iteration).
    static let tile: Writer = { w, n in
        let x = try input(n, 0)
        var reps = w.constInts(n.input(1))
        if reps == nil {
            let inShape = try w.shape(x), outShape = try w.shape(n.outputs[0])
            guard inShape.count == outShape.count, zip(inShape, outShape).allSatisfy({ $0 > 0 && $1 % $0 == 0 }) else {
                throw MILWriterError("repeats that are not constants, from \(inShape) to \(outShape)")
            }
            reps = zip(inShape, outShape).map { $1 / $0 }
        }
        guard let reps else { throw MILWriterError("no repeats") }
        try w.emit(n, "tile", [("x", .value(try w.value(x))), ("reps", .value(w.ints(n, "reps", reps)))])
    }

    /// Expand to the (static) output shape: a reshape to its rank, then tile.
    static let expand: Writer = { w, n in
        let x = try input(n, 0)
        let inShape = try w.shape(x), outShape = try w.shape(n.outputs[0])
        guard outShape.count >= inShape.count else { throw MILWriterError("shapes \(inShape) → \(outShape)") }
        let padded = [Int](repeating: 1, count: outShape.count - inShape.count) + inShape
        var v = try w.value(x)
        if padded != inShape { v = try w.reshaped(v, to: padded, base: n.outputs[0] + "_rank") }
        let reps = zip(padded, outShape).map { $0 == $1 ? 1 : $1 }
        guard zip(padded, outShape).allSatisfy({ $0 == $1 || $0 == 1 }) else { throw MILWriterError("shapes \(inShape) → \(outShape)") }
        try w.emit(n, "tile", [("x", .value(v)), ("reps", .value(w.ints(n, "reps", reps)))])
    }

    static let depthToSpace: Writer = { w, n in
        let x = try w.value(try input(n, 0))
        let block = n.int("blocksize", 0)
        guard block >= 1 else { throw MILWriterError("blocksize \(block)") }
        if n.opType == "SpaceToDepth" {
            try w.emit(n, "space_to_depth", [("x", .value(x)), ("block_size", .value(w.int(n, "block_size", block)))])
        } else if n.string("mode", "DCR") == "CRD" {
            try w.emit(n, "pixel_shuffle", [("x", .value(x)), ("upscale_factor", .value(w.int(n, "upscale_factor", block)))])
        } else {
            try w.emit(n, "depth_to_space", [("x", .value(x)), ("block_size", .value(w.int(n, "block_size", block)))])
        }
    }
}
