import CoreMLSchema
import Foundation
import Shrinkwrap
import ShrinkwrapCompression
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// Small synthetic graphs, one layer family each, through ONNX-semantics IR →
/// .mlmodel → import → interpreter: the layers the light models do not use
/// (deconvolution, 1-D convolution, padding modes, resizing, split / slice,
/// reductions, embedding, recurrent layers, …).
final class CoreMLLayerExportTests: XCTestCase {
    /// A graph under construction with random weights.
    struct Builder {
        var g = Graph(name: "t")
        var rng = SplitMix(seed: 17)

        mutating func input(_ name: String, _ shape: [Int], _ dtype: DType = .float32) {
            g.inputs.append(ValueInfo(name: name, dtype: dtype, shape: shape.map { .fixed($0) }))
        }

        @discardableResult
        mutating func weight(_ name: String, _ shape: [Int], scale: Double = 0.5) -> String {
            let n = shape.reduce(1, *)
            g.setConstant(Constant(name: name, tensor: Tensor((0..<n).map { _ in Float(rng.normal() * scale) }, shape: shape)))
            return name
        }

        @discardableResult
        mutating func ints(_ name: String, _ v: [Int]) -> String {
            g.setConstant(Constant(name: name, tensor: Tensor(dtype: .int64, shape: [v.count], storage: .int(v.map { Int64($0) }))))
            return name
        }

        @discardableResult
        mutating func floats(_ name: String, _ v: [Float]) -> String {
            g.setConstant(Constant(name: name, tensor: Tensor(v, shape: [v.count])))
            return name
        }

        mutating func node(_ op: String, _ inputs: [String], _ outputs: [String], _ attributes: [String: Attribute] = [:]) {
            g.nodes.append(Node(name: "\(op)_\(g.nodes.count)", opType: op, inputs: inputs, outputs: outputs, attributes: attributes))
        }

        mutating func output(_ names: String...) {
            for n in names { g.outputs.append(ValueInfo(name: n, dtype: .float32, shape: nil)) }
        }

        /// Random inputs of the declared shapes (ids in 0..<vocab for integer inputs).
        mutating func inputs(vocab: Int = 10) -> [String: Tensor] {
            var out: [String: Tensor] = [:]
            for i in g.inputs {
                let s = i.staticShape ?? []
                let n = s.reduce(1, *)
                if i.dtype == .float32 {
                    out[i.name] = Tensor((0..<n).map { _ in Float(rng.normal()) }, shape: s)
                } else {
                    out[i.name] = Tensor(dtype: i.dtype ?? .int64, shape: s, storage: .int((0..<n).map { _ in Int64(rng.next() % UInt64(vocab)) }))
                }
            }
            return out
        }
    }

    /// Exports, imports, runs both; returns the spec.
    @discardableResult
    func roundTrip(_ b: inout Builder, _ label: String, vocab: Int = 10, tolerance: Double = 1e-4,
                   file: StaticString = #filePath, line: UInt = #line) throws -> CoreML_Specification_Model {
        let spec = try CoreMLExporter.exportSpec(try ExportPreparation.prepare(b.g).graph)
        let back = try CoreMLImporter.importModel(data: try spec.serializedData(), file: "\(label).mlmodel")
        let inputs = b.inputs(vocab: vocab)
        let want = try Interpreter(graph: b.g).run(inputs)
        // Core ML declares integer inputs as int32.
        var fed: [String: Tensor] = [:]
        for i in back.runtimeInputs {
            guard let t = inputs[i.name] else { XCTFail("\(label): input \(i.name) missing", file: file, line: line); continue }
            if let d = i.dtype, d != t.dtype, case .int(let v) = t.storage {
                fed[i.name] = Tensor(dtype: d, shape: t.shape, storage: d.isFloatingPoint ? .float(v.map { Float($0) }) : .int(v))
            } else {
                fed[i.name] = t
            }
        }
        let got = try Interpreter(graph: back).run(fed)
        XCTAssertEqual(Set(got.keys), Set(want.keys), label, file: file, line: line)
        let err = CoreMLRoundTripTests.relativeError(got, want)
        XCTAssertLessThanOrEqual(err, tolerance, label, file: file, line: line)
        return spec
    }

    /// The layer's kind as its oneof case name ("convolution", "constantPad", …).
    func kind(_ l: CoreML_Specification_NeuralNetworkLayer) -> String {
        guard let k = l.layer else { return "" }
        return String("\(k)".prefix { $0 != "(" })
    }

    func has(_ spec: CoreML_Specification_Model, _ k: String) -> Bool { spec.neuralNetwork.layers.contains { kind($0) == k } }

    func compressed(_ g: Graph, _ mode: String, bits: Int = 8) throws -> Graph {
        var q = g
        var o = CodecOptions()
        o.bits = bits
        let codec = try WeightCodecs.codec(named: mode)
        o.granularity = WeightCodecs.defaultGranularity(codec)
        _ = try CompressWeights.run(&q, plan: CompressionPlan(CompressionRule(mode: mode, options: o), minElements: 1), threads: 1)
        return q
    }

    // MARK: convolution family

    func testDeconvolutionPlainGroupedAndCompressed() throws {
        var b = Builder()
        b.input("x", [1, 4, 5, 5])
        b.weight("w1", [4, 3, 3, 3]); b.weight("b1", [3])
        b.node("ConvTranspose", ["x", "w1", "b1"], ["y1"], ["strides": .ints([2, 2]), "pads": .ints([1, 1, 1, 1]),
                                                           "output_padding": .ints([1, 1])])
        b.weight("w2", [4, 2, 3, 3])
        b.node("ConvTranspose", ["x", "w2"], ["y2"], ["group": .int(2)])
        b.output("y1", "y2")
        let spec = try roundTrip(&b, "deconv")
        XCTAssertTrue(spec.neuralNetwork.layers.allSatisfy { kind($0) != "convolution" || $0.convolution.isDeconvolution })
        XCTAssertEqual(spec.neuralNetwork.layers.first { kind($0) == "convolution" }?.convolution.outputShape, [10, 10])
        for mode in ["linear", "kmeans-lut"] {
            var q = b
            q.g = try compressed(b.g, mode, bits: 4)
            try roundTrip(&q, "deconv \(mode)")
        }
    }

    /// What the writer reads besides the weights — the output shape a deconvolution records, the group —
    /// comes from the graph; a wrong one is a named refusal, not a trap (the output-shape case was found by
    /// `make fuzz-models`, through an ONNX file whose initializer shadowed the node's output).
    func testDeconvolutionWithImpossibleShapeOrGroupIsRefused() throws {
        var b = Builder()
        b.input("x", [1, 2, 3, 3])
        b.weight("w", [2, 2, 3, 3])
        b.node("ConvTranspose", ["x", "w"], ["y"])
        b.g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: [1, 2, 5, 5].map { .fixed($0) })]
        XCTAssertNoThrow(try CoreMLExporter.exportSpec(b.g))
        var wrongRank = b.g
        wrongRank.valueInfo["y"] = ValueInfo(name: "y", dtype: .float32, shape: [.fixed(4)])
        var negativeGroup = b.g
        negativeGroup.nodes[0].attributes["group"] = .int(-1)
        var unevenGroup = b.g
        unevenGroup.nodes[0].attributes["group"] = .int(3)
        var hugeGroup = b.g   // 2 output channels per group × 2^62 groups overflows
        hugeGroup.nodes[0].attributes["group"] = .int(1 << 62)
        for (g, what) in [(wrongRank, "output shape [4]"), (negativeGroup, "group -1"), (unevenGroup, "group 3"),
                          (hugeGroup, "group \(1 << 62)")] {
            XCTAssertThrowsError(try CoreMLExporter.exportSpec(g), what) { e in
                XCTAssertTrue("\(e)".contains(what), "\(e)")
            }
        }
    }

    func testOneDimensionalConvolution() throws {
        var b = Builder()
        b.input("x", [1, 3, 10])
        b.weight("w", [5, 3, 3]); b.weight("bias", [5])
        b.node("Conv", ["x", "w", "bias"], ["c"], ["pads": .ints([1, 1]), "strides": .ints([2]), "dilations": .ints([1])])
        b.node("Relu", ["c"], ["r"])
        b.weight("wt", [5, 2, 4])
        b.node("ConvTranspose", ["r", "wt"], ["y"], ["strides": .ints([2])])
        b.output("y")
        let spec = try roundTrip(&b, "conv1d")
        XCTAssertEqual(spec.specificationVersion, 4, "expandDims / squeeze need N-d layers")
        var q = b
        q.g = try compressed(b.g, "linear", bits: 6)
        try roundTrip(&q, "conv1d linear 6")
    }

    func testInstanceNormAndDataReorganization() throws {
        var b = Builder()
        b.input("x", [1, 8, 4, 6])
        b.weight("s", [8]); b.weight("bi", [8])
        b.node("InstanceNormalization", ["x", "s", "bi"], ["n"], ["epsilon": .float(1e-3)])
        b.node("DepthToSpace", ["n"], ["d"], ["blocksize": .int(2)])
        b.node("SpaceToDepth", ["d"], ["s2d"], ["blocksize": .int(2)])
        b.output("s2d")
        let spec = try roundTrip(&b, "instancenorm / depth-to-space")
        XCTAssertEqual(spec.specificationVersion, 1, "all classic layers in the rank-5 mapping")
        var c = Builder()
        c.input("x", [1, 8, 3, 3])
        c.node("DepthToSpace", ["x"], ["y"], ["blocksize": .int(2), "mode": .string("CRD")])
        c.output("y")
        XCTAssertEqual(try roundTrip(&c, "pixel shuffle").specificationVersion, 5)
    }

    // MARK: shapes and elementwise

    func testPaddingModes() throws {
        var b = Builder()
        b.input("x", [1, 2, 4, 5])
        b.ints("p1", [0, 0, 1, 2, 0, 0, 2, 1])
        b.floats("v", [0.5])
        b.node("Pad", ["x", "p1", "v"], ["a"], ["mode": .string("constant")])
        b.node("Pad", ["x", "p1"], ["r"], ["mode": .string("reflect")])
        b.node("Pad", ["x", "p1"], ["e"], ["mode": .string("edge")])
        b.output("a", "r", "e")
        XCTAssertEqual(try roundTrip(&b, "pad spatial").specificationVersion, 1)
        var c = Builder()
        c.input("x", [1, 2, 4, 5])
        c.ints("p", [0, 1, 0, 0, 0, 2, 0, 1])
        c.node("Pad", ["x", "p"], ["y"])
        c.output("y")
        let spec = try roundTrip(&c, "pad channels")
        XCTAssertTrue(has(spec, "constantPad"))
    }

    func testResizeModes() throws {
        var b = Builder()
        b.input("x", [1, 3, 4, 5])
        b.floats("sc", [1, 1, 2, 2]); b.floats("roi", [])
        b.node("Resize", ["x", "roi", "sc"], ["n"], ["mode": .string("nearest"), "coordinate_transformation_mode": .string("asymmetric"),
                                                     "nearest_mode": .string("floor")])
        b.node("Resize", ["x", "roi", "sc"], ["a"], ["mode": .string("linear"), "coordinate_transformation_mode": .string("asymmetric")])
        b.output("n", "a")
        XCTAssertEqual(try roundTrip(&b, "resize rank-5").specificationVersion, 1)
        var c = Builder()
        c.input("x", [1, 3, 4, 5])
        c.floats("sc", [1, 1, 2, 2]); c.floats("roi", []); c.ints("size", [1, 3, 7, 9])
        c.node("Resize", ["x", "roi", "sc"], ["h"], ["mode": .string("linear"), "coordinate_transformation_mode": .string("half_pixel")])
        c.node("Resize", ["x", "roi", "", "size"], ["ac"], ["mode": .string("linear"), "coordinate_transformation_mode": .string("align_corners")])
        c.output("h", "ac")
        XCTAssertEqual(try roundTrip(&c, "resize half-pixel / align-corners").specificationVersion, 5)
    }

    func testSplitSliceAndConcat() throws {
        var b = Builder()
        b.input("x", [1, 6, 4, 8])
        b.node("Split", ["x"], ["s0", "s1", "s2"], ["axis": .int(1)])
        b.ints("sizes", [3, 5])
        b.node("Split", ["x", "sizes"], ["u0", "u1"], ["axis": .int(3)])
        b.ints("st", [1, 0]); b.ints("en", [4, -1]); b.ints("ax", [2, 3]); b.ints("sp", [2, 3])
        b.node("Slice", ["x", "st", "en", "ax", "sp"], ["sl"])
        b.node("Concat", ["s2", "s0"], ["cat"], ["axis": .int(1)])
        b.node("Concat", ["u1", "u0"], ["cat2"], ["axis": .int(-1)])
        b.output("s1", "sl", "cat", "cat2")
        try roundTrip(&b, "split / slice / concat")
    }

    func testReductions() throws {
        var b = Builder()
        b.input("x", [2, 3, 4, 5])
        b.node("ReduceMean", ["x"], ["m"], ["axes": .ints([2, 3]), "keepdims": .int(1)])
        b.ints("ax1", [1])
        b.node("ReduceSum", ["x", "ax1"], ["s"], ["keepdims": .int(0)])
        b.node("ReduceMax", ["x"], ["mx"], ["keepdims": .int(0)])
        b.node("ReduceL2", ["x"], ["l2"], ["axes": .ints([-1])])
        b.node("ReduceLogSumExp", ["x"], ["lse"], ["axes": .ints([0, 2])])
        b.node("ArgMax", ["x"], ["am"], ["axis": .int(1), "keepdims": .int(0)])
        b.output("m", "s", "mx", "l2", "lse", "am")
        let spec = try roundTrip(&b, "reductions")
        XCTAssertTrue(has(spec, "reduceLogSumExp"))
    }

    func testGatherEmbedding() throws {
        var b = Builder()
        b.input("ids", [1, 6], .int64)
        b.weight("table", [20, 8])
        b.node("Gather", ["table", "ids"], ["e"], ["axis": .int(0)])
        b.node("ReduceMean", ["e"], ["avg"], ["axes": .ints([1]), "keepdims": .int(0)])
        b.output("avg")
        let spec = try roundTrip(&b, "embedding", vocab: 20)
        XCTAssertTrue(has(spec, "embeddingNd"))
        for (mode, bits) in [("linear", 4), ("kmeans-lut", 3), ("fp16", 16)] {
            var q = b
            q.g = try compressed(b.g, mode, bits: bits)
            XCTAssertTrue(q.g.constant(named: "table")?.encoding.isCompressed == true, mode)
            try roundTrip(&q, "embedding \(mode)", vocab: 20)
        }
    }

    // MARK: recurrent layers

    /// One ONNX recurrent node: X [seq, batch, input], optional initial states as graph inputs.
    func recurrent(_ op: String, gates: Int, direction: String = "forward", hidden: Int = 5, input: Int = 4, seq: Int = 6, batch: Int = 2,
                   states: Bool = false, peepholes: Bool = false, recurrenceBias: Bool = true,
                   attributes: [String: Attribute] = [:]) -> Builder {
        Self.recurrent(op, gates: gates, direction: direction, hidden: hidden, input: input, seq: seq, batch: batch, states: states,
                       peepholes: peepholes, recurrenceBias: recurrenceBias, attributes: attributes)
    }

    static func recurrent(_ op: String, gates: Int, direction: String = "forward", hidden: Int = 5, input: Int = 4, seq: Int = 6, batch: Int = 2,
                   states: Bool = false, peepholes: Bool = false, recurrenceBias: Bool = true,
                   attributes: [String: Attribute] = [:]) -> Builder {
        var b = Builder()
        let dirs = direction == "bidirectional" ? 2 : 1
        b.input("x", [seq, batch, input])
        b.weight("W", [dirs, gates * hidden, input])
        b.weight("R", [dirs, gates * hidden, hidden])
        var bias = (0..<(dirs * 2 * gates * hidden)).map { _ in Float(b.rng.normal() * 0.3) }
        if !recurrenceBias {
            for d in 0..<dirs { for i in 0..<(gates * hidden) { bias[d * 2 * gates * hidden + gates * hidden + i] = 0 } }
        }
        b.g.setConstant(Constant(name: "B", tensor: Tensor(bias, shape: [dirs, 2 * gates * hidden])))
        var inputs = ["x", "W", "R", "B", ""]
        if states {
            b.input("h0", [dirs, batch, hidden]); inputs.append("h0")
            if op == "LSTM" { b.input("c0", [dirs, batch, hidden]); inputs.append("c0") }
        }
        if peepholes {
            while inputs.count < 7 { inputs.append("") }
            b.weight("P", [dirs, 3 * hidden]); inputs.append("P")
        }
        var a = attributes
        a["hidden_size"] = .int(hidden); a["direction"] = .string(direction)
        let outs = op == "LSTM" ? ["Y", "Y_h", "Y_c"] : ["Y", "Y_h"]
        b.node(op, inputs, outs, a)
        for o in outs { b.output(o) }
        return b
    }

    func testLSTMForwardReverseBidirectional() throws {
        var f = recurrent("LSTM", gates: 4)
        let spec = try roundTrip(&f, "lstm forward")
        XCTAssertTrue(has(spec, "uniDirectionalLstm"))
        var s = recurrent("LSTM", gates: 4, direction: "reverse", states: true)
        try roundTrip(&s, "lstm reverse with states")
        var bi = recurrent("LSTM", gates: 4, direction: "bidirectional", states: true, peepholes: true)
        let bs = try roundTrip(&bi, "lstm bidirectional with peepholes")
        XCTAssertTrue(has(bs, "biDirectionalLstm"))
        var act = recurrent("LSTM", gates: 4, attributes: ["activations": .strings(["HardSigmoid", "Tanh", "Relu"]),
                                                           "activation_alpha": .floats([0.3]), "activation_beta": .floats([0.4]),
                                                           "input_forget": .int(1)])
        try roundTrip(&act, "lstm custom activations, coupled gates")
        // Only the final state used: the layer writes no sequence.
        var last = recurrent("LSTM", gates: 4)
        last.g.outputs = [ValueInfo(name: "Y_h", dtype: .float32, shape: nil)]
        let ls = try roundTrip(&last, "lstm final state only")
        XCTAssertEqual(ls.neuralNetwork.layers.first { kind($0) == "uniDirectionalLstm" }?.uniDirectionalLstm.params.sequenceOutput, false)
    }

    func testLSTMCompressedWeights() throws {
        let b = recurrent("LSTM", gates: 4, direction: "bidirectional", hidden: 8, recurrenceBias: false)
        for (mode, bits) in [("fp16", 16), ("linear", 8), ("linear", 3), ("linear-lut", 4), ("kmeans-lut", 2)] {
            var q = b
            q.g = try compressed(b.g, mode, bits: bits)
            XCTAssertTrue(q.g.constant(named: "W")?.encoding.isCompressed == true, mode)
            let spec = try roundTrip(&q, "lstm \(mode) \(bits)")
            let w = spec.neuralNetwork.layers.first { kind($0) == "biDirectionalLstm" }?.biDirectionalLstm.weightParams.first?.inputGateWeightMatrix
            XCTAssertEqual(w?.floatValue.isEmpty, true, "\(mode): gate matrices stay compressed")
            XCTAssertGreaterThanOrEqual(spec.specificationVersion, mode == "fp16" ? 2 : 3)
        }
    }

    func testGRUAndRNN() throws {
        var g = recurrent("GRU", gates: 3, states: true)
        let gs = try roundTrip(&g, "gru")
        XCTAssertTrue(has(gs, "gru"))
        var gr = recurrent("GRU", gates: 3, direction: "reverse")
        try roundTrip(&gr, "gru reverse")
        var q = recurrent("GRU", gates: 3)
        q.g = try compressed(q.g, "kmeans-lut", bits: 4)
        try roundTrip(&q, "gru kmeans-lut 4")
        var r = recurrent("RNN", gates: 1, states: true, attributes: ["activations": .strings(["Relu"])])
        let rs = try roundTrip(&r, "rnn relu")
        XCTAssertTrue(has(rs, "simpleRecurrent"))
    }

    func testRecurrentFormsWithoutALayerAreNamed() throws {
        // GRU / RNN forms the layers refuse are named by the writers' predicate, and unrolled by CoreMLLowering.
        XCTAssertEqual(CoreMLLayerWriters.recurrentCellRefusal(recurrent("GRU", gates: 3, attributes: ["linear_before_reset": .int(1)]).g.nodes[0])?
            .contains("linear_before_reset"), true)
        XCTAssertEqual(CoreMLLayerWriters.recurrentCellRefusal(recurrent("GRU", gates: 3, direction: "bidirectional").g.nodes[0])?
            .contains("bidirectional GRU"), true)
        let cases: [(Builder, String)] = [
            (recurrent("GRU", gates: 3, attributes: ["linear_before_reset": .int(1), "clip": .float(3)]), "clip"),
            (recurrent("LSTM", gates: 4, attributes: ["clip": .float(3)]), "clip"),
            (recurrent("LSTM", gates: 4, attributes: ["layout": .int(1)]), "layout"),
        ]
        for (b, what) in cases {
            XCTAssertThrowsError(try CoreMLExporter.exportSpec(try ExportPreparation.prepare(b.g).graph), what) { e in
                XCTAssertTrue("\(e)".contains(what), "\(e)")
            }
        }
    }
}
