import CoreMLSchema
import ShrinkwrapIR

/// Constants in an ML Program, each encoding in the form Core ML decodes to
/// exactly `WeightEncoding.decoded()`:
///
/// | encoding | MIL | target |
/// |---|---|---|
/// | dense float32 | `const` fp32 (fp16 when computing in float16) | iOS 15 |
/// | float16 | `const` fp16, `cast` to fp32 when computing in float32 | iOS 15 |
/// | affine, 8 bits, per tensor / channel | `constexpr_affine_dequantize` (uint8 / int8 codes, zero point, fp32 scale, axis) | iOS 16 |
/// | affine, 4 / 8 bits, per tensor / channel / block | `constexpr_blockwise_shift_scale` (int4 / uint4 / int8 / uint8 data, fp32 scale, offset) | iOS 18 |
/// | palette, 1/2/4/6/8 bits, one table | `constexpr_lut_to_dense` (packed uint8 indices, fp32 table, uint32 shape) | iOS 16 |
/// | palette, 1/2/3/4/6/8 bits, a table per group of channels | `constexpr_lut_to_dense` (uintN indices, fp32 tables [.., groups, .., 2^b, 1]) | iOS 18 |
///
/// Computing in float16, scales and tables are written as float16 (see
/// `floats`). Both affine ops compute `scale · (q − z)` with an integer zero point z:
/// one product of an exact difference, rounded once, which is what
/// `AffineWeights.decoded()` gives when its bias is `−scale · z` exactly (the
/// linear codec rounds exact-zero scales so that it is). Fractional zero
/// points (the asymmetric default) have no exact form here and are refused
/// up front. At iOS 18 the iOS 16 lookup-table op is replaced by its
/// grouped form, so every table is written in that form there.
enum MILWeights {
    typealias Target = MILExporter.Target

    /// What each target stores: exactly the forms `target(for:)` accepts, as
    /// a rule on width, granularity and zero point (blocks and groups must
    /// also divide their axis: `equalBlocks`).
    static func stored(for target: Target) -> StoredWeightForms {
        var s = StoredWeightForms(float16: true, affineBits: Set(1...8), affineGranularities: Set(GranularityKind.allCases), affineNeedsIntegerZeroPoint: false,
                                  paletteBits: Set(1...8), paletteGranularities: Set(GranularityKind.allCases))
        s.refusing = { form in refusal(form, target: target) }
        if target >= .iOS18 { s.fits = equalBlocks }
        return s
    }

    /// Why `target` cannot store weights of `form` (nil: it can), naming the target that would.
    static func refusal(_ form: WeightForm, target: Target) -> String? {
        let lowest = lowestTarget(for: form)
        guard let needed = lowest.target else { return lowest.why }
        return needed <= target ? nil : "\(form) weights from \(needed) on (--target \(needed))"
    }

    /// The first target that stores `form`, or why none does.
    static func lowestTarget(for form: WeightForm) -> (target: Target?, why: String) {
        let perAxis = form.granularity == .perTensor || form.granularity == .perChannel
        switch form.kind {
        case .float16:
            return (.iOS15, "")
        case .affine:
            if form.bits == 8, perAxis, form.integerZeroPoint { return (.iOS16, "") }
            if form.bits <= 4, form.granularity == .perTensor, [1, 2, 4].contains(form.bits) { return (.iOS16, "") }  // a table
            if form.bits <= 4, perAxis { return (.iOS18, "") }  // a table per tensor or channel
            if (form.bits == 4 || form.bits == 8), form.integerZeroPoint { return (.iOS18, "") }
            if form.bits > 4, !form.integerZeroPoint {
                return (nil, "linear codes of more than 4 bits with integer zero points only (compress with --symmetric or --exact-zero)")
            }
            return (nil, form.granularity == .perBlock ? "linear codes per block of 4 or 8 bits with integer zero points only"
                                                        : "linear codes of 1–4 and 8 bits only")
        case .palette:
            if [1, 2, 4, 6, 8].contains(form.bits), form.granularity == .perTensor { return (.iOS16, "") }
            guard [1, 2, 3, 4, 6, 8].contains(form.bits) else { return (nil, "lookup tables of 1, 2, 3, 4, 6 or 8 bits only") }
            guard form.granularity != .perBlock else { return (nil, "no lookup tables per block of inputs") }
            return (.iOS18, "")
        }
    }

    /// Core ML derives a block's length from the shapes (axis length / scale
    /// or table count), so blocks and groups must divide their axis, or
    /// cover it. A weight they do not fit stays float32, as coremltools
    /// leaves it.
    static let equalBlocks: WeightLayoutFit = { kind, size, shape, outputAxis, inputAxis in
        let (axis, what) = kind == .perBlock ? (inputAxis, "blocks of \(size) along its input axis") : (outputAxis, "groups of \(size) output channels")
        guard axis < shape.count else { return nil }
        let d = shape[axis]
        if d <= size || d % size == 0 { return nil }
        return "\(what) do not divide its \(d) (Core ML ML Programs need equal \(kind == .perBlock ? "blocks" : "groups")); left float32"
    }

    /// The lowest target that holds every weight, with what raised it.
    static func lowestTarget(for graph: Graph) throws -> (target: Target, reasons: [String]) {
        var lowest = Target.iOS15
        var reasons: [(Target, String)] = []
        for c in ([graph] + graph.allSubgraphs).flatMap(\.constants) {
            let t = try target(for: c.encoding, name: c.name)
            if t > .iOS15 { reasons.append((t, "weight '\(c.name)' (\(c.encoding.kind)) needs \(t)")) }
            lowest = max(lowest, t)
        }
        return (lowest, reasons.filter { $0.0 == lowest }.map(\.1))
    }

    /// The lowest target that stores `e`, or an error saying why none does.
    static func target(for e: WeightEncoding, name: String) throws -> Target {
        func refuse(_ why: String) -> ExportError { .unsupportedWeight(format: MILExporter.format, tensor: name, reason: why) }
        switch e {
        case .dense, .float16: return .iOS15
        case .affine(let a):
            if a.integerZeroPoints != nil {
                if a.bits == 8, perAxis(a) != nil { return .iOS16 }
                let equal = a.shape.indices.allSatisfy { k in a.scaleShape[k] == 1 || a.shape[k] == a.scaleShape[k] * a.blockShape[k] }
                if a.bits == 4 || a.bits == 8, equal { return .iOS18 }
            }
            if let p = asTable(a) { return try target(for: .palette(p), name: name) }
            if a.integerZeroPoints == nil {
                throw refuse("\(a.bits)-bit linear codes with fractional zero points have no ML Program form at this granularity (compress with --symmetric or --exact-zero, or at 4 bits or fewer per tensor / channel)")
            }
            guard a.bits == 4 || a.bits == 8 else {
                throw refuse(perAxis(a) != nil ? "\(a.bits)-bit linear codes: ML Programs store 1–4 and 8 bits"
                                               : "\(a.bits)-bit linear codes per block: ML Programs store 4 or 8 bits per block")
            }
            throw refuse("blocks of \(a.blockShape) do not divide the shape \(a.shape) (iOS 18 needs equal blocks)")
        case .palette(let p):
            guard !p.shape.isEmpty else { throw refuse("a scalar lookup-table weight") }
            if p.lut.count == 1, [1, 2, 4, 6, 8].contains(p.bits) { return .iOS16 }
            guard [1, 2, 3, 4, 6, 8].contains(p.bits) else { throw refuse("\(p.bits)-bit lookup tables: ML Programs store 1, 2, 3, 4, 6 or 8 bits") }
            guard p.shape[p.axis] % p.groupSize == 0 || p.lut.count == 1 else {
                throw refuse("groups of \(p.groupSize) do not divide axis \(p.axis) of \(p.shape) (iOS 18 needs equal groups)")
            }
            return .iOS18
        }
    }

    /// `.some(nil)` for one scale per tensor, `.some(k)` for one scale per
    /// index of axis k, nil for anything else (blocks).
    static func perAxis(_ a: AffineWeights) -> Int?? {
        let varying = a.scaleShape.indices.filter { a.scaleShape[$0] > 1 }
        if varying.isEmpty { return .some(nil) }
        if varying.count == 1, a.blockShape[varying[0]] == 1 { return .some(varying[0]) }
        return nil
    }

    /// Writes constant `c`; returns the MIL value holding its float32 (or
    /// compute-type) values.
    /// In a loop body the constant is written before the loop (computed once).
    static func write(_ c: Constant, in w: inout MILWriter) throws -> String {
        w.builder.swapOutermost()
        defer { w.builder.swapOutermost() }
        let base = c.name
        switch c.encoding {
        case .dense(let t):
            switch t.storage {
            case .float(let v):
                if w.floatType == .float16 { return w.builder.const(base, .float16(v.map(Half.bits(from:)), shape: t.shape)) }
                return w.builder.const(base, .float32(v, shape: t.shape))
            case .int(let v):
                return w.builder.const(base, .int32(v.map { Int32(clamping: $0) }, shape: t.shape))
            case .bool(let v):
                return w.builder.const(base, .bools(v, shape: t.shape))
            }
        case .float16(let h):
            let v = w.builder.const(base + "_fp16", .float16(h.bits, shape: h.shape))
            return w.floatType == .float16 ? v : w.cast(v, to: .float32, base: base)
        case .affine(let a):
            return try affine(a, name: base, in: &w)
        case .palette(let p):
            return try palette(p, name: base, in: &w)
        }
    }

    /// Scales and tables in the compute type: a constexpr's output has their
    /// type, and ops that need constant weights take a constexpr's output
    /// but not a cast of it. Computing in float16 thus rounds them to
    /// float16 (what coremltools writes too); in float32 they are exact.
    static func floats(_ v: [Float], shape: [Int], _ w: MILWriter) -> MILConstant {
        w.floatType == .float16 ? .float16(v.map(Half.bits(from:)), shape: shape) : .float32(v, shape: shape)
    }

    /// Linear codes of 4 bits or fewer per tensor or output channel without a
    /// native form (a fractional zero point, or 1/2/3 bits): the same weight
    /// as a lookup table per tensor or channel whose entry k is the decoded
    /// value of code k, computed as `AffineWeights.decoded()` computes it —
    /// exact, at most 16 table entries per scale. nil for anything else.
    static func asTable(_ a: AffineWeights) -> PaletteWeights? {
        guard a.bits <= 4, !a.shape.isEmpty, case .some(let axis) = perAxis(a) else { return nil }
        let range = a.codeRange
        let lut = zip(a.scale, a.bias).map { s, b in
            (0..<(1 << a.bits)).map { k in Float(Double(s) * Double(range.lowerBound + k) + Double(b)) }
        }
        let indices = a.q.map { UInt8(Int($0) - range.lowerBound) }
        let ax = axis ?? 0
        return try? PaletteWeights(shape: a.shape, bits: a.bits, indices: indices, lut: lut, axis: ax, groupSize: axis == nil ? max(a.shape[ax], 1) : 1)
    }

    static func affine(_ a: AffineWeights, name: String, in w: inout MILWriter) throws -> String {
        let native = a.integerZeroPoints != nil && ((a.bits == 8 && perAxis(a) != nil && w.target < .iOS18)
            || (w.target >= .iOS18 && (a.bits == 4 || a.bits == 8)
                && a.shape.indices.allSatisfy { k in a.scaleShape[k] == 1 || a.shape[k] == a.scaleShape[k] * a.blockShape[k] }))
        if !native, let table = asTable(a) { return try palette(table, name: name, in: &w) }
        guard let zps = a.integerZeroPoints else {
            throw ExportError.unsupportedWeight(format: MILExporter.format, tensor: name, reason: "fractional zero points")
        }
        let out = MILTensorType(dataType: w.floatType, shape: a.shape)
        let anyOffset = zps.contains { $0 != 0 }
        if w.target < .iOS18 {
            guard a.bits == 8, case .some(let axis) = perAxis(a) else {
                throw ExportError.unsupportedWeight(format: MILExporter.format, tensor: name, reason: "\(a.bits)-bit linear codes per \(a.blockShape) need iOS18")
            }
            let dt: MILDataType = a.signed ? .int8 : .uint8
            let blobType: MILBlobDataType = a.signed ? .int8 : .uint8
            let perChannel = axis != nil
            let data = w.builder.const(name + "_quantized", .packed(MILBlob.packed(a.q, as: blobType), dt, shape: a.shape))
            let zp = w.builder.const(name + "_zero_point", .packed(MILBlob.packed(zps, as: blobType), dt, shape: perChannel ? [zps.count] : []))
            let scale = w.builder.const(name + "_scale", floats(a.scale, shape: perChannel ? [a.scale.count] : [], w))
            let ax = w.builder.int32(name + "_axis", axis ?? 0)
            return w.builder.op1("constexpr_affine_dequantize",
                                 [("quantized_data", .value(data)), ("zero_point", .value(zp)), ("scale", .value(scale)), ("axis", .value(ax))],
                                 output: w.builder.fresh(name), out)
        }
        let (dt, blobType): (MILDataType, MILBlobDataType) = a.bits == 4 ? (a.signed ? (.int4, .int4) : (.uint4, .uint4))
                                                                          : (a.signed ? (.int8, .int8) : (.uint8, .uint8))
        let data = w.builder.const(name + "_quantized", .packed(MILBlob.packed(a.q, as: blobType), dt, shape: a.shape))
        let scale = w.builder.const(name + "_scale", floats(a.scale, shape: a.scaleShape, w))
        var inputs: [(String, MILArgument)] = [("data", .value(data)), ("scale", .value(scale))]
        if anyOffset {
            let off = w.builder.const(name + "_offset", .packed(MILBlob.packed(zps, as: blobType), dt, shape: a.scaleShape))
            inputs.append(("offset", .value(off)))
        }
        return w.builder.op1("constexpr_blockwise_shift_scale", inputs, output: w.builder.fresh(name), out)
    }

    static func palette(_ p: PaletteWeights, name: String, in w: inout MILWriter) throws -> String {
        let out = MILTensorType(dataType: w.floatType, shape: p.shape)
        let entries = 1 << p.bits
        if w.target < .iOS18 {
            guard p.lut.count == 1 else {
                throw ExportError.unsupportedWeight(format: MILExporter.format, tensor: name, reason: "lookup tables per group of channels need iOS18")
            }
            let packed = BitPacking.pack(p.indices, bits: p.bits, order: .lsbFirst)
            let indices = w.builder.const(name + "_indices", .packed(MILBlob(dataType: .uint8, bytes: packed), .uint8, shape: [packed.count]))
            let lut = w.builder.const(name + "_lut", floats(p.lut[0], shape: [entries], w))
            let shape = w.builder.const(name + "_shape", .uint32(p.shape.map { UInt32(clamping: $0) }, shape: [p.shape.count]))
            return w.builder.op1("constexpr_lut_to_dense", [("indices", .value(indices)), ("lut", .value(lut)), ("shape", .value(shape))],
                                 output: w.builder.fresh(name), out)
        }
        let types: [Int: (MILDataType, MILBlobDataType)] = [1: (.uint1, .uint1), 2: (.uint2, .uint2), 3: (.uint3, .uint3),
                                                            4: (.uint4, .uint4), 6: (.uint6, .uint6), 8: (.uint8, .uint8)]
        guard let (dt, blobType) = types[p.bits] else {
            throw ExportError.unsupportedWeight(format: MILExporter.format, tensor: name, reason: "\(p.bits)-bit lookup tables")
        }
        var lutShape = [Int](repeating: 1, count: p.shape.count) + [entries, 1]
        lutShape[p.axis] = p.lut.count
        let indices = w.builder.const(name + "_indices", .packed(MILBlob.packed(p.indices, as: blobType), dt, shape: p.shape))
        let lut = w.builder.const(name + "_lut", floats(p.lut.flatMap { $0 }, shape: lutShape, w))
        return w.builder.op1("constexpr_lut_to_dense", [("indices", .value(indices)), ("lut", .value(lut))], output: w.builder.fresh(name), out)
    }
}
