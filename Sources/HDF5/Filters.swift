import ZipArchive

/// Undoing a chunk's filter pipeline, last filter first: deflate (zlib-wrapped
/// DEFLATE, inflated by ZipArchive's bounded decoder), shuffle, and
/// fletcher32 (checked, then stripped). Any other filter is refused by name.
enum Filters {
    /// `stored` with every filter not skipped by `mask` undone; the result must be `chunkBytes` long.
    static func decode(_ stored: ArraySlice<UInt8>, filters: [Filter], mask: UInt32, chunkBytes: Int, elementSize: Int,
                       file: FileData, at: Int, context: String) throws -> [UInt8] {
        func fail(_ r: String) -> HDF5Error { file.error(at, context, r) }
        // Each fletcher32 checksum adds 4 bytes, so inflating never needs more than this.
        let bound = chunkBytes + 4 * filters.filter { $0.id == Filter.fletcher32 }.count
        var data = Array(stored)
        for (i, filter) in filters.enumerated().reversed() {
            if i < 32, mask & (1 << UInt32(i)) != 0 { continue }
            switch filter.id {
            case Filter.deflate:
                data = try inflate(data, limit: bound, fail: fail)
            case Filter.shuffle:
                let size = filter.clientData.first.map { Int($0) } ?? elementSize
                guard size > 0 else { throw fail("shuffle filter with an element size of 0") }
                data = unshuffle(data, elementSize: size)
            case Filter.fletcher32:
                data = try checkFletcher(data, fail: fail)
            default:
                throw fail("filter \(filter.displayName) is not supported (deflate, shuffle and fletcher32 are)")
            }
        }
        guard data.count == chunkBytes else {
            throw fail("chunk decodes to \(data.count) bytes, expected \(chunkBytes)")
        }
        return data
    }

    /// zlib stream: a 2-byte header (deflate, no preset dictionary, check bits), raw DEFLATE, Adler-32.
    private static func inflate(_ data: [UInt8], limit: Int, fail: (String) -> HDF5Error) throws -> [UInt8] {
        guard data.count >= 2 else { throw fail("deflate chunk of \(data.count) bytes has no zlib header") }
        let cmf = Int(data[0]), flg = Int(data[1])
        guard cmf & 0x0F == 8, cmf >> 4 <= 7, (cmf << 8 | flg) % 31 == 0, flg & 0x20 == 0 else {
            throw fail("deflate chunk does not start with a zlib header (0x\(String(cmf, radix: 16)) 0x\(String(flg, radix: 16)))")
        }
        do {
            return try Inflate.decompress(Array(data[2...]), expectedSize: nil, limit: limit)
        } catch let e as Inflate.Error {
            throw fail("deflate chunk: \(e.reason)")
        }
    }

    /// Inverse of the shuffle filter: byte k of every element was stored in plane k; a tail that is not a
    /// whole element was stored as is.
    static func unshuffle(_ data: [UInt8], elementSize: Int) -> [UInt8] {
        let count = data.count / elementSize
        guard elementSize > 1, count > 1 else { return data }
        var out = data
        for k in 0..<elementSize {
            let plane = k * count
            for i in 0..<count { out[i * elementSize + k] = data[plane + i] }
        }
        return out
    }

    /// Checks and strips the trailing Fletcher-32 (stored little-endian; libhdf5 also accepts the
    /// byte order some old versions wrote).
    private static func checkFletcher(_ data: [UInt8], fail: (String) -> HDF5Error) throws -> [UInt8] {
        guard data.count >= 4 else { throw fail("fletcher32 chunk of \(data.count) bytes has no checksum") }
        let n = data.count - 4
        let stored = UInt32(data[n]) | UInt32(data[n + 1]) << 8 | UInt32(data[n + 2]) << 16 | UInt32(data[n + 3]) << 24
        let computed = Checksum.fletcher32(data[0..<n])
        let swapped = (computed & 0x00FF_00FF) << 8 | (computed & 0xFF00_FF00) >> 8
        guard stored == computed || stored == swapped else {
            throw fail("fletcher32 checksum mismatch (stored 0x\(hex(stored)), computed 0x\(hex(computed)))")
        }
        return Array(data[0..<n])
    }
}
