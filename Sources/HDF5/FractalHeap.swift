/// Fractal heaps ("FRHP" header, "FHDB" direct and "FHIB" indirect blocks),
/// which hold dense link and attribute storage. Objects are found from their
/// heap IDs: managed objects through the doubling table of (indirect) blocks,
/// huge objects through the heap's v2 B-tree (or directly from the ID), tiny
/// objects inside the ID itself.
struct FractalHeap {
    let file: FileData
    let context: String
    let position: Int
    let idLength: Int
    let checksummedBlocks: Bool
    /// The doubling table: columns, first row's block size, largest direct block, bits of heap offsets.
    let tableWidth, startBlockSize, maxDirectBlockSize, maxHeapBits: Int
    let root: UInt64?
    let rootRows: Int
    let hugeObjects: UInt64?
    /// Bytes of the offset and the length in a managed object's heap ID.
    let offsetWidth: Int
    let lengthWidth: Int
    /// Blocks whose checksum was verified already: each lookup passes through the same few blocks.
    private let verified = VerifiedBlocks()

    private final class VerifiedBlocks {
        var positions = Set<Int>()
    }

    init(_ file: FileData, address: UInt64, context: String) throws {
        self.file = file
        self.context = context
        var (c, pos) = try file.structure(address, "FRHP", "fractal heap header", versions: 0...0, context)
        position = pos
        idLength = try c.u16("heap ID length")
        let filterLength = try c.u16("I/O filters' encoded length")
        let flags = try c.u8("fractal heap flags")
        checksummedBlocks = flags & 0x02 != 0
        let maxManaged = try c.int(4, "maximum size of managed objects")
        _ = try c.length("next huge object ID")
        hugeObjects = try c.address("huge objects v2 B-tree address")
        try c.skip(file.lengthSize, "free space in managed blocks")
        _ = try c.address("free space manager address")
        try c.skip(8 * file.lengthSize, "heap statistics")
        tableWidth = try c.u16("table width")
        startBlockSize = try c.length("starting block size")
        maxDirectBlockSize = try c.length("maximum direct block size")
        maxHeapBits = try c.u16("maximum heap size")
        _ = try c.u16("starting number of rows in root indirect block")
        root = try c.address("root block address")
        rootRows = try c.u16("current number of rows in root indirect block")
        guard filterLength == 0 else {
            throw c.fail(at: pos, "fractal heaps with I/O filters are not supported")
        }
        try c.need(4, "fractal heap header checksum")
        try file.verifyChecksum(from: pos, checksumAt: c.pos, context)
        guard tableWidth > 0, tableWidth <= 1 << 16, tableWidth & (tableWidth - 1) == 0,
              startBlockSize > 0, startBlockSize & (startBlockSize - 1) == 0,
              maxDirectBlockSize >= startBlockSize, maxDirectBlockSize & (maxDirectBlockSize - 1) == 0,
              (1...64).contains(maxHeapBits), idLength >= 2, rootRows <= 64 else {
            throw c.fail(at: pos, "fractal heap doubling table (width \(tableWidth), starting block \(startBlockSize), maximum direct block \(maxDirectBlockSize), \(maxHeapBits)-bit heap, \(rootRows) root rows) is malformed")
        }
        offsetWidth = (maxHeapBits + 7) / 8
        lengthWidth = min(FractalHeap.encodedWidth(maxDirectBlockSize), FractalHeap.encodedWidth(max(1, maxManaged)))
    }

    /// Bytes libhdf5 uses to encode values up to `n`.
    static func encodedWidth(_ n: Int) -> Int {
        var bits = 0
        var v = n
        while v > 1 { v >>= 1; bits += 1 }
        return bits / 8 + 1
    }

    private static func log2(_ n: Int) -> Int { Int.bitWidth - 1 - n.leadingZeroBitCount }

    /// The bytes of the object with heap ID `id`.
    func object(_ id: ArraySlice<UInt8>, at idPosition: Int) throws -> ArraySlice<UInt8> {
        guard id.count == idLength, let first = id.first else {
            throw file.error(idPosition, context, "heap ID of \(id.count) bytes, the heap uses \(idLength)")
        }
        guard first >> 6 == 0 else { throw file.error(idPosition, context, "heap ID version \(first >> 6) is not supported") }
        var c = Cursor(file: file, pos: id.startIndex + 1, end: id.endIndex, context: context)
        switch (first >> 4) & 0x03 {
        case 0:
            let offset = try c.uint(offsetWidth, "heap object offset")
            let length = try c.int(lengthWidth, "heap object length")
            return try managed(offset: offset, length: length, at: idPosition)
        case 1:
            return try huge(&c, at: idPosition)
        case 2:
            var length = Int(first & 0x0F) + 1
            if idLength > 18 { length = (Int(first & 0x0F) << 8 | (try c.u8("tiny object length"))) + 1 }
            return try c.bytes(length, "tiny heap object")
        default:
            throw file.error(idPosition, context, "heap ID type 3 is not defined")
        }
    }

    // MARK: - Managed objects

    /// Finds the direct block holding heap offset `offset` and returns the object's bytes.
    private func managed(offset: UInt64, length: Int, at idPosition: Int) throws -> ArraySlice<UInt8> {
        guard let root else { throw file.error(idPosition, context, "heap object in an empty heap") }
        guard length > 0, offset <= UInt64(Int.max) else {
            throw file.error(idPosition, context, "heap object (offset \(offset), \(length) bytes) is malformed")
        }
        var blockAddress = root
        var blockOffset = 0
        var blockSize = startBlockSize
        var rows = rootRows
        var depth = 0
        // Descend through indirect blocks to the direct block covering the offset.
        while rows > 0 {
            depth += 1
            guard depth <= 64 else { throw file.error(idPosition, context, "fractal heap indirect blocks nest too deeply") }
            let next = try descend(address: blockAddress, blockOffset: blockOffset, rows: rows, offset: Int(offset), at: idPosition)
            (blockAddress, blockOffset, blockSize, rows) = next
        }
        return try directBlockObject(address: blockAddress, blockOffset: blockOffset, blockSize: blockSize,
                                     offset: Int(offset), length: length, at: idPosition)
    }

    /// Row `r`'s block size and its first offset within an indirect block.
    private func row(_ r: Int) -> (size: Int, start: Int)? {
        if r == 0 { return (startBlockSize, 0) }
        guard r - 1 < 62, let size = Checked.mul(startBlockSize, 1 << (r - 1)),
              let start = Checked.mul(Checked.mul(startBlockSize, tableWidth) ?? -1, 1 << (r - 1)), start >= 0 else { return nil }
        return (size, start)
    }

    /// Reads the indirect block and returns the child (direct or indirect) covering `offset`.
    private func descend(address: UInt64, blockOffset: Int, rows: Int, offset: Int, at idPosition: Int)
        throws -> (UInt64, Int, Int, Int) {
        var (c, pos) = try blockPrefix(address, "FHIB", "fractal heap indirect block", blockOffset: blockOffset, at: idPosition)
        let maxDirectRows = FractalHeap.log2(maxDirectBlockSize) - FractalHeap.log2(startBlockSize) + 2
        let directRows = min(rows, maxDirectRows)
        guard let entries = Checked.mul(rows, tableWidth), let bytes = Checked.mul(entries, file.offsetSize) else {
            throw c.fail(at: pos, "indirect block size overflows")
        }
        try c.need(bytes, "indirect block entries")
        let entriesStart = c.pos
        try c.skip(bytes)
        try c.need(4, "indirect block checksum")
        if verified.positions.insert(pos).inserted {
            do { try file.verifyChecksum(from: pos, checksumAt: c.pos, context) } catch {
                verified.positions.remove(pos)
                throw error
            }
        }
        // The row and column covering the offset.
        guard offset >= blockOffset else { throw c.fail(at: pos, "heap offset \(offset) is below the block at \(blockOffset)") }
        let relative = offset - blockOffset
        var r = 0
        while let next = row(r + 1), r + 1 < rows, next.start <= relative { r += 1 }
        guard let (size, start) = row(r) else { throw c.fail(at: pos, "heap offset \(offset) is outside the doubling table") }
        let column = (relative - start) / size
        guard column < tableWidth else {
            throw c.fail(at: pos, "heap offset \(offset) is past the \(rows) rows of this indirect block")
        }
        var e = Cursor(file: file, pos: entriesStart + (r * tableWidth + column) * file.offsetSize, end: c.pos, context: context)
        let entryAt = e.pos
        guard let child = try e.address("child block address") else {
            throw e.fail(at: entryAt, "heap offset \(offset) is in a block that was never allocated")
        }
        let childOffset = blockOffset + start + column * size
        if r < directRows { return (child, childOffset, size, 0) }
        // A child indirect block: as many rows as it takes to cover `size` bytes.
        let childRows = FractalHeap.log2(size) - FractalHeap.log2(startBlockSize) - FractalHeap.log2(tableWidth) + 1
        guard childRows > 0, childRows < rows else { throw e.fail(at: entryAt, "child indirect block of \(childRows) rows is malformed") }
        return (child, childOffset, size, childRows)
    }

    /// A cursor after a block's signature, version, heap header address (which must be this heap's) and
    /// block offset (which must be `blockOffset`), and the block's position.
    private func blockPrefix(_ address: UInt64, _ signature: StaticString, _ what: String, blockOffset: Int, at idPosition: Int)
        throws -> (Cursor, Int) {
        var (c, pos) = try file.structure(address, signature, what, versions: 0...0, from: idPosition, context)
        let at = c.pos
        let header = try c.address("heap header address")
        guard let header, file.base + Int(clamping: header) == position else {
            throw c.fail(at: at, "block belongs to another heap (header address \(header.map { "\($0)" } ?? "undefined"))")
        }
        let stored = try c.uint(offsetWidth, "block offset")
        guard stored == UInt64(blockOffset) else { throw c.fail(at: pos, "\(what) offset \(stored), expected \(blockOffset)") }
        return (c, pos)
    }

    private func directBlockObject(address: UInt64, blockOffset: Int, blockSize: Int, offset: Int, length: Int,
                                   at idPosition: Int) throws -> ArraySlice<UInt8> {
        var (c, pos) = try blockPrefix(address, "FHDB", "fractal heap direct block", blockOffset: blockOffset, at: idPosition)
        guard blockSize <= file.size - pos else {
            throw c.fail(at: pos, "direct block of \(blockSize) bytes runs past the end of the file (size \(file.size))")
        }
        if checksummedBlocks {
            let checksumAt = c.pos
            let storedSum = try c.u32("direct block checksum")
            guard c.pos - pos <= blockSize else {
                throw c.fail(at: pos, "direct block of \(blockSize) bytes is smaller than its header")
            }
            try verifyDirectBlock(pos, blockSize: blockSize, checksumAt: checksumAt, stored: UInt32(storedSum), c)
        }
        let relative = offset - blockOffset
        guard relative >= c.pos - pos, relative <= blockSize, length <= blockSize - relative else {
            throw file.error(idPosition, context, "heap object (offset \(offset), \(length) bytes) is outside its direct block (offset \(blockOffset), \(blockSize) bytes)")
        }
        return file.bytes[(pos + relative)..<(pos + relative + length)]
    }

    /// A direct block's checksum covers the whole block with the checksum field as zeros.
    private func verifyDirectBlock(_ pos: Int, blockSize: Int, checksumAt: Int, stored: UInt32, _ c: Cursor) throws {
        guard !verified.positions.contains(pos) else { return }
        var copy = Array(file.bytes[pos..<(pos + blockSize)])
        for k in 0..<4 { copy[checksumAt - pos + k] = 0 }
        let computed = Checksum.lookup3(copy[...])
        guard stored == computed else {
            throw c.fail(at: checksumAt, "checksum mismatch (stored 0x\(hex(stored)), computed 0x\(hex(computed)))")
        }
        verified.positions.insert(pos)
    }

    // MARK: - Huge objects

    private func huge(_ c: inout Cursor, at idPosition: Int) throws -> ArraySlice<UInt8> {
        if idLength - 1 >= file.offsetSize + file.lengthSize {
            // Directly accessed: the address and length are in the ID.
            let at = c.pos
            guard let address = try c.address("huge object address") else { throw c.fail(at: at, "huge object address is undefined") }
            let length = try c.length("huge object length")
            let pos = try file.position(address, need: length, at: idPosition, context)
            return file.bytes[pos..<(pos + length)]
        }
        let key = try c.uint(min(8, idLength - 1), "huge object key")
        guard let hugeObjects else { throw c.fail(at: idPosition, "huge heap object but the heap has no huge object B-tree") }
        let tree = try BTreeV2(file, address: hugeObjects, type: 1, context: context)
        var found: (UInt64, Int)?
        try tree.forEachRecord(file) { record in
            var r = Cursor(file: file, pos: record, end: record + tree.recordSize, context: context)
            let address = try r.address("huge object address")
            let length = try r.length("huge object length")
            let id = try r.uint(file.lengthSize, "huge object ID")
            if id == key, let address, found == nil { found = (address, length) }
        }
        guard let (address, length) = found else {
            throw file.error(idPosition, context, "huge heap object \(key) is not in the heap's B-tree")
        }
        let pos = try file.position(address, need: length, at: idPosition, context)
        return file.bytes[pos..<(pos + length)]
    }
}
