import ShrinkwrapIR

/// The op → kernel table: one line per op, kernels live in `Kernels/<Family>.swift`.
/// `RegistryTests` cross-checks this table against the importers' translator tables.
public enum KernelRegistry {
    public static let kernels: [String: Kernel] = {
        var t: [String: Kernel] = [:]
        // --- Tensor, Shape and Indexing (Kernels/Shape.swift, Kernels/Indexing.swift)
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
        // --- end Shape/Indexing
        // --- Elementwise, activations, reductions (Kernels/Elementwise.swift, Activations.swift, Reduce.swift)
        // --- end Elementwise
        // --- Neural-network ops (Kernels/Conv.swift, Pool.swift, Linear.swift, Normalization.swift, Resize.swift)
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
        // --- end NN
        // --- Recurrent (Kernels/Recurrent.swift)
        // --- end Recurrent
        return t
    }()

    /// Every op with a kernel, sorted.
    public static var ops: [String] { kernels.keys.sorted() }
}
