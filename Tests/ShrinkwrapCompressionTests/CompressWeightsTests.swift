import Foundation
@testable import ShrinkwrapCompression
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

final class CompressWeightsTests: XCTestCase {
    /// x[1,8,6,6] → Conv(W 16×8×3×3, B) → BatchNorm → Flatten → Gemm(transB=0, [576, 40]) → out,
    /// plus an embedding Gather, a constant-index Gather, a shape constant and a shared Add constant.
    static func graph() -> Graph {
        var rng = SplitMix(seed: 1)
        func t(_ shape: [Int], _ s: Double = 0.1) -> Tensor { Tensor((0..<shape.reduce(1, *)).map { _ in Float(rng.normal() * s) }, shape: shape) }
        var g = Graph(name: "t")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(8), .fixed(6), .fixed(6)]),
                    ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(3)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil), ValueInfo(name: "e", dtype: .float32, shape: nil),
                     ValueInfo(name: "r", dtype: .float32, shape: nil)]
        g.setConstant(Constant(name: "conv.w", tensor: t([16, 8, 3, 3])))
        g.setConstant(Constant(name: "conv.b", tensor: t([16])))
        for p in ["bn.s", "bn.b", "bn.m"] { g.setConstant(Constant(name: p, tensor: t([16]))) }
        g.setConstant(Constant(name: "bn.v", tensor: Tensor([Float](repeating: 1, count: 16), shape: [16])))
        g.setConstant(Constant(name: "fc.w", tensor: t([576, 40])))
        g.setConstant(Constant(name: "emb", tensor: t([100, 32])))
        g.setConstant(Constant(name: "table", tensor: t([100, 32])))
        g.setConstant(Constant(name: "fixed.ids", tensor: Tensor(ints: [1, 2], shape: [2])))
        g.setConstant(Constant(name: "unused", tensor: t([64, 64])))
        g.nodes = [
            Node(name: "conv", opType: "Conv", inputs: ["x", "conv.w", "conv.b"], outputs: ["c"], attributes: ["pads": .ints([1, 1, 1, 1])]),
            Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "bn.s", "bn.b", "bn.m", "bn.v"], outputs: ["n"]),
            Node(name: "flat", opType: "Flatten", inputs: ["n"], outputs: ["f"]),
            Node(name: "fc", opType: "Gemm", inputs: ["f", "fc.w"], outputs: ["y"]),
            Node(name: "lookup", opType: "Gather", inputs: ["emb", "ids"], outputs: ["e"]),
            Node(name: "rows", opType: "Gather", inputs: ["table", "fixed.ids"], outputs: ["r"]),
        ]
        return g
    }

    func entry(_ log: CompressionLog, _ name: String) -> CompressionLogEntry? { log.entries.first { $0.name == name } }

    func testSelectsWeightsAndExplainsEverySkip() throws {
        var g = Self.graph()
        let log = try CompressWeights.run(&g, plan: CompressionPlan(CompressionRule(mode: "linear", options: CodecOptions(bits: 8, granularity: .perChannel)), minElements: 1000), threads: 1)
        XCTAssertEqual(log.entries.map(\.name), Self.graph().constants.map(\.name), "one entry per constant, in order")
        XCTAssertEqual(entry(log, "conv.w")?.encoding, "affine8")
        XCTAssertEqual(entry(log, "fc.w")?.encoding, "affine8")
        XCTAssertEqual(entry(log, "emb")?.encoding, "affine8")
        XCTAssertEqual(entry(log, "conv.b")?.skipped, "bias of Conv 'conv'")
        XCTAssertEqual(entry(log, "bn.s")?.skipped, "normalization parameter of BatchNormalization 'bn'")
        XCTAssertEqual(entry(log, "table")?.skipped, "table of Gather 'rows' is not an embedding lookup")
        XCTAssertEqual(entry(log, "fixed.ids")?.skipped, "int64 tensor (not a float32 weight)")
        XCTAssertEqual(entry(log, "unused")?.skipped, "not used by any node")
        // Gemm with transB = 0 has its output channels on axis 1.
        guard case .affine(let fc)? = g.constant(named: "fc.w")?.encoding else { return XCTFail() }
        XCTAssertEqual(fc.scaleShape, [1, 40])
        guard case .affine(let conv)? = g.constant(named: "conv.w")?.encoding else { return XCTFail() }
        XCTAssertEqual(conv.scaleShape, [16, 1, 1, 1])
        let e = try XCTUnwrap(entry(log, "conv.w"))
        XCTAssertEqual(e.bytesBefore, 1152 * 4)
        XCTAssertEqual(e.bytesAfter, 1152 + 16 * 4 + 16 * 4)
        XCTAssertGreaterThan(e.sqnrDB ?? 0, 35)
        XCTAssertEqual(e.rule, "linear 8-bit per-channel asymmetric")
        // Under the default minimum (2048), the 1152-element conv weight is left alone.
        var g2 = Self.graph()
        let log2 = try CompressWeights.run(&g2, plan: CompressionPlan(CompressionRule(mode: "fp16")), threads: 1)
        XCTAssertEqual(entry(log2, "conv.w")?.skipped, "1152 elements, fewer than the minimum 2048")
        XCTAssertEqual(entry(log2, "fc.w")?.encoding, "fp16")
    }

    func testNameBeatsOpTypeBeatsGlobal() throws {
        var g = Self.graph()
        let plan = CompressionPlan(
            global: .compress(CompressionRule(mode: "fp16")),
            byOpType: ["Gemm": .compress(CompressionRule(mode: "kmeans-lut", options: CodecOptions(bits: 4))), "Gather": .skip],
            byName: ["fc.w": .compress(CompressionRule(mode: "linear-lut", options: CodecOptions(bits: 2))),
                     "conv.b": .compress(CompressionRule(mode: "fp16")), "conv.w": .skip],
            minElements: 0)
        let log = try CompressWeights.run(&g, plan: plan, threads: 1)
        XCTAssertEqual(entry(log, "fc.w")?.encoding, "palette2")
        XCTAssertEqual(entry(log, "conv.w")?.skipped, "skipped by the plan's rule for this name")
        XCTAssertEqual(entry(log, "emb")?.skipped, "skipped by the plan's rule for Gather")
        XCTAssertEqual(entry(log, "conv.b")?.encoding, "fp16", "a name rule reaches a bias")
        var g2 = Self.graph()
        let log2 = try CompressWeights.run(&g2, plan: CompressionPlan(global: nil, byOpType: ["Gemm": .compress(CompressionRule(mode: "kmeans-lut", options: CodecOptions(bits: 4)))]), threads: 1)
        XCTAssertEqual(entry(log2, "fc.w")?.encoding, "palette4")
        XCTAssertEqual(entry(log2, "emb")?.skipped, "no rule applies")
    }

    /// Same graph and plan with 1 and 2 threads: identical graphs; and the
    /// compressed graph still runs, close to the original.
    func testThreadCountDoesNotChangeTheResultAndTheGraphRuns() throws {
        for mode in WeightCodecs.modes where mode != "custom-lut" {
            let rule = CompressionRule(mode: mode, options: CodecOptions(bits: 6, granularity: mode == "linear" ? .perBlock(16) : (mode == "fp16" ? .perTensor : .perGroupedChannel(3))))
            var a = Self.graph(), b = Self.graph()
            let la = try CompressWeights.run(&a, plan: CompressionPlan(rule, minElements: 0), threads: 1)
            let lb = try CompressWeights.run(&b, plan: CompressionPlan(rule, minElements: 0), threads: 2)
            XCTAssertEqual(a, b, mode)
            XCTAssertEqual(la.entries.map(\.sse), lb.entries.map(\.sse), mode)
            XCTAssertEqual(lb.threads, 2)
            let x = Tensor((0..<288).map { Float($0 % 7) / 7 }, shape: [1, 8, 6, 6])
            let ids = Tensor(ints: [0, 5, 99], shape: [3])
            let ref = try Interpreter(graph: Self.graph()).run(["x": x, "ids": ids])
            let out = try Interpreter(graph: b).run(["x": x, "ids": ids])
            let y0 = try XCTUnwrap(ref["y"]?.floats), y1 = try XCTUnwrap(out["y"]?.floats)
            // 6-bit weights keep ~30 dB of weight SQNR; the output must stay above 20 dB.
            let stats = ErrorStats(original: y0, decoded: y1)
            XCTAssertGreaterThan(stats.sqnrDB ?? .infinity, 20, mode)
            let log = lb.entries.filter(\.compressed)
            // conv.w, fc.w, emb; fp16 also takes the biases of its fp16 layers (Core ML needs one precision per layer).
            let companions = log.filter { $0.rule?.hasPrefix("fp16 (with the fp16 weight") == true }
            XCTAssertEqual(log.count - companions.count, 3, mode)
            XCTAssertEqual(companions.isEmpty, mode != "fp16", mode)
        }
    }

    func testErrorsNameTheTensor() {
        var g = Self.graph()
        g.setConstant(Constant(name: "fc.w", tensor: Tensor([Float](repeating: .nan, count: 576 * 40), shape: [576, 40])))
        XCTAssertThrowsError(try CompressWeights.run(&g, plan: CompressionPlan(CompressionRule(mode: "linear")), threads: 2)) {
            XCTAssertTrue("\($0)".contains("'fc.w'"), "\($0)")
        }
    }

    func testAlreadyCompressedWeightsAreLeftAlone() throws {
        var g = Self.graph()
        _ = try CompressWeights.run(&g, plan: CompressionPlan(CompressionRule(mode: "fp16")), threads: 1)
        let log = try CompressWeights.run(&g, plan: CompressionPlan(CompressionRule(mode: "linear")), threads: 1)
        XCTAssertEqual(entry(log, "fc.w")?.skipped, "already compressed (fp16)")
    }
}

final class CompressionPlanTests: XCTestCase {
    func write(_ text: String, _ name: String = "plan.json") throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("shrinkwrap-plan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    func testLoadsEveryKey() throws {
        let lutPath = try write("[0.5, -0.5, 0]", "table.json")
        let dir = (lutPath as NSString).deletingLastPathComponent
        let planPath = dir + "/plan.json"
        try Data("""
        {"global": {"mode": "kmeans-lut", "bits": 4, "granularity": "per-grouped-channel:16"},
         "op_types": {"Gemm": {"mode": "linear", "bits": 8, "symmetric": true}, "MatMul": "skip", "Gather": null},
         "names": {"a": {"mode": "fp16", "clamp_fp16": true}, "b": {"mode": "custom-lut", "lut": "table.json"},
                   "c": {"mode": "linear", "exact_zero": true, "granularity": "per-block:32", "bits": 3},
                   "d": {"mode": "custom-lut", "lut": [1, 2, 3, 4, 5]}},
         "min_elements": 4096}
        """.utf8).write(to: URL(fileURLWithPath: planPath))
        let p = try CompressionPlan.load(planPath)
        XCTAssertEqual(p.global, .compress(CompressionRule(mode: "kmeans-lut", options: CodecOptions(bits: 4, granularity: .perGroupedChannel(16)))))
        XCTAssertEqual(p.byOpType["Gemm"], .compress(CompressionRule(mode: "linear", options: CodecOptions(bits: 8, granularity: .perChannel, symmetric: true))), "linear defaults to per channel")
        XCTAssertEqual(p.byOpType["MatMul"], .skip)
        XCTAssertEqual(p.byOpType["Gather"], .skip)
        XCTAssertEqual(p.byName["a"], .compress(CompressionRule(mode: "fp16", options: CodecOptions(clampFP16: true))))
        XCTAssertEqual(p.byName["b"], .compress(CompressionRule(mode: "custom-lut", options: CodecOptions(bits: 2, lut: [0.5, -0.5, 0]))))
        XCTAssertEqual(p.byName["c"], .compress(CompressionRule(mode: "linear", options: CodecOptions(bits: 3, granularity: .perBlock(32), exactZero: true))))
        XCTAssertEqual(p.byName["d"], .compress(CompressionRule(mode: "custom-lut", options: CodecOptions(bits: 3, lut: [1, 2, 3, 4, 5]))))
        XCTAssertEqual(p.minElements, 4096)
    }

    func testRejectsMistakesWithTheirPlace() throws {
        let bad: [(String, String)] = [
            (#"{"global": {"mode": "kmeans", "bits": 4}}"#, "unknown compression mode"),
            (#"{"global": {"mode": "linear", "bitz": 4}}"#, "unknown key 'bitz'"),
            (#"{"globl": {"mode": "linear"}}"#, "unknown key 'globl'"),
            (#"{"global": {"mode": "linear", "bits": 9}}"#, "bits must be an integer 1–8"),
            (#"{"global": {"mode": "linear", "bits": "4"}}"#, "bits has the wrong type"),
            (#"{"global": {"mode": "fp16", "bits": 8}}"#, "fixed width"),
            (#"{"names": {"x": {"bits": 4}}}"#, "names.x: a rule needs \"mode\""),
            (#"{"names": {"x": "skp"}}"#, "names.x: expected a rule object"),
            (#"{"global": {"mode": "linear", "granularity": "per-block:0"}}"#, "size must be at least 1"),
            (#"{"min_elements": -1}"#, "min_elements"),
            (#"{"names": {"x": {"mode": "custom-lut"}}}"#, "needs \"lut\""),
            (#"{"names": {"x": {"mode": "custom-lut", "bits": 1, "lut": [1, 2, 3]}}}"#, "3 entries does not fit 1 bits"),
            (#"[1, 2]"#, "top level must be an object"),
            (#"{"global": "#, "not valid JSON"),
        ]
        for (text, expected) in bad {
            let path = try write(text)
            XCTAssertThrowsError(try CompressionPlan.load(path), text) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(text): \(error)")
                XCTAssertTrue("\(error)".contains(path), "\(error)")
            }
        }
        XCTAssertThrowsError(try CompressionPlan.load("/nonexistent/plan.json"))
    }

    func testCustomLUTFiles() throws {
        XCTAssertEqual(try CustomLUTCodec.loadTable(try write("[1, 2.5, -3]")), [1, 2.5, -3])
        XCTAssertEqual(try CustomLUTCodec.loadTable(try write(#"{"lut": [0.25]}"#)), [0.25])
        for bad in ["[]", "[true]", "[\"1\"]", "{\"table\": [1]}", "[1e40]", "nope", "[" + Array(repeating: "1", count: 257).joined(separator: ",") + "]"] {
            XCTAssertThrowsError(try CustomLUTCodec.loadTable(try write(bad)), bad)
        }
        XCTAssertEqual(CustomLUTCodec.bits(for: 1), 1)
        XCTAssertEqual(CustomLUTCodec.bits(for: 5), 3)
        XCTAssertEqual(CustomLUTCodec.bits(for: 256), 8)
    }
}
