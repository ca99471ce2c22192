import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapTFLite
import XCTest

/// Export → import → run: the exported file must compute what the graph did
/// (tf.lite.Interpreter on the same files: `make crosscheck-tflite-export`).
final class TFLiteExporterTests: XCTestCase {
    func randomFloats(_ n: Int, seed: UInt64) -> [Float] {
        var rng = SplitMix(seed: seed)
        return (0..<n).map { _ in Float(Double(rng.next() % 2001) / 1000 - 1) }
    }

    func export(_ g: Graph) throws -> [UInt8] {
        try TFLiteExporter.exportBytes(try ExportPreparation.prepare(g).graph)
    }

    func outputs(_ g: Graph, _ feeds: [String: Tensor]) throws -> [Tensor] {
        let out = try Interpreter(graph: g).run(feeds)
        return try g.outputs.map { try XCTUnwrap(out[$0.name], $0.name) }
    }

    func assertClose(_ a: [Tensor], _ b: [Tensor], tol: Float = 1e-5, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.count, b.count, file: file, line: line)
        for (x, y) in zip(a, b) {
            XCTAssertEqual(x.shape, y.shape, file: file, line: line)
            let d = zip(x.floats ?? [], y.floats ?? []).map { abs($0 - $1) }.max() ?? 0
            XCTAssertLessThanOrEqual(d, tol, file: file, line: line)
        }
    }

    /// An ONNX-style NCHW network touching the layout rewrites: conv with pads
    /// that are not TF's SAME, grouped and depthwise convs, batch norm,
    /// ceil-mode max pool, an average pool excluding its padding, concat,
    /// flatten, Gemm, softmax.
    func nchwGraph(weights: (String, [Int]) -> WeightEncoding) -> Graph {
        var g = Graph(name: "nchw", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(4), .fixed(9), .fixed(9)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        func const(_ name: String, _ shape: [Int]) -> String {
            g.setConstant(Constant(name: name, encoding: weights(name, shape)))
            return name
        }
        let c = [Float](repeating: 1, count: 8)
        g.setConstant(Constant(name: "bn_scale", tensor: Tensor(c.enumerated().map { 1 + Float($0.offset) / 10 }, shape: [8])))
        g.setConstant(Constant(name: "bn_bias", tensor: Tensor(c.enumerated().map { Float($0.offset) / 5 - 0.5 }, shape: [8])))
        g.setConstant(Constant(name: "bn_mean", tensor: Tensor(c.map { $0 * 0.1 }, shape: [8])))
        g.setConstant(Constant(name: "bn_var", tensor: Tensor(c.map { $0 * 2 }, shape: [8])))
        g.nodes = [
            Node(name: "conv", opType: "Conv", inputs: ["x", const("w1", [8, 4, 3, 3]), const("b1", [8])], outputs: ["c1"],
                 attributes: ["pads": .ints([0, 1, 1, 0]), "strides": .ints([2, 2]), "kernel_shape": .ints([3, 3])]),
            Node(name: "bn", opType: "BatchNormalization", inputs: ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], outputs: ["n1"]),
            Node(name: "relu", opType: "Relu", inputs: ["n1"], outputs: ["r1"]),
            Node(name: "group", opType: "Conv", inputs: ["r1", const("w2", [8, 4, 1, 1])], outputs: ["c2"], attributes: ["group": .int(2)]),
            Node(name: "dw", opType: "Conv", inputs: ["r1", const("w3", [8, 1, 3, 3]), const("b3", [8])], outputs: ["c3"],
                 attributes: ["group": .int(8), "pads": .ints([1, 1, 1, 1])]),
            Node(name: "sum", opType: "Add", inputs: ["c2", "c3"], outputs: ["s"]),
            Node(name: "pool", opType: "MaxPool", inputs: ["s"], outputs: ["p"],
                 attributes: ["kernel_shape": .ints([2, 2]), "strides": .ints([2, 2]), "ceil_mode": .int(1)]),
            Node(name: "avg", opType: "AveragePool", inputs: ["s"], outputs: ["a"],
                 attributes: ["kernel_shape": .ints([3, 3]), "strides": .ints([2, 2]), "pads": .ints([1, 1, 1, 1])]),
            Node(name: "cat", opType: "Concat", inputs: ["p", "a"], outputs: ["cat"], attributes: ["axis": .int(1)]),
            Node(name: "flat", opType: "Flatten", inputs: ["cat"], outputs: ["f"]),
            Node(name: "fc", opType: "Gemm", inputs: ["f", const("wf", [5, 64]), const("bf", [5])], outputs: ["logits"],
                 attributes: ["transB": .int(1)]),
            Node(name: "softmax", opType: "Softmax", inputs: ["logits"], outputs: ["y"]),
        ]
        return g
    }

    func dense(_ name: String, _ shape: [Int]) -> WeightEncoding {
        .dense(Tensor(randomFloats(shape.reduce(1, *), seed: UInt64(name.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) })), shape: shape))
    }

    func testNCHWGraphRoundTrips() throws {
        let g = nchwGraph(weights: dense)
        let bytes = try export(g)
        XCTAssertEqual(bytes, try export(g), "same graph, same bytes")
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "x.tflite")
        let x = Tensor(randomFloats(4 * 81, seed: 3), shape: [1, 4, 9, 9])
        assertClose(try outputs(back, ["x": x]), try outputs(g, ["x": x]))
        // NCHW at the boundary: one Transpose into the NHWC region, one out before Flatten.
        let model = try TFLiteModel(bytes: bytes, file: "x.tflite")
        XCTAssertEqual(model.ops.filter { $0.name == "TRANSPOSE" }.count, 2, model.ops.map(\.name).joined(separator: " "))
        XCTAssertEqual(Set(model.ops.map(\.name)).isSuperset(of: ["CONV_2D", "DEPTHWISE_CONV_2D", "SPLIT", "MAX_POOL_2D", "AVERAGE_POOL_2D",
                                                                  "FULLY_CONNECTED", "SOFTMAX"]), true, model.ops.map(\.name).joined(separator: " "))
    }

    func testTFLiteGraphComesBackWithoutTransposes() throws {
        let m = TFLiteImporterTests.convModel()
        let g = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite")
        let bytes = try export(g)
        let model = try TFLiteModel(bytes: bytes, file: "e.tflite")
        XCTAssertEqual(model.ops.map(\.name), ["CONV_2D", "ADD"], "the RELU fused back into the convolution")
        XCTAssertEqual(model.tensors[model.inputs[0]].shape, [1, 2, 2, 3])
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "e.tflite")
        let x = Tensor((0..<12).map { Float($0) }, shape: [1, 2, 2, 3])
        assertClose(try outputs(back, ["x": x]), try outputs(g, ["x": x]), tol: 0)
    }

    /// fp16 → FLOAT16 + DEQUANTIZE; 8-bit symmetric per channel → INT8 read by the conv;
    /// both come back with the same encoding and the same values.
    func testCompressedWeightsKeepTheirEncoding() throws {
        func encoded(_ name: String, _ shape: [Int]) -> WeightEncoding {
            let d = dense(name, shape)
            guard shape.count == 4, let v = d.decoded().floats else { return d }
            if name == "w1" {
                return .float16(try! Float16Weights(shape: shape, bits: v.map { Half.bits(from: $0) }))
            }
            // Symmetric int8 per output channel.
            let per = v.count / shape[0]
            var q: [Int16] = [], scale: [Float] = []
            for o in 0..<shape[0] {
                let row = v[o * per..<(o + 1) * per]
                let s = max(row.map(abs).max() ?? 1, 1e-6) / 127
                scale.append(s)
                q += row.map { Int16(($0 / s).rounded()) }
            }
            var block = shape
            block[0] = 1
            return .affine(try! AffineWeights(shape: shape, bits: 8, signed: true, q: q, blockShape: block, scale: scale,
                                              bias: [Float](repeating: 0, count: shape[0])))
        }
        let g = nchwGraph(weights: encoded)
        let bytes = try export(g)
        let model = try TFLiteModel(bytes: bytes, file: "c.tflite")
        XCTAssertTrue(model.tensors.contains { $0.type == 1 }, "a FLOAT16 tensor")
        XCTAssertTrue(model.ops.contains { $0.name == "DEQUANTIZE" })
        let int8 = model.tensors.filter { $0.type == 9 }
        XCTAssertFalse(int8.isEmpty, "int8 filters")
        XCTAssertTrue(int8.contains { ($0.quantization?.scale.count ?? 0) == 8 }, "per-channel scales")
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "c.tflite")
        XCTAssertTrue(back.constants.contains { if case .float16 = $0.encoding { return true }; return false })
        XCTAssertTrue(back.constants.contains { if case .affine = $0.encoding { return true }; return false })
        let x = Tensor(randomFloats(4 * 81, seed: 5), shape: [1, 4, 9, 9])
        assertClose(try outputs(back, ["x": x]), try outputs(g, ["x": x]))
    }

    func testWeightsTFLiteCannotHoldAreRefusedWithAWayOut() throws {
        var g = nchwGraph(weights: dense)
        let w = try XCTUnwrap(g.constant(named: "w1")?.encoding.decoded().floats)
        g.setConstant(Constant(name: "w1", encoding: .palette(try PaletteWeights(
            shape: [8, 4, 3, 3], bits: 2, indices: w.map { $0 < -0.5 ? 0 : $0 < 0 ? 1 : $0 < 0.5 ? 2 : 3 },
            lut: [[-0.75, -0.25, 0.25, 0.75]], axis: 0, groupSize: 8))))
        let lut = errorText { _ = try self.export(g) }
        XCTAssertTrue(lut.contains("palette (LUT)") && lut.contains("Core ML"), lut)

        g = nchwGraph(weights: dense)
        g.setConstant(Constant(name: "w1", encoding: .affine(try AffineWeights(
            shape: [8, 4, 3, 3], bits: 4, signed: true, q: w.map { Int16(($0 * 7).rounded()) }, blockShape: [1, 4, 3, 3],
            scale: [Float](repeating: 1 / 7, count: 8), bias: [Float](repeating: 0, count: 8)))))
        let four = errorText { _ = try self.export(g) }
        XCTAssertTrue(four.contains("4-bit") && four.contains("--bits 8"), four)

        g = nchwGraph(weights: dense)
        g.setConstant(Constant(name: "w1", encoding: .affine(try AffineWeights(
            shape: [8, 4, 3, 3], bits: 8, signed: false, q: w.map { Int16(($0 + 1) * 127.3) }, blockShape: [1, 4, 3, 3],
            scale: [Float](repeating: 1 / 127.3, count: 8), bias: [Float](repeating: -1.0013, count: 8)))))
        let asym = errorText { _ = try self.export(g) }
        XCTAssertTrue(asym.contains("--symmetric"), asym)
    }

    func testUnsupportedOpsAreListedTogether() throws {
        // A prepared graph (shapes known) with two ops TFLite cannot express and one downstream of them.
        var p = try ExportPreparation.prepare(nchwGraph(weights: dense)).graph
        p.nodes += [
            Node(name: "odd", opType: "Einsum", inputs: ["y"], outputs: ["e1"]),
            Node(name: "after", opType: "Relu", inputs: ["e1"], outputs: ["e2"]),
            Node(name: "lrn", opType: "LRN", inputs: ["x"], outputs: ["e3"], attributes: ["size": .int(4)]),
        ]
        for (name, shape) in [("e1", [1, 5]), ("e2", [1, 5]), ("e3", [1, 4, 9, 9])] {
            p.valueInfo[name] = ValueInfo(name: name, dtype: .float32, shape: shape.map { .fixed($0) })
            p.outputs.append(ValueInfo(name: name, dtype: .float32, shape: shape.map { .fixed($0) }))
        }
        let text = errorText { _ = try TFLiteExporter.exportBytes(p) }
        XCTAssertEqual(text, "TensorFlow Lite cannot express these ops (2): Einsum (node 'odd'), LRN (node 'lrn': size 4 (TFLite's window is symmetric: odd sizes only))")
    }

    /// HardSigmoid (paddle2onnx's squeeze-excite gate) has no TFLite op: lowered to
    /// MUL, ADD, MAXIMUM, MINIMUM, it computes the same on an NCHW image after a conv.
    func testHardSigmoidIsLowered() throws {
        var g = nchwGraph(weights: dense)
        // Gate the conv sum "s" (NCHW) before the pools read it.
        for k in g.nodes.indices { g.nodes[k].inputs = g.nodes[k].inputs.map { $0 == "s" ? "gated" : $0 } }
        let at = try XCTUnwrap(g.nodes.firstIndex { $0.outputs == ["s"] }) + 1
        g.nodes.insert(Node(name: "gate", opType: "HardSigmoid", inputs: ["s"], outputs: ["gated"],
                            attributes: ["alpha": .float(1.0 / 6), "beta": .float(0.5)]), at: at)
        XCTAssertTrue(TFLiteExporter.supportedOps.contains("HardSigmoid"))
        XCTAssertTrue(TFLiteExporter.supportedOps.contains("BatchNormalization"))
        let back = try TFLiteImporter.importModel(bytes: export(g), file: "hs.tflite")
        XCTAssertFalse(back.nodes.contains { $0.opType == "HardSigmoid" })
        let x = Tensor(randomFloats(4 * 9 * 9, seed: 5).map { $0 * 8 }, shape: [1, 4, 9, 9])
        assertClose(try outputs(back, ["x": x]), try outputs(g, ["x": x]))
    }

    /// ONNX LSTM (peepholes, biases, cell clip) → UNIDIRECTIONAL_SEQUENCE_LSTM → back: same sequence.
    func testLSTMRoundTrips() throws {
        let (seq, batch, input, hidden) = (5, 2, 3, 4)
        var g = Graph(name: "lstm", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(seq), .fixed(batch), .fixed(input)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.setConstant(Constant(name: "W", tensor: Tensor(randomFloats(4 * hidden * input, seed: 11), shape: [1, 4 * hidden, input])))
        g.setConstant(Constant(name: "R", tensor: Tensor(randomFloats(4 * hidden * hidden, seed: 12), shape: [1, 4 * hidden, hidden])))
        g.setConstant(Constant(name: "B", tensor: Tensor(randomFloats(8 * hidden, seed: 13), shape: [1, 8 * hidden])))
        g.setConstant(Constant(name: "P", tensor: Tensor(randomFloats(3 * hidden, seed: 14), shape: [1, 3 * hidden])))
        g.nodes = [Node(name: "lstm", opType: "LSTM", inputs: ["x", "W", "R", "B", "", "", "", "P"], outputs: ["y"],
                        attributes: ["hidden_size": .int(hidden), "shrinkwrap_cell_clip": .float(0.5)])]
        let bytes = try export(g)
        let model = try TFLiteModel(bytes: bytes, file: "l.tflite")
        XCTAssertEqual(model.ops.map(\.name), ["UNIDIRECTIONAL_SEQUENCE_LSTM", "RESHAPE"])
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "l.tflite")
        let x = Tensor(randomFloats(seq * batch * input, seed: 15).map { $0 * 3 }, shape: [seq, batch, input])
        assertClose(try outputs(back, ["x": x]), try outputs(g, ["x": x]))

        // The final states are not an output of TFLite's op.
        g.nodes[0].outputs = ["y", "y_h"]
        g.outputs.append(ValueInfo(name: "y_h", dtype: .float32, shape: nil))
        let text = errorText { _ = try self.export(g) }
        XCTAssertTrue(text.contains("final states"), text)
    }

    func testSupportedOpsNameRealBuiltins() {
        let names = Set(TFLiteSchemaTables.builtinOperators.values)
        XCTAssertGreaterThan(TFLiteExporter.supportedOps.count, 40)
        for (ir, op) in TFLiteExportOps.unary { XCTAssertTrue(names.contains(op), "\(ir) → \(op)") }
        for (ir, b) in TFLiteExportOps.binary {
            XCTAssertTrue(names.contains(b.op), "\(ir) → \(b.op)")
            if let o = b.options { XCTAssertTrue(TFLiteSchemaTables.builtinOptions.values.contains(o), o) }
        }
    }
}
