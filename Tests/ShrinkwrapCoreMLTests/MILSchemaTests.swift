import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import SwiftProtobuf
import XCTest

/// Schemas/coreml/MIL.proto against a real ML Program: the corpus's basic-pitch .mlpackage
/// (Spotify basic-pitch 0.4.0, converted by coremltools 7.0 from TensorFlow 2.12). Every expected
/// number below was measured with coremltools 9.0's own Model_pb2 on the same file.
final class MILSchemaTests: XCTestCase {
    typealias Program = CoreML_Specification_MILSpec_Program
    typealias Operation = CoreML_Specification_MILSpec_Operation

    /// The model.mlmodel inside the corpus package (`python3 Scripts/corpus.py path basic-pitch-mlpackage`).
    static var modelURL: URL {
        let env = ProcessInfo.processInfo.environment["SHRINKWRAP_CORPUS"].flatMap { $0.isEmpty ? nil : $0 }
        let cache = env.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/shrinkwrap-corpus")
        return cache.appendingPathComponent("models/basic-pitch-mlpackage.mlpackage/Data/com.apple.CoreML/model.mlmodel")
    }

    func loadModel() throws -> (CoreML_Specification_Model, Data) {
        let url = Self.modelURL
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw XCTSkip("SKIPPED (MIL schema not checked on a real ML Program): no \(url.path); run `make corpus`")
        }
        let bytes = try Data(contentsOf: url)
        return (try CoreML_Specification_Model(serializedBytes: bytes), bytes)
    }

    func mainBlock(_ program: Program) throws -> CoreML_Specification_MILSpec_Block {
        let main = try XCTUnwrap(program.functions["main"])
        return try XCTUnwrap(main.blockSpecializations[main.opset])
    }

    /// The model file alone goes to the ML Program importer (its weights resolved beside it).
    func testImportReadsTheMLProgram() throws {
        _ = try loadModel()
        let g = try CoreMLImporter.importModel(at: Self.modelURL)
        XCTAssertEqual(g.sourceFormat, "mlprogram")
        XCTAssertEqual(g.outputs.map(\.name), ["Identity", "Identity_1", "Identity_2"])
        XCTAssertTrue(g.sourceVersion.hasPrefix("ML Program, opset CoreML5 (iOS 15)"), g.sourceVersion)
    }

    func testProgramStructure() throws {
        let (model, _) = try loadModel()
        XCTAssertEqual(model.specificationVersion, 6)
        guard case .mlProgram(let program)? = model.type else { return XCTFail("Model.Type is not mlProgram: \(String(describing: model.type))") }
        XCTAssertEqual(program.version, 1)
        XCTAssertEqual(program.docString, "")
        XCTAssertEqual(Array(program.functions.keys), ["main"])
        XCTAssertEqual(Array(program.attributes.keys), ["buildInfo"])
        let info = try XCTUnwrap(program.attributes["buildInfo"])
        XCTAssertEqual(info.type.dictionaryType.keyType.tensorType.dataType, .string)
        let pairs = info.immediateValue.dictionary.values
        XCTAssertEqual(pairs.map { $0.key.immediateValue.tensor.strings.values },
                       [["coremltools-version"], ["coremltools-component-tensorflow"]])
        XCTAssertEqual(pairs.map { $0.value.immediateValue.tensor.strings.values }, [["7.0"], ["2.12.0"]])

        let main = try XCTUnwrap(program.functions["main"])
        XCTAssertEqual(main.opset, "CoreML5")
        XCTAssertEqual(Array(main.blockSpecializations.keys), ["CoreML5"])
        XCTAssertEqual(main.inputs.map(\.name), ["input_2"])
        let input = try XCTUnwrap(main.inputs.first).type.tensorType
        XCTAssertEqual(input.dataType, .float32)
        XCTAssertEqual(input.dimensions.map(\.constant.size), [1, 43844, 1])

        let block = try mainBlock(program)
        XCTAssertEqual(block.outputs, ["Identity", "Identity_1", "Identity_2"])
        XCTAssertEqual(block.operations.count, 471)
        let counts = Dictionary(grouping: block.operations, by: \.type).mapValues(\.count)
        XCTAssertEqual(counts.count, 22)
        XCTAssertEqual(counts["const"], 358)
        XCTAssertEqual(counts["conv"], 32)
        XCTAssertEqual(counts["pad"], 24)
        XCTAssertEqual(block.operations.last?.type, "reshape")
        XCTAssertEqual(block.operations.last?.outputs.map(\.name), ["Identity_2"])
    }

    func testOperationsAndValues() throws {
        let (model, _) = try loadModel()
        let block = try mainBlock(model.mlProgram)
        let ops = block.operations
        XCTAssertEqual(ops.count, 471)
        guard ops.count == 471 else { return }

        // An inline constant: op 0, the int32 scalar 1.
        XCTAssertEqual(ops[0].type, "const")
        let axis = try XCTUnwrap(ops[0].attributes["val"])
        XCTAssertEqual(axis.type.tensorType.dataType, .int32)
        XCTAssertEqual(axis.immediateValue.tensor.ints.values, [1])
        XCTAssertEqual(ops[0].attributes["name"]?.immediateValue.tensor.strings.values,
                       ["StatefulPartitionedCall_model_1_cq_t2010v2_1_concat_7_axis"])

        // A weight in the blob file: op 5, float32 [309, 1, 1] at offset 64.
        XCTAssertEqual(ops[5].type, "const")
        let weight = try XCTUnwrap(ops[5].attributes["val"])
        guard case .blobFileValue(let blob)? = weight.value else { return XCTFail("op 5's val is not a blobFileValue") }
        XCTAssertEqual(blob.fileName, "@model_path/weights/weight.bin")
        XCTAssertEqual(blob.offset, 64)
        XCTAssertEqual(weight.type.tensorType.dataType, .float32)
        XCTAssertEqual(weight.type.tensorType.dimensions.map(\.constant.size), [309, 1, 1])

        let vals = ops.filter { $0.type == "const" }.compactMap { $0.attributes["val"]?.value }
        XCTAssertEqual(vals.filter { if case .blobFileValue = $0 { return true } else { return false } }.count, 21)
        XCTAssertEqual(vals.filter { if case .immediateValue = $0 { return true } else { return false } }.count, 337)

        // The first non-const op: reshape of the input, its output typed float32 [1, 43844].
        XCTAssertEqual(ops.firstIndex { $0.type != "const" }, 12)
        XCTAssertEqual(ops[12].type, "reshape")
        XCTAssertEqual(ops[12].inputs["x"]?.arguments.map(\.name), ["input_2"])
        let out = try XCTUnwrap(ops[12].outputs.first).type.tensorType
        XCTAssertEqual(out.rank, 2)
        XCTAssertEqual(out.dimensions.map(\.constant.size), [1, 43844])

        // A conv's inputs are all bound by name.
        let conv = try XCTUnwrap(ops.first { $0.type == "conv" })
        XCTAssertEqual(conv.inputs.keys.sorted(), ["dilations", "groups", "pad", "pad_type", "strides", "weight", "x"])
        XCTAssertEqual(conv.inputs["weight"]?.arguments.map(\.name), ["squeeze_0"])
        XCTAssertEqual(conv.inputs["x"]?.arguments.map(\.name), ["pad_0"])
    }

    /// Nothing of the file falls into unknown fields, and writing it back loses nothing.
    func testRoundTripKeepsEverything() throws {
        let (model, bytes) = try loadModel()
        XCTAssertTrue(model.unknownFields.data.isEmpty)
        let program = model.mlProgram
        XCTAssertTrue(program.unknownFields.data.isEmpty)
        let block = try mainBlock(program)
        XCTAssertTrue(block.unknownFields.data.isEmpty)
        for (k, op) in block.operations.enumerated() {
            XCTAssertTrue(Self.unknownFree(op), "operation \(k) '\(op.type)' has unknown fields")
        }

        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        let again: Data = try model.serializedBytes(options: options)
        XCTAssertEqual(again.count, bytes.count)
        let reparsed = try CoreML_Specification_Model(serializedBytes: again)
        XCTAssertEqual(reparsed, model)
        XCTAssertEqual(try reparsed.serializedBytes(options: options) as Data, again)
    }

    static func unknownFree(_ op: Operation) -> Bool {
        op.unknownFields.data.isEmpty
            && op.outputs.allSatisfy { $0.unknownFields.data.isEmpty && $0.type.tensorType.unknownFields.data.isEmpty }
            && op.attributes.values.allSatisfy { $0.unknownFields.data.isEmpty && $0.immediateValue.unknownFields.data.isEmpty }
            && op.inputs.values.allSatisfy { a in a.unknownFields.data.isEmpty && a.arguments.allSatisfy { $0.unknownFields.data.isEmpty } }
            && op.blocks.isEmpty
    }
}
