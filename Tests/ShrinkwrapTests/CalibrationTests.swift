import Foundation
import Shrinkwrap
import ShrinkwrapCompression
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// Calibration statistics against sums worked out here element by element, the checks on
/// calibration data, and BatchNormalization folding.
final class CalibrationTests: XCTestCase {
    func floats(_ n: Int, _ rng: inout SplitMix, scale: Double = 1) -> [Float] { (0..<n).map { _ in Float(rng.normal() * scale) } }

    /// x [1, 4, 5, 6] → Conv (group 2, 3×3, stride 2, pads 1) → [1, 6, 3, 3] → Flatten → Gemm (transB) → [1, 5] → MatMul → [1, 3].
    func graph(_ rng: inout SplitMix) -> Graph {
        let nodes = [
            Node(name: "conv", opType: "Conv", inputs: ["x", "w_conv"], outputs: ["c"],
                 attributes: ["group": .int(2), "kernel_shape": .ints([3, 3]), "strides": .ints([2, 2]), "pads": .ints([1, 1, 1, 1])]),
            Node(name: "flat", opType: "Flatten", inputs: ["c"], outputs: ["f"]),
            Node(name: "gemm", opType: "Gemm", inputs: ["f", "w_gemm"], outputs: ["h"], attributes: ["transB": .int(1)]),
            Node(name: "mm", opType: "MatMul", inputs: ["h", "w_mm"], outputs: ["y"]),
        ]
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(4), .fixed(5), .fixed(6)])],
                     outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes,
                     constants: [Constant(name: "w_conv", tensor: Tensor(floats(6 * 2 * 9, &rng), shape: [6, 2, 3, 3])),
                                 Constant(name: "w_gemm", tensor: Tensor(floats(5 * 54, &rng, scale: 0.2), shape: [5, 54])),
                                 Constant(name: "w_mm", tensor: Tensor(floats(5 * 3, &rng), shape: [5, 3]))])
    }

    func testStatisticsMatchSumsWorkedOutByHand() throws {
        var rng = SplitMix(seed: 5)
        let g = graph(&rng)
        let inputs = (0..<3).map { _ in ["x": Tensor(floats(120, &rng), shape: [1, 4, 5, 6])] }
        let stats = try Calibration.collect(g, inputs: inputs, secondMoment: true, threads: 2)
        XCTAssertEqual(Set(stats.keys), ["w_conv", "w_gemm", "w_mm"])

        // Conv: per group, the 2·9 patch values at each of the 3×3 output positions (padding reads 0).
        let conv = try XCTUnwrap(stats["w_conv"])
        XCTAssertEqual([conv.rows, conv.columns, conv.groups, conv.count], [6, 18, 2, 27])
        var moment = [Double](repeating: 0, count: 2 * 18 * 18), square = [Double](repeating: 0, count: 36)
        for sample in inputs {
            let x = try XCTUnwrap(sample["x"]?.floats)
            for g in 0..<2 {
                for oh in 0..<3 {
                    for ow in 0..<3 {
                        var patch = [Double]()
                        for c in 0..<2 {
                            for kh in 0..<3 {
                                for kw in 0..<3 {
                                    let ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw
                                    let inside = (0..<5).contains(ih) && (0..<6).contains(iw)
                                    patch.append(inside ? Double(x[((g * 2 + c) * 5 + ih) * 6 + iw]) : 0)
                                }
                            }
                        }
                        for i in 0..<18 {
                            square[g * 18 + i] += patch[i] * patch[i]
                            for j in 0..<18 { moment[(g * 18 + i) * 18 + j] += patch[i] * patch[j] }
                        }
                    }
                }
            }
        }
        for i in 0..<36 { XCTAssertEqual(conv.meanSquare[i], square[i] / 27, accuracy: 1e-9 + 1e-6 * square[i]) }
        let gotMoment = try XCTUnwrap(conv.secondMoment)
        for i in moment.indices { XCTAssertEqual(gotMoment[i], moment[i] / 27, accuracy: 1e-5 * (1 + abs(moment[i]))) }

        // MatMul: the Gemm's outputs, one vector per sample, against the interpreter's own values.
        let interpreter = try Interpreter(graph: g, options: .init(threads: 1, optimize: false))
        var h: [[Double]] = []
        for sample in inputs {
            _ = try interpreter.run(sample) { node, outs in
                if node.name == "gemm", let f = outs.first?.floats { h.append(f.map(Double.init)) }
            }
        }
        let mm = try XCTUnwrap(stats["w_mm"])
        XCTAssertEqual([mm.rows, mm.columns, mm.groups, mm.count], [3, 5, 1, 3])
        for k in 0..<5 {
            XCTAssertEqual(mm.mean[k], h.reduce(0) { $0 + $1[k] } / 3, accuracy: 1e-9)
            XCTAssertEqual(mm.meanSquare[k], h.reduce(0) { $0 + $1[k] * $1[k] } / 3, accuracy: 1e-9)
        }
        XCTAssertEqual(stats["w_gemm"]?.columns, 54)
        // The same statistics with one thread (the sums do not depend on the count).
        XCTAssertEqual(try Calibration.collect(g, inputs: inputs, secondMoment: true, threads: 1), stats)
    }

    func testBadCalibrationDataIsRefusedInOneLine() throws {
        var rng = SplitMix(seed: 9)
        let g = graph(&rng)
        let dir = try makeTempDir("calibration")
        defer { try? FileManager.default.removeItem(at: dir) }
        let empty = dir.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        var bad = floats(120, &rng)
        bad[17] = .nan
        try NPY.encode(Tensor(bad, shape: [1, 4, 5, 6])).write(to: dir.appendingPathComponent("nan.npy"))
        try NPY.encode(Tensor(floats(20, &rng), shape: [1, 4, 5, 1])).write(to: dir.appendingPathComponent("shape.npy"))
        func message(_ specs: [String]) -> String { errorText { _ = try Calibration.load(specs, graph: g, options: DataOptions()) } }
        let nan = message([dir.appendingPathComponent("nan.npy").path])
        XCTAssertTrue(nan.hasPrefix("--calibration ") && nan.contains("nan.npy: input 'x' element 17 is nan"), nan)
        let shape = message([dir.appendingPathComponent("shape.npy").path])
        XCTAssertTrue(shape.hasPrefix("--calibration: ") && shape.contains("shape.npy"), shape)
        XCTAssertTrue(message([empty.path]).hasPrefix("--calibration: "), message([empty.path]))
        for m in [nan, shape, message([empty.path])] { XCTAssertFalse(m.contains("\n"), m) }
        // A data-aware method needs data; data needs a data-aware method; a plan's data must be its own.
        let gptq = CompressionPlan(CompressionRule(mode: "linear", options: CodecOptions(bits: 4, granularity: .perChannel, method: .gptq)))
        XCTAssertTrue(errorText { _ = try Models.calibrate(g, plan: gptq, specs: []) }.contains("need --calibration"))
        let good = dir.appendingPathComponent("good.npy")
        try NPY.encode(Tensor(floats(120, &rng), shape: [1, 4, 5, 6])).write(to: good)
        XCTAssertTrue(errorText { _ = try Models.calibrate(g, plan: CompressionPlan(CompressionRule(mode: "fp16")), specs: [good.path]) }
            .contains("add --method weighted or gptq"))
        var pinned = gptq
        pinned.calibrationSHA256 = String(repeating: "0", count: 64)
        XCTAssertTrue(errorText { _ = try Models.calibrate(g, plan: pinned, specs: [good.path]) }.contains("which would give other bytes"))
        XCTAssertEqual(try Models.calibrate(g, plan: gptq, specs: [good.path]).count, 3)
    }

    func testFoldedBatchNormKeepsTheOutputsAndDropsItsParameters() throws {
        var rng = SplitMix(seed: 13)
        let m = 4
        let g = Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3), .fixed(6), .fixed(6)])],
                      outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)],
                      nodes: [Node(name: "conv", opType: "Conv", inputs: ["x", "w"], outputs: ["c"], attributes: ["pads": .ints([1, 1, 1, 1])]),
                              Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "gamma", "beta", "mean", "var"], outputs: ["b"],
                                   attributes: ["epsilon": .float(1e-3)]),
                              Node(name: "relu", opType: "Relu", inputs: ["b"], outputs: ["y"])],
                      constants: [Constant(name: "w", tensor: Tensor(floats(m * 27, &rng), shape: [m, 3, 3, 3])),
                                  Constant(name: "gamma", tensor: Tensor(floats(m, &rng), shape: [m])),
                                  Constant(name: "beta", tensor: Tensor(floats(m, &rng), shape: [m])),
                                  Constant(name: "mean", tensor: Tensor(floats(m, &rng), shape: [m])),
                                  Constant(name: "var", tensor: Tensor((0..<m).map { Float(0.5 + Double($0)) }, shape: [m]))])
        let (folded, n) = g.foldingBatchNormIntoConv()
        XCTAssertEqual(n, 1)
        XCTAssertEqual(folded.nodes.map(\.opType), ["Conv", "Relu"])
        XCTAssertEqual(folded.nodes[0].outputs, ["b"])
        XCTAssertEqual(Set(folded.constants.map(\.name)), ["w", "b_folded_bias"])
        let x = ["x": Tensor(floats(108, &rng), shape: [1, 3, 6, 6])]
        let want = try XCTUnwrap(try Interpreter(graph: g, options: .init(optimize: false)).run(x)["y"]?.floats)
        let got = try XCTUnwrap(try Interpreter(graph: folded, options: .init(optimize: false)).run(x)["y"]?.floats)
        for (a, b) in zip(want, got) { XCTAssertEqual(a, b, accuracy: 1e-5 * (1 + abs(a))) }
        // A Conv output read twice (here also a graph output) is left alone.
        var shared = g
        shared.outputs.append(ValueInfo(name: "c", dtype: .float32, shape: nil))
        XCTAssertEqual(shared.foldingBatchNormIntoConv().folded, 0)
    }

    func testEmbeddingRowsAreWeightedByHowOftenTheyAreLookedUp() throws {
        var rng = SplitMix(seed: 41)
        let g = Graph(inputs: [ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(1), .fixed(4)])],
                      outputs: [ValueInfo(name: "e", dtype: .float32, shape: nil)],
                      nodes: [Node(name: "lookup", opType: "Gather", inputs: ["table", "ids"], outputs: ["e"])],
                      constants: [Constant(name: "table", tensor: Tensor(floats(5 * 3, &rng), shape: [5, 3]))])
        let inputs = [[0, 0, 1, -1], [0, 2, 2, 4]].map { ["ids": Tensor(ints: $0, shape: [1, 4])] }
        let stats = try XCTUnwrap(try Calibration.collect(g, inputs: inputs, secondMoment: true)["table"])
        XCTAssertEqual(stats.count, 8)
        XCTAssertEqual(stats.rowShare, [3, 1, 2, 0, 2].map { Double($0) / 8 })
        let w = WeightInput(name: "table", values: try XCTUnwrap(g.constant(named: "table")?.encoding.decoded().floats), shape: [5, 3],
                            outputAxis: 0, inputAxis: 1, statistics: stats)
        XCTAssertNil(stats.misfit(w))
        let importance = stats.importance(w)
        XCTAssertEqual(importance[0], 3.0 / 8); XCTAssertEqual(importance[11], 0.2 * 1e-3, accuracy: 1e-9, "an unread row keeps a floor")
        // The weighted and gptq methods take it (gptq has no second moment for a lookup: it says so).
        let o = try WeightCodecs.options(mode: "kmeans-lut", CodecRequest(bits: 1, method: .gptq), origin: .commandLine)
        let r = try WeightCodecs.encode(w, with: try WeightCodecs.codec(named: "kmeans-lut"), o)
        XCTAssertTrue(r.notes.contains("gptq: no second moment; rounded to nearest"), "\(r.notes)")
    }
}
