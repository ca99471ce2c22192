import Foundation
import XCTest

/// The model suites the onnx wheel ships (light_* CNNs, simple,
/// pytorch-converted, pytorch-operator) against their stored outputs.
final class ModelSuiteTests: XCTestCase {
    func runSuite(_ suite: String, minimumPassed: Int) throws {
        let root = ONNXSuiteRunner.testdata.appendingPathComponent("onnx-models").appendingPathComponent(suite)
        guard FileManager.default.fileExists(atPath: root.path) else {
            XCTFail("NOT RUN: \(root.path) is missing — run `make testdata` (needs the Python venv with onnx)")
            return
        }
        let runner = try ONNXSuiteRunner(exclusionFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("conformance-exclusions.txt"))
        let filter = (ProcessInfo.processInfo.environment["SHRINKWRAP_NODE_FILTER"] ?? "").split(separator: ",").map(String.init)
        let r = runner.runSuite(root: root, label: suite, filter: filter)
        print("onnx \(suite) models: \(r.passed) passed, \(r.excluded) excluded (\(r.failed.count) failed; "
              + "not run: \(r.unsupported) use unsupported ops, \(r.nonTensor) use sequences/maps)")
        XCTAssertEqual(r.failed, [])
        if filter.isEmpty { XCTAssertGreaterThanOrEqual(r.passed, minimumPassed) }
    }

    func testLightModels() throws { try runSuite("light", minimumPassed: 9) }
    func testSimpleModels() throws { try runSuite("simple", minimumPassed: 1) }
    func testPytorchConverted() throws { try runSuite("pytorch-converted", minimumPassed: 1) }
    func testPytorchOperator() throws { try runSuite("pytorch-operator", minimumPassed: 1) }
}
