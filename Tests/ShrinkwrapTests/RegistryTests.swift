import Shrinkwrap
import ShrinkwrapCompression
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
@testable import ShrinkwrapONNX
import ShrinkwrapRuntime
@testable import ShrinkwrapTFLite
import XCTest

/// The registries are data; these tests keep them consistent with each other.
final class RegistryTests: XCTestCase {
    /// The op table is the IR's vocabulary: the interpreter has exactly one kernel per op.
    func testEveryOpHasAKernelAndEveryKernelAnOp() {
        let table = Set(OpTable.ops), kernels = Set(KernelRegistry.kernels.keys)
        XCTAssertEqual(table.subtracting(kernels).sorted(), [], "ops in the op table without a kernel")
        XCTAssertEqual(kernels.subtracting(table).sorted(), [], "kernels for ops the op table lacks")
    }

    /// The IR's op vocabulary is ONNX's: every op says the lowest opset that writes it.
    func testEveryOpHasAMinimumONNXOpset() {
        XCTAssertEqual(OpTable.byName.values.filter { $0.onnxOpset == nil }.map(\.name).sorted(), [],
                       "ops without a minimum ONNX opset (OpTable)")
        for info in OpTable.byName.values {
            let plain = Node(name: "n", opType: info.name, inputs: ["x"], outputs: ["y"])
            if let v = info.onnxOpset?(plain) { XCTAssertTrue((1...24).contains(v), "\(info.name): opset \(v)") }
        }
    }

    /// Every translator and writer table names IR ops only (readers are checked as they
    /// run: an importer refuses a graph with an op outside the table, see `checkedAgainstOpTable`).
    func testTranslatorAndWriterTablesNameOnlyIROps() {
        func outside(_ ops: some Sequence<String>) -> [String] { ops.filter { OpTable[$0] == nil }.sorted() }
        XCTAssertEqual(outside(ONNXOps.passThrough), [], "ONNX import passes these through, but the IR lacks them")
        XCTAssertEqual(outside(ONNXOps.expanded.keys), [], "ONNX export expands these, but the IR lacks them")
        XCTAssertEqual(outside(CoreMLLayerWriters.table.keys), [], "the Core ML writer table names ops the IR lacks")
        // The TFLite layout pass renames image ops it moved to NHWC ("NHWC.Conv"): the op after the prefix must be an IR op.
        let tflite = TFLiteExportOps.table.keys.map { $0.hasPrefix("NHWC.") ? String($0.dropFirst(5)) : $0 }
        XCTAssertEqual(outside(tflite), [], "the TFLite writer table names ops the IR lacks")
        for f in ModelFormats.all { XCTAssertEqual(outside(f.exportedOps), [], "\(f.name) exports ops the IR lacks") }
    }

    /// The op table's weight roles, as the compress pass sees them.
    func testWeightRolesComeFromTheOpTable() {
        let conv = Node(name: "c", opType: "Conv", inputs: ["x", "w", "b"], outputs: ["y"])
        XCTAssertEqual(OpTable.role(of: conv, input: 1, rank: 4, isConstant: { _ in true }), .weight(outputAxis: 0, inputAxis: 1))
        XCTAssertEqual(OpTable.role(of: conv, input: 2, rank: 1, isConstant: { _ in true }), .notWeight("bias of Conv 'c'"))
        let gather = Node(name: "g", opType: "Gather", inputs: ["table", "ids"], outputs: ["y"])
        XCTAssertEqual(OpTable.role(of: gather, input: 0, rank: 2, isConstant: { $0 == "table" }), .weight(outputAxis: 0, inputAxis: 1))
        XCTAssertEqual(OpTable.role(of: gather, input: 0, rank: 2, isConstant: { _ in true }),
                       .notWeight("table of Gather 'g' is not an embedding lookup"))
        let unknown = Node(name: "u", opType: "NotAnOp", inputs: ["x"], outputs: ["y"])
        XCTAssertEqual(OpTable.role(of: unknown, input: 0, rank: 2, isConstant: { _ in true }),
                       .notWeight("input 0 of NotAnOp 'u' is not a weight"))
    }

    /// Codecs own their modes and options: outside `Codecs/`, no code of the targets that handle
    /// compression settings spells a mode name or a codec option as a string literal (comments
    /// aside) — it asks the codec table instead.
    func testNoModeOrCodecOptionIsSpelledOutsideTheCodecs() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var words = Set(WeightCodecs.modes)
        for o in WeightCodecs.allOptions { words.insert(o.key); words.insert(o.longName); words.insert(o.flag) }
        var found: [String] = []
        for target in ["Shrinkwrap", "ShrinkwrapCLI", "ShrinkwrapReport", "ShrinkwrapCompression"] {
            let dir = root.appendingPathComponent("Sources/\(target)")
            let files = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            for file in files where file.pathExtension == "swift" && !file.path.contains("/Codecs/") {
                let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
                for (i, line) in lines.enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    if code.hasPrefix("//") { continue }
                    for w in words where code.contains("\"\(w)\"") {
                        found.append("\(target)/\(file.lastPathComponent):\(i + 1): \"\(w)\"")
                    }
                }
            }
        }
        XCTAssertFalse(words.isEmpty)
        XCTAssertEqual(found, [], "mode names or codec options spelled outside the codec table")
    }

    /// docs/ARCHITECTURE.md's checklists name files that exist.
    func testArchitectureChecklistPathsExist() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let paths = text.components(separatedBy: "`").filter { $0.hasPrefix("Sources/") && $0.hasSuffix(".swift") && !$0.contains("<") }
        XCTAssertGreaterThan(paths.count, 10)
        for p in paths {
            XCTAssertTrue(FileManager.default.fileExists(atPath: root.appendingPathComponent(p).path), "docs/ARCHITECTURE.md names \(p), which does not exist")
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
