import Foundation
import Shrinkwrap
import ShrinkwrapIR
import ShrinkwrapReport
import ShrinkwrapRuntime
import XCTest

/// The sweep engine end to end on light_squeezenet (made by `make testdata`):
/// variants in order, sizes, agreement, per-layer numbers, skipped weights.
final class SweepTests: XCTestCase {
    static let model = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".testdata/models/light_squeezenet.onnx")

    func inputs(_ g: Graph, count: Int) throws -> [[String: Tensor]] {
        try (0..<count).map { try ModelRunner.syntheticInputs(graph: g, seed: UInt64(100 + $0)) }
    }

    func testAgreementOfAModelWithItselfIsPerfect() throws {
        guard FileManager.default.fileExists(atPath: Self.model.path) else { throw XCTSkip("SKIPPED: no light_squeezenet; run `make testdata`") }
        let g = try Models.load(Self.model.path)
        let runner = try AgreementRunner(reference: g, inputs: try inputs(g, count: 3), layerSamples: 2)
        let (outputs, layers) = try runner.compare(g)
        XCTAssertEqual(outputs.count, 1)
        let o = try XCTUnwrap(outputs.first)
        XCTAssertEqual(o.top1Agreement, 100)
        XCTAssertEqual(o.top5Agreement, 100)
        XCTAssertNil(o.snrDB, "identical outputs have infinite SNR")
        XCTAssertEqual(o.maxAbsError, 0)
        XCTAssertEqual(o.classes, 1000)
        XCTAssertFalse(layers.isEmpty)
        XCTAssertTrue(layers.allSatisfy { $0.weightSQNR == nil && $0.outputSQNR == nil })
    }

    func testSweepVariantsSizesAndLayers() throws {
        guard FileManager.default.fileExists(atPath: Self.model.path) else { throw XCTSkip("SKIPPED: no light_squeezenet; run `make testdata`") }
        let g = try Models.load(Self.model.path)
        var o = SweepOptions()
        o.modes = ["fp16", "linear", "kmeans-lut"]
        o.bits = [8, 2]
        o.layerSamples = 2
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sweep-test-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        o.outDir = dir.path
        o.dumpWeightsDir = dir.appendingPathComponent("weights").path
        let data = DataInfo(description: "synthetic", count: 4, sha256: "-", random: true)
        let report = try Sweep.run(model: Self.model.path, inputs: try inputs(g, count: 4), data: data, options: o)
        XCTAssertEqual(report.variants.map { "\($0.mode) \($0.bits)" }, ["fp16 16", "linear 8", "linear 2", "kmeans-lut 8", "kmeans-lut 2"])
        let fp16 = report.variants[0], lin8 = report.variants[1], lin2 = report.variants[2], km2 = report.variants[4]
        // Sizes: fp16 halves the weights; 2 bits are smaller than 8.
        XCTAssertEqual(fp16.reductionPercent(vs: report.reference), 50, accuracy: 1.5)
        XCTAssertGreaterThan(lin2.reductionPercent(vs: report.reference), lin8.reductionPercent(vs: report.reference))
        XCTAssertLessThan(lin2.bitsPerWeight, 3)
        XCTAssertNotNil(fp16.file)
        XCTAssertTrue(FileManager.default.fileExists(atPath: fp16.file ?? ""))
        XCTAssertNotNil(fp16.size.fileBytes)
        // Agreement: fp16 and 8 bits keep the predictions of these inputs; per-layer numbers are there.
        XCTAssertEqual(fp16.outputs.first?.top1Agreement, 100)
        XCTAssertGreaterThan(lin8.outputs.first?.meanCosine ?? 0, 0.999)
        XCTAssertLessThan(km2.outputs.first?.meanCosine ?? 1, lin8.outputs.first?.meanCosine ?? 0)
        let conv = try XCTUnwrap(lin2.layers.first { $0.weightSQNR != nil }, "a compressed layer has a weight SQNR")
        XCTAssertNotNil(conv.weightSQNR)
        XCTAssertNotNil(conv.outputSQNR)
        XCTAssertTrue(lin2.skipped.contains { $0.reason.contains("bias") }, "biases are listed with their reason")
        // Weights dumped for the independent re-run.
        let manifest = dir.appendingPathComponent("weights/linear-2/manifest.json")
        XCTAssertTrue(FileManager.default.fileExists(atPath: manifest.path))
        // Deterministic: the same run gives the same JSON.
        o.outDir = nil; o.dumpWeightsDir = nil
        let again = try Sweep.run(model: Self.model.path, inputs: try inputs(g, count: 4), data: data, options: o)
        var first = report
        for i in first.variants.indices { first.variants[i].file = nil; first.variants[i].size.fileBytes = nil }
        XCTAssertEqual(SweepRenderer.json(again), SweepRenderer.json(first))
        // One variant at a time on one thread, or side by side on three: the same report.
        o.threads = 1
        let sequential = try Sweep.run(model: Self.model.path, inputs: try inputs(g, count: 4), data: data, options: o)
        o.threads = 3
        let sideBySide = try Sweep.run(model: Self.model.path, inputs: try inputs(g, count: 4), data: data, options: o)
        XCTAssertEqual(SweepRenderer.json(sequential), SweepRenderer.json(first))
        XCTAssertEqual(SweepRenderer.json(sideBySide), SweepRenderer.json(first))
    }
}
