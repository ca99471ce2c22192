/// The kinds of granularity: how scales or lookup tables are shared across a
/// weight, as help texts write them (the sizes of blocks and groups aside).
public enum GranularityKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case perTensor = "per-tensor"
    case perChannel = "per-channel"
    case perBlock = "per-block:B"
    case perGroupedChannel = "per-grouped-channel:G"

    public var description: String { rawValue }
}

/// What a compressed weight's encoding is made of.
public enum WeightStorageKind: String, Sendable, CaseIterable {
    /// IEEE half precision (`Float16Weights`).
    case float16
    /// Integer codes with scales and offsets (`AffineWeights`).
    case affine
    /// Indices into lookup tables (`PaletteWeights`).
    case palette
}

/// The form a compression rule gives weights, known before compressing: what
/// a format is asked whether it can store.
public struct WeightForm: Sendable, Equatable, CustomStringConvertible {
    public var kind: WeightStorageKind
    public var bits: Int
    public var granularity: GranularityKind
    /// Affine codes whose zero point is an integer (symmetric, or exact zero).
    public var integerZeroPoint: Bool

    public init(kind: WeightStorageKind, bits: Int, granularity: GranularityKind, integerZeroPoint: Bool = false) {
        self.kind = kind; self.bits = bits; self.granularity = granularity; self.integerZeroPoint = integerZeroPoint
    }

    public var description: String {
        switch kind {
        case .float16: return "fp16"
        case .affine: return "\(bits)-bit linear \(granularity)\(integerZeroPoint ? "" : " with fractional zero points")"
        case .palette: return "\(bits)-bit lookup table \(granularity)"
        }
    }
}

/// Whether a weight of `shape` can be stored with blocks (`.perBlock`, along
/// `inputAxis`) or groups (`.perGroupedChannel`, along `outputAxis`) of
/// `size`: nil when it can, else why not.
public typealias WeightLayoutFit = @Sendable (_ kind: GranularityKind, _ size: Int, _ shape: [Int], _ outputAxis: Int, _ inputAxis: Int) -> String?

/// Which compressed weights a file format stores, as data: each format
/// declares one, and `convert`, `compress -o` and `sweep --out-format` ask it
/// before compressing (the exporters still refuse what slips through).
public struct StoredWeightForms: Sendable {
    public var float16: Bool
    /// Affine codes: the widths and granularities stored; nil when none are.
    public var affineBits: Set<Int>?
    public var affineGranularities: Set<GranularityKind>
    /// Only integer zero points (symmetric or exact-zero codes).
    public var affineNeedsIntegerZeroPoint: Bool
    /// Lookup tables: the widths and granularities stored; nil when none are.
    public var paletteBits: Set<Int>?
    public var paletteGranularities: Set<GranularityKind>
    /// Which weights blocks or groups of a given size fit, for a format that
    /// needs them to divide the axis (nil: every weight): the compressor
    /// leaves a weight that does not fit uncompressed, saying why.
    public var fits: WeightLayoutFit?
    /// A format's own rule, for one whose forms do not factor into the
    /// fields above (which combinations of width, granularity and zero
    /// point it stores): nil when it stores `form`, else why not. Replaces
    /// the field checks when set.
    public var refusing: (@Sendable (WeightForm) -> String?)?

    public init(float16: Bool, affineBits: Set<Int>?, affineGranularities: Set<GranularityKind>, affineNeedsIntegerZeroPoint: Bool,
                paletteBits: Set<Int>?, paletteGranularities: Set<GranularityKind>) {
        self.float16 = float16; self.affineBits = affineBits; self.affineGranularities = affineGranularities
        self.affineNeedsIntegerZeroPoint = affineNeedsIntegerZeroPoint
        self.paletteBits = paletteBits; self.paletteGranularities = paletteGranularities
    }

    /// Every form.
    public static let everything = StoredWeightForms(
        float16: true, affineBits: Set(1...8), affineGranularities: Set(GranularityKind.allCases), affineNeedsIntegerZeroPoint: false,
        paletteBits: Set(1...8), paletteGranularities: Set(GranularityKind.allCases))

    /// "8", "1–8", "4 or 8", "1/2/4/6/8": a set of widths as help texts write it.
    static func widths(_ bits: Set<Int>) -> String {
        let b = bits.sorted()
        guard let lo = b.first, let hi = b.last else { return "no" }
        if lo == hi { return "\(lo)" }
        if b.count == hi - lo + 1 { return "\(lo)–\(hi)" }
        return b.count == 2 ? "\(lo) or \(hi)" : b.map(String.init).joined(separator: "/")
    }

    /// Why `form` cannot be stored, or nil when it can.
    public func refusal(_ form: WeightForm) -> String? {
        if let refusing { return refusing(form) }
        func list(_ s: Set<GranularityKind>) -> String { GranularityKind.allCases.filter(s.contains).map(\.description).joined(separator: " or ") }
        switch form.kind {
        case .float16:
            return float16 ? nil : "no fp16 weights"
        case .affine:
            guard let bits = affineBits else { return "no linear (integer-code) weights" }
            if !bits.contains(form.bits) { return "linear weights of \(Self.widths(bits)) bits only" }
            if !affineGranularities.contains(form.granularity) { return "linear scales \(list(affineGranularities)) only" }
            if affineNeedsIntegerZeroPoint && !form.integerZeroPoint { return "integer zero points only (--symmetric or --exact-zero)" }
            return nil
        case .palette:
            guard let bits = paletteBits else { return "no lookup-table weights" }
            if !bits.contains(form.bits) { return "lookup tables of \(Self.widths(bits)) bits only" }
            if !paletteGranularities.contains(form.granularity) { return "lookup tables \(list(paletteGranularities)) only" }
            return nil
        }
    }
}

extension WeightEncoding {
    /// How a compressed weight's scales or tables are laid out, for reports:
    /// "per tensor", "per channel (axis 0)", "per block [1, 32]" (with
    /// "integer zero points" or "fractional zero points" for linear codes),
    /// "one table", "32 tables, 16 channels each along axis 0". nil for
    /// dense and float16 weights.
    public var layout: String? {
        switch self {
        case .dense, .float16: return nil
        case .affine(let a):
            let varying = a.scaleShape.indices.filter { a.scaleShape[$0] > 1 }
            let where_: String
            if varying.isEmpty {
                where_ = "per tensor"
            } else if varying.count == 1, a.blockShape[varying[0]] == 1 {
                where_ = "per channel (axis \(varying[0]))"
            } else {
                where_ = "per block \(a.blockShape)"
            }
            return where_ + (a.integerZeroPoints != nil ? ", integer zero points" : ", fractional zero points")
        case .palette(let p):
            return p.lut.count == 1 ? "one table" : "\(p.lut.count) tables, \(p.groupSize) channels each along axis \(p.axis)"
        }
    }
}
