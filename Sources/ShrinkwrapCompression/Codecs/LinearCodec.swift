import ShrinkwrapIR

/// Linear (affine) quantization to 1–8 bits, per tensor, per output channel,
/// or per block of B along the input axis (per output channel). Decodes as
/// `scale × q + bias` (see `AffineWeights`).
///
/// - asymmetric (default, coremltools' linear mode): unsigned codes over
///   [min, max] of the block, `scale = (max − min) / (2^b − 1)`, `bias = min`.
///   With `exactZero` the range is widened to contain 0 and the zero point
///   `z = round(−min / scale)` is an integer (`bias = −scale × z`), so 0 is
///   exact and ONNX / TFLite can store it;
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
    public let granularities = ["per-tensor", "per-channel", "per-block:B"]

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
            throw .unsupportedGranularity(mode: mode, granularity: o.granularity.description, supported: granularities.joined(separator: ", "))
        }
        let map = blockIndexMap(shape: shape, blockShape: blockShape)
        let blocks = map.blocks
        var lo = [Float](repeating: .infinity, count: blocks)
        var hi = [Float](repeating: -.infinity, count: blocks)
        for (i, v) in w.values.enumerated() {
            let s = Int(map.index[i])
            if v < lo[s] { lo[s] = v }
            if v > hi[s] { hi[s] = v }
        }
        let b = o.bits
        let signed = o.symmetric && b > 1
        var scale = [Float](repeating: 1, count: blocks)
        var bias = [Float](repeating: 0, count: blocks)
        for s in 0..<blocks {
            var mn = lo[s], mx = hi[s]
            if mn > mx { mn = 0; mx = 0 }  // empty block
            if o.symmetric {
                let r = max(abs(mn), abs(mx))
                guard r > 0 else { continue }
                if b == 1 {
                    scale[s] = Float(2 * Double(r))
                    bias[s] = -r
                } else {
                    let qmax = Double((1 << (b - 1)) - 1)
                    var step = Float(Double(r) / qmax)
                    if step == 0 { step = r }  // a subnormal range: levels 0, ±r
                    // Rounding (coarse for subnormal scales) must not leave r outside the codes.
                    while Double(step) * qmax < Double(r) { step = step.nextUp }
                    scale[s] = step
                }
            } else {
                if o.exactZero { mn = min(mn, 0); mx = max(mx, 0) }
                let levels = Double((1 << b) - 1)
                let range = Double(mx) - Double(mn)
                if range > 0 && Float(range / levels) > 0 {
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
                    scale[s] = f
                    bias[s] = o.exactZero ? -(f * Float(z)) : mn
                } else {
                    bias[s] = mn  // constant block: code 0 decodes to it exactly
                }
            }
        }
        let range = AffineWeights.codeRange(bits: b, signed: signed)
        let qlo = Double(range.lowerBound), qhi = Double(range.upperBound)
        var q = [Int16](repeating: 0, count: w.values.count)
        for (i, v) in w.values.enumerated() {
            let s = Int(map.index[i])
            let code = ((Double(v) - Double(bias[s])) / Double(scale[s])).rounded(.toNearestOrEven)
            q[i] = Int16(min(max(code, qlo), qhi))
        }
        do {
            let a = try AffineWeights(shape: shape, bits: b, signed: signed, q: q, blockShape: blockShape,
                                      scale: scale, bias: bias)
            return CodecResult(encoding: .affine(a))
        } catch {
            throw .layout(tensor: w.name, error)
        }
    }
}

/// For each element (row-major), the index of its scale block.
struct BlockIndexMap {
    var index: [Int32]
    var blocks: Int
}

func blockIndexMap(shape: [Int], blockShape: [Int]) -> BlockIndexMap {
    let n = shape.reduce(1, *)
    let scaleShape = zip(shape, blockShape).map { d, b in d == 0 ? 0 : (d + b - 1) / b }
    let blocks = scaleShape.reduce(1, *)
    var out = [Int32](repeating: 0, count: n)
    guard n > 0, !shape.isEmpty else { return BlockIndexMap(index: out, blocks: max(blocks, shape.isEmpty ? 1 : 0)) }
    let sStrides = stridesOf(scaleShape)
    let rank = shape.count
    var idx = [Int](repeating: 0, count: rank)
    var s = 0
    for i in 0..<n {
        out[i] = Int32(truncatingIfNeeded: s)
        // Advance the odometer and keep the block index in step.
        var k = rank - 1
        while k >= 0 {
            s -= (idx[k] / blockShape[k]) * sStrides[k]
            idx[k] += 1
            if idx[k] < shape[k] {
                s += (idx[k] / blockShape[k]) * sStrides[k]
                break
            }
            idx[k] = 0
            k -= 1
        }
    }
    return BlockIndexMap(index: out, blocks: blocks)
}
