/// How a constant tensor is stored. Exporters write the encoding natively;
/// the interpreter and the report call `decoded()`, the single definition of
/// what a compressed weight means.
///
/// Layouts, their formulas and their cost in bits per weight (N elements,
/// b bits, S scale blocks or G LUT groups):
///
/// | encoding | element i decodes to | bits per weight |
/// |---|---|---|
/// | `dense` | the stored value | 8 × dtype width |
/// | `float16` | `Half.float(fromBits: bits[i])` | 16 |
/// | `affine` | `scale[s(i)] × q[i] + bias[s(i)]` | b + 32·S/N, + 8·S/N when the biases are integer zero points, + 32·S/N otherwise (none when all are 0) |
/// | `palette` | `lut[g(i)][index[i]]` | b + 32·2^b·G/N |
///
/// `s(i)` and `g(i)` map an element to its scale block or LUT group; see
/// `AffineWeights` and `PaletteWeights`. The three compressed layouts can
/// only be built through their validating initializers, so `decoded()` never
/// meets an index out of range, whatever file the weights came from.
public enum WeightEncoding: Sendable, Equatable {
    /// Stored as is, in the tensor's own dtype.
    case dense(Tensor)
    /// A float32 weight stored as binary16 bits.
    case float16(Float16Weights)
    /// Linear (affine) quantization, 1–8 bits.
    case affine(AffineWeights)
    /// Palettization: indices into one lookup table per group, 1–8 bits.
    case palette(PaletteWeights)

    /// Logical shape of the weight.
    public var shape: [Int] {
        switch self {
        case .dense(let t): return t.shape
        case .float16(let h): return h.shape
        case .affine(let a): return a.shape
        case .palette(let p): return p.shape
        }
    }

    /// Number of elements.
    public var count: Int { shape.reduce(1, *) }

    /// Logical element type (compressed encodings are float32 weights).
    public var dtype: DType {
        if case .dense(let t) = self { return t.dtype }
        return .float32
    }

    /// Whether the weight is stored in one of the compressed layouts.
    public var isCompressed: Bool {
        if case .dense = self { return false }
        return true
    }

    /// Short name for logs and reports: "float32", "fp16", "affine4", "palette2".
    public var kind: String {
        switch self {
        case .dense(let t): return t.dtype.rawValue
        case .float16: return "fp16"
        case .affine(let a): return "affine\(a.bits)"
        case .palette(let p): return "palette\(p.bits)"
        }
    }

    /// Bytes the payload takes when stored natively (packed codes plus
    /// scales / zero points / LUTs), used for size accounting.
    public var storageBytes: Int {
        switch self {
        case .dense(let t): return t.count * t.dtype.byteWidth
        case .float16(let h): return h.bits.count * 2
        case .affine(let a): return a.storageBytes
        case .palette(let p): return p.storageBytes
        }
    }

    /// Storage bits per logical element, overhead included.
    public var bitsPerWeight: Double {
        let n = count
        return n == 0 ? 0 : Double(storageBytes * 8) / Double(n)
    }

    /// The values this encoding stands for, as a dense tensor.
    public func decoded() -> Tensor {
        switch self {
        case .dense(let t): return t
        case .float16(let h): return h.decoded()
        case .affine(let a): return a.decoded()
        case .palette(let p): return p.decoded()
        }
    }
}

/// Why a compressed weight layout is inconsistent (wrong counts, codes out of
/// range, non-finite scales). Importers wrap it with the file and tensor name.
public struct WeightLayoutError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

private func elementCount(_ shape: [Int]) throws(WeightLayoutError) -> Int {
    guard let n = checkedElementCount(shape) else { throw WeightLayoutError("shape \(shape) is negative or too large") }
    return n
}

/// A float32 weight stored as IEEE binary16 bits (round to nearest even).
public struct Float16Weights: Sendable, Equatable {
    public let shape: [Int]
    public let bits: [UInt16]

    public init(shape: [Int], bits: [UInt16]) throws(WeightLayoutError) {
        let n = try elementCount(shape)
        guard bits.count == n else { throw WeightLayoutError("\(bits.count) fp16 values for shape \(shape) (\(n) elements)") }
        self.shape = shape; self.bits = bits
    }

    public func decoded() -> Tensor { Tensor(bits.map(Half.float(fromBits:)), shape: shape) }
}

/// Affine (linear) quantization: `w[i] = scale[s(i)] × q[i] + bias[s(i)]`.
///
/// `blockShape` has the weight's rank and says how many consecutive indices
/// along each axis share one scale: the whole dimension (shared), 1 (one
/// scale per index: per channel), or B (per block of B; the last block may be
/// shorter). The scales form a row-major array of shape
/// `scaleShape[k] = ceil(shape[k] / blockShape[k])`, and element
/// `(i0, …, ik)` uses scale `(i0 / blockShape[0], …, ik / blockShape[k])`.
///
/// Codes are signed (two's complement, `[−2^(b−1), 2^(b−1) − 1]`) or unsigned
/// (`[0, 2^b − 1]`). The bias form is Core ML NeuralNetwork's and stays
/// precise whatever the range; formats with an integer zero point
/// (`w = scale × (q − z)`, ONNX and TFLite) use `integerZeroPoints`, which
/// recovers `z = −bias / scale` when it is an integer in the code range.
public struct AffineWeights: Sendable, Equatable {
    public let shape: [Int]
    /// 1...8.
    public let bits: Int
    public let signed: Bool
    /// One code per element, row-major.
    public let q: [Int16]
    public let blockShape: [Int]
    public let scaleShape: [Int]
    public let scale: [Float]
    public let bias: [Float]

    public init(shape: [Int], bits: Int, signed: Bool, q: [Int16], blockShape: [Int],
                scale: [Float], bias: [Float]) throws(WeightLayoutError) {
        guard (1...8).contains(bits) else { throw WeightLayoutError("affine bits \(bits) outside 1...8") }
        let n = try elementCount(shape)
        guard q.count == n else { throw WeightLayoutError("\(q.count) codes for shape \(shape) (\(n) elements)") }
        guard blockShape.count == shape.count else {
            throw WeightLayoutError("block shape \(blockShape) does not have the weight's rank \(shape.count)")
        }
        var scaleShape: [Int] = []
        for (d, b) in zip(shape, blockShape) {
            guard b >= 1 else { throw WeightLayoutError("block shape \(blockShape) has a length below 1") }
            scaleShape.append(d == 0 ? 0 : (d + b - 1) / b)
        }
        let s = scaleShape.reduce(1, *)
        guard scale.count == s, bias.count == s else {
            throw WeightLayoutError("\(scale.count) scales and \(bias.count) biases for \(s) blocks (block shape \(blockShape), shape \(shape))")
        }
        if let bad = scale.firstIndex(where: { !$0.isFinite }) { throw WeightLayoutError("scale[\(bad)] is \(scale[bad])") }
        if let bad = bias.firstIndex(where: { !$0.isFinite }) { throw WeightLayoutError("bias[\(bad)] is \(bias[bad])") }
        let range = AffineWeights.codeRange(bits: bits, signed: signed)
        if let bad = q.firstIndex(where: { !range.contains(Int($0)) }) {
            throw WeightLayoutError("code \(q[bad]) at element \(bad) outside \(range) for \(bits)-bit \(signed ? "signed" : "unsigned") codes")
        }
        self.shape = shape; self.bits = bits; self.signed = signed; self.q = q
        self.blockShape = blockShape; self.scaleShape = scaleShape; self.scale = scale; self.bias = bias
    }

    /// The codes a b-bit signed or unsigned integer holds.
    public static func codeRange(bits: Int, signed: Bool) -> ClosedRange<Int> {
        signed ? -(1 << (bits - 1))...((1 << (bits - 1)) - 1) : 0...((1 << bits) - 1)
    }

    public var codeRange: ClosedRange<Int> { AffineWeights.codeRange(bits: bits, signed: signed) }

    /// The zero points `z = −bias / scale` when every one is (within 10⁻³) an
    /// integer in the code range, as ONNX and TFLite store them; else nil.
    public var integerZeroPoints: [Int]? {
        let r = codeRange
        var out: [Int] = []
        out.reserveCapacity(bias.count)
        for (s, b) in zip(scale, bias) {
            if b == 0 { out.append(0); continue }
            guard s != 0 else { return nil }
            let z = -Double(b) / Double(s)
            let zi = z.rounded()
            guard abs(z - zi) <= 1e-3, zi >= Double(r.lowerBound), zi <= Double(r.upperBound) else { return nil }
            out.append(Int(zi))
        }
        return out
    }

    public var isSymmetric: Bool { bias.allSatisfy { $0 == 0 } }

    /// Packed codes, fp32 scales, and the offsets: none when all are 0, one
    /// byte each as integer zero points, fp32 biases otherwise.
    public var storageBytes: Int {
        let offsets = isSymmetric ? 0 : (integerZeroPoints != nil ? bias.count : bias.count * 4)
        return (q.count * bits + 7) / 8 + scale.count * 4 + offsets
    }

    public func decoded() -> Tensor {
        // scale × q is exact in Double; one rounding to Float at the end gives
        // what Core ML's and coremltools' dequantization give, bit for bit.
        let runs = BlockRuns(shape: shape, blockShape: blockShape)
        let out = [Float](unsafeUninitializedCapacity: q.count) { o, initialized in
            q.withUnsafeBufferPointer { qp in
                if let (rows, columns) = runs.lastAxisChannels {
                    let sc = scale.map(Double.init), b = bias.map(Double.init)
                    for r in 0..<rows {
                        let row = r * columns
                        for c in 0..<columns { o[row + c] = Float(sc[c] * Double(qp[row + c]) + b[c]) }
                    }
                } else {
                    runs.forEach { range, s in
                        let sc = Double(scale[s]), b = Double(bias[s])
                        for i in range { o[i] = Float(sc * Double(qp[i]) + b) }
                    }
                }
            }
            initialized = q.count
        }
        return Tensor(out, shape: shape)
    }
}

/// The elements of a weight grouped into contiguous runs that share one
/// scale block: trailing axes whose block covers the whole dimension form
/// the run, and the first axis before them contributes its block length.
/// Per-channel scales of a [O, I, kh, kw] weight are O runs of I·kh·kw.
public struct BlockRuns: Sendable {
    public let shape: [Int], blockShape: [Int], scaleStrides: [Int]
    /// Number of scale blocks.
    public let blocks: Int
    /// Elements per step along `axis` (the product of the shared trailing dims).
    @usableFromInline let inner: Int
    /// The last axis that is split into blocks, or −1 when every axis is shared.
    @usableFromInline let axis: Int

    public init(shape: [Int], blockShape: [Int]) {
        self.shape = shape; self.blockShape = blockShape
        let scaleShape = zip(shape, blockShape).map { d, b in d == 0 ? 0 : (d + b - 1) / b }
        scaleStrides = stridesOf(scaleShape)
        blocks = shape.isEmpty ? 1 : scaleShape.reduce(1, *)
        var t = shape.count, l = 1
        while t > 0 && blockShape[t - 1] >= shape[t - 1] { l *= shape[t - 1]; t -= 1 }
        inner = l
        axis = t - 1
    }

    /// One scale per index of the last axis and none along the others (per-channel
    /// scales of a [in, out] MatMul weight): every run is a single element, element
    /// `r × columns + c` has scale `c`. Loops over rows and columns beat `forEach` there.
    public var lastAxisChannels: (rows: Int, columns: Int)? {
        guard let last = shape.indices.last, axis == last, blockShape[last] == 1, inner == 1,
              shape.indices.dropLast().allSatisfy({ blockShape[$0] >= shape[$0] }) else { return nil }
        let columns = shape[last]
        guard columns > 0 else { return nil }
        return (shape.reduce(1, *) / columns, columns)
    }

    /// Calls `body(elementRange, scaleIndex)` for every run, in element order.
    /// Inlinable: per-channel scales on the last axis make runs of one element,
    /// so the body is best compiled into the loop (large weights go through here).
    @inlinable
    public func forEach(_ body: (Range<Int>, Int) -> Void) {
        let n = shape.reduce(1, *)
        guard n > 0 else { return }
        guard axis >= 0 else { body(0..<n, 0); return }
        let dim = shape[axis], b = blockShape[axis], step = scaleStrides[axis]
        let outerAxes = axis  // axes 0..<axis are walked with an odometer
        var idx = [Int](repeating: 0, count: outerAxes)
        var base = 0
        while true {
            var sBase = 0
            for k in 0..<outerAxes { sBase += (idx[k] / blockShape[k]) * scaleStrides[k] }
            var c = 0, s = sBase  // s: the scale of the run starting at c, sBase + (c / b) × step
            while c < dim {
                let c1 = min(dim, c + b)
                body(base + c * inner..<base + c1 * inner, s)
                c = c1
                s += step
            }
            base += dim * inner
            var k = outerAxes - 1
            while k >= 0 {
                idx[k] += 1
                if idx[k] < shape[k] { break }
                idx[k] = 0
                k -= 1
            }
            if k < 0 { return }
        }
    }
}

/// Palettization: `w[i] = lut[g(i)][indices[i]]` with
/// `g(i) = (index of i along axis) / groupSize`: one table per group of
/// `groupSize` consecutive slices along `axis` (the output-channel axis); one
/// table for the whole tensor when `groupSize` covers the axis. Every table
/// has exactly 2^bits entries.
public struct PaletteWeights: Sendable, Equatable {
    public let shape: [Int]
    /// 1...8.
    public let bits: Int
    public let indices: [UInt8]
    public let lut: [[Float]]
    /// The axis groups are taken along (0 for a rank-0 weight).
    public let axis: Int
    /// Slices per group along `axis`.
    public let groupSize: Int

    public init(shape: [Int], bits: Int, indices: [UInt8], lut: [[Float]], axis: Int, groupSize: Int) throws(WeightLayoutError) {
        guard (1...8).contains(bits) else { throw WeightLayoutError("palette bits \(bits) outside 1...8") }
        let n = try elementCount(shape)
        guard indices.count == n else { throw WeightLayoutError("\(indices.count) indices for shape \(shape) (\(n) elements)") }
        guard axis >= 0, axis < max(shape.count, 1) else { throw WeightLayoutError("palette axis \(axis) outside rank \(shape.count)") }
        guard groupSize >= 1 else { throw WeightLayoutError("palette group size \(groupSize) below 1") }
        let dim = shape.isEmpty ? 1 : shape[axis]
        let groups = max(1, (dim + groupSize - 1) / groupSize)
        guard lut.count == groups else {
            throw WeightLayoutError("\(lut.count) lookup tables for \(groups) groups of \(groupSize) along axis \(axis) (shape \(shape))")
        }
        let entries = 1 << bits
        for (g, table) in lut.enumerated() {
            guard table.count == entries else { throw WeightLayoutError("lookup table \(g) has \(table.count) entries, \(bits) bits need \(entries)") }
            if let bad = table.firstIndex(where: { !$0.isFinite }) { throw WeightLayoutError("lookup table \(g) entry \(bad) is \(table[bad])") }
        }
        if let bad = indices.firstIndex(where: { Int($0) >= entries }) {
            throw WeightLayoutError("index \(indices[bad]) at element \(bad) does not fit \(bits) bits")
        }
        self.shape = shape; self.bits = bits; self.indices = indices; self.lut = lut
        self.axis = axis; self.groupSize = groupSize
    }

    /// Packed indices and fp32 tables.
    public var storageBytes: Int { (indices.count * bits + 7) / 8 + lut.count * (1 << bits) * 4 }

    public func decoded() -> Tensor {
        var out = [Float](repeating: 0, count: indices.count)
        let dim = shape.isEmpty ? 1 : shape[axis]
        let inner = shape.isEmpty ? 1 : shape[(axis + 1)...].reduce(1, *)
        let outer = shape.isEmpty ? 1 : shape[..<axis].reduce(1, *)
        var i = 0
        for _ in 0..<outer {
            for c in 0..<dim {
                let table = lut[c / groupSize]
                for _ in 0..<inner {
                    out[i] = table[Int(indices[i])]
                    i += 1
                }
            }
        }
        return Tensor(out, shape: shape)
    }
}

// MARK: - transposing an encoding

/// Row-major elements of `shape` reordered as `transpose(perm)` would:
/// output axis k is input axis `perm[k]`.
func permuted<T>(_ a: [T], shape: [Int], perm: [Int]) -> [T] {
    let n = a.count
    guard n > 1, shape.count > 1 else { return a }
    if shape.count == 2, perm == [1, 0] { return transposed2D(a, rows: shape[0], columns: shape[1]) }
    let inStrides = stridesOf(shape)
    let outShape = perm.map { shape[$0] }
    let strides = perm.map { inStrides[$0] }  // input stride of each output axis
    var out: [T] = []
    out.reserveCapacity(n)
    var idx = [Int](repeating: 0, count: outShape.count)
    var src = 0
    for _ in 0..<n {
        out.append(a[src])
        var k = outShape.count - 1
        while k >= 0 {
            idx[k] += 1
            src += strides[k]
            if idx[k] < outShape[k] { break }
            src -= strides[k] * outShape[k]
            idx[k] = 0
            k -= 1
        }
    }
    return out
}

/// A [rows, columns] matrix (n = rows × columns elements) as [columns, rows],
/// in 32 × 32 tiles so both sides stay in cache (large weights go through here).
func transposed2D<T>(_ a: [T], rows: Int, columns: Int) -> [T] {
    precondition(rows * columns == a.count, "transpose of \(a.count) elements as [\(rows), \(columns)]")
    let tile = 32
    return [T](unsafeUninitializedCapacity: a.count) { out, initialized in
        a.withUnsafeBufferPointer { src in
            guard let s = src.baseAddress, let d = out.baseAddress else { return }
            for r0 in stride(from: 0, to: rows, by: tile) {
                let r1 = min(r0 + tile, rows)
                for c0 in stride(from: 0, to: columns, by: tile) {
                    for c in c0..<min(c0 + tile, columns) {
                        for r in r0..<r1 { (d + c * rows + r).initialize(to: s[r * columns + c]) }
                    }
                }
            }
        }
        initialized = a.count
    }
}

extension WeightEncoding {
    /// The same weight transposed (output axis k = input axis `perm[k]`),
    /// keeping its encoding: codes, indices and scales move, nothing is
    /// re-quantized, so the decoded values are exactly the transposed ones.
    /// Exporters use it when a format lays a weight out differently
    /// (Core ML's innerProduct wants [out, in]; TFLite wants OHWI).
    public func transposed(_ perm: [Int]) throws(WeightLayoutError) -> WeightEncoding {
        let shape = self.shape
        guard perm.count == shape.count, Set(perm) == Set(0..<shape.count) else {
            throw WeightLayoutError("permutation \(perm) does not fit rank \(shape.count)")
        }
        let newShape = perm.map { shape[$0] }
        switch self {
        case .dense(let t):
            switch t.storage {
            case .float(let a): return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: .float(permuted(a, shape: shape, perm: perm))))
            case .int(let a): return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: .int(permuted(a, shape: shape, perm: perm))))
            case .bool(let a): return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: .bool(permuted(a, shape: shape, perm: perm))))
            }
        case .float16(let h):
            return .float16(try Float16Weights(shape: newShape, bits: permuted(h.bits, shape: shape, perm: perm)))
        case .affine(let a):
            return .affine(try AffineWeights(
                shape: newShape, bits: a.bits, signed: a.signed, q: permuted(a.q, shape: shape, perm: perm),
                blockShape: perm.map { a.blockShape[$0] },
                scale: permuted(a.scale, shape: a.scaleShape, perm: perm), bias: permuted(a.bias, shape: a.scaleShape, perm: perm)))
        case .palette(let p):
            let axis = shape.isEmpty ? 0 : (perm.firstIndex(of: p.axis) ?? 0)
            return .palette(try PaletteWeights(shape: newShape, bits: p.bits, indices: permuted(p.indices, shape: shape, perm: perm),
                                               lut: p.lut, axis: axis, groupSize: p.groupSize))
        }
    }
}

extension WeightEncoding {
    /// The same weight with another shape of the same element count, elements
    /// in the same (row-major) order. Encodings stay as they are; scales or
    /// tables that vary along an axis need that axis to survive as one axis
    /// of the new shape with the same elements on either side (e.g. [1, C, 1, 1]
    /// ↔ [C] ↔ [C, 1, 1]); otherwise the reshape is refused.
    public func reshaped(_ newShape: [Int]) throws(WeightLayoutError) -> WeightEncoding {
        let shape = self.shape
        // Dropping leading axes of size 1 keeps any encoding as it is (scales and tables move with their axes).
        if shape.count > newShape.count, shape.prefix(shape.count - newShape.count).allSatisfy({ $0 == 1 }),
           Array(shape.suffix(newShape.count)) == newShape {
            return try droppingLeadingAxes(shape.count - newShape.count)
        }
        guard let n = checkedElementCount(newShape), n == count else {
            throw WeightLayoutError("cannot reshape \(shape) to \(newShape)")
        }
        /// The axis of `newShape` that plays the role of `axis` in `shape`.
        func mapAxis(_ axis: Int) -> Int? {
            let outer = shape[..<axis].reduce(1, *), inner = shape[(axis + 1)...].reduce(1, *)
            for b in newShape.indices where newShape[b] == shape[axis]
                && newShape[..<b].reduce(1, *) == outer && newShape[(b + 1)...].reduce(1, *) == inner { return b }
            return nil
        }
        switch self {
        case .dense(let t):
            return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: t.storage))
        case .float16(let h):
            return .float16(try Float16Weights(shape: newShape, bits: h.bits))
        case .affine(let a):
            let varying = shape.indices.filter { a.blockShape[$0] < shape[$0] }
            var blockShape = newShape.map { max($0, 1) }
            if varying.count == 1, let b = mapAxis(varying[0]) {
                blockShape[b] = a.blockShape[varying[0]]
            } else if !varying.isEmpty {
                throw WeightLayoutError("scales vary along axes \(varying) of \(shape); cannot reshape to \(newShape)")
            }
            return .affine(try AffineWeights(shape: newShape, bits: a.bits, signed: a.signed, q: a.q, blockShape: blockShape,
                                             scale: a.scale, bias: a.bias))
        case .palette(let p):
            if p.lut.count == 1 {
                return .palette(try PaletteWeights(shape: newShape, bits: p.bits, indices: p.indices, lut: p.lut, axis: 0,
                                                   groupSize: max(newShape.first ?? 1, 1)))
            }
            guard let b = mapAxis(p.axis) else {
                throw WeightLayoutError("lookup tables vary along axis \(p.axis) of \(shape); cannot reshape to \(newShape)")
            }
            return .palette(try PaletteWeights(shape: newShape, bits: p.bits, indices: p.indices, lut: p.lut, axis: b,
                                               groupSize: p.groupSize))
        }
    }
}

extension AffineWeights {
    /// The block shape of ONNX DequantizeLinear's scales (opset 21 rules):
    /// one scale (per tensor), a 1-D scale per index of `axis` (per axis), or
    /// with `blockSize` > 0 a scale of x's rank whose `axis` has
    /// ceil(d / blockSize) entries (per block). `axis` may be negative.
    public static func dequantizeLinearBlockShape(x: [Int], scale: [Int], axis: Int, blockSize: Int) throws(WeightLayoutError) -> [Int] {
        let rank = x.count
        let a = axis < 0 ? axis + rank : axis
        var block = x.map { max($0, 1) }
        let count = scale.reduce(1, *)
        if blockSize == 0 && count == 1 && scale.count <= 1 { return block }
        guard (0..<max(rank, 1)).contains(a), rank > 0 else {
            throw WeightLayoutError("axis \(axis) is outside x's rank \(rank)")
        }
        if blockSize == 0 {
            guard scale.count == 1, count == x[a] else {
                throw WeightLayoutError("scale of shape \(scale) fits neither one scale nor one per index of axis \(axis) of x \(x)")
            }
            block[a] = 1
            return block
        }
        guard blockSize > 0, scale.count == rank else {
            throw WeightLayoutError("block_size \(blockSize) needs a scale of x's rank \(rank), got shape \(scale)")
        }
        for k in 0..<rank {
            let want = k == a ? (x[k] + blockSize - 1) / blockSize : x[k]
            guard scale[k] == want else {
                throw WeightLayoutError("scale of shape \(scale) does not fit blocks of \(blockSize) along axis \(axis) of x \(x)")
            }
            block[k] = k == a ? blockSize : 1
        }
        return block
    }
}

extension WeightEncoding {
    /// The same weight without its first `k` axes, all of size 1.
    func droppingLeadingAxes(_ k: Int) throws(WeightLayoutError) -> WeightEncoding {
        let newShape = Array(shape.dropFirst(k))
        switch self {
        case .dense(let t): return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: t.storage))
        case .float16(let h): return .float16(try Float16Weights(shape: newShape, bits: h.bits))
        case .affine(let a):
            return .affine(try AffineWeights(shape: newShape, bits: a.bits, signed: a.signed, q: a.q, blockShape: Array(a.blockShape.dropFirst(k)),
                                             scale: a.scale, bias: a.bias))
        case .palette(let p):
            // Tables along a dropped axis (size 1) are one table: along the new first axis, one group.
            let axis = p.axis >= k ? p.axis - k : 0
            let group = p.axis >= k ? p.groupSize : max(newShape.first ?? 1, 1)
            return .palette(try PaletteWeights(shape: newShape, bits: p.bits, indices: p.indices, lut: p.lut, axis: axis, groupSize: group))
        }
    }
}
