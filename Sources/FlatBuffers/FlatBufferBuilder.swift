/// A reference to an object (table, string, vector) already written by a
/// `FlatBufferBuilder`: its distance from the end of the buffer being built.
/// Only meaningful for the builder that returned it.
public struct FlatBufferOffset: Hashable, Sendable {
    /// Bytes from the end of the buffer to the object's first byte.
    public let value: Int
    init(_ value: Int) { self.value = value }
}

/// Builds a FlatBuffer back to front, the way the official implementations do:
/// children first (strings, vectors, sub-tables), then the tables that point
/// to them, and the root last with `finish`.
///
/// ```swift
/// let b = FlatBufferBuilder()
/// let name = b.createString("conv1")
/// let shape = b.createVector([Int32(1), 224, 224, 3])
/// b.startTable()
/// b.add(0, shape)
/// b.add(1, Int8(9), default: 0)
/// b.add(3, name)
/// let tensor = b.endTable()
/// let bytes = try b.finish(root: tensor, fileIdentifier: "TFL3")
/// ```
///
/// - Scalars equal to their schema default are omitted unless `forceDefaults`.
/// - Identical vtables are written once and shared (deduplication).
/// - Output depends only on the sequence of calls: no hashing order, clock or
///   randomness reaches the bytes.
/// - Misuse (adding a field with no open table, creating a string inside an
///   open table, an offset from another builder, a buffer past 2 GiB, …)
///   never traps: the first one is recorded in `error`, later calls do
///   nothing, and `finish` throws it.
public final class FlatBufferBuilder {
    /// Largest buffer the format can address with signed 32-bit offsets.
    public static let maxSize = Int(Int32.max)
    /// Largest field id a vtable (16-bit size) can hold.
    public static let maxFieldID = (Int(UInt16.max) - 4) / 2 - 1

    /// Write scalar fields even when they equal their default.
    public var forceDefaults: Bool

    /// The first misuse, if any; `finish` throws it.
    public private(set) var error: FlatBufferBuilderError?

    /// Storage; the built bytes are `storage[head...]`.
    private var storage: [UInt8]
    private var head: Int
    /// Largest alignment any written object asked for; `finish` aligns the whole buffer to it.
    private var minAlign = 1
    /// The open table, if any: its start (bytes used) and its fields (id, bytes used after writing).
    private var tableStart: Int?
    private var fields: [(id: Int, offset: Int)] = []
    /// Written vtables (their entries) → offset of the first copy; looked up, never iterated.
    private var vtables: [[UInt16]: Int] = [:]
    private var finished = false

    /// Creates an empty builder; the buffer grows as needed (doubling), so an
    /// exporter that knows its weights' size can pass it to avoid the copies.
    public init(initialCapacity: Int = 1024, forceDefaults: Bool = false) {
        let capacity = max(16, min(initialCapacity, Self.maxSize))
        storage = [UInt8](repeating: 0, count: capacity)
        head = capacity
        self.forceDefaults = forceDefaults
    }

    /// Bytes written so far.
    public var size: Int { storage.count - head }

    /// Forgets everything written, keeping the allocated storage and `forceDefaults`.
    public func reset() {
        head = storage.count
        minAlign = 1
        tableStart = nil
        fields = []
        vtables = [:]
        finished = false
        error = nil
    }

    // MARK: - Low level

    /// Records the first misuse (later ones are consequences of it).
    private func fail(_ reason: String) {
        if error == nil { error = FlatBufferBuilderError(reason) }
    }

    /// True when the builder can accept more writes: no earlier misuse, not
    /// finished, and (unless `allowedInTable`) no table open.
    private func ready(_ operation: @autoclosure () -> String, allowedInTable: Bool = false) -> Bool {
        if error != nil { return false }
        if finished { fail("\(operation()) after finish (call reset() to start a new buffer)"); return false }
        if !allowedInTable, tableStart != nil {
            fail("\(operation()) while a table is open; create strings, vectors and sub-tables before startTable()")
            return false
        }
        return true
    }

    /// Makes room for `n` more bytes at the front.
    private func reserve(_ n: Int) -> Bool {
        guard n >= 0, n <= Self.maxSize - size else {
            fail("the buffer would exceed \(Self.maxSize) bytes, the FlatBuffers limit")
            return false
        }
        if head >= n { return true }
        let used = size
        var capacity = storage.count
        while capacity - used < n { capacity = capacity > Self.maxSize / 2 ? used + n : capacity * 2 }
        var grown = [UInt8](repeating: 0, count: capacity)
        let newHead = capacity - used
        grown.withUnsafeMutableBytes { dst in
            storage.withUnsafeBytes { src in
                UnsafeMutableRawBufferPointer(rebasing: dst[newHead..<capacity])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: src[head..<storage.count]))
            }
        }
        storage = grown
        head = newHead
        return true
    }

    /// Pads with zeros so that after `additional` more bytes, the next write
    /// of `alignment` bytes is aligned (relative to the end, which `finish`
    /// aligns to `minAlign`).
    private func prepare(_ alignment: Int, _ additional: Int) -> Bool {
        if alignment > minAlign { minAlign = alignment }
        let pad = (alignment - (size + additional) % alignment) % alignment
        guard reserve(pad + alignment + additional) else { return false }
        for _ in 0..<pad {
            head -= 1
            storage[head] = 0
        }
        return true
    }

    /// Writes a scalar at the front (space reserved by `prepare`).
    private func push<T: FlatBufferScalar>(_ value: T) {
        head -= T.byteWidth
        let at = head
        storage.withUnsafeMutableBytes { value.writeLittleEndian(to: $0, at: at) }
    }

    /// Writes raw bytes at the front (space reserved by the caller).
    private func pushBytes<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        let n = bytes.count
        head -= n
        let at = head
        let done: Void? = bytes.withContiguousStorageIfAvailable { src in
            storage.withUnsafeMutableBytes { dst in
                UnsafeMutableRawBufferPointer(rebasing: dst[at..<(at + n)]).copyMemory(from: UnsafeRawBufferPointer(src))
            }
        }
        if done == nil {
            var i = at
            for b in bytes { storage[i] = b; i += 1 }
        }
    }

    /// Writes raw memory at the front (space reserved by the caller).
    private func pushRaw(_ src: UnsafeRawBufferPointer) {
        let n = src.count
        head -= n
        let at = head
        storage.withUnsafeMutableBytes { dst in
            UnsafeMutableRawBufferPointer(rebasing: dst[at..<(at + n)]).copyMemory(from: src)
        }
    }

    /// Writes an offset to `target`, relative to where it is written.
    private func pushOffset(_ target: FlatBufferOffset) {
        push(UInt32(size + 4 - target.value))
    }

    /// True when `offset` refers to something this builder already wrote.
    private func valid(_ offset: FlatBufferOffset, _ what: @autoclosure () -> String) -> Bool {
        guard offset.value > 0, offset.value <= size else {
            fail("\(what()): offset \(offset.value) does not refer to an object written by this builder (size \(size))")
            return false
        }
        return true
    }

    private func validAlignment(_ alignment: Int, _ what: String) -> Bool {
        guard alignment >= 1, alignment <= 256, alignment & (alignment - 1) == 0 else {
            fail("\(what): alignment \(alignment) is not a power of two between 1 and 256")
            return false
        }
        return true
    }

    // MARK: - Strings and vectors

    /// Writes a string: length, UTF-8 bytes, 0 terminator.
    public func createString(_ string: String) -> FlatBufferOffset {
        guard ready("createString") else { return FlatBufferOffset(0) }
        var s = string
        let n = s.utf8.count
        guard prepare(4, n + 1) else { return FlatBufferOffset(0) }
        guard reserve(n + 1) else { return FlatBufferOffset(0) }
        head -= 1
        storage[head] = 0
        s.withUTF8 { pushBytes($0) }
        push(UInt32(n))
        return FlatBufferOffset(size)
    }

    /// Pads for a vector of `count` elements of `elementSize` bytes whose first
    /// element must be aligned to `alignment`, and reserves its space.
    private func startVector(count: Int, elementSize: Int, alignment: Int) -> Bool {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: elementSize)
        guard !overflow, bytes <= Self.maxSize else {
            fail("a vector of \(count) × \(elementSize) bytes exceeds the FlatBuffers limit")
            return false
        }
        return prepare(4, bytes) && prepare(alignment, bytes) && reserve(bytes + 4)
    }

    private func endVector(count: Int) -> FlatBufferOffset {
        push(UInt32(count))
        return FlatBufferOffset(size)
    }

    /// Writes a vector of scalars (`[int]`, `[float]`, `[bool]`, …), elements
    /// aligned to their width.
    public func createVector<T: FlatBufferScalar>(_ values: [T]) -> FlatBufferOffset {
        guard ready("createVector") else { return FlatBufferOffset(0) }
        guard startVector(count: values.count, elementSize: T.byteWidth, alignment: T.byteWidth) else { return FlatBufferOffset(0) }
        if T.isBitCopyable && hostIsLittleEndian {
            values.withUnsafeBytes { pushRaw($0) }
        } else {
            for v in values.reversed() { push(v) }
        }
        return endVector(count: values.count)
    }

    /// Writes a byte vector (`[ubyte]`) whose first byte is aligned to
    /// `alignment` in the finished buffer — the schema's `force_align`
    /// (TFLite's `Buffer.data` uses 16). Copies `bytes` once.
    public func createVector<C: Collection>(bytes: C, alignment: Int = 1) -> FlatBufferOffset where C.Element == UInt8 {
        guard ready("createVector(bytes:)"), validAlignment(alignment, "createVector(bytes:)") else { return FlatBufferOffset(0) }
        let n = bytes.count
        guard startVector(count: n, elementSize: 1, alignment: alignment) else { return FlatBufferOffset(0) }
        pushBytes(bytes)
        return endVector(count: n)
    }

    /// Writes a vector of offsets: tables, strings or vectors written earlier.
    public func createVector(offsets: [FlatBufferOffset]) -> FlatBufferOffset {
        guard ready("createVector(offsets:)") else { return FlatBufferOffset(0) }
        guard startVector(count: offsets.count, elementSize: 4, alignment: 4) else { return FlatBufferOffset(0) }
        for (i, o) in offsets.enumerated().reversed() {
            guard valid(o, "createVector(offsets:) element \(i)") else { return FlatBufferOffset(0) }
            pushOffset(o)
        }
        return endVector(count: offsets.count)
    }

    /// Writes each string, then a vector of them.
    public func createVector(strings: [String]) -> FlatBufferOffset {
        let offsets = strings.map { createString($0) }
        return createVector(offsets: offsets)
    }

    /// Writes a vector of structs; every struct must have the same size and alignment.
    public func createVector(structs: [StructWriter]) -> FlatBufferOffset {
        guard ready("createVector(structs:)") else { return FlatBufferOffset(0) }
        let size = structs.first?.size ?? 0
        let alignment = structs.first?.alignment ?? 1
        for (i, s) in structs.enumerated() where s.size != size || s.alignment != alignment {
            fail("createVector(structs:): struct \(i) has size \(s.size) / alignment \(s.alignment), the first has \(size) / \(alignment)")
            return FlatBufferOffset(0)
        }
        guard startVector(count: structs.count, elementSize: size, alignment: alignment) else { return FlatBufferOffset(0) }
        for s in structs.reversed() { pushBytes(s.paddedBytes) }
        return endVector(count: structs.count)
    }

    // MARK: - Tables

    /// Opens a table; add its fields, then call `endTable`. Tables do not nest:
    /// write sub-tables, strings and vectors first.
    public func startTable() {
        guard ready("startTable") else { return }
        tableStart = size
        fields.removeAll(keepingCapacity: true)
    }

    /// Builds a table: `startTable()`, `body(self)`, `endTable()`.
    public func table(_ body: (FlatBufferBuilder) -> Void) -> FlatBufferOffset {
        startTable()
        body(self)
        return endTable()
    }

    /// Checks that a field can be added to the open table.
    private func canAdd(_ id: Int) -> Bool {
        if error != nil { return false }
        guard tableStart != nil else { fail("field \(id) added with no open table (call startTable() first)"); return false }
        guard id >= 0, id <= Self.maxFieldID else { fail("field id \(id) outside 0…\(Self.maxFieldID)"); return false }
        if fields.contains(where: { $0.id == id }) { fail("field \(id) added twice to the same table"); return false }
        return true
    }

    /// Adds scalar field `id`, omitted when it equals `default` (unless `forceDefaults`).
    public func add<T: FlatBufferScalar>(_ id: Int, _ value: T, default defaultValue: T) {
        if value.isIdentical(to: defaultValue) && !forceDefaults { return }
        addScalar(id, value)
    }

    /// Adds scalar field `id` when `value` is not nil (schema fields declared `= null`).
    public func add<T: FlatBufferScalar>(_ id: Int, _ value: T?) {
        guard let value else { return }
        addScalar(id, value)
    }

    /// Where the table's inline bytes begin: after the padding in front of the
    /// first field, so that padding never changes the table's size (which would
    /// defeat vtable sharing between otherwise identical tables).
    private func markFieldStart() {
        if fields.isEmpty { tableStart = size }
    }

    private func addScalar<T: FlatBufferScalar>(_ id: Int, _ value: T) {
        guard canAdd(id), prepare(T.byteWidth, 0) else { return }
        markFieldStart()
        push(value)
        fields.append((id, size))
    }

    /// Adds offset field `id` (a string, vector or table written earlier); nil adds nothing.
    public func add(_ id: Int, _ offset: FlatBufferOffset?) {
        guard let offset else { return }
        guard canAdd(id), prepare(4, 0), valid(offset, "field \(id)") else { return }
        markFieldStart()
        pushOffset(offset)
        fields.append((id, size))
    }

    /// Adds an inline struct as field `id`.
    public func add(_ id: Int, _ value: StructWriter) {
        guard canAdd(id), prepare(value.alignment, value.size) else { return }
        markFieldStart()
        pushBytes(value.paddedBytes)
        fields.append((id, size))
    }

    /// Adds a union: its type tag as field `id - 1` and its value as field `id`
    /// (flatc's numbering). Type 0 (`NONE`) adds nothing.
    public func addUnion(_ id: Int, type: UInt8, value: FlatBufferOffset?) {
        guard type != 0 else { return }
        guard id >= 1 else { fail("union value field id \(id) leaves no id for its type field"); return }
        add(id - 1, type, default: 0)
        add(id, value)
    }

    /// Closes the open table: writes its vtable offset, and its vtable unless an
    /// identical one was written before, in which case that one is shared.
    public func endTable() -> FlatBufferOffset {
        if error != nil { return FlatBufferOffset(0) }
        guard tableStart != nil else { fail("endTable() with no open table"); return FlatBufferOffset(0) }
        guard prepare(4, 0) else { return FlatBufferOffset(0) }
        markFieldStart()
        guard let start = tableStart else { return FlatBufferOffset(0) }
        push(Int32(0))  // placeholder for the offset to the vtable
        let object = size
        let tableSize = object - start
        guard tableSize <= Int(UInt16.max) else {
            fail("a table's inline size \(tableSize) exceeds 65535 bytes")
            return FlatBufferOffset(0)
        }
        let slots = (fields.map(\.id).max() ?? -1) + 1
        var entries = [UInt16](repeating: 0, count: slots + 2)
        entries[0] = UInt16(4 + 2 * slots)
        entries[1] = UInt16(tableSize)
        for f in fields { entries[f.id + 2] = UInt16(object - f.offset) }
        tableStart = nil
        fields.removeAll(keepingCapacity: true)

        let vtable: Int
        if let existing = vtables[entries] {
            vtable = existing
        } else {
            guard reserve(2 * entries.count) else { return FlatBufferOffset(0) }
            for e in entries.reversed() { push(e) }
            vtable = size
            vtables[entries] = vtable
        }
        // vtable position = table position − soffset; positions are (end − offset).
        let soffset = Int32(vtable - object)
        let at = storage.count - object
        storage.withUnsafeMutableBytes { soffset.writeLittleEndian(to: $0, at: at) }
        return FlatBufferOffset(object)
    }

    // MARK: - Finishing

    /// Writes the root offset (and the 4-character file identifier, if any),
    /// aligns the whole buffer, and returns its bytes. Throws the first misuse.
    public func finish(root: FlatBufferOffset, fileIdentifier: String? = nil) throws -> [UInt8] {
        if ready("finish") {
            let identifier = fileIdentifier.map { Array($0.utf8) }
            if let identifier, identifier.count != 4 {
                fail("file identifier \"\(fileIdentifier ?? "")\" is \(identifier.count) bytes, not 4")
            } else if valid(root, "finish root"), prepare(minAlign, 4 + (identifier?.count ?? 0)) {
                if let identifier, reserve(4) { pushBytes(identifier) }
                if reserve(4) {
                    pushOffset(root)
                    finished = true
                }
            }
        }
        if let error { throw error }
        return Array(storage[head...])
    }
}

/// Lays out one struct value the way flatc does: each field aligned to its own
/// size (nested structs to their alignment), the whole padded to the largest
/// alignment. Append the fields in schema order.
public struct StructWriter: Sendable, Equatable {
    /// The bytes so far (without trailing padding).
    public private(set) var bytes: [UInt8] = []
    /// The struct's alignment: its largest field alignment.
    public private(set) var alignment = 1

    /// An empty struct value.
    public init() {}

    /// The struct's size: the bytes padded to `alignment`.
    public var size: Int { (bytes.count + alignment - 1) / alignment * alignment }

    /// The bytes padded to `size`.
    public var paddedBytes: [UInt8] { bytes + [UInt8](repeating: 0, count: size - bytes.count) }

    /// Byte offset the next field of `alignment` would get.
    public func nextOffset(alignment a: Int) -> Int { (bytes.count + a - 1) / a * a }

    /// Appends a scalar field, padding to its width first.
    public mutating func append<T: FlatBufferScalar>(_ value: T) {
        pad(to: T.byteWidth)
        let at = bytes.count
        bytes.append(contentsOf: [UInt8](repeating: 0, count: T.byteWidth))
        bytes.withUnsafeMutableBytes { value.writeLittleEndian(to: $0, at: at) }
    }

    /// Appends a nested struct field, padding to its alignment first.
    public mutating func append(_ nested: StructWriter) {
        pad(to: nested.alignment)
        bytes.append(contentsOf: nested.paddedBytes)
    }

    private mutating func pad(to a: Int) {
        if a > alignment { alignment = a }
        let target = nextOffset(alignment: a)
        if target > bytes.count { bytes.append(contentsOf: [UInt8](repeating: 0, count: target - bytes.count)) }
    }
}
