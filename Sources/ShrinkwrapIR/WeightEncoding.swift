/// How a constant tensor is stored. Exporters write the encoding natively;
/// the interpreter and the report call `decoded()`, the single definition of
/// what a compressed weight means.
///
/// Layouts, their formulas and their cost in bits per weight (N elements,
/// b bits, G scale or LUT groups):
///
/// | encoding | element i decodes to | bits per weight |
/// |---|---|---|
/// | `dense` | the stored value | 8 × dtype width |
/// | `float16` | `Half.float(fromBits: bits[i])` | 16 |
/// | `affine` | `scale[s(i)] × (q[i] − zeroPoint[s(i)])` | b + 48·G / N (fp32 scale + 16-bit zero point per group) |
/// | `palette` | `lut[g(i)][index[i]]` | b + 32·2^b·G / N |
///
/// `s(i)` and `g(i)` map an element to its scale block or LUT group; see
/// `AffineWeights` and `PaletteWeights`.
public enum WeightEncoding: Sendable, Equatable {
    /// Stored as is, in the tensor's own dtype.
    case dense(Tensor)
    /// A float32 weight stored as binary16 bits.
    case float16(bits: [UInt16], shape: [Int])
    /// Linear (affine) quantization, 1–8 bits.
    case affine(AffineWeights)
    /// Palettization: indices into one lookup table per group, 1–8 bits.
    case palette(PaletteWeights)

    /// Logical shape of the weight.
    public var shape: [Int] {
        switch self {
        case .dense(let t): return t.shape
        case .float16(_, let shape): return shape
        case .affine(let a): return a.shape
        case .palette(let p): return p.shape
        }
    }

    /// Logical element type (compressed encodings are float32 weights).
    public var dtype: DType {
        if case .dense(let t) = self { return t.dtype }
        return .float32
    }

    /// Short name for logs and reports.
    public var kind: String {
        switch self {
        case .dense(let t): return t.dtype.rawValue
        case .float16: return "fp16"
        case .affine(let a): return "affine\(a.bits)"
        case .palette(let p): return "palette\(p.bits)"
        }
    }

    /// Bytes the payload takes when stored natively (packed codes plus
    /// scales / LUTs), used for size accounting.
    public var storageBytes: Int {
        switch self {
        case .dense(let t): return t.count * t.dtype.byteWidth
        case .float16(let bits, _): return bits.count * 2
        case .affine(let a): return (a.q.count * a.bits + 7) / 8 + a.scale.count * 4 + a.zeroPoint.count * 2
        case .palette(let p): return (p.indices.count * p.bits + 7) / 8 + p.lut.reduce(0) { $0 + $1.count * 4 }
        }
    }

    /// The values this encoding stands for, as a dense tensor.
    public func decoded() -> Tensor {
        switch self {
        case .dense(let t):
            return t
        case .float16(let bits, let shape):
            return Tensor(bits.map(Half.float(fromBits:)), shape: shape)
        case .affine(let a):
            return a.decoded()
        case .palette(let p):
            return p.decoded()
        }
    }
}

/// Affine quantization: `w[i] = scale[s(i)] × (q[i] − zeroPoint[s(i)])`.
///
/// `scaleShape` has the weight's rank; along each axis it is 1 (shared), the
/// full dimension (per channel), or `ceil(dim / B)` (per block of B). Element
/// index `(i0, …, ik)` uses scale index `(i0 / b0, …, ik / bk)` with
/// `bk = ceil(shape[k] / scaleShape[k])`.
public struct AffineWeights: Sendable, Equatable {
    public var shape: [Int]
    /// 1...8.
    public var bits: Int
    /// Signed codes lie in [−2^(b−1), 2^(b−1) − 1], unsigned in [0, 2^b − 1].
    public var signed: Bool
    /// One code per element, row-major.
    public var q: [Int16]
    public var scale: [Float]
    public var zeroPoint: [Int16]
    public var scaleShape: [Int]

    public init(shape: [Int], bits: Int, signed: Bool, q: [Int16], scale: [Float], zeroPoint: [Int16], scaleShape: [Int]) {
        self.shape = shape; self.bits = bits; self.signed = signed; self.q = q
        self.scale = scale; self.zeroPoint = zeroPoint; self.scaleShape = scaleShape
    }

    /// Block length along each axis.
    public var blocks: [Int] {
        zip(shape, scaleShape).map { d, s in s <= 0 ? max(d, 1) : max(1, (d + s - 1) / s) }
    }

    public func decoded() -> Tensor {
        let n = q.count
        var out = [Float](repeating: 0, count: n)
        let sStrides = stridesOf(scaleShape)
        let blk = blocks
        let rank = shape.count
        var idx = [Int](repeating: 0, count: rank)
        for i in 0..<n {
            var s = 0
            for k in 0..<rank { s += (idx[k] / blk[k]) * sStrides[k] }
            out[i] = scale[s] * Float(Int32(q[i]) - Int32(zeroPoint[s]))
            var k = rank - 1
            while k >= 0 {
                idx[k] += 1
                if idx[k] < shape[k] { break }
                idx[k] = 0
                k -= 1
            }
        }
        return Tensor(out, shape: shape)
    }
}

/// Palettization: `w[i] = lut[g(i)][indices[i]]`, `g(i) = i_axis / groupSize`
/// (one group when `groupSize` covers the whole axis). Each LUT has 2^bits
/// entries.
public struct PaletteWeights: Sendable, Equatable {
    public var shape: [Int]
    /// 1...8.
    public var bits: Int
    public var indices: [UInt8]
    public var lut: [[Float]]
    /// The axis groups are taken along (the output-channel axis).
    public var axis: Int
    /// Channels per group along `axis`.
    public var groupSize: Int

    public init(shape: [Int], bits: Int, indices: [UInt8], lut: [[Float]], axis: Int, groupSize: Int) {
        self.shape = shape; self.bits = bits; self.indices = indices; self.lut = lut
        self.axis = axis; self.groupSize = groupSize
    }

    public func decoded() -> Tensor {
        let n = indices.count
        var out = [Float](repeating: 0, count: n)
        let inner = shape.count > axis ? shape[(axis + 1)...].reduce(1, *) : 1
        let dim = shape.count > axis ? shape[axis] : 1
        let gs = max(groupSize, 1)
        for i in 0..<n {
            let c = (i / inner) % max(dim, 1)
            let table = lut[min(c / gs, lut.count - 1)]
            out[i] = table[Int(indices[i])]
        }
        return Tensor(out, shape: shape)
    }
}
