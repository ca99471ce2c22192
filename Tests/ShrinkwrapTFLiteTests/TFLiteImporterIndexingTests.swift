import FlatBuffers
import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
@testable import ShrinkwrapTFLite
import XCTest

/// ARG_MAX, TILE, RANGE, ONE_HOT, SCATTER_ND and SLICE with a run-time begin, on a small hand-built file run
/// through the interpreter (the ops the exporter writes for a Loop body, read back).
final class TFLiteImporterIndexingTests: XCTestCase {
    typealias T = TestTFLite.T
    typealias O = TestTFLite.O

    func testIndexingBuiltins() throws {
        var m = TestTFLite()
        let i32 = { (v: [Int32]) in TestTFLite.ints(v) }
        m.tensors = [
            T(name: "x", shape: [2, 3]),                                               // 0
            T(name: "axis", shape: [], type: 2, data: i32([1])),                       // 1
            T(name: "argmax", shape: [2], type: 4),                                    // 2
            T(name: "multiples", shape: [2], type: 2, data: i32([2, 1])),              // 3
            T(name: "tiled", shape: [4, 3]),                                           // 4
            T(name: "start", shape: [], type: 2, data: i32([1])),                      // 5
            T(name: "limit", shape: [], type: 2, data: i32([9])),                      // 6
            T(name: "delta", shape: [], type: 2, data: i32([3])),                      // 7
            T(name: "range", shape: [3], type: 2),                                     // 8
            T(name: "hot_index", shape: [2], type: 2, data: i32([2, 0])),              // 9
            T(name: "depth", shape: [], type: 2, data: i32([3])),                      // 10
            T(name: "on", shape: [], data: TestTFLite.floats([5])),                    // 11
            T(name: "off", shape: [], data: TestTFLite.floats([-1])),                  // 12
            T(name: "hot", shape: [2, 3]),                                             // 13
            T(name: "scatter_index", shape: [2, 1], type: 2, data: i32([2, 0])),       // 14
            T(name: "scatter_shape", shape: [2], type: 2, data: i32([3, 3])),          // 15
            T(name: "scattered", shape: [3, 3]),                                       // 16
            T(name: "begin", shape: [2], type: 2),                                     // 17
            T(name: "size", shape: [2], type: 2, data: i32([1, 2])),                   // 18
            T(name: "sliced", shape: [1, 2]),                                          // 19
        ]
        m.ops = [
            O(code: 56, inputs: [0, 1], outputs: [2], optionsType: 40, options: { b in b.table { $0.add(0, Int8(4), default: 0) } }),  // ARG_MAX
            O(code: 69, inputs: [0, 3], outputs: [4]),  // TILE
            O(code: 96, inputs: [5, 6, 7], outputs: [8]),  // RANGE
            O(code: 85, inputs: [9, 10, 11, 12], outputs: [13], optionsType: 61, options: { b in b.table { $0.add(0, Int32(-1), default: 0) } }),
            O(code: 122, inputs: [14, 0, 15], outputs: [16]),  // SCATTER_ND
            O(code: 65, inputs: [0, 17, 18], outputs: [19]),  // SLICE, begin an input
        ]
        m.inputs = [0, 17]
        m.outputs = [2, 4, 8, 13, 16, 19]
        let g = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite")
        let x: [Float] = [1, 7, 3, 9, -2, 4]
        let out = try Interpreter(graph: g).run(["x": Tensor(x, shape: [2, 3]), "begin": Tensor(ints: [1, 1], shape: [2], dtype: .int32)])
        XCTAssertEqual(out["argmax"]?.ints, [1, 0])
        XCTAssertEqual(out["tiled"]?.floats, x + x)
        XCTAssertEqual(out["tiled"]?.shape, [4, 3])
        XCTAssertEqual(out["range"]?.ints, [1, 4, 7])
        XCTAssertEqual(out["hot"]?.floats, [-1, -1, 5, 5, -1, -1])
        XCTAssertEqual(out["scattered"]?.floats, [9, -2, 4, 0, 0, 0, 1, 7, 3])
        XCTAssertEqual(out["sliced"]?.floats, [-2, 4])
    }
}
