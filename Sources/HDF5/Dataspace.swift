/// The dataspace message (versions 1 and 2): scalar, simple (with optional
/// maximum dimensions; `nil` there is H5S_UNLIMITED) or null.
struct Dataspace: Equatable {
    enum Kind: Equatable { case scalar, simple, null }

    let kind: Kind
    let dims: [Int]
    /// Maximum dimensions (equal to `dims` when the message has none); nil entries are unlimited.
    let maxDims: [Int?]

    /// The most dimensions HDF5 allows.
    static let maxRank = 32

    /// How many elements the dataspace holds (0 for null), nil on overflow.
    var count: Int? {
        switch kind {
        case .null: return 0
        case .scalar: return 1
        case .simple: return Checked.product(dims)
        }
    }

    /// The shape the public API reports: [] for scalar and null dataspaces.
    var shape: [Int] { kind == .simple ? dims : [] }

    static func parse(_ c: inout Cursor) throws -> Dataspace {
        let version = try c.version("dataspace message", 1...2)
        let at = c.pos
        let rank = try c.u8("dimensionality")
        let flags = try c.u8("dataspace flags")
        var kind: Kind = rank == 0 ? .scalar : .simple
        if version == 1 {
            try c.skip(5)
        } else {
            let type = try c.u8("dataspace type")
            switch type {
            case 0: kind = .scalar
            case 1: kind = .simple
            case 2: kind = .null
            default: throw c.fail(at: at + 2, "dataspace type \(type) is not one of scalar (0), simple (1), null (2)")
            }
        }
        guard rank <= maxRank else { throw c.fail(at: at, "dataspace has \(rank) dimensions (at most \(maxRank))") }
        guard kind == .simple || rank == 0 else {
            throw c.fail(at: at, "a \(kind == .null ? "null" : "scalar") dataspace with \(rank) dimensions")
        }
        var dims: [Int] = []
        for _ in 0..<rank { dims.append(try c.length("dimension size")) }
        var maxDims: [Int?] = dims.map { $0 }
        if flags & 1 != 0 {
            maxDims = []
            for _ in 0..<rank {
                let v = try c.uint(c.file.lengthSize, "maximum dimension size")
                let unlimited = c.file.lengthSize >= 8 ? UInt64.max : (UInt64(1) << UInt64(8 * c.file.lengthSize)) - 1
                maxDims.append(v == unlimited ? nil : (v <= UInt64(Int.max) ? Int(v) : nil))
            }
        }
        if version == 1 && flags & 2 != 0 { try c.skip(rank * c.file.lengthSize, "permutation indices") }
        let space = Dataspace(kind: kind, dims: dims, maxDims: maxDims)
        guard space.count != nil else { throw c.fail(at: at, "dataspace \(dims) holds more elements than can be counted") }
        return space
    }
}
