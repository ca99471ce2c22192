import Foundation
import XCTest

/// The ONNX backend node-test suite, generated from the onnx wheel by
/// `make testdata` (Scripts/gen_onnx_node_tests.py). Every test whose ops are
/// all supported must pass unless `conformance-exclusions.txt` says why not.
/// `SHRINKWRAP_NODE_FILTER=test_conv,test_gemm` restricts the run.
final class NodeConformanceTests: XCTestCase {
    func testNodeSuite() throws {
        let root = ONNXSuiteRunner.testdata.appendingPathComponent("onnx-node")
        guard FileManager.default.fileExists(atPath: root.path) else {
            XCTFail("NOT RUN: \(root.path) is missing — run `make testdata` (needs the Python venv with onnx)")
            return
        }
        let runner = try ONNXSuiteRunner(exclusionFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("conformance-exclusions.txt"))
        let filter = (ProcessInfo.processInfo.environment["SHRINKWRAP_NODE_FILTER"] ?? "")
            .split(separator: ",").map(String.init)
        let r = runner.runSuite(root: root, label: "node", filter: filter)
        print("onnx node conformance: \(r.passed) passed, \(r.excluded) excluded (\(r.failed.count) failed; "
              + "not run: \(r.unsupported) use unsupported ops, \(r.nonTensor) use sequences/maps)")
        XCTAssertEqual(r.failed, [], "\(r.failed.count) node tests failed")
        if filter.isEmpty { XCTAssertGreaterThan(r.passed, 500, "suspiciously few node tests passed") }
    }
}
