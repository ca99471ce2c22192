import FlatBuffers
import ShrinkwrapIR

/// Shape, indexing and reduction writers: reshape, transpose, concat, split, slice, gather, pad, cast, reduce, arg-max.
extension TFLiteExportOps {
    static func reshape(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        guard let yName = n.outputs.first else { throw TFLiteOpError("no output") }
        let s = try e.shape(yName)
        try e.reshape(try e.input(x), to: s, into: try e.output(n))
    }

    static func transpose(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let r = try e.shape(x).count
        let perm = n.ints("perm") ?? Array((0..<r).reversed())
        try e.op("TRANSPOSE", [try e.input(x), try e.int32Constant("perm", perm)], [try e.output(n)], options: "TransposeOptions")
    }

    static func concat(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let ins = n.inputs.filter { !$0.isEmpty }
        let r = try e.shape(n.outputs.first ?? "").count
        let axis = Int32(try normalize(n.int("axis", 0), rank: r))
        let tensors = try ins.map { try e.input($0) }
        try e.op("CONCATENATION", tensors, [try e.output(n)], options: "ConcatenationOptions") { b in b.table { t in t.add(0, axis, default: 0) } }
    }

    static func split(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let s = try e.shape(x)
        let axis = try normalize(n.int("axis", 0), rank: s.count)
        let outs = try n.outputs.indices.map { try e.output(n, $0) }
        let sizes = try n.outputs.map { try e.shape($0)[axis] }
        let count = Int32(outs.count)
        if Set(sizes).count <= 1 {
            let a = try e.int32Constant("axis", [axis], shape: [])
            try e.op("SPLIT", [a, try e.input(x)], outs, options: "SplitOptions") { b in b.table { t in t.add(0, count, default: 0) } }
        } else {
            try e.op("SPLIT_V", [try e.input(x), try e.int32Constant("sizes", sizes), try e.int32Constant("axis", [axis], shape: [])], outs,
                     options: "SplitVOptions") { b in b.table { t in t.add(0, count, default: 0) } }
        }
    }

    static func slice(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let s = try e.shape(x)
        let r = s.count
        let (st, en) = (try arity(n, 1), try arity(n, 2))
        if !e.g.isConstant(e.resolve(st)) || !e.g.isConstant(e.resolve(en)) { return try sliceAtRunTime(&e, n) }
        let starts = try constInts(e, try arity(n, 1), "starts"), ends = try constInts(e, try arity(n, 2), "ends")
        let axes = try n.input(3).map { try constInts(e, $0, "axes") } ?? Array(0..<starts.count)
        let steps = try n.input(4).map { try constInts(e, $0, "steps") } ?? [Int](repeating: 1, count: starts.count)
        guard starts.count == ends.count, axes.count == starts.count, steps.count == starts.count else {
            throw TFLiteOpError("starts / ends / axes / steps differ in length")
        }
        var begin = [Int](repeating: 0, count: r), end = s, stride = [Int](repeating: 1, count: r)
        var endMask: Int32 = 0
        for k in axes.indices {
            let a = try normalize(axes[k], rank: r)
            let d = s[a], st = steps[k]
            guard st != 0 else { throw TFLiteOpError("step 0") }
            var b = starts[k] < 0 ? starts[k] + d : starts[k]
            var en = ends[k] < 0 ? ends[k] + d : ends[k]
            if st > 0 {
                b = min(max(b, 0), d); en = min(max(en, 0), d)
            } else {
                b = min(max(b, 0), d - 1); en = min(max(en, -1), d - 1)
                if en == -1 { endMask |= Int32(1 << a); en = 0 }
            }
            begin[a] = b; end[a] = en; stride[a] = st
        }
        let mask = endMask
        try e.op("STRIDED_SLICE", [try e.input(x), try e.int32Constant("begin", begin), try e.int32Constant("end", end), try e.int32Constant("strides", stride)],
                 [try e.output(n)], options: "StridedSliceOptions") { b in b.table { t in t.add(1, mask, default: 0) } }
    }

    static func gather(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let p = try arity(n, 0), i = try arity(n, 1)
        let ps = try e.shape(p)
        let axis = Int32(try normalize(n.int("axis", 0), rank: ps.count))
        var indices: Int
        if let c = e.g.constants[e.resolve(i)] {
            guard let ints = c.decoded().ints else { throw TFLiteOpError("indices of type \(c.decodedDType)") }
            let d = ps[Int(axis)]
            indices = try e.int32Constant("indices", ints.map { Int($0 < 0 ? $0 + Int64(d) : $0) }, shape: c.shape)
        } else {
            indices = try e.input(i)
        }
        let y = try e.output(n)
        // An int8 table quantized per tensor is gathered as int8 and the rows dequantized (TFLite's embedding form).
        if case .affine(let a)? = e.g.constants[e.resolve(p)], a.scale.count == 1 {
            let form = try TFLiteEmitter.int8Form(a, weight: p)
            let table = try e.constantTensor(e.resolve(p), .affine(a), hybrid: .init(axis: 0))
            if e.file.tensors[table].type == 9 {
                let rows = e.file.addTensor(e.g.fresh(n.outputs[0] + "_int8"), shape: try e.shape(n.outputs[0]), type: 9,
                                            quantization: .init(scale: form.scale, zeroPoint: form.zeroPoint, axis: 0))
                try e.op("GATHER", [table, indices], [rows], options: "GatherOptions") { b in b.table { t in t.add(0, axis, default: 0) } }
                try e.op("DEQUANTIZE", [rows], [y])
                return
            }
        }
        try e.op("GATHER", [try e.input(p), indices], [y], options: "GatherOptions") { b in b.table { t in t.add(0, axis, default: 0) } }
    }

    static func pad(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let r = try e.shape(x).count
        let p = try n.input(1).map { try constInts(e, $0, "pads") } ?? n.ints("pads") ?? []
        var axes = Array(0..<r)
        if let a = n.input(3) { axes = try constInts(e, a, "axes").map { try normalize($0, rank: r) } }
        guard p.count == 2 * axes.count else { throw TFLiteOpError("pads \(p) for \(axes.count) axes") }
        var pairs = [Int](repeating: 0, count: 2 * r)
        for (k, a) in axes.enumerated() {
            guard p[k] >= 0, p[k + axes.count] >= 0 else { throw TFLiteOpError("negative pads \(p) (cropping)") }
            pairs[2 * a] = p[k]; pairs[2 * a + 1] = p[k + axes.count]
        }
        let padTensor = try e.int32Constant("paddings", pairs, shape: [r, 2])
        let mode = n.string("mode", "constant")
        let y = try e.output(n)
        switch mode {
        case "constant":
            var value: Float = n.float("value", 0)
            if let v = n.input(2) { value = try constFloats(e, v, "constant_value").first ?? 0 }
            if value == 0 {
                try e.op("PAD", [try e.input(x), padTensor], [y], options: "PadOptions")
            } else {
                try e.op("PADV2", [try e.input(x), padTensor, e.floatConstant("pad_value", [value], shape: [])], [y], options: "PadV2Options")
            }
        case "reflect":
            try e.op("MIRROR_PAD", [try e.input(x), padTensor], [y], options: "MirrorPadOptions") { b in b.table { t in t.add(0, Int8(0), default: 0) } }
        default:
            throw TFLiteOpError("mode \(mode) (TFLite pads with a constant or by reflection)")
        }
    }

    static func reduce(_ e: inout TFLiteEmitter, _ n: Node, _ op: String) throws {
        let x = try arity(n, 0)
        let r = try e.shape(x).count
        var axes = try n.input(1).map { try constInts(e, $0, "axes") } ?? n.ints("axes") ?? []
        if axes.isEmpty {
            if n.int("noop_with_empty_axes", 0) != 0 { return try identity(&e, n) }
            axes = Array(0..<r)
        }
        axes = try axes.map { try normalize($0, rank: r) }
        let keep = n.int("keepdims", 1) != 0
        try e.op(op, [try e.input(x), try e.int32Constant("axes", axes)], [try e.output(n)], options: "ReducerOptions") { b in
            b.table { t in t.add(0, keep, default: false) }
        }
    }

    static func cast(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        guard let yName = n.outputs.first, let from = TFLiteFileBuilder.tensorType(e.dtype(x)),
              let to = TFLiteFileBuilder.tensorType(e.dtype(yName)) else { throw TFLiteOpError("element type without a TFLite form") }
        try e.op("CAST", [try e.input(x)], [try e.output(n)], options: "CastOptions") { b in
            b.table { t in t.add(0, from, default: 0); t.add(1, to, default: 0) }
        }
    }

    static func expand(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let s = try e.shape(n.outputs.first ?? "")
        // Version 2: TFLite registers BROADCAST_TO from version 2 on (1 was left to a custom op of that name).
        try e.op("BROADCAST_TO", [try e.input(x), try e.int32Constant("shape", s)], [try e.output(n)], options: "BroadcastToOptions", version: 2)
    }

    static func tile(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        if !e.g.isConstant(e.resolve(try arity(n, 1))) { return try tileAtRunTime(&e, n) }
        let reps = try constInts(e, try arity(n, 1), "repeats")
        try e.op("TILE", [try e.input(x), try e.int32Constant("multiples", reps)], [try e.output(n)], options: "TileOptions")
    }

    static func argExtreme(_ e: inout TFLiteEmitter, _ n: Node, _ op: String, _ options: String) throws {
        let x = try arity(n, 0)
        let s = try e.shape(x)
        guard !s.isEmpty else { throw TFLiteOpError("a scalar input") }
        let axis = try normalize(n.int("axis", 0), rank: s.count)
        guard n.int("select_last_index", 0) == 0 else { throw TFLiteOpError("select_last_index = 1") }
        let keep = n.int("keepdims", 1) != 0
        var reduced = s
        reduced.remove(at: axis)
        let y = try e.output(n)
        let out = keep ? try e.temp(n.outputs[0] + "_reduced", shape: reduced, dtype: .int64) : y
        try e.op(op, [try e.input(x), try e.int32Constant("axis", [axis])], [out], options: options) { b in b.table { t in t.add(0, Int8(4), default: 0) } }
        if keep { try e.reshape(out, to: try e.shape(n.outputs[0]), into: y) }
    }
}
