import ShrinkwrapIR

/// ARG_MAX / ARG_MIN, TILE, ONE_HOT, RANGE, SCATTER_ND, and SLICE / BROADCAST_TO whose begin or shape
/// is computed at run time (what the exporter writes for a Loop body, read back).
extension TFLiteOps {
    /// Tensor `i` as an int64 value: a constant as an int64 constant, an INT32 value through a Cast.
    static func int64Value(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ i: Int, _ what: String) throws -> String {
        if let e = c.constantEncoding(i) {
            guard let a = e.decoded().ints else { throw ImportError.unsupported(c.loc(op), what: "\(what) of type \(e.decodedDType)") }
            return c.addConstant(c.value(i) + "_int64", .dense(Tensor(ints: a, shape: e.shape)))
        }
        switch c.model.tensors[i].type {
        case 4: return c.value(i)
        case 2:
            let wide = c.fresh(c.value(i) + "_int64")
            c.emit("Cast", [c.value(i)], [wide], ["to": .int(DType.int64.onnxDataType)])
            return wide
        case let t: throw ImportError.unsupported(c.loc(op), what: "\(what) of type \(TFLiteModel.typeName(t))")
        }
    }

    /// ArgMax / ArgMin over one constant axis; an INT32 output through a Cast of the IR's int64 indices.
    static func argExtreme(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String) throws {
        try arity(c, op, 2)
        let axis = try c.requireInts(op, 1, "axis")
        guard axis.count == 1 else { throw ImportError.unsupported(c.loc(op), what: "\(axis.count) axes (one is read)") }
        let out = op.outputs[0]
        switch c.model.tensors[out].type {
        case 4:
            c.emit(onnx, [c.value(op.inputs[0])], [c.value(out)], ["axis": .int(axis[0]), "keepdims": .int(0)])
        case 2:
            let wide = c.fresh(c.value(out) + "_int64")
            c.emit(onnx, [c.value(op.inputs[0])], [wide], ["axis": .int(axis[0]), "keepdims": .int(0)])
            c.emit("Cast", [wide], [c.value(out)], ["to": .int(DType.int32.onnxDataType)])
        case let t:
            throw ImportError.unsupported(c.loc(op), what: "\(op.name) into a \(TFLiteModel.typeName(t)) tensor")
        }
    }

    static func tile(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let reps = try int64Value(&c, op, op.inputs[1], "multiples")
        c.emit("Tile", [c.value(op.inputs[0]), reps], [c.value(op.outputs[0])])
    }

    /// ONE_HOT(indices, depth, on, off) → OneHot(indices', depth, [off, on]). TFLite gives a negative index
    /// all `off`; ONNX counts it from the end: indices' = Where(indices < 0, a value past any depth, indices).
    static func oneHot(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 4)
        let axis = Int(try c.option(try c.options(op, "OneHotOptions"), 0, Int32(-1), op))
        let pair: String
        if let on = c.constantEncoding(op.inputs[2])?.decoded(), let off = c.constantEncoding(op.inputs[3])?.decoded(),
           on.count == 1, off.count == 1, on.dtype == off.dtype, let both = pairStorage(off.storage, on.storage) {
            pair = c.addConstant("one_hot_values", .dense(Tensor(dtype: on.dtype, shape: [2], storage: both)))
        } else {
            let one = c.int64Constant("one_hot_value_shape", [1])
            let parts = [op.inputs[3], op.inputs[2]].map { i -> String in
                let r = c.fresh(c.value(i) + "_1d")
                c.emit("Reshape", [c.value(i), one], [r])
                return r
            }
            pair = c.fresh("one_hot_values")
            c.emit("Concat", parts, [pair], ["axis": .int(0)])
        }
        let dtype = TFLiteContext.dtype(c.model.tensors[op.inputs[0]].type) ?? .int64
        let zero = c.addConstant("one_hot_zero", .dense(Tensor(ints: [0], shape: [], dtype: dtype)))
        let past = c.addConstant("one_hot_past_depth", .dense(Tensor(ints: [Int64(Int32.max)], shape: [], dtype: dtype)))
        let negative = c.fresh(c.value(op.inputs[0]) + "_negative"), indices = c.fresh(c.value(op.inputs[0]) + "_tflite")
        c.emit("Less", [c.value(op.inputs[0]), zero], [negative])
        c.emit("Where", [negative, past, c.value(op.inputs[0])], [indices])
        c.emit("OneHot", [indices, c.value(op.inputs[1]), pair], [c.value(op.outputs[0])], ["axis": .int(axis)])
    }

    /// Two one-element storages of one kind, joined.
    static func pairStorage(_ a: TensorStorage, _ b: TensorStorage) -> TensorStorage? {
        switch (a, b) {
        case (.float(let x), .float(let y)): return .float(x + y)
        case (.int(let x), .int(let y)): return .int(x + y)
        case (.bool(let x), .bool(let y)): return .bool(x + y)
        default: return nil
        }
    }

    static func range(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 3)
        c.emit("Range", op.inputs.prefix(3).map { c.value($0) }, [c.value(op.outputs[0])])
    }

    /// SCATTER_ND(indices, updates, shape): zeros of `shape` with the updates added at the indices
    /// (TFLite sums repeated indices) → ScatterND(Expand(0, shape), indices, updates, reduction add).
    static func scatterND(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 3)
        let out = op.outputs[0]
        guard let d = TFLiteContext.dtype(c.model.tensors[out].type) else {
            throw ImportError.unsupported(c.loc(op), what: "SCATTER_ND into a \(TFLiteModel.typeName(c.model.tensors[out].type)) tensor")
        }
        let indices = try int64Value(&c, op, op.inputs[0], "indices")
        let shape = try int64Value(&c, op, op.inputs[2], "shape")
        let zero = c.addConstant("scatter_zero", .dense(Tensor.zeros([], dtype: d)))
        let base = c.fresh(c.value(out) + "_zeros")
        c.emit("Expand", [zero, shape], [base])
        c.emit("ScatterND", [base, indices, c.value(op.inputs[1])], [c.value(out)], ["reduction": .string("add")])
    }

    /// SLICE whose begin is computed at run time (the size a constant): Slice(x, begin, begin + size).
    static func sliceAtRunTime(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        let size = try c.requireInts(op, 2, "size")
        let rank = c.shape(op.inputs[0]).count
        guard size.count == rank, size.allSatisfy({ $0 >= 0 }) else {
            throw ImportError.unsupported(c.loc(op), what: "a run-time begin with size \(size) (one non-negative size per axis of the rank-\(rank) input is read)")
        }
        let begin = try int64Value(&c, op, op.inputs[1], "begin")
        let end = c.fresh(c.value(op.outputs[0]) + "_end")
        c.emit("Add", [begin, c.int64Constant("size", size)], [end])
        c.emit("Slice", [c.value(op.inputs[0]), begin, end, c.int64Constant("axes", Array(0..<rank))], [c.value(op.outputs[0])])
    }

    /// BROADCAST_TO with a shape computed at run time → Expand.
    static func broadcastToAtRunTime(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        let shape = try int64Value(&c, op, op.inputs[1], "shape")
        c.emit("Expand", [c.value(op.inputs[0]), shape], [c.value(op.outputs[0])])
    }
}
