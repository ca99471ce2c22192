import Foundation
import Shrinkwrap
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// Static folding on the light models (weights materialized by `make testdata`):
/// no Shape node survives and the outputs do not change.
final class StaticFoldingModelTests: XCTestCase {
    func testLightModelsFoldToStaticShapes() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".testdata/models")
        let models = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".onnx") }.sorted()
        guard !models.isEmpty else {
            throw XCTSkip("SKIPPED: no light models in \(dir.path); run `make testdata`")
        }
        for m in models {
            let g = try Models.load(dir.appendingPathComponent(m).path)
            let (f, _) = try StaticFolding.fold(g)
            XCTAssertFalse(f.nodes.contains { $0.opType == "Shape" }, m)
            let inputs = try ModelRunner.syntheticInputs(graph: g, seed: 3)
            let a = try Interpreter(graph: g).run(inputs), b = try Interpreter(graph: f).run(inputs)
            for o in g.outputs { XCTAssertEqual(a[o.name], b[o.name], "\(m) \(o.name)") }
        }
    }
}
