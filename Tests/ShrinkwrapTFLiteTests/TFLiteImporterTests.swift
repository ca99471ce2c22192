import FlatBuffers
import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapTFLite
import XCTest


final class TFLiteImporterTests: XCTestCase {
    /// x [1, 2, 2, 3] → CONV_2D (1×1, 2 filters, bias, fused RELU) → ADD constant → y.
    func convModel(filterType: Int8 = 0) -> TestTFLite { Self.convModel(filterType: filterType) }

    static func convModel(filterType: Int8 = 0) -> TestTFLite {
        var m = TestTFLite()
        let filter: [Float] = [1, 0, -1, 0.5, 0.5, 0.5]  // [2, 1, 1, 3]
        var w = TestTFLite.T(name: "w", shape: [2, 1, 1, 3], data: TestTFLite.floats(filter))
        if filterType == 9 {
            // int8 per-channel: scales 0.5 and 0.25 → codes 2, 0, −2 and 2, 2, 2.
            w = TestTFLite.T(name: "w", shape: [2, 1, 1, 3], type: 9, data: [2, 0, 0xFE, 2, 2, 2].map { UInt8($0) },
                             quant: ([0.5, 0.25], [0, 0], 0))
        }
        m.tensors = [
            TestTFLite.T(name: "x", shape: [1, 2, 2, 3]),
            w,
            TestTFLite.T(name: "b", shape: [2], data: TestTFLite.floats([0.5, -10])),
            TestTFLite.T(name: "conv", shape: [1, 2, 2, 2]),
            TestTFLite.T(name: "k", shape: [2], data: TestTFLite.floats([100, 200])),
            TestTFLite.T(name: "y", shape: [1, 2, 2, 2]),
        ]
        m.ops = [
            TestTFLite.O(code: 3, inputs: [0, 1, 2], outputs: [3], optionsType: 1, options: { b in
                b.table { $0.add(0, Int8(1), default: 0); $0.add(1, Int32(1), default: 0); $0.add(2, Int32(1), default: 0); $0.add(3, Int8(1), default: 0) }
            }),
            TestTFLite.O(code: 0, inputs: [3, 4], outputs: [5]),
        ]
        m.inputs = [0]
        m.outputs = [5]
        return m
    }

    func run(_ g: Graph, _ x: [Float]) throws -> [Float] {
        let out = try Interpreter(graph: g).run(["x": Tensor(x, shape: [1, 2, 2, 3])])
        return try XCTUnwrap(out["y"]?.floats)
    }

    func testConvAddRunsInNHWC() throws {
        let g = try TFLiteImporter.importModel(bytes: try convModel().bytes(), file: "m.tflite")
        XCTAssertEqual(g.inputs.map(\.name), ["x"])
        XCTAssertEqual(g.inputs.first?.shape, [.fixed(1), .fixed(2), .fixed(2), .fixed(3)])
        XCTAssertEqual(g.constant(named: "w")?.encoding.shape, [2, 3, 1, 1], "filter transposed to OIHW under its own name")
        let x: [Float] = (0..<12).map { Float($0) }
        // Pixel p = (x0, x1, x2): filter 0 → x0 − x2 + 0.5, filter 1 → 0.5(x0 + x1 + x2) − 10; RELU; + [100, 200].
        var want: [Float] = []
        for p in 0..<4 {
            let (a, b, c) = (x[3 * p], x[3 * p + 1], x[3 * p + 2])
            want.append(max(a - c + 0.5, 0) + 100)
            want.append(max(0.5 * (a + b + c) - 10, 0) + 200)
        }
        XCTAssertEqual(try run(g, x), want)
        // NHWC in, NHWC out: exactly one Transpose each way.
        XCTAssertEqual(g.nodes.filter { $0.opType == "Transpose" }.count, 2)
    }

    func testInt8FiltersStayAffineEncoded() throws {
        let g = try TFLiteImporter.importModel(bytes: try convModel(filterType: 9).bytes(), file: "m.tflite")
        guard case .affine(let a)? = g.constant(named: "w")?.encoding else { return XCTFail("int8 filter is not affine") }
        XCTAssertEqual(a.scale, [0.5, 0.25])
        XCTAssertEqual(a.shape, [2, 3, 1, 1])
        XCTAssertEqual(a.decoded().floats, [1, 0, -1, 0.5, 0.5, 0.5])
        let x: [Float] = (0..<12).map { Float($0) }
        let float = try TFLiteImporter.importModel(bytes: try convModel().bytes(), file: "f.tflite")
        XCTAssertEqual(try run(g, x), try run(float, x))
    }

    func testUnsupportedOpsAreListedTogether() throws {
        var m = convModel()
        m.tensors.append(TestTFLite.T(name: "z", shape: [1]))
        m.ops += [TestTFLite.O(code: 32, custom: "MyOp", inputs: [5], outputs: [6]), TestTFLite.O(code: 118, inputs: [5], outputs: [6]),
                  TestTFLite.O(code: 32, custom: "Other", inputs: [5], outputs: [6]), TestTFLite.O(code: 118, inputs: [5], outputs: [6])]
        XCTAssertEqual(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") },
                       "m.tflite: unsupported ops (3): CUSTOM(MyOp), IF, CUSTOM(Other)")
    }

    func testMalformedFilesGiveOneLineErrors() throws {
        var m = convModel()
        m.identifier = "ABCD"
        XCTAssertTrue(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") }
            .contains("file identifier is 'ABCD', not 'TFL3'"))
        m = convModel()
        m.tensors[2].data = TestTFLite.floats([1])  // bias of 2 elements with 4 bytes
        XCTAssertEqual(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") },
                       "m.tflite: tensor[2] 'b': bad tensor: shape [2] × 4 bytes = 8 bytes, but the buffer holds 4")
        m = convModel()
        m.ops[1].inputs = [3, 40]
        XCTAssertTrue(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") }
            .contains("operators[1].inputs: malformed: tensor index 40 is outside the 6 tensors"))
        m = convModel()
        m.tensors[0].shape = [1, -2, 2, 3]
        XCTAssertTrue(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") }
            .contains("negative dimension -2"))
        m = convModel()
        m.ops[0].optionsType = 5  // Pool2DOptions on a CONV_2D
        XCTAssertTrue(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") }
            .contains("builtin_options is Pool2DOptions, expected Conv2DOptions"))
        XCTAssertTrue(errorText { _ = try TFLiteImporter.importModel(bytes: [1, 2, 3], file: "m.tflite") }.contains("too short"))
    }

    func testTruncatedAndDamagedFilesNeverCrash() throws {
        let bytes = try convModel(filterType: 9).bytes()
        for n in 0..<bytes.count {
            let text = errorText { _ = try TFLiteImporter.importModel(bytes: Array(bytes[0..<n]), file: "t.tflite") }
            XCTAssertTrue(text.hasPrefix("t.tflite"), "cut at \(n): \(text)")
        }
        var rng = SplitMix(seed: 42)
        func next() -> UInt64 { rng.next() }
        for _ in 0..<3000 {
            var d = bytes
            for _ in 0..<(1 + Int(next() % 3)) { d[Int(next() % UInt64(d.count))] = UInt8(truncatingIfNeeded: next()) }
            _ = try? TFLiteImporter.importModel(bytes: d, file: "d.tflite")
        }
    }

    /// Inputs libFuzzer found crashing the importer (`make fuzz-tflite`), kept as regressions.
    func testFuzzerFindingsAreErrors() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        for name in ["fuzz-lstm-peephole.tflite"] {
            let bytes = Array(try Data(contentsOf: dir.appendingPathComponent(name)))
            let text = errorText { _ = try TFLiteImporter.importModel(bytes: bytes, file: name) }
            XCTAssertTrue(text.hasPrefix(name + ": "), text)
        }
    }

    func testSupportedOpsTableNamesRealBuiltins() {
        let names = Set(TFLiteSchemaTables.builtinOperators.values)
        for op in TFLiteImporter.supportedOps { XCTAssertTrue(names.contains(op), op) }
        XCTAssertGreaterThanOrEqual(TFLiteImporter.supportedOps.count, 40)
    }
}
