import Shrinkwrap
import ShrinkwrapCompression
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

    /// ONNX's vocabulary is the IR's; other formats' importers translate their
    /// layers into IR ops, which the round-trip suites run.
    func testEveryImportableOpHasAKernel() {
        for format in ModelFormats.all where format.name == "onnx" {
            var missing: [String] = []
            for op in format.supportedOps {
                for irOp in rewrittenOps[op] ?? [op] where KernelRegistry.kernels[irOp] == nil {
                    missing.append(format.name == "onnx" && irOp == op ? op : "\(op)→\(irOp)")
                }
            }
            XCTAssertEqual(missing, [], "\(format.name) importer accepts ops the interpreter cannot run")
        }
    }

    /// README.md's tables of formats, modes and ops are `shrinkwrap support`'s output.
    func testReadmeTablesMatchTheRegistries() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let begin = text.range(of: SupportTables.beginMarker + "\n"),
              let end = text.range(of: SupportTables.endMarker, range: begin.upperBound..<text.endIndex) else {
            return XCTFail("README.md has no generated tables between \(SupportTables.beginMarker) and \(SupportTables.endMarker)")
        }
        XCTAssertEqual(String(text[begin.upperBound..<end.lowerBound]), SupportTables.markdown,
                       "README.md's generated tables are stale: run `make readme`")
    }

    func testSupportTablesListEveryFormatAndMode() {
        let tables = SupportTables.markdown
        for f in ModelFormats.all { XCTAssertTrue(tables.contains("| \(f.title) |"), f.name) }
        for mode in WeightCodecs.modes { XCTAssertTrue(tables.contains("| `\(mode)` |"), mode) }
        XCTAssertTrue(tables.contains("LSTM"))
    }

    func testFormatsHaveDistinctExtensions() {
        let exts = ModelFormats.all.flatMap(\.extensions)
        XCTAssertEqual(exts.count, Set(exts).count)
        XCTAssertEqual(ModelFormats.format(for: URL(fileURLWithPath: "/x/Model.ONNX"))?.name, "onnx")
        XCTAssertNil(ModelFormats.format(for: URL(fileURLWithPath: "/x/model.bin")))
    }
}

/// The ops the foundation issue names must import and have a kernel.
final class RequiredOpsTests: XCTestCase {
    static let required = """
        Conv ConvTranspose Gemm MatMul BatchNormalization InstanceNormalization LayerNormalization
        Add Sub Mul Div Pow Sqrt Reciprocal Neg Abs Exp Log Erf Max Min Mean Sum
        Relu LeakyRelu PRelu Elu Selu Sigmoid HardSigmoid HardSwish Tanh Softplus Gelu Clip
        MaxPool AveragePool GlobalAveragePool GlobalMaxPool Softmax LogSoftmax
        ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ArgMax
        Flatten Reshape Transpose Squeeze Unsqueeze Concat Split Slice Gather Expand Tile Pad Resize
        Shape Size Cast Identity Dropout ConstantOfShape Range Where Equal Greater Less Not And Or
        LSTM GRU DepthToSpace SpaceToDepth
        """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)

    func testEveryRequiredOpImportsAndRuns() {
        let importable = Set(ONNXImporter.supportedOps)
        XCTAssertEqual(Self.required.filter { !importable.contains($0) }, [], "not importable")
        XCTAssertEqual(Self.required.filter { KernelRegistry.kernels[$0] == nil }, [], "no kernel")
        XCTAssertEqual(Self.required.count, 78)  // the list as the issue gives it
    }
}
