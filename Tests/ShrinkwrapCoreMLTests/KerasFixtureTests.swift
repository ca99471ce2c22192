import Foundation
import Shrinkwrap
import ShrinkwrapData
import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// Independent semantics: Keras models converted by coremltools
/// (`Scripts/make_keras_coreml.py`, run by `make testdata` into
/// .testdata/keras). We import each .mlmodel and must give Keras' outputs;
/// each coremltools-quantized file must give the outputs of its float
/// "dequantized twin" (weights decoded by coremltools itself).
final class KerasFixtureTests: XCTestCase {
    static let dir = CoreMLRoundTripTests.modelDir.deletingLastPathComponent().appendingPathComponent("keras")

    struct Manifest: Decodable {
        struct Case: Decodable { let inputs: [String: String]; let outputs: [String: String] }
        struct Quantized: Decodable { let tag: String; let file: String; let dequant_file: String }
        struct Model: Decodable { let name: String; let file: String; let cases: [Case]; let quantized: [Quantized]; let layer_kinds: [String: Int] }
        let models: [Model]
    }

    func manifest() throws -> Manifest {
        let url = Self.dir.appendingPathComponent("manifest.json")
        guard let data = try? Data(contentsOf: url) else {
            throw XCTSkip("SKIPPED: no Keras fixtures in \(Self.dir.path); run `make testdata` (needs the .venv-tf TensorFlow venv)")
        }
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    func run(_ g: Graph, _ c: Manifest.Case) throws -> [String: Tensor] {
        var inputs: [String: Tensor] = [:]
        for (name, file) in c.inputs { inputs[name] = try NPY.read(Self.dir.appendingPathComponent(file)) }
        return try Interpreter(graph: g).run(inputs)
    }

    /// Models whose layers we read must match Keras; the loop-based LSTM (its loop layer is read; the
    /// branch and TensorList scatter layers around it are not) is reported as unsupported, all at once.
    func testKerasModelsMatchKeras() throws {
        var matched: [String] = []
        for m in try manifest().models {
            let path = Self.dir.appendingPathComponent(m.file).path
            if m.layer_kinds["loop"] != nil {
                XCTAssertThrowsError(try Models.load(path)) { e in
                    let text = "\(e)"
                    XCTAssertTrue(text.contains("unsupported ops") && text.contains("branch") && text.contains("scatter"), text)
                }
                continue
            }
            let g = try Models.load(path)
            for c in m.cases {
                let got = try run(g, c)
                for (name, file) in c.outputs {
                    let want = try NPY.read(Self.dir.appendingPathComponent(file))
                    guard let out = got[name] else { XCTFail("\(m.name): no output \(name)"); continue }
                    XCTAssertEqual(out.count, want.count, "\(m.name) \(name)")
                    for (a, b) in zip(out.doubles, want.doubles) {
                        XCTAssertLessThanOrEqual(abs(a - b), 1e-4 + 1e-3 * abs(b), "\(m.name) \(name)")
                    }
                }
            }
            matched.append(m.name)
        }
        print("Keras fixtures matched: \(matched.joined(separator: ", "))")
        XCTAssertTrue(matched.contains("cnn") && matched.contains("mlp"), "the CNN and the MLP must import")
        XCTAssertTrue(matched.contains { $0.contains("block") }, "an LSTM model must import")
    }

    func testCoremltoolsQuantizedFilesMatchTheirDequantizedTwins() throws {
        var compared = 0
        for m in try manifest().models where m.layer_kinds["loop"] == nil {
            for q in m.quantized {
                let g = try Models.load(Self.dir.appendingPathComponent(q.file).path)
                let twin = try Models.load(Self.dir.appendingPathComponent(q.dequant_file).path)
                XCTAssertTrue(g.constants.contains { $0.encoding.isCompressed } || m.name.contains("lstm"), "\(q.file): weights kept compressed")
                for c in m.cases {
                    let a = try run(g, c), b = try run(twin, c)
                    for (name, want) in b {
                        guard let got = a[name] else { XCTFail("\(q.file): no output \(name)"); continue }
                        for (x, y) in zip(got.doubles, want.doubles) {
                            XCTAssertLessThanOrEqual(abs(x - y), 1e-5 + 1e-4 * abs(y), "\(q.file) \(name)")
                        }
                    }
                }
                compared += 1
            }
        }
        print("coremltools-quantized files matched their twins: \(compared)")
        XCTAssertGreaterThan(compared, 0)
    }
}
