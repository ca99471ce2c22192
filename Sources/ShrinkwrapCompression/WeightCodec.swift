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

    /// The granularity's kind (its case, without the size).
    public var kind: GranularityKind {
        switch self {
        case .perTensor: return .perTensor
        case .perChannel: return .perChannel
        case .perBlock: return .perBlock
        case .perGroupedChannel: return .perGroupedChannel
        }
    }
}

extension GranularityKind {
    /// The granularity of this kind with its size at 1, for defaults.
    public var withDefaultSize: Granularity {
        switch self {
        case .perTensor: return .perTensor
        case .perChannel: return .perChannel
        case .perBlock: return .perBlock(1)
        case .perGroupedChannel: return .perGroupedChannel(1)
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
    /// How the grid is fitted and codes chosen (`WeightCodec.methods` lists what a codec offers).
    public var method: CompressionMethod

    public init(bits: Int = 8, granularity: Granularity = .perTensor, symmetric: Bool = false,
                exactZero: Bool = false, clampFP16: Bool = false, lut: [Float]? = nil, method: CompressionMethod = .nearest) {
        self.bits = bits; self.granularity = granularity; self.symmetric = symmetric
        self.exactZero = exactZero; self.clampFP16 = clampFP16; self.lut = lut; self.method = method
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
    /// Calibration statistics of the inputs this weight multiplies (data-aware methods).
    public var statistics: WeightStatistics?

    public init(name: String, values: [Float], shape: [Int], outputAxis: Int = 0, inputAxis: Int? = nil, importance: [Float]? = nil,
                statistics: WeightStatistics? = nil) {
        self.name = name; self.values = values; self.shape = shape
        self.outputAxis = outputAxis
        self.inputAxis = inputAxis ?? (shape.count > 1 ? (outputAxis == 0 ? 1 : 0) : 0)
        self.importance = importance
        self.statistics = statistics
    }

}

/// What a codec returns: the encoding, and anything worth telling the user (clamps, merged clusters).
public struct CodecResult: Sendable, Equatable {
    public var encoding: WeightEncoding
    public var notes: [String]
    public init(encoding: WeightEncoding, notes: [String] = []) { self.encoding = encoding; self.notes = notes }
}

/// A compression mode. Each codec lives in `Codecs/<Mode>Codec.swift` and
/// has one line in `WeightCodecs.all`; the codec owns everything about its
/// mode: its name, bit widths, granularities, its own options (how they are
/// read from flags and plan files, checked and defaulted), help lines and
/// report order (its place in the table). Nothing outside the codec files
/// compares mode names (`RegistryTests` checks).
public protocol WeightCodec: Sendable {
    /// The `--mode` value.
    var mode: String { get }
    /// One line for `--help`.
    var summary: String { get }
    /// The bit widths offered; nil when the codec has a fixed width (`fixedBits`).
    var bitWidths: ClosedRange<Int>? { get }
    /// The fixed width of a codec without `bitWidths` (fp16: 16).
    var fixedBits: Int? { get }
    /// The granularities offered, the first being the default.
    var granularities: [GranularityKind] { get }
    /// What the encoded weights are, for the formats' "can I store this" checks.
    var storage: WeightStorageKind { get }
    /// Whether `sweep` tries this mode by default.
    var inDefaultSweep: Bool { get }
    /// The options this codec takes besides bits and granularity.
    var options: [CodecOption] { get }
    /// The methods it offers (`CompressionMethod`), `nearest` first.
    var methods: [CompressionMethod] { get }
    /// The widths `tune` tries by default, most bits first (a fixed-width codec: its width; none: not tried).
    var tuneWidths: [Int] { get }
    /// Turns the settings a user gave for this codec's `options` into `o`, and
    /// checks them together (bits and granularity are already in `o`;
    /// `bitsGiven` says whether the user chose the bits).
    func apply(_ settings: [String: CodecSetting], bitsGiven: Bool, to o: inout CodecOptions, origin: SettingOrigin) throws(CompressionError)
    /// Words for a rule's summary beyond mode, bits and granularity ("symmetric").
    func describe(_ o: CodecOptions) -> [String]
    /// The form of the weights these options give, for the formats' checks before compressing.
    func form(_ o: CodecOptions) -> WeightForm
    /// Encodes one weight. Called only after `WeightCodecs.check` accepted the
    /// input and options, so values are finite and axes valid.
    func encode(_ weight: WeightInput, _ options: CodecOptions) throws(CompressionError) -> CodecResult
}

extension WeightCodec {
    public var fixedBits: Int? { nil }
    public var inDefaultSweep: Bool { true }
    public var options: [CodecOption] { [] }
    public var methods: [CompressionMethod] { [.nearest] }
    public var tuneWidths: [Int] { [] }
    public func apply(_ settings: [String: CodecSetting], bitsGiven: Bool, to o: inout CodecOptions, origin: SettingOrigin) throws(CompressionError) {}
    public func describe(_ o: CodecOptions) -> [String] { [] }
    public func form(_ o: CodecOptions) -> WeightForm { WeightForm(kind: storage, bits: fixedBits ?? o.bits, granularity: o.granularity.kind) }
    /// The bits a variant of this codec has: its fixed width, else `bits`.
    public func effectiveBits(_ bits: Int) -> Int { fixedBits ?? bits }
}

/// The codec table: the single list of compression modes, in report order.
public enum WeightCodecs {
    public static let all: [any WeightCodec] = [
        Float16Codec(),
        LinearCodec(),
        LinearLUTCodec(),
        KMeansLUTCodec(),
        CustomLUTCodec(),
    ]

    public static var modes: [String] { all.map(\.mode) }

    /// `tune`'s default candidates, `MODE[:BITS]`, from each codec's `tuneWidths` in table order.
    public static var tuneDefaults: [String] {
        all.flatMap { c in c.tuneWidths.map { c.bitWidths == nil ? c.mode : "\(c.mode):\($0)" } }
    }

    /// The modes a sweep tries unless told otherwise.
    public static var defaultSweepModes: [String] { all.filter(\.inDefaultSweep).map(\.mode) }

    /// A mode's place in reports: its place in the table (unknown modes last).
    public static func reportRank(_ mode: String) -> Int { all.firstIndex { $0.mode == mode } ?? all.count }

    /// A codec's default granularity: its first.
    public static func defaultGranularity(_ codec: any WeightCodec) -> Granularity {
        (codec.granularities.first ?? .perTensor).withDefaultSize
    }

    public static func codec(named mode: String) throws(CompressionError) -> any WeightCodec {
        guard let c = all.first(where: { $0.mode == mode }) else { throw .unknownMode(mode, known: modes) }
        return c
    }

    /// Every option any codec takes, each once (in table order).
    public static var allOptions: [CodecOption] {
        var seen = Set<String>(), out: [CodecOption] = []
        for c in all { for o in c.options where seen.insert(o.key).inserted { out.append(o) } }
        return out
    }

    /// The help line of the option `key`, naming the modes that take it.
    public static func optionHelp(_ key: String) -> String {
        let owners = all.filter { $0.options.contains { $0.key == key } }
        let help = owners.first?.options.first { $0.key == key }?.help ?? ""
        return owners.map(\.mode).joined(separator: ", ") + ": " + help
    }

    /// The help text listing every mode, its bit widths and granularities.
    public static var help: String {
        all.map { c in
            let bits = c.bitWidths.map { "bits \($0.lowerBound)–\($0.upperBound)" } ?? "fixed width"
            return "\(c.mode): \(c.summary) (\(bits); \(c.granularities.map(\.description).joined(separator: ", ")))"
        }.joined(separator: "\n")
    }

    /// The options for `mode` from what a user asked (flags or a plan rule):
    /// settings a codec does not take, widths and granularities it does not
    /// offer and settings that contradict each other are errors, named the
    /// way the user wrote them (`origin`).
    public static func options(mode: String, _ request: CodecRequest, origin: SettingOrigin) throws(CompressionError) -> CodecOptions {
        let codec = try codec(named: mode)
        for key in request.settings.keys.sorted() where !codec.options.contains(where: { $0.key == key }) {
            let owners = all.filter { $0.options.contains { $0.key == key } }.map(\.mode)
            let reason = owners.isEmpty ? "unknown option \(origin.name(key))"
                : "\(origin.name(key)) applies to \(origin.name("mode")) \(owners.joined(separator: ", ")) only"
            throw origin.error(reason)
        }
        var o = CodecOptions(granularity: request.granularity ?? defaultGranularity(codec))
        if let bits = request.bits {
            guard codec.bitWidths != nil else { throw origin.error("\(origin.name("mode")) \(mode) has a fixed width; drop \(origin.name("bits"))") }
            o.bits = bits
        }
        try codec.apply(request.settings, bitsGiven: request.bits != nil, to: &o, origin: origin)
        if let method = request.method {
            guard codec.methods.contains(method) else {
                throw origin.error("\(origin.name("mode")) \(mode) offers \(origin.name("method")) \(codec.methods.map(\.rawValue).joined(separator: ", ")), not \(method)")
            }
            o.method = method
        }
        if let range = codec.bitWidths, !range.contains(o.bits) {
            throw .unsupportedBits(mode: mode, bits: o.bits, allowed: "\(range.lowerBound)–\(range.upperBound)")
        }
        guard codec.granularities.contains(o.granularity.kind) else {
            throw .unsupportedGranularity(mode: mode, granularity: o.granularity.description,
                                          supported: codec.granularities.map(\.description).joined(separator: ", "))
        }
        return o
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
        guard codec.granularities.contains(o.granularity.kind) else {
            throw .unsupportedGranularity(mode: codec.mode, granularity: o.granularity.description,
                                          supported: codec.granularities.map(\.description).joined(separator: ", "))
        }
        guard codec.methods.contains(o.method) else {
            throw .badWeight(tensor: w.name, reason: "mode \(codec.mode) does not offer method \(o.method)")
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
