import Foundation

/// One option a codec takes besides bits and granularity. The codec declares
/// it (`WeightCodec.options`) and interprets it (`WeightCodec.apply`); the
/// command line and plan files only carry the value to it.
public struct CodecOption: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// On or off: `--symmetric`, `"symmetric": true`.
        case flag
        /// A lookup table: `--lut FILE.json`, `"lut": [...]` or `"lut": "FILE.json"`.
        case table
    }

    /// The plan-file key, snake_case (`exact_zero`); the flag is its kebab-case form.
    public let key: String
    public let kind: Kind
    /// One line for `--help`, without the mode names (`WeightCodecs.optionHelp` adds them).
    public let help: String

    public init(key: String, kind: Kind, help: String) { self.key = key; self.kind = kind; self.help = help }

    /// The command-line flag without its dashes: `exact-zero`.
    public var longName: String { key.replacingOccurrences(of: "_", with: "-") }
    /// The command-line flag: `--exact-zero`.
    public var flag: String { "--" + longName }
}

/// A value a user gave for a codec option.
public enum CodecSetting: Sendable, Equatable {
    case flag(Bool)
    case numbers([Float])
    /// A JSON file holding a table: a path, resolved against the plan's folder when it came from a plan.
    case file(String)
}

/// What a user asked of a mode (flags, a plan rule or a sweep), before the codec checks it.
public struct CodecRequest: Sendable, Equatable {
    public var bits: Int?
    public var granularity: Granularity?
    public var method: CompressionMethod?
    /// By option key.
    public var settings: [String: CodecSetting]

    public init(bits: Int? = nil, granularity: Granularity? = nil, method: CompressionMethod? = nil, settings: [String: CodecSetting] = [:]) {
        self.bits = bits; self.granularity = granularity; self.method = method; self.settings = settings
    }
}

/// Where settings came from, so that an error names them as the user wrote them.
public enum SettingOrigin: Sendable, Equatable {
    case commandLine
    /// A plan file's rule, e.g. "op_types.Gemm".
    case plan(file: String, rule: String)

    /// How the user wrote option `key`: `--exact-zero` or `"exact_zero"`.
    public func name(_ key: String) -> String {
        switch self {
        case .commandLine: return "--" + key.replacingOccurrences(of: "_", with: "-")
        case .plan: return "\"\(key)\""
        }
    }

    /// An error about the settings from here.
    public func error(_ reason: String) -> CompressionError {
        switch self {
        case .commandLine: return .badPlan(file: "(command line)", reason: reason)
        case .plan(let file, let rule): return .badPlan(file: file, reason: "\(rule): \(reason)")
        }
    }

    /// A flag setting's value (absent: off).
    public func flag(_ settings: [String: CodecSetting], _ key: String) throws(CompressionError) -> Bool {
        switch settings[key] {
        case nil: return false
        case .flag(let b)?: return b
        default: throw error("\(name(key)) is an on / off setting")
        }
    }
}

extension CodecOption {
    /// A plan file's value for this option, typed by the option's kind (`dir`: the plan's folder).
    func setting(from value: JSONValue, dir: String, origin: SettingOrigin) throws(CompressionError) -> CodecSetting {
        switch (kind, value) {
        case (.flag, .bool(let b)): return .flag(b)
        case (.table, .array(let items)):
            var lut: [Float] = []
            for item in items {
                guard case .number(let x) = item, Float(x).isFinite else { throw origin.error("\(key) entries must be finite numbers") }
                lut.append(Float(x))
            }
            return .numbers(lut)
        case (.table, .string(let p)):
            return .file(p.hasPrefix("/") ? p : (dir.isEmpty ? p : dir + "/" + p))
        default:
            throw origin.error("\(key) has the wrong type")
        }
    }
}
