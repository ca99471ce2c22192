import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// The ops that reach a NeuralNetwork layer through a lowering pass or a
/// specification-4 layer (comparisons, logic, Where, Expand, global pools of
/// rank ≠ 4, reflect / edge pads of any axis, PRelu slopes along a
/// non-channel axis, Clip bounds computed at run time): each graph is run by
/// the interpreter as it is, lowered, and exported → imported, and the
/// results compared.
final class CoreMLLoweringExportTests: XCTestCase {
    typealias Builder = CoreMLLayerExportTests.Builder

    /// Exports, imports and runs the graph; also runs the lowered graph. Returns the spec.
    @discardableResult
    func roundTrip(_ b: inout Builder, _ label: String, tolerance: Double = 1e-5,
                   file: StaticString = #filePath, line: UInt = #line) throws -> CoreML_Specification_Model {
        let prepared = try ExportPreparation.prepare(b.g).graph
        let spec = try CoreMLExporter.exportSpec(prepared)
        let back = try CoreMLImporter.importModel(data: try spec.serializedData(), file: "\(label).mlmodel")
        let inputs = b.inputs()
        let want = try Interpreter(graph: b.g).run(inputs)
        let lowered = try Interpreter(graph: try CoreMLLowering.pipeline.applied(to: prepared)).run(inputs)
        let got = try Interpreter(graph: back).run(inputs)
        XCTAssertEqual(Set(got.keys), Set(want.keys), label, file: file, line: line)
        XCTAssertLessThanOrEqual(CoreMLRoundTripTests.relativeError(lowered, want), tolerance, "\(label) lowered", file: file, line: line)
        XCTAssertLessThanOrEqual(CoreMLRoundTripTests.relativeError(got, want), tolerance, "\(label) exported", file: file, line: line)
        return spec
    }

    func kinds(_ spec: CoreML_Specification_Model) -> [String] {
        spec.neuralNetwork.layers.map { l in l.layer.map { String("\($0)".prefix { $0 != "(" }) } ?? "" }
    }

    func testComparisonsLogicWhereAndExpand() throws {
        var b = Builder()
        b.input("x", [2, 3, 4])
        b.input("z", [2, 3, 4])
        b.weight("row", [1, 3, 1])
        b.floats("zero", [0])
        b.node("Floor", ["x"], ["fx"])
        b.node("Floor", ["z"], ["fz"])
        var outs: [String] = []
        for (k, op) in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"].enumerated() {
            // Two runtime operands, a constant second operand (alpha), a constant first one (flipped).
            for (j, pair) in [["fx", "fz"], ["fx", "zero"], ["zero", "fx"]].enumerated() {
                b.node(op, pair, ["c\(k)_\(j)"])
                b.node("Cast", ["c\(k)_\(j)"], ["f\(k)_\(j)"], ["to": .int(1)])
                outs.append("f\(k)_\(j)")
            }
        }
        b.node("Cast", ["fx"], ["bx"], ["to": .int(9)])
        b.node("Cast", ["fz"], ["bz"], ["to": .int(9)])
        for op in ["And", "Or", "Xor"] {
            b.node(op, ["bx", "bz"], ["l\(op)"])
            b.node("Cast", ["l\(op)"], ["o\(op)"], ["to": .int(1)])
            outs.append("o\(op)")
        }
        b.node("Not", ["bx"], ["nx"])
        b.node("Where", ["nx", "x", "z"], ["w"])
        b.node("Less", ["x", "z"], ["lt"])
        b.node("Where", ["lt", "zero", "row"], ["w2"])
        b.node("ReduceMax", ["z"], ["zm"], ["axes": .ints([1]), "keepdims": .int(1)])
        b.node("Expand", ["zm", "shape"], ["e"])
        b.ints("shape", [2, 3, 4])
        b.node("Add", ["e", "x"], ["ex"])
        for o in outs { b.output(o) }
        b.output("w", "w2", "ex")
        let spec = try roundTrip(&b, "logic")
        XCTAssertEqual(spec.specificationVersion, 4)
        let k = kinds(spec)
        for layer in ["equal", "lessThan", "greaterThan", "lessEqual", "greaterEqual", "notEqual", "logicalAnd", "logicalOr",
                      "logicalXor", "logicalNot", "whereBroadcastable", "broadcastToStatic"] {
            XCTAssertTrue(k.contains(layer), "\(layer) missing from \(k)")
        }
    }

    func testGlobalPoolsOfRank3And5AreReductionsAndRank4KeepsThePoolingLayer() throws {
        var b = Builder()
        b.input("x", [1, 3, 7])
        b.input("v", [1, 2, 3, 4, 2])
        b.input("i", [1, 2, 3, 3])
        b.node("GlobalMaxPool", ["x"], ["m"])
        b.node("GlobalAveragePool", ["v"], ["a"])
        b.node("GlobalMaxPool", ["i"], ["g"])
        b.output("m", "a", "g")
        let k = kinds(try roundTrip(&b, "global pools"))
        XCTAssertEqual(k.filter { $0 == "reduceMax" }.count, 1, "\(k)")
        XCTAssertEqual(k.filter { $0 == "reduceMean" }.count, 1, "\(k)")
        XCTAssertEqual(k.filter { $0 == "pooling" }.count, 1, "\(k)")
    }

    func testReflectAndEdgePadsOfAnyAxis() throws {
        var b = Builder()
        b.input("s", [1, 9])
        b.input("t", [1, 6, 1])
        b.input("x", [1, 5, 3, 4])
        b.ints("p1", [0, 2, 0, 3])
        b.ints("p2", [0, 2, 0, 0, 3, 0])
        b.ints("p3", [0, 2, 0, 0, 0, 1, 0, 0])
        b.ints("p4", [1, 0, 0, 2, 1, 0, 0, 1])
        b.node("Pad", ["s", "p1"], ["a"], ["mode": .string("reflect")])
        b.node("Pad", ["t", "p2"], ["c"], ["mode": .string("reflect")])
        b.node("Pad", ["x", "p3"], ["d"], ["mode": .string("reflect")])
        b.node("Pad", ["x", "p4"], ["e"], ["mode": .string("edge")])
        b.output("a", "c", "d", "e")
        let k = kinds(try roundTrip(&b, "pads"))
        XCTAssertEqual(k.filter { $0 == "padding" }.count, 4, "\(k)")
        // Rank 2 and 3 pad their last two axes in place; the rank-4 ones are moved there and back.
        XCTAssertEqual(k.filter { $0 == "transpose" }.count, 4, "\(k)")
    }

    func testPReluWithAnNHWCSlope() throws {
        var b = Builder()
        b.input("x", [1, 4, 3, 3])
        b.weight("w", [4, 4, 1, 1])
        b.weight("s", [1, 1, 4])
        b.weight("s2", [4])
        b.node("Conv", ["x", "w"], ["c"])
        b.node("Transpose", ["c"], ["h"], ["perm": .ints(Permutation.toNHWC)])
        b.node("PRelu", ["h", "s"], ["p"])
        b.node("Transpose", ["p"], ["back"], ["perm": .ints(Permutation.toNCHW)])
        b.node("Conv", ["back", "w"], ["c2"])
        b.node("Transpose", ["c2"], ["h2"], ["perm": .ints(Permutation.toNHWC)])
        b.node("Add", ["p", "h2"], ["sum"])
        b.node("PRelu", ["sum", "s2"], ["y"])
        b.output("y")
        let k = kinds(try roundTrip(&b, "prelu nhwc"))
        XCTAssertEqual(k.filter { $0 == "activation" }.count, 2, "\(k)")
        // Conv → PRelu → Conv needs none; the NHWC Add keeps its inputs' two, the second PRelu adds two.
        XCTAssertEqual(k.filter { $0 == "transpose" }.count, 4, "\(k)")
    }

    /// A [C] slope on an NCHW value broadcasts along W (ONNX rules), not along the channels,
    /// even when W happens to equal C.
    func testPReluSlopeOfRankOneRunsAlongTheLastAxis() throws {
        var b = Builder()
        b.input("x", [1, 3, 2, 3])
        b.weight("s", [3])
        b.node("PRelu", ["x", "s"], ["y"])
        b.output("y")
        try roundTrip(&b, "prelu [C] along W")
        var c = Builder()
        c.input("x", [1, 3, 2, 3])
        c.weight("s", [3, 1, 1])
        c.node("PRelu", ["x", "s"], ["y"])
        c.output("y")
        let k = kinds(try roundTrip(&c, "prelu [C, 1, 1]"))
        XCTAssertEqual(k, ["activation"], "a per-channel slope is one PReLU layer")
    }

    func testClipWithBoundsComputedAtRunTime() throws {
        var b = Builder()
        b.input("x", [1, 1, 5, 4])
        b.floats("k", [2])
        b.g.setConstant(Constant(name: "inf", tensor: Tensor([Float.infinity], shape: [])))
        b.node("ReduceMax", ["x"], ["m"], ["keepdims": .int(0)])
        b.node("Sub", ["m", "k"], ["lo"])
        b.node("Clip", ["x", "lo", "inf"], ["a"])
        b.node("ReduceMean", ["x"], ["hi"], ["keepdims": .int(0)])
        b.node("Clip", ["x", "", "hi"], ["c"])
        b.output("a", "c")
        let k = kinds(try roundTrip(&b, "clip"))
        XCTAssertTrue(k.contains("maxBroadcastable") && k.contains("minBroadcastable"), "\(k)")
    }

    /// Forms no pass brings to a layer are refused in one line naming the op, the node and why.
    func testFormsWithoutALayerAreNamed() throws {
        var b = Builder()
        b.input("x", [2, 3, 4, 5])
        b.ints("p", [1, 1, 1, 0, 1, 1, 1, 0])
        b.weight("s", [2, 1, 4, 1])
        b.node("Pad", ["x", "p"], ["a"], ["mode": .string("reflect")])
        b.node("PRelu", ["x", "s"], ["c"])
        b.output("a", "c")
        let prepared = try ExportPreparation.prepare(b.g).graph
        let message = errorText { _ = try CoreMLExporter.exportSpec(prepared) }
        XCTAssertFalse(message.contains("\n"), message)
        XCTAssertTrue(message.contains("Pad (node 'Pad_0': reflect padding of an axis other than the last two (axes [0, 1, 2] of rank 4))"), message)
        XCTAssertTrue(message.contains("PRelu (node 'PRelu_1': slope shape [2, 1, 4, 1] is neither a scalar nor per channel)"), message)
    }
}
