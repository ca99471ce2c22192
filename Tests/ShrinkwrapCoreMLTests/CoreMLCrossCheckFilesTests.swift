import CoreMLSchema
import Foundation
import Shrinkwrap
import ShrinkwrapData
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

    /// One stored weight of a layer: where it is, its Core ML shape, and its output-channel axis.
    struct StoredWeight {
        var kind: String, field: String, params: CoreML_Specification_WeightParams, shape: [Int], axis = 0
        /// Index into a repeated field (bidirectional LSTM weight sets).
        var index: Int? = nil
    }

    /// Every stored weight of a layer.
    static func weights(of l: CoreML_Specification_NeuralNetworkLayer) -> [StoredWeight] {
        func lstm(_ kind: String, _ p: CoreML_Specification_LSTMWeightParams, i: Int?, inSize: Int, h: Int) -> [StoredWeight] {
            let m: [(String, CoreML_Specification_WeightParams, [Int])] = [
                ("inputGateWeightMatrix", p.inputGateWeightMatrix, [h, inSize]), ("forgetGateWeightMatrix", p.forgetGateWeightMatrix, [h, inSize]),
                ("blockInputWeightMatrix", p.blockInputWeightMatrix, [h, inSize]), ("outputGateWeightMatrix", p.outputGateWeightMatrix, [h, inSize]),
                ("inputGateRecursionMatrix", p.inputGateRecursionMatrix, [h, h]), ("forgetGateRecursionMatrix", p.forgetGateRecursionMatrix, [h, h]),
                ("blockInputRecursionMatrix", p.blockInputRecursionMatrix, [h, h]), ("outputGateRecursionMatrix", p.outputGateRecursionMatrix, [h, h]),
            ]
            return m.map { StoredWeight(kind: kind, field: $0.0, params: $0.1, shape: $0.2, index: i) }
        }
        switch l.layer {
        case .convolution(let c)?:
            let k = c.kernelSize.map { Int($0) }
            let g = max(Int(c.nGroups), 1)
            let shape = c.isDeconvolution ? [Int(c.kernelChannels), Int(c.outputChannels) / g] + k : [Int(c.outputChannels), Int(c.kernelChannels)] + k
            return [StoredWeight(kind: "convolution", field: "weights", params: c.weights, shape: shape, axis: c.isDeconvolution ? 1 : 0)]
                + (c.hasBias_p ? [StoredWeight(kind: "convolution", field: "bias", params: c.bias, shape: [Int(c.outputChannels)])] : [])
        case .embeddingNd(let e)?:
            return [StoredWeight(kind: "embeddingND", field: "weights", params: e.weights, shape: [Int(e.embeddingSize), Int(e.vocabSize)])]
        case .uniDirectionalLstm(let u)?:
            return lstm("uniDirectionalLSTM", u.weightParams, i: nil, inSize: Int(u.inputVectorSize), h: Int(u.outputVectorSize))
        case .biDirectionalLstm(let u)?:
            return u.weightParams.enumerated().flatMap { lstm("biDirectionalLSTM", $1, i: $0, inSize: Int(u.inputVectorSize), h: Int(u.outputVectorSize)) }
        case .gru(let q)?:
            let (i, h) = (Int(q.inputVectorSize), Int(q.outputVectorSize))
            return [("updateGateWeightMatrix", q.updateGateWeightMatrix, [h, i]), ("resetGateWeightMatrix", q.resetGateWeightMatrix, [h, i]),
                    ("outputGateWeightMatrix", q.outputGateWeightMatrix, [h, i]), ("updateGateRecursionMatrix", q.updateGateRecursionMatrix, [h, h]),
                    ("resetGateRecursionMatrix", q.resetGateRecursionMatrix, [h, h]), ("outputGateRecursionMatrix", q.outputGateRecursionMatrix, [h, h])]
                .map { StoredWeight(kind: "gru", field: $0.0, params: $0.1, shape: $0.2) }
        case .innerProduct(let c)?:
            return [StoredWeight(kind: "innerProduct", field: "weights", params: c.weights, shape: [Int(c.outputChannels), Int(c.inputChannels)])]
                + (c.hasBias_p ? [StoredWeight(kind: "innerProduct", field: "bias", params: c.bias, shape: [Int(c.outputChannels)])] : [])
        case .batchnorm(let c)?:
            let n = [Int(c.channels)]
            return [("gamma", c.gamma), ("beta", c.beta), ("mean", c.mean), ("variance", c.variance)]
                .map { StoredWeight(kind: "batchnorm", field: $0.0, params: $0.1, shape: n) }
        default: return []
        }
    }

    /// Writes `spec` as `base`.mlmodel with our decoding of every compressed weight beside it.
    static func write(_ spec: CoreML_Specification_Model, base: String) throws {
        try spec.serializedData().write(to: outDir.appendingPathComponent("\(base).mlmodel"))
        let wdir = outDir.appendingPathComponent("\(base).weights")
        try FileManager.default.createDirectory(at: wdir, withIntermediateDirectories: true)
        var manifest: [[String: Any]] = []
        for l in spec.neuralNetwork.layers + spec.neuralNetworkClassifier.layers {
            for s in weights(of: l) where !s.params.rawValue.isEmpty || !s.params.float16Value.isEmpty {
                let e = try CoreMLWeights.encoding(s.params, shape: s.shape, at: SourceLocation(file: base, place: l.name), axis: s.axis)
                let file = "\(manifest.count).npy"
                try NPY.encode(e.decoded()).write(to: wdir.appendingPathComponent(file))
                var entry: [String: Any] = ["layer": l.name, "kind": s.kind, "field": s.field, "shape": s.shape, "file": file, "axis": s.axis]
                if let i = s.index { entry["index"] = i }
                manifest.append(entry)
            }
        }
        XCTAssertFalse(manifest.isEmpty, "\(base): no compressed weights written")
        let json = try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys])
        try json.write(to: wdir.appendingPathComponent("manifest.json"))
    }

    func testWriteFilesForCoremltools() throws {
        let models = ((try? FileManager.default.contentsOfDirectory(atPath: CoreMLRoundTripTests.modelDir.path)) ?? [])
            .filter { $0.contains("squeezenet") || $0.contains("shufflenet") }.sorted()
        guard !models.isEmpty else { throw XCTSkip("SKIPPED: light_squeezenet / light_shufflenet missing; run `make testdata`") }
        try? FileManager.default.removeItem(at: Self.outDir)
        try FileManager.default.createDirectory(at: Self.outDir, withIntermediateDirectories: true)
        var written = 0
        for m in models {
            let g = try Models.load(CoreMLRoundTripTests.modelDir.appendingPathComponent(m).path)
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
                try Self.write(spec, base: "\(m.replacingOccurrences(of: ".onnx", with: "")).\(tag)")
                written += 1
            }
        }
        // The layers the light models do not have: deconvolution (channels on axis 1), recurrent gate
        // matrices cut from stacked ONNX weights, embeddings.
        var deconv = CoreMLLayerExportTests.Builder()
        deconv.input("x", [1, 4, 5, 5])
        deconv.weight("w", [4, 6, 3, 3]); deconv.weight("b", [6])
        deconv.node("ConvTranspose", ["x", "w", "b"], ["y"], ["strides": .ints([2, 2])])
        deconv.output("y")
        var embed = CoreMLLayerExportTests.Builder()
        embed.input("ids", [1, 5], .int64)
        embed.weight("table", [30, 8])
        embed.node("Gather", ["table", "ids"], ["y"])
        embed.output("y")
        let synthetic: [(String, Graph)] = [
            ("deconv", deconv.g), ("embedding", embed.g),
            ("lstm-bi", CoreMLLayerExportTests.recurrent("LSTM", gates: 4, direction: "bidirectional", hidden: 8).g),
            ("gru", CoreMLLayerExportTests.recurrent("GRU", gates: 3, hidden: 8).g),
        ]
        for (name, g) in synthetic {
            for (tag, mode, bits) in [("fp16", "fp16", 16), ("linear4", "linear", 4), ("kmeans-lut3", "kmeans-lut", 3)] {
                var o = CodecOptions(); o.bits = bits
                o.granularity = WeightCodecs.defaultGranularity(try WeightCodecs.codec(named: mode))
                var q = g
                _ = try CompressWeights.run(&q, plan: CompressionPlan(CompressionRule(mode: mode, options: o), minElements: 1), threads: 1)
                try Self.write(try CoreMLExporter.exportSpec(try ExportPreparation.prepare(q).graph), base: "synthetic-\(name).\(tag)")
                written += 1
            }
        }
        print("wrote \(written) .mlmodel files to \(Self.outDir.path) for Scripts/coreml_crosscheck.py")
    }
}
