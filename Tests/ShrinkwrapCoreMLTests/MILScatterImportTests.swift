import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// The ML Program scatter ops and slice_by_size from a computed begin, read into IR and run: a
/// hand-made program whose results are worked out by hand from coremltools' op definitions.
final class MILScatterImportTests: XCTestCase {
    typealias T = MILLoopImportTests

    /// An int32 or fp32 constant of any shape.
    static func const(_ name: String, ints: [Int32]? = nil, floats: [Float]? = nil, shape: [UInt64]) -> T.Op {
        var v = CoreML_Specification_MILSpec_Value()
        if let ints { v.type = T.tensor(.int32, shape); v.immediateValue.tensor.ints.values = ints }
        if let floats { v.type = T.tensor(.float32, shape); v.immediateValue.tensor.floats.values = floats }
        var o = T.op("const", [:], [(name, v.type)])
        o.attributes["val"] = v
        return o
    }

    /// x: [3, 2] = [[1, 2], [3, 4], [5, 6]]; start: int32 [2] (computed: start_in + 0).
    static func program(mode: String = "update") -> CoreML_Specification_Model {
        let x = T.tensor(.float32, [3, 2])
        let ops: [T.Op] = [
            T.const("zero", scalarInt: 0), T.const("one", scalarInt: 1), T.const("mode", string: mode), T.const("add_mode", string: "add"),
            T.const("max_mode", string: "max"),
            // scatter: rows 2 and 0 replaced.
            const("rows", ints: [2, 0], shape: [2]), const("row_updates", floats: [10, 11, 20, 21], shape: [2, 2]),
            T.op("scatter", ["data": ["x"], "indices": ["rows"], "updates": ["row_updates"], "axis": ["zero"], "mode": ["mode"]], [("y1", x)]),
            // scatter_nd: x[1, 0] += 5.
            const("points", ints: [1, 0], shape: [1, 2]), const("point_updates", floats: [5], shape: [1]),
            T.op("scatter_nd", ["data": ["x"], "indices": ["points"], "updates": ["point_updates"], "mode": ["add_mode"]], [("y2", x)]),
            // scatter_along_axis: per row, column idx[r] = max(x, u[r]).
            const("columns", ints: [1, 0, 1], shape: [3, 1]), const("column_updates", floats: [0, 9, 9], shape: [3, 1]),
            T.op("scatter_along_axis", ["data": ["x"], "indices": ["columns"], "updates": ["column_updates"], "axis": ["one"],
                                        "mode": ["max_mode"]], [("y3", x)]),
            // slice_by_size from a computed begin (−1 counts from the end).
            const("offset", ints: [0, 0], shape: [2]),
            T.op("add", ["x": ["start"], "y": ["offset"]], [("begin", T.tensor(.int32, [2]))]),
            const("size", ints: [2, 1], shape: [2]),
            T.op("slice_by_size", ["x": ["x"], "begin": ["begin"], "size": ["size"]], [("y4", T.tensor(.float32, [2, 1]))]),
        ]
        var block = CoreML_Specification_MILSpec_Block()
        block.operations = ops
        block.outputs = ["y1", "y2", "y3", "y4"]
        var f = CoreML_Specification_MILSpec_Function()
        f.inputs = [T.named("x", x), T.named("start", T.tensor(.int32, [2]))]
        f.opset = "CoreML5"
        f.blockSpecializations = ["CoreML5": block]
        var m = CoreML_Specification_Model()
        m.specificationVersion = 6
        m.mlProgram.version = 1
        m.mlProgram.functions = ["main": f]
        return m
    }

    func testScattersAndARunTimeSliceRun() throws {
        let g = try T.load(Self.program())
        let x = Tensor([1, 2, 3, 4, 5, 6], shape: [3, 2])
        for (start, want): ([Int64], [Double]) in [([1, 1], [4, 6]), ([-2, 0], [3, 5]), ([0, -1], [2, 4])] {
            let out = try Interpreter(graph: g).run(["x": x, "start": Tensor(ints: start, shape: [2], dtype: .int32)])
            XCTAssertEqual(out["y1"]?.doubles, [20, 21, 3, 4, 10, 11])
            XCTAssertEqual(out["y2"]?.doubles, [1, 2, 8, 4, 5, 6])
            XCTAssertEqual(out["y3"]?.doubles, [1, 2, 9, 4, 5, 9])
            XCTAssertEqual(out["y4"]?.doubles, want, "begin \(start)")
        }
    }

    func testAScatterModeWithoutAnIRReductionIsRefused() {
        XCTAssertThrowsError(try T.load(Self.program(mode: "sub"))) { e in
            XCTAssertTrue("\(e)".contains("scatter mode 'sub'"), "\(e)")
        }
    }
}
