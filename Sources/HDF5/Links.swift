/// A group's links, wherever they are stored: a symbol table (old-style
/// groups), link messages in the object header (compact new-style groups), or
/// a fractal heap indexed by a v2 B-tree of name hashes (dense new-style
/// groups, records of type 5).
enum Links {
    /// The group's links; with `named`, dense storage resolves only the records whose name hash matches
    /// (the result may still hold other links, and callers pick by name).
    static func of(_ file: FileData, header: ObjectHeader, path: String, named: String? = nil) throws -> [Link] {
        let context = describe("object header", path)
        if let table = header.first(ObjectHeader.symbolTable) {
            var c = try file.cursor(at: table.start, length: table.size, context)
            let (btree, heap) = try Messages.symbolTable(&c)
            return try SymbolTable.links(file, btree: btree, heap: heap, path: path)
        }
        var links: [Link] = []
        for message in header.all(ObjectHeader.link) {
            var c = try file.cursor(at: message.start, length: message.size, context)
            links.append(try Messages.link(&c))
        }
        if let info = header.first(ObjectHeader.linkInfo) {
            var c = try file.cursor(at: info.start, length: info.size, context)
            let denseContext = describe("dense link storage", path)
            try HeapRecords.dense(file, try Messages.linkInfo(&c), at: info.start, links: true, named: named, context: denseContext) { object, _ in
                var k = Cursor(file: file, pos: object.startIndex, end: object.endIndex, context: denseContext)
                links.append(try Messages.link(&k))
            }
        }
        return links
    }
}

/// Objects of a fractal heap listed by a v2 B-tree whose records hold heap IDs (dense links and attributes).
enum HeapRecords {
    /// Visits the objects of dense link storage (`links`; name index records of type 5: name hash, heap ID) or
    /// of dense attribute storage (type 8: heap ID, message flags, creation order, name hash) described by a
    /// link or attribute info message at `at`. With `named`, only records with that name's hash.
    static func dense(_ file: FileData, _ info: Messages.DenseInfo, at: Int, links: Bool, named: String?, context: String,
                      visit: (ArraySlice<UInt8>, Int) throws -> Void) throws {
        guard let heapAddress = info.heap else { return }
        guard let index = info.nameIndex else { throw file.error(at, context, "dense storage has no name index") }
        let heap = try FractalHeap(file, address: heapAddress, context: context)
        let hash = named.map { Checksum.lookup3(Array($0.utf8)[...]) }
        if links {
            try forEach(file, heap: heap, index: index, type: 5, idOffset: 4, hash: hash.map { (0, $0) }, context: context, visit: visit)
        } else {
            try forEach(file, heap: heap, index: index, type: 8, idOffset: 0, after: 9, hash: hash.map { (heap.idLength + 5, $0) },
                        context: context) { object, record in
                guard file.bytes[record + heap.idLength] & 0x02 == 0 else {
                    throw file.error(record, context, "attribute is stored in the file's shared object header message heap, which is not supported")
                }
                try visit(object, record)
            }
        }
    }

    /// Calls `visit` with each listed object's bytes and the position of its record; records hold the heap ID
    /// at `idOffset` and at least `after` more bytes after it. With `hash` (its offset in the record and its
    /// value), only records holding that name hash are visited.
    static func forEach(_ file: FileData, heap: FractalHeap, index: UInt64, type: Int, idOffset: Int, after: Int = 0,
                        hash: (Int, UInt32)? = nil, context: String, visit: (ArraySlice<UInt8>, Int) throws -> Void) throws {
        let tree = try BTreeV2(file, address: index, type: type, context: context)
        guard tree.recordSize >= idOffset + heap.idLength + after, tree.recordSize >= (hash?.0 ?? 0) + 4 else {
            throw file.error(heap.position, context, "name index records of \(tree.recordSize) bytes cannot hold \(heap.idLength)-byte heap IDs")
        }
        try tree.forEachRecord(file) { record in
            if let (offset, value) = hash {
                let p = record + offset
                let stored = UInt32(file.bytes[p]) | UInt32(file.bytes[p + 1]) << 8 | UInt32(file.bytes[p + 2]) << 16 | UInt32(file.bytes[p + 3]) << 24
                guard stored == value else { return }
            }
            let id = file.bytes[(record + idOffset)..<(record + idOffset + heap.idLength)]
            try visit(try heap.object(id, at: record), record)
        }
    }
}
