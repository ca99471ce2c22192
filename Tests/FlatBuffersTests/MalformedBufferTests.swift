import XCTest
@testable import FlatBuffers

/// Malformed buffers: each gives a clear `FlatBufferError` (naming the offset)
/// and never a crash or a hang.
final class MalformedBufferTests: XCTestCase {
    /// Asserts that `body` throws a FlatBufferError whose description contains every fragment.
    func expect(_ fragments: String..., file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        do {
            try body()
            XCTFail("expected an error containing \(fragments)", file: file, line: line)
        } catch let e as FlatBufferError {
            let text = e.description
            XCTAssertTrue(text.hasPrefix("offset \(e.offset): "), text, file: file, line: line)
            for f in fragments { XCTAssertTrue(text.contains(f), "'\(text)' lacks '\(f)'", file: file, line: line) }
        } catch {
            XCTFail("unexpected error type \(error)", file: file, line: line)
        }
    }

    /// A table with: 0 string, 1 [long], 2 [Leaf-like tables], 3 sub-table, 4 int.
    func sample() throws -> [UInt8] {
        let b = FlatBufferBuilder()
        let s = b.createString("hello")
        let longs = b.createVector([Int64(1), 2, 3])
        let t1 = b.table { $0.add(0, Int32(5), default: 0) }
        let t2 = b.table { $0.add(0, Int32(6), default: 0) }
        let tables = b.createVector(offsets: [t1, t2])
        let sub = b.table { $0.add(0, Int32(7), default: 0) }
        return try b.finish(root: b.table { t in
            t.add(0, s); t.add(1, longs); t.add(2, tables); t.add(3, sub); t.add(4, Int32(99), default: 0)
        }, fileIdentifier: "TEST")
    }

    func root(_ bytes: [UInt8], limits: ReadLimits = ReadLimits()) throws -> Table {
        try FlatBuffer(bytes: bytes, limits: limits).root()
    }

    func write32(_ bytes: inout [UInt8], at p: Int, _ v: UInt32) {
        for i in 0..<4 { bytes[p + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) }
    }

    func write16(_ bytes: inout [UInt8], at p: Int, _ v: UInt16) {
        bytes[p] = UInt8(truncatingIfNeeded: v)
        bytes[p + 1] = UInt8(truncatingIfNeeded: v >> 8)
    }

    /// Position of the offset field `id` of table `t`.
    func fieldPos(_ t: Table, _ id: Int) throws -> Int { try XCTUnwrap(t.fieldPosition(id, size: 4)) }

    func testSampleIsValid() throws {
        let t = try root(sample())
        XCTAssertEqual(try t.string(0), "hello")
        XCTAssertEqual(try t.scalars(1, as: Int64.self), [1, 2, 3])
        XCTAssertEqual(try t.tables(2)?.count, 2)
        XCTAssertEqual(try t.table(3)?.scalar(0, default: Int32(0)), 7)
        XCTAssertEqual(try t.scalar(4, default: Int32(0)), 99)
    }

    func testBufferShorterThan8Bytes() {
        for n in 0..<8 {
            expect("buffer of \(n) bytes is too short") { _ = try root([UInt8](repeating: 0, count: n)) }
        }
    }

    func testRootOffsetPastTheEnd() {
        expect("offset 0:", "root table offset points to offset 65535, outside the 8-byte buffer") {
            _ = try root([0xFF, 0xFF, 0, 0, 0, 0, 0, 0])
        }
        expect("root table offset points to offset 6") { _ = try root([6, 0, 0, 0, 0, 0, 0, 0]) }
    }

    func testWrongFileIdentifier() throws {
        let bytes = try sample()
        expect("offset 4:", "file identifier is \"TEST\", expected \"TFL3\"") {
            _ = try FlatBuffer(bytes: bytes).root(fileIdentifier: "TFL3")
        }
        var binary = bytes
        binary[5] = 0
        expect("file identifier is [0x54 0x00 0x53 0x54]") { _ = try FlatBuffer(bytes: binary).root(fileIdentifier: "TEST") }
        XCTAssertNoThrow(try FlatBuffer(bytes: bytes).root(fileIdentifier: "TEST"))
    }

    func testVTablePastTheEnd() throws {
        var bytes = try sample()
        let t = try root(bytes)
        // soffset so that the vtable would sit 16 bytes past the end.
        let soff = Int32(t.position - (bytes.count + 16))
        write32(&bytes, at: t.position, UInt32(bitPattern: soff))
        expect("bad vtable for the table at offset \(t.position)", "outside the \(bytes.count)-byte buffer") { _ = try root(bytes) }
        // …and before the start.
        write32(&bytes, at: t.position, UInt32(bitPattern: Int32(t.position + 4)))
        expect("points to offset -4") { _ = try root(bytes) }
        // A vtable that starts inside the buffer but runs past its end.
        var bytes2 = try sample()
        let t2 = try root(bytes2)
        let vt = bytes2.count - 6
        write32(&bytes2, at: t2.position, UInt32(bitPattern: Int32(t2.position - vt)))
        write16(&bytes2, at: vt, 20)
        expect("vtable of 20 bytes runs past the end") { _ = try root(bytes2) }
    }

    func testVTableSizeOddOrTooSmall() throws {
        let original = try sample()
        let t = try root(original)
        for (size, message) in [(UInt16(0), "vtable size 0 is smaller than 4"), (2, "vtable size 2 is smaller than 4"), (7, "vtable size 7 is odd")] {
            var bytes = original
            write16(&bytes, at: t.vtablePosition, size)
            expect("offset \(t.vtablePosition):", message) { _ = try root(bytes) }
        }
        var bytes = original
        write16(&bytes, at: t.vtablePosition + 2, 2)
        expect("table size 2 is smaller than 4") { _ = try root(bytes) }
        bytes = original
        write16(&bytes, at: t.vtablePosition + 2, 0xFFF0)
        expect("table (65520 bytes) runs past the end") { _ = try root(bytes) }
    }

    func testFieldOffsetBeyondTable() throws {
        var bytes = try sample()
        let t = try root(bytes)
        // Field 4 (an int) moved to inline offset 200 of a smaller table.
        write16(&bytes, at: t.vtablePosition + 4 + 2 * 4, 200)
        let bad = try root(bytes)
        expect("field 4 at table offset 200 (4 bytes) lies outside the table's \(t.inlineSize) inline bytes") {
            _ = try bad.scalar(4, default: Int32(0))
        }
        // An offset inside the vtable-offset slot is refused too.
        write16(&bytes, at: t.vtablePosition + 4 + 2 * 4, 2)
        expect("field 4 at table offset 2") { _ = try root(bytes).scalar(4, default: Int32(0)) }
        // The last byte of the field just outside the table.
        write16(&bytes, at: t.vtablePosition + 4 + 2 * 4, UInt16(t.inlineSize - 3))
        expect("lies outside the table") { _ = try root(bytes).scalar(4, default: Int32(0)) }
        // Other fields still read.
        XCTAssertEqual(try root(bytes).string(0), "hello")
    }

    func testStringOffsetPastTheEnd() throws {
        var bytes = try sample()
        let t = try root(bytes)
        let p = try fieldPos(t, 0)
        write32(&bytes, at: p, UInt32(bytes.count))
        expect("offset \(p):", "string field 0 of the table at \(t.position) points to offset \(p + bytes.count), outside the \(bytes.count)-byte buffer") {
            _ = try root(bytes).string(0)
        }
        // The string's length runs past the end.
        bytes = try sample()
        let s = try XCTUnwrap(t.stringBytes(0)).startIndex - 4
        write32(&bytes, at: s, 1_000_000)
        expect("offset \(s):", "string of length 1000000 (1000000 bytes) runs past the end") { _ = try root(bytes).string(0) }
    }

    func testUnterminatedString() throws {
        var bytes = try sample()
        let t = try root(bytes)
        let range = try XCTUnwrap(t.stringBytes(0)).indices
        bytes[range.upperBound] = UInt8(ascii: "!")
        expect("string of length 5 is not terminated: the byte after it is 33, not 0") { _ = try root(bytes).string(0) }
        // A string whose terminator would be the first byte past the end.
        let b = FlatBufferBuilder()
        let s = b.createString("abc")
        var tail = try b.finish(root: b.table { $0.add(0, s) })
        let strPos = try root(tail).stringBytes(0).map { $0.startIndex - 4 }
        let start = try XCTUnwrap(strPos)
        write32(&tail, at: start, UInt32(tail.count - start - 4))
        expect("is not terminated", "past the end") { _ = try root(tail).string(0) }
    }

    func testInvalidUTF8() throws {
        var bytes = try sample()
        let range = try XCTUnwrap(root(bytes).stringBytes(0)).indices
        bytes[range.lowerBound] = 0xFF
        expect("string of length 5 is not valid UTF-8") { _ = try root(bytes).string(0) }
        XCTAssertEqual(try root(bytes).stringBytes(0).map { Array($0) }, [0xFF] + Array("ello".utf8), "raw bytes still readable")
    }

    func testVectorLengthOverflow() throws {
        var bytes = try sample()
        let t = try root(bytes)
        let v = try XCTUnwrap(t.vector(1, of: Int64.self)).start - 4
        write32(&bytes, at: v, 0xFFFF_FFFF)
        let bad = try root(bytes)
        expect("offset \(v): vector length 4294967295 × 8 bytes runs past the end of the \(bytes.count)-byte buffer") {
            _ = try bad.scalars(1, as: Int64.self)
        }
        expect("vector length 4294967295 × 1 bytes") { _ = try bad.bytes(1) }
        expect("vector length 4294967295 × 4 bytes") { _ = try bad.tables(1) }
        expect("vector length 4294967295 × 4 bytes") { _ = try bad.strings(1) }
        expect("vector length 4294967295 × 12 bytes") { _ = try bad.structs(1, size: 12) }
        // One element too many.
        write32(&bytes, at: v, UInt32((bytes.count - v - 4) / 8 + 1))
        expect("runs past the end") { _ = try root(bytes).scalars(1, as: Int64.self) }
        // Exactly to the end is fine.
        write32(&bytes, at: v, UInt32((bytes.count - v - 4) / 8))
        XCTAssertNoThrow(try root(bytes).scalars(1, as: Int64.self))
    }

    func testVectorOfTablesWithElementPastTheEnd() throws {
        var bytes = try sample()
        let t = try root(bytes)
        let tables = try XCTUnwrap(t.vectorSpan(2, elementSize: 4))
        let element1 = tables.start + 4
        write32(&bytes, at: element1, 0x7FFF_0000)
        expect("offset \(element1):", "element 1 of the table vector in field 2", "outside the \(bytes.count)-byte buffer") {
            _ = try root(bytes).tables(2)
        }
    }

    func testDeepNestingHitsTheDepthLimit() throws {
        // A legitimate chain of 100 nested tables.
        let b = FlatBufferBuilder()
        var inner = b.table { $0.add(1, Int32(100), default: 0) }
        for i in (0..<100).reversed() {
            let child = inner
            inner = b.table { t in t.add(0, child); t.add(1, Int32(i), default: 0) }
        }
        let bytes = try b.finish(root: inner)
        func walk(_ t: Table) throws -> Int { try t.table(0).map { try walk($0) + 1 } ?? 0 }
        expect("tables nest deeper than 64 levels") { _ = try walk(root(bytes)) }
        XCTAssertEqual(try walk(root(bytes, limits: ReadLimits(maxDepth: 200))), 100)
        expect("deeper than 10 levels") { _ = try walk(root(bytes, limits: ReadLimits(maxDepth: 10))) }
    }

    /// A table whose sub-table field points back to itself. Offsets are
    /// unsigned and followed without 32-bit wrap-around, so "back to itself"
    /// lands far outside the buffer; and a hand-made forward chain of tables
    /// (one shared vtable, each table pointing to the next) hits the depth guard.
    func testCyclicTableIsAnErrorNotALoop() throws {
        // [root uoffset][vtable: 6, 8, 4][pad][table: soffset, field0 uoffset]
        var bytes: [UInt8] = []
        func u32(_ v: UInt32) { bytes += (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func u16(_ v: UInt16) { bytes += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        u32(12)          // 0: root → 12
        u16(6); u16(8); u16(4); u16(0)  // 4: vtable (6 bytes) + 2 padding
        u32(8)           // 12: soffset → vtable at 4
        u32(0xFFFF_FFFC) // 16: field 0 = −4 mod 2³² → "the table itself"
        let t = try root(bytes)
        expect("offset 16:", "points to offset 4294967308") { _ = try t.table(0) }

        // A chain of 1000 tables, 8 bytes each, all using the vtable at 4.
        bytes = []
        u32(12)
        u16(6); u16(8); u16(4); u16(0)
        for i in 0..<1000 {
            let pos = 12 + 8 * i
            u32(UInt32(pos - 4))  // soffset back to the vtable
            u32(4)                // field 0 → the next table (8 bytes on)
        }
        u32(UInt32(12 + 8000 - 4)); u32(0)  // a last table (its field would be a bad table; never reached)
        func walk(_ t: Table) throws -> Int { try t.table(0).map { try walk($0) + 1 } ?? 0 }
        expect("tables nest deeper than 64 levels") { _ = try walk(root(bytes)) }
    }

    /// Shared sub-tables: each level's two fields point to the same child, so
    /// a recursive walk would visit 2^40 tables; the visit budget stops it.
    func testSharedTablesHitTheVisitBudget() throws {
        let b = FlatBufferBuilder()
        var inner = b.table { $0.add(2, Int32(1), default: 0) }
        for _ in 0..<40 {
            let child = inner
            inner = b.table { t in t.add(0, child); t.add(1, child) }
        }
        let bytes = try b.finish(root: inner)
        XCTAssertLessThan(bytes.count, 1000)
        func walk(_ t: Table) throws -> Int {
            var n = 1
            if let a = try t.table(0) { n += try walk(a) }
            if let c = try t.table(1) { n += try walk(c) }
            return n
        }
        expect("more than 10000 sub-table visits") { _ = try walk(root(bytes, limits: ReadLimits(maxTableVisits: 10_000))) }
        XCTAssertEqual(ReadLimits().maxTableVisits, 1_000_000)
        XCTAssertEqual(ReadLimits().maxDepth, 64)
        // Each root starts with a fresh budget.
        let fb = FlatBuffer(bytes: bytes, limits: ReadLimits(maxTableVisits: 3))
        XCTAssertNoThrow(try fb.root().table(0)?.table(0)?.table(0))
        XCTAssertNoThrow(try fb.root().table(0)?.table(0)?.table(0))
    }

    func testUnionTypeWithoutValue() throws {
        let b = FlatBufferBuilder()
        let bytes = try b.finish(root: b.table { $0.add(4, UInt8(3), default: 0) })
        let u = try XCTUnwrap(root(bytes).union(5))
        XCTAssertEqual(u.type, 3)
        XCTAssertNil(u.table)
    }

    func testNonPositiveStructSizeIsAnError() throws {
        let t = try root(sample())
        expect("struct field at 0 (-1 bytes)") { _ = try t.structure(4, size: -1) }
        expect("struct field at 0 (0 bytes)") { _ = try t.structs(1, size: 0) }
    }

    func testErrorsAreOneLineAndNameTheOffset() {
        let e = FlatBufferError.vectorTooLong(offset: 1234, count: 0xFFFF_FFFF, elementSize: 4, bufferSize: 2048)
        XCTAssertEqual(e.description, "offset 1234: vector length 4294967295 × 4 bytes runs past the end of the 2048-byte buffer")
        XCTAssertEqual(FlatBufferError.bufferTooShort(size: 3, needed: 8).description,
                       "offset 0: buffer of 3 bytes is too short to be a FlatBuffer (needs at least 8)")
        XCTAssertEqual(FlatBufferError.wrongFileIdentifier(expected: "TFL3", found: [0x50, 0x4B, 3, 4]).description,
                       "offset 4: file identifier is [0x50 0x4b 0x03 0x04], expected \"TFL3\"")
    }
}
