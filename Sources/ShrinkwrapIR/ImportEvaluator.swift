/// Computes a graph's outputs for an importer that needs values at import
/// time which the source model computes from input shapes (a TensorFlow
/// loop's trip count from `Shape` of its input). Importers never import the
/// runtime; the facade hands them `ShapeDerivedValues.evaluate`, which runs
/// the interpreter and refuses values that change with the inputs' unfixed
/// dimensions. Without one, an importer refuses what needs it.
public typealias ImportEvaluator = @Sendable (Graph) throws -> [Tensor]
