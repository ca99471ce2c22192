import CoreMLSchema
import Foundation
import Shrinkwrap
import ShrinkwrapCompression
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// Writes .mlmodel files in every weight form, with our decoding of each
/// stored weight, for `Scripts/coreml_crosscheck.py` (run by `make test`
/// after the suites): coremltools must load every file and decode every
/// quantized weight to exactly our values.
final class CoreMLCrossCheckFilesTests: XCTestCase {
    static let outDir = CoreMLRoundTripTests.modelDir.deletingLastPathComponent().appendingPathComponent("coreml-crosscheck")

    /// (layer kind, field, WeightParams, shape) for every stored weight of a layer.
    static func weights(of l: CoreML_Specification_NeuralNetworkLayer) -> [(String, String, CoreML_Specification_WeightParams, [Int])] {
        switch l.layer {
        case .convolution(let c)?:
            let k = c.kernelSize.map { Int($0) }
            let g = max(Int(c.nGroups), 1)
            let shape = c.isDeconvolution ? [Int(c.kernelChannels), Int(c.outputChannels) / g] + k : [Int(c.outputChannels), Int(c.kernelChannels)] + k
            return [("convolution", "weights", c.weights, shape)] + (c.hasBias_p ? [("convolution", "bias", c.bias, [Int(c.outputChannels)])] : [])
        case .innerProduct(let c)?:
            return [("innerProduct", "weights", c.weights, [Int(c.outputChannels), Int(c.inputChannels)])]
                + (c.hasBias_p ? [("innerProduct", "bias", c.bias, [Int(c.outputChannels)])] : [])
        case .batchnorm(let c)?:
            let n = [Int(c.channels)]
            return [("batchnorm", "gamma", c.gamma, n), ("batchnorm", "beta", c.beta, n), ("batchnorm", "mean", c.mean, n),
                    ("batchnorm", "variance", c.variance, n)]
        default: return []
        }
    }

    func testWriteFilesForCoremltools() throws {
        let models = ((try? FileManager.default.contentsOfDirectory(atPath: CoreMLRoundTripTests.modelDir.path)) ?? [])
            .filter { $0.contains("squeezenet") || $0.contains("shufflenet") }.sorted()
        guard !models.isEmpty else { throw XCTSkip("SKIPPED: light_squeezenet / light_shufflenet missing; run `make testdata`") }
        try? FileManager.default.removeItem(at: Self.outDir)
        try FileManager.default.createDirectory(at: Self.outDir, withIntermediateDirectories: true)
        var written = 0
        for m in models {
            let g = try Shrinkwrap.load(CoreMLRoundTripTests.modelDir.appendingPathComponent(m).path)
            var configs: [(String, CompressionRule)] = []
            func rule(_ mode: String, _ bits: Int, _ gran: Granularity? = nil, symmetric: Bool = false) throws -> CompressionRule {
                var o = CodecOptions(); o.bits = bits; o.symmetric = symmetric
                let codec = try WeightCodecs.codec(named: mode)
                o.granularity = gran ?? WeightCodecs.defaultGranularity(codec)
                return CompressionRule(mode: mode, options: o)
            }
            configs.append(("fp16", try rule("fp16", 16)))
            for b in [8, 5, 4, 3, 2, 1] { configs.append(("linear\(b)", try rule("linear", b))) }
            configs.append(("linear4-symmetric", try rule("linear", 4, .perChannel, symmetric: true)))
            configs.append(("linear6-per-tensor", try rule("linear", 6, .perTensor)))
            for b in [8, 4, 2] { configs.append(("linear-lut\(b)", try rule("linear-lut", b))) }
            for b in [7, 4, 2, 1] { configs.append(("kmeans-lut\(b)", try rule("kmeans-lut", b))) }
            if m.contains("shufflenet") { configs = configs.filter { ["fp16", "linear4", "kmeans-lut4"].contains($0.0) } }
            for (tag, r) in configs {
                var q = g
                _ = try CompressWeights.run(&q, plan: CompressionPlan(r), threads: 2)
                let spec = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(q).graph)
                let base = "\(m.replacingOccurrences(of: ".onnx", with: "")).\(tag)"
                try spec.serializedData().write(to: Self.outDir.appendingPathComponent("\(base).mlmodel"))
                let wdir = Self.outDir.appendingPathComponent("\(base).weights")
                try FileManager.default.createDirectory(at: wdir, withIntermediateDirectories: true)
                var manifest: [[String: Any]] = []
                for l in spec.neuralNetwork.layers + spec.neuralNetworkClassifier.layers {
                    for (kind, field, p, shape) in Self.weights(of: l) where !p.rawValue.isEmpty || !p.float16Value.isEmpty {
                        let e = try CoreMLWeights.encoding(p, shape: shape, at: SourceLocation(file: base, place: l.name))
                        let file = "\(manifest.count).npy"
                        try NPY.encode(e.decoded()).write(to: wdir.appendingPathComponent(file))
                        manifest.append(["layer": l.name, "kind": kind, "field": field, "shape": shape, "file": file])
                    }
                }
                XCTAssertFalse(manifest.isEmpty, "\(base): no compressed weights written")
                let json = try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys])
                try json.write(to: wdir.appendingPathComponent("manifest.json"))
                written += 1
            }
        }
        print("wrote \(written) .mlmodel files to \(Self.outDir.path) for Scripts/coreml_crosscheck.py")
    }
}
