import FlatBuffers
import ShrinkwrapIR

/// OneHot, Range, ScatterND into zeros (what `scatterElementsAsScatterND` makes), and Slice / Tile whose
/// starts or repeats are computed at run time (a Loop body's: the output shape is static, the offset is not).
extension TFLiteExportOps {
    /// OneHot(indices, depth, [off, on], axis) → ONE_HOT(indices, depth, on, off). Depth and values are
    /// constants; a negative index is wrapped first (ONNX counts it from the end, TFLite gives it all `off`).
    static func oneHot(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let i = try arity(n, 0)
        let depth = try constInts(e, try arity(n, 1), "depth")
        guard depth.count == 1 else { throw TFLiteOpError("depth has \(depth.count) values") }
        let v = try arity(n, 2)
        guard let values = e.g.constants[e.resolve(v)]?.decoded(), values.count == 2 else {
            throw TFLiteOpError("values [off, on] computed at run time; only constant values are supported")
        }
        // ONNX counts a negative index from the end, TFLite's ONE_HOT gives it all `off`:
        // indices + depth · (indices < 0), in int32 (depth is int32 in TFLite).
        var indices = try e.input(i)
        let shape = try e.shape(i)
        let type = e.file.tensors[indices].type
        if type != 2 {
            let cast = try e.temp(i + "_int32", shape: shape, dtype: .int32)
            try e.op("CAST", [indices], [cast], options: "CastOptions") { b in b.table { t in t.add(0, type, default: 0); t.add(1, Int8(2), default: 0) } }
            indices = cast
        }
        let negative = try e.temp(i + "_negative", shape: shape, dtype: .bool), neg32 = try e.temp(i + "_negative_int", shape: shape, dtype: .int32)
        let shift = try e.temp(i + "_shift", shape: shape, dtype: .int32), wrapped = try e.temp(i + "_wrapped", shape: shape, dtype: .int32)
        try e.op("LESS", [indices, try e.int32Constant("zero", [0], shape: [])], [negative], options: "LessOptions")
        try e.op("CAST", [negative], [neg32], options: "CastOptions") { b in b.table { t in t.add(0, Int8(6), default: 0); t.add(1, Int8(2), default: 0) } }
        try e.op("MUL", [neg32, try e.int32Constant("depth", depth, shape: [])], [shift], options: "MulOptions")
        try e.op("ADD", [indices, shift], [wrapped], options: "AddOptions")
        indices = wrapped
        let axis = Int32(n.int("axis", -1))
        let off = try e.denseTensor(e.g.fresh(n.outputs[0] + "_off"), element(values, 0))
        let on = try e.denseTensor(e.g.fresh(n.outputs[0] + "_on"), element(values, 1))
        try e.op("ONE_HOT", [indices, try e.int32Constant("depth", depth, shape: []), on, off], [try e.output(n)], options: "OneHotOptions") { b in
            b.table { t in t.add(0, axis, default: 0) }
        }
    }

    /// Element `k` of `t` as a scalar of its type.
    static func element(_ t: Tensor, _ k: Int) -> Tensor {
        switch t.storage {
        case .float(let a): return Tensor(dtype: t.dtype, shape: [], storage: .float([a[k]]))
        case .int(let a): return Tensor(dtype: t.dtype, shape: [], storage: .int([a[k]]))
        case .bool(let a): return Tensor(dtype: t.dtype, shape: [], storage: .bool([a[k]]))
        }
    }

    static func isAllZero(_ t: Tensor) -> Bool {
        switch t.storage {
        case .float(let a): return a.allSatisfy { $0 == 0 }
        case .int(let a): return a.allSatisfy { $0 == 0 }
        case .bool(let a): return a.allSatisfy { !$0 }
        }
    }

    /// Shape of a value whose shape is static (every value is, in an exported graph): its dimensions
    /// (ONNX's start / end applied) as an int64 constant, copied into the output.
    static func shape(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let s = try e.shape(try arity(n, 0))
        let r = s.count
        func clamp(_ v: Int) -> Int { min(max(v < 0 ? v + r : v, 0), r) }
        let start = clamp(n.int("start", 0)), end = clamp(n.int("end", r))
        let dims = start < end ? Array(s[start..<end]) : []
        let c = try e.denseTensor(e.g.fresh(n.outputs.first ?? "shape"), Tensor(ints: dims.map(Int64.init), shape: [dims.count]))
        let y = try e.output(n)
        try e.reshape(c, to: e.file.tensors[y].shape, into: y)
    }

    /// Range → RANGE; an int64 one (TFLite 2.12's RANGE has no int64 kernel) through int32 and back.
    static func range(_ e: inout TFLiteEmitter, _ n: Node) throws {
        var ins = try (0..<3).map { try e.input(try arity(n, $0)) }
        let y = try e.output(n)
        guard e.file.tensors[y].type == 4 else { return try e.op("RANGE", ins, [y], options: "RangeOptions") }
        for k in ins.indices where e.file.tensors[ins[k]].type == 4 {
            let narrow = try e.temp(n.outputs[0] + "_arg\(k)_int32", shape: e.file.tensors[ins[k]].shape, dtype: .int32)
            try castOp(&e, ins[k], narrow)
            ins[k] = narrow
        }
        let r = try e.temp(n.outputs[0] + "_int32", shape: e.file.tensors[y].shape, dtype: .int32)
        try e.op("RANGE", ins, [r], options: "RangeOptions")
        try castOp(&e, r, y)
    }

    /// CAST between the tensors' own types.
    static func castOp(_ e: inout TFLiteEmitter, _ x: Int, _ y: Int) throws {
        let from = e.file.tensors[x].type, to = e.file.tensors[y].type
        try e.op("CAST", [x], [y], options: "CastOptions") { b in b.table { t in t.add(0, from, default: 0); t.add(1, to, default: 0) } }
    }

    /// ScatterND(zeros, indices, updates, reduction add) → SCATTER_ND(indices as int32, updates, shape).
    static func scatterND(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let data = try arity(n, 0), i = try arity(n, 1), u = try arity(n, 2)
        guard let zeros = e.g.constants[e.resolve(data)], isAllZero(zeros.decoded()), n.string("reduction", "none") == "add" else {
            throw TFLiteOpError("only a scatter added into zeros is written (TFLite's SCATTER_ND)")
        }
        var indices = try e.input(i)
        if e.file.tensors[indices].type == 4 {
            let narrow = try e.temp(i + "_int32", shape: try e.shape(i), dtype: .int32)
            try e.op("CAST", [indices], [narrow], options: "CastOptions") { b in b.table { t in t.add(0, Int8(4), default: 0); t.add(1, Int8(2), default: 0) } }
            indices = narrow
        }
        try e.op("SCATTER_ND", [indices, try e.input(u), try e.int32Constant("shape", zeros.shape)], [try e.output(n)], options: "ScatterNdOptions")
    }

    /// Tile whose repeats are computed at run time: the static output shape over the input's.
    static func tileAtRunTime(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let s = try e.shape(x), o = try e.shape(n.outputs.first ?? "")
        guard s.count == o.count, zip(s, o).allSatisfy({ $0 > 0 && $1 % $0 == 0 }) else { throw TFLiteOpError("output shape \(o) is no tiling of \(s)") }
        let reps = zip(s, o).map { $1 / $0 }
        try e.op("TILE", [try e.input(x), try e.int32Constant("multiples", reps)], [try e.output(n)], options: "TileOptions")
    }

    /// Slice with starts computed at run time and step 1: SLICE with the static output shape as its size and
    /// begin = the starts (a negative one counted from the end) clamped to [0, size of axis − output size].
    static func sliceAtRunTime(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0), st = try arity(n, 1)
        let s = try e.shape(x), o = try e.shape(n.outputs.first ?? "")
        let k = try e.shape(st).reduce(1, *)
        let axes = try n.input(3).map { try constInts(e, $0, "axes") } ?? Array(0..<k)
        if let steps = try n.input(4).map({ try constInts(e, $0, "steps") }), steps.contains(where: { $0 != 1 }) {
            throw TFLiteOpError("steps \(steps) with starts computed at run time (step 1 is written)")
        }
        guard axes.count == k, o.count == s.count else { throw TFLiteOpError("\(k) starts for axes \(axes)") }
        let norm = try axes.map { try normalize($0, rank: s.count) }
        var starts = try e.input(st)
        if e.file.tensors[starts].type != 2 {
            let narrow = try e.temp(st + "_int32", shape: [k], dtype: .int32)
            let from = e.file.tensors[starts].type
            try e.op("CAST", [starts], [narrow], options: "CastOptions") { b in b.table { t in t.add(0, from, default: 0); t.add(1, Int8(2), default: 0) } }
            starts = narrow
        } else if e.file.tensors[starts].shape != [k] {
            let flat = try e.temp(st + "_1d", shape: [k], dtype: .int32)
            try e.reshape(starts, to: [k], into: flat)
            starts = flat
        }
        func t32(_ base: String, _ d: DType = .int32) throws -> Int { try e.temp(n.outputs[0] + "_" + base, shape: [k], dtype: d) }
        let negative = try t32("negative", .bool), neg32 = try t32("negative_int"), shift = try t32("shift"), wrapped = try t32("wrapped")
        let low = try t32("at_least_0"), begin = try t32("begin")
        try e.op("LESS", [starts, try e.int32Constant("zero", [0], shape: [])], [negative], options: "LessOptions")
        try e.op("CAST", [negative], [neg32], options: "CastOptions") { b in b.table { t in t.add(0, Int8(6), default: 0); t.add(1, Int8(2), default: 0) } }
        try e.op("MUL", [neg32, try e.int32Constant("axis_sizes", norm.map { s[$0] })], [shift], options: "MulOptions")
        try e.op("ADD", [starts, shift], [wrapped], options: "AddOptions")
        try e.op("MAXIMUM", [wrapped, try e.int32Constant("zero", [0], shape: [])], [low], options: "MaximumMinimumOptions")
        try e.op("MINIMUM", [low, try e.int32Constant("last_begin", norm.map { s[$0] - o[$0] })], [begin], options: "MaximumMinimumOptions")
        // The begin of every axis: 0 where nothing is sliced (element 0 of [0, begin…]).
        let padded = try e.temp(n.outputs[0] + "_begin_padded", shape: [k + 1], dtype: .int32)
        try e.op("CONCATENATION", [try e.int32Constant("zero", [0]), begin], [padded], options: "ConcatenationOptions")
        var pick = [Int](repeating: 0, count: s.count)
        for (j, a) in norm.enumerated() { pick[a] = j + 1 }
        let full = try e.temp(n.outputs[0] + "_begin_full", shape: [s.count], dtype: .int32)
        try e.op("GATHER", [padded, try e.int32Constant("begin_axes", pick)], [full], options: "GatherOptions")
        try e.op("SLICE", [try e.input(x), full, try e.int32Constant("size", o)], [try e.output(n)], options: "SliceOptions")
    }
}
