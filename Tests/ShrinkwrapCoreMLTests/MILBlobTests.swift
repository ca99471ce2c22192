import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import XCTest

/// Our blob storage reader and writer against a file coremltools' own `_BlobStorageWriter` wrote
/// (`Scripts/make_mlprogram_fixtures.py`: .testdata/mlprogram/blobs.bin and blobs.json).
final class MILBlobTests: XCTestCase {
    struct Description: Decodable {
        struct Blob: Decodable { let type: String; let offset: UInt64; let values: [Double] }
        let file: String
        let blobs: [Blob]
    }

    static let types: [String: MILDataType] = ["float32": .float32, "float16": .float16, "int8": .int8, "uint8": .uint8, "int4": .int4,
                                               "uint1": .uint1, "uint2": .uint2, "uint3": .uint3, "uint4": .uint4, "uint6": .uint6,
                                               "int32": .int32]

    func load() throws -> (Description, [UInt8]) {
        let dir = MILImporterTests.dir
        guard let data = try? Data(contentsOf: dir.appendingPathComponent("blobs.json")) else {
            throw XCTSkip("SKIPPED: no blob storage fixture in \(dir.path); run `make testdata`")
        }
        let d = try JSONDecoder().decode(Description.self, from: data)
        return (d, [UInt8](try Data(contentsOf: dir.appendingPathComponent(d.file))))
    }

    func testReaderReadsCoremltoolsBlobs() throws {
        let (d, bytes) = try load()
        let reader = try MILBlobReader(bytes: bytes, file: d.file)
        XCTAssertEqual(reader.count, d.blobs.count)
        for b in d.blobs {
            let type = try XCTUnwrap(Self.types[b.type])
            let blob = try reader.blob(at: b.offset)
            XCTAssertEqual(blob.dataType, MILTypes.blobType(type), b.type)
            let literal = try MILLiteral(blob: blob, type: type, shape: [b.values.count])
            XCTAssertEqual(literal.tensor?.doubles, b.values, b.type)
        }
    }

    /// The same blobs appended by MILBlobWriter give coremltools' bytes exactly (offsets included).
    func testWriterGivesCoremltoolsBytes() throws {
        let (d, bytes) = try load()
        var writer = MILBlobWriter()
        for b in d.blobs {
            let type = try XCTUnwrap(Self.types[b.type])
            let blob: MILBlob
            switch type {
            case .float32: blob = MILBlob(dataType: .float32, bytes: b.values.flatMap { le(Float($0).bitPattern) })
            case .float16: blob = MILBlob(dataType: .float16, bytes: b.values.flatMap { le(Half.bits(from: Float($0))) })
            case .int32: blob = MILBlob(dataType: .int32, bytes: b.values.flatMap { le(UInt32(bitPattern: Int32($0))) })
            case .int8: blob = MILBlob.packed(b.values.map { UInt8(bitPattern: Int8($0)) }, as: .int8)
            case .int4: blob = MILBlob.packed(b.values.map { UInt8(bitPattern: Int8($0)) & 0x0F }, as: .int4)
            default: blob = MILBlob.packed(b.values.map { UInt8($0) }, as: try XCTUnwrap(MILTypes.blobType(type)))
            }
            XCTAssertEqual(writer.append(blob), b.offset, b.type)
        }
        XCTAssertEqual(writer.bytes.count, bytes.count)
        XCTAssertEqual(writer.bytes, bytes)
    }

    func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
}
