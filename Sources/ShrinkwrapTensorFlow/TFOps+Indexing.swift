import ShrinkwrapIR
import TensorFlowSchema

/// StridedSlice, Slice and Gather (GatherV2, Gather, ResourceGather).
extension TFOps {
    static let indexing: [String: Translator] = [
        "StridedSlice": stridedSlice,
        "Slice": { c, op in
            try c.arity(op, 3)
            let begin = try c.ints(op, 1, "begin"), size = try c.ints(op, 2, "size")
            guard begin.count == size.count, begin.allSatisfy({ $0 >= 0 }), size.allSatisfy({ $0 >= -1 }) else {
                throw c.malformed(op, "begin \(begin), size \(size)")
            }
            let ends = zip(begin, size).map { $1 == -1 ? Int(Int64.max) : $0 + $1 }
            emitSlice(&c, op, try c.input(op, 0), starts: begin, ends: ends, axes: Array(begin.indices), steps: begin.map { _ in 1 })
        },
        "GatherV2": { c, op in
            try c.arity(op, 3)
            let axis = try c.ints(op, 2, "axis")
            guard axis.count == 1 else { throw c.malformed(op, "axis \(axis)") }
            guard c.int(op, "batch_dims", 0) == 0 else { throw c.unsupported(op, "batch_dims \(c.int(op, "batch_dims", 0))") }
            c.emit("Gather", [try c.input(op, 0), try c.input(op, 1)], [c.output(op)], ["axis": .int(axis[0])])
        },
        "Gather": { c, op in try simple(&c, op, "Gather", arity: 2, ["axis": .int(0)]) },
        // Rows of a variable (Keras' Embedding in a SavedModel): the handle's tensor, gathered on axis 0.
        "ResourceGather": { c, op in
            guard c.int(op, "batch_dims", 0) == 0 else { throw c.unsupported(op, "batch_dims \(c.int(op, "batch_dims", 0))") }
            try simple(&c, op, "Gather", arity: 2, ["axis": .int(0)])
        },
    ]

    /// A Slice into `op`'s output (the input itself when nothing is cut).
    static func emitSlice(_ c: inout TFContext, _ op: TFOp, _ x: String, starts: [Int], ends: [Int], axes: [Int], steps: [Int],
                          into out: String? = nil) {
        let keep = axes.indices.filter { !(starts[$0] == 0 && ends[$0] == Int(Int64.max) && steps[$0] == 1) }
        let target = out ?? c.output(op)
        guard !keep.isEmpty else { return c.emit("Identity", [x], [target]) }
        let tag = op.name
        c.emit("Slice", [x, c.int64s(keep.map { starts[$0] }, name: tag + "_starts"), c.int64s(keep.map { ends[$0] }, name: tag + "_ends"),
                         c.int64s(keep.map { axes[$0] }, name: tag + "_axes"), c.int64s(keep.map { steps[$0] }, name: tag + "_steps")], [target])
    }

    /// The ONNX form of a StridedSlice spec: a Slice over the cut axes, a Squeeze of
    /// the shrunk ones, an Unsqueeze of the new ones. Axes before an ellipsis count
    /// from the front, axes after it from the back (so the input's rank is not needed).
    struct SliceSpec {
        var starts: [Int] = [], ends: [Int] = [], axes: [Int] = [], steps: [Int] = []
        var squeeze: [Int] = [], unsqueeze: [Int] = []
    }

    static let stridedSlice: Translator = { c, op in
        try c.arity(op, 4)
        let begin = try c.ints(op, 1, "begin"), end = try c.ints(op, 2, "end"), strides = try c.ints(op, 3, "strides")
        guard begin.count == end.count, begin.count == strides.count, begin.count <= 64, !strides.contains(0) else {
            throw c.malformed(op, "begin \(begin), end \(end), strides \(strides)")
        }
        let spec = try sliceSpec(c, op, begin: begin, end: end, strides: strides)
        var v = try c.input(op, 0)
        let last = spec.unsqueeze.isEmpty ? (spec.squeeze.isEmpty ? 0 : 1) : 2
        if !spec.axes.isEmpty || last == 0 {
            let out = last == 0 ? c.output(op) : c.fresh(op.name + "_slice")
            emitSlice(&c, op, v, starts: spec.starts, ends: spec.ends, axes: spec.axes, steps: spec.steps, into: out)
            v = out
        }
        if !spec.squeeze.isEmpty {
            let out = last == 1 ? c.output(op) : c.fresh(op.name + "_squeeze")
            c.emit("Squeeze", [v, c.int64s(spec.squeeze, name: op.name + "_squeezed")], [out])
            v = out
        }
        if !spec.unsqueeze.isEmpty {
            c.emit("Unsqueeze", [v, c.int64s(spec.unsqueeze, name: op.name + "_new")], [c.output(op)])
        }
    }

    static func sliceSpec(_ c: TFContext, _ op: TFOp, begin: [Int], end: [Int], strides: [Int]) throws -> SliceSpec {
        let bit = { (key: String, j: Int) in (c.int(op, key, 0) >> j) & 1 == 1 }
        let n = begin.count
        let ellipses = (0..<n).filter { bit("ellipsis_mask", $0) }
        guard ellipses.count <= 1, c.int(op, "ellipsis_mask", 0) >> n == 0 else {
            throw c.unsupported(op, "ellipsis_mask \(c.int(op, "ellipsis_mask", 0)) (at most one ellipsis)")
        }
        var spec = SliceSpec()
        func cut(_ j: Int, axis: Int) {
            let s = strides[j]
            if bit("shrink_axis_mask", j) {
                spec.starts.append(begin[j]); spec.ends.append(begin[j] == -1 ? Int(Int64.max) : begin[j] + 1)
                spec.steps.append(1); spec.axes.append(axis); spec.squeeze.append(axis)
                return
            }
            spec.starts.append(bit("begin_mask", j) ? (s > 0 ? 0 : Int(Int64.max)) : begin[j])
            spec.ends.append(bit("end_mask", j) ? (s > 0 ? Int(Int64.max) : Int(Int64.min)) : end[j])
            spec.steps.append(s); spec.axes.append(axis)
        }
        let split = ellipses.first ?? n
        var axis = 0, position = 0
        for j in 0..<split {
            if bit("new_axis_mask", j) { spec.unsqueeze.append(position); position += 1; continue }
            cut(j, axis: axis)
            if !bit("shrink_axis_mask", j) { position += 1 }
            axis += 1
        }
        axis = -1; position = -1
        for j in stride(from: n - 1, to: split, by: -1) {
            if bit("new_axis_mask", j) { spec.unsqueeze.append(position); position -= 1; continue }
            cut(j, axis: axis)
            if !bit("shrink_axis_mask", j) { position -= 1 }
            axis -= 1
        }
        return spec
    }
}
