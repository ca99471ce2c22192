import ShrinkwrapIR

/// Linear (affine) quantization to 1–8 bits, per tensor, per output channel,
/// or per block of B along the input axis (per output channel). Decodes as
/// `scale × q + bias` (see `AffineWeights`).
///
/// - asymmetric (default, coremltools' linear mode): unsigned codes over
///   [min, max] of the block, `scale = (max − min) / (2^b − 1)`, `bias = min`.
///   With `exactZero` the range is widened to contain 0 and the zero point
///   `z = round(−min / scale)` is an integer (`bias = −scale × z`, with the
///   scale rounded up to 16 significant bits so the product is exact), so 0
///   is exact and ONNX / TFLite can store it;
/// - symmetric: signed codes in ±(2^(b−1) − 1), `scale = max|w| / (2^(b−1) − 1)`,
///   bias 0 (1 bit: the two levels ±max|w|, unsigned codes with bias −max|w|).
///
/// Codes are `round_half_even((w − bias) / scale)` clamped to the range; the
/// scale is rounded so that the range always fits the codes, so every value
/// is within scale / 2 of its decoded value (up to float rounding).
/// A constant block c is stored exactly as scale 1, code 0, bias c.
public struct LinearCodec: WeightCodec {
    public init() {}
    public let mode = "linear"
    public let summary = "affine quantization with a scale (and offset) per tensor, channel or block; --symmetric for signed codes around 0"
    public let bitWidths: ClosedRange<Int>? = 1...8
    /// Per channel first: the default, as coremltools' linear mode.
    public let granularities: [GranularityKind] = [.perChannel, .perTensor, .perBlock]
    public let storage = WeightStorageKind.affine
    /// What `tune` tries by default (`WeightCodecs.tuneDefaults`).
    public let tuneWidths = [8, 6, 5, 4, 3]
    public let methods: [CompressionMethod] = [.nearest, .weighted, .gptq]
    public static let symmetric = CodecOption(key: "symmetric", kind: .flag, help: "signed codes symmetric around 0 (zero point 0).")
    public static let exactZero = CodecOption(key: "exact_zero", kind: .flag,
                                              help: "asymmetric codes with an integer zero point, so 0 is exact (what ONNX and TFLite store).")
    public let options = [LinearCodec.symmetric, LinearCodec.exactZero]

    public func apply(_ settings: [String: CodecSetting], bitsGiven: Bool, to o: inout CodecOptions, origin: SettingOrigin) throws(CompressionError) {
        o.symmetric = try origin.flag(settings, Self.symmetric.key)
        o.exactZero = try origin.flag(settings, Self.exactZero.key)
        if o.symmetric && o.exactZero {
            throw origin.error("\(origin.name(Self.symmetric.key)) already makes 0 exact; drop \(origin.name(Self.exactZero.key))")
        }
    }

    public func describe(_ o: CodecOptions) -> [String] { [o.symmetric ? "symmetric" : (o.exactZero ? "exact-zero" : "asymmetric")] }

    /// Symmetric codes have zero point 0 (at 1 bit, the levels ±max: a half-integer one); exact-zero ones an integer.
    public func form(_ o: CodecOptions) -> WeightForm {
        WeightForm(kind: storage, bits: o.bits, granularity: o.granularity.kind, integerZeroPoint: (o.symmetric && o.bits > 1) || o.exactZero)
    }

    public func encode(_ w: WeightInput, _ o: CodecOptions) throws(CompressionError) -> CodecResult {
        let shape = w.shape
        var blockShape = shape.map { max($0, 1) }
        switch o.granularity {
        case .perTensor: break
        case .perChannel:
            if !shape.isEmpty { blockShape[w.outputAxis] = 1 }
        case .perBlock(let b):
            if !shape.isEmpty {
                if shape.count > 1 { blockShape[w.outputAxis] = 1 }
                blockShape[w.inputAxis] = b
            }
        case .perGroupedChannel:
            throw .unsupportedGranularity(mode: mode, granularity: o.granularity.description,
                                          supported: granularities.map(\.description).joined(separator: ", "))
        }
        let runs = BlockRuns(shape: shape, blockShape: blockShape)
        let blocks = runs.blocks
        var lo = [Float](repeating: .infinity, count: blocks)
        var hi = [Float](repeating: -.infinity, count: blocks)
        w.values.withUnsafeBufferPointer { v in
            lo.withUnsafeMutableBufferPointer { lo in
                hi.withUnsafeMutableBufferPointer { hi in
                    if let (rows, columns) = runs.lastAxisChannels {
                        // The same visits per block, in the same order, a row at a time.
                        for r in 0..<rows {
                            let row = r * columns
                            for c in 0..<columns { let x = v[row + c]; lo[c] = min(lo[c], x); hi[c] = max(hi[c], x) }
                        }
                        return
                    }
                    runs.forEach { range, s in
                        var mn = lo[s], mx = hi[s]
                        for i in range { let x = v[i]; mn = min(mn, x); mx = max(mx, x) }
                        lo[s] = mn; hi[s] = mx
                    }
                }
            }
        }
        let b = o.bits
        let signed = o.symmetric && b > 1
        var scale = [Float](repeating: 1, count: blocks)
        var bias = [Float](repeating: 0, count: blocks)
        for s in 0..<blocks { (scale[s], bias[s]) = Self.grid(lo[s], hi[s], o) }
        var values = w.values
        var notes: [String] = []
        if o.method.needsCalibration {
            if let stats = w.statistics, stats.misfit(w) == nil {
                let importance = stats.importance(w)
                notes.append(Self.fitGrid(w.values, importance: importance, runs: runs, lo: lo, hi: hi, o: o, scale: &scale, bias: &bias))
                if o.method == .gptq {
                    let blockOf = Self.blockIndex(runs, count: w.values.count)
                    let qr = AffineWeights.codeRange(bits: b, signed: signed)
                    let (qlo, qhi) = (Double(qr.lowerBound), Double(qr.upperBound))
                    let (done, note) = GPTQ.run(w, stats) { i, x in
                        let s = Int(blockOf[i]), sc = Double(scale[s]), of = Double(bias[s])
                        return sc * roundHalfEven(min(max((x - of) / sc, qlo), qhi)) + of
                    }
                    values = done
                    notes.append(note)
                }
            } else {
                notes.append("\(o.method): \(w.statistics.flatMap { $0.misfit(w) } ?? "no calibration statistics for this weight"); rounded to nearest")
            }
        }
        let range = AffineWeights.codeRange(bits: b, signed: signed)
        let qlo = Double(range.lowerBound), qhi = Double(range.upperBound)
        let inverse = scale.map { 1 / Double($0) }
        let offset = bias.map(Double.init)
        let q = [Int16](unsafeUninitializedCapacity: values.count) { qp, initialized in
            values.withUnsafeBufferPointer { v in
                func code(_ x: Float, _ s: Int) -> Int16 {
                    Int16(roundHalfEven(min(max((Double(x) - offset[s]) * inverse[s], qlo), qhi)))
                }
                if let (rows, columns) = runs.lastAxisChannels {
                    for r in 0..<rows {
                        let row = r * columns
                        for c in 0..<columns { qp[row + c] = code(v[row + c], c) }
                    }
                } else {
                    runs.forEach { range, s in
                        for i in range { qp[i] = code(v[i], s) }
                    }
                }
            }
            initialized = values.count
        }
        do {
            let a = try AffineWeights(shape: shape, bits: b, signed: signed, q: q, blockShape: blockShape,
                                      scale: scale, bias: bias)
            return CodecResult(encoding: .affine(a), notes: notes)
        } catch {
            throw .layout(tensor: w.name, error)
        }
    }

    /// The scale and offset of a block whose values span [mn, mx] (an empty block: mn > mx).
    static func grid(_ lo: Float, _ hi: Float, _ o: CodecOptions) -> (scale: Float, bias: Float) {
        let b = o.bits
        var mn = lo, mx = hi
        if mn > mx { mn = 0; mx = 0 }  // empty block
        if o.symmetric {
            let r = max(abs(mn), abs(mx))
            guard r > 0 else { return (1, 0) }
            if b == 1 { return (Float(2 * Double(r)), -r) }
            let qmax = Double((1 << (b - 1)) - 1)
            var step = Float(Double(r) / qmax)
            if step == 0 { step = r }  // a subnormal range: levels 0, ±r
            // Rounding (coarse for subnormal scales) must not leave r outside the codes.
            while Double(step) * qmax < Double(r) { step = step.nextUp }
            return (step, 0)
        }
        if o.exactZero { mn = min(mn, 0); mx = max(mx, 0) }
        let levels = Double((1 << b) - 1)
        let range = Double(mx) - Double(mn)
        guard range > 0 && Float(range / levels) > 0 else { return (1, mn) }  // constant block: code 0 decodes to it exactly
        var step = range / levels
        var z = 0.0
        if o.exactZero {
            // Round the zero point, then widen the step so both ends still fit.
            z = min(max((-Double(mn) / step).rounded(.toNearestOrEven), 0), levels)
            if z < levels { step = max(step, Double(mx) / (levels - z)) }
            if z > 0 { step = max(step, -Double(mn) / z) }
        }
        var f = Float(step)
        while Double(f) * levels < range * (1 - 1e-12) && f < .greatestFiniteMagnitude { f = f.nextUp }
        if o.exactZero {
            // Round the scale up to 16 significant bits so that scale × z
            // (z < 256) is exact: then the zero code decodes to exactly 0.
            f = Float(bitPattern: (f.bitPattern &+ 0xFF) & ~UInt32(0xFF))
        }
        return (f, o.exactZero ? -(f * Float(z)) : mn)
    }
}

/// Round half to even for |x| < 2^51 without a libm call: adding and
/// subtracting 1.5·2^52 leaves the nearest integer under IEEE rounding.
@inline(__always)
func roundHalfEven(_ x: Double) -> Double {
    let magic = 6_755_399_441_055_744.0
    return (x + magic) - magic
}
