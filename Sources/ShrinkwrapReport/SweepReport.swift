import Foundation

/// The result of a bit-width sweep: one reference model, many compressed variants.
public struct SweepReport: Codable, Sendable, Equatable {
    /// The schema identifier of this data model.
    public static let currentSchema = "shrinkwrap.sweep/1"
    /// The line every renderer prints when the inputs were synthetic.
    public static let randomDataWarning = "WARNING: agreement measured on RANDOM inputs (--random), not real data"

    public var schema: String
    /// Name and version of the tool that wrote the report ("shrinkwrap 0.4.0").
    public var tool: String
    public var model: ModelInfo
    public var data: DataInfo
    /// Command-line options of the sweep, by name.
    public var options: [String: String]
    /// Sizes of the uncompressed reference model.
    public var reference: SizeInfo
    public var variants: [Variant]

    public init(schema: String = SweepReport.currentSchema, tool: String, model: ModelInfo, data: DataInfo,
                options: [String: String] = [:], reference: SizeInfo, variants: [Variant]) {
        self.schema = schema
        self.tool = tool
        self.model = model
        self.data = data
        self.options = options
        self.reference = reference
        self.variants = variants
    }

    private enum CodingKeys: String, CodingKey {
        case schema, tool, model, data, options, reference, variants
        /// Written (never read) when the data is random, so JSON readers see it too.
        case warning
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schema = try c.decode(String.self, forKey: .schema)
        tool = try c.decode(String.self, forKey: .tool)
        model = try c.decode(ModelInfo.self, forKey: .model)
        data = try c.decode(DataInfo.self, forKey: .data)
        options = try c.decodeIfPresent([String: String].self, forKey: .options) ?? [:]
        reference = try c.decode(SizeInfo.self, forKey: .reference)
        variants = try c.decode([Variant].self, forKey: .variants)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(tool, forKey: .tool)
        try c.encode(model, forKey: .model)
        try c.encode(data, forKey: .data)
        try c.encode(options, forKey: .options)
        try c.encode(reference, forKey: .reference)
        try c.encode(variants, forKey: .variants)
        if data.random { try c.encode(SweepReport.randomDataWarning, forKey: .warning) }
    }
}

/// The model file the sweep started from.
public struct ModelInfo: Codable, Sendable, Equatable {
    public var file: String
    /// Hex SHA-256 of the file.
    public var sha256: String
    /// "onnx", "coreml", …
    public var format: String

    public init(file: String, sha256: String, format: String) {
        self.file = file
        self.sha256 = sha256
        self.format = format
    }
}

/// The inputs the agreement was measured on.
public struct DataInfo: Codable, Sendable, Equatable {
    public var description: String
    /// Number of inputs (samples) run through every model.
    public var count: Int
    /// Hex SHA-256 of the input data.
    public var sha256: String
    /// True when the inputs are synthetic random tensors, not real data.
    public var random: Bool

    public init(description: String, count: Int, sha256: String, random: Bool) {
        self.description = description
        self.count = count
        self.sha256 = sha256
        self.random = random
    }
}

/// Sizes of a model.
public struct SizeInfo: Codable, Sendable, Equatable {
    /// Size of the written model file, when one was written.
    public var fileBytes: Int?
    /// Bytes the weights take (payload plus look-up tables, scales, …).
    public var weightBytes: Int
    /// Number of weight elements.
    public var weightCount: Int

    public init(fileBytes: Int? = nil, weightBytes: Int, weightCount: Int) {
        self.fileBytes = fileBytes
        self.weightBytes = weightBytes
        self.weightCount = weightCount
    }
}

/// One compressed model of the sweep.
public struct Variant: Codable, Sendable, Equatable {
    /// "fp16", "linear", "linear-lut", "kmeans-lut", …
    public var mode: String
    public var bits: Int
    /// "per-tensor", "per-channel", "per-grouped-channel:32", …
    public var granularity: String
    public var size: SizeInfo
    public var outputs: [OutputMetrics]
    public var layers: [LayerMetrics]
    public var skipped: [SkippedWeight]
    /// The compressed model file, when it was kept.
    public var file: String?
    /// The data-aware method ("weighted", "gptq"); nil for round to nearest.
    public var method: String?

    public init(mode: String, bits: Int, granularity: String, method: String? = nil, size: SizeInfo, outputs: [OutputMetrics] = [],
                layers: [LayerMetrics] = [], skipped: [SkippedWeight] = [], file: String? = nil) {
        self.method = method
        self.mode = mode
        self.bits = bits
        self.granularity = granularity
        self.size = size
        self.outputs = outputs
        self.layers = layers
        self.skipped = skipped
        self.file = file
    }

    /// The column a report shows it in: the mode, with its method when data-aware ("linear gptq").
    public var series: String { method.map { "\(mode) \($0)" } ?? mode }

    /// Size reduction against the reference, in percent: 100·(1 − variant / reference).
    /// File sizes are compared when both are known, weight bytes otherwise;
    /// 0 when the reference size is 0. Negative when the variant is larger.
    public func reductionPercent(vs reference: SizeInfo) -> Double {
        let mine: Int, theirs: Int
        if let a = size.fileBytes, let b = reference.fileBytes {
            mine = a
            theirs = b
        } else {
            mine = size.weightBytes
            theirs = reference.weightBytes
        }
        guard theirs > 0 else { return 0 }
        return 100 * (1 - Double(mine) / Double(theirs))
    }

    /// Average storage per weight element in bits (8·weightBytes / weightCount); 0 without weights.
    public var bitsPerWeight: Double {
        size.weightCount > 0 ? 8 * Double(size.weightBytes) / Double(size.weightCount) : 0
    }

    /// A short human label: "linear 4-bit per-channel".
    public var label: String { "\(mode) \(bits)-bit \(granularity)" }
}

/// Per-layer quantization quality.
public struct LayerMetrics: Codable, Sendable, Equatable {
    public var node: String
    public var op: String
    /// The compressed weight the node reads, if any.
    public var weight: String?
    /// SQNR of the weight in dB; nil means identical (infinite) when `weight` is set.
    public var weightSQNR: Double?
    /// SQNR of the node's output in dB; nil means identical (infinite).
    public var outputSQNR: Double?

    public init(node: String, op: String, weight: String? = nil, weightSQNR: Double? = nil, outputSQNR: Double? = nil) {
        self.node = node
        self.op = op
        self.weight = weight
        self.weightSQNR = weightSQNR
        self.outputSQNR = outputSQNR
    }
}

/// A weight the variant left uncompressed, and why.
public struct SkippedWeight: Codable, Sendable, Equatable {
    public var name: String
    public var reason: String

    public init(name: String, reason: String) {
        self.name = name
        self.reason = reason
    }
}
