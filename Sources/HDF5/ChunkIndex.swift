/// Where a chunked dataset's chunks are: the chunk grid, and the index walkers
/// that list every allocated chunk (v1 B-tree, single chunk, implicit, v2
/// B-tree here; fixed and extensible arrays in their own files).

/// One stored chunk: its position in the chunk grid, where its bytes are, how many, and which
/// filters were skipped.
struct ChunkRef {
    let coords: [Int]
    let position: Int
    let size: Int
    let filterMask: UInt32
}

/// The dataset's chunk grid.
struct ChunkGrid {
    let dims: [Int]
    let chunk: [Int]
    /// Chunks per dimension now, and at the maximum extent (nil: unlimited).
    let counts: [Int]
    let maxCounts: [Int?]
    let elementSize: Int
    let chunkBytes: Int
    /// Chunks in the grid now.
    let total: Int

    init(space: Dataspace, layout: Layout.Chunking, elementSize: Int, file: FileData, at: Int, context: String) throws {
        func fail(_ r: String) -> HDF5Error { file.error(at, context, r) }
        guard space.kind == .simple else { throw fail("a chunked dataset needs a simple dataspace") }
        guard layout.dims.count == space.dims.count else {
            throw fail("chunks have \(layout.dims.count) dimensions, the dataspace \(space.dims.count)")
        }
        guard layout.dims.allSatisfy({ $0 > 0 }) else { throw fail("chunk dimensions \(layout.dims) include 0") }
        guard elementSize > 0 else { throw fail("chunked storage of 0-byte elements") }
        guard layout.elementSize == elementSize else {
            throw fail("layout element size \(layout.elementSize) differs from the datatype's \(elementSize) bytes")
        }
        dims = space.dims
        chunk = layout.dims
        self.elementSize = elementSize
        counts = zip(dims, chunk).map { d, c in d / c + (d % c == 0 ? 0 : 1) }
        maxCounts = zip(space.maxDims, chunk).map { m, c in m.map { $0 / c + ($0 % c == 0 ? 0 : 1) } }
        guard let n = Checked.product(counts), let elements = Checked.product(chunk),
              let bytes = Checked.mul(elements, elementSize), bytes <= file.limit else {
            throw fail("chunks of \(layout.dims) × \(elementSize) bytes exceed the limit of \(file.limit) bytes")
        }
        total = n
        chunkBytes = bytes
        for (d, m) in zip(dims, space.maxDims) where m.map({ $0 < d }) ?? false {
            throw fail("dimension \(d) exceeds its maximum \(m ?? 0)")
        }
    }

    /// The chunk grid at the maximum extent, row-major; nil when a dimension is unlimited.
    var maxTotal: Int? {
        let fixed = maxCounts.compactMap { $0 }
        guard fixed.count == maxCounts.count else { return nil }
        return Checked.product(fixed)
    }

    /// Coordinates of linear index `index` in a row-major grid whose dimensions after the first are
    /// `inner` (the first may be unbounded).
    static func coords(_ index: Int, inner: [Int]) -> [Int] {
        var out = [Int](repeating: 0, count: inner.count + 1)
        var rest = index
        for d in stride(from: inner.count - 1, through: 0, by: -1) {
            let n = max(inner[d], 1)
            out[d + 1] = rest % n
            rest /= n
        }
        out[0] = rest
        return out
    }

    func inside(_ coords: [Int]) -> Bool { zip(coords, counts).allSatisfy { $0 >= 0 && $0 < $1 } }

    /// Row-major linear index of in-grid coordinates (for duplicate detection).
    func linear(_ coords: [Int]) -> Int { zip(coords, counts).reduce(0) { $0 * $1.1 + $1.0 } }
}

/// Collects chunks, refusing duplicates and more chunks than the grid has.
struct ChunkCollector {
    let grid: ChunkGrid
    let file: FileData
    let context: String
    private(set) var chunks: [ChunkRef] = []
    private var seen = Set<Int>()

    init(grid: ChunkGrid, file: FileData, context: String) {
        self.grid = grid
        self.file = file
        self.context = context
    }

    /// Adds a chunk at file address `address`; chunks outside the current extent are ignored.
    mutating func add(_ coords: [Int], address: UInt64, size: Int, mask: UInt32, at: Int) throws {
        guard grid.inside(coords) else { return }
        guard seen.insert(grid.linear(coords)).inserted else {
            throw file.error(at, context, "chunk \(coords) is listed twice")
        }
        let position = try file.position(address, need: size, at: at, context)
        chunks.append(ChunkRef(coords: coords, position: position, size: size, filterMask: mask))
    }
}

enum ChunkIndex {
    /// Every allocated chunk of a dataset.
    static func chunks(_ file: FileData, layout: Layout.Chunking, grid: ChunkGrid, filtered: Bool, context: String, at: Int) throws -> [ChunkRef] {
        var collector = ChunkCollector(grid: grid, file: file, context: context)
        guard let address = layout.address else { return [] }
        let rank = grid.dims.count
        switch layout.index {
        case .btreeV1:
            try btreeV1(file, address: address, grid: grid, context: context, into: &collector)
        case .single(let filteredSize, let mask):
            try collector.add([Int](repeating: 0, count: rank), address: address, size: filteredSize ?? grid.chunkBytes, mask: mask, at: at)
        case .implicit:
            guard !filtered else { throw file.error(at, context, "an implicit chunk index with filters") }
            guard let n = grid.maxTotal, let bytes = Checked.mul(n, grid.chunkBytes) else {
                throw file.error(at, context, "an implicit chunk index needs fixed maximum dimensions")
            }
            _ = try file.position(address, need: bytes, at: at, context)
            let inner = Array(grid.maxCounts.dropFirst().map { $0 ?? 1 })
            for i in 0..<n {
                try collector.add(ChunkGrid.coords(i, inner: inner), address: address + UInt64(i * grid.chunkBytes),
                                  size: grid.chunkBytes, mask: 0, at: at)
            }
        case .fixedArray:
            try FixedArray.chunks(file, address: address, grid: grid, layoutVersion: layout.version, context: context, into: &collector)
        case .extensibleArray:
            try ExtensibleArray.chunks(file, address: address, grid: grid, layoutVersion: layout.version, context: context, into: &collector)
        case .btreeV2:
            try btreeV2(file, address: address, grid: grid, filtered: filtered, layoutVersion: layout.version, context: context, into: &collector)
        }
        return collector.chunks
    }

    /// Version 3 layouts: a v1 B-tree whose keys are (chunk size, filter mask, element offsets + 0).
    private static func btreeV1(_ file: FileData, address: UInt64, grid: ChunkGrid, context: String, into collector: inout ChunkCollector) throws {
        let rank = grid.dims.count
        let keySize = 8 + 8 * (rank + 1)
        try BTreeV1.walk(file, address: address, type: 1, keySize: keySize, context: context) { key, child in
            var c = Cursor(file: file, pos: key, end: key + keySize, context: context)
            let size = try c.int(4, "chunk size")
            let mask = UInt32(try c.u32("chunk filter mask"))
            var coords: [Int] = []
            for d in 0..<rank {
                let at = c.pos
                let offset = try c.uint(8, "chunk offset")
                guard offset % UInt64(grid.chunk[d]) == 0 else {
                    throw c.fail(at: at, "chunk offset \(offset) is not a multiple of the chunk dimension \(grid.chunk[d])")
                }
                coords.append(Int(clamping: offset / UInt64(grid.chunk[d])))
            }
            try collector.add(coords, address: child, size: size, mask: mask, at: key)
        }
    }

    /// Layouts 4 and 5 with two or more unlimited dimensions: records type 10 (address, scaled offsets) or
    /// 11 (address, chunk size, filter mask, scaled offsets).
    private static func btreeV2(_ file: FileData, address: UInt64, grid: ChunkGrid, filtered: Bool, layoutVersion: Int, context: String,
                                into collector: inout ChunkCollector) throws {
        let rank = grid.dims.count
        let tree = try BTreeV2(file, address: address, type: filtered ? 11 : 10, context: context)
        let width = try sizeWidth(elementSize: tree.recordSize - 8 * rank, filtered: filtered, layoutVersion: layoutVersion,
                                      file: file, at: try file.position(address, need: 0, at: 0, context), context: context)
        try tree.forEachRecord(file) { record in
            var c = Cursor(file: file, pos: record, end: record + tree.recordSize, context: context)
            let at = c.pos
            guard let chunk = try c.address("chunk address") else { throw c.fail(at: at, "chunk address is undefined") }
            var size = grid.chunkBytes
            var mask: UInt32 = 0
            if filtered {
                size = try c.int(width, "chunk size")
                mask = UInt32(try c.u32("chunk filter mask"))
            }
            var coords: [Int] = []
            for _ in 0..<rank { coords.append(Int(clamping: try c.uint(8, "scaled chunk offset"))) }
            try collector.add(coords, address: chunk, size: size, mask: mask, at: at)
        }
    }

    /// One fixed or extensible array element: address, then (filtered) chunk size and filter mask.
    static func element(_ c: inout Cursor, filtered: Bool, sizeWidth: Int, grid: ChunkGrid, coords: [Int], into collector: inout ChunkCollector) throws {
        let at = c.pos
        let address = try c.address("chunk address")
        var size = grid.chunkBytes
        var mask: UInt32 = 0
        if filtered {
            size = try c.int(sizeWidth, "chunk size")
            mask = UInt32(try c.u32("chunk filter mask"))
        }
        if let address { try collector.add(coords, address: address, size: size, mask: mask, at: at) }
    }

    /// The chunk-size field width of index elements of `elementSize` bytes (address, [chunk size, filter
    /// mask]): layout version 4 sizes it to the chunk (1-8 bytes), version 5 makes it Size of Offsets.
    static func sizeWidth(elementSize: Int, filtered: Bool, layoutVersion: Int, file: FileData, at: Int, context: String) throws -> Int {
        let width = elementSize - file.offsetSize - (filtered ? 4 : 0)
        let valid = !filtered ? width == 0 : layoutVersion >= 5 ? width == file.offsetSize : (1...8).contains(width)
        guard valid else {
            throw file.error(at, context, "chunk index elements of \(elementSize) bytes do not match \(filtered ? "filtered" : "unfiltered") chunks (layout version \(layoutVersion))")
        }
        return width
    }
}
