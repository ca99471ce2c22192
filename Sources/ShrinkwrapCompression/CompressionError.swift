import ShrinkwrapIR

/// A weight could not be compressed as asked, or the compression options are invalid.
public enum CompressionError: UserFacingError, Sendable, Equatable {
    /// A weight holds NaN or ±infinity; no codec can represent it faithfully.
    case nonFinite(tensor: String, index: Int, value: String)
    /// fp16 cannot hold values beyond ±65504 and clamping was not asked for.
    case fp16Overflow(tensor: String, count: Int, largest: Float)
    /// The mode name is not in the codec table.
    case unknownMode(String, known: [String])
    /// The codec does not offer this bit width.
    case unsupportedBits(mode: String, bits: Int, allowed: String)
    /// The codec does not offer this granularity.
    case unsupportedGranularity(mode: String, granularity: String, supported: String)
    /// A granularity string that does not parse, or a block / group size below 1.
    case badGranularity(String, reason: String)
    /// The weight's shape does not allow the requested layout.
    case badWeight(tensor: String, reason: String)
    /// A custom lookup table file that is missing or malformed.
    case badLUT(file: String, reason: String)
    /// A compression plan file that is missing or malformed.
    case badPlan(file: String, reason: String)
    /// The encoder produced an inconsistent layout (a bug; reported, never crashed on).
    case layout(tensor: String, WeightLayoutError)

    public var description: String { text.escapingControlCharacters }

    private var text: String {
        switch self {
        case .nonFinite(let t, let i, let v): return "weight '\(t)': element \(i) is \(v); NaN and infinity cannot be compressed"
        case .fp16Overflow(let t, let n, let m):
            return "weight '\(t)': \(n) value(s) beyond ±65504 (largest magnitude \(m)) do not fit fp16; pass --clamp-fp16 to clamp them, or choose another mode"
        case .unknownMode(let m, let known): return "unknown compression mode '\(m)' (known: \(known.joined(separator: ", ")))"
        case .unsupportedBits(let m, let b, let a): return "mode \(m) does not support \(b) bits (supported: \(a))"
        case .unsupportedGranularity(let m, let g, let s): return "mode \(m) does not support granularity \(g) (supported: \(s))"
        case .badGranularity(let g, let r): return "granularity '\(g)': \(r)"
        case .badWeight(let t, let r): return "weight '\(t)': \(r)"
        case .badLUT(let f, let r): return "\(f): bad lookup table: \(r)"
        case .badPlan(let f, let r): return "\(f): bad compression plan: \(r)"
        case .layout(let t, let e): return "weight '\(t)': internal error, inconsistent compressed layout: \(e.reason)"
        }
    }
}
