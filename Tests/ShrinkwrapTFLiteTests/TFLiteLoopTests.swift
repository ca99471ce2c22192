import FlatBuffers
import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
@testable import ShrinkwrapTFLite
import XCTest

/// Loop → WHILE (cond and body subgraphs) → Loop: the exported file, read back by the importer, computes
/// what the source graph did; malformed WHILEs are one-line errors.
final class TFLiteLoopTests: XCTestCase {
    /// Loop(M = 5, cond = go, acc0, buf0), body (i, c, acc, buf):
    ///   prev = buf[:, i:i+1, :] (Slice with run-time starts), hot = Σ OneHot(i, 5) · [1, 2, 3, 4, 5] (= i + 1),
    ///   acc2 = acc + x + prev + hot (x read from the main graph),
    ///   buf2 = ScatterElements(buf, i broadcast, acc2[0], axis 1) (row i written), c2 = Σ acc2 < limit.
    static func loopGraph(limit: Float) -> Graph {
        var body = Graph(name: "body")
        body.inputs = [ValueInfo(name: "i", dtype: .int64, shape: []), ValueInfo(name: "c", dtype: .bool, shape: []),
                       ValueInfo(name: "acc", dtype: .float32, shape: nil), ValueInfo(name: "buf", dtype: .float32, shape: nil)]
        func ints(_ name: String, _ v: [Int64]) { body.setConstant(Constant(name: name, tensor: Tensor(ints: v, shape: [v.count]))) }
        ints("axis0", [0]); ints("axis1", [1]); ints("one", [1]); ints("row_shape", [1, 3]); ints("index_shape", [1, 1, 3])
        ints("sum_axes", [0, 1]); ints("zero", [0])
        body.setConstant(Constant(name: "depth", tensor: .scalar(int: 5)))
        body.setConstant(Constant(name: "hot_values", tensor: Tensor([0, 1], shape: [2])))
        body.setConstant(Constant(name: "weights", tensor: Tensor([1, 2, 3, 4, 5], shape: [5])))
        body.setConstant(Constant(name: "limit", tensor: Tensor([limit], shape: [])))
        body.nodes = [
            Node(name: "i1", opType: "Unsqueeze", inputs: ["i", "axis0"], outputs: ["i1"]),
            Node(name: "i_end", opType: "Add", inputs: ["i1", "one"], outputs: ["i_end"]),
            Node(name: "prev", opType: "Slice", inputs: ["buf", "i1", "i_end", "axis1"], outputs: ["prev"]),
            Node(name: "prev_row", opType: "Reshape", inputs: ["prev", "row_shape"], outputs: ["prev_row"]),
            Node(name: "hot", opType: "OneHot", inputs: ["i", "depth", "hot_values"], outputs: ["hot"]),
            Node(name: "hot_w", opType: "Mul", inputs: ["hot", "weights"], outputs: ["hot_w"]),
            Node(name: "hot_sum", opType: "ReduceSum", inputs: ["hot_w", "axis0"], outputs: ["hot_sum"], attributes: ["keepdims": .int(0)]),
            Node(name: "a1", opType: "Add", inputs: ["acc", "x"], outputs: ["a1"]),
            Node(name: "a2", opType: "Add", inputs: ["a1", "prev_row"], outputs: ["a2"]),
            Node(name: "acc2", opType: "Add", inputs: ["a2", "hot_sum"], outputs: ["acc2"]),
            Node(name: "first", opType: "Slice", inputs: ["acc2", "zero", "one", "axis0"], outputs: ["first"]),
            Node(name: "upd", opType: "Reshape", inputs: ["first", "index_shape"], outputs: ["upd"]),
            Node(name: "idx", opType: "Expand", inputs: ["i1", "index_shape"], outputs: ["idx"]),
            Node(name: "buf2", opType: "ScatterElements", inputs: ["buf", "idx", "upd"], outputs: ["buf2"], attributes: ["axis": .int(1)]),
            Node(name: "total", opType: "ReduceSum", inputs: ["acc2", "sum_axes"], outputs: ["total"], attributes: ["keepdims": .int(0)]),
            Node(name: "c2", opType: "Less", inputs: ["total", "limit"], outputs: ["c2"]),
        ]
        body.outputs = [ValueInfo(name: "c2", dtype: .bool, shape: nil), ValueInfo(name: "acc2", dtype: .float32, shape: nil),
                        ValueInfo(name: "buf2", dtype: .float32, shape: nil)]
        var g = Graph(name: "loop")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2), .fixed(3)]), ValueInfo(name: "go", dtype: .bool, shape: [])]
        g.setConstant(Constant(name: "m", tensor: .scalar(int: 5)))
        g.setConstant(Constant(name: "acc0", tensor: Tensor([Float](repeating: 0.25, count: 6), shape: [2, 3])))
        g.setConstant(Constant(name: "buf0", tensor: Tensor([Float](repeating: -1, count: 15), shape: [1, 5, 3])))
        g.nodes = [Node(name: "loop", opType: "Loop", inputs: ["m", "go", "acc0", "buf0"], outputs: ["acc_final", "buf_final"],
                        attributes: ["body": .graph(body)])]
        g.outputs = [ValueInfo(name: "acc_final", dtype: .float32, shape: nil), ValueInfo(name: "buf_final", dtype: .float32, shape: nil)]
        return g
    }

    func run(_ g: Graph, _ feeds: [String: Tensor]) throws -> [Tensor] {
        let out = try Interpreter(graph: g).run(feeds)
        return try g.outputs.map { try XCTUnwrap(out[$0.name], $0.name) }
    }

    func testLoopRoundTripsThroughWhile() throws {
        let x = Tensor([0.5, -1, 2, 1.5, 0, -0.5], shape: [2, 3])
        // limit 1e9: all 5 trips (M ends it); limit 20: the body's condition ends it earlier; go = false: no trip.
        for (limit, go) in [(Float(1e9), true), (20, true), (1e9, false)] {
            let g = Self.loopGraph(limit: limit)
            let prepared = try ExportPreparation.prepare(g, format: TFLiteExporter.format, keepingLoops: true).graph
            XCTAssertTrue(prepared.nodes.contains { $0.opType == "Loop" })
            let bytes = try TFLiteExporter.exportBytes(prepared)
            let model = try TFLiteModel(bytes: bytes, file: "loop.tflite")
            XCTAssertEqual(model.subgraphCount, 3)
            XCTAssertTrue(model.ops.contains { $0.name == "WHILE" })
            let body = model.subgraphs[2].ops.map(\.name)
            for op in ["ONE_HOT", "SCATTER_ND", "SLICE", "SELECT_V2"] { XCTAssertTrue(body.contains(op), "\(op) in \(body)") }
            let back = try TFLiteImporter.importModel(bytes: bytes, file: "loop.tflite")
            let feeds = ["x": x, "go": Tensor(bools: [go], shape: [])]
            let want = try run(g, feeds), got = try run(back, feeds)
            XCTAssertEqual(want.count, got.count)
            for (a, b) in zip(want, got) {
                XCTAssertEqual(a.shape, b.shape)
                let d = zip(a.floats ?? [], b.floats ?? []).map { abs($0 - $1) }.max() ?? .infinity
                XCTAssertLessThanOrEqual(d, 1e-5, "limit \(limit) go \(go): \(a.floats ?? []) vs \(b.floats ?? [])")
            }
            // The rows the loop wrote differ from the initial −1 exactly when it ran.
            XCTAssertEqual(want[1].floats?.contains { $0 != -1 }, go)
        }
    }

    /// ScatterElements outside a loop, axis 0, a negative index among constant ones: ScatterND + Where.
    func testScatterElementsWithNegativeIndex() throws {
        var g = Graph(name: "scatter")
        g.inputs = [ValueInfo(name: "data", dtype: .float32, shape: [.fixed(3), .fixed(3)]),
                    ValueInfo(name: "upd", dtype: .float32, shape: [.fixed(1), .fixed(3)])]
        g.setConstant(Constant(name: "idx", tensor: Tensor(ints: [-1, 0, 1], shape: [1, 3])))
        g.nodes = [Node(name: "s", opType: "ScatterElements", inputs: ["data", "idx", "upd"], outputs: ["y"], attributes: ["axis": .int(0)])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        let bytes = try TFLiteExporter.exportBytes(try ExportPreparation.prepare(g, format: TFLiteExporter.format).graph)
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "s.tflite")
        let feeds = ["data": Tensor((1...9).map(Float.init), shape: [3, 3]), "upd": Tensor([10, 20, 30], shape: [1, 3])]
        let want = try run(g, feeds), got = try run(back, feeds)
        XCTAssertEqual(want.first?.floats, [1, 20, 3, 4, 5, 30, 10, 8, 9])
        XCTAssertEqual(got.first?.floats, want.first?.floats)
    }

    /// OneHot with run-time indices, negative ones among them: ONNX counts them from the end, TFLite's
    /// ONE_HOT gives them all `off`, so the exporter wraps them and the importer maps TFLite's meaning back.
    func testOneHotNegativeIndicesKeepTheirMeaningBothWays() throws {
        var g = Graph(name: "hot")
        g.inputs = [ValueInfo(name: "i", dtype: .int64, shape: [.fixed(5)])]
        g.setConstant(Constant(name: "depth", tensor: Tensor(ints: [4], shape: [])))
        g.setConstant(Constant(name: "values", tensor: Tensor([0, 1], shape: [2])))
        g.nodes = [Node(name: "h", opType: "OneHot", inputs: ["i", "depth", "values"], outputs: ["y"])]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        let bytes = try TFLiteExporter.exportBytes(try ExportPreparation.prepare(g, format: TFLiteExporter.format).graph)
        let back = try TFLiteImporter.importModel(bytes: bytes, file: "hot.tflite")
        let feeds = ["i": Tensor(ints: [0, -1, 3, -4, 9], shape: [5])]
        let want = try run(g, feeds), got = try run(back, feeds)
        XCTAssertEqual(want.first?.floats, [1, 0, 0, 0, /* -1 → 3 */ 0, 0, 0, 1, 0, 0, 0, 1, /* -4 → 0 */ 1, 0, 0, 0, /* 9 */ 0, 0, 0, 0])
        XCTAssertEqual(got.first?.floats, want.first?.floats)
        XCTAssertTrue(back.nodes.contains { $0.opType == "Where" }, "the importer keeps TFLite's meaning of a negative index")
    }

    /// Subgraph 0: WHILE over one float [1] variable with the given subgraph indices; subgraph 1: cond
    /// (x → x < 3), subgraph 2: body (x → x + 1), or with `bodyOutputs` 2 a body giving two values.
    func whileModel(cond: Int32, body: Int32, bodyOutputs: Int = 1) throws -> [UInt8] {
        var f = TFLiteFileBuilder()
        let whileCode = try XCTUnwrap(TFLiteEmitter.opCodes["WHILE"]), less = try XCTUnwrap(TFLiteEmitter.opCodes["LESS"])
        let add = try XCTUnwrap(TFLiteEmitter.opCodes["ADD"]), options = try XCTUnwrap(TFLiteEmitter.optionTypes["WhileOptions"])
        let x = f.addTensor("x", shape: [1], type: 0), y = f.addTensor("y", shape: [1], type: 0)
        f.inputs = [x]
        f.outputs = [y]
        f.operators.append(.init(opcode: f.opcode(whileCode, version: 1), inputs: [x], outputs: [y], optionsType: options, options: { b in
            b.table { t in t.add(0, cond, default: 0); t.add(1, body, default: 0) }
        }))
        var c = f.subgraphBuilder()
        let cx = c.addTensor("x", shape: [1], type: 0), three = c.addTensor("three", shape: [1], type: 0, data: .littleEndian(floats: [3]))
        let cy = c.addTensor("go", shape: [1], type: 6)
        c.operators.append(.init(opcode: c.opcode(less, version: 1), inputs: [cx, three], outputs: [cy], optionsType: 0, options: nil))
        c.inputs = [cx]
        c.outputs = [cy]
        _ = f.finishSubgraph(c, name: "cond")
        var b = f.subgraphBuilder()
        let bx = b.addTensor("x", shape: [1], type: 0), one = b.addTensor("one", shape: [1], type: 0, data: .littleEndian(floats: [1]))
        let by = b.addTensor("x1", shape: [1], type: 0)
        b.operators.append(.init(opcode: b.opcode(add, version: 1), inputs: [bx, one], outputs: [by], optionsType: 0, options: nil))
        b.inputs = [bx]
        b.outputs = [Int](repeating: by, count: bodyOutputs)
        _ = f.finishSubgraph(b, name: "body")
        return try f.serialize(subgraphName: "main", description: "", metadata: [])
    }

    func testHandMadeWhileImportsAndRuns() throws {
        let g = try TFLiteImporter.importModel(bytes: try whileModel(cond: 1, body: 2), file: "w.tflite")
        let y = try run(g, ["x": Tensor([0.5], shape: [1])])
        XCTAssertEqual(y.first?.floats, [3.5])
        let none = try run(g, ["x": Tensor([7], shape: [1])])
        XCTAssertEqual(none.first?.floats, [7])
    }

    func testMalformedWhileIsAnError() throws {
        let cases: [(bytes: [UInt8], message: String)] = [
            (try whileModel(cond: 7, body: 2), "cond_subgraph_index 7 is outside the 3 subgraphs"),
            (try whileModel(cond: 1, body: -1), "body_subgraph_index -1 is outside the 3 subgraphs"),
            (try whileModel(cond: 1, body: 0), "subgraph cycle: 0 → 0"),
            (try whileModel(cond: 1, body: 2, bodyOutputs: 2), "body subgraph 2 has 1 inputs and 2 outputs"),
        ]
        for (bytes, message) in cases {
            XCTAssertThrowsError(try TFLiteImporter.importModel(bytes: bytes, file: "w.tflite")) { e in
                let text = "\(e)"
                XCTAssertTrue(text.contains(message), text)
                XCTAssertTrue(text.contains("WHILE"), text)
                XCTAssertFalse(text.contains("\n"), text)
            }
        }
    }
}
