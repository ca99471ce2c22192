import Foundation
import ShrinkwrapIR

/// One compression setting: a mode from the codec table and its options.
public struct CompressionRule: Sendable, Equatable {
    public var mode: String
    public var options: CodecOptions
    public init(mode: String, options: CodecOptions = CodecOptions()) { self.mode = mode; self.options = options }

    /// "kmeans-lut 4-bit per-grouped-channel:16", for logs.
    public var summary: String {
        let codec = try? WeightCodecs.codec(named: mode)
        var parts = [mode]
        if codec?.bitWidths != nil { parts.append("\(options.bits)-bit") }
        parts.append(options.granularity.description)
        parts += codec?.describe(options) ?? []
        if options.method != .nearest { parts.append(options.method.rawValue) }
        return parts.joined(separator: " ")
    }
}

/// A rule, or an explicit "leave this weight alone".
public enum RuleChoice: Sendable, Equatable {
    case compress(CompressionRule)
    case skip
}

/// Which weights are compressed, and how: a name rule beats an op-type rule
/// beats the global rule (coremltools' precedence). Weights are the tensor
/// inputs that carry learned parameters — Conv / ConvTranspose / Gemm /
/// MatMul weights, Gather tables used as embeddings, LSTM / GRU / RNN
/// weights — with at least `minElements` elements. Biases, normalization
/// parameters and integer (shape / index) constants are left alone unless a
/// name rule asks for them explicitly.
public struct CompressionPlan: Sendable, Equatable {
    /// Applies to every weight no other rule matches; nil leaves them alone.
    public var global: RuleChoice?
    /// By the op type of the weight's consumer ("Conv", "Gemm", …).
    public var byOpType: [String: RuleChoice]
    /// By constant name; also reaches tensors that are not weights by role, and ignores `minElements`.
    public var byName: [String: RuleChoice]
    /// Weights with fewer elements are skipped (default 2048, as coremltools).
    public var minElements: Int
    /// The SHA-256 of the calibration data the plan was made with (`tune`): its data-aware rules give
    /// the same bytes only from the same data, so other data is refused.
    public var calibrationSHA256: String?
    /// Fold each BatchNormalization that alone reads a Conv into that Conv before compressing
    /// (`Graph.foldingBatchNormIntoConv`): the weights compressed are the ones the layer applies.
    public var foldBatchNorm = false
    /// Fold the expected output shift of each compressed Conv / Gemm weight, (W − Ŵ) · E[x] from the
    /// calibration data, into the node's bias (`CompressWeights.correctBiases`).
    public var biasCorrection = false

    public init(global: RuleChoice? = nil, byOpType: [String: RuleChoice] = [:], byName: [String: RuleChoice] = [:],
                minElements: Int = 2048) {
        self.global = global; self.byOpType = byOpType; self.byName = byName; self.minElements = minElements
    }

    public init(_ rule: CompressionRule, minElements: Int = 2048) {
        self.init(global: .compress(rule), minElements: minElements)
    }

    /// Reads a plan file:
    ///
    /// ```json
    /// { "global":   {"mode": "kmeans-lut", "bits": 4, "granularity": "per-grouped-channel:16"},
    ///   "op_types": {"Gemm": {"mode": "linear", "bits": 8, "symmetric": true}, "MatMul": "skip"},
    ///   "names":    {"conv1.weight": {"mode": "fp16"}, "classifier.weight": "skip"},
    ///   "min_elements": 4096 }
    /// ```
    ///
    /// Rule keys: mode (required), bits, granularity, method (`CompressionMethod`: nearest,
    /// weighted, gptq — the data-aware ones need calibration data), and the options of the
    /// rule's codec (`WeightCodec.options`: symmetric, exact_zero, clamp_fp16,
    /// lut — an array, or a file path relative to the plan). A rule may be the
    /// string "skip" (or null). Unknown keys are errors, and so are options of
    /// another mode: a typo never silently changes what gets compressed.
    public static func load(_ path: String) throws(CompressionError) -> CompressionPlan {
        guard let data = FileManager.default.contents(atPath: path) else { throw .badPlan(file: path, reason: "cannot read the file") }
        let root: JSONValue
        do { root = try JSONDecoder().decode(JSONValue.self, from: data) } catch {
            throw .badPlan(file: path, reason: "not valid JSON")
        }
        guard case .object(let top) = root else { throw .badPlan(file: path, reason: "the top level must be an object") }
        let dir = (path as NSString).deletingLastPathComponent
        var plan = CompressionPlan()
        for (key, value) in top.sorted(by: { $0.key < $1.key }) {
            switch key {
            case "global": plan.global = try choice(value, at: "global", file: path, dir: dir)
            case "op_types", "names":
                guard case .object(let rules) = value else { throw .badPlan(file: path, reason: "\(key) must be an object") }
                var out: [String: RuleChoice] = [:]
                for (k, v) in rules { out[k] = try choice(v, at: "\(key).\(k)", file: path, dir: dir) }
                if key == "op_types" { plan.byOpType = out } else { plan.byName = out }
            case "calibration_sha256":
                guard case .string(let h) = value, h.count == 64, h.allSatisfy(\.isHexDigit) else {
                    throw .badPlan(file: path, reason: "calibration_sha256 must be 64 hex digits")
                }
                plan.calibrationSHA256 = h.lowercased()
            case "bias_correction":
                guard case .bool(let b) = value else { throw .badPlan(file: path, reason: "bias_correction must be true or false") }
                plan.biasCorrection = b
            case "fold_batchnorm":
                guard case .bool(let b) = value else { throw .badPlan(file: path, reason: "fold_batchnorm must be true or false") }
                plan.foldBatchNorm = b
            case "min_elements":
                guard case .number(let n) = value, n >= 0, n == n.rounded(), n < 1e15 else {
                    throw .badPlan(file: path, reason: "min_elements must be a non-negative integer")
                }
                plan.minElements = Int(n)
            default:
                throw .badPlan(file: path, reason: "unknown key '\(key)' (expected global, op_types, names, min_elements, fold_batchnorm, bias_correction, calibration_sha256)")
            }
        }
        return plan
    }

    private static func choice(_ v: JSONValue, at place: String, file: String, dir: String) throws(CompressionError) -> RuleChoice {
        switch v {
        case .null: return .skip
        case .string("skip"): return .skip
        case .object(let o): return .compress(try rule(o, at: place, file: file, dir: dir))
        default: throw .badPlan(file: file, reason: "\(place): expected a rule object or \"skip\"")
        }
    }

    private static func rule(_ o: [String: JSONValue], at place: String, file: String, dir: String) throws(CompressionError) -> CompressionRule {
        let origin = SettingOrigin.plan(file: file, rule: place)
        guard case .string(let mode)? = o["mode"] else {
            throw origin.error("a rule needs \"mode\" (one of \(WeightCodecs.modes.joined(separator: ", ")))")
        }
        do { _ = try WeightCodecs.codec(named: mode) } catch { throw origin.error(error.description) }
        var request = CodecRequest()
        let options = WeightCodecs.allOptions
        for (key, value) in o.sorted(by: { $0.key < $1.key }) {
            switch (key, value) {
            case ("mode", _): break
            case ("bits", .number(let n)):
                guard n == n.rounded(), (1...8).contains(Int(exactly: n) ?? 0) else { throw origin.error("bits must be an integer 1–8") }
                request.bits = Int(n)
            case ("granularity", .string(let g)):
                do { request.granularity = try Granularity(parsing: g) } catch { throw origin.error(error.description) }
            case ("method", .string(let m)):
                guard let method = CompressionMethod(rawValue: m) else {
                    throw origin.error("unknown method '\(m)' (expected \(CompressionMethod.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                request.method = method
            case ("bits", _), ("granularity", _), ("method", _):
                throw origin.error("\(key) has the wrong type")
            default:
                guard let option = options.first(where: { $0.key == key }) else {
                    let known = ["mode", "bits", "granularity", "method"] + options.map(\.key)
                    throw origin.error("unknown key '\(key)' (expected \(known.joined(separator: ", ")))")
                }
                request.settings[key] = try option.setting(from: value, dir: dir, origin: origin)
            }
        }
        return CompressionRule(mode: mode, options: try WeightCodecs.options(mode: mode, request, origin: origin))
    }
}

extension CompressionPlan {
    /// The plan as a file `load` reads back to the same plan: sorted keys, two-space indents.
    public var json: String {
        func rule(_ c: RuleChoice) -> String {
            guard case .compress(let r) = c else { return "\"skip\"" }
            var fields = ["\"mode\": \(quoted(r.mode))"]
            let codec = try? WeightCodecs.codec(named: r.mode)
            if codec?.bitWidths != nil { fields.append("\"bits\": \(r.options.bits)") }
            fields.append("\"granularity\": \(quoted(r.options.granularity.description))")
            if r.options.method != .nearest { fields.append("\"method\": \(quoted(r.options.method.rawValue))") }
            if r.options.symmetric { fields.append("\"symmetric\": true") }
            if r.options.exactZero { fields.append("\"exact_zero\": true") }
            if r.options.clampFP16 { fields.append("\"clamp_fp16\": true") }
            if let lut = r.options.lut { fields.append("\"lut\": [" + lut.map { "\($0)" }.joined(separator: ", ") + "]") }
            return "{" + fields.sorted().joined(separator: ", ") + "}"
        }
        func table(_ rules: [String: RuleChoice]) -> String {
            guard !rules.isEmpty else { return "{}" }
            return "{\n" + rules.keys.sorted().map { "    \(quoted($0)): \(rule(rules[$0] ?? .skip))" }.joined(separator: ",\n") + "\n  }"
        }
        var top: [String] = []
        if let h = calibrationSHA256 { top.append("  \"calibration_sha256\": \(quoted(h))") }
        if biasCorrection { top.append("  \"bias_correction\": true") }
        if foldBatchNorm { top.append("  \"fold_batchnorm\": true") }
        if let g = global { top.append("  \"global\": \(rule(g))") }
        top.append("  \"min_elements\": \(minElements)")
        if !byName.isEmpty { top.append("  \"names\": \(table(byName))") }
        if !byOpType.isEmpty { top.append("  \"op_types\": \(table(byOpType))") }
        return "{\n" + top.joined(separator: ",\n") + "\n}\n"
    }
}

/// A JSON string literal.
func quoted(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
        }
    }
    return out + "\""
}

/// A JSON value, for strict reading of small configuration files.
enum JSONValue: Decodable, Equatable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }
}
