/// Version 2 B-trees ("BTHD" header, "BTIN" internal and "BTLF" leaf nodes,
/// each checksummed). The reader visits every record; callers pick what they
/// need (link and attribute names' heap IDs, huge fractal heap objects, chunk
/// records). The sizes of the child-pointer fields follow from the node size,
/// as libhdf5 derives them.
struct BTreeV2 {
    let type: Int
    let nodeSize: Int
    let recordSize: Int
    let depth: Int
    let root: UInt64?
    let rootRecords: Int
    let context: String

    /// Per level (0 = leaves): the most records a node holds, and the width of the
    /// "total records below" field of pointers to nodes of that level.
    private var maxRecords: [Int] = []
    private var totalWidth: [Int] = []
    /// Width of a child pointer's "number of records" field.
    private var countWidth = 1

    static let maxDepth = 32

    /// Reads the header at `address`; `type` is the record type the caller expects.
    init(_ file: FileData, address: UInt64, type expected: Int, context: String) throws {
        self.context = context
        var (c, pos) = try file.structure(address, "BTHD", "v2 B-tree header", versions: 0...0, context)
        type = try c.u8("v2 B-tree type")
        guard type == expected else { throw c.fail(at: pos + 5, "v2 B-tree type \(type), expected \(expected)") }
        nodeSize = try c.int(4, "v2 B-tree node size", max: 1 << 24)
        recordSize = try c.u16("v2 B-tree record size")
        depth = try c.u16("v2 B-tree depth")
        try c.skip(2, "split and merge percentages")
        root = try c.address("v2 B-tree root address")
        rootRecords = try c.u16("number of records in the root")
        _ = try c.length("total number of records")
        try c.need(4, "v2 B-tree header checksum")
        try file.verifyChecksum(from: pos, checksumAt: c.pos, context)
        guard recordSize > 0, nodeSize > 10 + recordSize else {
            throw c.fail(at: pos, "v2 B-tree node size \(nodeSize) cannot hold a \(recordSize)-byte record")
        }
        guard depth <= BTreeV2.maxDepth else { throw c.fail(at: pos, "v2 B-tree depth \(depth) is over \(BTreeV2.maxDepth)") }
        try computeNodeInfo(file, at: pos)
    }

    /// Bytes needed to hold `n` (at least 1).
    private static func width(of n: Int) -> Int {
        var bits = 0
        var v = n
        while v > 1 { v >>= 1; bits += 1 }
        return bits / 8 + 1
    }

    private mutating func computeNodeInfo(_ file: FileData, at pos: Int) throws {
        let leafMax = (nodeSize - 10) / recordSize
        countWidth = BTreeV2.width(of: leafMax)
        maxRecords = [leafMax]
        totalWidth = [0]
        var cumulative = leafMax
        if depth == 0 { return }
        for level in 1...depth {
            let pointer = file.offsetSize + countWidth + totalWidth[level - 1]
            let count = (nodeSize - 10 - pointer) / (recordSize + pointer)
            guard count > 0 else { throw file.error(pos, context, "v2 B-tree nodes of \(nodeSize) bytes cannot hold internal level \(level)") }
            maxRecords.append(count)
            // Records in a subtree: its own plus (count + 1) children's, saturating.
            let next = Checked.add(Checked.mul(count + 1, cumulative) ?? Int.max, count) ?? Int.max
            cumulative = next
            totalWidth.append(min(8, BTreeV2.width(of: cumulative)))
        }
    }

    /// Calls `visit` with the position of every record (of `recordSize` bytes).
    func forEachRecord(_ file: FileData, _ visit: (Int) throws -> Void) throws {
        guard let root, rootRecords > 0 else { return }
        var seen = Set<Int>()
        var stack: [(UInt64, Int, Int)] = [(root, depth, rootRecords)]
        while let (address, level, records) = stack.popLast() {
            var (c, pos) = level == 0
                ? try file.structure(address, "BTLF", "v2 B-tree leaf node", versions: 0...0, context)
                : try file.structure(address, "BTIN", "v2 B-tree internal node", versions: 0...0, context)
            guard seen.insert(pos).inserted else {
                throw file.error(pos, context, "v2 B-tree node at offset \(pos) is reached twice (a cycle or a shared subtree)")
            }
            guard records <= maxRecords[level] else {
                throw file.error(pos, context, "v2 B-tree node claims \(records) records (at most \(maxRecords[level]) fit)")
            }
            c = Cursor(file: file, pos: c.pos, end: min(c.end, pos + nodeSize), context: context)
            let nodeType = try c.u8("v2 B-tree node type")
            guard nodeType == type else { throw c.fail(at: pos + 5, "v2 B-tree node type \(nodeType), expected \(type)") }
            guard let recordBytes = Checked.mul(records, recordSize) else { throw c.fail("v2 B-tree node size overflows") }
            try c.need(recordBytes, "v2 B-tree records")
            let first = c.pos
            try c.skip(recordBytes)
            var children: [(UInt64, Int, Int)] = []
            if level > 0 {
                for _ in 0...records {
                    let at = c.pos
                    guard let child = try c.address("v2 B-tree child address") else {
                        throw c.fail(at: at, "v2 B-tree child address is undefined")
                    }
                    let count = try c.int(countWidth, "v2 B-tree child record count")
                    if level > 1 { try c.skip(totalWidth[level - 1], "v2 B-tree child total record count") }
                    children.append((child, level - 1, count))
                }
            }
            try c.need(4, "v2 B-tree node checksum")
            try file.verifyChecksum(from: pos, checksumAt: c.pos, context)
            // In key order: child 0, record 0, child 1, record 1, …; children are pushed to run in order.
            if level == 0 {
                for i in 0..<records { try visit(first + i * recordSize) }
            } else {
                for i in 0..<records { try visit(first + i * recordSize) }
                for child in children.reversed() { stack.append(child) }
            }
        }
    }
}
