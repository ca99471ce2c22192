// Cutting a weight into rows of axis 0 and stacking rows back, encodings kept
// (the gates of recurrent weights).

extension WeightEncoding {
    /// Rows `range` of axis 0 (one gate of a stacked recurrent weight, one
    /// direction's slice), keeping the encoding: codes and indices are cut,
    /// scales and tables that vary along axis 0 are cut with them. Blocks or
    /// groups along axis 0 must not straddle the cut.
    public func rows(_ range: Range<Int>) throws(WeightLayoutError) -> WeightEncoding {
        let shape = self.shape
        guard let d0 = shape.first, range.lowerBound >= 0, range.upperBound <= d0 else {
            throw WeightLayoutError("rows \(range) outside shape \(shape)")
        }
        let inner = shape.dropFirst().reduce(1, *)
        let elements = (range.lowerBound * inner)..<(range.upperBound * inner)
        var newShape = shape
        newShape[0] = range.count
        /// The runs of `size`-row blocks along axis 0 that `range` covers, or nil when a block straddles its ends.
        func blockRange(_ size: Int) -> Range<Int>? {
            guard range.lowerBound % size == 0, range.upperBound % size == 0 || range.upperBound == d0 else { return nil }
            return (range.lowerBound / size)..<((range.upperBound + size - 1) / size)
        }
        switch self {
        case .dense(let t):
            switch t.storage {
            case .float(let a): return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: .float(Array(a[elements]))))
            case .int(let a): return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: .int(Array(a[elements]))))
            case .bool(let a): return .dense(Tensor(dtype: t.dtype, shape: newShape, storage: .bool(Array(a[elements]))))
            }
        case .float16(let h):
            return .float16(try Float16Weights(shape: newShape, bits: Array(h.bits[elements])))
        case .affine(let a):
            var blockShape = a.blockShape
            var scale = a.scale, bias = a.bias
            if a.blockShape[0] >= d0 {
                blockShape[0] = max(range.count, 1)
            } else {
                guard let blocks = blockRange(a.blockShape[0]) else {
                    throw WeightLayoutError("rows \(range) cut through blocks of \(a.blockShape[0]) rows")
                }
                let per = a.scaleShape.dropFirst().reduce(1, *)
                scale = Array(a.scale[(blocks.lowerBound * per)..<(blocks.upperBound * per)])
                bias = Array(a.bias[(blocks.lowerBound * per)..<(blocks.upperBound * per)])
            }
            return .affine(try AffineWeights(shape: newShape, bits: a.bits, signed: a.signed, q: Array(a.q[elements]),
                                             blockShape: blockShape, scale: scale, bias: bias))
        case .palette(let p):
            var lut = p.lut, groupSize = p.groupSize
            if p.axis == 0 {
                if p.lut.count == 1 {
                    groupSize = max(range.count, 1)
                } else {
                    guard let groups = blockRange(p.groupSize) else {
                        throw WeightLayoutError("rows \(range) cut through groups of \(p.groupSize) rows")
                    }
                    lut = Array(p.lut[groups])
                }
            }
            return .palette(try PaletteWeights(shape: newShape, bits: p.bits, indices: Array(p.indices[elements]), lut: lut,
                                               axis: p.axis, groupSize: groupSize))
        }
    }
}

extension WeightEncoding {
    /// Encodings stacked along axis 0 (the inverse of `rows`: gates of a
    /// recurrent weight put back in another order), keeping the encoding:
    /// the parts must share kind, width and the other axes, and their scales
    /// or tables along axis 0 must come in blocks of one size (a part in one
    /// block counts as a block of its rows). Parts with one identical scale
    /// set or table stack into one.
    public static func stackingRows(_ parts: [WeightEncoding]) throws(WeightLayoutError) -> WeightEncoding {
        guard let first = parts.first, !first.shape.isEmpty else { throw WeightLayoutError("nothing to stack") }
        let tail = Array(first.shape.dropFirst())
        guard parts.allSatisfy({ $0.shape.count == first.shape.count && Array($0.shape.dropFirst()) == tail }) else {
            throw WeightLayoutError("parts of different shapes \(parts.map(\.shape))")
        }
        var shape = first.shape
        shape[0] = parts.reduce(0) { $0 + $1.shape[0] }
        /// The common block length along axis 0 (nil: none), given each part's.
        func commonBlock(_ blocks: [Int], rows: [Int]) -> Int? {
            let sizes = zip(blocks, rows).map { b, r in b >= r ? r : b }
            guard let b = sizes.first, sizes.allSatisfy({ $0 == b }), zip(blocks, rows).allSatisfy({ $0 >= $1 || $1 % $0 == 0 || $0 == b }) else { return nil }
            return b
        }
        let rows = parts.map { $0.shape[0] }
        switch first {
        case .dense(let t):
            var floats: [Float] = [], ints: [Int64] = [], bools: [Bool] = []
            for p in parts {
                guard case .dense(let u) = p, u.dtype == t.dtype else { throw WeightLayoutError("parts of different encodings") }
                switch u.storage {
                case .float(let a): floats += a
                case .int(let a): ints += a
                case .bool(let a): bools += a
                }
            }
            switch t.storage {
            case .float: return .dense(Tensor(dtype: t.dtype, shape: shape, storage: .float(floats)))
            case .int: return .dense(Tensor(dtype: t.dtype, shape: shape, storage: .int(ints)))
            case .bool: return .dense(Tensor(dtype: t.dtype, shape: shape, storage: .bool(bools)))
            }
        case .float16:
            var bits: [UInt16] = []
            for p in parts {
                guard case .float16(let h) = p else { throw WeightLayoutError("parts of different encodings") }
                bits += h.bits
            }
            return .float16(try Float16Weights(shape: shape, bits: bits))
        case .affine(let a0):
            var all: [AffineWeights] = []
            for p in parts {
                guard case .affine(let a) = p, a.bits == a0.bits, a.signed == a0.signed, Array(a.blockShape.dropFirst()) == Array(a0.blockShape.dropFirst()) else {
                    throw WeightLayoutError("parts of different encodings")
                }
                all.append(a)
            }
            var blockShape = a0.blockShape
            if all.allSatisfy({ $0.blockShape[0] >= $0.shape[0] && $0.scale == a0.scale && $0.bias == a0.bias }) {
                blockShape[0] = max(shape[0], 1)  // one scale set for all: as before the cut
                return .affine(try AffineWeights(shape: shape, bits: a0.bits, signed: a0.signed, q: all.flatMap(\.q), blockShape: blockShape,
                                                 scale: a0.scale, bias: a0.bias))
            }
            guard let b = commonBlock(all.map { $0.blockShape[0] }, rows: rows) else { throw WeightLayoutError("parts with scales in blocks of different sizes") }
            blockShape[0] = b
            return .affine(try AffineWeights(shape: shape, bits: a0.bits, signed: a0.signed, q: all.flatMap(\.q), blockShape: blockShape,
                                             scale: all.flatMap(\.scale), bias: all.flatMap(\.bias)))
        case .palette(let p0):
            var all: [PaletteWeights] = []
            for p in parts {
                guard case .palette(let q) = p, q.bits == p0.bits, q.axis == p0.axis else { throw WeightLayoutError("parts of different encodings") }
                all.append(q)
            }
            if all.allSatisfy({ $0.lut == p0.lut && ($0.axis != 0 || $0.lut.count == 1) }) {
                let group = p0.axis == 0 ? max(shape[0], 1) : p0.groupSize
                return .palette(try PaletteWeights(shape: shape, bits: p0.bits, indices: all.flatMap(\.indices), lut: p0.lut, axis: p0.axis, groupSize: group))
            }
            guard p0.axis == 0, let g = commonBlock(all.map(\.groupSize), rows: rows) else { throw WeightLayoutError("parts with different lookup tables") }
            return .palette(try PaletteWeights(shape: shape, bits: p0.bits, indices: all.flatMap(\.indices), lut: all.flatMap(\.lut), axis: 0, groupSize: g))
        }
    }
}
