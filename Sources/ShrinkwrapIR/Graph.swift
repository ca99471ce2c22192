/// One dimension of a value's shape.
public enum Dim: Sendable, Equatable, CustomStringConvertible {
    case fixed(Int)
    case symbolic(String)
    case unknown

    public var value: Int? { if case .fixed(let v) = self { return v } else { return nil } }
    public var description: String {
        switch self {
        case .fixed(let v): return String(v)
        case .symbolic(let s): return s
        case .unknown: return "?"
        }
    }
}

/// A graph input, output or intermediate value with what is known of its type.
public struct ValueInfo: Sendable, Equatable {
    public var name: String
    public var dtype: DType?
    /// nil when the rank is unknown.
    public var shape: [Dim]?
    public var docString: String

    public init(name: String, dtype: DType?, shape: [Dim]?, docString: String = "") {
        self.name = name; self.dtype = dtype; self.shape = shape; self.docString = docString
    }

    /// The shape when every dimension is fixed.
    public var staticShape: [Int]? {
        guard let shape else { return nil }
        var out: [Int] = []
        for d in shape { guard let v = d.value else { return nil }; out.append(v) }
        return out
    }

    public var shapeDescription: String {
        guard let shape else { return "?" }
        return "[" + shape.map(\.description).joined(separator: ", ") + "]"
    }
}

/// A node attribute (ONNX's attribute kinds that the IR carries).
public enum Attribute: Sendable, Equatable {
    case int(Int)
    case float(Float)
    case string(String)
    case ints([Int])
    case floats([Float])
    case strings([String])
    case tensor(Tensor)
    /// A subgraph (If's branches, Loop's body). Its nodes may read values of
    /// the enclosing graphs by name (`Graph.capturedNames`).
    case graph(Graph)
}

/// One operator application. Op semantics are ONNX's at its latest opset;
/// importers rewrite older forms (attributes that became inputs, etc.).
public struct Node: Sendable, Equatable {
    public var name: String
    public var opType: String
    /// Inputs by value name; "" marks an omitted optional input.
    public var inputs: [String]
    public var outputs: [String]
    public var attributes: [String: Attribute]
    public var docString: String

    public init(name: String, opType: String, inputs: [String], outputs: [String],
                attributes: [String: Attribute] = [:], docString: String = "") {
        self.name = name; self.opType = opType; self.inputs = inputs; self.outputs = outputs
        self.attributes = attributes; self.docString = docString
    }

    /// Input `i` if present and not omitted.
    public func input(_ i: Int) -> String? {
        i < inputs.count && !inputs[i].isEmpty ? inputs[i] : nil
    }

    /// A readable label for errors: the node's name, or its op and first output.
    public var label: String {
        name.isEmpty ? "\(opType)→\(outputs.first ?? "?")" : name
    }

    // Attribute values by kind (the default when absent or of another kind).
    public func int(_ key: String, _ d: Int) -> Int { if case .int(let v)? = attributes[key] { return v }; return d }
    public func float(_ key: String, _ d: Float) -> Float { if case .float(let v)? = attributes[key] { return v }; return d }
    public func ints(_ key: String) -> [Int]? { if case .ints(let v)? = attributes[key] { return v }; return nil }
    public func string(_ key: String, _ d: String) -> String { if case .string(let v)? = attributes[key] { return v }; return d }
}

/// A named constant (weight or other initializer) with its encoding.
public struct Constant: Sendable, Equatable {
    public var name: String
    public var encoding: WeightEncoding
    public init(name: String, encoding: WeightEncoding) { self.name = name; self.encoding = encoding }
    public init(name: String, tensor: Tensor) { self.init(name: name, encoding: .dense(tensor)) }
}

/// How an image input's channels are ordered. The input tensor is
/// [1, C, H, W] float with pixel values 0…255; any scaling is ordinary
/// graph nodes after the input (importers insert them, exporters may fold
/// them back into the format's preprocessing).
public enum ColorLayout: String, Sendable, Equatable, CaseIterable {
    case rgb = "RGB"
    case bgr = "BGR"
    case gray = "GRAY"

    public var channels: Int { self == .gray ? 1 : 3 }
}

/// A graph input that apps feed as an image.
public struct ImageInput: Sendable, Equatable {
    public var name: String
    public var color: ColorLayout
    public init(name: String, color: ColorLayout) { self.name = name; self.color = color }
}

/// How a float input's values are made from raw ones (pixels 0…255 for an
/// image input), as TFLite metadata's NormalizationOptions says it:
/// `input = (raw − mean[c]) / std[c]` per channel c, where a single value
/// applies to every channel. Unlike Core ML image inputs (whose scaling
/// importers turn into graph nodes), the graph's input *is* the normalized
/// tensor: this says what apps do before they feed it, and data loading
/// (image files) uses it as its default.
public struct InputNormalization: Sendable, Equatable {
    public var name: String
    public var mean: [Float]
    public var std: [Float]
    public init(name: String, mean: [Float], std: [Float]) { self.name = name; self.mean = mean; self.std = std }
}

/// Model-level metadata that travels with the graph.
public struct Metadata: Sendable, Equatable {
    public var producerName = ""
    public var producerVersion = ""
    public var docString = ""
    public var domain = ""
    public var modelVersion: Int = 0
    public var author = ""
    public var license = ""
    /// Class labels, when the model is a classifier and the file names them.
    public var labels: [String] = []
    /// Free-form key/value pairs in file order.
    public var properties: [(key: String, value: String)] = []
    /// Inputs that apps feed as images.
    public var imageInputs: [ImageInput] = []
    /// Inputs the file says apps normalize before feeding (TFLite metadata), in input order.
    public var inputNormalization: [InputNormalization] = []
    /// Nodes the source model marks as trainable on device (Core ML
    /// `isUpdatable`); their weights must stay float32.
    public var updatableNodes: [String] = []
    /// Opaque per-format data kept for a round trip into the same format
    /// (e.g. "coreml.updateParams": a serialized NetworkUpdateParameters),
    /// in insertion order.
    public var formatData: [(key: String, value: [UInt8])] = []
    /// Inputs pinned to one shape that may take others (`FlexibleShape`).
    public var flexibleShapes: [FlexibleShape] = []

    public init() {}

    public static func == (a: Metadata, b: Metadata) -> Bool {
        a.producerName == b.producerName && a.producerVersion == b.producerVersion && a.docString == b.docString
            && a.domain == b.domain && a.modelVersion == b.modelVersion && a.author == b.author
            && a.license == b.license && a.labels == b.labels
            && a.properties.map(\.key) == b.properties.map(\.key) && a.properties.map(\.value) == b.properties.map(\.value)
            && a.imageInputs == b.imageInputs && a.inputNormalization == b.inputNormalization && a.updatableNodes == b.updatableNodes
            && a.formatData.map(\.key) == b.formatData.map(\.key) && a.formatData.map(\.value) == b.formatData.map(\.value)
            && a.flexibleShapes == b.flexibleShapes
    }

    /// The flexible shapes given for input `name`, if any.
    public func flexibleShape(of name: String) -> FlexibleShape? { flexibleShapes.first { $0.input == name } }

    /// The opaque data stored under `key`, if any.
    public func formatData(_ key: String) -> [UInt8]? { formatData.first { $0.key == key }?.value }

    /// The value of the first property called `key`, if any.
    public func property(_ key: String) -> String? { properties.first { $0.key == key }?.value }

    /// The normalization the file gives for input `name`, if any.
    public func normalization(of name: String) -> InputNormalization? { inputNormalization.first { $0.name == name } }
}

/// The intermediate representation every format imports into.
///
/// Nodes are kept in topological order (`Graph.validate()` checks it).
/// Constants keep their insertion order so that exports are deterministic.
public struct Graph: Sendable, Equatable {
    public var name: String
    public var inputs: [ValueInfo]
    public var outputs: [ValueInfo]
    public var nodes: [Node]
    /// Shape / type annotations for intermediate values, by name.
    public var valueInfo: [String: ValueInfo]
    public var metadata: Metadata
    /// Where the graph came from (format name and the opset or version), for `inspect`.
    public var sourceFormat: String
    public var sourceVersion: String
    public private(set) var constants: [Constant]
    private var constantIndex: [String: Int]

    public init(name: String = "", inputs: [ValueInfo] = [], outputs: [ValueInfo] = [], nodes: [Node] = [],
                constants: [Constant] = [], valueInfo: [String: ValueInfo] = [:], metadata: Metadata = Metadata(),
                sourceFormat: String = "", sourceVersion: String = "") {
        self.name = name; self.inputs = inputs; self.outputs = outputs; self.nodes = nodes
        self.valueInfo = valueInfo; self.metadata = metadata
        self.sourceFormat = sourceFormat; self.sourceVersion = sourceVersion
        self.constants = []
        self.constantIndex = [:]
        for c in constants { setConstant(c) }
    }

    public func constant(named name: String) -> Constant? {
        guard let i = constantIndex[name] else { return nil }
        return constants[i]
    }

    public func isConstant(_ name: String) -> Bool { constantIndex[name] != nil }

    /// Adds a constant, or replaces the one with the same name in place.
    public mutating func setConstant(_ c: Constant) {
        if let i = constantIndex[c.name] {
            constants[i] = c
        } else {
            constantIndex[c.name] = constants.count
            constants.append(c)
        }
    }

    public mutating func removeConstant(named name: String) {
        guard let i = constantIndex[name] else { return }
        constants.remove(at: i)
        constantIndex = [:]
        for (j, c) in constants.enumerated() { constantIndex[c.name] = j }
    }

    /// Graph inputs that are not also constants (ONNX lets initializers be listed as inputs).
    public var runtimeInputs: [ValueInfo] { inputs.filter { !isConstant($0.name) } }
}
