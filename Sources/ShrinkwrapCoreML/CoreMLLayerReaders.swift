import CoreMLSchema
import ShrinkwrapIR

/// NeuralNetwork layer → IR nodes: one reader per layer kind, one table.
///
/// Semantics follow Core ML's NeuralNetwork.proto. Classic layers name their
/// axes from the end (C = −3, H = −2, W = −1), which is how they are read
/// here, so they work on rank-5 blobs (seen as [1, C, H, W]) and N-d values
/// alike. A reader throws `LayerReaderError` for a form it cannot express;
/// the importer reports all of them together.
enum CoreMLLayerReaders {
    typealias Layer = CoreML_Specification_NeuralNetworkLayer
    typealias Reader = (inout GraphBuilderState, Layer, String) throws -> Void

    static let table: [String: Reader] = [
        "convolution": convolution, "pooling": pooling, "activation": activation, "innerProduct": innerProduct,
        "embedding": embedding, "embeddingND": embeddingND, "batchnorm": batchnorm, "softmax": softmax, "softmaxND": softmax,
        "lrn": lrn, "padding": padding, "constantPad": padding, "upsample": upsample, "resizeBilinear": resizeBilinear,
        "unary": unary, "add": multiInput, "multiply": multiInput, "average": multiInput, "max": multiInput, "min": multiInput,
        "scale": scaleBias, "bias": scaleBias, "reduce": reduceClassic, "loadConstant": loadConstant, "loadConstantND": loadConstant,
        "reshape": reshapeClassic, "flatten": flattenClassic, "permute": permute, "concat": concat, "concatND": concat,
        "split": split, "splitND": split, "slice": sliceClassic, "sliceStatic": sliceStatic,
        "uniDirectionalLSTM": lstm, "biDirectionalLSTM": lstm, "gru": gru, "simpleRecurrent": simpleRecurrent,
        "clip": simpleND, "ceil": simpleND, "floor": simpleND, "sign": simpleND, "round": simpleND, "erf": simpleND, "gelu": simpleND,
        "addBroadcastable": broadcastable, "subtractBroadcastable": broadcastable, "multiplyBroadcastable": broadcastable,
        "divideBroadcastable": broadcastable, "maxBroadcastable": broadcastable, "minBroadcastable": broadcastable,
        "powBroadcastable": broadcastable,
        "gather": gather, "transpose": transpose, "batchedMatmul": batchedMatmul, "squeeze": squeeze, "expandDims": expandDims,
        "flattenTo2D": flattenTo2D, "reshapeStatic": reshapeStatic, "tile": tile, "argMax": argMax,
        "reduceL1": reduceND, "reduceL2": reduceND, "reduceMax": reduceND, "reduceMin": reduceND, "reduceSum": reduceND,
        "reduceProd": reduceND, "reduceMean": reduceND, "reduceLogSum": reduceND, "reduceSumSquare": reduceND, "reduceLogSumExp": reduceND,
        "layerNormalization": layerNormalization, "reorganizeData": reorganizeData,
        "equal": compare, "notEqual": compare, "lessThan": compare, "lessEqual": compare, "greaterThan": compare,
        "greaterEqual": compare, "logicalAnd": logical, "logicalOr": logical, "logicalXor": logical, "logicalNot": logical,
        "whereBroadcastable": whereBroadcastable, "broadcastToStatic": broadcastToStatic,
        "scatterAlongAxis": scatterAlongAxis, "oneHot": oneHot, "rangeStatic": rangeStatic, "rangeDynamic": rangeDynamic,
        "getShape": getShape, "broadcastToDynamic": broadcastToDynamic, "copy": copy, "sliceDynamic": sliceDynamic, "loop": loop,
    ]

    /// Official names of the layer kinds outside our schema subset (they parse as unknown fields).
    static let otherKinds: [Int: String] = [
        605: "branch",
        620: "loopBreak",
        625: "loopContinue",
        700: "exp2",
        710: "sin",
        715: "cos",
        720: "tan",
        730: "asin",
        735: "acos",
        740: "atan",
        750: "sinh",
        755: "cosh",
        760: "tanh",
        770: "asinh",
        775: "acosh",
        780: "atanh",
        865: "modBroadcastable",
        895: "floorDivBroadcastable",
        925: "stack",
        935: "scatter",
        940: "gatherND",
        945: "scatterND",
        952: "gatherAlongAxis",
        960: "reverse",
        965: "reverseSeq",
        1005: "slidingWindows",
        1015: "topK",
        1020: "argMin",
        1080: "fillLike",
        1085: "fillStatic",
        1090: "fillDynamic",
        1100: "broadcastToLike",
        1135: "reshapeLike",
        1145: "reshapeDynamic",
        1150: "rankPreservingReshape",
        1170: "randomNormalLike",
        1175: "randomNormalStatic",
        1180: "randomNormalDynamic",
        1190: "randomUniformLike",
        1195: "randomUniformStatic",
        1200: "randomUniformDynamic",
        1210: "randomBernoulliLike",
        1215: "randomBernoulliStatic",
        1220: "randomBernoulliDynamic",
        1230: "categoricalDistribution",
        1313: "whereNonZero",
        1315: "matrixBandPart",
        1320: "lowerTriangular",
        1325: "upperTriangular",
        1400: "NonMaximumSuppression",
        1455: "cumSum",
        1460: "clampedReLU",
        1461: "argSort",
        1465: "pooling3d",
        1466: "globalPooling3d",
        1470: "sliceBySize",
        1471: "convolution3d",
    ]

    /// The kind of a layer our schema does not know, from its first unknown field number ≥ 100.
    static func unknownKind(_ l: Layer) -> String {
        let bytes = [UInt8](l.unknownFields.data)
        var i = 0
        while i < bytes.count {
            var key: UInt64 = 0, shift: UInt64 = 0
            while i < bytes.count, shift < 64 {
                let b = bytes[i]; i += 1
                key |= UInt64(b & 0x7F) << shift
                shift += 7
                if b & 0x80 == 0 { break }
            }
            let field = Int(key >> 3)
            if field >= 100 { return otherKinds[field].map { "\($0) (field \(field))" } ?? "layer field \(field)" }
            // Skip this field's value.
            switch key & 7 {
            case 0: while i < bytes.count, bytes[i] & 0x80 != 0 { i += 1 }; i += 1
            case 1: i += 8
            case 5: i += 4
            case 2:
                var len: UInt64 = 0, s2: UInt64 = 0
                while i < bytes.count, s2 < 64 { let b = bytes[i]; i += 1; len |= UInt64(b & 0x7F) << s2; s2 += 7; if b & 0x80 == 0 { break } }
                guard len < UInt64(bytes.count) else { return "unknown" }
                i += Int(len)
            default: return "unknown"
            }
        }
        return "no layer kind"
    }

    /// The proto field name of a layer kind.
    static func kindName(_ k: Layer.OneOf_Layer) -> String {
        let s = String(describing: k)
        let name = s.split(separator: "(").first.map(String.init) ?? s
        switch name {
        case "loadConstantNd": return "loadConstantND"
        case "embeddingNd": return "embeddingND"
        case "softmaxNd": return "softmaxND"
        case "concatNd": return "concatND"
        case "splitNd": return "splitND"
        case "uniDirectionalLstm": return "uniDirectionalLSTM"
        case "biDirectionalLstm": return "biDirectionalLSTM"
        default: return name
        }
    }

    // MARK: helpers

    static func one(_ b: inout GraphBuilderState, _ l: Layer, _ p: String) throws -> (x: String, y: String) {
        guard l.input.count == 1, l.output.count == 1 else {
            throw ImportError.malformed(b.loc(p), reason: "expected 1 input and 1 output, found \(l.input.count) and \(l.output.count)")
        }
        return (try b.value(l.input[0], place: p), try b.define(l.output[0], place: p))
    }

    static func rank(_ b: GraphBuilderState, _ v: String) throws -> Int {
        guard let r = b.ranks[v] else { throw LayerReaderError("the rank of '\(v)' is not known") }
        return r
    }

    static func dim(_ v: UInt64, _ what: String, _ b: GraphBuilderState, _ p: String) throws -> Int {
        guard v > 0, v <= 1 << 31 else { throw ImportError.malformed(b.loc(p), reason: "\(what) = \(v)") }
        return Int(v)
    }

    static func ints(_ v: [Int]) -> Attribute { .ints(v) }
}
