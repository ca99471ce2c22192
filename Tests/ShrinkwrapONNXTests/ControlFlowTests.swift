import Foundation
import ONNXSchema
import Shrinkwrap
import ShrinkwrapIR
import ShrinkwrapONNX
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import SwiftProtobuf
import XCTest

/// If and Loop: import (subgraphs, initializers inside them, outer-scope
/// reads), the interpreter's ONNX semantics, the exporter's round trip
/// (checked by onnxruntime when the venv has it), constant-branch folding and
/// the one-line errors for malformed or hostile files.
final class ControlFlowTests: XCTestCase {
    typealias M = ONNXTestModels

    // MARK: builders

    func graphAttr(_ name: String, _ g: Onnx_GraphProto) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .graph; a.g = g; return a
    }

    func subgraph(_ name: String, nodes: [Onnx_NodeProto], inputs: [Onnx_ValueInfoProto] = [], outputs: [Onnx_ValueInfoProto],
                  initializers: [Onnx_TensorProto] = []) -> Onnx_GraphProto {
        var g = Onnx_GraphProto()
        g.name = name; g.node = nodes; g.input = inputs; g.output = outputs; g.initializer = initializers
        return g
    }

    func int64(_ name: String, _ v: [Int64], dims: [Int64] = []) -> Onnx_TensorProto {
        var t = Onnx_TensorProto(); t.name = name; t.dims = dims; t.dataType = 7; t.int64Data = v; return t
    }

    func load(_ m: Onnx_ModelProto) throws -> Graph { try ONNXImporter.importModel(at: try M.write(m)) }

    func run(_ g: Graph, _ inputs: [String: Tensor]) throws -> [String: Tensor] { try Interpreter(graph: g).run(inputs) }

    /// y = If(c) then { t = x + x (x read from the main graph) } else { e = x · w (w a branch initializer) };
    /// `nested`: the then branch holds its own If on c2 whose branches read x and t.
    func ifModel(nested: Bool = false) -> Onnx_ModelProto {
        var thenNodes = [M.node("Add", ["x", "x"], ["t"])]
        var thenOut = "t"
        if nested {
            let inner = M.node("If", ["c2"], ["u"], name: "inner", attributes: [
                graphAttr("then_branch", subgraph("tt", nodes: [M.node("Mul", ["t", "x"], ["tt_out"])], outputs: [M.valueInfo("tt_out", dims: [3])])),
                graphAttr("else_branch", subgraph("te", nodes: [M.node("Sub", ["t", "x"], ["te_out"])], outputs: [M.valueInfo("te_out", dims: [3])])),
            ])
            thenNodes.append(inner)
            thenOut = "u"
        }
        let thenG = subgraph("then", nodes: thenNodes, outputs: [M.valueInfo(thenOut, dims: [3])])
        let elseG = subgraph("else", nodes: [M.node("Mul", ["x", "w"], ["e"])], outputs: [M.valueInfo("e", dims: [3])],
                             initializers: [M.tensor("w", dims: [3], floats: [2, 3, 4])])
        let ifNode = M.node("If", ["c"], ["y"], name: "choose", attributes: [graphAttr("then_branch", thenG), graphAttr("else_branch", elseG)])
        var inputs = [M.valueInfo("x", dims: [3]), M.valueInfo("c", dims: [], type: 9)]
        if nested { inputs.append(M.valueInfo("c2", dims: [], type: 9)) }
        return M.model(nodes: [ifNode], inputs: inputs, outputs: [M.valueInfo("y", dims: [3])])
    }

    /// Loop(M, cond, s0) with body (i, c, s) → (c', s + x · i, s + x · i as a scan output); x is read from the
    /// main graph. `stopAfter`: c' = i < stopAfter, else c' = c.
    func loopModel(stopAfter: Int64? = nil) -> Onnx_ModelProto {
        var nodes = [
            M.node("Cast", ["i"], ["fi"], attributes: [M.intAttr("to", 1)]),
            M.node("Mul", ["x", "fi"], ["xi"]),
            M.node("Add", ["s", "xi"], ["s_next"]),
            M.node("Identity", ["s_next"], ["scan"]),
        ]
        if let stopAfter {
            nodes.append(M.node("Less", ["i", "limit"], ["c_next"]))
            _ = stopAfter
        } else {
            nodes.append(M.node("Identity", ["c"], ["c_next"]))
        }
        let body = subgraph("body", nodes: nodes,
                            inputs: [M.valueInfo("i", dims: [], type: 7), M.valueInfo("c", dims: [], type: 9), M.valueInfo("s", dims: [2])],
                            outputs: [M.valueInfo("c_next", dims: [], type: 9), M.valueInfo("s_next", dims: [2]), M.valueInfo("scan", dims: [2])],
                            initializers: stopAfter.map { [int64("limit", [$0])] } ?? [])
        let loop = M.node("Loop", ["m", "cond", "s0"], ["s_final", "scans"], name: "loop", attributes: [graphAttr("body", body)])
        return M.model(nodes: [loop],
                       inputs: [M.valueInfo("m", dims: [], type: 7), M.valueInfo("cond", dims: [], type: 9),
                                M.valueInfo("x", dims: [2]), M.valueInfo("s0", dims: [2])],
                       outputs: [M.valueInfo("s_final", dims: [2]), M.valueInfo("scans", dims: [-1, 2])])
    }

    let x = Tensor([1, -2, 5], shape: [3])
    func flag(_ b: Bool) -> Tensor { Tensor(bools: [b], shape: []) }

    // MARK: If

    func testIfRunsTheBranchTheConditionPicks() throws {
        let g = try load(ifModel())
        XCTAssertEqual(g.nodes.map(\.opType), ["If"])
        XCTAssertEqual(g.nodes[0].capturedNames, ["x"])
        let seen = Inspection(graph: g, file: "if.onnx").subgraphs
        XCTAssertEqual(seen?.count, 2)
        XCTAssertEqual(seen?.nodeCount, 2)
        XCTAssertEqual(seen?.weightCount, 1)  // the else branch's initializer
        XCTAssertEqual(try run(g, ["x": x, "c": flag(true)])["y"]?.floats, [2, -4, 10])
        XCTAssertEqual(try run(g, ["x": x, "c": flag(false)])["y"]?.floats, [2, -6, 20])
    }

    func testNestedIfReadsValuesOfBothEnclosingGraphs() throws {
        let g = try load(ifModel(nested: true))
        XCTAssertEqual(try run(g, ["x": x, "c": flag(true), "c2": flag(true)])["y"]?.floats, [2, 8, 50])
        XCTAssertEqual(try run(g, ["x": x, "c": flag(true), "c2": flag(false)])["y"]?.floats, [1, -2, 5])
        XCTAssertEqual(try run(g, ["x": x, "c": flag(false), "c2": flag(true)])["y"]?.floats, [2, -6, 20])
    }

    func testAValueOnlyASubgraphReadsStaysAliveAndOrdered() throws {
        // x2 = x · 3 is read only inside the branch, and the If node comes first in the file.
        var m = ifModel()
        m.graph.node[0].attribute[0].g.node[0].input = ["x2", "x2"]
        m.graph.node.append(M.node("Mul", ["x", "three"], ["x2"]))
        m.graph.initializer.append(M.tensor("three", dims: [], floats: [3]))
        let g = try load(m)
        XCTAssertEqual(g.nodes.map(\.opType), ["Mul", "If"])
        XCTAssertEqual(try run(g, ["x": x, "c": flag(true)])["y"]?.floats, [6, -12, 30])
    }

    // MARK: Loop

    func testLoopCarriesValuesAndStacksScanOutputs() throws {
        let g = try load(loopModel())
        let out = try run(g, ["m": Tensor.scalar(int: 4), "cond": flag(true), "x": Tensor([1, 10], shape: [2]), "s0": Tensor([0, 0], shape: [2])])
        // s after i = 0, 1, 2, 3: x·0, x·1, x·3, x·6.
        XCTAssertEqual(out["s_final"]?.floats, [6, 60])
        XCTAssertEqual(out["scans"]?.shape, [4, 2])
        XCTAssertEqual(out["scans"]?.floats, [0, 0, 1, 10, 3, 30, 6, 60])
    }

    func testLoopStopsWhenTheBodySaysSoAndRunsZeroTimes() throws {
        let g = try load(loopModel(stopAfter: 2))
        let feed = ["m": Tensor.scalar(int: 100), "cond": flag(true), "x": Tensor([1, 1], shape: [2]), "s0": Tensor([0, 0], shape: [2])]
        let out = try run(g, feed)
        XCTAssertEqual(out["scans"]?.shape, [3, 2])  // i = 0, 1, 2; the third sets c' = false
        XCTAssertEqual(out["s_final"]?.floats, [3, 3])
        var none = feed
        none["cond"] = flag(false)
        let zero = try run(g, none)
        XCTAssertEqual(zero["s_final"]?.floats, [0, 0])
        XCTAssertEqual(zero["scans"]?.shape, [0, 2])
    }

    func testHostileTripCountFailsWithOneLine() throws {
        let g = try load(loopModel())
        let saved = ControlFlow.iterationLimit
        ControlFlow.iterationLimit = 50
        defer { ControlFlow.iterationLimit = saved }
        let feed = ["m": Tensor.scalar(int: .max), "cond": flag(true), "x": Tensor([1, 1], shape: [2]), "s0": Tensor([0, 0], shape: [2])]
        let text = errorText { _ = try self.run(g, feed) }
        XCTAssertTrue(text.contains("more than 50 iterations"), text)
        XCTAssertTrue(text.contains("loop"), text)
        XCTAssertFalse(text.contains("\n"), text)

        let savedLimit = KernelContext.elementLimit
        KernelContext.elementLimit = 64
        defer { KernelContext.elementLimit = savedLimit }
        let grown = errorText { _ = try self.run(g, ["m": Tensor.scalar(int: 40)] + feed.filter { $0.key != "m" }) }
        XCTAssertTrue(grown.contains("too large"), grown)
    }

    // MARK: malformed files

    func testMissingBranchAndBadBodiesAreOneLineErrors() throws {
        var noElse = ifModel()
        noElse.graph.node[0].attribute.removeAll { $0.name == "else_branch" }
        let a = errorText { _ = try self.load(noElse) }
        XCTAssertTrue(a.contains("else_branch") && a.contains("choose"), a)

        var badBody = loopModel()
        badBody.graph.node[0].attribute[0].g.input.removeLast()
        let b = errorText { _ = try self.load(badBody) }
        XCTAssertTrue(b.contains("Loop body has 2 inputs"), b)

        var undefined = ifModel()
        undefined.graph.node[0].attribute[1].g.node[0].input = ["x", "nowhere"]
        let c = errorText { _ = try self.load(undefined) }
        XCTAssertTrue(c.contains("nowhere") && c.contains("else_branch"), c)

        var unsupported = ifModel()
        unsupported.graph.node[0].attribute[0].g.node.append(M.node("NoSuchOp", ["t"], ["q"]))
        unsupported.graph.node.append(M.node("AlsoMissing", ["y"], ["z"]))
        let d = errorText { _ = try self.load(unsupported) }
        XCTAssertTrue(d.contains("unsupported ops (2)") && d.contains("NoSuchOp") && d.contains("AlsoMissing"), d)
        for t in [a, b, c, d] { XCTAssertFalse(t.contains("\n"), t) }
    }

    // MARK: export, folding, pinning

    func testExportRoundTripKeepsSubgraphs() throws {
        for model in [ifModel(nested: true), loopModel(stopAfter: 2)] {
            let g = try load(model)
            let back = try ONNXImporter.importModel(data: try ONNXExporter.export(g), file: "round-trip.onnx")
            XCTAssertEqual(back.nodes.map(\.opType), g.nodes.map(\.opType))
            XCTAssertEqual(back.allNodes.count, g.allNodes.count)
        }
        let g = try load(ifModel(nested: true))
        let back = try ONNXImporter.importModel(data: try ONNXExporter.export(g), file: "round-trip.onnx")
        let feed = ["x": x, "c": flag(true), "c2": flag(false)]
        XCTAssertEqual(try run(back, feed)["y"], try run(g, feed)["y"])
    }

    func testOnnxRuntimeRunsWhatWeWrite() throws {
        guard FileManager.default.fileExists(atPath: TestPython.venv) else {
            throw XCTSkip("SKIPPED: no python venv at \(TestPython.venv); onnxruntime cross-check not run")
        }
        let dir = try makeTempDir("control-flow-ort")
        let ifGraph = try load(ifModel(nested: true))
        let loopGraph = try load(loopModel(stopAfter: 2))
        try ONNXExporter.export(ifGraph).write(to: dir.appendingPathComponent("if.onnx"))
        try ONNXExporter.export(loopGraph).write(to: dir.appendingPathComponent("loop.onnx"))
        let ours = try run(ifGraph, ["x": x, "c": flag(true), "c2": flag(true)])["y"]?.floats ?? []
        let loop = try run(loopGraph, ["m": Tensor.scalar(int: 9), "cond": flag(true), "x": Tensor([1, 10], shape: [2]),
                                       "s0": Tensor([0.5, 0], shape: [2])])
        let script = """
        import numpy as np, onnxruntime as ort
        s = ort.InferenceSession("if.onnx", providers=["CPUExecutionProvider"])
        y = s.run(None, {"x": np.array([1, -2, 5], np.float32), "c": np.array(True), "c2": np.array(True)})[0]
        assert np.array_equal(y, np.array(\(ours), np.float32)), y
        s = ort.InferenceSession("loop.onnx", providers=["CPUExecutionProvider"])
        f, scans = s.run(None, {"m": np.array(9, np.int64), "cond": np.array(True), "x": np.array([1, 10], np.float32),
                                "s0": np.array([0.5, 0], np.float32)})
        assert np.array_equal(f, np.array(\(loop["s_final"]?.floats ?? []), np.float32)), f
        assert np.array_equal(scans.reshape(-1), np.array(\(loop["scans"]?.floats ?? []), np.float32)), scans
        assert scans.shape == tuple(\(loop["scans"]?.shape ?? [])), scans.shape
        """
        try TestPython.run(script, in: dir, python: TestPython.venv)
    }

    func testConstantConditionsFoldToTheTakenBranch() throws {
        var g = try load(ifModel(nested: true))
        try Models.pinValues([InputValuePin(name: "c", values: [1]), InputValuePin(name: "c2", values: [0])], in: &g)
        XCTAssertFalse(g.inputs.contains { $0.name == "c" })
        let (folded, count) = g.foldingConstantBranches()
        XCTAssertEqual(count, 2)
        XCTAssertFalse(folded.hasControlFlow)
        XCTAssertEqual(try run(folded, ["x": x])["y"]?.floats, [1, -2, 5])
        XCTAssertEqual(try run(g, ["x": x])["y"]?.floats, [1, -2, 5])
        // What the fixed-shape exporters get: no control flow left, same values.
        let prepared = try ExportPreparation.prepare(g, format: "TensorFlow Lite").graph
        XCTAssertFalse(prepared.hasControlFlow)
        XCTAssertEqual(try run(prepared, ["x": x])["y"]?.floats, [1, -2, 5])

        var other = try load(ifModel())
        try Models.pinValues([InputValuePin(name: "c", values: [0])], in: &other)
        let (inlined, n) = other.foldingConstantBranches()
        XCTAssertEqual(n, 1)
        XCTAssertTrue(inlined.isConstant("w"))  // the branch's initializer joined the graph
        XCTAssertEqual(try run(inlined, ["x": x])["y"]?.floats, [2, -6, 20])
    }

    func testPinningRefusesWhatDoesNotFit() throws {
        var g = try load(ifModel())
        let text = errorText { try Models.pinValues([InputValuePin(name: "c", values: [1, 0]), InputValuePin(name: "nope", values: [1])], in: &g) }
        XCTAssertTrue(text.contains("holds 1 values, 2 given") && text.contains("no input 'nope'"), text)
        XCTAssertThrowsError(try InputValuePin(parsing: "sr=abc"))
        XCTAssertEqual(try InputValuePin(parsing: "sr=16000"), InputValuePin(name: "sr", values: [16000]))
    }

    func testFixedShapeExportRefusesLoopsAndUndecidedIfs() throws {
        let g = try load(loopModel())
        let text = errorText { _ = try ExportPreparation.prepare(g, format: "Some format") }
        XCTAssertTrue(text.contains("Some format") && text.contains("Loop 'loop'") && text.contains("a format without loops"), text)
        let i = try load(ifModel())
        let t2 = errorText { _ = try ExportPreparation.prepare(i, format: "Core ML") }
        XCTAssertTrue(t2.contains("If 'choose'") && t2.contains("--input-value"), t2)
    }
}

private func + (a: [String: Tensor], b: [String: Tensor]) -> [String: Tensor] { a.merging(b) { x, _ in x } }
