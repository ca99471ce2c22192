import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// Loops and the dynamic-shape layers: an ONNX-semantics Loop (in ExportPreparation's normal
/// form, annotated by hand here) → loop layer → our importer → interpreter equals the source;
/// malformed loop layers are errors.
final class CoreMLLoopTests: XCTestCase {
    typealias Layer = CoreML_Specification_NeuralNetworkLayer

    static func info(_ name: String, _ dtype: DType, _ shape: [Int]) -> ValueInfo {
        ValueInfo(name: name, dtype: dtype, shape: shape.map { .fixed($0) })
    }

    static func ints(_ g: inout Graph, _ name: String, _ v: [Int64], shape: [Int]? = nil) {
        g.setConstant(Constant(name: name, tensor: Tensor(ints: v, shape: shape ?? [v.count])))
    }

    /// Body (i, cond, acc, step, buf, hot): acc += x·(i+1) + x[0, min(step, 3)]; buf[0, step, :] = acc;
    /// hot += OneHot(step, 5); step += 1; cond = step < limit. Loop M = 5, cond₀ = limit > 0.
    static func loopGraph() -> Graph {
        var body = Graph(name: "body")
        body.inputs = [info("i", .int64, []), info("cond_in", .bool, []), info("acc_in", .float32, [1, 4]),
                       info("step_in", .int64, [1]), info("buf_in", .float32, [1, 5, 4]), info("hot_in", .float32, [1, 5])]
        ints(&body, "one", [1]); ints(&body, "three", [3]); ints(&body, "axis1", [1]); ints(&body, "axis0", [0])
        ints(&body, "unit", [1], shape: []); ints(&body, "row_shape", [1, 1, 1]); ints(&body, "reps", [1, 1, 4])
        ints(&body, "depth", [5], shape: [])
        body.setConstant(Constant(name: "onef", tensor: Tensor([1], shape: [])))
        body.setConstant(Constant(name: "hot_values", tensor: Tensor([0, 1], shape: [2])))
        let nodes: [(String, [String], [String], [String: Attribute])] = [
            ("Cast", ["i"], ["i_f"], ["to": .int(1)]), ("Add", ["i_f", "onef"], ["k"], [:]), ("Mul", ["x", "k"], ["xs"], [:]),
            ("Min", ["step_in", "three"], ["s0"], [:]), ("Add", ["s0", "one"], ["s1"], [:]),
            ("Slice", ["x", "s0", "s1", "axis1"], ["picked"], [:]),
            ("Add", ["acc_in", "xs"], ["t"], [:]), ("Add", ["t", "picked"], ["acc_out"], [:]),
            ("Add", ["step_in", "one"], ["step_out"], [:]), ("Cast", ["step_out"], ["step_f"], ["to": .int(1)]),
            ("Less", ["step_f", "limit"], ["cond_out"], [:]),
            ("Squeeze", ["step_in", "axis0"], ["r0"], [:]), ("Squeeze", ["step_out", "axis0"], ["r1"], [:]),
            ("Range", ["r0", "r1", "unit"], ["row"], [:]), ("Reshape", ["row", "row_shape"], ["row3"], [:]),
            ("Tile", ["row3", "reps"], ["index"], [:]), ("Unsqueeze", ["acc_out", "axis1"], ["update"], [:]),
            ("ScatterElements", ["buf_in", "index", "update"], ["buf_out"], ["axis": .int(1)]),
            ("OneHot", ["step_in", "depth", "hot_values"], ["hot"], [:]), ("Add", ["hot_in", "hot"], ["hot_out"], [:]),
        ]
        for (k, n) in nodes.enumerated() {
            body.nodes.append(Node(name: "b\(k)_\(n.0)", opType: n.0, inputs: n.1, outputs: n.2, attributes: n.3))
        }
        let shapes: [(String, DType, [Int])] = [
            ("i_f", .float32, []), ("k", .float32, []), ("xs", .float32, [1, 4]), ("s0", .int64, [1]), ("s1", .int64, [1]),
            ("picked", .float32, [1, 1]), ("t", .float32, [1, 4]), ("acc_out", .float32, [1, 4]), ("step_out", .int64, [1]),
            ("step_f", .float32, [1]), ("cond_out", .bool, [1]), ("r0", .int64, []), ("r1", .int64, []), ("row", .int64, [1]),
            ("row3", .int64, [1, 1, 1]), ("index", .int64, [1, 1, 4]), ("update", .float32, [1, 1, 4]),
            ("buf_out", .float32, [1, 5, 4]), ("hot", .float32, [1, 5]), ("hot_out", .float32, [1, 5]),
        ]
        for (n, d, s) in shapes { body.valueInfo[n] = info(n, d, s) }
        body.outputs = ["cond_out", "acc_out", "step_out", "buf_out", "hot_out"].compactMap { body.valueInfo[$0] }

        var g = Graph(name: "loop")
        g.inputs = [info("x", .float32, [1, 4]), info("limit", .float32, [1])]
        ints(&g, "M", [5], shape: [])
        g.setConstant(Constant(name: "zero", tensor: Tensor([0], shape: [])))
        g.setConstant(Constant(name: "acc0", tensor: Tensor([Float](repeating: 0, count: 4), shape: [1, 4])))
        g.setConstant(Constant(name: "buf0", tensor: Tensor([Float](repeating: 0, count: 20), shape: [1, 5, 4])))
        g.setConstant(Constant(name: "hot0", tensor: Tensor([Float](repeating: 0, count: 5), shape: [1, 5])))
        ints(&g, "step0", [0])
        g.nodes = [Node(name: "positive", opType: "Greater", inputs: ["limit", "zero"], outputs: ["cond0"], attributes: [:]),
                   Node(name: "loop", opType: "Loop", inputs: ["M", "cond0", "acc0", "step0", "buf0", "hot0"],
                        outputs: ["acc", "steps", "buf", "hot_total"], attributes: ["body": .graph(body)])]
        for (n, d, s) in [("cond0", DType.bool, [1]), ("acc", .float32, [1, 4]), ("steps", .int64, [1]), ("buf", .float32, [1, 5, 4]),
                          ("hot_total", .float32, [1, 5])] { g.valueInfo[n] = info(n, d, s) }
        g.outputs = ["acc", "steps", "buf", "hot_total"].compactMap { g.valueInfo[$0] }
        return g
    }

    func kinds(_ layers: [Layer]) -> [String] { layers.map { l in l.layer.map { String("\($0)".prefix { $0 != "(" }) } ?? "" } }

    func testLoopRoundTripRunsLikeTheSource() throws {
        let g = try Self.loopGraph().validatedAndSorted()
        let spec = try CoreMLExporter.exportSpec(g)
        XCTAssertEqual(spec.specificationVersion, 5, "oneHot needs specification 5")
        guard let loop = spec.neuralNetwork.layers.first(where: { if case .loop? = $0.layer { return true } else { return false } }) else {
            return XCTFail("no loop layer")
        }
        XCTAssertEqual(loop.loop.maxLoopIterations, 5)
        XCTAssertFalse(loop.loop.conditionVar.isEmpty, "a runtime condition needs the condition network")
        let body = kinds(loop.loop.bodyNetwork.layers)
        for k in ["scatterAlongAxis", "oneHot", "rangeDynamic", "tile", "sliceDynamic", "copy"] { XCTAssertTrue(body.contains(k), "\(k) in \(body)") }
        let back = try CoreMLImporter.importModel(data: try CoreMLExporter.serialize(spec), file: "loop.mlmodel")
        XCTAssertTrue(back.nodes.contains { $0.opType == "Loop" })
        let x = Tensor([0.5, -1, 2, 0.25], shape: [1, 4])
        // limit 3.5 stops on the condition after 4 steps; 100 runs the 5 of M.
        for limit: Float in [3.5, 100, -1] {
            let feed = ["x": x, "limit": Tensor([limit], shape: [1])]
            let want = try Interpreter(graph: g).run(feed), got = try Interpreter(graph: back).run(feed)
            for name in ["acc", "steps", "buf", "hot_total"] {
                guard let a = got[name], let b = want[name] else { XCTFail("limit \(limit): \(name) missing"); continue }
                XCTAssertEqual(a.shape, b.shape, "\(name) limit \(limit)")
                XCTAssertEqual(a.doubles, b.doubles, "\(name) limit \(limit)")
            }
            if limit == 3.5 { XCTAssertEqual(want["steps"]?.doubles, [4]) }
            if limit == 100 { XCTAssertEqual(want["steps"]?.doubles, [5]) }
        }
    }

    func testLoopWithoutConditionWritesAForLoopAndRefusesHugeTripCounts() throws {
        var g = Self.loopGraph()
        g.nodes[1].inputs[1] = ""
        guard case .graph(var body)? = g.nodes[1].attributes["body"] else { return XCTFail("no body") }
        body.outputs[0] = Self.info("cond_in", .bool, [])
        body.nodes.removeAll { $0.outputs == ["cond_out"] }
        g.nodes[1].attributes["body"] = .graph(body)
        let spec = try CoreMLExporter.exportSpec(try g.validatedAndSorted())
        let loop = spec.neuralNetwork.layers.first { if case .loop? = $0.layer { return true } else { return false } }
        XCTAssertEqual(loop?.loop.conditionVar, "", "no condition network for a pure for loop")
        let back = try CoreMLImporter.importModel(data: try CoreMLExporter.serialize(spec), file: "for.mlmodel")
        let feed = ["x": Tensor([1, 2, 3, 4], shape: [1, 4]), "limit": Tensor([0], shape: [1])]
        XCTAssertEqual(try Interpreter(graph: back).run(feed)["buf"]?.doubles, try Interpreter(graph: g).run(feed)["buf"]?.doubles)

        var huge = g
        huge.setConstant(Constant(name: "M", tensor: Tensor(ints: [1 << 25], shape: [])))
        XCTAssertThrowsError(try CoreMLExporter.exportSpec(huge)) { e in
            XCTAssertTrue("\(e)".contains("float32"), "\(e)")
        }
    }

    func testUnsupportedBodyOpsAreListedWithTheLoop() throws {
        var g = Self.loopGraph()
        guard case .graph(var body)? = g.nodes[1].attributes["body"], let k = body.nodes.firstIndex(where: { $0.opType == "Min" }) else {
            return XCTFail("no body")
        }
        body.nodes[k].opType = "Mod"
        g.nodes[1].attributes["body"] = .graph(body)
        XCTAssertThrowsError(try CoreMLExporter.exportSpec(try g.validatedAndSorted())) { e in
            XCTAssertTrue("\(e)".contains("Loop (node 'loop': its body has Mod"), "\(e)")
        }
    }

    // MARK: malformed loop layers

    func model(_ layers: [Layer]) -> Data {
        var m = CoreML_Specification_Model()
        m.specificationVersion = 4
        var f = CoreML_Specification_FeatureDescription()
        f.name = "x"
        f.type.multiArrayType.shape = [2]
        f.type.multiArrayType.dataType = .float32
        m.description_p.input = [f]
        f.name = "y"
        m.description_p.output = [f]
        m.neuralNetwork.arrayInputShapeMapping = .exactArrayMapping
        m.neuralNetwork.layers = layers
        return (try? m.serializedData()) ?? Data()
    }

    func layer(_ name: String, _ inputs: [String], _ outputs: [String], _ set: (inout Layer) -> Void) -> Layer {
        var l = Layer()
        l.name = name; l.input = inputs; l.output = outputs
        set(&l)
        return l
    }

    func testMalformedLoopLayersAreErrors() {
        let copyBack = layer("back", ["x"], ["y"]) { $0.copy = .init() }
        let initY = layer("init", ["x"], ["y"]) { $0.copy = .init() }
        var cases: [(String, [Layer])] = []
        cases.append(("no body", [initY, layer("loop", [], []) { $0.loop.maxLoopIterations = 2 }]))
        cases.append(("conditionVar without network", [initY, layer("loop", [], []) {
            $0.loop.conditionVar = "c"; $0.loop.bodyNetwork.layers = [copyBack]
        }]))
        cases.append(("body reads an undefined blob", [initY, layer("loop", [], []) {
            $0.loop.maxLoopIterations = 2
            $0.loop.bodyNetwork.layers = [self.layer("read", ["nowhere"], ["y"]) { $0.copy = .init() }]
        }]))
        cases.append(("loop with outputs", [initY, layer("loop", [], ["z"]) { $0.loop.bodyNetwork.layers = [copyBack] }]))
        cases.append(("nested loop", [initY, layer("loop", [], []) {
            $0.loop.maxLoopIterations = 2
            $0.loop.bodyNetwork.layers = [self.layer("inner", [], []) { $0.loop.bodyNetwork.layers = [copyBack] }]
        }]))
        cases.append(("condition never made", [initY, layer("loop", [], []) {
            $0.loop.conditionVar = "c"
            $0.loop.conditionNetwork.layers = [self.layer("c0", ["x"], ["d"]) { $0.copy = .init() }]
            $0.loop.bodyNetwork.layers = [copyBack]
        }]))
        for (label, layers) in cases {
            XCTAssertThrowsError(try CoreMLImporter.importModel(data: model(layers), file: "\(label).mlmodel"), label) { e in
                XCTAssertFalse("\(e)".contains("\n"), "\(label): one line: \(e)")
            }
        }
    }

    func testWhileLoopLayerReadsBack() throws {
        // y = x; while y[0] < 10: y = y * 2 (a while loop: condition network, maxLoopIterations 0).
        let layers = [
            layer("init", ["x"], ["y"]) { $0.copy = .init() },
            layer("loop", [], []) {
                $0.loop.conditionVar = "c"
                $0.loop.conditionNetwork.layers = [self.layer("first", ["y"], ["y0"]) {
                    $0.sliceStatic.beginIds = [0]; $0.sliceStatic.endIds = [1]; $0.sliceStatic.strides = [1]
                    $0.sliceStatic.beginMasks = [false]; $0.sliceStatic.endMasks = [false]
                }, self.layer("less", ["y0"], ["c"]) { $0.lessThan.alpha = 10 }]
                $0.loop.bodyNetwork.layers = [self.layer("double", ["y"], ["y2"]) { $0.multiply.alpha = 2 },
                                              self.layer("back", ["y2"], ["y"]) { $0.copy = .init() }]
            },
        ]
        let g = try CoreMLImporter.importModel(data: model(layers), file: "while.mlmodel")
        let out = try Interpreter(graph: g).run(["x": Tensor([3, 1], shape: [2])])
        // The output keeps its name: the loop's final y (the value before the loop is renamed).
        XCTAssertEqual(g.outputs.map(\.name), ["y"])
        XCTAssertEqual(out["y"]?.doubles, [12, 4])
    }
}
