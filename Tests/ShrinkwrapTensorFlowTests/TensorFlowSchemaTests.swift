import Foundation
import ShrinkwrapIR
import SwiftProtobuf
import TensorFlowSchema
import XCTest
@testable import ShrinkwrapTensorFlow

/// The generated types decode what TensorFlow 2.12 wrote: a SavedModel's
/// saved_model.pb and a frozen GraphDef.
final class TensorFlowSchemaTests: XCTestCase {
    typealias F = TensorFlowFixtures

    func testSavedModelDecodesWithItsServingSignature() throws {
        let expected = try F.expected()
        let model = try Tensorflow_SavedModel(serializedBytes: F.bytes(F.savedModel.appendingPathComponent("saved_model.pb")))
        XCTAssertEqual(model.savedModelSchemaVersion, 1)
        let meta = try XCTUnwrap(model.metaGraphs.first)
        XCTAssertEqual(meta.metaInfoDef.tags, ["serve"])
        XCTAssertTrue(meta.metaInfoDef.strippedDefaultAttrs)
        XCTAssertFalse(meta.metaInfoDef.strippedOpList.op.isEmpty)
        let signature = try XCTUnwrap(meta.signatureDef["serving_default"])
        XCTAssertEqual(signature.methodName, "tensorflow/serving/predict")
        XCTAssertEqual(Set(signature.inputs.keys), Set(expected.signature.inputs.keys))
        XCTAssertEqual(Set(signature.outputs.keys), Set(expected.signature.outputs))
        let x = try XCTUnwrap(signature.inputs["x"])
        XCTAssertEqual(x.dtype, .dtFloat)
        XCTAssertEqual(x.tensorShape.dim.map(\.size), [-1, 4])
        guard case .name(let tensorName)? = x.encoding else { return XCTFail("input x is not a dense tensor") }
        XCTAssertTrue(tensorName.hasSuffix(":0"), tensorName)
        XCTAssertEqual(signature.outputs["y"]?.tensorShape.dim.map(\.size), [-1, 3])

        // TF2: the graph calls a function of the library, and the object graph lists the variables.
        XCTAssertTrue(meta.graphDef.node.contains { $0.op == "StatefulPartitionedCall" })
        XCTAssertFalse(meta.graphDef.library.function.isEmpty)
        let variables = meta.objectGraphDef.nodes.compactMap { node -> Tensorflow_SavedVariable? in
            if case .variable(let v)? = node.kind { return v } else { return nil }
        }
        XCTAssertEqual(variables.count, 16)
        XCTAssertTrue(variables.contains { $0.dtype == .dtHalf && $0.shape.dim.map(\.size) == [2, 3] })
    }

    func testTheServingFunctionCapturesTheKernelVariable() throws {
        let model = try Tensorflow_SavedModel(serializedBytes: F.bytes(F.savedModel.appendingPathComponent("saved_model.pb")))
        let meta = try XCTUnwrap(model.metaGraphs.first)
        let call = try XCTUnwrap(meta.graphDef.library.function.first {
            $0.signature.name.contains("__call__") && meta.objectGraphDef.concreteFunctions[$0.signature.name] != nil
        })
        XCTAssertTrue(call.nodeDef.contains { $0.op == "MatMul" })
        XCTAssertEqual(call.signature.inputArg.first?.type, .dtFloat)
        XCTAssertTrue(call.signature.inputArg.contains { $0.type == .dtResource })
        XCTAssertFalse(call.ret.isEmpty)
        let concrete = try XCTUnwrap(meta.objectGraphDef.concreteFunctions[call.signature.name])
        XCTAssertEqual(concrete.boundInputs.count, 2)  // kernel and bias
    }

    func testAFrozenGraphHoldsTheKernelAsAConstant() throws {
        let expected = try F.expected()
        let graph = try Tensorflow_GraphDef(serializedBytes: F.bytes(F.dir.appendingPathComponent("frozen.pb")))
        XCTAssertGreaterThan(graph.versions.producer, 0)
        let constants = graph.node.filter { $0.op == "Const" }
        let kernel = try XCTUnwrap(constants.compactMap { $0.attr["value"]?.tensor }.first { $0.tensorShape.dim.map(\.size) == [4, 3] })
        XCTAssertEqual(kernel.dtype, .dtFloat)
        let values = TensorBundle.decode(littleEndian: [UInt8](kernel.tensorContent), dtype: .float32, shape: [4, 3])
        XCTAssertEqual(values.floats?.map(\.bitPattern), expected.kernel.map { Float(Double($0) ?? .nan).bitPattern })
        let matmul = try XCTUnwrap(graph.node.first { $0.op == "MatMul" })
        XCTAssertEqual(matmul.attr["T"]?.type, .dtFloat)
        XCTAssertEqual(matmul.attr["transpose_a"]?.b, false)
    }

    func testEveryAttrValueMemberRoundTrips() throws {
        var list = Tensorflow_AttrValue.ListValue()
        list.i = [1, -2]
        list.type = [.dtHalf, .dtInt64Ref]
        list.func = [Tensorflow_NameAttrList.with { $0.name = "f" }]
        let values: [Tensorflow_AttrValue.OneOf_Value] = [
            .s(Data("same".utf8)), .i(-7), .f(0.5), .b(true), .type(.dtBfloat16),
            .shape(.with { $0.unknownRank = true }), .tensor(.with { $0.halfVal = [0x3C00] }), .list(list),
            .func(.with { $0.name = "g"; $0.attr["k"] = .with { $0.i = 3 } }), .placeholder("T"),
        ]
        for value in values {
            let attr = Tensorflow_AttrValue.with { $0.value = value }
            let back = try Tensorflow_AttrValue(serializedBytes: attr.serializedBytes() as [UInt8])
            XCTAssertEqual(back.value, value)
        }
    }
}
