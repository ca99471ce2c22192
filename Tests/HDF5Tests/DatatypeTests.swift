import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

/// Datatype messages (Datatype.swift) and turning element bytes into values (Values.swift).
final class DatatypeTests: XCTestCase {
    private let file = FileData(bytes: [], name: "t.h5", base: 0, offsetSize: 8, lengthSize: 8, limit: 1 << 20)

    private func parse(_ bytes: [UInt8]) throws -> HDF5Datatype {
        let data = FileData(bytes: bytes, name: "t.h5", base: 0, offsetSize: 8, lengthSize: 8, limit: 1 << 20)
        var c = try data.cursor(at: 0, "datatype")
        return try DatatypeParser.parse(&c)
    }

    private func decode(_ type: HDF5Datatype, _ count: Int, _ raw: [UInt8]) throws -> HDF5Value {
        var decoder = ValueDecoder(heap: GlobalHeap(file, context: "test", budget: 1 << 20))
        return try decoder.decode(type, count: count, raw[...], at: 0)
    }

    func testFixedPointAndFloatingPointMessages() throws {
        // Class 0 version 1, big-endian signed, 2 bytes, offset 0, precision 16.
        XCTAssertEqual(try parse([0x10, 0x09, 0, 0, 2, 0, 0, 0, 0, 0, 16, 0]), .integer(size: 2, signed: true, bigEndian: true))
        // Class 1 version 1, little-endian IEEE binary32: sign at bit 31, exponent 23+8, mantissa 0+23, bias 127.
        let float32: [UInt8] = [0x11, 0x20, 31, 0, 4, 0, 0, 0, 0, 0, 32, 0, 23, 8, 0, 23, 127, 0, 0, 0]
        XCTAssertEqual(try parse(float32), .float(size: 4, bigEndian: false))
        var odd = float32
        odd[16] = 100  // exponent bias
        guard case .unsupported(1, 4, let reason) = try parse(odd) else { return XCTFail("a non-IEEE float parsed") }
        XCTAssertTrue(reason.contains("non-IEEE layout"), reason)
    }

    func testUnsupportedClassesOpenButDoNotRead() throws {
        let compound = try parse([0x16, 1, 0, 0, 8, 0, 0, 0])
        XCTAssertEqual(compound, .unsupported(typeClass: 6, size: 8, reason: "compound datatypes (class 6) are not supported"))
        XCTAssertEqual(errorText { _ = try self.decode(compound, 1, [UInt8](repeating: 0, count: 8)) },
                       "t.h5: offset 0 (test): compound datatypes (class 6) are not supported")
        XCTAssertTrue(errorText { _ = try self.parse([0x1F, 0, 0, 0, 1, 0, 0, 0]) }.contains("datatype class 15 is not defined"))
        XCTAssertTrue(errorText { _ = try self.parse([0x70, 0, 0, 0, 1, 0, 0, 0]) }.contains("datatype version 7 is not supported"))
    }

    func testHalfPrecision() {
        let cases: [(UInt16, Float)] = [(0x3C00, 1), (0xC000, -2), (0x7BFF, 65504), (0x0001, 0x1p-24), (0x03FF, 1023 * 0x1p-24),
                                        (0x0400, 0x1p-14), (0x7C00, .infinity), (0xFC00, -.infinity), (0x3555, 0.33325195)]
        for (bits, value) in cases { XCTAssertEqual(ValueDecoder.half(bits), value, "0x\(String(bits, radix: 16))") }
        XCTAssertTrue(ValueDecoder.half(0x7E00).isNaN)
        XCTAssertEqual(ValueDecoder.half(0x8000).sign, .minus)
    }

    func testIntegersAndEndianness() throws {
        XCTAssertEqual(try decode(.integer(size: 2, signed: true, bigEndian: true), 2, [0xFF, 0xFE, 0x01, 0x00]), .ints([-2, 256]))
        XCTAssertEqual(try decode(.integer(size: 4, signed: false, bigEndian: false), 1, [0xFF, 0xFF, 0xFF, 0xFF]), .uints([4_294_967_295]))
        XCTAssertEqual(try decode(.integer(size: 1, signed: true, bigEndian: false), 2, [0x80, 0x7F]), .ints([-128, 127]))
        XCTAssertEqual(try decode(.float(size: 8, bigEndian: true), 1, [0x3F, 0xF8, 0, 0, 0, 0, 0, 0]), .doubles([1.5]))
        XCTAssertTrue(errorText { _ = try self.decode(.float(size: 4, bigEndian: false), 3, [0, 0, 0, 0]) }
            .contains("3 elements of float32 need more than the 4 bytes stored"))
    }

    func testFixedLengthStrings() throws {
        XCTAssertEqual(ValueDecoder.unpad(Array("ab\0cd\0".utf8)[...], .nullTerminated), Array("ab".utf8)[...])
        XCTAssertEqual(ValueDecoder.unpad(Array("a\0b\0\0".utf8)[...], .nullPadded), Array("a\0b".utf8)[...])
        XCTAssertEqual(ValueDecoder.unpad(Array("ab  ".utf8)[...], .spacePadded), Array("ab".utf8)[...])
        let type = HDF5Datatype.string(size: 3, padding: .nullPadded, utf8: false)
        XCTAssertEqual(try decode(type, 2, Array("ab\0xyz".utf8)), .strings(["ab", "xyz"]))
        // Not UTF-8: every element as bytes.
        XCTAssertEqual(try decode(type, 2, [0x61, 0, 0, 0xFF, 0xFE, 0]), .bytes([[0x61], [0xFF, 0xFE]]))
    }

    func testVariableLengthElementsNeedTheirHeap() throws {
        let type = HDF5Datatype.variableLengthString(padding: .nullTerminated, utf8: true)
        // Length 0: no heap needed.
        XCTAssertEqual(try decode(type, 1, [UInt8](repeating: 0, count: 16)), .strings([""]))
        // Length 3 at an undefined address.
        let undefined = [3, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8) + [1, 0, 0, 0]
        XCTAssertTrue(errorText { _ = try self.decode(type, 1, undefined) }.contains("has an undefined heap address"))
    }

    /// A dataset and an attribute whose datatype is a committed datatype elsewhere (shared datatype messages).
    func testSharedDatatypes() throws {
        for name in ["earliest.h5", "latest.h5"] {
            let file = try Fixture.open(name)
            let typed = try Fixture.dataset(file, "typed")
            let header = try ObjectHeader.read(file.data, address: UInt64(typed.address - file.data.base), path: "typed")
            XCTAssertEqual(try XCTUnwrap(header.first(ObjectHeader.datatype)).flags & 0x02, 0x02, "\(name): the datatype message is shared")
            XCTAssertEqual(typed.type, .integer(size: 2, signed: true, bigEndian: false), name)
            XCTAssertEqual(try typed.read(), .ints([1, -2, 3]), name)
            XCTAssertEqual(try typed.attribute("typed_attr")?.value, .ints([7, 8]), name)
            let text = errorText { _ = try file.object(at: "committed_type") }
            XCTAssertTrue(text.contains("'committed_type' is a committed datatype, not a group or dataset"), text)
        }
    }

    func testFixtureTypes() throws {
        let file = try Fixture.open("latest.h5")
        XCTAssertEqual(try Fixture.dataset(file, "numbers/bools").type, .enumeration(base: .integer(size: 1, signed: true, bigEndian: false), names: ["FALSE", "TRUE"]))
        XCTAssertEqual(try Fixture.dataset(file, "strings/vlen_int_seq").type, .variableLengthSequence(.integer(size: 4, signed: true, bigEndian: false)))
        XCTAssertEqual(try Fixture.dataset(file, "strings/space_padded").type, .string(size: 6, padding: .spacePadded, utf8: false))
        XCTAssertEqual(try Fixture.dataset(file, "strings/opaque").type.description, "opaque (2 bytes)")
        XCTAssertEqual(try Fixture.dataset(file, "numbers/u32be").type.description, "uint32 big-endian")
    }
}
