import Foundation
import XCTest
@testable import FlatBuffers

/// Schemas/tflite/tflite.fbs with our builder and reader, checked by flatc:
/// a model written with the schema's field ids decodes in flatc to the JSON we
/// meant, and a model flatc builds from JSON reads back field by field. A
/// pattern for the TFLite importer and exporter, and a check that the ids in
/// the .fbs are the ones a Swift writer would use.
final class TFLiteSchemaTests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let schema = repo.appendingPathComponent("Schemas/tflite/tflite.fbs")
    static let seed = repo.appendingPathComponent("Fuzz/FlatBuffersFuzz/seeds/tiny_conv.json")

    // Field ids, as the .fbs declares them.
    enum Model { static let version = 0, operatorCodes = 1, subgraphs = 2, description = 3, buffers = 4, signatureDefs = 7 }
    enum OperatorCode { static let deprecatedBuiltinCode = 0, customCode = 1, version = 2, builtinCode = 3 }
    enum SubGraph { static let tensors = 0, inputs = 1, outputs = 2, operators = 3, name = 4 }
    enum Tensor { static let shape = 0, type = 1, buffer = 2, name = 3, quantization = 4, shapeSignature = 7, hasRank = 8 }
    enum Quantization { static let scale = 2, zeroPoint = 3, quantizedDimension = 6 }
    enum Operator { static let opcodeIndex = 0, inputs = 1, outputs = 2, builtinOptions = 4 }
    enum Conv2DOptions { static let padding = 0, strideW = 1, strideH = 2, fusedActivationFunction = 3, dilationWFactor = 4 }
    enum Buffer { static let data = 0, offset = 1, size = 2 }
    enum SignatureDef { static let inputs = 0, outputs = 1, signatureKey = 2, subgraphIndex = 4 }
    enum TensorMap { static let name = 0, tensorIndex = 1 }
    static let conv2D: Int32 = 3, conv2DOptions: UInt8 = 1, float32: Int8 = 0, int8: Int8 = 9, relu6: Int8 = 3, valid: Int8 = 1

    func tinyModel() throws -> [UInt8] {
        let b = FlatBufferBuilder()
        let weights = b.createVector(bytes: [UInt8](0..<18), alignment: 16)
        let buffers = b.createVector(offsets: [b.table { _ in }, b.table { $0.add(Buffer.data, weights) },
                                               b.table { $0.add(Buffer.offset, UInt64(1 << 32), default: 0); $0.add(Buffer.size, UInt64(64), default: 0) }])
        let code = b.table { t in
            t.add(OperatorCode.deprecatedBuiltinCode, Int8(3), default: 0)
            t.add(OperatorCode.builtinCode, Self.conv2D, default: 0)
        }
        let codes = b.createVector(offsets: [code])
        func tensor(_ name: String, _ shape: [Int32], _ type: Int8, buffer: UInt32, scale: [Float]? = nil) -> FlatBufferOffset {
            let n = b.createString(name), s = b.createVector(shape)
            let q = scale.map { sc -> FlatBufferOffset in
                let scales = b.createVector(sc), zps = b.createVector([Int64](repeating: 0, count: sc.count))
                return b.table { t in t.add(Quantization.scale, scales); t.add(Quantization.zeroPoint, zps) }
            }
            return b.table { t in
                t.add(Tensor.shape, s); t.add(Tensor.type, type, default: 0); t.add(Tensor.buffer, buffer, default: 0)
                t.add(Tensor.name, n); t.add(Tensor.quantization, q); t.add(Tensor.hasRank, true, default: false)
            }
        }
        let tensors = b.createVector(offsets: [tensor("input", [1, 4, 4, 1], Self.float32, buffer: 0),
                                               tensor("w", [2, 3, 3, 1], Self.int8, buffer: 1, scale: [0.5, 0.25]),
                                               tensor("out", [1, 2, 2, 2], Self.float32, buffer: 0)])
        let options = b.table { t in
            t.add(Conv2DOptions.padding, Self.valid, default: 0)
            t.add(Conv2DOptions.strideW, Int32(2), default: 0)
            t.add(Conv2DOptions.strideH, Int32(2), default: 0)
            t.add(Conv2DOptions.fusedActivationFunction, Self.relu6, default: 0)
            t.add(Conv2DOptions.dilationWFactor, Int32(1), default: 1)
        }
        let opInputs = b.createVector([Int32(0), 1, -1]), opOutputs = b.createVector([Int32(2)])
        let op = b.table { t in
            t.add(Operator.opcodeIndex, UInt32(0), default: 0)
            t.add(Operator.inputs, opInputs); t.add(Operator.outputs, opOutputs)
            t.addUnion(Operator.builtinOptions, type: Self.conv2DOptions, value: options)
        }
        let ops = b.createVector(offsets: [op])
        let gIn = b.createVector([Int32(0)]), gOut = b.createVector([Int32(2)]), gName = b.createString("main")
        let graph = b.table { t in
            t.add(SubGraph.tensors, tensors); t.add(SubGraph.inputs, gIn); t.add(SubGraph.outputs, gOut)
            t.add(SubGraph.operators, ops); t.add(SubGraph.name, gName)
        }
        let graphs = b.createVector(offsets: [graph])
        let description = b.createString("written by FlatBuffersTests")
        return try b.finish(root: b.table { t in
            t.add(Model.version, UInt32(3), default: 0)
            t.add(Model.operatorCodes, codes); t.add(Model.subgraphs, graphs)
            t.add(Model.description, description); t.add(Model.buffers, buffers)
        }, fileIdentifier: "TFL3")
    }

    func testFlatcDecodesOurTFLiteModel() throws {
        let flatc = try Flatc.require()
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("fb-tflite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let bytes = try tinyModel()
        let bin = tmp.appendingPathComponent("tiny.tflite")
        try Data(bytes).write(to: bin)
        try flatc.run(["--json", "--strict-json", "--raw-binary", "-o", tmp.path, Self.schema.path, "--", bin.path])
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: tmp.appendingPathComponent("tiny.json"))) as? [String: Any])
        XCTAssertEqual(json["version"] as? Int, 3)
        XCTAssertEqual(json["description"] as? String, "written by FlatBuffersTests")
        let code = try XCTUnwrap((json["operator_codes"] as? [[String: Any]])?.first)
        XCTAssertEqual(code["builtin_code"] as? String, "CONV_2D")
        XCTAssertEqual(code["deprecated_builtin_code"] as? Int, 3)
        let graph = try XCTUnwrap((json["subgraphs"] as? [[String: Any]])?.first)
        XCTAssertEqual(graph["name"] as? String, "main")
        let tensors = try XCTUnwrap(graph["tensors"] as? [[String: Any]])
        XCTAssertEqual(tensors.map { $0["name"] as? String }, ["input", "w", "out"])
        XCTAssertEqual(tensors[1]["type"] as? String, "INT8")
        XCTAssertEqual(tensors[1]["shape"] as? [Int], [2, 3, 3, 1])
        XCTAssertEqual((tensors[1]["quantization"] as? [String: Any])?["scale"] as? [Double], [0.5, 0.25])
        XCTAssertEqual(tensors[0]["has_rank"] as? Bool, true)
        let op = try XCTUnwrap((graph["operators"] as? [[String: Any]])?.first)
        XCTAssertEqual(op["inputs"] as? [Int], [0, 1, -1])
        XCTAssertEqual(op["builtin_options_type"] as? String, "Conv2DOptions")
        let options = try XCTUnwrap(op["builtin_options"] as? [String: Any])
        XCTAssertEqual(options["padding"] as? String, "VALID")
        XCTAssertEqual(options["stride_w"] as? Int, 2)
        XCTAssertEqual(options["fused_activation_function"] as? String, "RELU6")
        let buffers = try XCTUnwrap(json["buffers"] as? [[String: Any]])
        XCTAssertEqual(buffers.count, 3)
        XCTAssertEqual(buffers[1]["data"] as? [Int], Array(0..<18))
        XCTAssertEqual((buffers[2]["offset"] as? NSNumber)?.uint64Value, 1 << 32)
        XCTAssertEqual((buffers[2]["size"] as? NSNumber)?.uint64Value, 64)
        // Buffer.data is force_align 16.
        let data = try XCTUnwrap(FlatBuffer(bytes: bytes).root(fileIdentifier: "TFL3").tables(Model.buffers)?[1].byteRange(Buffer.data))
        XCTAssertEqual(data.lowerBound % 16, 0)
    }

    func testWeReadFlatcTFLiteModel() throws {
        let flatc = try Flatc.require()
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("fb-tflite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        try flatc.run(["-b", "-o", tmp.path, Self.schema.path, Self.seed.path])
        let bytes = try [UInt8](Data(contentsOf: tmp.appendingPathComponent("tiny_conv.tflite")))
        let model = try FlatBuffer(bytes: bytes).root(fileIdentifier: "TFL3")
        XCTAssertEqual(try model.scalar(Model.version, default: UInt32(0)), 3)
        let codes = try XCTUnwrap(model.tables(Model.operatorCodes))
        XCTAssertEqual(try codes.map { try $0.scalar(OperatorCode.builtinCode, default: Int32(0)) }, [3, 22, 32, 150])
        XCTAssertEqual(try codes.map { try $0.scalar(OperatorCode.version, default: Int32(1)) }, [1, 1, 1, 2])
        XCTAssertEqual(try codes[2].string(OperatorCode.customCode), "MyCustomOp")
        let graph = try XCTUnwrap(model.tables(Model.subgraphs)?.first)
        let tensors = try XCTUnwrap(graph.tables(SubGraph.tensors))
        XCTAssertEqual(try tensors[0].scalars(Tensor.shapeSignature, as: Int32.self), [-1, 4, 4, 1])
        XCTAssertEqual(try tensors[1].scalar(Tensor.type, default: Int8(0)), Self.int8)
        let q = try XCTUnwrap(tensors[1].table(Tensor.quantization))
        XCTAssertEqual(try q.scalars(Quantization.scale, as: Float.self), [0.5, 0.25])
        XCTAssertEqual(try q.scalars(Quantization.zeroPoint, as: Int64.self), [0, 0])
        let op = try XCTUnwrap(graph.tables(SubGraph.operators)?.first)
        let u = try XCTUnwrap(op.union(Operator.builtinOptions))
        XCTAssertEqual(u.type, Self.conv2DOptions)
        let options = try XCTUnwrap(u.table)
        XCTAssertEqual(try options.scalar(Conv2DOptions.fusedActivationFunction, default: Int8(0)), Self.relu6)
        XCTAssertEqual(try options.scalar(Conv2DOptions.dilationWFactor, default: Int32(1)), 2)
        let buffers = try XCTUnwrap(model.tables(Model.buffers))
        let data = try XCTUnwrap(buffers[1].bytes(Buffer.data))
        XCTAssertEqual(data.count, 18)
        XCTAssertEqual(data.startIndex % 16, 0, "flatc honours force_align: 16 on Buffer.data")
        XCTAssertEqual(try buffers[4].scalar(Buffer.offset, default: UInt64(0)), 4096)
        let sig = try XCTUnwrap(model.tables(Model.signatureDefs)?.first)
        XCTAssertEqual(try sig.string(SignatureDef.signatureKey), "serving_default")
        XCTAssertEqual(try sig.tables(SignatureDef.outputs)?.first?.scalar(TensorMap.tensorIndex, default: UInt32(0)), 5)
    }
}
