/// The op table: one entry per IR op, the single list of what the IR can
/// express. Op semantics are ONNX's at its newest opset; each entry says what
/// the rest of Shrinkwrap needs to know about the op (see `OpInfo`):
///
/// - the interpreter has one kernel per entry (`KernelRegistry`, checked by `RegistryTests`);
/// - the compress pass asks `weightRoles` which inputs are weights;
/// - static folding asks `shapeInputs`, `dataDependentShape`, `readsShapeOnly`;
/// - the ONNX exporter asks `onnxOpset` for the file's opset;
/// - every importer and writer table names only ops listed here (`RegistryTests`).
///
/// Adding an op: one line here, a kernel in `Kernels/<Family>.swift` plus its line in
/// `KernelRegistry`, and a line in each translator table that reads or writes it
/// (docs/ARCHITECTURE.md has the checklist).
public enum OpTable {
    /// Every op, by name.
    public static let byName: [String: OpInfo] = Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0) })

    /// Every op name, sorted.
    public static var ops: [String] { byName.keys.sorted() }

    public static subscript(_ op: String) -> OpInfo? { byName[op] }

    /// The role of input `index` of `node`; ops the table lacks have no weights.
    public static func role(of node: Node, input index: Int, rank: Int, isConstant: (String) -> Bool) -> WeightRole {
        guard let info = byName[node.opType] else {
            return .notWeight("input \(index) of \(node.opType) '\(node.label)' is not a weight")
        }
        return info.role(of: node, input: index, rank: rank, isConstant: isConstant)
    }

    static let entries: [OpInfo] = (tensorOps + elementwiseOps + activationOps + reductionOps + networkOps).map { op in
        var op = op
        if layoutRules.elementwise.contains(op.name) { op.layout = .elementwise }
        if layoutRules.broadcasting.contains(op.name) { op.layout = .broadcasting }
        if op.name == "Concat" { op.layout = .concatenating }
        return op
    }

    /// Ops a Transpose is moved through (`OpInfo.layout`); every op here has
    /// been checked in the TFLite export cross-check, whose layout pass is the
    /// first user. Others commute too (Mod, Sign, …) and can join when a
    /// format needs them.
    static let layoutRules: (elementwise: Set<String>, broadcasting: Set<String>) = (
        elementwise: ["Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "Elu", "HardSwish", "HardSigmoid", "Exp", "Log",
                      "Sqrt", "Abs", "Neg", "Floor", "Ceil", "Round", "Sin", "Cos", "Reciprocal", "Identity", "Dropout",
                      "Softplus", "Erf", "Not", "Cast"],
        broadcasting: ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "PRelu"]
    )
}

// MARK: - Opset rules

/// An opset that does not depend on the node's form.
private func since(_ opset: Int) -> OpInfo.Opset { { _ in opset } }

/// Reduce* other than ReduceSum: `axes` became an input at opset 18.
private let reduceOpset: OpInfo.Opset = { n in n.input(1) != nil || n.attributes["noop_with_empty_axes"] != nil ? 18 : 13 }

// MARK: - Weight roles

/// "Conv 'conv1'": how a log names a node.
private func here(_ n: Node) -> String { "\(n.opType) '\(n.label)'" }
/// The second axis of a weight of rank `rank`, or its only one.
private func second(_ rank: Int) -> Int { min(1, max(rank - 1, 0)) }

private let convRoles: OpInfo.Roles = { n, i, rank, _ in
    switch i {
    case 1: return .weight(outputAxis: 0, inputAxis: second(rank))
    case 2: return .notWeight("bias of \(here(n))")
    default: return nil
    }
}
/// ConvTranspose weights are [C_in, C_out / group, k…].
private let convTransposeRoles: OpInfo.Roles = { n, i, rank, _ in
    switch i {
    case 1: return .weight(outputAxis: second(rank), inputAxis: 0)
    case 2: return .notWeight("bias of \(here(n))")
    default: return nil
    }
}
private let gemmRoles: OpInfo.Roles = { n, i, rank, _ in
    switch i {
    case 1:
        if case .int(let t)? = n.attributes["transB"], t != 0 { return .weight(outputAxis: 0, inputAxis: second(rank)) }
        return .weight(outputAxis: second(rank), inputAxis: 0)
    case 2: return .notWeight("bias of \(here(n))")
    default: return nil
    }
}
/// MatMul's B is [..., K, N]: outputs along the last axis.
private let matMulRoles: OpInfo.Roles = { _, i, rank, _ in
    i == 1 && rank >= 2 ? .weight(outputAxis: rank - 1, inputAxis: rank - 2) : nil
}
/// A Gather table is a weight when it is an embedding: rows looked up by computed indices.
private let gatherRoles: OpInfo.Roles = { n, i, rank, isConstant in
    guard i == 0 else { return nil }
    let axis: Int
    if case .int(let a)? = n.attributes["axis"] { axis = a < 0 ? a + rank : a } else { axis = 0 }
    if rank >= 2, axis == 0, let idx = n.input(1), !isConstant(idx) { return .weight(outputAxis: 0, inputAxis: 1) }
    return .notWeight("table of \(here(n)) is not an embedding lookup")
}
/// RNN / GRU / LSTM: W and R are [directions, gates × hidden, input or hidden].
private let recurrentRoles: OpInfo.Roles = { n, i, rank, _ in
    switch i {
    case 1, 2: return .weight(outputAxis: second(rank), inputAxis: min(2, max(rank - 1, 0)))
    case 3: return .notWeight("bias of \(here(n))")
    default: return nil
    }
}
private let normalizationRoles: OpInfo.Roles = { n, _, _, _ in .notWeight("normalization parameter of \(here(n))") }

// MARK: - Entries (one line per op, by kernel family)

private let tensorOps: [OpInfo] = [
    OpInfo("Identity", .tensor, onnx: since(13)),
    OpInfo("Flatten", .tensor, onnx: since(13)),
    OpInfo("Reshape", .tensor, shapeInputs: [1], onnx: since(13)),
    OpInfo("Transpose", .tensor, onnx: since(13)),
    OpInfo("Squeeze", .tensor, shapeInputs: [1], onnx: since(13)),
    OpInfo("Unsqueeze", .tensor, shapeInputs: [1], onnx: since(13)),
    OpInfo("Concat", .tensor, onnx: since(13)),
    // num_outputs without a split input: 18.
    OpInfo("Split", .tensor, shapeInputs: [1], onnx: { n in n.input(1) == nil && n.attributes["num_outputs"] != nil ? 18 : 13 }),
    OpInfo("Slice", .tensor, shapeInputs: [1, 2, 3, 4], onnx: since(13)),
    OpInfo("Expand", .tensor, shapeInputs: [1], onnx: since(13)),
    OpInfo("Tile", .tensor, shapeInputs: [1], onnx: since(13)),
    // wrap mode: 19; the axes input: 18.
    OpInfo("Pad", .tensor, shapeInputs: [1, 2, 3], onnx: { n in n.string("mode", "constant") == "wrap" ? 19 : (n.input(3) != nil ? 18 : 13) }),
    OpInfo("Shape", .tensor, readsShapeOnly: true, onnx: since(13)),
    OpInfo("Size", .tensor, readsShapeOnly: true, onnx: since(13)),
    OpInfo("Dropout", .tensor, onnx: since(13)),
    OpInfo("ConstantOfShape", .tensor, shapeInputs: [0], onnx: since(13)),
    OpInfo("Range", .tensor, shapeInputs: [0, 1, 2], onnx: since(13)),
    OpInfo("EyeLike", .tensor, onnx: since(13)),
    OpInfo("Gather", .indexing, weights: gatherRoles, onnx: since(13)),
    OpInfo("GatherElements", .indexing, onnx: since(13)),
    OpInfo("GatherND", .indexing, onnx: since(13)),
    // reduction max / min: 18.
    OpInfo("ScatterElements", .indexing, onnx: { n in ["max", "min"].contains(n.string("reduction", "none")) ? 18 : 16 }),
    OpInfo("ScatterND", .indexing, onnx: { n in ["max", "min"].contains(n.string("reduction", "none")) ? 18 : 16 }),
    OpInfo("OneHot", .indexing, shapeInputs: [1], onnx: since(13)),
    OpInfo("Trilu", .indexing, onnx: since(14)),
    OpInfo("TopK", .indexing, shapeInputs: [1], onnx: since(13)),
    OpInfo("NonZero", .indexing, dataDependentShape: true, onnx: since(13)),
    OpInfo("CumSum", .indexing, onnx: since(13)),
    OpInfo("Compress", .indexing, dataDependentShape: true, onnx: since(13)),
]

private let elementwiseOps: [OpInfo] = [
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Sum", "Mean", "Max", "Min", "Neg", "Abs", "Sign", "Exp", "Log", "Sqrt",
    "Reciprocal", "Erf", "Floor", "Ceil", "Round", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
    "Acosh", "Atanh", "IsNaN", "IsInf",
].map { OpInfo($0, .elementwise, onnx: since(13)) } + [
    // saturate (float8 targets): 19.
    OpInfo("Cast", .elementwise, onnx: { n in n.attributes["saturate"] != nil ? 19 : 13 }),
    OpInfo("CastLike", .elementwise, onnx: { n in n.attributes["saturate"] != nil ? 19 : 15 }),
] + ["Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "Not", "Where", "BitShift"]
    .map { OpInfo($0, .logic, onnx: since(13)) }
    + ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"].map { OpInfo($0, .logic, onnx: since(18)) }

private let activationOps: [OpInfo] = [
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "Tanh", "Softplus", "Softsign",
    "ThresholdedRelu", "Shrink", "Clip", "Softmax", "LogSoftmax", "Hardmax",
].map { OpInfo($0, .activation, onnx: since(13)) } + [
    OpInfo("HardSwish", .activation, onnx: since(14)),
    OpInfo("Mish", .activation, onnx: since(18)),
    OpInfo("Gelu", .activation, onnx: since(20)),
    // The ONNX exporter writes Swish as x · Sigmoid(alpha · x) (ONNXOps.expanded), at any opset.
    OpInfo("Swish", .activation, onnx: since(24)),
]

private let reductionOps: [OpInfo] = [
    OpInfo("ReduceSum", .reduction, shapeInputs: [1], onnx: since(13)),  // axes became an input at 13
] + ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
     "ReduceSumSquare"].map { OpInfo($0, .reduction, shapeInputs: [1], onnx: reduceOpset) } + [
    OpInfo("ArgMax", .reduction, onnx: since(13)),
    OpInfo("ArgMin", .reduction, onnx: since(13)),
]

private let networkOps: [OpInfo] = [
    OpInfo("Conv", .neuralNetwork, weights: convRoles, onnx: since(13)),
    OpInfo("ConvTranspose", .neuralNetwork, weights: convTransposeRoles, onnx: since(13)),
    OpInfo("MaxPool", .neuralNetwork, onnx: since(13)),
    OpInfo("AveragePool", .neuralNetwork, onnx: { n in n.attributes["dilations"] != nil ? 19 : 11 }),
    OpInfo("LpPool", .neuralNetwork, onnx: { n in n.attributes["ceil_mode"] != nil ? 18 : 11 }),
    OpInfo("GlobalAveragePool", .neuralNetwork, onnx: since(13)),
    OpInfo("GlobalMaxPool", .neuralNetwork, onnx: since(13)),
    OpInfo("GlobalLpPool", .neuralNetwork, onnx: since(13)),
    OpInfo("Gemm", .neuralNetwork, weights: gemmRoles, onnx: since(13)),
    OpInfo("MatMul", .neuralNetwork, weights: matMulRoles, onnx: since(13)),
    OpInfo("BatchNormalization", .normalization, weights: normalizationRoles, onnx: since(13)),
    OpInfo("InstanceNormalization", .normalization, weights: normalizationRoles, onnx: since(13)),
    OpInfo("LayerNormalization", .normalization, weights: normalizationRoles, onnx: since(17)),
    // The IR's GroupNormalization has per-channel scale and bias (opset 21; 18 had per group).
    OpInfo("GroupNormalization", .normalization, weights: normalizationRoles, onnx: since(21)),
    OpInfo("LRN", .normalization, onnx: since(13)),
    // Unchanged since opset 1 (22 added bfloat16).
    OpInfo("LpNormalization", .normalization, onnx: since(1)),
    // Opset 9 had the same form without bfloat16.
    OpInfo("MeanVarianceNormalization", .normalization, onnx: since(13)),
    // half_pixel_symmetric: 19; antialias, axes, keep_aspect_ratio_policy: 18.
    OpInfo("Resize", .neuralNetwork, shapeInputs: [1, 2, 3], onnx: { n in
        if n.string("coordinate_transformation_mode", "half_pixel") == "half_pixel_symmetric" { return 19 }
        return ["antialias", "axes", "keep_aspect_ratio_policy"].contains { n.attributes[$0] != nil } ? 18 : 13
    }),
    OpInfo("DepthToSpace", .neuralNetwork, onnx: since(13)),
    OpInfo("SpaceToDepth", .neuralNetwork, onnx: since(13)),
    OpInfo("DequantizeLinear", .quantization, onnx: { n in n.attributes["block_size"] != nil ? 21 : 13 }),
    OpInfo("RNN", .recurrent, weights: recurrentRoles, onnx: since(13)),
    OpInfo("GRU", .recurrent, weights: recurrentRoles, onnx: since(13)),
    OpInfo("LSTM", .recurrent, weights: recurrentRoles, onnx: since(13)),
    // Subgraph ops (Subgraphs.swift): outputs depend on the branch taken / the trip count.
    OpInfo("If", .controlFlow, dataDependentShape: true, onnx: since(13)),
    OpInfo("Loop", .controlFlow, dataDependentShape: true, onnx: since(13)),
]

extension Graph {
    /// The ops of this graph's nodes that the op table lacks, sorted. Importers
    /// check their result with it: a translator that emits such an op is a bug,
    /// and a test over every suite then names it.
    public var opsOutsideTable: [String] { Set(allNodes.map(\.opType)).filter { OpTable[$0] == nil }.sorted() }

    /// Self, or an error naming the nodes' ops that the op table lacks.
    public func checkedAgainstOpTable(file: String) throws -> Graph {
        let outside = opsOutsideTable
        guard outside.isEmpty else { throw ImportError.unsupportedOps(file: file, ops: outside.map { "\($0) (not an IR op: a translator bug)" }) }
        return self
    }
}
