/// The data layout message, versions 3, 4 and 5: compact, contiguous or
/// chunked storage and, for chunked storage, which chunk index the chunks'
/// addresses are in.
enum Layout: Equatable {
    case compact(Range<Int>)
    /// Absolute position of the data (nil: not allocated) and its stored size.
    case contiguous(address: UInt64?, size: Int)
    case chunked(Chunking)

    /// Chunked storage: chunk dimensions (in elements), the element size the layout records, and the index.
    struct Chunking: Equatable {
        let version: Int
        let dims: [Int]
        let elementSize: Int
        /// Edge chunks (partly outside the dataset) are stored unfiltered.
        let unfilteredEdges: Bool
        let index: ChunkIndexKind
        /// Address of the index (or of the single chunk / the implicit chunk array); nil: nothing allocated.
        let address: UInt64?
    }

    enum ChunkIndexKind: Equatable {
        /// Version 3 layouts: a v1 B-tree of chunks (node type 1).
        case btreeV1
        /// A single chunk covering the dataset; `filteredSize` and `filterMask` when it is filtered.
        case single(filteredSize: Int?, filterMask: UInt32)
        case implicit
        case fixedArray(pageBits: Int)
        case extensibleArray
        case btreeV2
    }

    static func parse(_ c: inout Cursor) throws -> Layout {
        let at = c.pos
        let version = try c.u8("layout message version")
        guard (3...5).contains(version) else {
            throw c.fail(at: at, "data layout message version \(version) is not supported (3, 4 and 5 are)")
        }
        let layoutClass = try c.u8("layout class")
        switch layoutClass {
        case 0:
            let size = try c.u16("compact data size")
            try c.need(size, "compact data")
            return .compact(c.pos..<(c.pos + size))
        case 1:
            let address = try c.address("contiguous data address")
            return .contiguous(address: address, size: try c.length("contiguous data size"))
        case 2:
            return .chunked(version == 3 ? try chunkedV3(&c) : try chunkedV4(&c, version: version))
        case 3:
            throw c.fail(at: at, "virtual datasets (layout class 3) are not supported")
        default:
            throw c.fail(at: at, "layout class \(layoutClass) is not defined")
        }
    }

    private static func chunkedV3(_ c: inout Cursor) throws -> Chunking {
        let at = c.pos
        let dimensionality = try c.u8("chunk dimensionality")
        guard (2...(Dataspace.maxRank + 1)).contains(dimensionality) else {
            throw c.fail(at: at, "chunk dimensionality \(dimensionality) is out of range (2-\(Dataspace.maxRank + 1))")
        }
        let address = try c.address("chunk B-tree address")
        var dims: [Int] = []
        for _ in 0..<dimensionality { dims.append(try c.int(4, "chunk dimension")) }
        let elementSize = dims.removeLast()
        return Chunking(version: 3, dims: dims, elementSize: elementSize, unfilteredEdges: false, index: .btreeV1, address: address)
    }

    private static func chunkedV4(_ c: inout Cursor, version: Int) throws -> Chunking {
        let at = c.pos
        let flags = try c.u8("chunked layout flags")
        let dimensionality = try c.u8("chunk dimensionality")
        guard (2...(Dataspace.maxRank + 1)).contains(dimensionality) else {
            throw c.fail(at: at + 1, "chunk dimensionality \(dimensionality) is out of range (2-\(Dataspace.maxRank + 1))")
        }
        let width = try c.u8("dimension size encoded length")
        guard (1...8).contains(width) else { throw c.fail(at: at + 2, "dimension size encoded length \(width) is not 1-8") }
        var dims: [Int] = []
        for _ in 0..<dimensionality { dims.append(try c.int(width, "chunk dimension")) }
        let elementSize = dims.removeLast()
        let typeAt = c.pos
        let type = try c.u8("chunk index type")
        let index: ChunkIndexKind
        switch type {
        case 1:
            if flags & 0x02 != 0 {
                let size = try c.length("filtered chunk size")
                index = .single(filteredSize: size, filterMask: UInt32(try c.u32("filter mask")))
            } else {
                index = .single(filteredSize: nil, filterMask: 0)
            }
        case 2: index = .implicit
        case 3: index = .fixedArray(pageBits: try c.u8("fixed array page bits"))
        case 4:
            try c.skip(5, "extensible array parameters")  // the header repeats them
            index = .extensibleArray
        case 5:
            try c.skip(6, "v2 B-tree parameters")  // the header repeats them
            index = .btreeV2
        default:
            throw c.fail(at: typeAt, "chunk index type \(type) is not defined")
        }
        let address = try c.address("chunk index address")
        return Chunking(version: version, dims: dims, elementSize: elementSize, unfilteredEdges: flags & 0x01 != 0, index: index, address: address)
    }
}
