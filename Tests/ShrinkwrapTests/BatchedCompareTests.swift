import Foundation
import Shrinkwrap
import ShrinkwrapCompression
import ShrinkwrapIR
import ShrinkwrapReport
import ShrinkwrapRuntime
import XCTest

/// Comparing with several inputs per run: the same numbers as one input per run, batching only where
/// the model has a free batch axis and the probe shows it changes no bit.
final class BatchedCompareTests: XCTestCase {
    /// x [N, 24] → MatMul 24×40 → Relu → MatMul 40×10 → Softmax: a classifier with a free batch axis.
    static func classifier(batchAxis: Dim = .symbolic("N")) -> Graph {
        var g = Graph(name: "mlp")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [batchAxis, .fixed(24)])]
        g.setConstant(Constant(name: "w1", tensor: Tensor((0..<(24 * 40)).map { Float(($0 * 7919) % 211) / 211 - 0.5 }, shape: [24, 40])))
        g.setConstant(Constant(name: "w2", tensor: Tensor((0..<(40 * 10)).map { Float(($0 * 104_729) % 97) / 97 - 0.5 }, shape: [40, 10])))
        g.nodes = [Node(name: "fc1", opType: "MatMul", inputs: ["x", "w1"], outputs: ["h"]),
                   Node(name: "relu", opType: "Relu", inputs: ["h"], outputs: ["a"]),
                   Node(name: "fc2", opType: "MatMul", inputs: ["a", "w2"], outputs: ["z"]),
                   Node(name: "soft", opType: "Softmax", inputs: ["z"], outputs: ["p"], attributes: ["axis": .int(-1)])]
        g.outputs = [ValueInfo(name: "p", dtype: .float32, shape: nil)]
        return g
    }

    static func samples(_ n: Int) -> [[String: Tensor]] {
        (0..<n).map { k in ["x": Tensor((0..<24).map { Float(sin(Double(k * 24 + $0) * 0.37)) * 2 }, shape: [1, 24])] }
    }

    func testBatchedNumbersAreTheUnbatchedOnes() throws {
        let g = Self.classifier()
        var candidates: [Graph] = []
        for (mode, bits) in [("linear", 4), ("kmeans-lut", 2), ("linear", 1)] {
            var c = g
            var s = CompressionSettings()
            s.mode = mode
            s.bits = bits
            _ = try Models.compress(&c, plan: try s.plan(), threads: 1)
            candidates.append(c)
        }
        let inputs = Self.samples(37)
        let one = try AgreementRunner(reference: g, inputs: inputs, layerSamples: 2, threads: 1, batch: 1)
        let batched = try AgreementRunner(reference: g, inputs: inputs, layerSamples: 2, threads: 2, batch: 8)
        XCTAssertEqual(one.batch, 1)
        XCTAssertEqual(batched.batch, 8, "a free batch axis and bit-identical probe: batching is on")
        for c in candidates {
            let a = try one.compare(c), b = try batched.compare(c, threads: 1)
            XCTAssertEqual(a.outputs, b.outputs)
            XCTAssertEqual(a.layers, b.layers)
            XCTAssertLessThan(a.outputs.first?.top1Agreement ?? 100, 100.0001)
        }
        // The sweep's report is the same with and without batching.
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("batched-\(getpid()).onnx")
        defer { try? FileManager.default.removeItem(at: url) }
        let onnx = try XCTUnwrap(ModelFormats.writer(forExtension: "onnx")?.exporter)
        try AtomicFile.write(try onnx(g, ExportOptions()), to: url)
        var o = SweepOptions()
        o.modes = ["linear", "kmeans-lut"]
        o.bits = [4, 2]
        o.layerSamples = 2
        let data = DataInfo(description: "synthetic", count: inputs.count, sha256: "-", random: true)
        o.batch = 1
        let plain = try Sweep.run(model: url.path, inputs: inputs, data: data, options: o)
        o.batch = 8
        let fast = try Sweep.run(model: url.path, inputs: inputs, data: data, options: o)
        XCTAssertEqual(SweepRenderer.json(fast), SweepRenderer.json(plain))
    }

    func testFixedBatchAxisRunsOneAtATime() throws {
        let runner = try AgreementRunner(reference: Self.classifier(batchAxis: .fixed(1)), inputs: Self.samples(6), layerSamples: 1, batch: 4)
        XCTAssertEqual(runner.batch, 1)
    }
}
