import Shrinkwrap
import ShrinkwrapONNX
import ShrinkwrapRuntime
import XCTest

/// The registries are data; these tests keep them consistent with each other.
final class RegistryTests: XCTestCase {
    /// Importer ops that become other IR ops (or none) instead of themselves.
    let rewrittenOps: [String: [String]] = [
        "Constant": [],
        "Upsample": ["Resize"],
        "Scatter": ["ScatterElements"],
        "Softmax": ["Softmax", "Shape", "Flatten", "Reshape"],
        "LogSoftmax": ["LogSoftmax", "Shape", "Flatten", "Reshape"],
        "Hardmax": ["Hardmax", "Shape", "Flatten", "Reshape"],
    ]

    func testEveryImportableOpHasAKernel() {
        for format in ModelFormats.all {
            var missing: [String] = []
            for op in format.supportedOps {
                for irOp in rewrittenOps[op] ?? [op] where KernelRegistry.kernels[irOp] == nil {
                    missing.append(format.name == "onnx" && irOp == op ? op : "\(op)→\(irOp)")
                }
            }
            XCTAssertEqual(missing, [], "\(format.name) importer accepts ops the interpreter cannot run")
        }
    }

    func testFormatsHaveDistinctExtensions() {
        let exts = ModelFormats.all.flatMap(\.extensions)
        XCTAssertEqual(exts.count, Set(exts).count)
        XCTAssertEqual(ModelFormats.format(for: URL(fileURLWithPath: "/x/Model.ONNX"))?.name, "onnx")
        XCTAssertNil(ModelFormats.format(for: URL(fileURLWithPath: "/x/model.bin")))
    }
}
