import CoreMLSchema
import Foundation
import Shrinkwrap
import ShrinkwrapCompression
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// Model-level Core ML features: updatable models, pipelines, mean-image preprocessing.
final class CoreMLModelLevelTests: XCTestCase {
    /// x [1, 4] → Gemm → Relu → Gemm ('head', updatable) → Softmax → probs.
    func updatableMLP() -> Graph {
        var b = CoreMLLayerExportTests.Builder()
        b.input("x", [1, 4])
        b.weight("w1", [4, 6]); b.weight("b1", [6])
        b.node("Gemm", ["x", "w1", "b1"], ["h"])
        b.node("Relu", ["h"], ["r"])
        b.weight("w2", [6, 3]); b.weight("b2", [3])
        b.g.nodes.append(Node(name: "head", opType: "Gemm", inputs: ["r", "w2", "b2"], outputs: ["logits"]))
        b.node("Softmax", ["logits"], ["probs"], ["axis": .int(1)])
        b.output("probs")
        var g = b.g
        g.metadata.updatableNodes = ["head"]
        var u = CoreML_Specification_NetworkUpdateParameters()
        var loss = CoreML_Specification_LossLayer()
        loss.name = "loss"
        loss.categoricalCrossEntropyLossLayer.input = "probs"
        loss.categoricalCrossEntropyLossLayer.target = "label"
        u.lossLayers = [loss]
        u.optimizer.sgdOptimizer.learningRate.defaultValue = 0.01
        u.optimizer.sgdOptimizer.miniBatchSize.defaultValue = 8
        u.epochs.defaultValue = 12
        u.shuffle.defaultValue = true
        var t = CoreML_Specification_ModelDescription()
        var f = CoreML_Specification_FeatureDescription()
        f.name = "x"
        f.type.multiArrayType.shape = [1, 4]
        f.type.multiArrayType.dataType = .float32
        var label = CoreML_Specification_FeatureDescription()
        label.name = "label"
        label.type.int64Type = .init()
        t.trainingInput = [f, label]
        g.metadata.formatData = [("coreml.updateParams", (try? u.serializedBytes()) ?? []),
                                 ("coreml.trainingInputs", (try? t.serializedBytes()) ?? [])]
        return g
    }

    /// coremltools' RangeDim batch (Samples/linear/linear.mlmodel: x [1…1024, 1]) is a free batch axis.
    func testFlexibleBatchOfACoremltoolsModelIsFree() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let g = try CoreMLImporter.importModel(at: root.appendingPathComponent("Samples/linear/linear.mlmodel"))
        XCTAssertEqual(g.inputs.first?.shape, [.symbolic("batch"), .fixed(1)])
        let x = Tensor([-1, 0, 0.5, 1, 10], shape: [5, 1])
        let y = try XCTUnwrap(try Interpreter(graph: g).run(["x": x])[g.outputs[0].name])
        XCTAssertEqual(y.shape, [5, 1])
        for (got, want) in zip(y.floats ?? [], [-3, -1, 0, 1, 19] as [Float]) { XCTAssertEqual(got, want, accuracy: 0.01) }
    }

    func testFlexibleAxesFromRangesAndEnumeratedShapes() {
        var a = CoreML_Specification_ArrayFeatureType()
        a.shape = [1, 3, 8]
        XCTAssertNil(ModelReader.flexibleAxes(a))
        var range = CoreML_Specification_ArrayFeatureType.ShapeRange()
        range.sizeRanges = [(1, -1), (3, 3), (8, 16)].map { (lo: UInt64, hi: Int64) in
            var r = CoreML_Specification_SizeRange(); r.lowerBound = lo; r.upperBound = hi; return r
        }
        a.shapeRange = range
        XCTAssertEqual(ModelReader.flexibleAxes(a), [0, 2])
        range.sizeRanges.removeLast()
        a.shapeRange = range
        XCTAssertNil(ModelReader.flexibleAxes(a), "ranges of another rank than the default shape are ignored")
        var shapes = CoreML_Specification_ArrayFeatureType.EnumeratedShapes()
        shapes.shapes = [[1, 3, 8], [4, 3, 8]].map { (dims: [Int64]) in
            var s = CoreML_Specification_ArrayFeatureType.Shape(); s.shape = dims; return s
        }
        a.enumeratedShapes = shapes
        XCTAssertEqual(ModelReader.flexibleAxes(a), [0])
    }

    func testUpdatableModelRoundTripsAndStaysFloat32() throws {
        let g = updatableMLP()
        let spec = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(g).graph)
        XCTAssertTrue(spec.isUpdatable)
        XCTAssertGreaterThanOrEqual(spec.specificationVersion, 4)
        let head = try XCTUnwrap(spec.neuralNetwork.layers.first { $0.name == "head" })
        XCTAssertTrue(head.isUpdatable)
        XCTAssertTrue(head.innerProduct.weights.isUpdatable)
        XCTAssertTrue(head.innerProduct.bias.isUpdatable)
        XCTAssertFalse(spec.neuralNetwork.layers.first { $0.name != "head" && $0.innerProduct.inputChannels > 0 }?.isUpdatable ?? true)
        XCTAssertEqual(spec.neuralNetwork.updateParams.epochs.defaultValue, 12)
        XCTAssertEqual(spec.neuralNetwork.updateParams.lossLayers.first?.categoricalCrossEntropyLossLayer.input, "probs")
        XCTAssertEqual(spec.description_p.trainingInput.map(\.name), ["x", "label"])

        // Back in: the flags, the update parameters and the training inputs survive, byte for byte on a second export.
        let back = try CoreMLImporter.importModel(data: try spec.serializedData(), file: "updatable.mlmodel")
        XCTAssertEqual(back.metadata.updatableNodes, ["head"])
        XCTAssertEqual(back.metadata.formatData("coreml.updateParams"), g.metadata.formatData("coreml.updateParams"))
        let again = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(back).graph)
        XCTAssertEqual(again.neuralNetwork.updateParams, spec.neuralNetwork.updateParams)
        XCTAssertEqual(again.description_p.trainingInput, spec.description_p.trainingInput)
        XCTAssertEqual(again.neuralNetwork.layers.filter(\.isUpdatable).count, 1)

        // Compressing skips the updatable layer's weights, says why, and the export keeps them float32.
        var q = back
        let log = try CompressWeights.run(&q, plan: CompressionPlan(CompressionRule(mode: "linear", options: CodecOptions()), minElements: 1),
                                          threads: 1)
        let skipped = log.entries.filter { $0.skipped?.contains("updatable layer 'head'") == true }.map(\.name)
        XCTAssertEqual(skipped, ["head_bias", "head_weights"], "the head's weight and bias are skipped with the reason")
        XCTAssertTrue(log.entries.contains { $0.compressed }, "the other layer is compressed")
        let qs = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(q).graph)
        let qhead = try XCTUnwrap(qs.neuralNetwork.layers.first { $0.name == "head" })
        XCTAssertFalse(qhead.innerProduct.weights.floatValue.isEmpty)
        XCTAssertTrue(qs.neuralNetwork.layers.contains { !$0.innerProduct.weights.rawValue.isEmpty })
        let x = ["x": Tensor([0.5, -1, 2, 0.25], shape: [1, 4])]
        let want = try Interpreter(graph: g).run(x), got = try Interpreter(graph: back).run(x)
        XCTAssertLessThanOrEqual(CoreMLRoundTripTests.relativeError(got, want), 1e-6)
    }

    /// Even a name rule does not compress an updatable layer; a compressed weight put there by
    /// other means is refused by the exporter, by name.
    func testCompressedUpdatableWeightIsRefused() throws {
        var g = updatableMLP()
        let rule = CompressionPlan(global: nil, byName: ["w2": .compress(CompressionRule(mode: "linear", options: CodecOptions()))], minElements: 1)
        var h = g
        _ = try CompressWeights.run(&h, plan: rule, threads: 1)
        XCTAssertEqual(h.constant(named: "w2")?.encoding.isCompressed, false)
        var plain = g
        plain.metadata.updatableNodes = []
        _ = try CompressWeights.run(&plain, plan: rule, threads: 1)
        g.setConstant(try XCTUnwrap(plain.constant(named: "w2")))
        XCTAssertEqual(g.constant(named: "w2")?.encoding.isCompressed, true)
        XCTAssertThrowsError(try CoreMLExporter.exportSpec(try ExportPreparation.prepare(g).graph)) { e in
            XCTAssertTrue("\(e)".contains("'w2'") && "\(e)".contains("updatable"), "\(e)")
        }
    }

    /// A pipeline of two networks (a scaling step, then an inner product) imports as one graph.
    func testPipelineOfNetworksImports() throws {
        func feature(_ name: String, _ n: Int64) -> CoreML_Specification_FeatureDescription {
            var f = CoreML_Specification_FeatureDescription()
            f.name = name
            f.type.multiArrayType.shape = [n]
            f.type.multiArrayType.dataType = .float32
            return f
        }
        var pre = CoreML_Specification_Model()
        pre.specificationVersion = 1
        pre.description_p.input = [feature("x", 3)]
        pre.description_p.output = [feature("scaled", 3)]
        var scale = CoreML_Specification_NeuralNetworkLayer()
        scale.name = "scale"; scale.input = ["x"]; scale.output = ["scaled"]
        scale.activation.linear.alpha = 2; scale.activation.linear.beta = 1
        pre.neuralNetwork.layers = [scale]
        var net = CoreML_Specification_Model()
        net.specificationVersion = 1
        net.description_p.input = [feature("scaled", 3)]
        net.description_p.output = [feature("y", 2)]
        var fc = CoreML_Specification_NeuralNetworkLayer()
        fc.name = "fc"; fc.input = ["scaled"]; fc.output = ["y"]
        fc.innerProduct.inputChannels = 3; fc.innerProduct.outputChannels = 2
        fc.innerProduct.weights.floatValue = [1, 2, 3, -1, 0, 1]
        fc.innerProduct.hasBias_p = true
        fc.innerProduct.bias.floatValue = [0.5, -0.5]
        net.neuralNetwork.layers = [fc]
        var model = CoreML_Specification_Model()
        model.specificationVersion = 1
        model.description_p.input = [feature("x", 3)]
        model.description_p.output = [feature("y", 2)]
        model.pipeline.models = [pre, net]
        model.pipeline.names = ["preprocess", "network"]
        let g = try CoreMLImporter.importModel(data: try model.serializedData(), file: "pipeline.mlmodel")
        let y = try Interpreter(graph: g).run(["x": Tensor([1, 0, -1], shape: [1, 3])])["y"]
        // scaled = [3, 1, -1]; y = [3 + 2 − 3 + 0.5, −3 + 0 − 1 − 0.5]
        XCTAssertEqual(y?.floats, [2.5, -4.5])
        XCTAssertEqual(y?.shape, [1, 2])
        XCTAssertEqual(g.outputs.first?.shape, [.fixed(1), .fixed(2)], "the declared output shape is kept")
    }

    /// meanImage preprocessing subtracts a per-pixel mean from the image.
    func testMeanImagePreprocessing() throws {
        var model = CoreML_Specification_Model()
        model.specificationVersion = 1
        var img = CoreML_Specification_FeatureDescription()
        img.name = "image"
        img.type.imageType.width = 2; img.type.imageType.height = 1; img.type.imageType.colorSpace = .bgr
        var out = CoreML_Specification_FeatureDescription()
        out.name = "y"
        out.type.multiArrayType.shape = [3, 1, 2]
        out.type.multiArrayType.dataType = .float32
        model.description_p.input = [img]
        model.description_p.output = [out]
        var id = CoreML_Specification_NeuralNetworkLayer()
        id.name = "copy"; id.input = ["image"]; id.output = ["y"]
        id.activation.linear.alpha = 1
        model.neuralNetwork.layers = [id]
        var p = CoreML_Specification_NeuralNetworkPreprocessing()
        p.featureName = "image"
        p.meanImage.meanImage = [1, 2, 3, 4, 5, 6]
        model.neuralNetwork.preprocessing = [p]
        let g = try CoreMLImporter.importModel(data: try model.serializedData(), file: "mean.mlmodel")
        XCTAssertEqual(g.metadata.imageInputs.first?.color, .bgr)
        let pixels = Tensor([10, 20, 30, 40, 50, 60], shape: [1, 3, 1, 2])
        let y = try Interpreter(graph: g).run(["image": pixels])["y"]
        XCTAssertEqual(y?.floats, [9, 18, 27, 36, 45, 54])
        // A mean image of the wrong size is a clear error.
        model.neuralNetwork.preprocessing[0].meanImage.meanImage = [1, 2, 3]
        XCTAssertThrowsError(try CoreMLImporter.importModel(data: try model.serializedData(), file: "mean.mlmodel")) { e in
            XCTAssertTrue("\(e)".contains("mean image has 3 values"), "\(e)")
        }
    }

    /// Metadata properties become the userDefined map; its entries are written
    /// in key order, so the bytes do not follow Swift's per-instance dictionary
    /// order (the digits demo's .mlmodel had two byte forms from run to run).
    func testUserDefinedMetadataIsWrittenInKeyOrder() throws {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: [.fixed(1), .fixed(3)])]
        g.nodes = [Node(name: "r", opType: "Relu", inputs: ["x"], outputs: ["y"])]
        func key(_ k: Int) -> String { k < 10 ? "key0\(k)" : "key\(k)" }  // five bytes each
        g.metadata.properties = (0..<16).map { (key: key(($0 * 7) % 16), value: "value \($0)") }
        let prepared = try ExportPreparation.prepare(g).graph
        let files = try (0..<8).map { _ in try CoreMLExporter.export(prepared) }
        XCTAssertEqual(Set(files).count, 1, "the same graph gave \(Set(files).count) different files")
        let keys = try CoreML_Specification_Model(serializedBytes: files[0]).description_p.metadata.userDefined.keys.sorted()
        XCTAssertEqual(keys, (0..<16).map(key))
        // Key order on the wire: each entry is field 100 of Metadata, the key its field 1.
        let text = String(decoding: files[0], as: UTF8.self)
        let positions = keys.compactMap { text.range(of: "\u{0A}\u{05}\($0)")?.lowerBound }
        XCTAssertEqual(positions.count, 16)
        XCTAssertEqual(positions, positions.sorted(), "userDefined entries are not in key order")
    }

    /// HardSwish has no NeuralNetwork layer: the exporter's lowering writes it as
    /// x · HardSigmoid(x; 1/6, 0.5), which computes the same.
    func testHardSwishIsLowered() throws {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(2), .fixed(2), .fixed(3)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        g.nodes = [Node(name: "hs", opType: "HardSwish", inputs: ["x"], outputs: ["y"])]
        XCTAssertTrue(CoreMLExporter.supportedOps.contains("HardSwish"))
        let prepared = try ExportPreparation.prepare(g).graph
        let bytes = try CoreMLExporter.export(prepared)
        let back = try CoreMLImporter.importModel(data: bytes, file: "hs.mlmodel")
        XCTAssertFalse(back.nodes.contains { $0.opType == "HardSwish" })
        let x = Tensor((0..<12).map { Float($0) - 5.5 }, shape: [1, 2, 2, 3])
        let want = try Interpreter(graph: g).run(["x": x])["y"]?.floats ?? []
        let got = try Interpreter(graph: back).run(["x": x]).values.first?.floats ?? []
        XCTAssertEqual(got.count, 12)
        for (a, b) in zip(got, want) { XCTAssertEqual(a, b, accuracy: 1e-6) }
    }
}
