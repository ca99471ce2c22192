import ShrinkwrapIR

/// How scales or lookup tables are shared across a weight.
public enum Granularity: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// One scale or table for the whole tensor.
    case perTensor
    /// One scale or table per output channel.
    case perChannel
    /// One scale per output channel and block of B consecutive elements along the input axis.
    case perBlock(Int)
    /// One table per group of G consecutive output channels.
    case perGroupedChannel(Int)

    /// Parses `per-tensor`, `per-channel`, `per-block:B`, `per-grouped-channel:G`.
    public init(parsing text: String) throws(CompressionError) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        func size() throws(CompressionError) -> Int {
            guard parts.count == 2, let n = Int(parts[1]) else { throw .badGranularity(text, reason: "expected \(parts[0]):N") }
            guard n >= 1 else { throw .badGranularity(text, reason: "size must be at least 1") }
            return n
        }
        switch parts.first ?? "" {
        case "per-tensor" where parts.count == 1: self = .perTensor
        case "per-channel" where parts.count == 1: self = .perChannel
        case "per-block": self = .perBlock(try size())
        case "per-grouped-channel": self = .perGroupedChannel(try size())
        default:
            throw .badGranularity(text, reason: "expected per-tensor, per-channel, per-block:B or per-grouped-channel:G")
        }
    }

    public var description: String {
        switch self {
        case .perTensor: return "per-tensor"
        case .perChannel: return "per-channel"
        case .perBlock(let b): return "per-block:\(b)"
        case .perGroupedChannel(let g): return "per-grouped-channel:\(g)"
        }
    }

    /// The granularity family, for "does this codec support it" checks.
    public var family: String {
        switch self {
        case .perTensor: return "per-tensor"
        case .perChannel: return "per-channel"
        case .perBlock: return "per-block:B"
        case .perGroupedChannel: return "per-grouped-channel:G"
        }
    }
}

/// Everything a codec may be told. Fields a codec does not use are ignored
/// by it (and rejected earlier when they would be misleading).
public struct CodecOptions: Sendable, Equatable {
    public var bits: Int
    public var granularity: Granularity
    /// linear: range symmetric around 0 (signed codes, zero point 0).
    public var symmetric: Bool
    /// linear, asymmetric: widen the range to include 0 and make the zero point an integer.
    public var exactZero: Bool
    /// fp16: clamp values beyond ±65504 instead of failing.
    public var clampFP16: Bool
    /// custom-lut: the table (at most 2^bits entries).
    public var lut: [Float]?

    public init(bits: Int = 8, granularity: Granularity = .perTensor, symmetric: Bool = false,
                exactZero: Bool = false, clampFP16: Bool = false, lut: [Float]? = nil) {
        self.bits = bits; self.granularity = granularity; self.symmetric = symmetric
        self.exactZero = exactZero; self.clampFP16 = clampFP16; self.lut = lut
    }
}

/// One weight to encode, with the axes its granularity refers to.
public struct WeightInput: Sendable {
    public var name: String
    public var values: [Float]
    public var shape: [Int]
    /// The output-channel axis (per-channel scales, grouped LUTs).
    public var outputAxis: Int
    /// The axis blocks run along (per-block scales).
    public var inputAxis: Int
    /// Optional per-element importance for k-means (non-negative; same count as values).
    public var importance: [Float]?

    public init(name: String, values: [Float], shape: [Int], outputAxis: Int = 0, inputAxis: Int? = nil, importance: [Float]? = nil) {
        self.name = name; self.values = values; self.shape = shape
        self.outputAxis = outputAxis
        self.inputAxis = inputAxis ?? (shape.count > 1 ? (outputAxis == 0 ? 1 : 0) : 0)
        self.importance = importance
    }

}

/// What a codec returns: the encoding, and anything worth telling the user (clamps, merged clusters).
public struct CodecResult: Sendable, Equatable {
    public var encoding: WeightEncoding
    public var notes: [String]
    public init(encoding: WeightEncoding, notes: [String] = []) { self.encoding = encoding; self.notes = notes }
}

/// A compression mode. Each codec lives in `Codecs/<Mode>Codec.swift` and
/// has one line in `WeightCodecs.all`; the CLI's `--mode` values and help
/// come from that table.
public protocol WeightCodec: Sendable {
    /// The `--mode` value.
    var mode: String { get }
    /// One line for `--help`.
    var summary: String { get }
    /// The bit widths offered; nil when the codec has a fixed width (fp16).
    var bitWidths: ClosedRange<Int>? { get }
    /// The granularity families offered, the first being the default.
    var granularities: [String] { get }
    /// Encodes one weight. Called only after `WeightCodecs.check` accepted the
    /// input and options, so values are finite and axes valid.
    func encode(_ weight: WeightInput, _ options: CodecOptions) throws(CompressionError) -> CodecResult
}

/// The codec table: the single list of compression modes.
public enum WeightCodecs {
    public static let all: [any WeightCodec] = [
        Float16Codec(),
        LinearCodec(),
        LinearLUTCodec(),
        KMeansLUTCodec(),
        CustomLUTCodec(),
    ]

    public static var modes: [String] { all.map(\.mode) }

    /// A codec's default granularity: its first family.
    public static func defaultGranularity(_ codec: any WeightCodec) -> Granularity {
        switch codec.granularities.first {
        case "per-channel": return .perChannel
        case "per-block:B": return .perBlock(1)
        case "per-grouped-channel:G": return .perGroupedChannel(1)
        default: return .perTensor
        }
    }

    public static func codec(named mode: String) throws(CompressionError) -> any WeightCodec {
        guard let c = all.first(where: { $0.mode == mode }) else { throw .unknownMode(mode, known: modes) }
        return c
    }

    /// The help text listing every mode, its bit widths and granularities.
    public static var help: String {
        all.map { c in
            let bits = c.bitWidths.map { "bits \($0.lowerBound)–\($0.upperBound)" } ?? "fixed width"
            return "\(c.mode): \(c.summary) (\(bits); \(c.granularities.joined(separator: ", ")))"
        }.joined(separator: "\n")
    }

    /// Validates the input and options, then encodes.
    public static func encode(_ weight: WeightInput, with codec: any WeightCodec, _ options: CodecOptions) throws(CompressionError) -> CodecResult {
        try check(weight, codec, options)
        return try codec.encode(weight, options)
    }

    /// Rejects non-finite values, bit widths and granularities the codec does
    /// not offer, and axes or sizes that do not fit the weight.
    public static func check(_ w: WeightInput, _ codec: any WeightCodec, _ o: CodecOptions) throws(CompressionError) {
        if let range = codec.bitWidths, !range.contains(o.bits) {
            throw .unsupportedBits(mode: codec.mode, bits: o.bits, allowed: "\(range.lowerBound)–\(range.upperBound)")
        }
        guard codec.granularities.contains(o.granularity.family) else {
            throw .unsupportedGranularity(mode: codec.mode, granularity: o.granularity.description,
                                          supported: codec.granularities.joined(separator: ", "))
        }
        guard let n = checkedElementCount(w.shape), n == w.values.count else {
            throw .badWeight(tensor: w.name, reason: "\(w.values.count) values for shape \(w.shape)")
        }
        let rank = max(w.shape.count, 1)
        guard (0..<rank).contains(w.outputAxis), (0..<rank).contains(w.inputAxis) else {
            throw .badWeight(tensor: w.name, reason: "axes \(w.outputAxis)/\(w.inputAxis) outside rank \(w.shape.count)")
        }
        if let imp = w.importance {
            guard imp.count == w.values.count else {
                throw .badWeight(tensor: w.name, reason: "\(imp.count) importance values for \(w.values.count) weights")
            }
            if let i = imp.firstIndex(where: { !($0 >= 0 && $0.isFinite) }) {
                throw .badWeight(tensor: w.name, reason: "importance[\(i)] is \(imp[i]); it must be finite and non-negative")
            }
        }
        if let i = w.values.firstIndex(where: { !$0.isFinite }) {
            throw .nonFinite(tensor: w.name, index: i, value: "\(w.values[i])")
        }
    }
}
