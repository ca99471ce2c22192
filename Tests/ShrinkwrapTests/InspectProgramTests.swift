import Foundation
import Shrinkwrap
import ShrinkwrapIR
import XCTest

/// `inspect` on an ML Program: the MIL ops of the file and, for each compressed weight, its layout
/// and the constexpr op that stores it; other formats have no program section.
final class InspectProgramTests: XCTestCase {
    func testAPackageShowsItsMILOpsAndEachWeightsConstexpr() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-program-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        var g = Graph(name: "mlp")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(32)])]
        let p = try PaletteWeights(shape: [32, 32], bits: 2, indices: (0..<1024).map { UInt8($0 % 4) },
                                   lut: (0..<2).map { k in [-1, 0, 0.5, Float(k + 1)] }, axis: 1, groupSize: 16)
        g.setConstant(Constant(name: "w", encoding: .palette(p)))
        g.setConstant(Constant(name: "v", tensor: Tensor((0..<1024).map { Float($0) / 1024 }, shape: [32, 32])))
        g.nodes = [Node(name: "mm", opType: "MatMul", inputs: ["x", "w"], outputs: ["h"], attributes: [:]),
                   Node(name: "mm2", opType: "MatMul", inputs: ["h", "v"], outputs: ["y"], attributes: [:])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        let pkg = dir.appendingPathComponent("mlp.mlpackage").path
        _ = try Models.save(g, to: pkg, inputs: [])

        let program = try XCTUnwrap(Models.program(of: pkg))
        XCTAssertEqual(program.opset, "CoreML8", "grouped tables need iOS 18")
        XCTAssertEqual(program.ops.first { $0.op == "constexpr_lut_to_dense" }?.count, 1)
        XCTAssertEqual(program.weightOps.values.sorted(), ["constexpr_lut_to_dense"])
        let text = Inspection(graph: try Models.load(pkg), file: pkg, program: program).text
        XCTAssertTrue(text.contains("program:   CoreML8: "), text)
        XCTAssertTrue(text.contains("palette2 [32, 32] ") && text.contains("(2 tables, 16 channels each along axis 0; constexpr_lut_to_dense)"), "MatMul's [in, out] weight is linear's [out, in]: \(text)")
        XCTAssertTrue(text.contains("    v: float32 [32, 32] 4.0 KiB\n"), "a dense weight has no layout: \(text)")

        let onnx = dir.appendingPathComponent("mlp.onnx").path
        _ = try Models.save(g, to: onnx, inputs: [])
        XCTAssertNil(Models.program(of: onnx))
    }
}
