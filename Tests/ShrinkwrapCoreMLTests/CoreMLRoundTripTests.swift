import CoreMLSchema
import Foundation
import Shrinkwrap
import ShrinkwrapCompression
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// ONNX → .mlmodel → import → interpreter on the light models (made by
/// `make testdata`), in float32, fp16 and the quantized modes: the imported
/// network must give the outputs of the graph it was written from, whose
/// weights are the same compressed weights.
final class CoreMLRoundTripTests: XCTestCase {
    static let modelDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".testdata/models")

    func lightModels() throws -> [String] {
        let models = ((try? FileManager.default.contentsOfDirectory(atPath: Self.modelDir.path)) ?? [])
            .filter { $0.hasSuffix(".onnx") }.sorted()
        guard !models.isEmpty else { throw XCTSkip("SKIPPED: no light models in \(Self.modelDir.path); run `make testdata`") }
        return models
    }

    /// max |a − b| / max |b| over every output.
    static func relativeError(_ a: [String: Tensor], _ b: [String: Tensor]) -> Double {
        var worst = 0.0
        for (name, ref) in b {
            guard let got = a[name], got.count == ref.count else { return .infinity }
            let r = ref.doubles, g = got.doubles
            let scale = max(r.map { abs($0) }.max() ?? 0, 1e-12)
            let diff = zip(r, g).map { abs($0 - $1) }.max() ?? 0
            worst = max(worst, diff / scale)
        }
        return worst
    }

    /// Writes, reads back, runs both; returns the spec version and the relative error.
    @discardableResult
    static func roundTrip(_ g: Graph, label: String, inputs: [String: Tensor], file: StaticString = #filePath, line: UInt = #line) throws
        -> (version: Int32, error: Double) {
        let prepared = try ExportPreparation.prepare(g).graph
        let spec = try CoreMLExporter.exportSpec(prepared)
        let data = try spec.serializedData()
        let back = try CoreMLImporter.importModel(data: data, file: "\(label).mlmodel")
        let expected = try Interpreter(graph: g).run(inputs)
        let got = try Interpreter(graph: back).run(inputs)
        XCTAssertEqual(Set(got.keys), Set(expected.keys), label, file: file, line: line)
        let err = relativeError(got, expected)
        XCTAssertLessThanOrEqual(err, 1e-4, label, file: file, line: line)
        return (spec.specificationVersion, err)
    }

    func testLightModelsFloat32AndFP16() throws {
        for m in try lightModels() {
            let g = try Models.load(Self.modelDir.appendingPathComponent(m).path)
            let inputs = try ModelRunner.syntheticInputs(graph: g, seed: 5)
            let original = try Interpreter(graph: g).run(inputs)
            let prepared = try ExportPreparation.prepare(g).graph
            let data = try CoreMLExporter.export(prepared)
            let back = try CoreMLImporter.importModel(data: data, file: m)
            let err = Self.relativeError(try Interpreter(graph: back).run(inputs), original)
            XCTAssertLessThanOrEqual(err, 1e-4, "\(m) float32")
            let base = try CoreMLExporter.exportSpec(prepared).specificationVersion
            var half = g
            let log = try CompressWeights.run(&half, plan: CompressionPlan(CompressionRule(mode: "fp16", options: CodecOptions())), threads: 2)
            XCTAssertTrue(log.entries.contains { $0.rule?.hasPrefix("fp16 (with the fp16 weight") == true }, "\(m): biases follow their fp16 weights")
            let (v, e16) = try Self.roundTrip(half, label: "\(m) fp16", inputs: inputs)
            XCTAssertEqual(v, max(base, 2), "\(m): fp16 weights need specification 2")
            print("round trip \(m): float32 rel \(err), fp16 rel \(e16), spec \(v)")
        }
    }
}

extension CoreMLRoundTripTests {
    func plan(_ mode: String, bits: Int, granularity: String? = nil) throws -> CompressionPlan {
        let codec = try WeightCodecs.codec(named: mode)
        var o = CodecOptions()
        o.bits = bits
        o.granularity = try granularity.map { try Granularity(parsing: $0) } ?? WeightCodecs.defaultGranularity(codec)
        return CompressionPlan(CompressionRule(mode: mode, options: o))
    }

    /// Every quantized mode and width on the two small light models.
    func testSmallModelsEveryQuantizedModeAndWidth() throws {
        let models = try lightModels().filter { $0.contains("squeezenet") || $0.contains("shufflenet") }
        guard !models.isEmpty else { throw XCTSkip("SKIPPED: light_squeezenet / light_shufflenet missing; run `make testdata`") }
        for m in models {
            let g = try Models.load(Self.modelDir.appendingPathComponent(m).path)
            let inputs = try ModelRunner.syntheticInputs(graph: g, seed: 7)
            let base = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(g).graph).specificationVersion
            for mode in ["linear", "linear-lut", "kmeans-lut"] {
                for bits in 1...8 {
                    var q = g
                    let log = try CompressWeights.run(&q, plan: try plan(mode, bits: bits), threads: 2)
                    XCTAssertGreaterThan(log.entries.filter(\.compressed).count, 0)
                    let (v, err) = try Self.roundTrip(q, label: "\(m) \(mode) \(bits)", inputs: inputs)
                    XCTAssertEqual(v, max(base, 3), "\(m) \(mode) \(bits): quantized weights need specification 3")
                    XCTAssertLessThanOrEqual(err, 1e-4)
                }
            }
            // Symmetric linear codes are shifted to Core ML's unsigned codes; per-tensor scales too.
            var s = g
            var o = CodecOptions(); o.bits = 4; o.symmetric = true; o.granularity = .perChannel
            _ = try CompressWeights.run(&s, plan: CompressionPlan(CompressionRule(mode: "linear", options: o)), threads: 2)
            try Self.roundTrip(s, label: "\(m) linear symmetric 4", inputs: inputs)
            var t = g
            _ = try CompressWeights.run(&t, plan: try plan("linear", bits: 6, granularity: "per-tensor"), threads: 2)
            try Self.roundTrip(t, label: "\(m) linear per-tensor 6", inputs: inputs)
        }
    }

    /// One quantized configuration on every light model.
    func testEveryLightModelLinear8() throws {
        for m in try lightModels() {
            let g = try Models.load(Self.modelDir.appendingPathComponent(m).path)
            let inputs = try ModelRunner.syntheticInputs(graph: g, seed: 9)
            var q = g
            _ = try CompressWeights.run(&q, plan: try plan("linear", bits: 8), threads: 2)
            try Self.roundTrip(q, label: "\(m) linear 8", inputs: inputs)
        }
    }

    /// Layouts Core ML NeuralNetwork cannot hold are refused with the tensor's name.
    func testGroupedPalettesAndBlockScalesAreRefused() throws {
        guard let m = try lightModels().first(where: { $0.contains("squeezenet") }) else { throw XCTSkip("SKIPPED: no light_squeezenet") }
        let g = try Models.load(Self.modelDir.appendingPathComponent(m).path)
        for (mode, gran) in [("kmeans-lut", "per-grouped-channel:4"), ("linear", "per-block:32")] {
            var q = g
            _ = try CompressWeights.run(&q, plan: try plan(mode, bits: 4, granularity: gran), threads: 2)
            XCTAssertThrowsError(try CoreMLExporter.export(try ExportPreparation.prepare(q).graph)) { e in
                let text = "\(e)"
                XCTAssertTrue(text.contains("Core ML NeuralNetwork: weight '"), text)
            }
        }
    }
}

extension CoreMLRoundTripTests {
    /// --image-input / --labels / metadata: the scaler holds the preprocessing, the model is a
    /// classifier with a classLabel output, and the imported graph computes the same thing.
    func testImageInputClassifierAndMetadata() throws {
        guard let m = try lightModels().first(where: { $0.contains("squeezenet") }) else { throw XCTSkip("SKIPPED: no light_squeezenet") }
        var g = try Models.load(Self.modelDir.appendingPathComponent(m).path)
        var o = ConversionOptions()
        o.imageInputs = [.init(name: g.runtimeInputs[0].name, color: .bgr, scale: 0.017, bias: [-2.1, -2.0, -1.8])]
        o.labels = (0..<1000).map { "class \($0)" }
        o.author = "Shrinkwrap tests"; o.license = "MIT"; o.shortDescription = "squeezenet"; o.version = "3"
        o.userDefined = [("source", "onnx zoo")]
        try Models.apply(o, to: &g)
        var inputs = try ModelRunner.syntheticInputs(graph: g, seed: 11)
        inputs = inputs.mapValues { t in Tensor(t.doubles.map { Float(($0 + 1) * 127) }, shape: t.shape) }  // pixel-like values
        let spec = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(g).graph)
        XCTAssertEqual(spec.specificationVersion, 1)
        let d = spec.description_p
        XCTAssertEqual(d.input[0].type.imageType.colorSpace, .bgr)
        XCTAssertEqual(d.predictedFeatureName, "classLabel")
        XCTAssertEqual(d.output.first?.type.stringType, CoreML_Specification_StringFeatureType())
        XCTAssertEqual(d.metadata.author, "Shrinkwrap tests")
        XCTAssertEqual(d.metadata.versionString, "3")
        XCTAssertEqual(d.metadata.userDefined["source"], "onnx zoo")
        let nn = spec.neuralNetworkClassifier
        XCTAssertEqual(nn.stringClassLabels.vector.count, 1000)
        XCTAssertEqual(nn.preprocessing.first?.scaler.channelScale, 0.017)
        XCTAssertEqual(nn.preprocessing.first?.scaler.blueBias, -2.1)
        XCTAssertEqual(nn.preprocessing.first?.scaler.redBias, -1.8)
        let back = try CoreMLImporter.importModel(data: try spec.serializedData(), file: "sq.mlmodel")
        XCTAssertEqual(back.metadata.labels.count, 1000)
        XCTAssertEqual(back.metadata.imageInputs, g.metadata.imageInputs)
        XCTAssertEqual(back.metadata.author, "Shrinkwrap tests")
        let want = try Interpreter(graph: g).run(inputs), got = try Interpreter(graph: back).run(inputs)
        XCTAssertLessThanOrEqual(Self.relativeError(got, want), 1e-4)
        // And once more: the imported classifier exports to the same spec.
        let again = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(back).graph)
        XCTAssertEqual(again.neuralNetworkClassifier.preprocessing, nn.preprocessing)
        XCTAssertEqual(again.description_p.predictedProbabilitiesName, d.predictedProbabilitiesName)
    }
}

extension CoreMLRoundTripTests {
    /// The whole matrix — every light model × linear / linear-lut / kmeans-lut × 1…8 bits — takes
    /// long on the big models (vgg19, zfnet, alexnet), so it runs from `make test-coreml-matrix`
    /// (SHRINKWRAP_FULL_MATRIX=1), not from `make test`, which covers every model in float32 /
    /// fp16 / linear 8 and two models in every mode.
    func testFullMatrixEveryLightModelEveryModeAndWidth() throws {
        guard ProcessInfo.processInfo.environment["SHRINKWRAP_FULL_MATRIX"] == "1" else {
            throw XCTSkip("SKIPPED: the full Core ML round-trip matrix runs from `make test-coreml-matrix` (SHRINKWRAP_FULL_MATRIX=1)")
        }
        // Smallest first, so that a partial run still covers most models.
        func size(_ m: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: Self.modelDir.appendingPathComponent(m).path))?[.size] as? Int) ?? 0
        }
        for m in try lightModels().sorted(by: { (size($0), $0) < (size($1), $1) }) {
            let started = Date()
            let g = try Models.load(Self.modelDir.appendingPathComponent(m).path)
            let inputs = try ModelRunner.syntheticInputs(graph: g, seed: 13)
            var worst = 0.0
            for mode in ["linear", "linear-lut", "kmeans-lut"] {
                for bits in 1...8 {
                    let t0 = Date()
                    var q = g
                    _ = try CompressWeights.run(&q, plan: try plan(mode, bits: bits), threads: 2)
                    let (_, err) = try Self.roundTrip(q, label: "\(m) \(mode) \(bits)", inputs: inputs)
                    worst = max(worst, err)
                    print("full matrix \(m) \(mode) \(bits): rel \(err), \(Int(Date().timeIntervalSince(t0))) s")
                }
            }
            print("full matrix \(m): 24 configurations, worst relative error \(worst), \(Int(Date().timeIntervalSince(started))) s")
        }
    }
}
