import ShrinkwrapIR
import TensorFlowSchema

/// Shape ops and shape arithmetic. TensorFlow's int32 shape tensors stay int32
/// (Shape casts its int64 result); inputs the IR wants as int64 (Reshape's
/// shape, Tile's repeats, Expand's shape) are converted at import or cast.
extension TFOps {
    /// ZerosLike / OnesLike: `value` of input 0's type (attribute T) expanded to its shape.
    static func filledLike(_ c: inout TFContext, _ op: TFOp, _ value: Int) throws {
        try c.arity(op, 1)
        let type = try c.dtype(op, "T")
        let scalar = type.isFloatingPoint ? Tensor(dtype: type, shape: [], storage: .float([Float(value)]))
            : type == .bool ? Tensor(bools: [value != 0], shape: []) : Tensor(ints: [Int64(value)], shape: [], dtype: type)
        let fill = c.constant(scalar, name: op.name + "_value")
        let shape = c.apply("Shape", [try c.input(op, 0)], base: op.name + "_shape")
        c.emit("Expand", [fill, shape], [c.output(op)])
    }

    static let shapes: [String: Translator] = [
        "Reshape": { c, op in
            try c.arity(op, 2)
            let zero = c.known(op, 1).map { t -> Bool in if case .int(let a) = t.storage { return a.contains(0) } else { return false } } ?? false
            c.emit("Reshape", [try c.input(op, 0), try c.int64Input(op, 1)], [c.output(op)], zero ? ["allowzero": .int(1)] : [:])
        },
        "Squeeze": { c, op in
            try c.arity(op, 1)
            let axes = c.ints(op, "squeeze_dims") ?? []
            let inputs = [try c.input(op, 0)] + (axes.isEmpty ? [] : [c.int64s(axes, name: op.name + "_axes")])
            c.emit("Squeeze", inputs, [c.output(op)])
        },
        "ExpandDims": { c, op in
            try c.arity(op, 2)
            c.emit("Unsqueeze", [try c.input(op, 0), try c.axesInput(op, 1)], [c.output(op)])
        },
        "Transpose": { c, op in
            try c.arity(op, 2)
            c.emit("Transpose", [try c.input(op, 0)], [c.output(op)], ["perm": .ints(try c.ints(op, 1, "perm"))])
        },
        "ConcatV2": { c, op in try concat(&c, op, axisInput: op.inputs.count - 1) },
        "Concat": { c, op in try concat(&c, op, axisInput: 0) },
        "Pack": pack,
        "Unpack": unpack,
        "Split": { c, op in
            try c.arity(op, 2)
            let axis = try c.ints(op, 0, "split_dim")
            let n = c.int(op, "num_split", 1)
            guard axis.count == 1, n >= 1, n <= 1 << 16 else { throw c.malformed(op, "split_dim \(axis), num_split \(n)") }
            c.emit("Split", [try c.input(op, 1)], (0..<n).map { c.output(op, $0) }, ["axis": .int(axis[0])])
        },
        "SplitV": { c, op in
            try c.arity(op, 3)
            let sizes = try c.ints(op, 1, "size_splits"), axis = try c.ints(op, 2, "axis")
            guard axis.count == 1, !sizes.isEmpty, sizes.count <= 1 << 16 else { throw c.malformed(op, "size_splits \(sizes), axis \(axis)") }
            guard sizes.allSatisfy({ $0 >= 0 }) else { throw c.unsupported(op, "size_splits \(sizes) with an inferred (-1) size") }
            let split = c.int64s(sizes, name: op.name + "_sizes")
            c.emit("Split", [try c.input(op, 0), split], sizes.indices.map { c.output(op, $0) }, ["axis": .int(axis[0])])
        },
        "Tile": { c, op in
            try c.arity(op, 2)
            c.emit("Tile", [try c.input(op, 0), try c.int64Input(op, 1)], [c.output(op)])
        },
        "Fill": { c, op in
            try c.arity(op, 2)
            c.emit("Expand", [try c.input(op, 1), try c.int64Input(op, 0)], [c.output(op)])
        },
        "Range": { c, op in try simple(&c, op, "Range", arity: 3) },
        "ZerosLike": { c, op in try filledLike(&c, op, 0) },
        "OnesLike": { c, op in try filledLike(&c, op, 1) },
        // Reversed along the given axes: a Slice with step -1 on each.
        "ReverseV2": { c, op in
            try c.arity(op, 2)
            let axes = try c.ints(op, 1, "axis")
            guard !axes.isEmpty else { return c.alias(op, 0, to: try c.input(op, 0)) }
            guard axes.count <= 64 else { throw c.malformed(op, "axis \(axes)") }
            emitSlice(&c, op, try c.input(op, 0), starts: axes.map { _ in -1 }, ends: axes.map { _ in Int(Int64.min) }, axes: axes,
                      steps: axes.map { _ in -1 })
        },
        "Shape": { c, op in
            try c.arity(op, 1)
            let type = (try? c.dtype(op, "out_type")) ?? .int32
            if type == .int64 { return c.emit("Shape", [try c.input(op, 0)], [c.output(op)]) }
            let s = c.apply("Shape", [try c.input(op, 0)], base: op.name + "_i64")
            c.emit("Cast", [s], [c.output(op)], ["to": .int(type.onnxDataType)])
        },
        "Pad": { c, op in try pad(&c, op, mode: "constant") },
        "PadV2": { c, op in try pad(&c, op, mode: "constant") },
        "MirrorPad": { c, op in
            let mode = c.string(op, "mode", "")
            guard mode == "REFLECT" else { throw c.unsupported(op, "mode '\(mode)' (only REFLECT has an IR equivalent)") }
            try pad(&c, op, mode: "reflect")
        },
    ]

    static func concat(_ c: inout TFContext, _ op: TFOp, axisInput: Int) throws {
        try c.arity(op, 2)
        let axis = try c.ints(op, axisInput, "axis")
        guard axis.count == 1 else { throw c.malformed(op, "axis \(axis)") }
        let inputs = try op.inputs.indices.filter { $0 != axisInput }.map { try c.input(op, $0) }
        c.emit("Concat", inputs, [c.output(op)], ["axis": .int(axis[0])])
    }

    /// Pack: each input gains axis `axis`, then they are concatenated along it.
    static let pack: Translator = { c, op in
        try c.arity(op, 1)
        let axis = c.int(op, "axis", 0)
        let axes = c.int64s([axis], name: op.name + "_axis")
        let parts = try op.inputs.indices.map { i in c.apply("Unsqueeze", [try c.input(op, i), axes], base: op.name + "_\(i)") }
        c.emit("Concat", parts, [c.output(op)], ["axis": .int(axis)])
    }

    /// Unpack: Split into `num` slices of size 1 along `axis`, each squeezed.
    static let unpack: Translator = { c, op in
        try c.arity(op, 1)
        let axis = c.int(op, "axis", 0), n = c.int(op, "num", 0)
        guard n >= 1, n <= 1 << 16 else { throw c.malformed(op, "num \(n)") }
        let axes = c.int64s([axis], name: op.name + "_axis")
        let parts = (0..<n).map { c.fresh(op.name + "_\($0)") }
        c.emit("Split", [try c.input(op, 0), c.int64s(Array(repeating: 1, count: n), name: op.name + "_ones")], parts, ["axis": .int(axis)])
        for (k, p) in parts.enumerated() { c.emit("Squeeze", [p, axes], [c.output(op, k)]) }
    }

    /// Pad / PadV2 / MirrorPad: paddings [rank, 2] → ONNX pads [begins…, ends…].
    static func pad(_ c: inout TFContext, _ op: TFOp, mode: String) throws {
        try c.arity(op, 2)
        let pads: String
        if let p = c.known(op, 1), case .int(let a) = p.storage, p.shape.count == 2, p.shape[1] == 2 {
            let begins = stride(from: 0, to: a.count, by: 2).map { Int(a[$0]) }
            let ends = stride(from: 1, to: a.count, by: 2).map { Int(a[$0]) }
            pads = c.int64s(begins + ends, name: op.name + "_pads")
        } else {
            let p = try c.int64Input(op, 1)
            let t = c.apply("Transpose", [p], ["perm": .ints([1, 0])], base: op.name + "_pads")
            pads = c.apply("Reshape", [t, c.int64s([-1], name: op.name + "_flat")], base: op.name + "_pads")
        }
        var inputs = [try c.input(op, 0), pads]
        if op.op == "PadV2", op.inputs.count > 2 { inputs.append(try c.input(op, 2)) }
        c.emit("Pad", inputs, [c.output(op)], ["mode": .string(mode)])
    }
}
