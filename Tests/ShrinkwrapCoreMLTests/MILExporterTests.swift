import CoreMLSchema
import Foundation
import ShrinkwrapCompression
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// The ML Program exporter: which target and which op each weight form
/// gets, the blob file's layout, refusals, float16 compute, and identical
/// bytes for identical graphs. (That coremltools accepts the packages and
/// decompresses every weight to our decoder's values is checked by
/// `make crosscheck-mlprogram`.)
final class MILExporterTests: XCTestCase {
    /// x [1, 8] → MatMul(w [8, 16]) → Relu → y [1, 16].
    func graph(_ weight: WeightEncoding) throws -> Graph {
        let g = Graph(name: "t", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(8)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: [.fixed(1), .fixed(16)])],
                      nodes: [Node(name: "mm", opType: "MatMul", inputs: ["x", "w"], outputs: ["h"]),
                              Node(name: "act", opType: "Relu", inputs: ["h"], outputs: ["y"])],
                      constants: [Constant(name: "w", encoding: weight)])
        return try ExportPreparation.prepare(g).graph
    }

    let values: [Float] = (0..<128).map { Float(($0 * 37) % 29) / 7 - 2 }

    func encode(_ codec: any WeightCodec, _ o: CodecOptions) throws -> WeightEncoding {
        try WeightCodecs.encode(WeightInput(name: "w", values: values, shape: [8, 16]), with: codec, o).encoding
    }

    func ops(_ p: MILExporter.Package) throws -> [CoreML_Specification_MILSpec_Operation] {
        let model = try CoreML_Specification_Model(serializedBytes: p.model)
        let f = try XCTUnwrap(model.mlProgram.functions["main"])
        return try XCTUnwrap(f.blockSpecializations[f.opset]).operations
    }

    func testEachWeightFormGetsItsOpAndTheLowestTarget() throws {
        let cases: [(String, WeightEncoding, MILExporter.Target, String?)] = [
            ("dense", .dense(Tensor(values, shape: [8, 16])), .iOS15, nil),
            ("fp16", try encode(Float16Codec(), CodecOptions()), .iOS15, nil),
            ("affine8 per channel", try encode(LinearCodec(), CodecOptions(bits: 8, granularity: .perChannel, symmetric: true)), .iOS16, "constexpr_affine_dequantize"),
            ("affine8 exact zero per tensor", try encode(LinearCodec(), CodecOptions(bits: 8, granularity: .perTensor, exactZero: true)), .iOS16, "constexpr_affine_dequantize"),
            ("affine4 per channel", try encode(LinearCodec(), CodecOptions(bits: 4, granularity: .perChannel, symmetric: true)), .iOS18, "constexpr_blockwise_shift_scale"),
            ("affine8 per block", try encode(LinearCodec(), CodecOptions(bits: 8, granularity: .perBlock(4), symmetric: true)), .iOS18, "constexpr_blockwise_shift_scale"),
            ("palette2", try encode(KMeansLUTCodec(), CodecOptions(bits: 2)), .iOS16, "constexpr_lut_to_dense"),
            ("palette6", try encode(KMeansLUTCodec(), CodecOptions(bits: 6)), .iOS16, "constexpr_lut_to_dense"),
            ("palette3", try encode(KMeansLUTCodec(), CodecOptions(bits: 3)), .iOS18, "constexpr_lut_to_dense"),
            ("palette4 grouped", try encode(KMeansLUTCodec(), CodecOptions(bits: 4, granularity: .perGroupedChannel(4))), .iOS18, "constexpr_lut_to_dense"),
        ]
        for (label, e, target, op) in cases {
            let p = try MILExporter.export(try graph(e))
            XCTAssertEqual(p.target, target, label)
            let model = try CoreML_Specification_Model(serializedBytes: p.model)
            XCTAssertEqual(model.specificationVersion, target.specificationVersion, label)
            let types = try ops(p).map(\.type)
            if let op { XCTAssertTrue(types.contains(op), "\(label): \(types)") }
            XCTAssertTrue(types.contains("linear"), "\(label): \(types)")
            // Every blob the program names is a valid record of the written file.
            let reader = try MILBlobReader(bytes: p.weights, file: "weight.bin")
            var blobs = 0
            for o in try ops(p) {
                for (_, v) in o.attributes where v.blobFileValue.fileName == "@model_path/weights/weight.bin" {
                    _ = try reader.blob(at: v.blobFileValue.offset)
                    blobs += 1
                }
            }
            XCTAssertEqual(blobs, reader.count, label)
        }
    }

    /// Linear codes of 4 bits or fewer without a native form (fractional zero points, 1–3 bits) are
    /// written as the table of their decoded levels: exactly the same values.
    func testSmallLinearCodesWithoutANativeFormBecomeTables() throws {
        for (label, o, target) in [("2-bit asymmetric per channel", CodecOptions(bits: 2, granularity: .perChannel), MILExporter.Target.iOS18),
                                   ("2-bit asymmetric per tensor", CodecOptions(bits: 2, granularity: .perTensor), .iOS16),
                                   ("3-bit symmetric per channel", CodecOptions(bits: 3, granularity: .perChannel, symmetric: true), .iOS18)] {
            let e = try encode(LinearCodec(), o)
            guard case .affine(let a) = try e.transposed([1, 0]) else { return XCTFail(label) }
            let table = try XCTUnwrap(MILWeights.asTable(a), label)
            XCTAssertEqual(table.decoded(), a.decoded(), label)
            let p = try MILExporter.export(try graph(e))
            XCTAssertEqual(p.target, target, label)
            XCTAssertTrue(try ops(p).contains { $0.type == "constexpr_lut_to_dense" }, label)
        }
        let eightBitAsymmetric = try encode(LinearCodec(), CodecOptions(bits: 8, granularity: .perChannel))
        XCTAssertThrowsError(try MILExporter.export(try graph(eightBitAsymmetric))) { XCTAssertTrue("\($0)".contains("--exact-zero"), "\($0)") }
    }

    /// The capability table `convert` and `sweep` ask before compressing says what the writer does.
    func testCapabilityTableNamesTheTargetThatHoldsAForm() {
        let ios16 = MILExporter.storedWeights(for: .iOS16), ios18 = MILExporter.storedWeights(for: .iOS18)
        let grouped3 = WeightForm(kind: .palette, bits: 3, granularity: .perGroupedChannel)
        XCTAssertNil(ios18.refusal(grouped3))
        XCTAssertTrue(ios16.refusal(grouped3)?.contains("--target iOS18") == true, ios16.refusal(grouped3) ?? "")
        XCTAssertNil(ios16.refusal(WeightForm(kind: .affine, bits: 2, granularity: .perTensor)))
        XCTAssertNotNil(ios16.refusal(WeightForm(kind: .affine, bits: 2, granularity: .perChannel)))
        XCTAssertNil(ios16.refusal(WeightForm(kind: .affine, bits: 8, granularity: .perChannel, integerZeroPoint: true)))
        XCTAssertTrue(ios18.refusal(WeightForm(kind: .affine, bits: 8, granularity: .perChannel))?.contains("--exact-zero") == true)
        XCTAssertNil(ios18.refusal(WeightForm(kind: .affine, bits: 4, granularity: .perBlock, integerZeroPoint: true)))
        XCTAssertNotNil(ios18.refusal(WeightForm(kind: .palette, bits: 5, granularity: .perTensor)))
        XCTAssertNil(MILExporter.storedWeights(for: .iOS15).refusal(WeightForm(kind: .float16, bits: 16, granularity: .perTensor)))
        XCTAssertNotNil(MILExporter.storedWeights(for: .iOS15).refusal(WeightForm(kind: .palette, bits: 4, granularity: .perTensor)))
    }

    func testPackedCodesInTheBlobAreTheEncodingsCodes() throws {
        let e = try encode(KMeansLUTCodec(), CodecOptions(bits: 3))
        // linear takes the MatMul weight transposed ([out, in]); the encoding moves with it.
        guard case .palette(let pal) = try e.transposed([1, 0]) else { return XCTFail("not a palette") }
        let p = try MILExporter.export(try graph(e))
        let reader = try MILBlobReader(bytes: p.weights, file: "weight.bin")
        let lut = try XCTUnwrap(try ops(p).first { $0.type == "constexpr_lut_to_dense" })
        let indicesName = try XCTUnwrap(lut.inputs["indices"]?.arguments.first?.name)
        let indicesOp = try XCTUnwrap(try ops(p).first { $0.outputs.first?.name == indicesName })
        let blob = try reader.blob(at: try XCTUnwrap(indicesOp.attributes["val"]).blobFileValue.offset)
        XCTAssertEqual(blob.dataType, .uint3)
        XCTAssertEqual(blob.paddingBits, (8 - (128 * 3) % 8) % 8)
        XCTAssertEqual(try XCTUnwrap(blob.unpackedCodes()), pal.indices.map { $0 })
    }

    func testWhatNoTargetHoldsIsRefusedNamingTheWeight() throws {
        let asymmetric = try encode(LinearCodec(), CodecOptions(bits: 8, granularity: .perChannel))
        XCTAssertThrowsError(try MILExporter.export(try graph(asymmetric))) { XCTAssertTrue("\($0)".contains("'w'") && "\($0)".contains("--symmetric"), "\($0)") }
        let sixBit = try encode(LinearCodec(), CodecOptions(bits: 6, granularity: .perChannel, symmetric: true))
        XCTAssertThrowsError(try MILExporter.export(try graph(sixBit))) { XCTAssertTrue("\($0)".contains("store 1–4 and 8 bits"), "\($0)") }
        let blocked = try encode(LinearCodec(), CodecOptions(bits: 2, granularity: .perBlock(4), symmetric: true))
        XCTAssertThrowsError(try MILExporter.export(try graph(blocked))) { XCTAssertTrue("\($0)".contains("4 or 8 bits per block"), "\($0)") }
        let grouped = try encode(KMeansLUTCodec(), CodecOptions(bits: 4, granularity: .perGroupedChannel(4)))
        XCTAssertThrowsError(try MILExporter.export(try graph(grouped), options: .init(target: .iOS16))) {
            XCTAssertTrue("\($0)".contains("weight 'w'") && "\($0)".contains("--target iOS18"), "\($0)")
        }
        XCTAssertEqual(try MILExporter.export(try graph(grouped), options: .init(target: .iOS18)).target, .iOS18)
    }

    func testFloat16ComputeCastsAtTheEdges() throws {
        let p = try MILExporter.export(try graph(.dense(Tensor(values, shape: [8, 16]))), options: .init(precision: .float16))
        let all = try ops(p)
        XCTAssertEqual(all.filter { $0.type == "cast" }.count, 2, "\(all.map(\.type))")
        let model = try CoreML_Specification_Model(serializedBytes: p.model)
        XCTAssertEqual(model.description_p.input.first?.type.multiArrayType.dataType, .float32)
        XCTAssertEqual(model.description_p.output.first?.type.multiArrayType.dataType, .float32)
        let linear = try XCTUnwrap(all.first { $0.type == "linear" })
        XCTAssertEqual(linear.outputs.first?.type.tensorType.dataType, .float16)
    }

    func testSameGraphSameBytes() throws {
        let e = try encode(KMeansLUTCodec(), CodecOptions(bits: 4))
        let a = try MILExporter.export(try graph(e)), b = try MILExporter.export(try graph(e))
        XCTAssertEqual(a.model, b.model)
        XCTAssertEqual(a.weights, b.weights)
        XCTAssertEqual(a.files.map(\.path), b.files.map(\.path))
        XCTAssertEqual(a.files.map(\.data), b.files.map(\.data))
        // The manifest's identifiers follow the content.
        let other = try MILExporter.export(try graph(try encode(KMeansLUTCodec(), CodecOptions(bits: 2))))
        XCTAssertNotEqual(a.files[0].data, other.files[0].data)
    }

    func testBlobWriterLayout() throws {
        var w = MILBlobWriter()
        let first = w.append(MILBlob(dataType: .float32, bytes: [UInt8](repeating: 1, count: 12)))
        let second = w.append(MILBlob.packed([1, 2, 3, 4, 5], as: .uint3))
        XCTAssertEqual(first, 64)
        XCTAssertEqual(second, 192)  // 64 + 64 record + 12 data, rounded up to 64
        XCTAssertEqual(Array(w.bytes[0..<8]), [2, 0, 0, 0, 2, 0, 0, 0])  // count 2, version 2
        XCTAssertEqual(Array(w.bytes[192..<196]), [0xEF, 0xBE, 0xAD, 0xDE])
        let r = try MILBlobReader(bytes: w.bytes, file: "w.bin")
        let b = try r.blob(at: second)
        XCTAssertEqual(b.dataType, .uint3)
        XCTAssertEqual(b.paddingBits, 1)  // 15 bits in 2 bytes
        XCTAssertEqual(b.unpackedCodes(), [1, 2, 3, 4, 5])
        XCTAssertEqual(w.bytes.count, 192 + 64 + 2)
    }

    func testDamagedBlobFilesAreOneLineErrors() throws {
        var w = MILBlobWriter()
        let at = w.append(MILBlob(dataType: .float16, bytes: [0, 60, 0, 60]))
        var bytes = w.bytes
        func expectError(_ b: [UInt8], offset: UInt64, _ fragment: String, line: UInt = #line) {
            XCTAssertThrowsError(try MILBlobReader(bytes: b, file: "weight.bin").blob(at: offset), line: line) { e in
                XCTAssertTrue("\(e)".contains("weight.bin") && "\(e)".contains(fragment), "\(e)", line: line)
                XCTAssertFalse("\(e)".contains("\n"), line: line)
            }
        }
        expectError(Array(bytes.prefix(40)), offset: at, "shorter than the 64-byte")
        expectError(Array(bytes.prefix(100)), offset: at, "more than 100 bytes can hold")
        expectError(Array(bytes.prefix(130)), offset: at, "runs past the end")
        var wrong = bytes; wrong[64] = 0
        expectError(wrong, offset: at, "sentinel")
        var past = bytes; past[64 + 16] = 0xFF
        expectError(past, offset: at, "past the end")
        var count = bytes; count[0] = 200
        expectError(count, offset: at, "counts 200 blobs")
        var type = bytes; type[68] = 99
        expectError(type, offset: at, "unknown blob data type 99")
        expectError(bytes, offset: 65, "no blob record")
        bytes[4] = 1
        expectError(bytes, offset: at, "version 1")
    }
}
