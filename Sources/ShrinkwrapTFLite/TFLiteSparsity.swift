import FlatBuffers
import ShrinkwrapIR

/// Sparse constants (Tensor.sparsity, SparsityParameters in Schemas/tflite/tflite.fbs) and their
/// densification at import: a DENSIFY of a sparse constant becomes the dense constant.
///
/// Layout (TFLite's sparsity format): the tensor's `rank` dimensions, some of them split into
/// blocks (`block_map` names them; each adds one inner "block" dimension), are visited in
/// `traversal_order`; `dim_metadata` describes each visited level in that order. A DENSE level
/// holds every index below `dense_size`; a SPARSE_CSR level holds, for each position of the level
/// above, the indices `array_indices[array_segments[p] ..< array_segments[p + 1]]`. The buffer holds
/// one value per position of the last level, in visiting order. Everything is checked before a
/// byte is written; the dense size is capped relative to the file (see `TFLiteContext.denseBytes`).
extension TFLiteModel {
    struct Sparsity {
        struct Level {
            var sparse: Bool
            var denseSize: Int
            var segments: [Int]
            var indices: [Int]
        }

        var traversalOrder: [Int]
        var blockMap: [Int]
        var levels: [Level]

        /// Deeper nesting than any real sparse tensor (rank plus block dimensions); bounds the recursion.
        static let maxLevels = 16

        init(table: Table, rank: Int, place: String, _ r: FieldReader) throws {
            traversalOrder = try r.wrap(place) { (try table.scalars(0, as: Int32.self) ?? []).map(Int.init) }
            blockMap = try r.wrap(place) { (try table.scalars(1, as: Int32.self) ?? []).map(Int.init) }
            let dims = try r.wrap(place) { try table.tables(2) ?? [] }
            var levels: [Level] = []
            for (k, d) in dims.enumerated() {
                let here = "\(place).dim_metadata[\(k)]"
                let format = try r.wrap(here) { try d.scalar(0, default: Int8(0)) }
                guard format == 0 || format == 1 else {
                    throw ImportError.malformed(r.loc(here), reason: "format \(format) is neither DENSE (0) nor SPARSE_CSR (1)")
                }
                let size = Int(try r.wrap(here) { try d.scalar(1, default: Int32(0)) })
                let sparse = format == 1
                let segments = sparse ? try Self.indexVector(d, 3, here + ".array_segments", r) : []
                let indices = sparse ? try Self.indexVector(d, 5, here + ".array_indices", r) : []
                levels.append(Level(sparse: sparse, denseSize: size, segments: segments, indices: indices))
            }
            self.levels = levels
            if let problem = Self.structureProblem(traversal: traversalOrder, blockMap: blockMap, levels: levels.count, rank: rank) {
                throw ImportError.malformed(r.loc(place), reason: problem)
            }
        }

        /// A SparseIndexVector union (Int32Vector 1, Uint16Vector 2, Uint8Vector 3) as Ints.
        private static func indexVector(_ d: Table, _ id: Int, _ place: String, _ r: FieldReader) throws -> [Int] {
            guard let u = try r.wrap(place, { try d.union(id) }) else {
                throw ImportError.malformed(r.loc(place), reason: "missing on a SPARSE_CSR dimension")
            }
            guard let t = u.table else { throw ImportError.malformed(r.loc(place), reason: "vector type \(u.type) with no vector") }
            switch u.type {
            case 1: return try r.wrap(place) { (try t.scalars(0, as: Int32.self) ?? []).map(Int.init) }
            case 2: return try r.wrap(place) { (try t.scalars(0, as: UInt16.self) ?? []).map(Int.init) }
            case 3: return try r.wrap(place) { (try t.bytes(0) ?? []).map(Int.init) }
            default: throw ImportError.malformed(r.loc(place), reason: "unknown SparseIndexVector type \(u.type)")
            }
        }

        /// Why the traversal order / block map / level count cannot describe a rank-`rank` tensor, or nil.
        static func structureProblem(traversal: [Int], blockMap: [Int], levels: Int, rank: Int) -> String? {
            let total = rank + blockMap.count
            guard traversal.count == total, levels == total else {
                return "traversal_order has \(traversal.count) entries and dim_metadata \(levels); rank \(rank) with \(blockMap.count) block dimensions needs \(total)"
            }
            guard total <= maxLevels else { return "\(total) dimensions (at most \(maxLevels) are read)" }
            guard Array(traversal.prefix(rank)).sorted() == Array(0..<rank), Array(traversal.dropFirst(rank)).sorted() == Array(rank..<total) else {
                return "traversal_order \(traversal) is not the \(rank) dimensions then the \(blockMap.count) block dimensions, each once"
            }
            guard blockMap.allSatisfy({ $0 >= 0 && $0 < rank }), zip(blockMap, blockMap.dropFirst()).allSatisfy({ $0 < $1 }) else {
                return "block_map \(blockMap) does not name increasing dimensions below \(rank)"
            }
            return nil
        }

        struct Problem: Error { var reason: String }

        /// The dense bytes (row-major over `shape`, zeros where nothing is stored) of the `width`-byte values in `values`.
        /// Throws `Problem` when the metadata does not describe `shape`, when a stored index is out of range, when the
        /// value count differs from the positions, or when the dense tensor would exceed `maxBytes`.
        func densify(_ values: ArraySlice<UInt8>, shape: [Int], width: Int, maxBytes: Int) throws -> [UInt8] {
            let rank = shape.count
            var count = 1
            for d in shape {
                let (m, o) = count.multipliedReportingOverflow(by: d)
                guard !o else { throw Problem(reason: "dense shape \(shape) overflows") }
                count = m
            }
            let (bytes, o) = count.multipliedReportingOverflow(by: width)
            guard !o, bytes <= maxBytes else {
                throw Problem(reason: "dense shape \(shape) would take \(o ? "too many" : String(bytes)) bytes, over the \(maxBytes)-byte limit for a sparse constant in this file")
            }
            // Block sizes (each block dimension's level must be DENSE) and each level's extent.
            var blockSize = [Int](repeating: 1, count: blockMap.count)
            for (l, t) in traversalOrder.enumerated() where t >= rank {
                guard !levels[l].sparse, levels[l].denseSize > 0 else {
                    throw Problem(reason: "block dimension \(t) (dim_metadata[\(l)]) is not DENSE with a positive dense_size")
                }
                blockSize[t - rank] = levels[l].denseSize
            }
            var blocked = shape
            for (b, d) in blockMap.enumerated() {
                guard shape[d] % blockSize[b] == 0 else { throw Problem(reason: "block size \(blockSize[b]) does not divide dimension \(d) of \(shape)") }
                blocked[d] = shape[d] / blockSize[b]
            }
            let extent = traversalOrder.map { $0 < rank ? blocked[$0] : blockSize[$0 - rank] }
            let positions = try checkLevels(extent: extent)
            guard positions.multipliedReportingOverflow(by: width) == (values.count, false) else {
                throw Problem(reason: "the metadata stores \(positions) values of \(width) bytes, but the buffer holds \(values.count) bytes")
            }
            var strides = [Int](repeating: 1, count: rank)
            for d in stride(from: rank - 2, through: 0, by: -1) { strides[d] = strides[d + 1] * shape[d + 1] }
            var walk = Walk(sparsity: self, extent: extent, blockSize: blockSize, strides: strides, count: count, width: width,
                            values: values, out: [UInt8](repeating: 0, count: bytes))
            var coords = [Int](repeating: 0, count: levels.count)
            try walk.visit(level: 0, parent: 0, coords: &coords)
            return walk.out
        }

        /// Checks every level against its extent; returns the number of positions of the last level (= values stored).
        private func checkLevels(extent: [Int]) throws -> Int {
            var parents = 1
            for (l, level) in levels.enumerated() {
                let size = extent[l]
                if !level.sparse {
                    guard level.denseSize == size else {
                        throw Problem(reason: "dim_metadata[\(l)] is DENSE with dense_size \(level.denseSize), but the dimension it visits has \(size)")
                    }
                    let (p, o) = parents.multipliedReportingOverflow(by: size)
                    guard !o else { throw Problem(reason: "dim_metadata[\(l)]: too many positions") }
                    parents = p
                    continue
                }
                let s = level.segments
                guard s.count == parents + 1, s.first == 0, zip(s, s.dropFirst()).allSatisfy({ $0 <= $1 }), let last = s.last,
                      last <= level.indices.count else {
                    throw Problem(reason: "dim_metadata[\(l)]: array_segments (\(s.count) entries) are not \(parents + 1) non-decreasing offsets from 0 into the \(level.indices.count) array_indices")
                }
                if let bad = level.indices.prefix(last).first(where: { $0 < 0 || $0 >= size }) {
                    throw Problem(reason: "dim_metadata[\(l)]: array index \(bad) is outside the dimension's \(size) entries")
                }
                parents = last
            }
            return parents
        }
    }

    /// The depth-first visit that places each stored value at its dense offset.
    private struct Walk {
        let sparsity: Sparsity
        let extent: [Int], blockSize: [Int], strides: [Int]
        let count: Int, width: Int
        let values: ArraySlice<UInt8>
        var out: [UInt8]
        var next = 0
        /// The dense index being assembled (reused for every value).
        var index: [Int]

        init(sparsity: Sparsity, extent: [Int], blockSize: [Int], strides: [Int], count: Int, width: Int, values: ArraySlice<UInt8>, out: [UInt8]) {
            self.sparsity = sparsity; self.extent = extent; self.blockSize = blockSize; self.strides = strides
            self.count = count; self.width = width; self.values = values; self.out = out
            index = [Int](repeating: 0, count: strides.count)
        }

        mutating func visit(level: Int, parent: Int, coords: inout [Int]) throws {
            if level == sparsity.levels.count { return try place(coords) }
            let l = sparsity.levels[level]
            if l.sparse {
                for j in l.segments[parent]..<l.segments[parent + 1] {
                    coords[level] = l.indices[j]
                    try visit(level: level + 1, parent: j, coords: &coords)
                }
            } else {
                for i in 0..<extent[level] {
                    coords[level] = i
                    try visit(level: level + 1, parent: parent * extent[level] + i, coords: &coords)
                }
            }
        }

        private mutating func place(_ coords: [Int]) throws {
            let rank = strides.count
            for (l, t) in sparsity.traversalOrder.enumerated() {
                if t < rank {
                    index[t] = coords[l]
                } else {
                    let d = sparsity.blockMap[t - rank]
                    index[d] = index[d] * blockSize[t - rank] + coords[l]
                }
            }
            let flat = zip(index, strides).reduce(0) { $0 + $1.0 * $1.1 }
            guard flat >= 0, flat < count, next * width + width <= values.count else {
                throw Sparsity.Problem(reason: "value \(next) lands outside the dense tensor")
            }
            let src = values.startIndex + next * width
            for b in 0..<width { out[flat * width + b] = values[src + b] }
            next += 1
        }
    }
}

extension TFLiteContext {
    /// A dense tensor may be this many times the file's size (at least `minimumDenseLimit`): sparse weights
    /// in real models are a few times smaller than dense, and hostile metadata must not size an allocation.
    static let denseLimitFactor = 64
    static let minimumDenseLimit = 1 << 20

    /// Tensor `i`'s buffer bytes, densified when the tensor is sparse.
    func denseBytes(_ i: Int, width: Int) throws -> ArraySlice<UInt8> {
        let t = model.tensors[i]
        let data = model.buffers[t.buffer]
        guard let sparsity = t.sparsity else { return data }
        let (limit, o) = model.bytes.count.multipliedReportingOverflow(by: Self.denseLimitFactor)
        do {
            return ArraySlice(try sparsity.densify(data, shape: t.shape, width: width, maxBytes: o ? Int.max : max(limit, Self.minimumDenseLimit)))
        } catch let p as TFLiteModel.Sparsity.Problem {
            throw ImportError.badTensor(loc(tensor: i), reason: "sparse constant: \(p.reason)")
        }
    }

    /// DENSIFY of a sparse constant: its output is the (already dense) constant. Returns the folded ops.
    mutating func foldDensify() throws -> Set<Int> {
        var folded = Set<Int>()
        for op in model.ops where op.name == "DENSIFY" {
            guard let x = op.inputs.first, x >= 0, let out = op.outputs.first, let e = constantEncoding(x) else {
                throw ImportError.unsupported(loc(op), what: "DENSIFY of a value computed at run time (only sparse constants are densified)")
            }
            constantTensors[out] = e
            folded.insert(op.index)
        }
        return folded
    }
}
