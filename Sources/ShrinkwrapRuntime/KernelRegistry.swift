import ShrinkwrapIR

/// The op → kernel table: one line per op, kernels live in `Kernels/<Family>.swift`.
/// `RegistryTests` cross-checks this table against the importers' translator tables.
public enum KernelRegistry {
    public static let kernels: [String: Kernel] = {
        var t: [String: Kernel] = [:]
        // --- Tensor, Shape and Indexing (Kernels/Shape.swift, Kernels/Indexing.swift)
        t["Identity"] = ShapeKernels.identity
        // --- end Shape/Indexing
        // --- Elementwise, activations, reductions (Kernels/Elementwise.swift, Activations.swift, Reduce.swift)
        // --- end Elementwise
        // --- Neural-network ops (Kernels/Conv.swift, Pool.swift, Linear.swift, Normalization.swift, Resize.swift)
        // --- end NN
        // --- Recurrent (Kernels/Recurrent.swift)
        // --- end Recurrent
        return t
    }()

    /// Every op with a kernel, sorted.
    public static var ops: [String] { kernels.keys.sorted() }
}
