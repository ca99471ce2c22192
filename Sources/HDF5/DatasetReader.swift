/// Reading a dataset's values: the stored bytes of its compact, contiguous or
/// chunked storage (unallocated storage and missing chunks read as the fill
/// value, or zeros), then decoded by the datatype.
enum DatasetReader {
    static func read(_ file: FileData, header: ObjectHeader, space: Dataspace, type: HDF5Datatype, path: String) throws -> HDF5Value {
        let context = describe("dataset", path)
        let at = header.position
        // Every element counts as at least a byte, so that zero-size elements cannot make a huge count cheap.
        guard let count = space.count, count <= file.limit, let total = Checked.mul(count, type.storageSize(file)), total <= file.limit else {
            throw file.error(at, context, "dataset of \(space.dims) × \(type.storageSize(file)) bytes exceeds the limit of \(file.limit) bytes")
        }
        var raw: [UInt8] = []
        if count > 0 {
            guard header.first(ObjectHeader.externalFiles) == nil else {
                throw file.error(at, context, "datasets stored in external files are not supported")
            }
            guard let message = header.first(ObjectHeader.layout) else { throw file.error(at, context, "dataset has no data layout message") }
            var c = try file.cursor(at: message.start, length: message.size, context)
            let layout = try Layout.parse(&c)
            let fill = try fillValue(file, header: header, elementSize: type.storageSize(file), context: context)
            raw = try bytes(file, header: header, layout: layout, space: space, total: total, fill: fill, context: context)
        }
        var decoder = ValueDecoder(heap: GlobalHeap(file, context: context, budget: file.limit))
        return try decoder.decode(type, count: count, raw[...], at: at)
    }

    /// The fill value's bytes (nil: zeros).
    private static func fillValue(_ file: FileData, header: ObjectHeader, elementSize: Int, context: String) throws -> [UInt8]? {
        let message = header.first(ObjectHeader.fillValue) ?? header.first(ObjectHeader.oldFillValue)
        guard let message else { return nil }
        var c = try file.cursor(at: message.start, length: message.size, context)
        guard let value = try Messages.fillValue(&c, old: message.type == ObjectHeader.oldFillValue) else { return nil }
        guard value.count == elementSize else {
            throw file.error(message.start, context, "fill value of \(value.count) bytes for \(elementSize)-byte elements")
        }
        return value.allSatisfy { $0 == 0 } ? nil : Array(value)
    }

    /// `total` bytes filled with `fill` (or zeros).
    private static func filled(_ total: Int, _ fill: [UInt8]?) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: total)
        if let fill, !fill.isEmpty {
            for i in stride(from: 0, to: total, by: fill.count) {
                for k in 0..<min(fill.count, total - i) { out[i + k] = fill[k] }
            }
        }
        return out
    }

    private static func bytes(_ file: FileData, header: ObjectHeader, layout: Layout, space: Dataspace, total: Int,
                              fill: [UInt8]?, context: String) throws -> [UInt8] {
        switch layout {
        case .compact(let range):
            guard range.count >= total else {
                throw file.error(range.lowerBound, context, "compact data of \(range.count) bytes, the dataspace needs \(total)")
            }
            return Array(file.bytes[range.lowerBound..<(range.lowerBound + total)])
        case .contiguous(let address, let size):
            guard let address else { return filled(total, fill) }
            guard size >= total else {
                throw file.error(header.position, context, "contiguous storage of \(size) bytes, the dataspace needs \(total)")
            }
            let pos = try file.position(address, need: total, at: header.position, context)
            return Array(file.bytes[pos..<(pos + total)])
        case .chunked(let chunking):
            return try chunked(file, header: header, chunking: chunking, space: space, elementSize: total / max(1, space.count ?? 1),
                               total: total, fill: fill, context: context)
        }
    }

    private static func chunked(_ file: FileData, header: ObjectHeader, chunking: Layout.Chunking, space: Dataspace, elementSize: Int,
                                total: Int, fill: [UInt8]?, context: String) throws -> [UInt8] {
        let at = header.position
        var filters: [Filter] = []
        if let message = header.first(ObjectHeader.filterPipeline) {
            var c = try file.cursor(at: message.start, length: message.size, context)
            filters = try Filter.pipeline(&c)
        }
        let grid = try ChunkGrid(space: space, layout: chunking, elementSize: elementSize, file: file, at: at, context: context)
        let chunks = try ChunkIndex.chunks(file, layout: chunking, grid: grid, filtered: !filters.isEmpty, context: context, at: at)
        var out = filled(total, fill)
        for chunk in chunks {
            let stored = file.bytes[chunk.position..<(chunk.position + chunk.size)]
            var data: [UInt8]
            let partial = zip(zip(chunk.coords, grid.chunk), grid.dims).contains { $0.0 * $0.1 > $1 - $0.1 }
            if filters.isEmpty || (chunking.unfilteredEdges && partial) {
                guard chunk.size >= grid.chunkBytes else {
                    throw file.error(chunk.position, context, "chunk \(chunk.coords) has \(chunk.size) bytes, expected \(grid.chunkBytes)")
                }
                data = Array(stored.prefix(grid.chunkBytes))
            } else {
                data = try Filters.decode(stored, filters: filters, mask: chunk.filterMask, chunkBytes: grid.chunkBytes,
                                          elementSize: grid.elementSize, file: file, at: chunk.position, context: "\(context), chunk \(chunk.coords)")
            }
            place(data, coords: chunk.coords, grid: grid, into: &out)
        }
        return out
    }

    /// Copies the part of a chunk inside the dataset to its place in the row-major output, one run of the
    /// last dimension at a time.
    static func place(_ chunk: [UInt8], coords: [Int], grid: ChunkGrid, into out: inout [UInt8]) {
        let rank = grid.dims.count
        let es = grid.elementSize
        let start = zip(coords, grid.chunk).map { $0 * $1 }
        let extent = (0..<rank).map { min(grid.chunk[$0], grid.dims[$0] - start[$0]) }
        guard rank > 0, extent.allSatisfy({ $0 > 0 }) else { return }
        let runBytes = extent[rank - 1] * es
        let runs = extent.dropLast().reduce(1, *)
        chunk.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                guard let from = src.baseAddress, let to = dst.baseAddress else { return }
                for run in 0..<runs {
                    // The run's position: `run` as mixed-radix digits over the extent of the leading dimensions.
                    var rest = run
                    var chunkOffset = 0, dataOffset = start[rank - 1] * es
                    var chunkScale = grid.chunk[rank - 1] * es, dataScale = grid.dims[rank - 1] * es
                    for d in stride(from: rank - 2, through: 0, by: -1) {
                        let i = rest % extent[d]
                        rest /= extent[d]
                        chunkOffset += i * chunkScale
                        dataOffset += (start[d] + i) * dataScale
                        chunkScale *= grid.chunk[d]
                        dataScale *= grid.dims[d]
                    }
                    to.advanced(by: dataOffset).copyMemory(from: from.advanced(by: chunkOffset), byteCount: runBytes)
                }
            }
        }
    }
}
