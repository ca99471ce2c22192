/// What the compress pass may do with one input of a node.
public enum WeightRole: Sendable, Equatable {
    /// A learned weight: output channels run along `outputAxis` (per-channel
    /// scales, grouped palettes), blocks along `inputAxis` (per-block scales).
    case weight(outputAxis: Int, inputAxis: Int)
    /// Not a weight, and why ("bias of Conv 'conv1'").
    case notWeight(String)
}

/// The kernel family an op belongs to: which `Kernels/<Family>.swift` file
/// runs it, and how the docs group the ops.
public enum OpFamily: String, Sendable, CaseIterable {
    case tensor, indexing, elementwise, logic, activation, reduction, neuralNetwork, normalization, quantization, recurrent,
         controlFlow
}

/// How a change of layout (a Transpose of the inputs) passes through an op:
/// the layout passes move Transposes only through ops that say how.
public enum LayoutRule: Sendable, Equatable {
    /// Not known to commute with a Transpose (layout-sensitive, or not checked).
    case fixed
    /// Applied element by element to input 0; other inputs are scalars.
    case elementwise
    /// Element-wise over broadcast inputs (a constant operand can be transposed to match).
    case broadcasting
    /// Joins inputs along the `axis` attribute (remapped through the permutation).
    case concatenating
}

/// Every fact about one IR op that more than one part of Shrinkwrap asks
/// about. The op table (`OpTable`) holds one of these per op; the compress
/// pass, static folding, the ONNX exporter, the interpreter's kernel table
/// and the format translator tables all ask it (`RegistryTests` keeps them
/// consistent).
public struct OpInfo: Sendable {
    /// The role of input `input` of `node`, whose constant has `rank`
    /// dimensions; `isConstant` tells which values are constants. nil: the
    /// default ("input i of Op 'x' is not a weight").
    public typealias Roles = @Sendable (_ node: Node, _ input: Int, _ rank: Int, _ isConstant: (String) -> Bool) -> WeightRole?
    /// The lowest default-domain ONNX opset that has this node's form.
    public typealias Opset = @Sendable (Node) -> Int

    public let name: String
    public let family: OpFamily
    /// Which inputs are weights, and along which axes; nil when none is.
    public let weightRoles: Roles?
    /// Inputs whose values set the output's shape (Reshape's shape, Slice's
    /// starts …): static folding keeps an output's shape static only when
    /// these are constants.
    public let shapeInputs: [Int]
    /// The output's shape depends on input values in ways no input tells
    /// statically (NonZero, Compress).
    public let dataDependentShape: Bool
    /// The value depends on input 0's shape only, not its values (Shape, Size).
    public let readsShapeOnly: Bool
    /// The lowest ONNX opset that writes this node; nil is a test failure
    /// (`RegistryTests`): every IR op has an ONNX form, since the IR's op
    /// vocabulary is ONNX's.
    public let onnxOpset: Opset?
    /// How a Transpose passes through it (the layout passes ask).
    public internal(set) var layout: LayoutRule = .fixed

    public init(_ name: String, _ family: OpFamily, weights: Roles? = nil, shapeInputs: [Int] = [],
                dataDependentShape: Bool = false, readsShapeOnly: Bool = false, onnx: Opset?) {
        self.name = name; self.family = family; self.weightRoles = weights; self.shapeInputs = shapeInputs
        self.dataDependentShape = dataDependentShape; self.readsShapeOnly = readsShapeOnly; self.onnxOpset = onnx
    }

    /// The role of input `index` of `node` (its constant has `rank` dimensions).
    public func role(of node: Node, input index: Int, rank: Int, isConstant: (String) -> Bool) -> WeightRole {
        weightRoles?(node, index, rank, isConstant) ?? .notWeight("input \(index) of \(node.opType) '\(node.label)' is not a weight")
    }
}
