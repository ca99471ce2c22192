import FlatBuffers
import ShrinkwrapIR

/// IR op → TFLite operators: one writer per IR op type. Layout-sensitive
/// ops arrive as "NHWC.<op>" (see `TFLiteLowering`): their input and output
/// are already NHWC, their attributes still the IR's. The writers are in
/// TFLiteExportOps+<family>.swift; the tables and shared helpers here.
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
        t["OneHot"] = oneHot
        t["Range"] = range
        t["Shape"] = shape
        t["ScatterND"] = scatterND
        t["Loop"] = loop
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
    static func activation(_ n: Node) -> Int8 { Int8(clamping: n.int(TFLiteLowering.fusedActivation, 0)) }

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
}
