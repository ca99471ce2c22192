import ShrinkwrapIR

/// The values of a graph's outputs when they follow from the inputs' shapes
/// alone: for importers (`ImportEvaluator`). The graph runs twice: on zeros
/// with every unfixed input dimension at 1, then on ones with them at 2; an
/// output that differs between the runs depends on those dimensions or on
/// the data, and is refused.
public enum ShapeDerivedValues {
    /// Largest zero input allocated per run (elements).
    static let inputLimit = 1 << 26

    @Sendable public static func evaluate(_ graph: Graph) throws -> [Tensor] {
        let g = try graph.validatedAndSorted()
        let interpreter = try Interpreter(graph: g, options: .init(threads: 1, optimize: false))
        func run(_ unfixed: Int, filling value: Int) throws -> [Tensor] {
            var inputs: [String: Tensor] = [:]
            for i in g.runtimeInputs {
                guard let shape = i.shape else {
                    throw KernelError.badGraphInput(name: i.name, reason: "rank is unknown; a value computed from its shape cannot be found at import")
                }
                let dims = shape.map { $0.value ?? unfixed }
                guard checkedElementCount(dims, limit: inputLimit) != nil else {
                    throw KernelError.badGraphInput(name: i.name, reason: "shape \(dims) is too large to find values computed from it at import")
                }
                inputs[i.name] = filled(dims, dtype: i.dtype ?? .float32, value)
            }
            let outs = try interpreter.run(inputs)
            return try g.outputs.map { o in
                guard let t = outs[o.name] else { throw GraphError.undefinedOutput(o.name) }
                return t
            }
        }
        let first = try run(1, filling: 0)
        let second = try run(2, filling: 1)
        for (k, (a, b)) in zip(first, second).enumerated() where a != b {
            throw KernelError.badGraphInput(name: g.runtimeInputs.first?.name ?? "?",
                                            reason: "'\(g.outputs[k].name)' changes with the inputs' unfixed dimensions or with the data (run at 1 on zeros, then at 2 on ones); it must be known at import")
        }
        return first
    }

    static func filled(_ shape: [Int], dtype: DType, _ value: Int) -> Tensor {
        let n = shape.reduce(1, *)
        if dtype.isFloatingPoint { return Tensor(dtype: dtype, shape: shape, storage: .float(Array(repeating: Float(value), count: n))) }
        if dtype == .bool { return Tensor(dtype: dtype, shape: shape, storage: .bool(Array(repeating: value != 0, count: n))) }
        return Tensor(dtype: dtype, shape: shape, storage: .int(Array(repeating: Int64(value), count: n)))
    }
}
