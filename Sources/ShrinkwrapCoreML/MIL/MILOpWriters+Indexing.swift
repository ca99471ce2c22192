// Gathers, scatters, one-hot, cumulative sums, top-k and band masks → MIL ops
// (coremltools mil/ops/defs/iOS15/scatter_gather.py and tensor_operation.py:
// every one of these takes int32 indices and fp16 / fp32 / int32 data).
import ShrinkwrapIR

extension MILOpWriters {
    /// ONNX's scatter reductions → MIL's scatter modes.
    static let scatterModes: [String: String] = ["none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"]

    /// Indices into axes of sizes `dims` (one size: every index; k sizes: the
    /// last axis of the indices runs over them), negative ones wrapped as ONNX does.
    static func wrappedIndices(_ w: inout MILWriter, _ n: Node, _ irName: String, dims: [Int]) throws -> String {
        let base = n.outputs[0] + "_indices"
        guard !dims.isEmpty else { throw MILWriterError("no axes to index") }
        if let c = w.constInts(irName) {
            let values = try c.enumerated().map { k, v -> Int32 in
                let d = dims[k % dims.count]
                guard v >= -d && v < d else { throw MILWriterError("index \(v) outside [-\(d), \(d))") }
                return Int32(v < 0 ? v + d : v)
            }
            return w.builder.const(base, .int32(values, shape: try w.shape(irName)))
        }
        let v = try w.value(irName)
        guard try w.type(of: v).dataType == .int32 else { throw MILWriterError("indices of type \(try w.type(of: v).dataType)") }
        return try wrappedIndicesUnchecked(&w, n, v, dims: dims)
    }

    /// MIL's gathers and scatters move fp16 / fp32 / int32 values.
    static func requireNumeric(_ w: MILWriter, _ irName: String) throws {
        let dt = try w.computeType(irName).dataType
        guard [.float32, .float16, .int32].contains(dt) else { throw MILWriterError("\(dt) values (MIL moves fp16, fp32 and int32)") }
    }

    static let gatherElements: Writer = { w, n in
        let x = try input(n, 0), idx = try input(n, 1)
        try requireNumeric(w, x)
        let shape = try w.shape(x)
        let axis = try normalize(n.int("axis", 0), rank: shape.count)
        let iv = try wrappedIndices(&w, n, idx, dims: [shape[axis]])
        try w.emit(n, "gather_along_axis", [("x", .value(try w.value(x))), ("indices", .value(iv)), ("axis", .value(w.int(n, "axis", axis)))])
    }

    static let gatherND: Writer = { w, n in
        let x = try input(n, 0), idx = try input(n, 1)
        try requireNumeric(w, x)
        guard n.int("batch_dims", 0) == 0 else { throw MILWriterError("batch_dims \(n.int("batch_dims", 0))") }
        let shape = try w.shape(x), ishape = try w.shape(idx)
        guard let k = ishape.last, k >= 1, k <= shape.count else { throw MILWriterError("indices of shape \(ishape) into \(shape)") }
        let iv = try wrappedIndices(&w, n, idx, dims: Array(shape[..<k]))
        try w.emit(n, "gather_nd", [("x", .value(try w.value(x))), ("indices", .value(iv))])
    }

    static let scatterND: Writer = { w, n in
        let data = try input(n, 0), idx = try input(n, 1), updates = try input(n, 2)
        try requireNumeric(w, data)
        let reduction = n.string("reduction", "none")
        guard let mode = scatterModes[reduction] else { throw MILWriterError("reduction '\(reduction)'") }
        let shape = try w.shape(data), ishape = try w.shape(idx)
        guard let k = ishape.last, k >= 1, k <= shape.count else { throw MILWriterError("indices of shape \(ishape) into \(shape)") }
        let iv = try wrappedIndices(&w, n, idx, dims: Array(shape[..<k]))
        try w.emit(n, "scatter_nd", [("data", .value(try w.value(data))), ("indices", .value(iv)), ("updates", .value(try w.value(updates))),
                                     ("mode", .value(w.string(n, "mode", mode)))])
    }

    static let scatterElements: Writer = { w, n in
        let data = try input(n, 0), idx = try input(n, 1), updates = try input(n, 2)
        try requireNumeric(w, data)
        let reduction = n.string("reduction", "none")
        guard let mode = scatterModes[reduction] else { throw MILWriterError("reduction '\(reduction)'") }
        let shape = try w.shape(data)
        let axis = try normalize(n.int("axis", 0), rank: shape.count)
        let iv = try wrappedIndices(&w, n, idx, dims: [shape[axis]])
        try w.emit(n, "scatter_along_axis", [("data", .value(try w.value(data))), ("indices", .value(iv)), ("updates", .value(try w.value(updates))),
                                             ("axis", .value(w.int(n, "axis", axis))), ("mode", .value(w.string(n, "mode", mode)))])
    }

    /// OneHot(indices, depth, [off, on]): indices outside [−depth, depth) give
    /// all-off rows in ONNX; negative ones count from the end.
    static let oneHot: Writer = { w, n in
        let idx = try input(n, 0)
        guard let depth = w.constInts(n.input(1))?.first, depth >= 1 else { throw MILWriterError("a depth that is not a positive constant") }
        let valuesName = try input(n, 2)
        guard let c = w.graph.constant(named: valuesName) else { throw MILWriterError("values that are not constants") }
        let values = c.encoding.decoded().doubles
        guard values.count == 2 else { throw MILWriterError("\(values.count) values (off, on)") }
        let rank = try w.shape(n.outputs[0]).count
        let axis = try normalize(n.int("axis", -1), rank: rank)
        var iv: String
        if let ci = w.constInts(idx) {
            // Constant indices: wrapped here; out-of-range ones become depth (all-off in every one_hot).
            let v = ci.map { Int32(clamping: $0 < 0 && $0 >= -depth ? $0 + depth : ($0 < 0 || $0 >= depth ? depth : $0)) }
            iv = w.builder.const(n.outputs[0] + "_indices", .int32(v, shape: try w.shape(idx)))
        } else {
            iv = try w.value(idx)
            if try w.type(of: iv).dataType != .int32 { iv = w.cast(iv, to: .int32, base: n.outputs[0] + "_indices_int") }
            iv = try wrappedIndicesUnchecked(&w, n, iv, dims: [depth])
        }
        let out = try w.computeType(n.outputs[0]).dataType
        let (on, off): (String, String)
        switch out {
        case .int32:
            on = w.builder.int32(n.outputs[0] + "_on_value", Int(values[1])); off = w.builder.int32(n.outputs[0] + "_off_value", Int(values[0]))
        case .float32, .float16:
            on = w.float(n, "on_value", Float(values[1])); off = w.float(n, "off_value", Float(values[0]))
        case .bool:
            on = w.builder.bool(n.outputs[0] + "_on_value", values[1] != 0); off = w.builder.bool(n.outputs[0] + "_off_value", values[0] != 0)
        default: throw MILWriterError("\(out) output")
        }
        try w.emit(n, "one_hot", [("indices", .value(iv)), ("one_hot_vector_size", .value(w.int(n, "one_hot_vector_size", depth))),
                                  ("axis", .value(w.int(n, "axis", axis))), ("on_value", .value(on)), ("off_value", .value(off))])
    }

    /// Run-time indices: negative ones shifted by the size of their axis (no
    /// range check; MIL leaves others alone). One size: every index; k sizes:
    /// the last axis of `v` runs over them.
    static func wrappedIndicesUnchecked(_ w: inout MILWriter, _ n: Node, _ v: String, dims: [Int]) throws -> String {
        let base = n.outputs[0] + "_indices"
        let t = try w.type(of: v)
        let negative = w.builder.op1("less", [("x", .value(v)), ("y", .value(w.builder.int32(base + "_zero", 0)))],
                                     output: w.builder.fresh(base + "_negative"), MILTensorType(dataType: .bool, shape: t.shape))
        let size = dims.count == 1 ? w.builder.int32(base + "_size", dims[0]) : w.builder.int32s(base + "_size", dims)
        let shifted = w.builder.op1("add", [("x", .value(v)), ("y", .value(size))], output: w.builder.fresh(base + "_shifted"), t)
        return w.builder.op1("select", [("cond", .value(negative)), ("a", .value(shifted)), ("b", .value(v))], output: w.builder.fresh(base), t)
    }

    static let cumSum: Writer = { w, n in
        let x = try input(n, 0)
        try requireNumeric(w, x)
        guard let a = w.constInts(n.input(1))?.first else { throw MILWriterError("an axis that is not a constant") }
        let axis = try normalize(a, rank: try w.shape(x).count)
        try w.emit(n, "cumsum", [("x", .value(try w.value(x))), ("axis", .value(w.int(n, "axis", axis))),
                                 ("exclusive", .value(w.bool(n, "exclusive", n.int("exclusive", 0) != 0))),
                                 ("reverse", .value(w.bool(n, "reverse", n.int("reverse", 0) != 0)))])
    }

    /// TopK: MIL's topk sorts its output (which ONNX's sorted = 0 allows).
    static let topK: Writer = { w, n in
        let x = try input(n, 0)
        try requireNumeric(w, x)
        guard let k = w.constInts(n.input(1))?.first, k >= 0 else { throw MILWriterError("a k that is not a constant") }
        let axis = try normalize(n.int("axis", -1), rank: try w.shape(x).count)
        guard n.outputs.count == 2, n.outputs.allSatisfy({ !$0.isEmpty }) else { throw MILWriterError("an unnamed output") }
        let types = try n.outputs.map { try w.computeType($0) }
        let named = n.outputs.enumerated().map { (w.define($0.element), types[$0.offset]) }
        let args: [(String, MILArgument)] = [("x", .value(try w.value(x))), ("k", .value(w.int(n, "k", k))), ("axis", .value(w.int(n, "axis", axis))),
                                             ("ascending", .value(w.bool(n, "ascending", n.int("largest", 1) == 0)))]
        w.builder.op("topk", args, outputs: named)
    }

    /// Trilu: the kept triangle as a constant mask selecting x or zero.
    static let trilu: Writer = { w, n in
        let x = try input(n, 0)
        let shape = try w.shape(x)
        guard shape.count >= 2 else { throw MILWriterError("rank \(shape.count)") }
        var k = 0
        if let kn = n.input(1), !kn.isEmpty {
            guard let v = w.constInts(kn)?.first else { throw MILWriterError("a k that is not a constant") }
            k = v
        }
        let rows = shape[shape.count - 2], cols = shape[shape.count - 1]
        let upper = n.int("upper", 1) != 0
        let mask = (0..<rows).flatMap { i in (0..<cols).map { j in upper ? j - i >= k : j - i <= k } }
        let t = try w.computeType(n.outputs[0])
        let zero: String
        switch t.dataType {
        case .int32: zero = w.builder.int32(n.outputs[0] + "_zero", 0)
        case .bool: zero = w.builder.bool(n.outputs[0] + "_zero", false)
        default: zero = w.float(n, "zero", 0)
        }
        try w.emit(n, "select", [("cond", .value(w.builder.const(n.outputs[0] + "_mask", .bools(mask, shape: [rows, cols])))),
                                 ("a", .value(try w.value(x))), ("b", .value(zero))])
    }
}
