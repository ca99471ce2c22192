import ShrinkwrapIR

/// The op → kernel table: one line per op, kernels live in `Kernels/<Family>.swift`.
/// `RegistryTests` cross-checks this table against the importers' translator tables.
public enum KernelRegistry {
    public static let kernels: [String: Kernel] = {
        var t: [String: Kernel] = [:]
        addShapeAndIndexingKernels(&t)
        addElementwiseKernels(&t)
        addNeuralNetworkKernels(&t)
        addRecurrentKernels(&t)
        return t
    }()

    /// Every op with a kernel, sorted.
    public static var ops: [String] { kernels.keys.sorted() }

    /// Tensor, shape and indexing ops (Kernels/Shape*.swift, Kernels/Indexing.swift).
    private static func addShapeAndIndexingKernels(_ t: inout [String: Kernel]) {
        t["Identity"] = ShapeKernels.identity
        t["Flatten"] = ShapeKernels.flatten
        t["Reshape"] = ShapeKernels.reshape
        t["Transpose"] = ShapeKernels.transpose
        t["Squeeze"] = ShapeKernels.squeeze
        t["Unsqueeze"] = ShapeKernels.unsqueeze
        t["Concat"] = ShapeKernels.concat
        t["Split"] = ShapeKernels.split
        t["Slice"] = ShapeKernels.slice
        t["Expand"] = ShapeKernels.expand
        t["Tile"] = ShapeKernels.tile
        t["Pad"] = ShapeKernels.pad
        t["Shape"] = ShapeKernels.shape
        t["Size"] = ShapeKernels.size
        t["Dropout"] = ShapeKernels.dropout
        t["ConstantOfShape"] = ShapeKernels.constantOfShape
        t["Range"] = ShapeKernels.range
        t["EyeLike"] = ShapeKernels.eyeLike
        t["Gather"] = IndexingKernels.gather
        t["GatherElements"] = IndexingKernels.gatherElements
        t["GatherND"] = IndexingKernels.gatherND
        t["ScatterElements"] = IndexingKernels.scatterElements
        t["ScatterND"] = IndexingKernels.scatterND
        t["OneHot"] = IndexingKernels.oneHot
        t["Trilu"] = IndexingKernels.trilu
        t["TopK"] = IndexingKernels.topK
        t["NonZero"] = IndexingKernels.nonZero
        t["CumSum"] = IndexingKernels.cumSum
        t["Compress"] = IndexingKernels.compress
    }

    /// Elementwise ops, activations, reductions (Kernels/Elementwise*.swift, Logic.swift, Activations.swift, Reduce.swift).
    private static func addElementwiseKernels(_ t: inout [String: Kernel]) {
        t["Add"] = ElementwiseKernels.add
        t["Sub"] = ElementwiseKernels.sub
        t["Mul"] = ElementwiseKernels.mul
        t["Div"] = ElementwiseKernels.div
        t["Pow"] = ElementwiseKernels.pow
        t["Mod"] = ElementwiseKernels.mod
        t["Sum"] = ElementwiseKernels.sum
        t["Mean"] = ElementwiseKernels.mean
        t["Max"] = ElementwiseKernels.max
        t["Min"] = ElementwiseKernels.min
        t["Neg"] = ElementwiseKernels.neg
        t["Abs"] = ElementwiseKernels.abs
        t["Sign"] = ElementwiseKernels.sign
        t["Exp"] = ElementwiseKernels.exp
        t["Log"] = ElementwiseKernels.log
        t["Sqrt"] = ElementwiseKernels.sqrt
        t["Reciprocal"] = ElementwiseKernels.reciprocal
        t["Erf"] = ElementwiseKernels.erf
        t["Floor"] = ElementwiseKernels.floor
        t["Ceil"] = ElementwiseKernels.ceil
        t["Round"] = ElementwiseKernels.round
        t["Sin"] = ElementwiseKernels.sin
        t["Cos"] = ElementwiseKernels.cos
        t["Tan"] = ElementwiseKernels.tan
        t["Asin"] = ElementwiseKernels.asin
        t["Acos"] = ElementwiseKernels.acos
        t["Atan"] = ElementwiseKernels.atan
        t["Sinh"] = ElementwiseKernels.sinh
        t["Cosh"] = ElementwiseKernels.cosh
        t["Asinh"] = ElementwiseKernels.asinh
        t["Acosh"] = ElementwiseKernels.acosh
        t["Atanh"] = ElementwiseKernels.atanh
        t["IsNaN"] = ElementwiseKernels.isNaN
        t["IsInf"] = ElementwiseKernels.isInf
        t["Cast"] = ElementwiseKernels.cast
        t["CastLike"] = ElementwiseKernels.castLike
        t["Equal"] = LogicKernels.equal
        t["Greater"] = LogicKernels.greater
        t["Less"] = LogicKernels.less
        t["GreaterOrEqual"] = LogicKernels.greaterOrEqual
        t["LessOrEqual"] = LogicKernels.lessOrEqual
        t["And"] = LogicKernels.and
        t["Or"] = LogicKernels.or
        t["Xor"] = LogicKernels.xor
        t["Not"] = LogicKernels.not
        t["Where"] = LogicKernels.where
        t["BitShift"] = LogicKernels.bitShift
        t["BitwiseAnd"] = LogicKernels.bitwiseAnd
        t["BitwiseOr"] = LogicKernels.bitwiseOr
        t["BitwiseXor"] = LogicKernels.bitwiseXor
        t["BitwiseNot"] = LogicKernels.bitwiseNot
        t["Swish"] = ActivationKernels.swish
        t["Relu"] = ActivationKernels.relu
        t["LeakyRelu"] = ActivationKernels.leakyRelu
        t["PRelu"] = ActivationKernels.prelu
        t["Elu"] = ActivationKernels.elu
        t["Selu"] = ActivationKernels.selu
        t["Celu"] = ActivationKernels.celu
        t["Sigmoid"] = ActivationKernels.sigmoid
        t["HardSigmoid"] = ActivationKernels.hardSigmoid
        t["HardSwish"] = ActivationKernels.hardSwish
        t["Tanh"] = ActivationKernels.tanh
        t["Softplus"] = ActivationKernels.softplus
        t["Softsign"] = ActivationKernels.softsign
        t["Gelu"] = ActivationKernels.gelu
        t["Mish"] = ActivationKernels.mish
        t["ThresholdedRelu"] = ActivationKernels.thresholdedRelu
        t["Shrink"] = ActivationKernels.shrink
        t["Clip"] = ActivationKernels.clip
        t["Softmax"] = ActivationKernels.softmax
        t["LogSoftmax"] = ActivationKernels.logSoftmax
        t["Hardmax"] = ActivationKernels.hardmax
        t["ReduceSum"] = ReduceKernels.reduceSum
        t["ReduceMean"] = ReduceKernels.reduceMean
        t["ReduceMax"] = ReduceKernels.reduceMax
        t["ReduceMin"] = ReduceKernels.reduceMin
        t["ReduceProd"] = ReduceKernels.reduceProd
        t["ReduceL1"] = ReduceKernels.reduceL1
        t["ReduceL2"] = ReduceKernels.reduceL2
        t["ReduceLogSum"] = ReduceKernels.reduceLogSum
        t["ReduceLogSumExp"] = ReduceKernels.reduceLogSumExp
        t["ReduceSumSquare"] = ReduceKernels.reduceSumSquare
        t["ArgMax"] = ReduceKernels.argMax
        t["ArgMin"] = ReduceKernels.argMin
    }

    /// Neural-network ops (Kernels/Conv.swift, Pool.swift, Linear.swift, Normalization.swift, Resize.swift).
    private static func addNeuralNetworkKernels(_ t: inout [String: Kernel]) {
        t["Conv"] = NNKernels.conv
        t["ConvTranspose"] = NNKernels.convTranspose
        t["MaxPool"] = NNKernels.maxPool
        t["AveragePool"] = NNKernels.averagePool
        t["LpPool"] = NNKernels.lpPool
        t["GlobalAveragePool"] = NNKernels.globalAveragePool
        t["GlobalMaxPool"] = NNKernels.globalMaxPool
        t["GlobalLpPool"] = NNKernels.globalLpPool
        t["Gemm"] = NNKernels.gemm
        t["MatMul"] = NNKernels.matMul
        t["BatchNormalization"] = NNKernels.batchNormalization
        t["InstanceNormalization"] = NNKernels.instanceNormalization
        t["LayerNormalization"] = NNKernels.layerNormalization
        t["GroupNormalization"] = NNKernels.groupNormalization
        t["LRN"] = NNKernels.lrn
        t["LpNormalization"] = NNKernels.lpNormalization
        t["MeanVarianceNormalization"] = NNKernels.meanVarianceNormalization
        t["Resize"] = NNKernels.resize
        t["DepthToSpace"] = NNKernels.depthToSpace
        t["SpaceToDepth"] = NNKernels.spaceToDepth
    }

    /// Recurrent ops (Kernels/Recurrent.swift), and DequantizeLinear.
    private static func addRecurrentKernels(_ t: inout [String: Kernel]) {
        t["DequantizeLinear"] = QuantizationKernels.dequantizeLinear  // Kernels/Quantization.swift
        t["RNN"] = RecurrentKernels.rnn
        t["GRU"] = RecurrentKernels.gru
        t["LSTM"] = RecurrentKernels.lstm
        // Subgraph ops (ControlFlow.swift); the interpreter compiles their subgraphs once instead.
        t["If"] = ControlFlow.uncompiled
        t["Loop"] = ControlFlow.uncompiled
    }
}
