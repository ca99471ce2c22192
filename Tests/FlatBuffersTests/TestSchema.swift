import FlatBuffers

// Swift mirror of Fixtures/test.fbs: plain values, a writer (our builder), a
// reader (our Table API) and a walker that touches every field. The field ids
// below are the `id:` attributes of the schema.

enum LeafField { static let name = 0, value = 1 }
enum OtherField { static let flag = 0, values = 1 }
enum ScalarsField {
    static let b = 0, i8 = 1, u8 = 2, i16 = 3, u16 = 4, i32 = 5, u32 = 6, i64 = 7, u64 = 8, f32 = 9, f64 = 10
    static let dfltI32 = 11, dfltF32 = 12, color = 13, dfltB = 14
}
enum RootField {
    static let scalars = 0, name = 1, emptyName = 2, unicode = 3, ints = 4, doubles = 5, bools = 6, data = 7
    static let emptyInts = 8, leaves = 9, names = 10, pos = 11, mixed = 12, path = 13, payload = 15, child = 16
    static let tagged = 17, longs = 18
}
/// Union type tags of `Payload` (1-based declaration order).
enum PayloadType { static let leaf: UInt8 = 1, other: UInt8 = 2 }

struct Vec3: Equatable {
    var x: Float, y: Float, z: Float
    static let size = 12
    var writer: StructWriter {
        var w = StructWriter()
        w.append(x); w.append(y); w.append(z)
        return w
    }
    init(x: Float, y: Float, z: Float) { self.x = x; self.y = y; self.z = z }
    init(_ s: Struct) throws {
        x = try s.scalar(at: 0); y = try s.scalar(at: 4); z = try s.scalar(at: 8)
    }
    var json: [String: Any] { ["x": Double(x), "y": Double(y), "z": Double(z)] }
}

struct Mixed: Equatable {
    var a: Int8, b: Int32, c: Int16, d: Int64
    static let size = 24
    var writer: StructWriter {
        var w = StructWriter()
        w.append(a); w.append(b); w.append(c); w.append(d)
        return w
    }
    init(a: Int8, b: Int32, c: Int16, d: Int64) { self.a = a; self.b = b; self.c = c; self.d = d }
    init(_ s: Struct) throws {
        a = try s.scalar(at: 0); b = try s.scalar(at: 4); c = try s.scalar(at: 8); d = try s.scalar(at: 16)
    }
    var json: [String: Any] { ["a": Int64(a), "b": Int64(b), "c": Int64(c), "d": d] }
}

struct Tagged: Equatable {
    var tag: UInt8, pos: Vec3
    static let size = 16
    var writer: StructWriter {
        var w = StructWriter()
        w.append(tag); w.append(pos.writer)
        return w
    }
    init(tag: UInt8, pos: Vec3) { self.tag = tag; self.pos = pos }
    init(_ s: Struct) throws {
        tag = try s.scalar(at: 0); pos = try Vec3(s.structure(at: 4, size: Vec3.size))
    }
    var json: [String: Any] { ["tag": Int64(tag), "pos": pos.json] }
}

struct ScalarsValues: Equatable {
    var b = false, i8: Int8 = 0, u8: UInt8 = 0, i16: Int16 = 0, u16: UInt16 = 0, i32: Int32 = 0, u32: UInt32 = 0
    var i64: Int64 = 0, u64: UInt64 = 0, f32: Float = 0, f64: Double = 0
    var dfltI32: Int32 = 42, dfltF32: Float = 1.5, color: Int8 = 1, dfltB = true

    static let extremes = ScalarsValues(b: true, i8: -128, u8: 255, i16: -32768, u16: 65535, i32: Int32.min, u32: UInt32.max,
                                        i64: Int64.min, u64: UInt64.max, f32: -2.5, f64: 1e300,
                                        dfltI32: -1, dfltF32: 0.25, color: 2, dfltB: false)

    func write(_ b: FlatBufferBuilder) -> FlatBufferOffset {
        b.table { t in
            t.add(ScalarsField.b, self.b, default: false)
            t.add(ScalarsField.i8, i8, default: 0)
            t.add(ScalarsField.u8, u8, default: 0)
            t.add(ScalarsField.i16, i16, default: 0)
            t.add(ScalarsField.u16, u16, default: 0)
            t.add(ScalarsField.i32, i32, default: 0)
            t.add(ScalarsField.u32, u32, default: 0)
            t.add(ScalarsField.i64, i64, default: 0)
            t.add(ScalarsField.u64, u64, default: 0)
            t.add(ScalarsField.f32, f32, default: 0)
            t.add(ScalarsField.f64, f64, default: 0)
            t.add(ScalarsField.dfltI32, dfltI32, default: 42)
            t.add(ScalarsField.dfltF32, dfltF32, default: 1.5)
            t.add(ScalarsField.color, color, default: 1)
            t.add(ScalarsField.dfltB, dfltB, default: true)
        }
    }

    init(b: Bool = false, i8: Int8 = 0, u8: UInt8 = 0, i16: Int16 = 0, u16: UInt16 = 0, i32: Int32 = 0, u32: UInt32 = 0,
         i64: Int64 = 0, u64: UInt64 = 0, f32: Float = 0, f64: Double = 0,
         dfltI32: Int32 = 42, dfltF32: Float = 1.5, color: Int8 = 1, dfltB: Bool = true) {
        self.b = b; self.i8 = i8; self.u8 = u8; self.i16 = i16; self.u16 = u16; self.i32 = i32; self.u32 = u32
        self.i64 = i64; self.u64 = u64; self.f32 = f32; self.f64 = f64
        self.dfltI32 = dfltI32; self.dfltF32 = dfltF32; self.color = color; self.dfltB = dfltB
    }

    init(_ t: Table) throws {
        b = try t.scalar(ScalarsField.b, default: false)
        i8 = try t.scalar(ScalarsField.i8, default: 0)
        u8 = try t.scalar(ScalarsField.u8, default: 0)
        i16 = try t.scalar(ScalarsField.i16, default: 0)
        u16 = try t.scalar(ScalarsField.u16, default: 0)
        i32 = try t.scalar(ScalarsField.i32, default: 0)
        u32 = try t.scalar(ScalarsField.u32, default: 0)
        i64 = try t.scalar(ScalarsField.i64, default: 0)
        u64 = try t.scalar(ScalarsField.u64, default: 0)
        f32 = try t.scalar(ScalarsField.f32, default: 0)
        f64 = try t.scalar(ScalarsField.f64, default: 0)
        dfltI32 = try t.scalar(ScalarsField.dfltI32, default: 42)
        dfltF32 = try t.scalar(ScalarsField.dfltF32, default: 1.5)
        color = try t.scalar(ScalarsField.color, default: 1)
        dfltB = try t.scalar(ScalarsField.dfltB, default: true)
    }

    var json: [String: Any] {
        ["b": b, "i8": Int64(i8), "u8": Int64(u8), "i16": Int64(i16), "u16": Int64(u16), "i32": Int64(i32), "u32": Int64(u32),
         "i64": i64, "u64": u64, "f32": Double(f32), "f64": f64, "dflt_i32": Int64(dfltI32), "dflt_f32": Double(dfltF32),
         "color": ["Red", "Green", "Blue"][Int(color)], "dflt_b": dfltB]
    }
}

struct LeafValues: Equatable {
    var name: String?
    var value: Int32 = 7

    func write(_ b: FlatBufferBuilder) -> FlatBufferOffset {
        let n = name.map { b.createString($0) }
        return b.table { t in
            t.add(LeafField.name, n)
            t.add(LeafField.value, value, default: 7)
        }
    }

    init(name: String?, value: Int32 = 7) { self.name = name; self.value = value }
    init(_ t: Table) throws {
        name = try t.string(LeafField.name)
        value = try t.scalar(LeafField.value, default: 7)
    }

    var json: [String: Any] {
        var d: [String: Any] = ["value": Int64(value)]
        if let name { d["name"] = name }
        return d
    }
}

enum PayloadValue: Equatable {
    case leaf(LeafValues)
    case other(flag: Bool, values: [UInt16]?)

    var type: UInt8 {
        switch self { case .leaf: return PayloadType.leaf; case .other: return PayloadType.other }
    }

    func write(_ b: FlatBufferBuilder) -> FlatBufferOffset {
        switch self {
        case .leaf(let l): return l.write(b)
        case .other(let flag, let values):
            let v = values.map { b.createVector($0) }
            return b.table { t in
                t.add(OtherField.flag, flag, default: false)
                t.add(OtherField.values, v)
            }
        }
    }

    init(_ u: Union) throws {
        guard let t = u.table else { throw TestSchemaError.unexpected("union type \(u.type) without a value") }
        switch u.type {
        case PayloadType.leaf: self = .leaf(try LeafValues(t))
        case PayloadType.other:
            self = .other(flag: try t.scalar(OtherField.flag, default: false), values: try t.scalars(OtherField.values, as: UInt16.self))
        default: throw TestSchemaError.unexpected("unknown Payload type \(u.type)")
        }
    }

    var jsonTypeName: String {
        switch self { case .leaf: return "Leaf"; case .other: return "Other" }
    }

    var json: [String: Any] {
        switch self {
        case .leaf(let l): return l.json
        case .other(let flag, let values):
            var d: [String: Any] = ["flag": flag]
            if let values { d["values"] = values.map { Int64($0) } }
            return d
        }
    }
}

enum TestSchemaError: Error, Equatable { case unexpected(String) }

/// Every field of `Root`; nil / empty means "not written".
struct RootValues: Equatable {
    var scalars: ScalarsValues?
    var name: String?
    var emptyName: String?
    var unicode: String?
    var ints: [Int32]?
    var doubles: [Double]?
    var bools: [Bool]?
    var data: [UInt8]?
    var emptyInts: [Int32]?
    var leaves: [LeafValues]?
    var names: [String]?
    var pos: Vec3?
    var mixed: Mixed?
    var path: [Vec3]?
    var payload: PayloadValue?
    var child: [RootValues] = []  // 0 or 1 (an array so the struct can recurse)
    var tagged: Tagged?
    var longs: [Int64]?

    /// A root that uses every field, with a child that uses a few.
    static let full: RootValues = {
        var r = RootValues()
        r.scalars = .extremes
        r.name = "model"
        r.emptyName = ""
        r.unicode = "Grüße, 世界 — ✓ 🚀"
        r.ints = [1, -2, 3, Int32.max, Int32.min]
        r.doubles = [0.5, -0.00125, 3.25]
        r.bools = [true, false, true]
        r.data = (0..<37).map { UInt8($0 * 7 & 0xFF) }
        r.emptyInts = []
        r.leaves = [LeafValues(name: "a", value: 1), LeafValues(name: nil, value: 7), LeafValues(name: "ç", value: -5)]
        r.names = ["x", "", "ünï"]
        r.pos = Vec3(x: 1, y: -2.5, z: 1e20)
        r.mixed = Mixed(a: -3, b: 100_000, c: -300, d: Int64.max)
        r.path = [Vec3(x: 0, y: 0, z: 0), Vec3(x: 1.5, y: 2.5, z: -3.5)]
        r.payload = .leaf(LeafValues(name: "in union", value: 99))
        r.tagged = Tagged(tag: 200, pos: Vec3(x: 0.125, y: 8, z: -64))
        r.longs = [Int64.min, -1, 0, Int64.max]
        var child = RootValues()
        child.name = "child"
        child.payload = .other(flag: true, values: [1, 65535, 0])
        child.scalars = ScalarsValues(i32: 5)
        child.ints = [7]
        r.child = [child]
        return r
    }()

    /// Writes the root and everything below it; the table is the last object.
    func write(_ b: FlatBufferBuilder) -> FlatBufferOffset {
        let childOffset = child.first.map { $0.write(b) }
        let scalarsOffset = scalars.map { $0.write(b) }
        let nameOffset = name.map { b.createString($0) }
        let emptyNameOffset = emptyName.map { b.createString($0) }
        let unicodeOffset = unicode.map { b.createString($0) }
        let intsOffset = ints.map { b.createVector($0) }
        let doublesOffset = doubles.map { b.createVector($0) }
        let boolsOffset = bools.map { b.createVector($0) }
        let dataOffset = data.map { b.createVector(bytes: $0, alignment: 16) }
        let emptyIntsOffset = emptyInts.map { b.createVector($0) }
        let leavesOffset = leaves.map { ls in b.createVector(offsets: ls.map { $0.write(b) }) }
        let namesOffset = names.map { b.createVector(strings: $0) }
        let pathOffset = path.map { p in b.createVector(structs: p.map(\.writer)) }
        let payloadOffset = payload.map { $0.write(b) }
        let longsOffset = longs.map { b.createVector($0) }
        return b.table { t in
            t.add(RootField.scalars, scalarsOffset)
            t.add(RootField.name, nameOffset)
            t.add(RootField.emptyName, emptyNameOffset)
            t.add(RootField.unicode, unicodeOffset)
            t.add(RootField.ints, intsOffset)
            t.add(RootField.doubles, doublesOffset)
            t.add(RootField.bools, boolsOffset)
            t.add(RootField.data, dataOffset)
            t.add(RootField.emptyInts, emptyIntsOffset)
            t.add(RootField.leaves, leavesOffset)
            t.add(RootField.names, namesOffset)
            if let pos { t.add(RootField.pos, pos.writer) }
            if let mixed { t.add(RootField.mixed, mixed.writer) }
            t.add(RootField.path, pathOffset)
            if let payload { t.addUnion(RootField.payload, type: payload.type, value: payloadOffset) }
            t.add(RootField.child, childOffset)
            if let tagged { t.add(RootField.tagged, tagged.writer) }
            t.add(RootField.longs, longsOffset)
        }
    }

    /// A finished buffer with file identifier "FBT1".
    func buffer(forceDefaults: Bool = false) throws -> [UInt8] {
        let b = FlatBufferBuilder(initialCapacity: 16, forceDefaults: forceDefaults)
        let root = write(b)
        return try b.finish(root: root, fileIdentifier: "FBT1")
    }

    init() {}

    /// Reads every field (and, recursively, the child).
    init(_ t: Table) throws {
        scalars = try t.table(RootField.scalars).map { try ScalarsValues($0) }
        name = try t.string(RootField.name)
        emptyName = try t.string(RootField.emptyName)
        unicode = try t.string(RootField.unicode)
        ints = try t.scalars(RootField.ints)
        doubles = try t.scalars(RootField.doubles)
        bools = try t.scalars(RootField.bools)
        data = try t.bytes(RootField.data).map { Array($0) }
        emptyInts = try t.scalars(RootField.emptyInts)
        leaves = try t.tables(RootField.leaves)?.map { try LeafValues($0) }
        names = try t.strings(RootField.names)
        pos = try t.structure(RootField.pos, size: Vec3.size).map { try Vec3($0) }
        mixed = try t.structure(RootField.mixed, size: Mixed.size).map { try Mixed($0) }
        path = try t.structs(RootField.path, size: Vec3.size)?.map { try Vec3($0) }
        payload = try t.union(RootField.payload).map { try PayloadValue($0) }
        child = try t.table(RootField.child).map { [try RootValues($0)] } ?? []
        tagged = try t.structure(RootField.tagged, size: Tagged.size).map { try Tagged($0) }
        longs = try t.scalars(RootField.longs)
    }

    /// What flatc --json --defaults-json should print for this value.
    var json: [String: Any] {
        var d: [String: Any] = [:]
        if let scalars { d["scalars"] = scalars.json }
        if let name { d["name"] = name }
        if let emptyName { d["empty_name"] = emptyName }
        if let unicode { d["unicode"] = unicode }
        if let ints { d["ints"] = ints.map { Int64($0) } }
        if let doubles { d["doubles"] = doubles }
        if let bools { d["bools"] = bools }
        if let data { d["data"] = data.map { Int64($0) } }
        if let emptyInts { d["empty_ints"] = emptyInts.map { Int64($0) } }
        if let leaves { d["leaves"] = leaves.map(\.json) }
        if let names { d["names"] = names }
        if let pos { d["pos"] = pos.json }
        if let mixed { d["mixed"] = mixed.json }
        if let path { d["path"] = path.map(\.json) }
        if let payload {
            d["payload_type"] = payload.jsonTypeName
            d["payload"] = payload.json
        }
        if let c = child.first { d["child"] = c.json }
        if let tagged { d["tagged"] = tagged.json }
        if let longs { d["longs"] = longs }
        return d
    }
}

/// Touches every field of a `Root` (and of everything it reaches) through the
/// reader API; only throws. Used on mutated buffers.
func walkRoot(_ t: Table) throws {
    _ = try RootValues(t)
    // Also the raw accessors a generic walker would use.
    for id in 0..<20 {
        _ = t.has(id)
        _ = try? t.scalar(id, default: UInt64(0))
        _ = try? t.string(id)
        _ = try? t.vector(id, of: Int32.self)?.reduce(0, &+)
        _ = try? t.tables(id)?.count
    }
}
