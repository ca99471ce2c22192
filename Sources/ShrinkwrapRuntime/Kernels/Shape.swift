import ShrinkwrapIR

/// Shape and layout kernels: ops that move or reinterpret elements.
public enum ShapeKernels {
    /// Identity: returns its input unchanged.
    public static func identity(_ c: KernelContext) throws -> [Tensor] { [try c.input(0)] }
}
