import XCTest
@testable import FlatBuffers

/// Builder → reader round trips over the test schema (Fixtures/test.fbs).
final class RoundTripTests: XCTestCase {
    func root(_ bytes: [UInt8]) throws -> Table {
        try FlatBuffer(bytes: bytes).root(fileIdentifier: "FBT1")
    }

    func testFullRootRoundTrips() throws {
        let bytes = try RootValues.full.buffer()
        XCTAssertEqual(try RootValues(root(bytes)), RootValues.full)
    }

    func testEveryScalarTypeRoundTrips() throws {
        let cases: [ScalarsValues] = [
            .extremes,
            ScalarsValues(),
            ScalarsValues(b: true, i8: 127, u8: 1, i16: 32767, u16: 1, i32: Int32.max, u32: 1, i64: Int64.max, u64: 1,
                          f32: .greatestFiniteMagnitude, f64: -.leastNonzeroMagnitude, dfltI32: 0, dfltF32: 0, color: 0, dfltB: true),
            ScalarsValues(f32: .infinity, f64: -.infinity),
            ScalarsValues(f32: -0.0, f64: -0.0),
        ]
        for c in cases {
            let b = FlatBufferBuilder()
            let bytes = try b.finish(root: c.write(b))
            let read = try ScalarsValues(FlatBuffer(bytes: bytes).root())
            XCTAssertEqual(read, c)
            XCTAssertEqual(read.f32.bitPattern, c.f32.bitPattern, "-0.0 must not collapse into the 0 default")
            XCTAssertEqual(read.f64.bitPattern, c.f64.bitPattern)
        }
        // NaN survives too (compared by bits).
        let b = FlatBufferBuilder()
        let bytes = try b.finish(root: ScalarsValues(f32: .nan, f64: .nan).write(b))
        let read = try ScalarsValues(FlatBuffer(bytes: bytes).root())
        XCTAssertTrue(read.f32.isNaN && read.f64.isNaN)
    }

    func testOptionalScalars() throws {
        let b = FlatBufferBuilder()
        b.startTable()
        b.add(0, Int32(0) as Int32?)
        b.add(1, nil as Int64?)
        b.add(2, Float(0) as Float?)
        let bytes = try b.finish(root: b.endTable())
        let t = try FlatBuffer(bytes: bytes).root()
        XCTAssertEqual(try t.optionalScalar(0, as: Int32.self), 0)
        XCTAssertNil(try t.optionalScalar(1, as: Int64.self))
        XCTAssertEqual(try t.optionalScalar(2, as: Float.self), 0)
        XCTAssertTrue(t.has(0))
        XCTAssertFalse(t.has(1))
    }

    func testDefaultsAreOmittedUnlessForced() throws {
        var r = RootValues()
        r.scalars = ScalarsValues()
        let plain = try r.buffer()
        let scalars = try XCTUnwrap(root(plain).table(RootField.scalars))
        for id in 0...14 { XCTAssertFalse(scalars.has(id), "field \(id) equals its default and must be omitted") }
        XCTAssertEqual(scalars.vtableSize, 4)
        XCTAssertEqual(try ScalarsValues(scalars), ScalarsValues())

        let forced = try r.buffer(forceDefaults: true)
        let forcedTable = try XCTUnwrap(root(forced).table(RootField.scalars))
        for id in 0...14 { XCTAssertTrue(forcedTable.has(id), "forceDefaults writes field \(id)") }
        XCTAssertEqual(try ScalarsValues(forcedTable), ScalarsValues())
        XCTAssertGreaterThan(forced.count, plain.count)
    }

    func testStrings() throws {
        let strings = ["", "a", "hello world", "Grüße", "日本語テキスト", "emoji 🚀🧪", String(repeating: "x", count: 1000), "nul\u{0}inside"]
        for s in strings {
            let b = FlatBufferBuilder()
            let o = b.createString(s)
            let bytes = try b.finish(root: b.table { $0.add(0, o) })
            let t = try FlatBuffer(bytes: bytes).root()
            XCTAssertEqual(try t.string(0), s)
            XCTAssertEqual(try t.stringBytes(0).map { Array($0) }, Array(s.utf8))
        }
    }

    func testVectors() throws {
        var r = RootValues()
        r.ints = []
        r.doubles = []
        r.bools = []
        r.data = []
        r.emptyInts = []
        r.leaves = []
        r.names = []
        r.path = []
        r.longs = []
        let empty = try RootValues(root(r.buffer()))
        XCTAssertEqual(empty, r, "empty vectors are present and empty, not absent")

        r.ints = Array(-500...500).map(Int32.init)
        r.doubles = [1, 2.5, -Double.infinity]
        r.bools = [false, true]
        r.data = Array(0...255)
        r.leaves = (0..<50).map { LeafValues(name: $0 % 3 == 0 ? nil : "leaf \($0)", value: Int32($0)) }
        r.names = (0..<20).map { "name \($0) ✓" }
        r.path = (0..<10).map { Vec3(x: Float($0), y: -Float($0), z: 0.5) }
        r.longs = [1, 2, 3]
        let table = try root(r.buffer())
        XCTAssertEqual(try RootValues(table), r)
        // The lazy view reads the same elements without copying.
        let lazy = try XCTUnwrap(table.vector(RootField.ints, of: Int32.self))
        XCTAssertEqual(lazy.count, 1001)
        XCTAssertEqual(lazy[0], -500)
        XCTAssertEqual(lazy[1000], 500)
        XCTAssertEqual(Array(lazy), r.ints)
        XCTAssertEqual(try table.vectorCount(RootField.leaves, elementSize: 4), 50)
        // Byte vectors are slices of the buffer, indexed by buffer offset.
        let slice = try XCTUnwrap(table.bytes(RootField.data))
        let range = try XCTUnwrap(table.byteRange(RootField.data))
        XCTAssertEqual(slice.startIndex, range.lowerBound)
        XCTAssertEqual(Array(slice), r.data)
    }

    func testBoolVectorReadsAnyNonZeroByteAsTrue() throws {
        let b = FlatBufferBuilder()
        let v = b.createVector(bytes: [0, 1, 2, 255])
        let bytes = try b.finish(root: b.table { $0.add(0, v) })
        let t = try FlatBuffer(bytes: bytes).root()
        XCTAssertEqual(try t.scalars(0, as: Bool.self), [false, true, true, true])
    }

    func testStructs() throws {
        var r = RootValues()
        r.pos = Vec3(x: 1, y: 2, z: 3)
        r.mixed = Mixed(a: -1, b: -2, c: -3, d: -4)
        r.tagged = Tagged(tag: 9, pos: Vec3(x: 4, y: 5, z: 6))
        r.path = [Vec3(x: 7, y: 8, z: 9)]
        let t = try root(r.buffer())
        XCTAssertEqual(try RootValues(t), r)
        // flatc's layout: Mixed is a@0 b@4 c@8 d@16, 24 bytes, 8-aligned.
        XCTAssertEqual(r.mixed?.writer.size, 24)
        XCTAssertEqual(r.mixed?.writer.alignment, 8)
        XCTAssertEqual(r.tagged?.writer.size, 16)
        let mixed = try XCTUnwrap(t.structure(RootField.mixed, size: Mixed.size))
        XCTAssertEqual(mixed.position % 8, 0, "an 8-aligned struct sits at an 8-aligned offset")
        XCTAssertEqual(Array(mixed.bytes.prefix(4)), [0xFF, 0, 0, 0])
        // Reading past the struct is an error, not a crash.
        XCTAssertThrowsError(try mixed.scalar(at: 20, as: Int64.self)) { e in
            XCTAssertTrue("\(e)".contains("outside the 24-byte struct"), "\(e)")
        }
    }

    func testUnions() throws {
        for payload in [PayloadValue.leaf(LeafValues(name: "x", value: 1)), .other(flag: true, values: [1, 2]), .other(flag: false, values: nil)] {
            var r = RootValues()
            r.payload = payload
            let t = try root(r.buffer())
            let u = try XCTUnwrap(t.union(RootField.payload))
            XCTAssertEqual(u.type, payload.type)
            XCTAssertEqual(try t.scalar(RootField.payload - 1, default: UInt8(0)), payload.type)
            XCTAssertEqual(try PayloadValue(u), payload)
        }
        XCTAssertNil(try root(RootValues().buffer()).union(RootField.payload))
    }

    func testNestedTablesCarryDepth() throws {
        var r = RootValues()
        var level = RootValues()
        level.name = "deepest"
        for i in 0..<10 {
            var parent = RootValues()
            parent.name = "level \(i)"
            parent.child = [level]
            level = parent
        }
        r.child = [level]
        var t = try root(r.buffer())
        XCTAssertEqual(t.depth, 0)
        var d = 0
        while let c = try t.table(RootField.child) {
            d += 1
            XCTAssertEqual(c.depth, d)
            t = c
        }
        XCTAssertEqual(d, 11)
        XCTAssertEqual(try t.string(RootField.name), "deepest")
    }

    func testVTableDeduplication() throws {
        func build(_ count: Int) throws -> [UInt8] {
            let b = FlatBufferBuilder()
            let leaves = (0..<count).map { i in b.table { $0.add(LeafField.value, Int32(i + 100), default: 7) } }
            let v = b.createVector(offsets: leaves)
            return try b.finish(root: b.table { $0.add(RootField.leaves, v) })
        }
        let one = try build(1), two = try build(2), three = try build(3)
        // A Leaf with one int field: 4 (soffset) + 4 (int) inline, vtable 6 bytes.
        // The 2nd and 3rd leaf share the 1st one's vtable: each adds 8 bytes + a 4-byte vector element.
        XCTAssertEqual(two.count - one.count, 12, "two identical tables share one vtable")
        XCTAssertEqual(three.count - two.count, 12)
        let tables = try XCTUnwrap(FlatBuffer(bytes: three).root().tables(RootField.leaves))
        XCTAssertEqual(Set(tables.map(\.vtablePosition)).count, 1)
        XCTAssertEqual(try tables.map { try $0.scalar(LeafField.value, default: Int32(7)) }, [100, 101, 102])
        // A table of another shape gets its own vtable.
        let b = FlatBufferBuilder()
        let x = b.table { $0.add(0, Int32(1), default: 0) }
        let y = b.table { $0.add(0, Int32(2), default: 0) }
        let z = b.table { $0.add(1, Int32(3), default: 0) }
        let v = b.createVector(offsets: [x, y, z])
        let bytes = try b.finish(root: b.table { $0.add(0, v) })
        let ts = try XCTUnwrap(FlatBuffer(bytes: bytes).root().tables(0))
        XCTAssertEqual(ts[0].vtablePosition, ts[1].vtablePosition)
        XCTAssertNotEqual(ts[0].vtablePosition, ts[2].vtablePosition)
    }

    func testForceAlign() throws {
        for prefix in 0..<20 {
            let b = FlatBufferBuilder()
            // Unaligned clutter before and after the aligned data.
            let s = b.createString(String(repeating: "p", count: prefix))
            let data = b.createVector(bytes: [UInt8](repeating: 0xAB, count: prefix * 3 + 1), alignment: 16)
            let s2 = b.createString(String(repeating: "q", count: prefix % 7))
            let bytes = try b.finish(root: b.table { t in
                t.add(0, s); t.add(1, data); t.add(2, s2); t.add(3, Int8(1), default: 0)
            }, fileIdentifier: "TFL3")
            XCTAssertEqual(bytes.count % 16, 0, "the buffer is padded to the largest alignment")
            let t = try FlatBuffer(bytes: bytes).root(fileIdentifier: "TFL3")
            let range = try XCTUnwrap(t.byteRange(1))
            XCTAssertEqual(range.lowerBound % 16, 0, "force_align 16: data starts at offset \(range.lowerBound)")
            XCTAssertEqual(range.count, prefix * 3 + 1)
        }
        // 8-byte scalars are 8-aligned.
        let b = FlatBufferBuilder()
        _ = b.createString("abc")
        let v = b.createVector([Double(1), 2])
        let bytes = try b.finish(root: b.table { $0.add(0, v) })
        let vec = try XCTUnwrap(FlatBuffer(bytes: bytes).root().vector(0, of: Double.self))
        XCTAssertEqual(vec.start % 8, 0)
    }

    func testDeterminism() throws {
        let a = try RootValues.full.buffer()
        let b = try RootValues.full.buffer()
        XCTAssertEqual(a, b)
        // A reused builder gives the same bytes as a fresh one.
        let builder = FlatBufferBuilder()
        _ = try builder.finish(root: RootValues().write(builder), fileIdentifier: "FBT1")
        builder.reset()
        XCTAssertEqual(try builder.finish(root: RootValues.full.write(builder), fileIdentifier: "FBT1"), a)
    }

    func testFileIdentifier() throws {
        let bytes = try RootValues.full.buffer()
        let fb = FlatBuffer(bytes: bytes)
        XCTAssertTrue(fb.hasFileIdentifier("FBT1"))
        XCTAssertFalse(fb.hasFileIdentifier("TFL3"))
        XCTAssertEqual(fb.fileIdentifierBytes, Array("FBT1".utf8))
        XCTAssertNoThrow(try fb.root())
        XCTAssertNoThrow(try fb.root(fileIdentifier: "FBT1"))
    }

    func testLargeByteVector() throws {
        let big = [UInt8](repeating: 7, count: 3_000_000)
        let b = FlatBufferBuilder(initialCapacity: 16)
        let v = b.createVector(bytes: big[...], alignment: 16)
        let bytes = try b.finish(root: b.table { $0.add(0, v) })
        let slice = try XCTUnwrap(FlatBuffer(bytes: bytes).root().bytes(0))
        XCTAssertEqual(slice.count, big.count)
        XCTAssertEqual(slice.startIndex % 16, 0)
        XCTAssertTrue(slice.allSatisfy { $0 == 7 })
    }

    func testBuilderMisuseIsRecordedNotTrapped() throws {
        func expectError(_ contains: String, _ body: (FlatBufferBuilder) -> FlatBufferOffset, fileIdentifier: String? = nil,
                         line: UInt = #line) {
            let b = FlatBufferBuilder()
            let root = body(b)
            XCTAssertThrowsError(try b.finish(root: root, fileIdentifier: fileIdentifier), line: line) { e in
                XCTAssertTrue("\(e)".contains(contains), "\(e)", line: line)
            }
        }
        expectError("no open table") { b in b.add(0, Int32(1), default: 0); return b.createString("x") }
        expectError("while a table is open") { b in b.startTable(); let s = b.createString("x"); b.add(0, s); return b.endTable() }
        expectError("while a table is open") { b in b.startTable(); b.startTable(); return b.endTable() }
        expectError("added twice") { b in b.table { $0.add(0, Int32(1), default: 0); $0.add(0, Int32(2), default: 0) } }
        expectError("endTable() with no open table") { b in b.endTable() }
        expectError("does not refer") { b in
            let other = FlatBufferBuilder()
            let far = other.createString(String(repeating: "z", count: 100))
            return b.table { $0.add(0, far) }
        }
        expectError("outside 0…") { b in b.table { $0.add(-1, Int32(1), default: 0) } }
        expectError("alignment 3") { b in let v = b.createVector(bytes: [1], alignment: 3); return b.table { $0.add(0, v) } }
        expectError("while a table is open") { b in b.startTable(); return FlatBufferOffset(0) }
        // After a finish, further writes are misuse until reset().
        let b = FlatBufferBuilder()
        let t = b.table { _ in }
        XCTAssertNoThrow(try b.finish(root: t))
        _ = b.createString("late")
        XCTAssertThrowsError(try b.finish(root: t)) { e in XCTAssertTrue("\(e)".contains("after finish"), "\(e)") }
        b.reset()
        XCTAssertNil(b.error)
        XCTAssertNoThrow(try b.finish(root: b.table { _ in }))
    }

    func testBuilderMisuseWrongIdentifierLength() {
        let b = FlatBufferBuilder()
        let t = b.table { _ in }
        XCTAssertThrowsError(try b.finish(root: t, fileIdentifier: "TOOLONG")) { e in
            XCTAssertTrue("\(e)".contains("7 bytes, not 4"), "\(e)")
        }
    }
}
