/// Object headers, versions 1 and 2: the prefix, the header messages of the
/// first chunk and of every continuation block (v1: bare messages; v2:
/// "OCHK" blocks with a checksum), followed in order. Continuation chains are
/// bounded and may not revisit a block.
struct ObjectHeader {
    /// One header message; its data is `file.bytes[start ..< start + size]`.
    struct Message {
        let type: Int
        let flags: Int
        let start: Int
        let size: Int
        var range: Range<Int> { start..<(start + size) }
    }

    /// Absolute position of the header.
    let position: Int
    let version: Int
    let messages: [Message]
    /// How many chunks the messages came from (the first and its continuation blocks).
    let chunks: Int

    // Message types used by this reader.
    static let nilType = 0x00, dataspace = 0x01, linkInfo = 0x02, datatype = 0x03, oldFillValue = 0x04
    static let fillValue = 0x05, link = 0x06, externalFiles = 0x07, layout = 0x08, groupInfo = 0x0A
    static let filterPipeline = 0x0B, attribute = 0x0C, continuation = 0x10, symbolTable = 0x11, attributeInfo = 0x15

    /// The most chunks (the first plus continuations) one header may have.
    static let maxChunks = 4096

    func all(_ type: Int) -> [Message] { messages.filter { $0.type == type } }
    func first(_ type: Int) -> Message? { messages.first { $0.type == type } }

    /// Reads the object header at file address `address`; `path` names it in errors.
    static func read(_ file: FileData, address: UInt64, path: String?) throws -> ObjectHeader {
        let context = describe("object header", path)
        let pos = try file.position(address, need: 1, at: 0, context)
        var c = try file.cursor(at: pos, context)
        if file.size - pos >= 4, file.bytes[pos..<(pos + 4)].elementsEqual([0x4F, 0x48, 0x44, 0x52]) {  // "OHDR"
            return try readV2(&c, context)
        }
        let version = try c.u8("object header version")
        guard version == 1 else {
            throw c.fail(at: pos, "object header version \(version) is not supported (expected 1, or 'OHDR' for version 2)")
        }
        return try readV1(&c, context)
    }

    // MARK: - Version 1

    private static func readV1(_ c: inout Cursor, _ context: String) throws -> ObjectHeader {
        let start = c.pos - 1
        try c.skip(1)
        _ = try c.u16("number of header messages")
        _ = try c.u32("object reference count")
        let size = try c.u32("object header size")
        try c.skip(4, "object header padding")  // the prefix is 12 bytes, aligned to 16
        guard size <= c.file.size - c.pos else {
            throw c.fail(at: start, "header chunk of \(size) bytes at offset \(c.pos) runs past the end of the file (size \(c.file.size))")
        }
        var messages: [Message] = []
        var pending: [(Int, Int)] = []
        try v1Messages(c.file, from: c.pos, size: size, context, into: &messages, continuations: &pending)
        let chunks = try followContinuations(c.file, pending, context, into: &messages) { file, pos, length, messages, more in
            try v1Messages(file, from: pos, size: length, context, into: &messages, continuations: &more)
        }
        return ObjectHeader(position: start, version: 1, messages: messages, chunks: chunks)
    }

    /// The messages of one v1 chunk: type (2), size (2), flags (1), reserved (3), data (size, a multiple of 8).
    private static func v1Messages(_ file: FileData, from start: Int, size: Int, _ context: String,
                                   into messages: inout [Message], continuations: inout [(Int, Int)]) throws {
        var c = try file.cursor(at: start, length: size, context)
        while c.remaining >= 8 {
            let at = c.pos
            let type = try c.u16("message type")
            let length = try c.u16("message size")
            let flags = try c.u8("message flags")
            try c.skip(3)
            guard length <= c.remaining else {
                throw c.fail(at: at, "message of type \(type) (\(length) bytes) runs past the end of its header chunk (at offset \(c.end))")
            }
            let message = Message(type: type, flags: flags, start: c.pos, size: length)
            try c.skip(length)
            try take(message, file, context, into: &messages, continuations: &continuations)
        }
    }

    // MARK: - Version 2

    private static func readV2(_ c: inout Cursor, _ context: String) throws -> ObjectHeader {
        let start = c.pos
        try c.skip(4, "signature")
        _ = try c.version("object header", 2...2)
        let flags = try c.u8("object header flags")
        if flags & 0x20 != 0 { try c.skip(16, "object header times") }
        if flags & 0x10 != 0 { try c.skip(4, "attribute phase change values") }
        let size = try c.int(1 << (flags & 3), "size of chunk 0")
        guard size <= c.remaining, c.remaining - size >= 4 else {
            throw c.fail(at: start, "header chunk 0 (\(size) bytes at offset \(c.pos)) runs past the end of the file (size \(c.file.size))")
        }
        try c.file.verifyChecksum(from: start, checksumAt: c.pos + size, context)
        let creationOrder = flags & 0x04 != 0
        var messages: [Message] = []
        var pending: [(Int, Int)] = []
        try v2Messages(c.file, from: c.pos, size: size, creationOrder: creationOrder, context, into: &messages, continuations: &pending)
        let chunks = try followContinuations(c.file, pending, context, into: &messages) { file, pos, length, messages, more in
            var k = try file.cursor(at: pos, length: length, context)
            try k.signature("OCHK", "object header continuation block")
            guard length >= 8 else { throw k.fail(at: pos, "continuation block of \(length) bytes is too small") }
            try file.verifyChecksum(from: pos, checksumAt: pos + length - 4, context)
            try v2Messages(file, from: pos + 4, size: length - 8, creationOrder: creationOrder, context, into: &messages, continuations: &more)
        }
        return ObjectHeader(position: start, version: 2, messages: messages, chunks: chunks)
    }

    /// The messages of one v2 chunk: type (1), size (2), flags (1), [creation order (2)], data. A tail
    /// shorter than a message header is a gap.
    private static func v2Messages(_ file: FileData, from start: Int, size: Int, creationOrder: Bool, _ context: String,
                                   into messages: inout [Message], continuations: inout [(Int, Int)]) throws {
        var c = try file.cursor(at: start, length: size, context)
        let headerSize = creationOrder ? 6 : 4
        while c.remaining >= headerSize {
            let at = c.pos
            let type = try c.u8("message type")
            let length = try c.u16("message size")
            let flags = try c.u8("message flags")
            if creationOrder { try c.skip(2, "message creation order") }
            guard length <= c.remaining else {
                throw c.fail(at: at, "message of type \(type) (\(length) bytes) runs past the end of its header chunk (at offset \(c.end))")
            }
            let message = Message(type: type, flags: flags, start: c.pos, size: length)
            try c.skip(length)
            try take(message, file, context, into: &messages, continuations: &continuations)
        }
    }

    // MARK: - Continuations

    /// Keeps `message`, or queues the block a continuation message points to.
    private static func take(_ message: Message, _ file: FileData, _ context: String,
                             into messages: inout [Message], continuations: inout [(Int, Int)]) throws {
        guard message.type == continuation else {
            if message.type != nilType { messages.append(message) }
            return
        }
        var c = try file.cursor(at: message.start, length: message.size, context)
        let at = c.pos
        guard let address = try c.address("continuation address") else {
            throw c.fail(at: at, "continuation message has an undefined address")
        }
        let length = try c.length("continuation length")
        guard address <= UInt64(Int.max - file.base), file.base + Int(address) <= file.size,
              length <= file.size - (file.base + Int(address)) else {
            throw c.fail(at: at, "continuation block (\(length) bytes at address \(address)) runs past the end of the file (size \(file.size))")
        }
        continuations.append((file.base + Int(address), length))
    }

    /// Reads queued continuation blocks (which may queue more) in order, each at most once; returns the
    /// number of chunks (the first one and the continuation blocks).
    private static func followContinuations(
        _ file: FileData, _ first: [(Int, Int)], _ context: String, into messages: inout [Message],
        read: (FileData, Int, Int, inout [Message], inout [(Int, Int)]) throws -> Void
    ) throws -> Int {
        var queue = first
        var next = 0
        var seen = Set<Int>()
        while next < queue.count {
            let (pos, length) = queue[next]
            next += 1
            guard seen.insert(pos).inserted else {
                throw file.error(pos, context, "continuation block at offset \(pos) is listed twice (a cycle)")
            }
            guard next < maxChunks else {
                throw file.error(pos, context, "more than \(maxChunks) continuation blocks")
            }
            var more: [(Int, Int)] = []
            try read(file, pos, length, &messages, &more)
            queue.append(contentsOf: more)
        }
        return 1 + queue.count
    }
}
