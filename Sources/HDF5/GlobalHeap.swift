/// Global heap collections ("GCOL"), where variable-length strings and
/// sequences keep their bytes. A reader parses each collection once per read
/// and limits the bytes all variable-length elements may expand to.
struct GlobalHeap {
    let file: FileData
    let context: String
    /// Bytes the variable-length elements of one read may still produce.
    var budget: Int
    private var collections: [Int: [Int: Range<Int>]] = [:]

    init(_ file: FileData, context: String, budget: Int) {
        self.file = file
        self.context = context
        self.budget = budget
    }

    /// The bytes of object `index` in the collection at `address`, `length` of them.
    mutating func object(address: UInt64, index: Int, length: Int, at elementPosition: Int) throws -> ArraySlice<UInt8> {
        guard length <= budget else {
            throw file.error(elementPosition, context, "variable-length data exceeds the limit of \(file.limit) bytes")
        }
        let pos = try file.position(address, need: 16, at: elementPosition, context)
        if collections[pos] == nil { collections[pos] = try GlobalHeap.collection(file, at: pos, context) }
        guard let range = collections[pos]?[index] else {
            throw file.error(elementPosition, context, "global heap object \(index) is not in the collection at offset \(pos)")
        }
        guard length <= range.count else {
            throw file.error(elementPosition, context, "variable-length element of \(length) bytes, its global heap object has \(range.count)")
        }
        budget -= length
        return file.bytes[range.lowerBound..<(range.lowerBound + length)]
    }

    /// Object index → data range of the collection at `pos`.
    private static func collection(_ file: FileData, at pos: Int, _ context: String) throws -> [Int: Range<Int>] {
        let what = "global heap collection"
        var (c, _) = try file.structure(UInt64(pos - file.base), "GCOL", what, versions: 1...1, what)
        try c.skip(3)
        let size = try c.length("collection size")
        guard size >= 16, size <= file.size - pos else {
            throw c.fail(at: pos, "global heap collection of \(size) bytes runs past the end of the file (size \(file.size))")
        }
        // The collection's and each object's header are padded to a multiple of 8 bytes.
        let header = (8 + file.lengthSize + 7) / 8 * 8
        var objects: [Int: Range<Int>] = [:]
        var k = Cursor(file: file, pos: pos + header, end: pos + size, context: what)
        while k.remaining >= header {
            let index = try k.u16("heap object index")
            if index == 0 { break }  // free space: the rest of the collection
            try k.skip(6, "reference count and reserved bytes")
            let length = try k.length("heap object size")
            try k.skip(header - 8 - file.lengthSize, "heap object header padding")
            let padded = length > Int.max - 7 ? length : (length + 7) / 8 * 8
            try k.need(length, "global heap object \(index)")
            objects[index] = k.pos..<(k.pos + length)
            try k.skip(min(padded, k.remaining))
        }
        return objects
    }
}
