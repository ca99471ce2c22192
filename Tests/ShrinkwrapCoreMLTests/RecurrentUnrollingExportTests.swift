import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// GRU / RNN nodes the Core ML writers refuse (linear_before_reset, a
/// direction, a recurrent bias, an activation) are unrolled by each pipeline:
/// exported → imported → run, they give the graph's outputs; the nodes the
/// writers take still become a recurrent layer / op. Plus the two small
/// NeuralNetwork passes a Keras go_backwards GRU needs (a reversing Slice,
/// a Gather by one index).
final class RecurrentUnrollingExportTests: XCTestCase {
    typealias Builder = CoreMLLayerExportTests.Builder

    func recurrent(_ op: String, direction: String = "forward", lbr: Int = 0, states: Bool = false,
                   attributes: [String: Attribute] = [:]) -> Builder {
        var a = attributes
        if op == "GRU" { a["linear_before_reset"] = .int(lbr) }
        return CoreMLLayerExportTests.recurrent(op, gates: op == "GRU" ? 3 : 1, direction: direction, hidden: 4, input: 3, seq: 5,
                                                batch: 2, states: states, attributes: a)
    }

    /// .mlmodel: exported, imported, run; returns the layer kinds.
    @discardableResult
    func neuralNetwork(_ b: Builder, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        var b = b
        let prepared = try ExportPreparation.prepare(b.g).graph
        let spec = try CoreMLExporter.exportSpec(prepared)
        let back = try CoreMLImporter.importModel(data: try spec.serializedData(), file: "\(label).mlmodel")
        let inputs = b.inputs()
        let want = try Interpreter(graph: b.g).run(inputs), got = try Interpreter(graph: back).run(inputs)
        XCTAssertLessThanOrEqual(CoreMLRoundTripTests.relativeError(got, want), 1e-5, label, file: file, line: line)
        return spec.neuralNetwork.layers.map { l in l.layer.map { String("\($0)".prefix { $0 != "(" }) } ?? "" }
    }

    /// .mlpackage: exported, imported, run; returns the MIL op types.
    @discardableResult
    func mlProgram(_ b: Builder, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        var b = b
        let pkg = try MILExporter.export(try ExportPreparation.prepare(b.g).graph)
        let model = try CoreML_Specification_Model(serializedBytes: pkg.model)
        let back = try MILImporter.importProgram(model, file: "\(label).mlpackage", blobFiles: ["@model_path/weights/weight.bin": pkg.weights])
        let inputs = b.inputs()
        let want = try Interpreter(graph: b.g).run(inputs), got = try Interpreter(graph: back).run(inputs)
        XCTAssertLessThanOrEqual(CoreMLRoundTripTests.relativeError(got, want), 1e-5, label, file: file, line: line)
        let f = try XCTUnwrap(model.mlProgram.functions["main"])
        return (f.blockSpecializations[f.opset]?.operations ?? []).map(\.type)
    }

    func testNeuralNetworkUnrollsWhatItsLayersRefuse() throws {
        for (b, label) in [(recurrent("GRU", lbr: 1, states: true), "gru lbr 1"),
                           (recurrent("GRU", direction: "bidirectional"), "gru bidirectional"),
                           (recurrent("GRU", direction: "bidirectional", lbr: 1, states: true), "gru bidirectional lbr 1"),
                           (recurrent("RNN", direction: "bidirectional", states: true), "rnn bidirectional"),
                           (recurrent("RNN", attributes: ["activations": .strings(["Softsign"])]), "rnn softsign")] {
            XCTAssertNotNil(CoreMLLayerWriters.recurrentCellRefusal(b.g.nodes[0]), label)
            let kinds = try neuralNetwork(b, label)
            XCTAssertFalse(kinds.contains("gru") || kinds.contains("simpleRecurrent"), label)
            XCTAssertTrue(kinds.contains("innerProduct") || kinds.contains("batchedMatmul"), "\(label): \(kinds)")
        }
        // What the layers take stays one layer.
        for (b, label, kind) in [(recurrent("GRU", direction: "reverse", states: true), "gru reverse", "gru"),
                                 (recurrent("RNN", attributes: ["activations": .strings(["Relu"])]), "rnn relu", "simpleRecurrent")] {
            XCTAssertNil(CoreMLLayerWriters.recurrentCellRefusal(b.g.nodes[0]), label)
            XCTAssertTrue(try neuralNetwork(b, label).contains(kind), label)
        }
    }

    func testMLProgramUnrollsWhatItsOpsRefuse() throws {
        // The random B has a recurrent bias on the h gate; a copy without one is what MIL's gru takes.
        let recurrentBias = recurrent("GRU", direction: "bidirectional", lbr: 1, states: true)
        var noRecurrentBias = recurrent("GRU", lbr: 1)
        let bias = try XCTUnwrap(noRecurrentBias.g.constant(named: "B")?.encoding.decoded().floats)
        let h = 4
        noRecurrentBias.g.setConstant(Constant(name: "B", tensor: Tensor(bias.enumerated().map { $0.offset >= 5 * h ? 0 : $0.element }, shape: [1, 6 * h])))
        let refused: [(Builder, String)] = [
            (recurrent("GRU", states: true), "gru lbr 0"),
            (recurrentBias, "gru with Rb_h"),
            (recurrent("RNN", attributes: ["activations": .strings(["HardSigmoid"]), "activation_alpha": .floats([0.3])]), "rnn hardsigmoid"),
            (recurrent("GRU", direction: "bidirectional", lbr: 1,
                       attributes: ["activations": .strings(["Sigmoid", "Tanh", "Sigmoid", "Relu"])]), "gru activations per direction"),
        ]
        for (b, label) in refused {
            XCTAssertNotNil(MILOpWriters.recurrentCellRefusal(b.g.nodes[0], constant: { b.g.constant(named: $0)?.encoding }), label)
            let ops = try mlProgram(b, label)
            XCTAssertFalse(ops.contains("gru") || ops.contains("rnn"), "\(label): \(ops)")
        }
        XCTAssertNil(MILOpWriters.recurrentCellRefusal(noRecurrentBias.g.nodes[0], constant: { noRecurrentBias.g.constant(named: $0)?.encoding }))
        XCTAssertEqual(try mlProgram(noRecurrentBias, "gru lbr 1 without Rb_h").filter { $0 == "gru" }.count, 1)
        XCTAssertEqual(try mlProgram(recurrent("RNN", direction: "bidirectional"), "rnn bidirectional").filter { $0 == "rnn" }.count, 2)
    }

    /// A reverse GRU's Y read backwards (Keras' go_backwards), then its first step by a scalar Gather.
    func testReversingSliceAndScalarGatherInANeuralNetwork() throws {
        var b = recurrent("GRU", direction: "reverse")
        b.ints("starts", [-1])
        b.ints("ends", [Int(Int64.min)])
        b.ints("axes", [0])
        b.ints("steps", [-1])
        b.node("Slice", ["Y", "starts", "ends", "axes", "steps"], ["reversed"])
        b.g.setConstant(Constant(name: "first", tensor: Tensor(ints: [0], shape: [])))
        b.node("Gather", ["reversed", "first"], ["step0"], ["axis": .int(0)])
        b.node("Gather", ["Y_h", "first"], ["state"], ["axis": .int(-3)])
        b.output("reversed", "step0", "state")
        let kinds = try neuralNetwork(b, "reversed sequence")
        XCTAssertFalse(kinds.contains("sliceStatic") || kinds.contains("sliceDynamic"), "\(kinds)")
        XCTAssertEqual(kinds.filter { $0 == "gather" }.count, 3, "\(kinds)")
    }
}
