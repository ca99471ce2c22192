import ShrinkwrapIR

/// The constexpr ops that rebuild compressed weights, kept compressed: each
/// becomes a constant whose `WeightEncoding` is the same layout
/// (`AffineWeights`, `PaletteWeights`, `Float16Weights`), never decoded.
///
/// How our decode matches Core ML's (coremltools 9.0's `decompress`, which
/// computes `(q − z) · scale` in float32, or in fp16 when the scale is fp16):
/// - palettes: exactly (the table values are copied; fp16 tables widen exactly);
/// - affine with zero point 0 (symmetric): exactly in float32 (`scale × q` rounded once);
/// - affine with a zero point: our `scale × q + bias` with `bias = −scale·z`
///   rounded to float32 first, so within one float32 ulp of `bias` (MILImporterTests measures it);
/// - fp16 scales: coremltools rounds the product to fp16, we keep float32:
///   within fp16 rounding (half an fp16 ulp).
extension MILOpReaders {
    static let constexpr: [String: MILOpReader] = [
        "constexpr_cast": { r in try r.constexprCast() },
        "constexpr_affine_dequantize": { r in try r.affineDequantize() },
        "constexpr_blockwise_shift_scale": { r in try r.blockwiseShiftScale() },
        "constexpr_lut_to_dense": { r in try r.lutToDense() },
    ]
}

extension MILReader {
    /// The literal a constexpr parameter names (required).
    func need(_ key: String) throws -> MILLiteral {
        guard let l = try param(key) else { throw bad("no input '\(key)'") }
        return l
    }

    /// A weight produced by the current op.
    mutating func produce(_ e: WeightEncoding) throws {
        if let s = shape(out()), s != e.shape { throw bad("the weight decodes to shape \(e.shape), the op declares \(s)") }
        weights[out()] = e
    }

    /// constexpr_cast (fp16 → fp32): a float16 weight.
    mutating func constexprCast() throws {
        let source = try need("source_val")
        guard case .half(let bits) = source.elements else { throw refuse("constexpr_cast of \(MILTypes.name(source.type)) values") }
        try produce(.float16(try Float16Weights(shape: source.shape, bits: bits)))
    }

    /// Integer codes of an int4 / int8 / uint4 / uint8 literal: (bits, signed, codes).
    func codes(_ l: MILLiteral, _ key: String) throws -> (bits: Int, signed: Bool, q: [Int16]) {
        guard [.int4, .uint4, .int8, .uint8].contains(l.type), case .ints(let v) = l.elements, let bits = MILTypes.bits(l.type) else {
            throw refuse("'\(key)' of type \(MILTypes.name(l.type)) (int4, uint4, int8 and uint8 codes are read)")
        }
        return (bits, MILTypes.isSigned(l.type), v.map { Int16(clamping: $0) })
    }

    /// constexpr_affine_dequantize (iOS 16): `scale · (q − zero_point)`, per tensor or per channel along `axis`.
    mutating func affineDequantize() throws {
        let data = try need("quantized_data")
        let (bits, signed, q) = try codes(data, "quantized_data")
        guard let scale = try need("scale").floatValues, let zero = try need("zero_point").floatValues else { throw bad("non-numeric scale / zero point") }
        let shape = data.shape
        let a = try axis(try int("axis", 0), rank: shape.count)
        var block = shape.map { max($0, 1) }
        if scale.count > 1 || zero.count > 1 {
            guard !shape.isEmpty, [1, shape[a]].contains(scale.count), [1, shape[a]].contains(zero.count) else {
                throw bad("\(scale.count) scales and \(zero.count) zero points for axis \(a) of shape \(shape)")
            }
            block[a] = 1
        }
        let n = block == shape.map({ max($0, 1) }) ? 1 : shape[a]
        let s = (0..<n).map { scale.count == 1 ? scale[0] : scale[$0] }
        let z = (0..<n).map { zero.count == 1 ? zero[0] : zero[$0] }
        let bias = zip(s, z).map { Float(-Double($0) * Double($1)) }
        try produce(.affine(try AffineWeights(shape: shape, bits: bits, signed: signed, q: q, blockShape: block, scale: s, bias: bias)))
    }

    /// constexpr_blockwise_shift_scale (iOS 18): `scale · (data − offset)` per block; the block
    /// along each axis is `data.shape / scale.shape`.
    mutating func blockwiseShiftScale() throws {
        let data = try need("data")
        let (bits, signed, q) = try codes(data, "data")
        let scaleLiteral = try need("scale")
        guard let scale = scaleLiteral.floatValues else { throw bad("non-numeric scale") }
        let offset = try param("offset")
        let shape = data.shape
        guard scaleLiteral.shape.count == shape.count else { throw bad("scale of shape \(scaleLiteral.shape) for data of shape \(shape)") }
        var block: [Int] = []
        for (d, s) in zip(shape, scaleLiteral.shape) {
            guard s >= 1, d % s == 0 else { throw bad("scale of shape \(scaleLiteral.shape) does not divide data of shape \(shape)") }
            block.append(max(d / s, 1))
        }
        var bias = Array(repeating: Float(0), count: scale.count)
        if let offset {
            guard offset.shape == scaleLiteral.shape, let o = offset.floatValues else { throw bad("offset of shape \(offset.shape), scale \(scaleLiteral.shape)") }
            bias = zip(scale, o).map { Float(-Double($0) * Double($1)) }
        }
        try produce(.affine(try AffineWeights(shape: shape, bits: bits, signed: signed, q: q, blockShape: block, scale: scale, bias: bias)))
    }

    /// constexpr_lut_to_dense: iOS 16 (packed uint8 indices, a 1-D table, a shape) or
    /// iOS 18 (uint1…uint8 indices of the weight's shape, tables of rank K + 2).
    mutating func lutToDense() throws {
        let indices = try need("indices")
        // A table that is itself quantized (its input a constexpr_blockwise_shift_scale) is
        // decoded to floats here: PaletteWeights stores float tables.
        let lutLiteral = try need("lut")
        guard let lut = lutLiteral.floatValues, case .ints(let codes) = indices.elements else { throw bad("non-numeric lut or indices") }
        if let shapeParam = try param("shape") {
            // iOS 16: one table of 2^bits entries; indices packed LSB first.
            guard let shape = shapeParam.intValues, let bits = [2: 1, 4: 2, 16: 4, 64: 6, 256: 8][lut.count] else {
                throw bad("a lookup table of \(lut.count) entries (2, 4, 16, 64 or 256)")
            }
            guard let n = checkedElementCount(shape, limit: 1 << 34) else { throw bad("shape \(shape)") }
            let bytes = codes.map { UInt8(truncatingIfNeeded: $0) }
            guard bytes.count == BitPacking.byteCount(count: n, bits: bits),
                  let unpacked = BitPacking.unpack(bytes, bits: bits, count: n, order: .lsbFirst) else {
                throw bad("\(bytes.count) index bytes for \(n) \(bits)-bit indices")
            }
            try produce(.palette(try PaletteWeights(shape: shape, bits: bits, indices: unpacked, lut: [lut], axis: 0,
                                                    groupSize: max(shape.first ?? 1, 1))))
            return
        }
        guard let bits = MILTypes.bits(indices.type), bits <= 8, !MILTypes.isSigned(indices.type) else {
            throw refuse("indices of type \(MILTypes.name(indices.type))")
        }
        let shape = indices.shape, k = shape.count
        let ls = lutLiteral.shape
        guard ls.count == k + 2, ls[k] == 1 << bits else { throw bad("lookup tables of shape \(ls) for \(bits)-bit indices of shape \(shape)") }
        guard ls[k + 1] == 1 else { throw refuse("vector palettization (vector size \(ls[k + 1]))") }
        let grouped = (0..<k).filter { ls[$0] > 1 }
        guard grouped.count <= 1 else { throw refuse("lookup tables grouped along several axes \(grouped)") }
        let a = grouped.first ?? 0
        let groups = grouped.isEmpty ? 1 : ls[a]
        guard grouped.isEmpty || shape[a] % groups == 0 else { throw bad("\(groups) tables along axis \(a) of shape \(shape)") }
        let entries = 1 << bits
        let tables = (0..<groups).map { g in Array(lut[(g * entries)..<((g + 1) * entries)]) }
        let groupSize = grouped.isEmpty ? max(shape.first ?? 1, 1) : shape[a] / groups
        try produce(.palette(try PaletteWeights(shape: shape, bits: bits, indices: codes.map { UInt8(truncatingIfNeeded: $0) },
                                                lut: tables, axis: a, groupSize: groupSize)))
    }
}
