/// The extensible array chunk index ("EAHD" header, "EAIB" index block,
/// "EASB" secondary blocks, "EADB" data blocks, optionally paged), used for
/// datasets with one unlimited dimension. Element i is the chunk whose
/// coordinates, with the unlimited dimension moved first, have row-major
/// index i in the maximum chunk grid. Block sizes follow libhdf5's scheme:
/// super block u has 2^(u/2) data blocks of 2^((u+1)/2) × (minimum) elements.
struct ExtensibleArray {
    let file: FileData
    let context: String
    let header: Int
    let client: Int
    let elementSize: Int
    let sizeWidth: Int
    let offsetWidth: Int
    let pageElements: Int
    /// Elements to read (the realized ones inside the chunk grid).
    let count: Int
    let grid: ChunkGrid
    let unlimited: Int
    let inner: [Int]

    static func chunks(_ file: FileData, address: UInt64, grid: ChunkGrid, layoutVersion: Int, context: String,
                       into collector: inout ChunkCollector) throws {
        var (c, pos, client, elementSize) = try ArrayIndexes.header(file, address, "EAHD", "extensible array header", context)
        // Bits of the maximum element count, index block elements, data block minimum elements, secondary
        // block minimum data block pointers, data block page bits.
        let parameters = Array(try c.bytes(5, "extensible array parameters")).map(Int.init)
        let (maxBits, indexElements, minElements, minPointers, pageBits) =
            (parameters[0], parameters[1], parameters[2], parameters[3], parameters[4])
        try c.skip(4 * file.lengthSize, "extensible array statistics")
        let maxIndex = try c.length("maximum index set")
        _ = try c.length("number of elements")
        let indexBlock = try c.address("index block address")
        try c.need(4, "extensible array header checksum")
        try file.verifyChecksum(from: pos, checksumAt: c.pos, context)
        func isPowerOfTwo(_ v: Int) -> Bool { v > 0 && v & (v - 1) == 0 }
        guard (1...64).contains(maxBits), isPowerOfTwo(minElements), isPowerOfTwo(minPointers), pageBits < 32,
              Int.bitWidth - 1 - minElements.leadingZeroBitCount <= maxBits else {
            throw c.fail(at: pos, "extensible array parameters (\(maxBits) bits, \(minElements) elements, \(minPointers) pointers, \(pageBits) page bits) are malformed")
        }
        guard let unlimited = grid.maxCounts.firstIndex(where: { $0 == nil }) else {
            throw c.fail(at: pos, "an extensible array chunk index for a dataset without an unlimited dimension")
        }
        var swizzled = grid.maxCounts
        swizzled.remove(at: unlimited)
        let inner = swizzled.map { $0 ?? 1 }
        // In-grid chunks have linear indexes below counts[unlimited] × product(inner).
        let bound = Checked.mul(grid.counts[unlimited], Checked.product(inner) ?? Int.max) ?? Int.max
        let array = ExtensibleArray(
            file: file, context: context, header: pos, client: client, elementSize: elementSize,
            sizeWidth: try ChunkIndex.sizeWidth(elementSize: elementSize, filtered: client == 1, layoutVersion: layoutVersion, file: file, at: pos, context: context),
            offsetWidth: (maxBits + 7) / 8, pageElements: 1 << pageBits, count: min(maxIndex, bound), grid: grid,
            unlimited: unlimited, inner: inner)
        guard let indexBlock, array.count > 0 else { return }
        try array.readIndexBlock(indexBlock, maxBits: maxBits, indexElements: indexElements, minElements: minElements,
                                 minPointers: minPointers, into: &collector)
    }

    /// The chunk coordinates of element `i`.
    private func coords(_ i: Int) -> [Int] {
        var s = ChunkGrid.coords(i, inner: inner)
        let first = s.removeFirst()
        s.insert(first, at: unlimited)
        return s
    }

    private func element(_ c: inout Cursor, _ i: Int, into collector: inout ChunkCollector) throws {
        if i < count {
            try ChunkIndex.element(&c, filtered: client == 1, sizeWidth: sizeWidth, grid: grid, coords: coords(i), into: &collector)
        } else {
            try c.skip(elementSize)
        }
    }

    /// A cursor after the block's prefix (with its block offset when it has one), and where it starts.
    private func blockPrefix(_ address: UInt64, _ signature: StaticString, _ what: String, blockOffset: Bool) throws -> (Cursor, Int) {
        var (c, start) = try ArrayIndexes.block(file, address, signature, what, header: header, client: client, context)
        if blockOffset { try c.skip(offsetWidth, "\(what) offset") }
        return (c, start)
    }

    private func readIndexBlock(_ address: UInt64, maxBits: Int, indexElements: Int, minElements: Int, minPointers: Int,
                                into collector: inout ChunkCollector) throws {
        var (c, start) = try blockPrefix(address, "EAIB", "extensible array index block", blockOffset: false)
        // Super blocks: u has 2^(u/2) data blocks of 2^((u+1)/2) × minElements elements.
        let log2Min = Int.bitWidth - 1 - minElements.leadingZeroBitCount
        let superBlocks = 1 + maxBits - log2Min
        let inIndexBlock = min(superBlocks, 2 * (Int.bitWidth - 1 - minPointers.leadingZeroBitCount))
        let dataBlockAddresses = 2 * (minPointers - 1)
        let secondaryAddresses = superBlocks - inIndexBlock
        guard let total = Checked.add(indexElements * elementSize, (dataBlockAddresses + secondaryAddresses) * file.offsetSize) else {
            throw c.fail("index block size overflows")
        }
        try c.need(total + 4, "extensible array index block")
        for i in 0..<indexElements { try element(&c, i, into: &collector) }
        var dataBlocks: [UInt64?] = []
        for _ in 0..<dataBlockAddresses { dataBlocks.append(try c.address("data block address")) }
        var secondary: [UInt64?] = []
        for _ in 0..<secondaryAddresses { secondary.append(try c.address("secondary block address")) }
        try file.verifyChecksum(from: start, checksumAt: c.pos, context)

        var first = indexElements  // element index of the next data block's first element
        var dataBlockIndex = 0
        for u in 0..<superBlocks where first < count {
            let blocks = 1 << (u / 2)
            let elements = (1 << ((u + 1) / 2)) * minElements
            if u < inIndexBlock {
                var j = 0
                while j < blocks, first < count {
                    guard dataBlockIndex < dataBlocks.count else { throw c.fail(at: start, "index block has too few data block addresses") }
                    if let a = dataBlocks[dataBlockIndex] { try readDataBlock(a, first: first, elements: elements, pageBitmap: nil, into: &collector) }
                    dataBlockIndex += 1
                    first += elements
                    j += 1
                }
            } else {
                if let a = secondary[u - inIndexBlock] {
                    try readSecondaryBlock(a, first: first, blocks: blocks, elements: elements, into: &collector)
                }
                guard let next = Checked.add(first, Checked.mul(blocks, elements) ?? Int.max) else { break }
                first = next
            }
        }
    }

    private func readSecondaryBlock(_ address: UInt64, first: Int, blocks: Int, elements: Int, into collector: inout ChunkCollector) throws {
        var (c, start) = try blockPrefix(address, "EASB", "extensible array secondary block", blockOffset: true)
        let pages = elements > pageElements ? elements / pageElements : 0
        var bitmap: ArraySlice<UInt8>?
        if pages > 0 {
            guard let bits = Checked.mul(blocks, pages) else { throw c.fail("page bitmap size overflows") }
            bitmap = try c.bytes((bits + 7) / 8, "data block page bitmap")
        }
        guard let size = Checked.mul(blocks, file.offsetSize) else { throw c.fail("secondary block size overflows") }
        try c.need(size + 4, "data block addresses")
        var addresses: [UInt64?] = []
        for _ in 0..<blocks { addresses.append(try c.address("data block address")) }
        try file.verifyChecksum(from: start, checksumAt: c.pos, context)
        var next = first
        for (j, a) in addresses.enumerated() {
            guard next < count else { break }
            if let a {
                try readDataBlock(a, first: next, elements: elements, pageBitmap: bitmap.map { ($0, j * pages) }, into: &collector)
            }
            next += elements
        }
    }

    /// A data block of `elements` elements starting at element `first`; `pageBitmap` is the secondary block's
    /// bitmap and this block's first bit in it.
    private func readDataBlock(_ address: UInt64, first: Int, elements: Int, pageBitmap: (ArraySlice<UInt8>, Int)?,
                               into collector: inout ChunkCollector) throws {
        var (c, start) = try blockPrefix(address, "EADB", "extensible array data block", blockOffset: true)
        guard elements > pageElements else {
            try c.need(elements * elementSize + 4, "extensible array data block elements")
            for k in 0..<elements { try element(&c, first + k, into: &collector) }
            try file.verifyChecksum(from: start, checksumAt: c.pos, context)
            return
        }
        // Paged: the block's checksum, then its pages, each elements + checksum.
        try c.need(4, "extensible array data block checksum")
        try file.verifyChecksum(from: start, checksumAt: c.pos, context)
        try c.skip(4)
        let pages = elements / pageElements
        var page = 0
        while page < pages, first + page * pageElements < count {
            let pageStart = c.pos
            try c.need(pageElements * elementSize + 4, "extensible array data block page")
            if pageBitmap.map({ ArrayIndexes.bit($0.0, $0.1 + page) }) ?? true {
                for k in 0..<pageElements { try element(&c, first + page * pageElements + k, into: &collector) }
                try file.verifyChecksum(from: pageStart, checksumAt: c.pos, context)
                try c.skip(4)
            } else {
                try c.skip(pageElements * elementSize + 4)
            }
            page += 1
        }
    }
}
