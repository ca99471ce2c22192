import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapONNX
import XCTest

/// Export → import → run: every weight encoding must come back as the same
/// encoding with the same values, float graphs bit for bit. (onnxruntime and
/// onnx.checker on the files we write: `make crosscheck-onnx-export`.)
final class ONNXExporterTests: XCTestCase {
    func floats(_ n: Int, seed: UInt64) -> [Float] {
        var rng = SplitMix(seed: seed)
        return (0..<n).map { _ in Float(Double(rng.next() % 20001) / 10000 - 1) }
    }

    func codes(_ n: Int, bits: Int, signed: Bool, seed: UInt64) -> [Int16] {
        var rng = SplitMix(seed: seed)
        let r = AffineWeights.codeRange(bits: bits, signed: signed)
        return (0..<n).map { _ in Int16(r.lowerBound + Int(rng.next() % UInt64(r.count))) }
    }

    func roundTrip(_ g: Graph) throws -> (Graph, ONNXExporter.Layout) {
        let (data, layout) = try ONNXExporter.exportWithLayout(g)
        XCTAssertEqual(data.count, layout.fileBytes)
        return (try ONNXImporter.importModel(data: data, file: "roundtrip.onnx"), layout)
    }

    /// One graph output per weight: `y_k = W_k · s` for a scalar input s.
    func graph(_ weights: [(String, WeightEncoding)]) -> Graph {
        var g = Graph(name: "weights", inputs: [ValueInfo(name: "s", dtype: .float32, shape: [])], outputs: [], nodes: [])
        for (name, w) in weights {
            g.setConstant(Constant(name: name, encoding: w))
            g.nodes.append(Node(name: "use_\(name)", opType: "Mul", inputs: [name, "s"], outputs: ["y_\(name)"]))
            g.outputs.append(ValueInfo(name: "y_\(name)", dtype: .float32, shape: w.shape.map { .fixed($0) }))
        }
        return g
    }

    func affine(_ shape: [Int], bits: Int, signed: Bool, block: [Int], integerZero: Bool, seed: UInt64) throws -> WeightEncoding {
        let n = shape.reduce(1, *)
        let blocks = zip(shape, block).map { ($0 + $1 - 1) / $1 }.reduce(1, *)
        let scale = floats(blocks, seed: seed).map { abs($0) / 8 + 0.01 }
        let r = AffineWeights.codeRange(bits: bits, signed: signed)
        let bias: [Float] = scale.enumerated().map { k, s in
            integerZero ? -s * Float(r.lowerBound + (k % r.count)) : Float(k % 7) * 0.013 - 0.04
        }
        return .affine(try AffineWeights(shape: shape, bits: bits, signed: signed, q: codes(n, bits: bits, signed: signed, seed: seed + 1),
                                         blockShape: block, scale: scale, bias: bias))
    }

    func palette(_ shape: [Int], bits: Int, axis: Int, groupSize: Int, seed: UInt64) throws -> WeightEncoding {
        var rng = SplitMix(seed: seed)
        let n = shape.reduce(1, *)
        let groups = (shape[axis] + groupSize - 1) / groupSize
        return .palette(try PaletteWeights(shape: shape, bits: bits, indices: (0..<n).map { _ in UInt8(rng.next() % UInt64(1 << bits)) },
                                           lut: (0..<groups).map { floats(1 << bits, seed: seed &+ UInt64($0)) },
                                           axis: axis, groupSize: groupSize))
    }

    func assertSameValues(_ a: Graph, _ b: Graph, tol: Float, file: StaticString = #filePath, line: UInt = #line) throws {
        let feeds = ["s": Tensor([1.5], shape: [])]
        let x = try Interpreter(graph: a).run(feeds), y = try Interpreter(graph: b).run(feeds)
        for o in a.outputs {
            let u = try XCTUnwrap(x[o.name]?.floats, o.name, file: file, line: line)
            let v = try XCTUnwrap(y[o.name]?.floats, o.name, file: file, line: line)
            XCTAssertEqual(u.count, v.count, o.name, file: file, line: line)
            let d = zip(u, v).map { abs($0 - $1) / max(1, abs($0)) }.max() ?? 0
            XCTAssertLessThanOrEqual(d, tol, o.name, file: file, line: line)
        }
    }

    func testEveryEncodingComesBackAsItself() throws {
        var weights: [(String, WeightEncoding)] = []
        weights.append(("fp16", .float16(try Float16Weights(shape: [3, 5], bits: floats(15, seed: 1).map(Half.bits(from:))))))
        for bits in 1...8 {
            for signed in [false, true] where !(signed && bits == 1) {
                let s = UInt64(bits * 10 + (signed ? 1 : 0))
                weights.append(("a\(bits)\(signed ? "s" : "u")_tensor", try affine([4, 3, 2, 2], bits: bits, signed: signed, block: [4, 3, 2, 2], integerZero: true, seed: s)))
                weights.append(("a\(bits)\(signed ? "s" : "u")_channel", try affine([5, 3, 2, 2], bits: bits, signed: signed, block: [1, 3, 2, 2], integerZero: true, seed: s + 2)))
                weights.append(("a\(bits)\(signed ? "s" : "u")_frac", try affine([5, 3, 2, 2], bits: bits, signed: signed, block: [1, 3, 2, 2], integerZero: false, seed: s + 3)))
                // Conv-style blocks along the input axis (last block short), and MatMul-style [K, N] blocks along K.
                weights.append(("a\(bits)\(signed ? "s" : "u")_block", try affine([3, 10, 2, 2], bits: bits, signed: signed, block: [1, 4, 2, 2], integerZero: true, seed: s + 4)))
                weights.append(("a\(bits)\(signed ? "s" : "u")_blockfrac", try affine([3, 10, 2, 2], bits: bits, signed: signed, block: [1, 4, 2, 2], integerZero: false, seed: s + 5)))
                weights.append(("a\(bits)\(signed ? "s" : "u")_kblock", try affine([10, 3], bits: bits, signed: signed, block: [4, 1], integerZero: false, seed: s + 6)))
            }
            weights.append(("p\(bits)", try palette([6, 3, 2], bits: bits, axis: 0, groupSize: 6, seed: UInt64(100 + bits))))
            weights.append(("p\(bits)_grouped", try palette([7, 3, 2], bits: bits, axis: 0, groupSize: 3, seed: UInt64(200 + bits))))
        }
        let g = graph(weights)
        let (back, layout) = try roundTrip(g)
        try assertSameValues(g, back, tol: 1e-6)
        for (name, w) in weights {
            let c = try XCTUnwrap(back.constant(named: name), "\(name) was not folded back into a weight")
            switch (w, c.encoding) {
            case (.float16(let a), .float16(let b)): XCTAssertEqual(a, b, name)
            case (.affine(let a), .affine(let b)):
                XCTAssertEqual(b.bits, a.bits, name)
                XCTAssertEqual(b.scale, a.scale, name)
                XCTAssertEqual(b.blockShape.count, a.shape.count, name)
            case (.palette(let a), .palette(let b)):
                XCTAssertEqual(b.indices, a.indices, name)
                XCTAssertEqual(b.lut, a.lut, name)
                XCTAssertEqual(b.bits, a.bits, name)
            default: XCTFail("\(name): \(w.kind) came back as \(c.encoding.kind)")
            }
            // Signed codes of bit-packed widths come back unsigned, a zero point of 0 then needs no byte.
            XCTAssertLessThanOrEqual(c.encoding.storageBytes, w.storageBytes, "\(name): stored size grew")
            XCTAssertGreaterThanOrEqual(c.encoding.storageBytes, w.storageBytes - 1, "\(name): stored size shrank")
        }
        // Nothing but the weights' own bytes and the decoding ops: the file is the weights plus the graph.
        XCTAssertEqual(layout.opset, 21)
        // Narrow widths are packed to 8 codes in b bytes: at most b − 1 bytes of padding per weight.
        XCTAssertLessThanOrEqual(layout.storedWeightBytes, layout.encodedWeightBytes + weights.count * 7)
        XCTAssertGreaterThanOrEqual(layout.storedWeightBytes, layout.encodedWeightBytes - weights.count)
    }

    func testBlocksDequantizeLinearCannotReadAreWrittenAsArithmetic() throws {
        // A ConvTranspose weight [I, O, kh, kw] blocked along I with one scale per O: the scales
        // vary along two axes with shared ones after them, which DequantizeLinear cannot read.
        let w = try affine([10, 3, 2, 2], bits: 4, signed: false, block: [4, 1, 2, 2], integerZero: false, seed: 41)
        let v = try affine([10, 3, 2, 2], bits: 3, signed: true, block: [4, 1, 2, 2], integerZero: true, seed: 42)
        guard case .affine(let a) = w else { return XCTFail() }
        XCTAssertNil(ONNXWeightWriter.dqLayout(a))
        let g = graph([("convT", w), ("convT3", v)])
        let (data, layout) = try ONNXExporter.exportWithLayout(g)
        let back = try ONNXImporter.importModel(data: data, file: "arith.onnx")
        try assertSameValues(g, back, tol: 1e-6)
        XCTAssertTrue(back.nodes.contains { $0.opType == "Slice" }, "the padded last block is cut off")
        XCTAssertEqual(layout.opset, 21)
    }

    func testFloatGraphRoundTripsBitForBit() throws {
        var g = graph([("w", .dense(Tensor(floats(24, seed: 9) + [.leastNonzeroMagnitude, -0.0, .greatestFiniteMagnitude], shape: [27]))),
                       ("h", .dense(Tensor([1, 0.5, -2, 65504], shape: [4], dtype: .float16)))])
        g.setConstant(Constant(name: "ints", tensor: Tensor(ints: [1, -2, 3], shape: [3], dtype: .int64)))
        g.metadata.labels = ["cat, the animal", "dog"]
        g.metadata.author = "someone"
        g.metadata.docString = "a model"
        g.metadata.properties = [("stage", "test")]
        g.nodes[0].docString = "first node"
        let (back, layout) = try roundTrip(g)
        XCTAssertEqual(layout.opset, ONNXExporter.defaultOpset)
        for c in g.constants {
            let b = try XCTUnwrap(back.constant(named: c.name))
            guard case .dense(let x) = c.encoding, case .dense(let y) = b.encoding else { return XCTFail(c.name) }
            XCTAssertEqual(x.dtype, y.dtype, c.name)
            XCTAssertEqual(x.shape, y.shape, c.name)
            XCTAssertEqual(x.floats?.map(\.bitPattern), y.floats?.map(\.bitPattern), c.name)
            XCTAssertEqual(x.ints, y.ints, c.name)
        }
        XCTAssertEqual(back.metadata.labels, g.metadata.labels)
        XCTAssertEqual(back.metadata.author, "someone")
        XCTAssertEqual(back.metadata.docString, "a model")
        XCTAssertEqual(back.metadata.property("stage"), "test")
        XCTAssertEqual(back.nodes.first?.docString, "first node")
        XCTAssertEqual(back.metadata.producerName, "shrinkwrap")
    }

    func testSameGraphSameBytes() throws {
        let g = graph([("p", try palette([8, 4], bits: 3, axis: 0, groupSize: 2, seed: 5)),
                       ("a", try affine([8, 4], bits: 5, signed: true, block: [1, 4], integerZero: false, seed: 6))])
        XCTAssertEqual(try ONNXExporter.export(g), try ONNXExporter.export(g))
    }

    func testOpsetFollowsTheContent() throws {
        var g = Graph(name: "r", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("N"), .fixed(3)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.nodes = [Node(name: "relu", opType: "Relu", inputs: ["x"], outputs: ["y"])]
        XCTAssertEqual(try ONNXExporter.exportWithLayout(g).layout.opset, 17)
        g.setConstant(Constant(name: "axes", tensor: Tensor(ints: [1], shape: [1])))
        g.nodes = [Node(name: "mean", opType: "ReduceMean", inputs: ["x", "axes"], outputs: ["y"])]
        XCTAssertEqual(try ONNXExporter.exportWithLayout(g).layout.opset, 18)
        // The free batch axis stays free.
        let back = try roundTrip(g).0
        XCTAssertEqual(back.inputs.first?.shape, [.symbolic("N"), .fixed(3)])
    }

    func testTFLiteNearestResizeSurvivesOpset21() throws {
        // 4-bit weights need opset 21, whose Resize no longer has tf_half_pixel_for_nn.
        var g = graph([("w4", try affine([2, 3], bits: 4, signed: true, block: [1, 3], integerZero: true, seed: 3))])
        g.inputs.append(ValueInfo(name: "img", dtype: .float32, shape: [.fixed(1), .fixed(1), .fixed(3), .fixed(5)]))
        g.setConstant(Constant(name: "scales", tensor: Tensor([1, 1, 2.5, 1.5], shape: [4])))
        g.nodes.append(Node(name: "resize", opType: "Resize", inputs: ["img", "", "scales"], outputs: ["big"],
                            attributes: ["mode": .string("nearest"), "coordinate_transformation_mode": .string("tf_half_pixel_for_nn"),
                                         "nearest_mode": .string("floor")]))
        g.outputs.append(ValueInfo(name: "big", dtype: .float32, shape: nil))
        let (back, layout) = try roundTrip(g)
        XCTAssertEqual(layout.opset, 21)
        XCTAssertEqual(back.nodes.first { $0.opType == "Resize" }?.string("coordinate_transformation_mode", ""), "half_pixel")
        let feeds = ["s": Tensor([1], shape: []), "img": Tensor((0..<15).map(Float.init), shape: [1, 1, 3, 5])]
        XCTAssertEqual(try Interpreter(graph: back).run(feeds)["big"], try Interpreter(graph: g).run(feeds)["big"])
    }

    func testSwishIsWrittenWithOlderOps() throws {
        var g = Graph(name: "swish", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(5)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.nodes = [Node(name: "sw", opType: "Swish", inputs: ["x"], outputs: ["y"], attributes: ["alpha": .float(1.7)])]
        let (back, layout) = try roundTrip(g)
        XCTAssertEqual(layout.opset, 17)
        XCTAssertFalse(back.nodes.contains { $0.opType == "Swish" })
        let x = Tensor([-2, -0.5, 0, 0.5, 3], shape: [5])
        let a = try Interpreter(graph: g).run(["x": x])["y"]?.floats ?? []
        let b = try Interpreter(graph: back).run(["x": x])["y"]?.floats ?? []
        XCTAssertEqual(a.count, 5)
        for (u, v) in zip(a, b) { XCTAssertEqual(u, v, accuracy: 1e-6) }
    }

    func testWhatONNXCannotSayIsRefusedAllAtOnce() {
        var g = Graph(name: "bad", inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.nodes = [Node(name: "a", opType: "NotAnOp", inputs: ["x"], outputs: ["t"]),
                   Node(name: "b", opType: "AlsoNotAnOp", inputs: ["t"], outputs: ["y"])]
        var text = ""
        do { _ = try ONNXExporter.export(g) } catch { text = "\(error)" }
        XCTAssertTrue(text.contains("NotAnOp") && text.contains("AlsoNotAnOp"), text)
        g.nodes = [Node(name: "lstm", opType: "LSTM", inputs: ["x"], outputs: ["y"], attributes: ["shrinkwrap_cell_clip": .float(3)])]
        do { _ = try ONNXExporter.export(g); XCTFail("cell clip exported") } catch { text = "\(error)" }
        XCTAssertTrue(text.contains("lstm") && text.contains("cell"), text)
    }

    func testDequantizeOfAComputedValueRuns() throws {
        var g = Graph(name: "qdq", inputs: [ValueInfo(name: "x", dtype: .uint8, shape: [.fixed(2), .fixed(4)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: [])
        g.setConstant(Constant(name: "s", tensor: Tensor([0.5, 2], shape: [2])))
        g.setConstant(Constant(name: "z", tensor: Tensor(ints: [1, 3], shape: [2], dtype: .uint8)))
        g.nodes = [Node(name: "dq", opType: "DequantizeLinear", inputs: ["x", "s", "z"], outputs: ["y"], attributes: ["axis": .int(0)])]
        let back = try roundTrip(g).0
        let x = Tensor(ints: [0, 1, 2, 255, 3, 4, 5, 0], shape: [2, 4], dtype: .uint8)
        XCTAssertEqual(try Interpreter(graph: back).run(["x": x])["y"]?.floats, [-0.5, 0, 0.5, 127, 0, 2, 4, -6])
    }
}
