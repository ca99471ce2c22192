import ShrinkwrapIR

/// IEEE binary16, round to nearest even. Values beyond ±65504 are an error
/// unless `clampFP16` is set, in which case they become ±65504 and the note
/// says how many.
public struct Float16Codec: WeightCodec {
    public init() {}
    public let mode = "fp16"
    public let summary = "IEEE half precision, round to nearest even; values beyond ±65504 fail unless --clamp-fp16"
    public let bitWidths: ClosedRange<Int>? = nil
    public let fixedBits: Int? = 16
    public let granularities: [GranularityKind] = [.perTensor]
    public let storage = WeightStorageKind.float16
    /// What `tune` tries by default (`WeightCodecs.tuneDefaults`).
    public let tuneWidths = [16]
    public static let clamp = CodecOption(key: "clamp_fp16", kind: .flag, help: "clamp values beyond ±65504 instead of failing (the log says how many).")
    public let options = [Float16Codec.clamp]

    public func apply(_ settings: [String: CodecSetting], bitsGiven: Bool, to o: inout CodecOptions, origin: SettingOrigin) throws(CompressionError) {
        o.clampFP16 = try origin.flag(settings, Self.clamp.key)
    }

    public func encode(_ w: WeightInput, _ o: CodecOptions) throws(CompressionError) -> CodecResult {
        var clamped = 0
        var largest: Float = 0
        var bits = [UInt16](repeating: 0, count: w.values.count)
        for (i, v) in w.values.enumerated() {
            var x = v
            // Values that round to 65504 are fine; anything rounding up to inf is not.
            if abs(x) >= 65520 {
                largest = max(largest, abs(x))
                clamped += 1
                x = x < 0 ? -Half.maxFinite : Half.maxFinite
            }
            bits[i] = Half.bits(from: x)
        }
        if clamped > 0 && !o.clampFP16 {
            throw .fp16Overflow(tensor: w.name, count: clamped, largest: largest)
        }
        do {
            let h = try Float16Weights(shape: w.shape, bits: bits)
            return CodecResult(encoding: .float16(h),
                               notes: clamped > 0 ? ["clamped \(clamped) value(s) to ±65504 (largest magnitude \(largest))"] : [])
        } catch {
            throw .layout(tensor: w.name, error)
        }
    }
}
