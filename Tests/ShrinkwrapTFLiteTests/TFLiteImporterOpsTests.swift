import FlatBuffers
import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapTFLite
import XCTest

/// Comparisons, selection, PACK / UNPACK / SHAPE, MIRROR_PAD and the run-time reshape, on small hand-built files
/// run through the interpreter. (Sparse constants and CUSTOM ops: TFLiteSparsityTests.)
final class TFLiteImporterOpsTests: XCTestCase {
    typealias T = TestTFLite.T
    typealias O = TestTFLite.O

    func run(_ m: TestTFLite, _ feeds: [String: Tensor]) throws -> [String: Tensor] {
        let g = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite")
        return try Interpreter(graph: g).run(feeds)
    }

    func testComparisonsSelectAndSquare() throws {
        var m = TestTFLite()
        m.tensors = [T(name: "x", shape: [4]), T(name: "y", shape: [4])]
        // EQUAL 71, NOT_EQUAL 72, LESS 58, LESS_EQUAL 63, GREATER 61, GREATER_EQUAL 62.
        let compares: [(String, Int32)] = [("eq", 71), ("ne", 72), ("lt", 58), ("le", 63), ("gt", 61), ("ge", 62)]
        for (name, code) in compares {
            m.tensors.append(T(name: name, shape: [4], type: 6))
            m.ops.append(O(code: code, inputs: [0, 1], outputs: [Int32(m.tensors.count - 1)]))
        }
        m.tensors += [T(name: "min", shape: [4]), T(name: "sq", shape: [4]), T(name: "notlt", shape: [4], type: 6), T(name: "both", shape: [4], type: 6)]
        m.ops += [O(code: 123, inputs: [4, 0, 1], outputs: [8]),  // SELECT_V2(lt, x, y)
                  O(code: 92, inputs: [0], outputs: [9]),  // SQUARE
                  O(code: 87, inputs: [4], outputs: [10]),  // LOGICAL_NOT
                  O(code: 86, inputs: [5, 7], outputs: [11])]  // LOGICAL_AND(le, ge)
        m.inputs = [0, 1]
        m.outputs = Array(2...11)
        let x: [Float] = [1, 2, -3, 4], y: [Float] = [1, 5, -4, 4]
        let out = try run(m, ["x": Tensor(x, shape: [4]), "y": Tensor(y, shape: [4])])
        let tests: [(String, (Float, Float) -> Bool)] = [("eq", { $0 == $1 }), ("ne", { $0 != $1 }), ("lt", { $0 < $1 }), ("le", { $0 <= $1 }),
                                                         ("gt", { $0 > $1 }), ("ge", { $0 >= $1 }), ("notlt", { !($0 < $1) }), ("both", { $0 == $1 })]
        for (name, f) in tests { XCTAssertEqual(out[name]?.bools, zip(x, y).map(f), name) }
        XCTAssertEqual(out["min"]?.floats, zip(x, y).map { Swift.min($0, $1) })
        XCTAssertEqual(out["sq"]?.floats, x.map { $0 * $0 })
    }

    func testSelectV1TakesRowsByARankOneCondition() throws {
        var m = TestTFLite()
        m.tensors = [T(name: "c", shape: [2], type: 6), T(name: "a", shape: [2, 3]), T(name: "b", shape: [2, 3]), T(name: "y", shape: [2, 3])]
        m.ops = [O(code: 64, inputs: [0, 1, 2], outputs: [3])]
        m.inputs = [0, 1, 2]
        m.outputs = [3]
        let a: [Float] = [1, 2, 3, 4, 5, 6], b: [Float] = [-1, -2, -3, -4, -5, -6]
        let out = try run(m, ["c": Tensor(bools: [false, true], shape: [2]), "a": Tensor(a, shape: [2, 3]), "b": Tensor(b, shape: [2, 3])])
        XCTAssertEqual(out["y"]?.floats, [-1, -2, -3, 4, 5, 6])
    }

    /// SHAPE (INT32) of x feeds a RESHAPE of z whose output has a free batch; PACK and UNPACK of x.
    func testPackUnpackShapeAndRunTimeReshape() throws {
        var m = TestTFLite()
        m.tensors = [T(name: "x", shape: [2, 3], signature: [-1, 3]), T(name: "z", shape: [6]), T(name: "s", shape: [2], type: 2),
                     T(name: "r", shape: [2, 3], signature: [-1, 3]), T(name: "p", shape: [2, 2, 3]), T(name: "u0", shape: [3]), T(name: "u1", shape: [3]),
                     T(name: "s64", shape: [2], type: 4)]
        m.ops = [O(code: 77, inputs: [0], outputs: [2], optionsType: 55, options: { b in b.table { $0.add(0, Int8(2), default: 0) } }),
                 O(code: 22, inputs: [1, 2], outputs: [3]),
                 O(code: 83, inputs: [0, 0], outputs: [4], optionsType: 59, options: { b in
                     b.table { $0.add(0, Int32(2), default: 0); $0.add(1, Int32(-2), default: 0) }
                 }),
                 O(code: 88, inputs: [0], outputs: [5, 6], optionsType: 64, options: { b in b.table { $0.add(0, Int32(2), default: 0) } }),
                 O(code: 77, inputs: [0], outputs: [7])]
        m.inputs = [0, 1]
        m.outputs = [2, 3, 4, 5, 6, 7]
        let x: [Float] = [1, 2, 3, 4, 5, 6], z: [Float] = [10, 20, 30, 40, 50, 60]
        let out = try run(m, ["x": Tensor(x, shape: [2, 3]), "z": Tensor(z, shape: [6])])
        XCTAssertEqual(out["s"]?.dtype, .int32)
        XCTAssertEqual(out["s"]?.ints, [2, 3])
        XCTAssertEqual(out["s64"]?.dtype, .int64)
        XCTAssertEqual(out["r"]?.shape, [2, 3])
        XCTAssertEqual(out["r"]?.floats, z)
        // PACK at axis −2 of [2, 3] inputs: [2, 2, 3], p[i][k][j] = input k [i][j].
        XCTAssertEqual(out["p"]?.shape, [2, 2, 3])
        XCTAssertEqual(out["p"]?.floats, [1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6])
        XCTAssertEqual(out["u0"]?.floats, [1, 2, 3])
        XCTAssertEqual(out["u1"]?.shape, [3])
        XCTAssertEqual(out["u1"]?.floats, [4, 5, 6])
    }

    func testPackAndUnpackCheckTheirCounts() throws {
        var m = TestTFLite()
        m.tensors = [T(name: "x", shape: [2, 3]), T(name: "p", shape: [2, 2, 3]), T(name: "u0", shape: [3])]
        m.ops = [O(code: 83, inputs: [0, 0], outputs: [1], optionsType: 59, options: { b in b.table { $0.add(0, Int32(3), default: 0) } })]
        m.inputs = [0]
        m.outputs = [1]
        XCTAssertEqual(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") },
                       "m.tflite: operators[0] PACK → 'p': malformed: values_count 3 and axis 0 for 2 inputs of rank 2")
        m.ops = [O(code: 88, inputs: [0], outputs: [2], optionsType: 64, options: { b in b.table { $0.add(0, Int32(1), default: 0) } })]
        m.outputs = [2]
        XCTAssertEqual(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") },
                       "m.tflite: operators[0] UNPACK → 'u0': malformed: num 1 and axis 0 for 1 outputs of shape [2, 3]")
    }

    /// numpy's pad modes: reflect leaves the edge out, symmetric repeats it.
    static func mirrored(_ i: Int, _ n: Int, symmetric: Bool) -> Int {
        if i < 0 { return symmetric ? -i - 1 : -i }
        if i >= n { return symmetric ? 2 * n - i - 1 : 2 * n - i - 2 }
        return i
    }

    func testMirrorPadReflectAndSymmetric() throws {
        let (rows, cols) = (3, 4)
        let x = (0..<(rows * cols)).map { Float($0 * $0) - 7 }
        let pads: [Int32] = [2, 1, 0, 3]  // rows 2 before, 1 after; columns 0 before, 3 after
        for mode in [Int8(0), Int8(1)] {
            var m = TestTFLite()
            m.tensors = [T(name: "x", shape: [3, 4]), T(name: "p", shape: [2, 2], type: 2, data: TestTFLite.ints(pads)), T(name: "y", shape: [6, 7])]
            m.ops = [O(code: 100, inputs: [0, 1], outputs: [2], optionsType: 77, options: { b in b.table { $0.add(0, mode, default: 0) } })]
            m.inputs = [0]
            m.outputs = [2]
            let out = try run(m, ["x": Tensor(x, shape: [rows, cols])])
            var want: [Float] = []
            for r in -2..<(rows + 1) {
                for c in 0..<(cols + 3) {
                    want.append(x[Self.mirrored(r, rows, symmetric: mode == 1) * cols + Self.mirrored(c, cols, symmetric: mode == 1)])
                }
            }
            XCTAssertEqual(out["y"]?.shape, [6, 7], "mode \(mode)")
            XCTAssertEqual(out["y"]?.floats, want, "mode \(mode)")
        }
    }

    func testNewOpsAreInTheSupportedList() {
        let ops = Set(TFLiteImporter.supportedOps)
        for op in ["MIRROR_PAD", "PACK", "UNPACK", "SHAPE", "SQUARE", "EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL",
                   "SELECT", "SELECT_V2", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"] {
            XCTAssertTrue(ops.contains(op), op)
        }
        XCTAssertNotNil(TFLiteOps.translator("CUSTOM(Convolution2DTransposeBias)"))
        XCTAssertNil(TFLiteOps.translator("CUSTOM(Other)"))
    }
}
