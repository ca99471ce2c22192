import Foundation
@testable import Shrinkwrap
import ShrinkwrapCompression
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapReport
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// `Tune.run` end to end on a small classifier whose hidden layer is much more sensitive than its
/// output layer: the target is kept, the plan reproduces the bytes, the result does not depend on
/// the thread count, and an unreachable target says so.
final class TuneTests: XCTestCase {
    /// x [1, 32] → MatMul 32×64 → Relu → MatMul 64×10 → Softmax.
    func classifier() -> (Graph, InputSet, InputSet) {
        var rng = SplitMix(seed: 21)
        func floats(_ n: Int, _ s: Double) -> [Float] { (0..<n).map { _ in Float(rng.normal() * s) } }
        let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(32)])],
                      outputs: [ValueInfo(name: "p", dtype: .float32, shape: nil)],
                      nodes: [Node(name: "fc1", opType: "MatMul", inputs: ["x", "w1"], outputs: ["h"]),
                              Node(name: "relu", opType: "Relu", inputs: ["h"], outputs: ["r"]),
                              Node(name: "fc2", opType: "MatMul", inputs: ["r", "w2"], outputs: ["l"]),
                              Node(name: "softmax", opType: "Softmax", inputs: ["l"], outputs: ["p"], attributes: ["axis": .int(-1)])],
                      constants: [Constant(name: "w1", tensor: Tensor(floats(32 * 64, 0.3), shape: [32, 64])),
                                  Constant(name: "w2", tensor: Tensor(floats(64 * 10, 0.3), shape: [64, 10]))])
        func set(_ n: Int, _ tag: String) -> InputSet {
            InputSet(samples: (0..<n).map { _ in ["x": Tensor(floats(32, 1), shape: [1, 32])] }, sources: (0..<n).map { "\(tag) \($0)" },
                     description: "\(n) synthetic \(tag) inputs", random: false)
        }
        return (g, set(80, "cal"), set(80, "val"))
    }

    func options(_ threads: Int) -> TuneOptions {
        var o = TuneOptions()
        o.minAgreement = 95
        o.minElements = 0
        o.threads = threads
        o.sensitivityInputs = 40
        o.candidates = ["fp16", "linear:8", "linear:4", "linear:2", "kmeans-lut:3", "kmeans-lut:1"].map { try! TuneCandidate(parsing: $0) }
        return o
    }

    func testTuneKeepsTheTargetReproducesAndIsDeterministic() throws {
        let (g, cal, val) = classifier()
        let dir = try makeTempDir("tune")
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = dir.appendingPathComponent("model.onnx").path
        _ = try Models.save(g, to: model, inputs: [])
        let two = try Tune.run(model: model, graph: g, validation: val, calibration: cal, options: options(2))
        let one = try Tune.run(model: model, graph: g, validation: val, calibration: cal, options: options(1))
        XCTAssertEqual(two.graph, one.graph)
        XCTAssertEqual(two.report, one.report)
        XCTAssertEqual(two.plan.json, one.plan.json)
        XCTAssertTrue(two.met, "\(two.report.outputs)")
        XCTAssertGreaterThanOrEqual(two.report.outputs.first?.top1Agreement ?? 0, 95)
        XCTAssertLessThan(two.report.result.weightBytes, two.report.reference.weightBytes / 3, "under ~11 bits per weight on average")
        XCTAssertEqual(two.report.weights.map(\.name), ["w1", "w2"])
        XCTAssertTrue(two.report.curve.contains { $0.chosen })
        XCTAssertEqual(two.report.calibration?.sha256, cal.sha256)
        XCTAssertEqual(two.plan.calibrationSHA256, cal.sha256)
        // The plan, read back from its file, gives the same bytes.
        let planFile = dir.appendingPathComponent("plan.json")
        try Data(two.plan.json.utf8).write(to: planFile)
        let plan = try CompressionPlan.load(planFile.path)
        var again = g
        let stats = try Calibration.collect(g, inputs: cal.samples, secondMoment: true, threads: 1)
        _ = try Models.compress(&again, plan: plan, threads: 1, statistics: stats)
        XCTAssertEqual(again, two.graph)
        for f in ReportFormat.allCases { XCTAssertFalse(TuneRenderer.render(two.report, as: f).isEmpty) }
        XCTAssertTrue(TuneRenderer.render(two.report, as: .html).contains("<svg"))
    }

    func testUnreachableTargetsAreNotMet() throws {
        let (g, cal, val) = classifier()
        let dir = try makeTempDir("tune-unmet")
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = dir.appendingPathComponent("model.onnx").path
        _ = try Models.save(g, to: model, inputs: [])
        var o = options(1)
        o.maxBitsPerWeight = 0.5
        let capped = try Tune.run(model: model, graph: g, validation: val, calibration: cal, options: o)
        XCTAssertFalse(capped.met)
        // Without calibration data the validation data serves, and the report says so.
        let same = try Tune.run(model: model, graph: g, validation: val, calibration: nil, options: options(1))
        XCTAssertNil(same.report.calibration)
        XCTAssertTrue(TuneRenderer.render(same.report, as: .markdown).contains(TuneReport.sameDataWarning))
        // A model without a score vector has no top-1 target: refused before any work.
        let regression = Graph(inputs: g.inputs, outputs: [ValueInfo(name: "r", dtype: .float32, shape: nil)],
                               nodes: [Node(name: "fc", opType: "MatMul", inputs: ["x", "w3"], outputs: ["r"])],
                               constants: [Constant(name: "w3", tensor: Tensor([Float](repeating: 0.1, count: 32), shape: [32, 1]))])
        XCTAssertTrue(errorText { _ = try Tune.run(model: model, graph: regression, validation: val, calibration: cal, options: o) }
            .contains("needs a first output that is a score vector"))
        // What the output format cannot hold whatever the weights is one error, before any work.
        var free = g
        free.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .symbolic("n")])]
        var toCoreML = options(1)
        toCoreML.format = ModelFormats.writer(forExtension: "mlmodel")
        let refused = errorText { _ = try Tune.run(model: model, graph: free, validation: val, calibration: cal, options: toCoreML) }
        XCTAssertTrue(refused.hasPrefix(".mlmodel cannot hold this model (1 conflict): input 'x'"), refused)
        XCTAssertThrowsError(try TuneCandidate(parsing: "linear:x"))
        XCTAssertEqual(try TuneCandidate(parsing: "kmeans-lut:4:per-grouped-channel:16").summary, "kmeans-lut 4-bit per-grouped-channel:16 gptq")
        XCTAssertEqual(try TuneCandidate(parsing: "linear:4:per-block:32:weighted").summary, "linear 4-bit per-block:32 asymmetric weighted")
        XCTAssertEqual(try TuneCandidate(parsing: "fp16").summary, "fp16 per-tensor")
    }

    func testSweepMeasuresDataAwareVariantsNextToNearest() throws {
        let (g, cal, val) = classifier()
        let dir = try makeTempDir("sweep-methods")
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = dir.appendingPathComponent("model.onnx").path
        _ = try Models.save(g, to: model, inputs: [])
        var o = SweepOptions()
        o.modes = ["fp16", "linear"]
        o.bits = [2]
        o.minElements = 0
        o.methods = [.nearest, .gptq]
        XCTAssertThrowsError(try Sweep.variants(o)) { XCTAssertTrue("\($0)".contains("need --calibration")) }
        o.calibration = cal.samples
        let data = DataInfo(description: val.description, count: val.samples.count, sha256: val.sha256, random: false)
        let report = try Sweep.run(model: model, inputs: val.samples, data: data, options: o)
        XCTAssertEqual(report.variants.map(\.series), ["fp16", "linear", "linear gptq"])
        let nearest = report.variants[1], gptq = report.variants[2]
        XCTAssertEqual(nearest.size.weightBytes, gptq.size.weightBytes)
        XCTAssertGreaterThan(gptq.outputs.first?.snrDB ?? 0, nearest.outputs.first?.snrDB ?? 0)
        XCTAssertEqual(report.options["methods"], "nearest,gptq")
        XCTAssertTrue(SweepRenderer.markdown(report).contains("linear gptq match %"))
    }

    /// Folded BatchNormalizations and bias correction: the plan, applied to the model as given, still
    /// gives tune's bytes (statistics come from the model as given, as convert computes them).
    func testFoldedAndBiasCorrectedPlansReproduce() throws {
        var rng = SplitMix(seed: 33)
        func floats(_ n: Int, _ s: Double, _ offset: Double = 0) -> [Float] { (0..<n).map { _ in Float(offset + rng.normal() * s) } }
        let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3), .fixed(8), .fixed(8)])],
                      outputs: [ValueInfo(name: "p", dtype: .float32, shape: nil)],
                      nodes: [Node(name: "conv", opType: "Conv", inputs: ["x", "w"], outputs: ["c"], attributes: ["pads": .ints([1, 1, 1, 1])]),
                              Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "gamma", "beta", "mean", "var"], outputs: ["b"]),
                              Node(name: "relu", opType: "Relu", inputs: ["b"], outputs: ["r"]),
                              Node(name: "pool", opType: "GlobalAveragePool", inputs: ["r"], outputs: ["q"]),
                              Node(name: "flat", opType: "Flatten", inputs: ["q"], outputs: ["f"]),
                              Node(name: "fc", opType: "MatMul", inputs: ["f", "w2"], outputs: ["l"]),
                              Node(name: "softmax", opType: "Softmax", inputs: ["l"], outputs: ["p"])],
                      constants: [Constant(name: "w", tensor: Tensor(floats(16 * 27, 0.3), shape: [16, 3, 3, 3])),
                                  Constant(name: "gamma", tensor: Tensor(floats(16, 0.5, 1), shape: [16])),
                                  Constant(name: "beta", tensor: Tensor(floats(16, 0.2), shape: [16])),
                                  Constant(name: "mean", tensor: Tensor(floats(16, 0.2), shape: [16])),
                                  Constant(name: "var", tensor: Tensor(floats(16, 0.1, 1), shape: [16])),
                                  Constant(name: "w2", tensor: Tensor(floats(160, 0.5), shape: [16, 10]))])
        func set(_ n: Int) -> InputSet {
            InputSet(samples: (0..<n).map { _ in ["x": Tensor(floats(192, 1), shape: [1, 3, 8, 8])] }, sources: (0..<n).map { "\($0)" },
                     description: "synthetic", random: false)
        }
        let cal = set(40), val = set(40)
        let dir = try makeTempDir("tune-bn")
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = dir.appendingPathComponent("model.onnx").path
        _ = try Models.save(g, to: model, inputs: [])
        var o = options(2)
        o.biasCorrection = true
        o.candidates = ["linear:4", "linear:2", "kmeans-lut:2"].map { try! TuneCandidate(parsing: $0) }
        let tuned = try Tune.run(model: model, graph: g, validation: val, calibration: cal, options: o)
        XCTAssertTrue(tuned.plan.foldBatchNorm && tuned.plan.biasCorrection)
        XCTAssertFalse(tuned.graph.nodes.contains { $0.opType == "BatchNormalization" })
        var again = g
        let stats = try Calibration.collect(g, inputs: cal.samples, secondMoment: true, threads: 1)
        _ = try Models.compress(&again, plan: try CompressionPlan.load({
            let f = dir.appendingPathComponent("plan.json")
            try Data(tuned.plan.json.utf8).write(to: f)
            return f.path
        }()), threads: 1, statistics: stats)
        XCTAssertEqual(again, tuned.graph)
    }

    func testTheSearchGallopsThenHalves() throws {
        var probed: [Int] = []
        func run(_ count: Int, passUpTo last: Int) throws -> Int? {
            probed = []
            return try Tune.lastPassing(count) { probed.append($0); return $0 <= last }
        }
        XCTAssertEqual(try run(100, passUpTo: 37), 37)
        XCTAssertEqual(Array(probed.prefix(7)), [0, 1, 3, 7, 15, 31, 63], "galloping")
        XCTAssertLessThan(probed.count, 14)
        XCTAssertEqual(try run(100, passUpTo: 99), 99)
        XCTAssertNil(try run(100, passUpTo: -1))
        XCTAssertEqual(try run(1, passUpTo: 0), 0)
        // Not monotone: the first failure met stops the gallop (a later pass beyond it is not taken).
        XCTAssertEqual(try Tune.lastPassing(20) { $0 != 3 }, 2)
    }
}
