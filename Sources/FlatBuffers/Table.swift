/// A table inside a `FlatBuffer`: its position, its validated vtable, and how
/// deep it sits below the root.
///
/// Fields are addressed by their schema id (the `id:` attribute, or the
/// declaration order): field `id` has its offset in vtable slot `4 + 2·id`.
/// An absent field reads as its default (scalars) or nil (everything else).
/// Every accessor validates what it follows and throws a `FlatBufferError`.
///
/// A negative or very large `id` is treated as an absent field.
///
/// Tables reached from one `FlatBuffer.root()` share a visit counter
/// (`ReadLimits.maxTableVisits`); it is not synchronized, so a reader that
/// uses several threads should give each its own root.
public struct Table {
    /// The buffer the table lives in.
    public let buffer: FlatBuffer
    /// Byte offset of the table (its signed offset to the vtable).
    public let position: Int
    /// Byte offset of the table's vtable.
    public let vtablePosition: Int
    /// Size of the vtable in bytes (4 + 2 × the number of slots it has).
    public let vtableSize: Int
    /// Size of the table's inline data in bytes, including the vtable offset.
    public let inlineSize: Int
    /// Sub-table hops from the root (the root is 0).
    public let depth: Int
    let budget: VisitBudget

    /// Validates the table at `position`: its vtable offset, the vtable's
    /// size and place, and the table's inline size.
    init(buffer: FlatBuffer, position: Int, depth: Int, budget: VisitBudget) throws {
        let size = buffer.count
        let soffset = try buffer.checkedLoad(Int32.self, at: position, "table")
        let vt = position - Int(soffset)
        guard buffer.contains(vt, 4) else {
            throw FlatBufferError.badVTable(offset: position, table: position,
                                            reason: "vtable offset \(soffset) points to offset \(vt), outside the \(size)-byte buffer")
        }
        let vtSize = Int(buffer.load(UInt16.self, at: vt))
        let tableSize = Int(buffer.load(UInt16.self, at: vt + 2))
        guard vtSize >= 4 else {
            throw FlatBufferError.badVTable(offset: vt, table: position, reason: "vtable size \(vtSize) is smaller than 4")
        }
        guard vtSize % 2 == 0 else {
            throw FlatBufferError.badVTable(offset: vt, table: position, reason: "vtable size \(vtSize) is odd")
        }
        guard buffer.contains(vt, vtSize) else {
            throw FlatBufferError.badVTable(offset: vt, table: position,
                                            reason: "vtable of \(vtSize) bytes runs past the end of the \(size)-byte buffer")
        }
        guard tableSize >= 4 else {
            throw FlatBufferError.badVTable(offset: vt + 2, table: position, reason: "table size \(tableSize) is smaller than 4")
        }
        guard buffer.contains(position, tableSize) else {
            throw FlatBufferError.outOfBounds(offset: position, length: tableSize, what: "table", bufferSize: size)
        }
        self.buffer = buffer
        self.position = position
        self.vtablePosition = vt
        self.vtableSize = vtSize
        self.inlineSize = tableSize
        self.depth = depth
        self.budget = budget
    }

    // MARK: - Field lookup

    /// The field's offset inside the table from the vtable, or 0 when absent.
    /// The vtable was checked to be inside the buffer when the table was made.
    func fieldOffset(_ id: Int) -> Int {
        guard id >= 0, id < (vtableSize - 4) / 2 else { return 0 }
        return Int(buffer.load(UInt16.self, at: vtablePosition + 4 + 2 * id))
    }

    /// Byte offset of field `id` in the buffer, or nil when absent; throws when
    /// `size` bytes at that place are not inside the table's inline bytes.
    func fieldPosition(_ id: Int, size: Int) throws -> Int? {
        let fo = fieldOffset(id)
        if fo == 0 { return nil }
        guard fo >= 4, size <= inlineSize - fo else {
            throw FlatBufferError.fieldOutsideTable(offset: position, field: id, fieldOffset: fo, fieldSize: size, tableSize: inlineSize)
        }
        return position + fo
    }

    /// True when the vtable has a non-zero entry for field `id` (a scalar equal
    /// to its default is usually absent).
    public func has(_ id: Int) -> Bool { fieldOffset(id) != 0 }

    // MARK: - Scalars

    /// The scalar field `id`, or `default` when absent.
    public func scalar<T: FlatBufferScalar>(_ id: Int, default defaultValue: T) throws -> T {
        guard let p = try fieldPosition(id, size: T.byteWidth) else { return defaultValue }
        return buffer.load(T.self, at: p)
    }

    /// The scalar field `id`, or nil when absent (for schema fields declared `= null`).
    public func optionalScalar<T: FlatBufferScalar>(_ id: Int, as _: T.Type = T.self) throws -> T? {
        guard let p = try fieldPosition(id, size: T.byteWidth) else { return nil }
        return buffer.load(T.self, at: p)
    }

    // MARK: - Offsets

    /// Follows the offset field `id`; nil when absent.
    func target(_ id: Int, what: @autoclosure () -> String) throws -> Int? {
        guard let p = try fieldPosition(id, size: 4) else { return nil }
        return try buffer.followOffset(at: p, what: what(), minimumTargetSize: 4)
    }

    /// A table one level below this one, after the depth and visit checks.
    func child(at position: Int) throws -> Table {
        guard depth < buffer.limits.maxDepth else {
            throw FlatBufferError.tooDeep(offset: position, limit: buffer.limits.maxDepth)
        }
        guard budget.remaining > 0 else {
            throw FlatBufferError.tooManyTables(offset: position, limit: buffer.limits.maxTableVisits)
        }
        budget.remaining -= 1
        return try Table(buffer: buffer, position: position, depth: depth + 1, budget: budget)
    }

    /// The sub-table in field `id`, or nil when absent. Its `depth` is one more
    /// than this table's; past `ReadLimits.maxDepth` this throws `.tooDeep`.
    public func table(_ id: Int) throws -> Table? {
        guard let t = try target(id, what: "table field \(id) of the table at \(position)") else { return nil }
        return try child(at: t)
    }

    /// The string in field `id` (UTF-8, 0-terminated inside the buffer), or nil when absent.
    public func string(_ id: Int) throws -> String? {
        guard let t = try target(id, what: "string field \(id) of the table at \(position)") else { return nil }
        return try buffer.string(at: t)
    }

    /// The raw bytes of the string in field `id` (without terminator), or nil when absent.
    public func stringBytes(_ id: Int) throws -> ArraySlice<UInt8>? {
        guard let t = try target(id, what: "string field \(id) of the table at \(position)") else { return nil }
        return buffer.bytes[try buffer.stringRange(at: t)]
    }

    // MARK: - Vectors

    /// Start and count of the vector in field `id`, checked against the buffer.
    func vectorSpan(_ id: Int, elementSize: Int) throws -> (start: Int, count: Int)? {
        guard let t = try target(id, what: "vector field \(id) of the table at \(position)") else { return nil }
        return try buffer.vectorSpan(at: t, elementSize: elementSize)
    }

    /// The number of elements of the vector in field `id` (any element type
    /// whose size is `elementSize`), or nil when absent.
    public func vectorCount(_ id: Int, elementSize: Int) throws -> Int? {
        try vectorSpan(id, elementSize: elementSize)?.count
    }

    /// A lazy, already bounds-checked view of the scalar vector in field `id`,
    /// or nil when absent.
    public func vector<T: FlatBufferScalar>(_ id: Int, of _: T.Type = T.self) throws -> ScalarVector<T>? {
        guard let span = try vectorSpan(id, elementSize: T.byteWidth) else { return nil }
        return ScalarVector(bytes: buffer.bytes, start: span.start, count: span.count)
    }

    /// A copy of the scalar vector in field `id`, or nil when absent. The copy
    /// is sized only after the length was checked against the buffer.
    public func scalars<T: FlatBufferScalar>(_ id: Int, as _: T.Type = T.self) throws -> [T]? {
        try vector(id, of: T.self).map { $0.array }
    }

    /// The `[ubyte]` / `[byte]` vector in field `id` as a slice of the buffer
    /// (no copy), or nil when absent. Indices are buffer offsets.
    public func bytes(_ id: Int) throws -> ArraySlice<UInt8>? {
        guard let r = try byteRange(id) else { return nil }
        return buffer.bytes[r]
    }

    /// Where the `[ubyte]` vector in field `id` lies in the buffer, or nil when absent.
    public func byteRange(_ id: Int) throws -> Range<Int>? {
        guard let span = try vectorSpan(id, elementSize: 1) else { return nil }
        return span.start..<(span.start + span.count)
    }

    /// The tables of the vector of tables in field `id`, or nil when absent.
    /// Every element is validated (and counts as one visit, one level deeper).
    public func tables(_ id: Int) throws -> [Table]? {
        guard let span = try vectorSpan(id, elementSize: 4) else { return nil }
        var out: [Table] = []
        out.reserveCapacity(span.count)
        for i in 0..<span.count {
            let p = span.start + 4 * i
            let t = try buffer.followOffset(at: p, what: "element \(i) of the table vector in field \(id) of the table at \(position)",
                                            minimumTargetSize: 4)
            out.append(try child(at: t))
        }
        return out
    }

    /// The strings of the vector of strings in field `id`, or nil when absent.
    public func strings(_ id: Int) throws -> [String]? {
        guard let span = try vectorSpan(id, elementSize: 4) else { return nil }
        var out: [String] = []
        out.reserveCapacity(span.count)
        for i in 0..<span.count {
            let p = span.start + 4 * i
            let t = try buffer.followOffset(at: p, what: "element \(i) of the string vector in field \(id) of the table at \(position)",
                                            minimumTargetSize: 4)
            out.append(try buffer.string(at: t))
        }
        return out
    }

    // MARK: - Structs and unions

    /// The inline struct of `size` bytes in field `id`, or nil when absent.
    /// A `size` below 1 (a caller bug) throws.
    public func structure(_ id: Int, size: Int) throws -> Struct? {
        guard size > 0 else { throw FlatBufferError.structFieldOutOfRange(offset: position, fieldOffset: 0, fieldSize: size, structSize: size) }
        guard let p = try fieldPosition(id, size: size) else { return nil }
        return Struct(buffer: buffer, position: p, size: size)
    }

    /// The structs (each `size` bytes) of the vector of structs in field `id`, or nil when absent.
    public func structs(_ id: Int, size: Int) throws -> [Struct]? {
        guard size > 0 else { throw FlatBufferError.structFieldOutOfRange(offset: position, fieldOffset: 0, fieldSize: size, structSize: size) }
        guard let span = try vectorSpan(id, elementSize: size) else { return nil }
        return (0..<span.count).map { Struct(buffer: buffer, position: span.start + $0 * size, size: size) }
    }

    /// The union whose value is field `id` and whose type tag is field `id - 1`
    /// (flatc gives a union's hidden `_type` field the id before its value).
    /// Nil when the type is 0 (`NONE`) or absent. A non-zero type with no value
    /// gives a `Union` whose `table` is nil.
    public func union(_ id: Int) throws -> Union? {
        let type = try scalar(id - 1, default: UInt8(0))
        guard type != 0 else { return nil }
        return Union(type: type, table: try table(id))
    }
}

/// A union value: the type tag (the member's 1-based index in the schema's
/// union declaration) and the member table.
public struct Union {
    /// The union type; 0 (`NONE`) never appears here.
    public let type: UInt8
    /// The member table; nil when the buffer has a type but no value.
    public let table: Table?
}

/// An inline struct: a fixed-size run of bytes inside a table or vector.
/// Field offsets are the schema's struct layout (see `StructWriter`).
public struct Struct {
    /// The buffer the struct lives in.
    public let buffer: FlatBuffer
    /// Byte offset of the struct's first byte.
    public let position: Int
    /// The struct's size in bytes (checked to be inside the buffer).
    public let size: Int

    /// The scalar at byte `offset` inside the struct.
    public func scalar<T: FlatBufferScalar>(at offset: Int, as _: T.Type = T.self) throws -> T {
        guard offset >= 0, T.byteWidth <= size - offset else {
            throw FlatBufferError.structFieldOutOfRange(offset: position, fieldOffset: offset, fieldSize: T.byteWidth, structSize: size)
        }
        return buffer.load(T.self, at: position + offset)
    }

    /// The nested struct of `size` bytes at byte `offset` inside this one.
    public func structure(at offset: Int, size nestedSize: Int) throws -> Struct {
        guard offset >= 0, nestedSize >= 0, nestedSize <= size - offset else {
            throw FlatBufferError.structFieldOutOfRange(offset: position, fieldOffset: offset, fieldSize: nestedSize, structSize: size)
        }
        return Struct(buffer: buffer, position: position + offset, size: nestedSize)
    }

    /// The struct's bytes (a slice of the buffer, no copy).
    public var bytes: ArraySlice<UInt8> { buffer.bytes[position..<(position + size)] }
}

/// A vector of scalars read in place: a random-access collection over bytes
/// whose bounds were checked when it was made. Element access decodes
/// little-endian on the fly; `array` copies.
public struct ScalarVector<Element: FlatBufferScalar>: RandomAccessCollection {
    let bytes: [UInt8]
    /// Byte offset of the first element in the buffer.
    public let start: Int
    /// The number of elements.
    public let count: Int

    init(bytes: [UInt8], start: Int, count: Int) {
        self.bytes = bytes
        self.start = start
        self.count = count
    }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// `count`.
    public var endIndex: Int { count }

    /// The element at `index`; like an array, an index outside `0..<count` traps.
    public subscript(index: Int) -> Element {
        precondition(index >= 0 && index < count, "ScalarVector index \(index) out of range 0..<\(count)")
        return bytes.withUnsafeBytes { Element.readLittleEndian(from: $0, at: start + index * Element.byteWidth) }
    }

    /// A copy of the elements (one memory copy on little-endian hosts).
    public var array: [Element] {
        if count == 0 { return [] }
        if Element.isBitCopyable && hostIsLittleEndian {
            return [Element](unsafeUninitializedCapacity: count) { dst, initialized in
                bytes.withUnsafeBytes { src in
                    UnsafeMutableRawBufferPointer(dst).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: src[start..<(start + count * Element.byteWidth)]))
                }
                initialized = count
            }
        }
        return bytes.withUnsafeBytes { raw in
            (0..<count).map { Element.readLittleEndian(from: raw, at: start + $0 * Element.byteWidth) }
        }
    }
}
