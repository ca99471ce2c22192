import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapTFLite
import XCTest

/// Graphs TFLite has no direct op for, written through the lowering passes
/// (1-D convolutions and pools, stateful LSTMs) or several ops (reverse and
/// bidirectional LSTMs): export → import → run gives the graph's outputs.
final class TFLiteExportLoweringTests: XCTestCase {
    func random(_ shape: [Int], seed: UInt64, scale: Float = 1) -> Tensor {
        var rng = SplitMix(seed: seed)
        return Tensor((0..<shape.reduce(1, *)).map { _ in Float(rng.normal()) * scale }, shape: shape)
    }

    /// Exports `g`, reads the file back, and checks every output against the graph's own.
    @discardableResult
    func roundTrip(_ g: Graph, _ feeds: [String: Tensor], tol: Float = 1e-5, file: StaticString = #filePath, line: UInt = #line) throws -> TFLiteModel {
        let bytes = try TFLiteExporter.exportBytes(try ExportPreparation.prepare(g).graph)
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "t.tflite")
        let want = try Interpreter(graph: g).run(feeds), got = try Interpreter(graph: back).run(feeds)
        for o in g.outputs {
            let a = try XCTUnwrap(want[o.name], file: file, line: line), b = try XCTUnwrap(got[o.name], o.name, file: file, line: line)
            XCTAssertEqual(a.shape, b.shape, o.name, file: file, line: line)
            let d = zip(a.floats ?? [], b.floats ?? []).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThanOrEqual(d, tol, o.name, file: file, line: line)
        }
        return try TFLiteModel(bytes: bytes, file: "t.tflite")
    }

    func testConvolutions1DBecome2DWithoutTransposesBetween() throws {
        var g = Graph(name: "conv1d", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [1, 3, 20].map { .fixed($0) })],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil), ValueInfo(name: "z", dtype: .float32, shape: nil)], nodes: [])
        g.nodes = [
            Node(name: "c1", opType: "Conv", inputs: ["x", "w1", "b1"], outputs: ["c1"],
                 attributes: ["kernel_shape": .ints([5]), "strides": .ints([2]), "pads": .ints([2, 2])]),
            Node(name: "r1", opType: "Relu", inputs: ["c1"], outputs: ["r1"]),
            Node(name: "c2", opType: "Conv", inputs: ["r1", "w2"], outputs: ["c2"], attributes: ["kernel_shape": .ints([3]), "pads": .ints([1, 1])]),
            Node(name: "r2", opType: "Relu", inputs: ["c2"], outputs: ["r2"]),
            Node(name: "mp", opType: "MaxPool", inputs: ["r2"], outputs: ["y"], attributes: ["kernel_shape": .ints([2]), "strides": .ints([2])]),
            Node(name: "gmp", opType: "GlobalMaxPool", inputs: ["r2"], outputs: ["z"]),
        ]
        for (k, (name, shape)) in [("w1", [6, 3, 5]), ("b1", [6]), ("w2", [4, 6, 3])].enumerated() {
            g.setConstant(Constant(name: name, tensor: random(shape, seed: UInt64(k + 1))))
        }
        let model = try roundTrip(g, ["x": random([1, 3, 20], seed: 9)])
        let ops = model.ops.map(\.name)
        XCTAssertEqual(ops.filter { $0 == "CONV_2D" }.count, 2, ops.joined(separator: " "))
        XCTAssertTrue(ops.contains("MAX_POOL_2D") && ops.contains("REDUCE_MAX"), ops.joined(separator: " "))
        // One Transpose into NHWC, one out per output: none between the convolutions.
        XCTAssertEqual(ops.filter { $0 == "TRANSPOSE" }.count, 3, ops.joined(separator: " "))
        let firstConv = try XCTUnwrap(ops.firstIndex(of: "CONV_2D")), lastConv = try XCTUnwrap(ops.lastIndex(of: "CONV_2D"))
        XCTAssertFalse(ops[firstConv...lastConv].contains("TRANSPOSE"), ops.joined(separator: " "))
    }

    func lstmGraph(direction: String, stateful: Bool) -> Graph {
        let (seq, batch, input, hidden) = (4, 2, 3, 5)
        let dirs = direction == "bidirectional" ? 2 : 1
        var g = Graph(name: "lstm", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [seq, batch, input].map { .fixed($0) })],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.setConstant(Constant(name: "W", tensor: random([dirs, 4 * hidden, input], seed: 21, scale: 0.5)))
        g.setConstant(Constant(name: "R", tensor: random([dirs, 4 * hidden, hidden], seed: 22, scale: 0.5)))
        g.setConstant(Constant(name: "B", tensor: random([dirs, 8 * hidden], seed: 23, scale: 0.5)))
        var node = Node(name: "lstm", opType: "LSTM", inputs: ["x", "W", "R", "B"], outputs: ["y"],
                        attributes: ["hidden_size": .int(hidden), "direction": .string(direction)])
        if stateful {
            for s in ["h0", "c0"] { g.inputs.append(ValueInfo(name: s, dtype: .float32, shape: [1, batch, hidden].map { .fixed($0) })) }
            node.inputs += ["", "h0", "c0"]
            node.outputs += ["hn", "cn"]
            g.outputs += ["hn", "cn"].map { ValueInfo(name: $0, dtype: .float32, shape: nil) }
        }
        g.nodes = [node]
        return g
    }

    func testBidirectionalAndReverseLSTMsRunForwardOpsOnReversedTime() throws {
        let x = random([4, 2, 3], seed: 31, scale: 2)
        let bi = try roundTrip(lstmGraph(direction: "bidirectional", stateful: false), ["x": x])
        XCTAssertEqual(bi.ops.map(\.name), ["UNIDIRECTIONAL_SEQUENCE_LSTM", "RESHAPE", "REVERSE_V2", "UNIDIRECTIONAL_SEQUENCE_LSTM",
                                            "REVERSE_V2", "RESHAPE", "CONCATENATION"])
        let rev = try roundTrip(lstmGraph(direction: "reverse", stateful: false), ["x": x])
        XCTAssertEqual(rev.ops.map(\.name), ["REVERSE_V2", "UNIDIRECTIONAL_SEQUENCE_LSTM", "REVERSE_V2", "RESHAPE"])
    }

    func testStatefulLSTMIsUnrolled() throws {
        let feeds = ["x": random([4, 2, 3], seed: 41, scale: 2), "h0": random([1, 2, 5], seed: 42), "c0": random([1, 2, 5], seed: 43)]
        let model = try roundTrip(lstmGraph(direction: "forward", stateful: true), feeds)
        XCTAssertFalse(model.ops.contains { $0.name == "UNIDIRECTIONAL_SEQUENCE_LSTM" })
        XCTAssertEqual(model.ops.filter { $0.name == "FULLY_CONNECTED" }.count, 5, "one input projection, one recurrence per step")
    }

    /// A log-mel front end's floor: Clip(x, ReduceMax(x) − 1) (a run-time min) after a float → float Cast.
    func testClipWithRunTimeBoundAndCastRoundTrip() throws {
        var g = Graph(name: "clip", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [2, 6].map { .fixed($0) })],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.setConstant(Constant(name: "one", tensor: Tensor([1], shape: [])))
        g.setConstant(Constant(name: "hi", tensor: Tensor([0.5], shape: [])))
        g.nodes = [
            Node(name: "max", opType: "ReduceMax", inputs: ["x"], outputs: ["m"], attributes: ["keepdims": .int(0)]),
            Node(name: "sub", opType: "Sub", inputs: ["m", "one"], outputs: ["floor"]),
            Node(name: "cast", opType: "Cast", inputs: ["floor"], outputs: ["floor32"], attributes: ["to": .int(DType.float32.onnxDataType)]),
            Node(name: "clip", opType: "Clip", inputs: ["x", "floor32", "hi"], outputs: ["y"]),
        ]
        let x = random([2, 6], seed: 51)
        let model = try roundTrip(g, ["x": x], tol: 0)
        XCTAssertEqual(model.ops.map(\.name).suffix(3), ["CAST", "MAXIMUM", "MINIMUM"])
        let want = try Interpreter(graph: g).run(["x": x])["y"]?.floats ?? []
        let top = x.floats?.max() ?? 0
        XCTAssertEqual(want, x.floats?.map { min(max($0, top - 1), 0.5) })
    }

    /// A reflect pad on the last axis (Silero VAD's STFT framing) is written as MIRROR_PAD and read back.
    func testReflectPadRoundTrips() throws {
        var g = Graph(name: "pad", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [2, 7].map { .fixed($0) })],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.setConstant(Constant(name: "pads", tensor: Tensor(ints: [0, 0, 0, 3], shape: [4])))
        g.nodes = [Node(name: "pad", opType: "Pad", inputs: ["x", "pads"], outputs: ["y"], attributes: ["mode": .string("reflect")])]
        let x = Tensor((0..<14).map { Float($0) }, shape: [2, 7])
        let model = try roundTrip(g, ["x": x], tol: 0)
        XCTAssertEqual(model.ops.map(\.name), ["MIRROR_PAD"])
        XCTAssertEqual(try Interpreter(graph: g).run(["x": x])["y"]?.floats?.prefix(10), [0, 1, 2, 3, 4, 5, 6, 5, 4, 3])
    }
}
