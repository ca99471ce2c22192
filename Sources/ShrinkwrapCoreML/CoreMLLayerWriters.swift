import CoreMLSchema
import ShrinkwrapIR

/// IR op → NeuralNetwork layer(s): one writer per op, one table.
///
/// A writer throws `LayerWriterError` when the node's attributes or shapes
/// have no layer (the exporter collects these and reports them together),
/// and calls `needND` before it uses an N-dimensional layer (which, in
/// rank-5 mode, restarts the export with exact mapping).
enum CoreMLLayerWriters {
    typealias Writer = (inout NNWriter, Node) throws -> Void

    static let table: [String: Writer] = [
        "Conv": conv, "ConvTranspose": conv,
        "MaxPool": pool, "AveragePool": pool, "GlobalAveragePool": globalPool, "GlobalMaxPool": globalPool,
        "BatchNormalization": batchNorm,
        "Relu": activation, "LeakyRelu": activation, "Sigmoid": activation, "Tanh": activation, "Elu": activation,
        "Softplus": activation, "Softsign": activation, "HardSigmoid": activation, "ThresholdedRelu": activation,
        "PRelu": activation,
        "Clip": clip,
        "Softmax": softmax,
        "Flatten": flatten, "Reshape": reshape, "Squeeze": reshape, "Unsqueeze": reshape,
        "Transpose": transpose,
        "Concat": concat,
        "Split": split,
        "Slice": sliceAny,
        "Identity": identity, "Dropout": identity, "Cast": identity,
        "Add": binary, "Sum": binary, "Mul": binary, "Sub": binary, "Div": binary, "Max": binary, "Min": binary, "Pow": binary,
        "Exp": unary, "Log": unary, "Sqrt": unary, "Reciprocal": unary, "Abs": unary, "Neg": unary,
        "Floor": unary, "Ceil": unary, "Sign": unary, "Round": unary, "Erf": unary, "Gelu": unary,
        "Gemm": gemm, "MatMul": matmul,
        "LRN": lrn,
        "Pad": pad,
        "Resize": resize,
        "Gather": gather,
        "ReduceSum": reduce, "ReduceMean": reduce, "ReduceMax": reduce, "ReduceMin": reduce, "ReduceProd": reduce,
        "ReduceL1": reduce, "ReduceL2": reduce, "ReduceLogSum": reduce, "ReduceLogSumExp": reduce, "ReduceSumSquare": reduce,
        "ArgMax": argMax,
        "LayerNormalization": layerNorm,
        "LSTM": lstm, "GRU": gru, "RNN": rnn,
        "InstanceNormalization": instanceNorm,
        "DepthToSpace": reorganize, "SpaceToDepth": reorganize,
        "Equal": compare, "Less": compare, "Greater": compare, "LessOrEqual": compare, "GreaterOrEqual": compare,
        "And": logical, "Or": logical, "Xor": logical, "Not": logical,
        "Where": whereOp,
        "Expand": expand,
        "ScatterElements": scatterElements, "OneHot": oneHot, "Range": range, "Tile": tile, "Shape": shapeOf,
        "Loop": loop,
    ]

    // MARK: attribute helpers

    static func int(_ n: Node, _ k: String, _ d: Int) -> Int { n.int(k, d) }
    static func float(_ n: Node, _ k: String, _ d: Float) -> Float { n.float(k, d) }
    static func ints(_ n: Node, _ k: String) -> [Int]? { n.ints(k) }
    static func string(_ n: Node, _ k: String, _ d: String) -> String { n.string(k, d) }

    static func out(_ n: Node) -> [String] { [n.outputs.first ?? ""] }

    static func normalize(_ axis: Int, rank: Int) throws -> Int {
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0, a < max(rank, 1) else { throw LayerWriterError("axis \(axis) outside rank \(rank)") }
        return a
    }
}

/// The N-dimensional reduce layers share their fields.
protocol ReduceND {
    var axes: [Int64] { get set }
    var keepDims: Bool { get set }
    var reduceAll: Bool { get set }
}

extension CoreML_Specification_ReduceSumLayerParams: ReduceND {}
extension CoreML_Specification_ReduceMeanLayerParams: ReduceND {}
extension CoreML_Specification_ReduceMaxLayerParams: ReduceND {}
extension CoreML_Specification_ReduceMinLayerParams: ReduceND {}
extension CoreML_Specification_ReduceProdLayerParams: ReduceND {}
extension CoreML_Specification_ReduceL1LayerParams: ReduceND {}
extension CoreML_Specification_ReduceL2LayerParams: ReduceND {}
extension CoreML_Specification_ReduceLogSumLayerParams: ReduceND {}
extension CoreML_Specification_ReduceLogSumExpLayerParams: ReduceND {}
extension CoreML_Specification_ReduceSumSquareLayerParams: ReduceND {}
