import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import TensorFlowSchema
import XCTest
@testable import ShrinkwrapTensorFlow

/// Single TensorFlow ops on hand-built graphs, against TensorFlow's definition of each.
final class TFOpsTests: XCTestCase {
    func run(_ nodes: [Tensorflow_NodeDef], _ feeds: [String: Tensor], output: String) throws -> Tensor {
        let g = Tensorflow_GraphDef.with { $0.node = nodes }
        let graph = try TensorFlowImporter.importGraphDef(bytes: try g.serializedBytes(), file: "op.pb", outputs: [output])
        return try XCTUnwrap(try Interpreter(graph: graph).run(feeds)[output])
    }

    /// DivNoNan: x / y, and 0 wherever y is 0 (even for x = 0 or x = ±inf).
    func testDivNoNanIsZeroWhereTheDivisorIs() throws {
        let y = try run([placeholder("x", [4]), placeholder("d", [4]), node("q", "DivNoNan", ["x", "d"], ["T": .type(.dtFloat)])],
                        ["x": Tensor([1, 0, .infinity, 3], shape: [4]), "d": Tensor([0, 0, 0, 4], shape: [4])], output: "q")
        XCTAssertEqual(y.floats, [0, 0, 0, 0.75])
    }

    /// ReverseV2 on the given axes; ZerosLike / OnesLike keep the input's shape.
    func testReverseAndFilledLike() throws {
        let x = Tensor([1, 2, 3, 4, 5, 6], shape: [2, 3])
        let axis = node("axis", "Const", [], ["dtype": .type(.dtInt32),
                                               "value": .tensor(Tensorflow_TensorProto.with { $0.dtype = .dtInt32; $0.tensorShape.dim = [.with { $0.size = 1 }]; $0.intVal = [1] })])
        let reversed = try run([placeholder("x", [2, 3]), axis, node("r", "ReverseV2", ["x", "axis"])], ["x": x], output: "r")
        XCTAssertEqual(reversed.floats, [3, 2, 1, 6, 5, 4])
        let ones = try run([placeholder("x", [2, 3]), node("o", "OnesLike", ["x"], ["T": .type(.dtFloat)])], ["x": x], output: "o")
        XCTAssertEqual(ones.shape, [2, 3])
        XCTAssertEqual(ones.floats, [1, 1, 1, 1, 1, 1])
    }
}
