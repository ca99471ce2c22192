import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest
import ZipArchive
@testable import ShrinkwrapKeras

/// The fixtures are small models saved by Keras itself (Scripts/make_keras_fixtures.py, `make keras-fixtures`):
/// the same architectures by Keras 2.12 (.h5) and Keras 3.12 (.keras), each with inputs and `model(x)`'s outputs.
final class KerasImporterTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let models = ["branches", "activations", "shapes", "recurrent", "nested"]

    struct Expected {
        var inputs: [Tensor]
        var outputs: [Tensor]
    }

    static func expected(_ file: URL) throws -> Expected {
        let data = try Data(contentsOf: URL(fileURLWithPath: file.path + ".json"))
        guard let j = try JSONSerialization.jsonObject(with: data) as? [String: Any], let ins = j["inputs"] as? [[String: Any]],
              let outs = j["outputs"] as? [[String: Any]] else { throw ImportError.unreadable(file: file.path, reason: "bad fixture JSON") }
        func tensor(_ e: [String: Any]) -> Tensor {
            let shape = (e["shape"] as? [Int]) ?? []
            let values = (e["data"] as? [NSNumber]) ?? []
            if (e["dtype"] as? String) == "int32" { return Tensor(ints: values.map { $0.int64Value }, shape: shape, dtype: .int32) }
            return Tensor(values.map { $0.floatValue }, shape: shape)
        }
        return Expected(inputs: ins.map(tensor), outputs: outs.map(tensor))
    }

    /// Runs the imported graph on the fixture's inputs and compares with Keras' outputs (rel ≤ 1e-4).
    func check(_ name: String, _ ext: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = Self.fixtures.appendingPathComponent("\(name).\(ext)")
        let g = try KerasImporter.importModel(at: url)
        let want = try Self.expected(url)
        XCTAssertEqual(g.runtimeInputs.count, want.inputs.count, "\(name).\(ext): inputs", file: file, line: line)
        XCTAssertEqual(g.outputs.count, want.outputs.count, "\(name).\(ext): outputs", file: file, line: line)
        var feeds: [String: Tensor] = [:]
        for (i, info) in g.runtimeInputs.enumerated() where i < want.inputs.count { feeds[info.name] = want.inputs[i] }
        let got = try Interpreter(graph: g).run(feeds)
        for (o, info) in g.outputs.enumerated() where o < want.outputs.count {
            guard let y = got[info.name], let a = y.floats, let b = want.outputs[o].floats else {
                XCTFail("\(name).\(ext): output \(info.name) missing or not float", file: file, line: line)
                continue
            }
            XCTAssertEqual(y.shape, want.outputs[o].shape, "\(name).\(ext): output \(o) shape", file: file, line: line)
            guard a.count == b.count else { continue }
            let scale = max(b.map { abs($0) }.max() ?? 0, 1)
            let worst = zip(a, b).map { abs($0 - $1) }.max() ?? 0
            let num = zip(a, b).map { Double($0 - $1) * Double($0 - $1) }.reduce(0, +), den = b.map { Double($0) * Double($0) }.reduce(0, +)
            XCTAssertLessThanOrEqual(worst / scale, 1e-4, "\(name).\(ext): output \(o) max error \(worst)", file: file, line: line)
            XCTAssertLessThanOrEqual((num / max(den, 1e-30)).squareRoot(), 1e-4, "\(name).\(ext): output \(o) relative error", file: file, line: line)
        }
    }

    func testKeras2H5MatchesKeras() throws {
        for m in Self.models { XCTAssertNoThrow(try check(m, "h5"), m) }
    }

    func testKeras3MatchesKeras() throws {
        // activations3: Keras 3's activations that Keras 2 lacks.
        for m in Self.models + ["activations3"] { XCTAssertNoThrow(try check(m, "keras"), m) }
    }

    func testRecognizesBothContainers() throws {
        for ext in ["h5", "keras"] {
            let bytes = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("nested.\(ext)")))
            XCTAssertTrue(KerasImporter.recognizes(bytes), ext)
        }
        XCTAssertFalse(KerasImporter.recognizes(Array("not a model".utf8)))
    }

    func testConvolutionsCancelTheirTransposes() throws {
        let g = try KerasImporter.importModel(at: Self.fixtures.appendingPathComponent("branches.h5"))
        // The stem's BatchNormalization reads the conv's ReLU directly, computed channels first: the pair of
        // Transposes between them is gone (others sink through element-wise ops when a format lowers the graph).
        let producer = Dictionary(g.nodes.flatMap { n in n.outputs.map { ($0, n.opType) } }, uniquingKeysWith: { a, _ in a })
        let bn = g.nodes.filter { $0.opType == "BatchNormalization" }
        XCTAssertEqual(bn.count, 1)
        XCTAssertEqual(bn.first.flatMap { producer[$0.inputs[0]] }, "Relu")
        XCTAssertEqual(g.nodes.first { $0.opType == "Relu" }.flatMap { producer[$0.inputs[0]] }, "Conv")
        XCTAssertEqual(g.metadata.producerName, "Keras")
        XCTAssertEqual(g.sourceFormat, "keras-h5")
    }

    // MARK: - Bad files

    /// A Keras 3 file whose config.json is `config`, without weights.
    func keras3(config: String) throws -> [UInt8] {
        try ZipWriter.stored([(name: "config.json", data: Array(config.utf8))])
    }

    func testUnknownLayersAreListedAtOnce() throws {
        let config = """
        {"class_name": "Sequential", "config": {"name": "s", "layers": [
          {"class_name": "InputLayer", "config": {"batch_shape": [null, 4], "name": "in"}},
          {"class_name": "MyCustomLayer", "config": {"name": "custom_a"}},
          {"class_name": "Dense", "config": {"name": "d", "units": 2}},
          {"class_name": "Lambda", "config": {"name": "lam"}}]}}
        """
        let text = errorText { _ = try KerasImporter.importModel(bytes: try keras3(config: config), file: "m.keras") }
        XCTAssertTrue(text.contains("MyCustomLayer (layer 'custom_a')") && text.contains("Lambda (layer 'lam')"), text)
        XCTAssertFalse(text.contains("\n"), text)
    }

    func testMissingWeightsAndBadConfigsAreOneLineErrors() throws {
        let cases: [(String, String)] = [
            (#"{"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense", "config": {"name": "d", "units": 2}}]}}"#, "input shape is not saved"),
            (#"{"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense", "config": {"name": "d", "units": 2, "batch_input_shape": [null, 3]}}]}}"#,
             "no weights"),
            (#"{"class_name": "MyModel", "config": {}}"#, "subclassed"),
            (#"{"class_name": "Functional", "config": {"layers": [], "input_layers": [], "output_layers": []}}"#, "input_layers is empty"),
            (String(repeating: "[", count: 5000), "nested deeper"),
            (#"{"class_name": "Sequential", "config": {"layers": [1, 2]}} trailing"#, "text after"),
        ]
        for (config, fragment) in cases {
            let text = errorText { _ = try KerasImporter.importModel(bytes: try keras3(config: config), file: "m.keras") }
            XCTAssertTrue(text.hasPrefix("m.keras"), text)
            XCTAssertTrue(text.contains(fragment), "\(fragment): \(text)")
            XCTAssertFalse(text.contains("\n"), text)
        }
    }

    func testTruncatedAndDamagedFilesNeverCrash() throws {
        for ext in ["h5", "keras"] {
            let bytes = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("nested.\(ext)")))
            var rng = TestRNG(seed: 26)
            for cut in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 200)) {
                let text = errorText { _ = try KerasImporter.importModel(bytes: Array(bytes[..<cut]), file: "t.\(ext)") }
                XCTAssertNotEqual(text, "no error", "\(ext) cut at \(cut) imported")
                XCTAssertFalse(text.contains("\n"), text)
            }
            for _ in 0..<300 {
                var b = bytes
                for _ in 0..<4 { b[rng.below(b.count)] ^= UInt8(truncatingIfNeeded: rng.next() | 1) }
                _ = try? KerasImporter.importModel(bytes: b, file: "f.\(ext)")
            }
        }
    }
}
