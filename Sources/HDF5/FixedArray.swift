/// The fixed array chunk index ("FAHD" header, "FADB" data block, optionally
/// split into checksummed pages): one element per chunk of the dataset's
/// maximum extent, in row-major order of the maximum chunk grid.
enum FixedArray {
    static func chunks(_ file: FileData, address: UInt64, grid: ChunkGrid, layoutVersion: Int, context: String,
                       into collector: inout ChunkCollector) throws {
        var (c, pos, client, elementSize) = try ArrayIndexes.header(file, address, "FAHD", "fixed array header", context)
        let pageBits = try c.u8("fixed array page bits")
        let count = try c.length("fixed array element count")
        let dataBlock = try c.address("fixed array data block address")
        try c.need(4, "fixed array header checksum")
        try file.verifyChecksum(from: pos, checksumAt: c.pos, context)
        let filtered = client == 1
        let sizeWidth = try ChunkIndex.sizeWidth(elementSize: elementSize, filtered: filtered, layoutVersion: layoutVersion, file: file, at: pos, context: context)
        guard let maxTotal = grid.maxTotal, count == maxTotal else {
            throw c.fail(at: pos, "fixed array of \(count) elements, the chunk grid at its maximum extent has \(grid.maxTotal.map { "\($0)" } ?? "unlimited")")
        }
        guard let dataBlock else { return }
        guard pageBits < 32, let bytes = Checked.mul(count, elementSize), bytes <= file.size else {
            throw c.fail(at: pos, "fixed array of \(count) × \(elementSize)-byte elements does not fit the file")
        }
        let inner = Array(grid.maxCounts.dropFirst().map { $0 ?? 1 })
        let element = { (k: inout Cursor, i: Int, collector: inout ChunkCollector) throws in
            try ChunkIndex.element(&k, filtered: filtered, sizeWidth: sizeWidth, grid: grid,
                                   coords: ChunkGrid.coords(i, inner: inner), into: &collector)
        }
        try readDataBlock(file, address: dataBlock, header: pos, client: client, count: count, elementSize: elementSize,
                          pageBits: pageBits, context: context, into: &collector, element: element)
    }

    private static func readDataBlock(_ file: FileData, address: UInt64, header: Int, client: Int, count: Int, elementSize: Int,
                                      pageBits: Int, context: String, into collector: inout ChunkCollector,
                                      element: (inout Cursor, Int, inout ChunkCollector) throws -> Void) throws {
        var (c, pos) = try ArrayIndexes.block(file, address, "FADB", "fixed array data block", header: header, client: client, context)
        let pageSize = 1 << pageBits
        guard count > pageSize else {
            try c.need(count * elementSize + 4, "fixed array elements")
            for i in 0..<count { try element(&c, i, &collector) }
            try file.verifyChecksum(from: pos, checksumAt: c.pos, context)
            return
        }
        // Paged: a bitmap of initialized pages, the block's checksum, then the pages, each with a checksum.
        let pages = (count + pageSize - 1) / pageSize
        let bitmap = try c.bytes((pages + 7) / 8, "fixed array page bitmap")
        try c.need(4, "fixed array data block checksum")
        try file.verifyChecksum(from: pos, checksumAt: c.pos, context)
        try c.skip(4)
        for page in 0..<pages {
            let first = page * pageSize
            let n = min(pageSize, count - first)
            let start = c.pos
            try c.need(n * elementSize + 4, "fixed array page \(page)")
            guard ArrayIndexes.bit(bitmap, page) else {
                try c.skip(n * elementSize + 4)
                continue
            }
            for i in first..<(first + n) { try element(&c, i, &collector) }
            try file.verifyChecksum(from: start, checksumAt: c.pos, context)
            try c.skip(4)
        }
    }
}

/// Helpers the fixed and extensible array readers share.
enum ArrayIndexes {
    /// Bit `i` of a page bitmap (bit 0 is the first byte's high bit).
    static func bit(_ bitmap: ArraySlice<UInt8>, _ i: Int) -> Bool {
        let byte = bitmap.startIndex + i / 8
        guard byte < bitmap.endIndex else { return false }
        return bitmap[byte] & (0x80 >> UInt8(i % 8)) != 0
    }

    /// An array header: a cursor after its signature, version, client ID (0: unfiltered, 1: filtered
    /// chunks) and element size; where it starts; the client ID and the element size.
    static func header(_ file: FileData, _ address: UInt64, _ signature: StaticString, _ what: String, _ context: String)
        throws -> (Cursor, Int, Int, Int) {
        var (c, start) = try file.structure(address, signature, what, versions: 0...0, context)
        let client = try c.u8("\(what) client ID")
        guard client <= 1 else { throw c.fail(at: start + 5, "\(what) client ID \(client) is not a chunk index (0 or 1)") }
        let elementSize = try c.u8("\(what) element size")
        return (c, start, client, elementSize)
    }

    /// A block of the array whose header is at `header`: a cursor after its signature, version, client ID and
    /// header address (both checked), and where it starts.
    static func block(_ file: FileData, _ address: UInt64, _ signature: StaticString, _ what: String, header: Int, client: Int,
                      _ context: String) throws -> (Cursor, Int) {
        var (c, start) = try file.structure(address, signature, what, versions: 0...0, from: header, context)
        let blockClient = try c.u8("\(what) client ID")
        guard blockClient == client else { throw c.fail(at: start + 5, "\(what) client ID \(blockClient), header \(client)") }
        let at = c.pos
        let stored = try c.address("header address")
        guard let stored, stored <= UInt64(Int.max - file.base), file.base + Int(stored) == header else {
            throw c.fail(at: at, "block belongs to another index (header address \(stored.map { "\($0)" } ?? "undefined"))")
        }
        return (c, start)
    }
}
