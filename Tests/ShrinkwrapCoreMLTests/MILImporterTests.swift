import Foundation
import Shrinkwrap
import ShrinkwrapCoreML
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// ML Programs built by coremltools (`Scripts/make_mlprogram_fixtures.py`, run by `make testdata`
/// into .testdata/mlprogram): each imports and our interpreter gives the numpy reference's outputs;
/// compressed ones keep their encodings and decode to what coremltools' decompress_weights gives.
final class MILImporterTests: XCTestCase {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".testdata/mlprogram")

    struct Manifest: Decodable {
        struct Compressed: Decodable { let value: String; let weight: String; let kind: String; let bits: Int; let granularity: String; let decoded: String }
        struct Model: Decodable {
            let name: String; let file: String; let tolerance: String
            let inputs: [String: String]; let outputs: [String: String]; let compressed: [Compressed]; let ops: [String]
            let labels: [String]
            /// The color layout of the image input "x", if the model has one.
            let image: String?
        }
        let models: [Model]
    }

    static func manifest() throws -> Manifest {
        let url = dir.appendingPathComponent("manifest.json")
        guard let data = try? Data(contentsOf: url) else {
            throw XCTSkip("SKIPPED: no ML Program fixtures in \(dir.path); run `make testdata` (Scripts/make_mlprogram_fixtures.py in .venv)")
        }
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    /// max |a − b| / max(max |b|, 1) over one output.
    static func relativeDifference(_ a: Tensor, _ b: Tensor) -> Double {
        let scale = max(b.doubles.map(abs).max() ?? 0, 1)
        return zip(a.doubles, b.doubles).map { abs($0 - $1) }.max().map { $0 / scale } ?? 0
    }

    func testEveryFixtureMatchesItsReference() throws {
        var lines: [String] = []
        for m in try Self.manifest().models {
            let g = try Models.load(Self.dir.appendingPathComponent(m.file).path)
            XCTAssertEqual(g.sourceFormat, "mlprogram")
            XCTAssertEqual(g.metadata.labels, m.labels, m.name)
            XCTAssertEqual(g.metadata.imageInputs, m.image.flatMap(ColorLayout.init(rawValue:)).map { [ImageInput(name: "x", color: $0)] } ?? [], m.name)
            XCTAssertEqual(Set(g.outputs.map(\.name)), Set(m.outputs.keys), m.name)
            var inputs: [String: Tensor] = [:]
            for (name, file) in m.inputs {
                var t = try NPY.read(Self.dir.appendingPathComponent(file))
                if let d = g.inputs.first(where: { $0.name == name })?.dtype, d == .int32 { t.dtype = .int32 }
                inputs[name] = t
            }
            let got = try Interpreter(graph: g).run(inputs)
            let limit = m.tolerance == "fp16" ? 2e-2 : 1e-4
            var worst = 0.0
            for (name, file) in m.outputs.sorted(by: { $0.key < $1.key }) {
                let want = try NPY.read(Self.dir.appendingPathComponent(file))
                guard let out = got[name] else { XCTFail("\(m.name): no output \(name)"); continue }
                // A rank-0 MIL value is a [1] array in numpy's file: compare the elements.
                XCTAssertTrue(out.shape == want.shape || out.count == 1 && want.count == 1, "\(m.name) \(name): \(out.shape) vs \(want.shape)")
                let d = Self.relativeDifference(out, want)
                XCTAssertLessThanOrEqual(d, limit, "\(m.name) output \(name)")
                worst = max(worst, d)
            }
            lines.append("\(m.name): rel \(String(format: "%.1e", worst)) (\(m.tolerance))")
        }
        print("ML Program fixtures:\n  " + lines.joined(separator: "\n  "))
    }

    /// Compressed weights stay compressed, with coremltools' bits and granularity, and decode to its values.
    func testCompressedWeightsKeepTheirEncoding() throws {
        var checked = 0
        for m in try Self.manifest().models where !m.compressed.isEmpty {
            let g = try Models.load(Self.dir.appendingPathComponent(m.file).path)
            for c in m.compressed {
                guard let constant = g.constant(named: c.value) else { XCTFail("\(m.name): no constant \(c.value)"); continue }
                let want = try NPY.read(Self.dir.appendingPathComponent(c.decoded))
                let got = constant.encoding.decoded()
                XCTAssertEqual(got.shape, want.shape, "\(m.name) \(c.value)")
                let diff = zip(got.doubles, want.doubles).map { abs($0 - $1) }.max() ?? 0
                switch constant.encoding {
                case .palette(let p):
                    XCTAssertEqual(c.kind, "palette", "\(m.name) \(c.value)")
                    XCTAssertEqual(p.bits, c.bits, "\(m.name) \(c.value)")
                    // The fixtures group 16 rows per table in the MLP, 4 output channels in the CNN.
                    let groupRows = c.granularity == "per_tensor" ? p.shape[0] : (m.name.hasPrefix("cnn") ? 4 : 16)
                    XCTAssertEqual(p.axis, 0, "\(m.name) \(c.value)")
                    XCTAssertEqual(p.lut.count, (p.shape[0] + groupRows - 1) / groupRows, "\(m.name) \(c.value): \(p.lut.count) tables")
                    XCTAssertEqual(diff, 0, "\(m.name) \(c.value): palettes decode exactly")
                case .affine(let a):
                    XCTAssertEqual(c.kind, "affine", "\(m.name) \(c.value)")
                    XCTAssertEqual(a.bits, c.bits, "\(m.name) \(c.value)")
                    let split = zip(a.shape, a.blockShape).filter { $0.1 < $0.0 }
                    switch c.granularity {
                    case "per_tensor": XCTAssertTrue(split.isEmpty, "\(m.name) \(c.value): \(a.blockShape)")
                    case "per_channel": XCTAssertEqual(a.blockShape.first, 1, "\(m.name) \(c.value): \(a.blockShape)")
                    default: XCTAssertTrue(split.contains { $0.1 > 1 }, "\(m.name) \(c.value): \(a.blockShape)")
                    }
                    // Symmetric: exact; with a zero point within one float32 ulp of the largest |value| (see
                    // MILOpReaders+Constexpr.swift).
                    let scale = want.doubles.map(abs).max() ?? 0
                    XCTAssertLessThanOrEqual(diff, a.isSymmetric ? 0 : scale * 0x1p-23, "\(m.name) \(c.value)")
                    if !a.isSymmetric { print("\(m.name) \(c.value): affine with zero points decodes within \(diff) of coremltools") }
                default:
                    XCTFail("\(m.name) \(c.value): stored as \(constant.encoding.kind), expected \(c.kind)")
                }
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 10)
    }

    /// Every op the fixtures use is one the importer reads (the fixtures cover them).
    func testSupportedOpsCoverTheFixtures() throws {
        let used = Set(try Self.manifest().models.flatMap(\.ops))
        XCTAssertEqual(used.subtracting(MILImporter.supportedOps).sorted(), [])
        let untested = Set(MILImporter.supportedOps).subtracting(used).sorted()
        print("ML Program ops in fixtures: \(used.intersection(MILImporter.supportedOps).count) of \(MILImporter.supportedOps.count) read; not in a fixture: \(untested.joined(separator: ", "))")
    }

    /// The .mlmodel of a package, read alone: the same graph (weights resolved beside it).
    func testModelFileInsideThePackageImportsToo() throws {
        guard let m = try Self.manifest().models.first(where: { $0.name == "cnn" }) else { return XCTFail("no cnn fixture") }
        let package = Self.dir.appendingPathComponent(m.file)
        let a = try Models.load(package.path)
        let b = try Models.load(package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel").path)
        XCTAssertEqual(a.nodes, b.nodes)
        XCTAssertEqual(a.constants, b.constants)
        XCTAssertTrue(a.sourceVersion.hasPrefix("ML Program, opset CoreML6 (iOS 16)"), a.sourceVersion)
    }

    /// basic-pitch from the corpus (coremltools 7.0 from TensorFlow) imports and runs.
    func testBasicPitchImportsAndRuns() throws {
        let url = MILSchemaTests.modelURL.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw XCTSkip("SKIPPED (basic-pitch ML Program not imported): no \(url.path); run `make corpus`")
        }
        let g = try Models.load(url.path)
        XCTAssertEqual(g.outputs.map(\.name), ["Identity", "Identity_1", "Identity_2"])
        var rng = SeededGenerator(seed: 5)
        let x = Tensor((0..<43844).map { _ in Float.random(in: -0.5...0.5, using: &rng) }, shape: [1, 43844, 1])
        let out = try Interpreter(graph: g).run(["input_2": x])
        XCTAssertEqual(out["Identity"]?.shape, [1, 172, 264])
        XCTAssertEqual(out["Identity_1"]?.shape, [1, 172, 88])
        XCTAssertTrue(out.values.allSatisfy { $0.floats?.allSatisfy(\.isFinite) ?? false })
    }
}
