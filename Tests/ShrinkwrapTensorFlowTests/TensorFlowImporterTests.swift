import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest
@testable import ShrinkwrapTensorFlow

/// The importer against TensorFlow 2.12's own outputs for the models
/// Scripts/make_tf_fixtures.py saved (Fixtures/models), as SavedModels and frozen graphs.
final class TensorFlowImporterTests: XCTestCase {
    static let models = TensorFlowFixtures.dir.appendingPathComponent("models")
    static let names = ["branchy", "cnn", "mlp", "recurrent", "resize", "shapes"]

    struct Values: Decodable {
        var shape: [Int]
        var values: [Float]
    }

    struct Case: Decodable {
        var input: String
        var frozenInputs: [String]
        var frozenOutputs: [String]
        var shape: [Int]
        var x: [Float]
        var outputs: [String: Values]
        var outputOrder: [String]

        enum CodingKeys: String, CodingKey {
            case input, shape, x, outputs
            case frozenInputs = "frozen_inputs", frozenOutputs = "frozen_outputs", outputOrder = "output_order"
        }
    }

    static func cases() throws -> [String: Case] {
        try JSONDecoder().decode([String: Case].self, from: Data(contentsOf: models.appendingPathComponent("models.json")))
    }

    /// Runs `graph` on the case's input (fed as `inputName`) and returns the largest error
    /// relative to each expected output's largest magnitude.
    func maxError(_ graph: Graph, _ c: Case, inputName: String, outputs: [(String, Values)], _ label: String) throws -> Float {
        XCTAssertEqual(graph.runtimeInputs.map(\.name), [inputName], label)
        let results = try Interpreter(graph: graph).run([inputName: Tensor(c.x, shape: c.shape)])
        var worst: Float = 0
        for (name, want) in outputs {
            let got = try XCTUnwrap(results[name], "\(label): output \(name) of \(graph.outputs.map(\.name))")
            XCTAssertEqual(got.shape, want.shape, "\(label) \(name)")
            guard case .float(let a) = got.storage, a.count == want.values.count else { XCTFail("\(label) \(name): \(got.storage.count) values"); continue }
            let scale = max(want.values.map(abs).max() ?? 0, 1e-6)
            worst = max(worst, zip(a, want.values).map { abs($0 - $1) / scale }.max() ?? 0)
        }
        return worst
    }

    func testEveryModelAsSavedModelMatchesTensorFlow() throws {
        let cases = try Self.cases()
        XCTAssertEqual(Set(cases.keys), Set(Self.names))
        for name in Self.names {
            let c = try XCTUnwrap(cases[name])
            let graph = try TensorFlowImporter.importModel(at: Self.models.appendingPathComponent(name), evaluate: ShapeDerivedValues.evaluate)
            XCTAssertEqual(graph.outputs.map(\.name), c.outputOrder, name)
            // The signature declares the outputs' types and shapes.
            for o in graph.outputs {
                XCTAssertEqual(o.dtype, .float32, "\(name) \(o.name)")
                XCTAssertEqual(o.shape?.count, c.outputs[o.name]?.shape.count, "\(name) \(o.name)")
            }
            let error = try maxError(graph, c, inputName: c.input, outputs: c.outputOrder.compactMap { k in c.outputs[k].map { (k, $0) } }, name)
            XCTAssertLessThanOrEqual(error, 1e-4, name)
            print("SavedModel \(name): max relative error \(error), \(graph.nodes.count) nodes, \(graph.constants.count) constants")
        }
    }

    func testEveryModelAsFrozenGraphMatchesTensorFlow() throws {
        let cases = try Self.cases()
        for name in Self.names {
            let c = try XCTUnwrap(cases[name])
            let graph = try TensorFlowImporter.importModel(at: Self.models.appendingPathComponent(name + ".pb"), evaluate: ShapeDerivedValues.evaluate)
            let outputNames = c.frozenOutputs.map { $0.hasSuffix(":0") ? String($0.dropLast(2)) : $0 }
            XCTAssertEqual(graph.outputs.map(\.name), outputNames, name)
            let expected = zip(outputNames, c.outputOrder).compactMap { n, k in c.outputs[k].map { (n, $0) } }
            let error = try maxError(graph, c, inputName: "input", outputs: expected, name + ".pb")
            XCTAssertLessThanOrEqual(error, 1e-4, name)
            print("frozen \(name): max relative error \(error), \(graph.nodes.count) nodes")
        }
    }

    func testInputsAndOutputsByNameCutTheGraph() throws {
        let c = try XCTUnwrap(try Self.cases()["cnn"])
        let url = Self.models.appendingPathComponent("cnn.pb")
        let graph = try TensorFlowImporter.importModel(at: url, inputs: ["input:0"], outputs: ["Identity:0"])
        XCTAssertEqual(graph.outputs.map(\.name), ["Identity:0"])
        XCTAssertLessThanOrEqual(try maxError(graph, c, inputName: "input:0", outputs: [("Identity:0", try XCTUnwrap(c.outputs["dense"]))], "named"), 1e-4)
        let saved = try TensorFlowImporter.importModel(at: Self.models.appendingPathComponent("cnn"), inputs: ["image"], outputs: ["dense"])
        XCTAssertEqual(saved.outputs.map(\.name), ["dense"])
        let missing = errorText { _ = try TensorFlowImporter.importModel(at: url, outputs: ["no_such_node"]) }
        XCTAssertEqual(missing, "\(url.path): tensor 'no_such_node': malformed: no node of this name")
    }

    func testSavedModelPbGivenDirectlyFindsItsVariables() throws {
        let c = try XCTUnwrap(try Self.cases()["mlp"])
        let graph = try TensorFlowImporter.importModel(at: Self.models.appendingPathComponent("mlp/saved_model.pb"))
        let error = try maxError(graph, c, inputName: c.input, outputs: c.outputOrder.compactMap { k in c.outputs[k].map { (k, $0) } }, "mlp pb")
        XCTAssertLessThanOrEqual(error, 1e-4)
    }

    /// The tf.Module fixture of the bundle tests: y = relu(x · kernel + bias), its variables of many types unread.
    func testTheModuleSavedModelComputesItsDenseLayer() throws {
        let graph = try TensorFlowImporter.importModel(at: TensorFlowFixtures.savedModel)
        XCTAssertEqual(graph.inputs.map(\.name), ["x"])
        XCTAssertEqual(graph.outputs.map(\.name), ["y"])
        XCTAssertEqual(Set(graph.constants.map(\.name)), ["kernel", "bias"])
        let bundle = try TensorBundle(prefix: TensorFlowFixtures.moduleVariables)
        guard case .float(let k) = try bundle.tensor("kernel/.ATTRIBUTES/VARIABLE_VALUE").storage,
              case .float(let b) = try bundle.tensor("bias/.ATTRIBUTES/VARIABLE_VALUE").storage else { return XCTFail("kernel, bias") }
        let x: [Float] = [0.5, -1, 2, 0.25, 1, 1, -1, 3]
        let y = try XCTUnwrap(try Interpreter(graph: graph).run(["x": Tensor(x, shape: [2, 4])])["y"])
        var want: [Float] = []
        for r in 0..<2 { for j in 0..<3 { want.append(max(0, (0..<4).reduce(b[j]) { $0 + x[r * 4 + $1] * k[$1 * 3 + j] })) } }
        guard case .float(let got) = y.storage else { return XCTFail("y") }
        for (g, w) in zip(got, want) { XCTAssertEqual(g, w, accuracy: 1e-5) }
        let frozen = try TensorFlowImporter.importModel(at: TensorFlowFixtures.dir.appendingPathComponent("frozen.pb"))
        XCTAssertEqual(frozen.constants.count, 2)
    }

    func testUnsupportedOpsAreListedAtOnce() throws {
        let url = Self.models.appendingPathComponent("while.pb")
        let text = errorText { _ = try TensorFlowImporter.importModel(at: url) }
        XCTAssertTrue(text.hasPrefix("\(url.path): unsupported ops (1): ShrinkwrapMadeUp (node 'mystery')"), text)
        // convert_variables_to_constants_v2 lowers the While into a TF1 frame: unrolled, never listed.
        XCTAssertFalse(text.contains("Enter (") || text.contains("NextIteration ("), text)
        XCTAssertFalse(text.contains("\n"))
    }

    /// The same file's data-dependent tf.cond (lowered to Switch / Merge): refused by its Switch.
    func testATF1CondOnDataIsRefused() throws {
        let url = Self.models.appendingPathComponent("while.pb")
        let text = errorText { _ = try TensorFlowImporter.importModel(at: url, outputs: ["Identity"], evaluate: ShapeDerivedValues.evaluate) }
        XCTAssertTrue(text.hasPrefix("\(url.path): node 'cond/"), text)
        XCTAssertTrue(text.contains("(Switch): unsupported: cannot compute"), text)
        XCTAssertTrue(text.contains("changes with the inputs' unfixed dimensions or with the data"), text)
    }

    /// TF1 conds as frozen TF1 Keras models have them: the learning phase (a PlaceholderWithDefault
    /// False; the training branch's dropout is never read) and the input's width (computed at import).
    func testTF1CondsTakeTheBranchTheirPredicateNames() throws {
        struct Expected: Decodable { var shape: [Int]; var x: [Float]; var y_shape: [Int]; var y: [Float] }
        let e = try JSONDecoder().decode(Expected.self, from: Data(contentsOf: Self.models.appendingPathComponent("tf1cond.json")))
        let url = Self.models.appendingPathComponent("tf1cond.pb")
        let graph = try TensorFlowImporter.importModel(at: url, evaluate: ShapeDerivedValues.evaluate)
        XCTAssertEqual(graph.outputs.map(\.name), ["y"])
        XCTAssertEqual(graph.runtimeInputs.map(\.name), ["x"])
        let y = try XCTUnwrap(try Interpreter(graph: graph).run(["x": Tensor(e.x, shape: e.shape)])["y"])
        XCTAssertEqual(y.shape, e.y_shape)
        for (a, b) in zip(y.floats ?? [], e.y) { XCTAssertEqual(a, b, accuracy: 1e-5) }
        let noEvaluator = errorText { _ = try TensorFlowImporter.importModel(at: url) }
        XCTAssertTrue(noEvaluator.contains("(Switch): unsupported: values computed from input shapes at run time"), noEvaluator)
    }

    /// Keras' LSTM / GRU / SimpleRNN are While loops over TensorLists: unrolled, one body per step
    /// (the sequence length, 5, comes from Shape of the input: the evaluator computes it).
    func testKerasRecurrentLoopsAreUnrolled() throws {
        let graph = try TensorFlowImporter.importModel(at: Self.models.appendingPathComponent("recurrent"), evaluate: ShapeDerivedValues.evaluate)
        XCTAssertFalse(graph.nodes.contains { ["Loop", "If"].contains($0.opType) })
        XCTAssertEqual(graph.nodes.filter { $0.opType == "Tanh" }.count, 5 * 2 + 5 + 5, "LSTM: 2 tanh per step, GRU: 1, SimpleRNN: 1")
        // Frozen the default way, the loops are TF1 frames (Enter / Merge / Switch / NextIteration / Exit): unrolled the same.
        let c = try XCTUnwrap(try Self.cases()["recurrent"])
        let lowered = try TensorFlowImporter.importModel(at: Self.models.appendingPathComponent("recurrent_tf1.pb"), evaluate: ShapeDerivedValues.evaluate)
        XCTAssertEqual(lowered.nodes.filter { $0.opType == "Tanh" }.count, 5 * 2 + 5 + 5)
        let key = try XCTUnwrap(c.outputOrder.first)
        let error = try maxError(lowered, c, inputName: "input", outputs: [(try XCTUnwrap(lowered.outputs.first?.name), try XCTUnwrap(c.outputs[key]))], "tf1")
        XCTAssertLessThanOrEqual(error, 1e-4)
        // Without an evaluator the trip count is not known at import: refused, naming the loop.
        let folder = Self.models.appendingPathComponent("recurrent")
        let text = errorText { _ = try TensorFlowImporter.importModel(at: folder) }
        XCTAssertTrue(text.hasPrefix("\(folder.path)/saved_model.pb: node '"), text)
        XCTAssertTrue(text.contains("(StatelessWhile): unsupported: values computed from input shapes at run time"), text)
    }

    func testALoopWhoseTripCountDependsOnTheDataIsRefused() {
        let url = Self.models.appendingPathComponent("datawhile.pb")
        let text = errorText { _ = try TensorFlowImporter.importModel(at: url, evaluate: ShapeDerivedValues.evaluate) }
        XCTAssertTrue(text.hasPrefix("\(url.path): node 'while' (StatelessWhile): unsupported: "), text)
        XCTAssertTrue(text.contains("a loop whose condition is computed from data at run time"), text)
        XCTAssertFalse(text.contains("\n"))
    }

    func testABadSignatureNameListsTheSignatures() {
        let folder = Self.models.appendingPathComponent("cnn")
        let text = errorText { _ = try TensorFlowImporter.importModel(at: folder, signature: "predict") }
        XCTAssertEqual(text, "\(folder.path)/saved_model.pb: signature_def: unsupported: no signature 'predict' (the SavedModel has: serving_default)")
    }

    func testAMissingVariablesFolderIsAnError() throws {
        let copy = try makeTempDir("tf-novars")
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.copyItem(at: Self.models.appendingPathComponent("cnn/saved_model.pb"), to: copy.appendingPathComponent("saved_model.pb"))
        let text = errorText { _ = try TensorFlowImporter.importModel(at: copy) }
        XCTAssertTrue(text.hasPrefix(copy.appendingPathComponent("variables/variables.index").path + ": cannot read: the SavedModel has variables"), text)
        let notModel = errorText { _ = try TensorFlowImporter.importModel(at: copy.appendingPathComponent("variables")) }
        XCTAssertTrue(notModel.contains("no such file or folder"), notModel)
    }

    /// Truncations and byte flips of a frozen graph and of a SavedModel's saved_model.pb:
    /// an import either works or throws a one-line ImportError.
    func testDamagedProtobufsNeverCrash() throws {
        let copy = try makeTempDir("tf-damaged")
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.copyItem(at: Self.models.appendingPathComponent("shapes"), to: copy.appendingPathComponent("shapes"))
        var rng = SplitMix(seed: 7)
        var outcomes = (imported: 0, refused: 0)
        for (source, target) in [(Self.models.appendingPathComponent("shapes.pb"), copy.appendingPathComponent("damaged.pb")),
                                 (Self.models.appendingPathComponent("shapes/saved_model.pb"), copy.appendingPathComponent("shapes/saved_model.pb"))] {
            let original = try TensorFlowFixtures.bytes(source)
            for trial in 0..<60 {
                var bytes = original
                if trial < 20 {
                    bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count))))
                } else {
                    for _ in 0..<(1 + trial % 4) { bytes[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: rng.next() | 1) }
                }
                try Data(bytes).write(to: target)
                let url = target.lastPathComponent == "saved_model.pb" ? target.deletingLastPathComponent() : target
                do {
                    _ = try TensorFlowImporter.importModel(at: url)
                    outcomes.imported += 1
                } catch let error as ImportError {
                    XCTAssertFalse(error.description.contains("\n"), error.description)
                    XCTAssertTrue(error.description.hasPrefix(target.path) || error.description.hasPrefix(copy.path), error.description)
                    outcomes.refused += 1
                }
            }
        }
        XCTAssertGreaterThan(outcomes.refused, 20)
        print("damaged protobufs: \(outcomes.imported) imported, \(outcomes.refused) refused")
    }

    func testSupportedOpsNameTheMainOps() {
        let ops = Set(TensorFlowImporter.supportedOps)
        for op in ["Conv2D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "MatMul", "FusedBatchNormV3", "StridedSlice", "ResizeBilinear",
                   "ConcatV2", "ReadVariableOp", "Pack", "Unpack", "SplitV", "GatherV2", "Select", "StatelessWhile", "StatelessIf",
                   "TensorListSetItem", "TensorListStack", "ReverseV2", "ZerosLike"] {
            XCTAssertTrue(ops.contains(op), op)
        }
        // TF1 frame ops are never translated one by one (frames become unrolled loops); conds' Switch / Merge are.
        XCTAssertFalse(ops.contains("Enter") || ops.contains("NextIteration") || ops.contains("Exit") || ops.contains("LoopCond"))
        XCTAssertTrue(ops.contains("Switch") && ops.contains("Merge"))
        XCTAssertFalse(ops.contains { $0.hasPrefix("_") }, "the importer's own ops are not listed")
        XCTAssertEqual(TensorFlowImporter.supportedOps, TensorFlowImporter.supportedOps.sorted())
    }
}
