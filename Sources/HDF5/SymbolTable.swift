/// Old-style groups: the symbol table message points at a v1 B-tree (node
/// type 0) whose leaves are symbol table nodes ("SNOD"), and at a local heap
/// ("HEAP") holding the link names.
enum SymbolTable {
    static func links(_ file: FileData, btree: UInt64, heap: UInt64, path: String?) throws -> [Link] {
        let heapData = try localHeap(file, address: heap, path: path)
        var links: [Link] = []
        try BTreeV1.walk(file, address: btree, type: 0, keySize: file.lengthSize, context: describe("group B-tree", path)) { _, node in
            try symbolNode(file, address: node, heap: heapData, path: path, into: &links)
        }
        return links
    }

    /// The data segment of a local heap: `[start, end)` in the file.
    private static func localHeap(_ file: FileData, address: UInt64, path: String?) throws -> Range<Int> {
        let context = describe("local heap", path)
        var (c, _) = try file.structure(address, "HEAP", "local heap", versions: 0...0, context)
        try c.skip(3)
        let size = try c.length("local heap data segment size")
        _ = try c.length("local heap free list offset")
        let at = c.pos
        guard let data = try c.address("local heap data segment address") else {
            throw c.fail(at: at, "local heap data segment address is undefined")
        }
        let start = try file.position(data, need: size, at: at, context)
        return start..<(start + size)
    }

    /// The entries of one symbol table node.
    private static func symbolNode(_ file: FileData, address: UInt64, heap: Range<Int>, path: String?, into links: inout [Link]) throws {
        let context = describe("symbol table node", path)
        var (c, pos) = try file.structure(address, "SNOD", "symbol table node", versions: 1...1, context)
        try c.skip(1)
        let count = try c.u16("number of symbols")
        guard let entrySize = Checked.add(2 * file.offsetSize, 24), let total = Checked.mul(count, entrySize) else {
            throw c.fail(at: pos, "symbol table node size overflows")
        }
        try c.need(total, "symbol table entries")
        for _ in 0..<count {
            let at = c.pos
            let nameOffset = try c.uint(file.offsetSize, "link name offset")
            let object = try c.address("object header address")
            let cacheType = try c.u32("symbol table entry cache type")
            try c.skip(4)
            let scratch = c.pos
            try c.skip(16, "symbol table entry scratch pad")
            let name = try string(file, heap: heap, offset: nameOffset, at: at, c)
            if cacheType == 2 {
                // A soft link: the scratch pad holds the offset of its value in the local heap.
                var s = Cursor(file: file, pos: scratch, end: scratch + 4, context: context)
                let valueOffset = try s.uint(4, "soft link value offset")
                links.append(Link(name: name, target: .soft(try string(file, heap: heap, offset: valueOffset, at: at, c))))
                continue
            }
            guard let object else { throw c.fail(at: at, "symbol table entry '\(name)' has an undefined object address") }
            links.append(Link(name: name, target: .hard(object)))
        }
    }

    /// The NUL-terminated string at `offset` in the local heap's data segment.
    private static func string(_ file: FileData, heap: Range<Int>, offset: UInt64, at: Int, _ c: Cursor) throws -> String {
        guard offset < UInt64(heap.count) else {
            throw c.fail(at: at, "name offset \(offset) is outside the local heap (\(heap.count) bytes)")
        }
        let start = heap.lowerBound + Int(offset)
        guard let nul = file.bytes[start..<heap.upperBound].firstIndex(of: 0) else {
            throw c.fail(at: at, "string at heap offset \(offset) has no terminating NUL")
        }
        return String(decoding: file.bytes[start..<nul], as: UTF8.self)
    }
}
