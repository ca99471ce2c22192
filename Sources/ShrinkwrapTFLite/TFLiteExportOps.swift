import FlatBuffers
import ShrinkwrapIR

/// IR op → TFLite operators: one writer per IR op type. Layout-sensitive
/// ops arrive as "NHWC.<op>" (see `TFLiteLayout`): their input and output
/// are already NHWC, their attributes still the IR's.
enum TFLiteExportOps {
    typealias Writer = (inout TFLiteEmitter, Node) throws -> Void

    static let unary: [String: String] = [
        "Relu": "RELU", "Sigmoid": "LOGISTIC", "Tanh": "TANH", "Exp": "EXP", "Log": "LOG", "Sqrt": "SQRT",
        "Abs": "ABS", "Neg": "NEG", "Floor": "FLOOR", "Ceil": "CEIL", "Round": "ROUND", "Sin": "SIN", "Cos": "COS",
        "HardSwish": "HARD_SWISH", "Not": "LOGICAL_NOT",
    ]
    /// Binary ops and their options table (nil: none).
    static let binary: [String: (op: String, options: String?)] = [
        "Add": ("ADD", "AddOptions"), "Sub": ("SUB", "SubOptions"), "Mul": ("MUL", "MulOptions"), "Div": ("DIV", "DivOptions"),
        "Pow": ("POW", "PowOptions"), "Max": ("MAXIMUM", "MaximumMinimumOptions"), "Min": ("MINIMUM", "MaximumMinimumOptions"),
        "Sum": ("ADD", "AddOptions"), "Equal": ("EQUAL", "EqualOptions"), "Greater": ("GREATER", "GreaterOptions"),
        "Less": ("LESS", "LessOptions"), "GreaterOrEqual": ("GREATER_EQUAL", "GreaterEqualOptions"),
        "LessOrEqual": ("LESS_EQUAL", "LessEqualOptions"), "And": ("LOGICAL_AND", "LogicalAndOptions"), "Or": ("LOGICAL_OR", "LogicalOrOptions"),
    ]
    static let reductions: [String: String] = [
        "ReduceMean": "MEAN", "ReduceSum": "SUM", "ReduceMax": "REDUCE_MAX", "ReduceMin": "REDUCE_MIN", "ReduceProd": "REDUCE_PROD",
    ]

    static let table: [String: Writer] = {
        var t: [String: Writer] = [:]
        for (ir, tfl) in unary { t[ir] = { e, n in try simple(&e, n, tfl) } }
        for (ir, b) in binary { t[ir] = { e, n in try elementwise(&e, n, b.op, b.options) } }
        for (ir, tfl) in reductions { t[ir] = { e, n in try reduce(&e, n, tfl) } }
        t["Mean"] = mean
        t["Identity"] = identity
        t["Dropout"] = identity
        t["Reciprocal"] = reciprocal
        t["Clip"] = clip
        t["LeakyRelu"] = leakyRelu
        t["Elu"] = elu
        t["PRelu"] = prelu
        t["Softmax"] = { e, n in try softmax(&e, n, "SOFTMAX") }
        t["LogSoftmax"] = { e, n in try softmax(&e, n, "LOG_SOFTMAX") }
        t["Gemm"] = gemm
        t["MatMul"] = matmul
        for op in ["Reshape", "Flatten", "Squeeze", "Unsqueeze"] { t[op] = reshape }
        t["Transpose"] = transpose
        t["Concat"] = concat
        t["Split"] = split
        t["Slice"] = slice
        t["Gather"] = gather
        t["Pad"] = pad
        t["Cast"] = cast
        t["Expand"] = expand
        t["Tile"] = tile
        t["ArgMax"] = { e, n in try argExtreme(&e, n, "ARG_MAX", "ArgMaxOptions") }
        t["ArgMin"] = { e, n in try argExtreme(&e, n, "ARG_MIN", "ArgMinOptions") }
        t["Where"] = { e, n in try e.op("SELECT_V2", try n.inputs.map { try e.input($0) }, [try e.output(n)], options: "SelectV2Options") }
        t["LSTM"] = lstm
        t["NHWC.Conv"] = conv
        t["NHWC.ConvTranspose"] = convTranspose
        t["NHWC.MaxPool"] = { e, n in try pool(&e, n, max: true) }
        t["NHWC.AveragePool"] = { e, n in try pool(&e, n, max: false) }
        t["NHWC.GlobalAveragePool"] = { e, n in try globalPool(&e, n, "MEAN") }
        t["NHWC.GlobalMaxPool"] = { e, n in try globalPool(&e, n, "REDUCE_MAX") }
        t["NHWC.LRN"] = lrn
        t["NHWC.Resize"] = resize
        t["NHWC.DepthToSpace"] = { e, n in try spaceDepth(&e, n, "DEPTH_TO_SPACE", "DepthToSpaceOptions") }
        t["NHWC.SpaceToDepth"] = { e, n in try spaceDepth(&e, n, "SPACE_TO_DEPTH", "SpaceToDepthOptions") }
        return t
    }()

    // MARK: helpers

    /// The fused activation the layout pass gave `n` (0: none).
    static func activation(_ n: Node) -> Int8 { Int8(clamping: n.int(TFLiteLayout.fusedActivation, 0)) }

    static func arity(_ n: Node, _ k: Int) throws -> String {
        guard let x = n.input(k) else { throw TFLiteOpError("input \(k) is missing") }
        return x
    }

    static func normalize(_ axis: Int, rank: Int) throws -> Int {
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0, a < max(rank, 1) else { throw TFLiteOpError("axis \(axis) outside rank \(rank)") }
        return a
    }

    /// Integer values of a constant input (e.g. shapes, axes, pads).
    static func constInts(_ e: TFLiteEmitter, _ v: String, _ what: String) throws -> [Int] {
        guard let c = e.g.constants[e.resolve(v)] else { throw TFLiteOpError("\(what) is computed at run time; only constant \(what) is supported") }
        let t = c.decoded()
        if let a = t.ints { return a.map { Int(clamping: $0) } }
        if let f = t.floats, f.allSatisfy({ $0 == $0.rounded() && abs($0) < 1e15 }) { return f.map { Int($0) } }
        throw TFLiteOpError("\(what) of type \(t.dtype)")
    }

    static func constFloats(_ e: TFLiteEmitter, _ v: String, _ what: String) throws -> [Float] {
        guard let c = e.g.constants[e.resolve(v)] else { throw TFLiteOpError("\(what) is computed at run time; only a constant \(what) is supported") }
        let t = c.decoded()
        if let f = t.floats { return f }
        if let a = t.ints { return a.map(Float.init) }
        throw TFLiteOpError("\(what) of type \(t.dtype)")
    }

    static func broadcast(_ a: [Int], _ b: [Int]) -> [Int] {
        let r = max(a.count, b.count)
        let pa = [Int](repeating: 1, count: r - a.count) + a, pb = [Int](repeating: 1, count: r - b.count) + b
        return zip(pa, pb).map { $0 == 1 ? $1 : $0 }
    }

    // MARK: element-wise

    static func simple(_ e: inout TFLiteEmitter, _ n: Node, _ op: String) throws {
        try e.op(op, [try e.input(try arity(n, 0))], [try e.output(n)])
    }

    static func identity(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        guard let y = n.outputs.first, !y.isEmpty else { return }
        if e.g.outputs.contains(y) {
            let out = try e.output(n)
            try e.reshape(try e.input(x), to: try e.shape(y), into: out)
        } else {
            e.alias[y] = e.resolve(x)
        }
    }

    static func elementwise(_ e: inout TFLiteEmitter, _ n: Node, _ op: String, _ options: String?) throws {
        let ins = n.inputs.filter { !$0.isEmpty }
        guard ins.count >= 2 else {
            guard ins.count == 1, ["Sum", "Max", "Min"].contains(n.opType) else { throw TFLiteOpError("needs two inputs") }
            return try identity(&e, Node(name: n.name, opType: "Identity", inputs: ins, outputs: n.outputs))
        }
        if ins.count > 2 && !["Sum", "Max", "Min"].contains(n.opType) { throw TFLiteOpError("\(ins.count) inputs") }
        let y = try e.output(n)
        var acc = try e.input(ins[0])
        var accShape = try e.shape(ins[0])
        for (k, v) in ins.enumerated().dropFirst() {
            let s = broadcast(accShape, try e.shape(v))
            let out = k == ins.count - 1 ? y : try e.temp(n.outputs[0] + "_partial", shape: s, dtype: e.dtype(n.outputs[0]))
            let act = k == ins.count - 1 ? activation(n) : 0
            if act != 0 {
                try e.op(op, [acc, try e.input(v)], [out], options: options) { b in b.table { t in t.add(0, act, default: 0) } }
            } else {
                try e.op(op, [acc, try e.input(v)], [out], options: options)
            }
            acc = out
            accShape = s
        }
    }

    /// Mean of n inputs: their sum × 1/n.
    static func mean(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let ins = n.inputs.filter { !$0.isEmpty }
        guard !ins.isEmpty, let yName = n.outputs.first else { throw TFLiteOpError("no inputs") }
        let sumName = e.g.fresh(yName + "_sum")
        e.g.shapes[sumName] = try e.shape(yName)
        e.g.dtypes[sumName] = e.dtype(yName)
        try elementwise(&e, Node(name: n.name, opType: "Sum", inputs: ins, outputs: [sumName]), "ADD", "AddOptions")
        let s = try e.input(sumName)
        let k = e.floatConstant("one_over_n", [1 / Float(ins.count)], shape: [])
        try e.op("MUL", [s, k], [try e.output(n)], options: "MulOptions")
    }

    static func reciprocal(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let one = e.floatConstant("one", [1], shape: [])
        try e.op("DIV", [one, try e.input(try arity(n, 0))], [try e.output(n)], options: "DivOptions")
    }

    static func clip(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        var lo: Float? = n.attributes["min"].flatMap { if case .float(let v) = $0 { return v } else { return nil } }
        var hi: Float? = n.attributes["max"].flatMap { if case .float(let v) = $0 { return v } else { return nil } }
        if let m = n.input(1) { lo = try constFloats(e, m, "min").first }
        if let m = n.input(2) { hi = try constFloats(e, m, "max").first }
        let xt = try e.input(x)
        let y = try e.output(n)
        if hi == .infinity { hi = nil }
        if lo == -.infinity { lo = nil }
        if lo == 0, hi == 6 {
            try e.op("RELU6", [xt], [y])
        } else if lo == -1, hi == 1 {
            try e.op("RELU_N1_TO_1", [xt], [y])
        } else if lo == 0, hi == nil {
            try e.op("RELU", [xt], [y])
        } else if lo == nil, hi == nil {
            try e.reshape(xt, to: try e.shape(x), into: y)
        } else {
            var cur = xt
            if let lo {
                let out = hi == nil ? y : try e.temp(n.outputs[0] + "_lo", shape: try e.shape(x))
                try e.op("MAXIMUM", [cur, e.floatConstant("clip_min", [lo], shape: [])], [out], options: "MaximumMinimumOptions")
                cur = out
            }
            if let hi {
                try e.op("MINIMUM", [cur, e.floatConstant("clip_max", [hi], shape: [])], [y], options: "MaximumMinimumOptions")
            }
        }
    }

    static func leakyRelu(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let alpha = n.float("alpha", 0.01)
        try e.op("LEAKY_RELU", [try e.input(try arity(n, 0))], [try e.output(n)], options: "LeakyReluOptions") { b in b.table { t in t.add(0, alpha, default: 0) } }
    }

    static func elu(_ e: inout TFLiteEmitter, _ n: Node) throws {
        guard n.float("alpha", 1) == 1 else { throw TFLiteOpError("alpha \(n.float("alpha", 1)) (TFLite's ELU has alpha 1)") }
        try simple(&e, n, "ELU")
    }

    static func prelu(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0), slope = try arity(n, 1)
        try e.op("PRELU", [try e.input(x), try e.input(slope)], [try e.output(n)])
    }

    static func softmax(_ e: inout TFLiteEmitter, _ n: Node, _ op: String) throws {
        let x = try arity(n, 0)
        let s = try e.shape(x)
        let r = max(s.count, 1)
        let axis = try normalize(n.int("axis", -1), rank: r)
        let options = op == "SOFTMAX" ? "SoftmaxOptions" : "LogSoftmaxOptions"
        func write(_ e: inout TFLiteEmitter, _ i: Int, _ o: Int) throws {
            if op == "SOFTMAX" {
                try e.op(op, [i], [o], options: options) { b in b.table { t in t.add(0, Float(1), default: 0) } }
            } else {
                try e.op(op, [i], [o], options: options)
            }
        }
        let y = try e.output(n)
        if axis == r - 1 { return try write(&e, try e.input(x), y) }
        // Softmax over another axis: move it last and back.
        var perm = Array(0..<r)
        perm.remove(at: axis)
        perm.append(axis)
        let inv = TFLiteLayout.inverse(perm)
        let xt = try e.temp(x + "_axis_last", shape: TFLiteLayout.permute(s, perm))
        try e.op("TRANSPOSE", [try e.input(x), try e.int32Constant("perm", perm)], [xt], options: "TransposeOptions")
        let yt = try e.temp(n.outputs[0] + "_axis_last", shape: TFLiteLayout.permute(s, perm))
        try write(&e, xt, yt)
        try e.op("TRANSPOSE", [yt, try e.int32Constant("perm", inv)], [y], options: "TransposeOptions")
    }

    // MARK: matrix products

    static func fullyConnected(_ e: inout TFLiteEmitter, input: Int, weight: Int, bias: Int?, output: Int, keepDims: Bool, activation act: Int8) throws {
        try e.op("FULLY_CONNECTED", [input, weight, bias ?? -1], [output], options: "FullyConnectedOptions") { b in
            b.table { t in t.add(0, act, default: 0); t.add(2, keepDims, default: false) }
        }
    }

    static func gemm(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let a = try arity(n, 0), bName = try arity(n, 1)
        guard n.int("transA", 0) == 0 else { throw TFLiteOpError("transA = 1") }
        let transB = n.int("transB", 0) != 0
        let alpha = n.float("alpha", 1), beta = n.float("beta", 1)
        guard alpha == 1 else { throw TFLiteOpError("alpha \(alpha)") }
        let ys = try e.shape(n.outputs.first ?? "")
        guard ys.count == 2 else { throw TFLiteOpError("output rank \(ys.count)") }
        let nOut = ys[1]
        let y = try e.output(n)
        var bias: Int?
        var addAfter: String?
        if let c = n.input(2), beta != 0 {
            if beta == 1, let ce = e.g.constants[e.resolve(c)], ce.count == nOut, ce.shape.filter({ $0 != 1 }).count <= 1 {
                let r = try ce.reshaped([nOut])
                bias = try e.constantTensor(e.resolve(c) + (ce.shape == [nOut] ? "" : "_vector"), r, hybrid: nil)
            } else if beta == 1 {
                addAfter = c
            } else {
                throw TFLiteOpError("beta \(beta) with a bias that is not a constant vector")
            }
        }
        guard addAfter == nil || activation(n) == 0 else { throw TFLiteOpError("a fused activation after a bias that is not a vector") }
        let out = addAfter == nil ? y : try e.temp(n.outputs[0] + "_product", shape: ys)
        if e.g.isConstant(e.resolve(bName)) {
            let w = try e.weight(bName, perm: transB ? nil : [1, 0], hybrid: .init(axis: 0, perChannel: false))
            try fullyConnected(&e, input: try e.input(a), weight: w, bias: bias, output: out, keepDims: false, activation: activation(n))
        } else {
            let product = bias == nil ? out : try e.temp(n.outputs[0] + "_matmul", shape: ys)
            try e.op("BATCH_MATMUL", [try e.input(a), try e.input(bName)], [product], options: "BatchMatMulOptions") { b in
                b.table { t in t.add(1, transB, default: false) }
            }
            if let bias { try e.op("ADD", [product, bias], [out], options: "AddOptions") }
        }
        if let c = addAfter { try e.op("ADD", [out, try e.input(c)], [y], options: "AddOptions") }
    }

    static func matmul(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let a = try arity(n, 0), bName = try arity(n, 1)
        let sa = try e.shape(a), sb = try e.shape(bName)
        guard sa.count >= 2, sb.count >= 2 else { throw TFLiteOpError("1-D operands") }
        if e.g.isConstant(e.resolve(bName)), sb.count == 2 {
            let w = try e.weight(bName, perm: [1, 0], hybrid: .init(axis: 0, perChannel: false))
            return try fullyConnected(&e, input: try e.input(a), weight: w, bias: nil, output: try e.output(n), keepDims: sa.count > 2,
                                      activation: activation(n))
        }
        try e.op("BATCH_MATMUL", [try e.input(a), try e.input(bName)], [try e.output(n)], options: "BatchMatMulOptions")
    }

    // MARK: shapes

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
        try e.op("BROADCAST_TO", [try e.input(x), try e.int32Constant("shape", s)], [try e.output(n)], options: "BroadcastToOptions")
    }

    static func tile(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
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

// MARK: - NHWC ops

extension TFLiteExportOps {
    /// TensorFlow's SAME padding of one axis: (before, after).
    static func samePads(input: Int, kernel: Int, stride: Int, dilation: Int) -> (Int, Int) {
        let eff = (kernel - 1) * dilation + 1
        let out = (input + stride - 1) / stride
        let total = max((out - 1) * stride + eff - input, 0)
        return (total / 2, total - total / 2)
    }

    struct Window {
        var kernel: [Int], strides: [Int], dilations: [Int]
        /// [top, left, bottom, right].
        var pads: [Int]
        /// TFLite padding: 0 SAME, 1 VALID (after `pads` are applied by a PAD op when `explicit`).
        var padding: Int8
        var explicit: Bool
    }

    /// Kernel, strides, dilations and the padding of a 2-D convolution or pool
    /// over an NHWC input of spatial size `hw`.
    static func window(_ n: Node, kernel: [Int], hw: [Int]) throws -> Window {
        let strides = n.ints("strides") ?? [1, 1], dil = n.ints("dilations") ?? [1, 1]
        guard kernel.count == 2, strides.count == 2, dil.count == 2, strides.allSatisfy({ $0 >= 1 }), dil.allSatisfy({ $0 >= 1 }),
              kernel.allSatisfy({ $0 >= 1 }) else {
            throw TFLiteOpError("kernel \(kernel), strides \(strides), dilations \(dil) are not 2-D")
        }
        let same = (0..<2).map { samePads(input: hw[$0], kernel: kernel[$0], stride: strides[$0], dilation: dil[$0]) }
        var pads: [Int]
        switch n.string("auto_pad", "NOTSET") {
        case "SAME_UPPER": pads = [same[0].0, same[1].0, same[0].1, same[1].1]
        case "SAME_LOWER": pads = [same[0].1, same[1].1, same[0].0, same[1].0]
        case "VALID": pads = [0, 0, 0, 0]
        default:
            pads = n.ints("pads") ?? [0, 0, 0, 0]
            guard pads.count == 4, pads.allSatisfy({ $0 >= 0 }) else { throw TFLiteOpError("pads \(pads)") }
        }
        if pads == [0, 0, 0, 0] { return Window(kernel: kernel, strides: strides, dilations: dil, pads: pads, padding: 1, explicit: false) }
        if pads == [same[0].0, same[1].0, same[0].1, same[1].1] {
            return Window(kernel: kernel, strides: strides, dilations: dil, pads: pads, padding: 0, explicit: false)
        }
        return Window(kernel: kernel, strides: strides, dilations: dil, pads: pads, padding: 1, explicit: true)
    }

    /// Spatial output size TFLite computes for `w` over `hw` (after explicit pads).
    static func outputSize(_ w: Window, hw: [Int]) -> [Int] {
        (0..<2).map { k in
            if w.padding == 0 { return (hw[k] + w.strides[k] - 1) / w.strides[k] }
            let padded = hw[k] + (w.explicit ? w.pads[k] + w.pads[k + 2] : 0)
            let eff = (w.kernel[k] - 1) * w.dilations[k] + 1
            return padded >= eff ? (padded - eff) / w.strides[k] + 1 : 0
        }
    }

    /// A PAD / PADV2 op giving the NHWC input its explicit spatial pads.
    static func padSpatial(_ e: inout TFLiteEmitter, _ x: String, _ pads: [Int], value: Float) throws -> Int {
        let s = try e.shape(x)
        let padded = [s[0], s[1] + pads[0] + pads[2], s[2] + pads[1] + pads[3], s[3]]
        let out = try e.temp(x + "_padded", shape: padded)
        let p = try e.int32Constant("paddings", [0, 0, pads[0], pads[2], pads[1], pads[3], 0, 0], shape: [4, 2])
        if value == 0 {
            try e.op("PAD", [try e.input(x), p], [out], options: "PadOptions")
        } else {
            try e.op("PADV2", [try e.input(x), p, e.floatConstant("pad_value", [value], shape: [])], [out], options: "PadV2Options")
        }
        return out
    }

    static func conv(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0), wName = try arity(n, 1)
        guard let we = e.g.constants[e.resolve(wName)] else { throw TFLiteOpError("the weight is computed at run time") }
        let ws = we.shape
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        guard ws.count == 4 else { throw TFLiteOpError("weight rank \(ws.count)") }
        let groups = n.int("group", 1)
        let cin = xs[3], cout = ws[0]
        var w = try window(n, kernel: n.ints("kernel_shape") ?? [ws[2], ws[3]], hw: [xs[1], xs[2]])
        guard outputSize(w, hw: [xs[1], xs[2]]) == [ys[1], ys[2]] else {
            throw TFLiteOpError("output \(ys[1])×\(ys[2]) does not follow from TFLite's padding rules")
        }
        var input = try e.input(x)
        if w.explicit {
            input = try padSpatial(&e, x, w.pads, value: 0)
            w.explicit = false
        }
        let bias: Int
        if let b = n.input(2) { bias = try e.input(b) } else { bias = e.floatConstant(wName + "_zero_bias", [Float](repeating: 0, count: cout), shape: [cout]) }
        let y = try e.output(n)
        let (pad, sw, sh, dw, dh) = (w.padding, Int32(w.strides[1]), Int32(w.strides[0]), Int32(w.dilations[1]), Int32(w.dilations[0]))
        let act = activation(n)
        if groups == 1 {
            let filter = try e.weight(wName, perm: [0, 2, 3, 1], hybrid: .init(axis: 0))
            try e.op("CONV_2D", [input, filter, bias], [y], options: "Conv2DOptions", version: e.file.tensors[filter].type == 9 ? 2 : 1) { b in
                b.table { t in
                    t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0); t.add(3, act, default: 0)
                    t.add(4, dw, default: 1); t.add(5, dh, default: 1)
                }
            }
        } else if groups == cin, ws[1] == 1, cout % cin == 0 {
            let filter = try e.weight(wName, perm: [1, 2, 3, 0], hybrid: .init(axis: 3))
            let mult = Int32(cout / cin)
            try e.op("DEPTHWISE_CONV_2D", [input, filter, bias], [y], options: "DepthwiseConv2DOptions",
                     version: e.file.tensors[filter].type == 9 ? 4 : (dw != 1 || dh != 1 ? 2 : 1)) { b in
                b.table { t in
                    t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0); t.add(3, mult, default: 0)
                    t.add(4, act, default: 0); t.add(5, dw, default: 1); t.add(6, dh, default: 1)
                }
            }
        } else {
            // Grouped: split the channels, one CONV_2D per group, concatenate.
            guard groups > 1, cin % groups == 0, cout % groups == 0, ws[1] == cin / groups else {
                throw TFLiteOpError("\(groups) groups over \(cin) input and \(cout) output channels")
            }
            let gin = cin / groups, gout = cout / groups
            let inShape = e.file.tensors[input].shape
            let parts = try (0..<groups).map { k in try e.temp(x + "_group\(k)", shape: [inShape[0], inShape[1], inShape[2], gin]) }
            try e.op("SPLIT", [try e.int32Constant("axis", [3], shape: []), input], parts, options: "SplitOptions") { b in
                b.table { t in t.add(0, Int32(groups), default: 0) }
            }
            let wt: WeightEncoding
            do { wt = try we.transposed([0, 2, 3, 1]) } catch { throw TFLiteOpError("weight: \(error.reason)") }
            let biasValues: [Float]
            if let b = n.input(2) { biasValues = try constFloats(e, b, "bias") } else { biasValues = [Float](repeating: 0, count: cout) }
            guard biasValues.count == cout else { throw TFLiteOpError("\(biasValues.count) biases for \(cout) channels") }
            var outs: [Int] = []
            for k in 0..<groups {
                let slice = try rows(wt, k * gout..<(k + 1) * gout, weight: wName)
                let filter = try e.constantTensor(e.resolve(wName) + "_group\(k)", slice, hybrid: .init(axis: 0))
                let gb = e.floatConstant(wName + "_bias_group\(k)", Array(biasValues[k * gout..<(k + 1) * gout]), shape: [gout])
                let out = try e.temp(n.outputs[0] + "_group\(k)", shape: [ys[0], ys[2], ys[3], gout])
                try e.op("CONV_2D", [parts[k], filter, gb], [out], options: "Conv2DOptions", version: e.file.tensors[filter].type == 9 ? 2 : 1) { b in
                    b.table { t in
                        t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0)
                        t.add(4, dw, default: 1); t.add(5, dh, default: 1)
                    }
                }
                outs.append(out)
            }
            try e.op("CONCATENATION", outs, [y], options: "ConcatenationOptions") { b in b.table { t in t.add(0, Int32(3), default: 0) } }
        }
    }

    /// Rows `range` (axis 0) of a weight, keeping its encoding.
    static func rows(_ w: WeightEncoding, _ range: Range<Int>, weight: String) throws -> WeightEncoding {
        let shape = w.shape
        guard let first = shape.first, range.lowerBound >= 0, range.upperBound <= first else { throw TFLiteOpError("weight '\(weight)': rows \(range)") }
        let inner = shape.dropFirst().reduce(1, *)
        let sub = [range.count] + shape.dropFirst()
        let span = range.lowerBound * inner..<range.upperBound * inner
        do {
            switch w {
            case .dense(let t):
                switch t.storage {
                case .float(let a): return .dense(Tensor(dtype: t.dtype, shape: sub, storage: .float(Array(a[span]))))
                case .int(let a): return .dense(Tensor(dtype: t.dtype, shape: sub, storage: .int(Array(a[span]))))
                case .bool(let a): return .dense(Tensor(dtype: t.dtype, shape: sub, storage: .bool(Array(a[span]))))
                }
            case .float16(let h): return .float16(try Float16Weights(shape: sub, bits: Array(h.bits[span])))
            case .affine(let a):
                if a.scale.count == 1 {
                    return .affine(try AffineWeights(shape: sub, bits: a.bits, signed: a.signed, q: Array(a.q[span]),
                                                     blockShape: sub.map { max($0, 1) }, scale: a.scale, bias: a.bias))
                }
                guard a.blockShape.first == 1, zip(a.blockShape.dropFirst(), shape.dropFirst()).allSatisfy({ $0 >= $1 }) else {
                    throw TFLiteOpError("weight '\(weight)' is quantized in blocks \(a.blockShape) that a grouped convolution cannot split")
                }
                return .affine(try AffineWeights(shape: sub, bits: a.bits, signed: a.signed, q: Array(a.q[span]), blockShape: a.blockShape,
                                                 scale: Array(a.scale[range]), bias: Array(a.bias[range])))
            case .palette(let p):
                throw TFLiteOpError("weight '\(weight)' is a \(p.bits)-bit palette (LUT); TFLite has no lookup-table weights — write Core ML (.mlmodel) for LUT modes")
            }
        } catch let err as WeightLayoutError {
            throw TFLiteOpError("weight '\(weight)': \(err.reason)")
        }
    }

    static func convTranspose(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0), wName = try arity(n, 1)
        guard let we = e.g.constants[e.resolve(wName)] else { throw TFLiteOpError("the weight is computed at run time") }
        let ws = we.shape
        guard ws.count == 4 else { throw TFLiteOpError("weight rank \(ws.count)") }
        guard n.int("group", 1) == 1 else { throw TFLiteOpError("groups \(n.int("group", 1)) (TFLite's TRANSPOSE_CONV has none)") }
        guard (n.ints("dilations") ?? [1, 1]).allSatisfy({ $0 == 1 }) else { throw TFLiteOpError("dilations (TRANSPOSE_CONV has none)") }
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        let strides = n.ints("strides") ?? [1, 1]
        let kernel = n.ints("kernel_shape") ?? [ws[2], ws[3]]
        guard strides.count == 2, kernel.count == 2 else { throw TFLiteOpError("not 2-D") }
        let outPad = n.ints("output_padding") ?? [0, 0]
        guard outPad.count == 2 else { throw TFLiteOpError("output_padding \(outPad)") }
        if let p = n.ints("pads"), p.count != 4 { throw TFLiteOpError("pads \(p)") }
        // TFLite crops the full deconvolution at `pad` before: 0 for VALID; for SAME the
        // padding a forward convolution of the output size would take, ((⌈out/s⌉ − 1)·s + k − out) / 2.
        var befores: [Int] = [], sames: [Int] = []
        for k in 0..<2 {
            let full = (xs[k + 1] - 1) * strides[k] + kernel[k], out = ys[k + 1]
            guard out <= full else { throw TFLiteOpError("output \(out) beyond the full deconvolution \(full) (output_padding)") }
            befores.append(beginPad(n, k, xs, ys, strides, kernel, outPad))
            let fwd = (out + strides[k] - 1) / strides[k]
            sames.append(max((fwd - 1) * strides[k] + kernel[k] - out, 0) / 2)
        }
        // SAME first: TFLite's converter writes VALID only when nothing is cropped, and XNNPACK's
        // delegate corrupts memory on a VALID transposed convolution that crops.
        var uncropped = true
        for k in 0..<2 {
            let full: Int = (xs[k + 1] - 1) * strides[k] + kernel[k]
            if full != ys[k + 1] { uncropped = false }
        }
        let padding: Int8
        if befores == sames { padding = 0 } else if befores == [0, 0] && uncropped { padding = 1 } else {
            throw TFLiteOpError("pads before \(befores) match neither TFLite's SAME \(sames) nor an uncropped VALID")
        }
        let filter = try e.weight(wName, perm: [1, 2, 3, 0])
        let shape = try e.int32Constant(n.outputs[0] + "_output_shape", ys)
        var inputs = [shape, filter, try e.input(x)]
        if let b = n.input(2) { inputs.append(try e.input(b)) }
        let (sw, sh) = (Int32(strides[1]), Int32(strides[0]))
        let pad = padding
        try e.op("TRANSPOSE_CONV", inputs, [try e.output(n)], options: "TransposeConvOptions", version: inputs.count == 4 ? 3 : 1) { b in
            b.table { t in t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0) }
        }
    }

    static func beginPad(_ n: Node, _ k: Int, _ xs: [Int], _ ys: [Int], _ strides: [Int], _ kernel: [Int], _ outPad: [Int]) -> Int {
        let full = (xs[k + 1] - 1) * strides[k] + kernel[k]
        let total = full + outPad[k] - ys[k + 1]
        switch n.string("auto_pad", "NOTSET") {
        case "SAME_UPPER": return total / 2
        case "SAME_LOWER": return total - total / 2
        case "VALID": return 0
        default: return (n.ints("pads") ?? [0, 0, 0, 0])[k]
        }
    }

    /// Max / average pooling. TFLite pools with SAME (an average leaving the
    /// padding out of its count) or VALID. Anything else is explicit padding
    /// + VALID: max pools pad with −∞ (also the end a ceil_mode window needs);
    /// an average that must not count some of the padded positions is scaled
    /// by a constant k² / count per output position.
    static func pool(_ e: inout TFLiteEmitter, _ n: Node, max isMax: Bool) throws {
        let x = try arity(n, 0)
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        guard let kernel = n.ints("kernel_shape") else { throw TFLiteOpError("no kernel_shape") }
        guard (n.ints("dilations") ?? [1, 1]).allSatisfy({ $0 == 1 }) else { throw TFLiteOpError("dilated pooling") }
        var w = try window(n, kernel: kernel, hw: [xs[1], xs[2]])
        let includePad = n.int("count_include_pad", 0) != 0
        let target = [ys[1], ys[2]]
        let direct = !w.explicit && outputSize(w, hw: [xs[1], xs[2]]) == target
            && (isMax || !includePad || w.pads == [0, 0, 0, 0])
        var scale: [Float]?
        if !direct {
            // Explicit pads (SAME's own when SAME was chosen), then what a ceil_mode window adds at the end.
            w.padding = 1
            w.explicit = true
            var extra = [0, 0]
            for k in 0..<2 {
                let padded = xs[k + 1] + w.pads[k] + w.pads[k + 2]
                extra[k] = max((target[k] - 1) * w.strides[k] + w.kernel[k] - padded, 0)
            }
            let declared = w.pads
            w.pads[2] += extra[0]
            w.pads[3] += extra[1]
            guard outputSize(w, hw: [xs[1], xs[2]]) == target else {
                throw TFLiteOpError("output \(target[0])×\(target[1]) does not follow from the kernel, strides and pads")
            }
            if !isMax {
                // Positions an ONNX average counts: the input, plus the declared pads when count_include_pad.
                var counts: [Float] = []
                var needed = false
                for oh in 0..<target[0] {
                    for ow in 0..<target[1] {
                        var c = 1
                        for (k, o) in [oh, ow].enumerated() {
                            let start = o * w.strides[k] - w.pads[k]
                            let lo = includePad ? -declared[k] : 0, hi = xs[k + 1] + (includePad ? declared[k + 2] : 0)
                            c *= max(min(start + w.kernel[k], hi) - max(start, lo), 0)
                        }
                        let full = w.kernel[0] * w.kernel[1]
                        if c != full { needed = true }
                        counts.append(c > 0 ? Float(full) / Float(c) : 0)
                    }
                }
                if needed { scale = counts }
            }
        }
        let input = w.explicit && w.pads != [0, 0, 0, 0] ? try padSpatial(&e, x, w.pads, value: isMax ? -Float.greatestFiniteMagnitude : 0) : try e.input(x)
        let y = try e.output(n)
        let out = scale == nil ? y : try e.temp(n.outputs[0] + "_sum_over_k2", shape: ys)
        let (pad, sw, sh, fw, fh) = (w.padding, Int32(w.strides[1]), Int32(w.strides[0]), Int32(w.kernel[1]), Int32(w.kernel[0]))
        try e.op(isMax ? "MAX_POOL_2D" : "AVERAGE_POOL_2D", [input], [out], options: "Pool2DOptions") { b in
            b.table { t in
                t.add(0, pad, default: 0); t.add(1, sw, default: 0); t.add(2, sh, default: 0)
                t.add(3, fw, default: 0); t.add(4, fh, default: 0)
            }
        }
        if let scale {
            let c = e.floatConstant(n.outputs[0] + "_count_scale", scale, shape: [1, target[0], target[1], 1])
            try e.op("MUL", [out, c], [y], options: "MulOptions")
        }
    }

    static func globalPool(_ e: inout TFLiteEmitter, _ n: Node, _ op: String) throws {
        let x = try arity(n, 0)
        try e.op(op, [try e.input(x), try e.int32Constant("axes", [1, 2])], [try e.output(n)], options: "ReducerOptions") { b in
            b.table { t in t.add(0, true, default: false) }
        }
    }

    static func lrn(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let size = n.int("size", 0)
        guard size >= 1, size % 2 == 1 else { throw TFLiteOpError("size \(size) (TFLite's window is symmetric: odd sizes only)") }
        let radius = Int32((size - 1) / 2), bias = n.float("bias", 1), alpha = n.float("alpha", 1e-4) / Float(size), beta = n.float("beta", 0.75)
        try e.op("LOCAL_RESPONSE_NORMALIZATION", [try e.input(try arity(n, 0))], [try e.output(n)], options: "LocalResponseNormalizationOptions") { b in
            b.table { t in t.add(0, radius, default: 0); t.add(1, bias, default: 0); t.add(2, alpha, default: 0); t.add(3, beta, default: 0) }
        }
    }

    static func resize(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        let xs = try e.shape(x), ys = try e.shape(n.outputs.first ?? "")
        guard xs[0] == ys[0], xs[3] == ys[3] else { throw TFLiteOpError("resizes the batch or channel axis") }
        guard n.int("antialias", 0) == 0 else { throw TFLiteOpError("antialias") }
        let mode = n.string("mode", "nearest"), ctm = n.string("coordinate_transformation_mode", "half_pixel")
        var align = false, half = false
        switch (mode, ctm) {
        case ("linear", "asymmetric"), ("nearest", "asymmetric"): break
        case ("linear", "align_corners"): align = true
        case ("linear", "half_pixel"): half = true
        case ("linear", "pytorch_half_pixel") where ys[1] > 1 && ys[2] > 1: half = true
        case ("nearest", "align_corners"): align = true
        case ("nearest", "tf_half_pixel_for_nn"): half = true
        default: throw TFLiteOpError("mode \(mode) with coordinate_transformation_mode \(ctm)")
        }
        if mode == "nearest" {
            let nm = n.string("nearest_mode", "round_prefer_floor")
            let expected = align ? "round_prefer_ceil" : "floor"
            guard nm == expected else { throw TFLiteOpError("nearest_mode \(nm) with \(ctm) (TFLite rounds like \(expected))") }
        }
        let size = try e.int32Constant("size", [ys[1], ys[2]])
        let (a, h) = (align, half)
        if mode == "linear" {
            try e.op("RESIZE_BILINEAR", [try e.input(x), size], [try e.output(n)], options: "ResizeBilinearOptions", version: h ? 3 : 1) { b in
                b.table { t in t.add(2, a, default: false); t.add(3, h, default: false) }
            }
        } else {
            try e.op("RESIZE_NEAREST_NEIGHBOR", [try e.input(x), size], [try e.output(n)], options: "ResizeNearestNeighborOptions", version: h ? 3 : 1) { b in
                b.table { t in t.add(0, a, default: false); t.add(1, h, default: false) }
            }
        }
    }

    static func spaceDepth(_ e: inout TFLiteEmitter, _ n: Node, _ op: String, _ options: String) throws {
        if op == "DEPTH_TO_SPACE", n.string("mode", "DCR") != "DCR" { throw TFLiteOpError("mode \(n.string("mode", "DCR")) (TFLite's is DCR)") }
        let block = Int32(n.int("blocksize", 0))
        guard block >= 1 else { throw TFLiteOpError("blocksize \(block)") }
        try e.op(op, [try e.input(try arity(n, 0))], [try e.output(n)], options: options) { b in b.table { t in t.add(0, block, default: 0) } }
    }
}

// MARK: - Recurrent

extension TFLiteExportOps {
    /// ONNX LSTM (forward, sequence-major, gates i, o, f, c) → a time-major
    /// UNIDIRECTIONAL_SEQUENCE_LSTM (gates i, f, c, o; state in variable
    /// tensors starting at zero), its output reshaped to ONNX's [seq, 1, batch, hidden].
    /// The IR's `shrinkwrap_cell_clip` becomes cell_clip.
    static func lstm(_ e: inout TFLiteEmitter, _ n: Node) throws {
        guard n.string("direction", "forward") == "forward" else { throw TFLiteOpError("direction \(n.string("direction", "forward")) (TFLite's is forward)") }
        guard n.int("layout", 0) == 0 else { throw TFLiteOpError("batch-major layout") }
        guard n.int("input_forget", 0) == 0 else { throw TFLiteOpError("coupled input and forget gates") }
        guard n.attributes["clip"] == nil else { throw TFLiteOpError("clip (ONNX clips the gates' inputs; TFLite clips the cell)") }
        guard n.attributes["activation_alpha"] == nil, n.attributes["activation_beta"] == nil else { throw TFLiteOpError("activation_alpha / beta") }
        let acts = (n.attributes["activations"]).flatMap { if case .strings(let a) = $0 { return a } else { return nil } } ?? ["Sigmoid", "Tanh", "Tanh"]
        let codes: [String: Int8] = ["Tanh": 4, "Relu": 1, "Sigmoid": 6]
        guard acts.count == 3, acts[0] == "Sigmoid", acts[1] == acts[2], let act = codes[acts[1]] else {
            throw TFLiteOpError("activations \(acts) (TFLite: sigmoid gates, one cell / output activation)")
        }
        for k in [4, 5, 6] where n.input(k) != nil {
            guard k != 4, let c = e.g.constants[e.resolve(n.inputs[k])], (c.decoded().floats ?? [1]).allSatisfy({ $0 == 0 }) else {
                throw TFLiteOpError(k == 4 ? "sequence_lens" : "an initial state that is not zero")
            }
        }
        let readers = Set(e.g.nodes.flatMap(\.inputs)).union(e.g.outputs)
        if n.outputs.dropFirst().contains(where: { !$0.isEmpty && readers.contains($0) }) {
            throw TFLiteOpError("the final states Y_h / Y_c are read (TFLite's op gives the sequence only)")
        }
        let x = try arity(n, 0), wName = try arity(n, 1), rName = try arity(n, 2)
        let xs = try e.shape(x)
        guard xs.count == 3, let we = e.g.constants[e.resolve(wName)], let re = e.g.constants[e.resolve(rName)],
              we.shape.count == 3, re.shape.count == 3, we.shape[0] == 1, we.shape[1] % 4 == 0 else {
            throw TFLiteOpError("input / weight shapes")
        }
        let hidden = we.shape[1] / 4, inSize = we.shape[2], batch = xs[1]
        guard re.shape == [1, 4 * hidden, hidden], inSize == xs[2] else { throw TFLiteOpError("recurrence weight \(re.shape) for \(hidden) cells") }
        let w2: WeightEncoding, r2: WeightEncoding
        do { w2 = try we.reshaped([4 * hidden, inSize]); r2 = try re.reshaped([4 * hidden, hidden]) } catch { throw TFLiteOpError(error.reason) }
        // ONNX gate k of (i, o, f, c) → TFLite slots in order (i, f, c, o).
        let order = [0, 2, 3, 1], names = ["input", "forget", "cell", "output"]
        func gate(_ enc: WeightEncoding, _ k: Int, _ base: String, _ what: String) throws -> Int {
            try e.constantTensor(e.g.fresh(base + "_" + what), try rows(enc, k * hidden..<(k + 1) * hidden, weight: base), hybrid: nil)
        }
        var inputs: [Int] = [try e.input(x)]
        for (slot, k) in order.enumerated() { inputs.append(try gate(w2, k, e.resolve(wName), names[slot])) }
        for (slot, k) in order.enumerated() { inputs.append(try gate(r2, k, e.resolve(rName), names[slot])) }
        // Peepholes P = (i, o, f) → cell_to_input, cell_to_forget, cell_to_output.
        if let p = n.input(7) {
            let v = try constFloats(e, p, "peepholes")
            guard v.count == 3 * hidden else { throw TFLiteOpError("\(v.count) peephole weights for \(hidden) cells") }
            for k in [0, 2, 1] { inputs.append(e.floatConstant(p + "_" + ["input", "output", "forget"][k], Array(v[k * hidden..<(k + 1) * hidden]), shape: [hidden])) }
        } else {
            inputs += [-1, -1, -1]
        }
        var bias = [Float](repeating: 0, count: 4 * hidden)
        if let b = n.input(3) {
            let v = try constFloats(e, b, "bias")
            guard v.count == 8 * hidden else { throw TFLiteOpError("\(v.count) biases for \(hidden) cells") }
            for j in 0..<(4 * hidden) { bias[j] = v[j] + v[4 * hidden + j] }
        }
        for k in order { inputs.append(e.floatConstant(n.name + "_" + names[order.firstIndex(of: k) ?? 0] + "_bias", Array(bias[k * hidden..<(k + 1) * hidden]), shape: [hidden])) }
        inputs += [-1, -1]  // no projection
        for state in ["output_state", "cell_state"] {
            let t = try e.temp(n.name + "_" + state, shape: [batch, hidden])
            e.file.tensors[t].isVariable = true
            inputs.append(t)
        }
        inputs += [-1, -1, -1, -1]  // no layer normalization
        guard let yName = n.outputs.first, !yName.isEmpty else { throw TFLiteOpError("no output Y") }
        let seq = try e.temp(yName + "_sequence", shape: [xs[0], batch, hidden])
        let clip = n.float("shrinkwrap_cell_clip", 0)
        try e.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [seq], options: "UnidirectionalSequenceLSTMOptions") { b in
            b.table { t in t.add(0, act, default: 0); t.add(1, clip, default: 0); t.add(3, true, default: false) }
        }
        try e.reshape(seq, to: [xs[0], 1, batch, hidden], into: try e.output(n))
    }
}
