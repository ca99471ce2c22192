import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// The specification 4–5 layers beside loops (scatterAlongAxis, oneHot, tile, gathers for
/// nearest resizes by non-integer factors) through IR → .mlmodel → import → interpreter; the
/// loop graph through ExportPreparation's keepingLoops and coremltools; hand-made networks
/// with getShape, rangeStatic / rangeDynamic, broadcastToDynamic and sliceDynamic read back.
final class CoreMLDynamicLayerTests: XCTestCase {
    typealias Layer = CoreML_Specification_NeuralNetworkLayer

    /// Prepares, writes, reads back and runs both on `feed`; returns the spec.
    @discardableResult
    func roundTrip(_ g: Graph, _ feed: [String: Tensor], keepingLoops: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws
        -> CoreML_Specification_Model {
        let prepared = try ExportPreparation.prepare(g, format: CoreMLExporter.format, keepingLoops: keepingLoops).graph
        let spec = try CoreMLExporter.exportSpec(prepared)
        let back = try CoreMLImporter.importModel(data: try CoreMLExporter.serialize(spec), file: "t.mlmodel")
        var fed: [String: Tensor] = [:]
        for i in back.runtimeInputs {
            guard let t = feed[i.name] else { XCTFail("input \(i.name) missing", file: file, line: line); continue }
            // Core ML declares integer inputs int32.
            fed[i.name] = i.dtype == .int32 ? Tensor(dtype: .int32, shape: t.shape, storage: t.storage) : t
        }
        let want = try Interpreter(graph: g).run(feed), got = try Interpreter(graph: back).run(fed)
        for (name, w) in want {
            XCTAssertEqual(got[name]?.shape, w.shape, name, file: file, line: line)
            XCTAssertEqual(got[name]?.doubles, w.doubles, name, file: file, line: line)
        }
        return spec
    }

    func kinds(_ spec: CoreML_Specification_Model) -> [String] {
        spec.neuralNetwork.layers.map { l in l.layer.map { String("\($0)".prefix { $0 != "(" }) } ?? "" }
    }

    static func graph(_ inputs: [ValueInfo], _ nodes: [Node], outputs: [String]) -> Graph {
        var g = Graph(name: "t")
        g.inputs = inputs
        g.nodes = nodes
        g.outputs = outputs.map { ValueInfo(name: $0, dtype: nil, shape: nil) }
        return g
    }

    func testScatterOneHotAndTile() throws {
        var g = Self.graph([CoreMLLoopTests.info("data", .float32, [2, 5, 3]), CoreMLLoopTests.info("updates", .float32, [2, 2, 3]),
                            CoreMLLoopTests.info("ids", .int64, [4]), CoreMLLoopTests.info("x", .float32, [2, 3])], [
            Node(name: "scatter", opType: "ScatterElements", inputs: ["data", "idx", "updates"], outputs: ["s"], attributes: ["axis": .int(1)]),
            Node(name: "scatter_add", opType: "ScatterElements", inputs: ["data", "idx", "updates"], outputs: ["sa"],
                 attributes: ["axis": .int(-2), "reduction": .string("add")]),
            Node(name: "hot", opType: "OneHot", inputs: ["ids", "depth", "values"], outputs: ["h"], attributes: ["axis": .int(0)]),
            Node(name: "tile", opType: "Tile", inputs: ["x", "reps"], outputs: ["t"], attributes: [:]),
        ], outputs: ["s", "sa", "h", "t"])
        CoreMLLoopTests.ints(&g, "idx", [4, 0, 1, 2, 3, 0, 1, 1, 1, 0, 4, 2], shape: [2, 2, 3])
        CoreMLLoopTests.ints(&g, "depth", [5], shape: [])
        CoreMLLoopTests.ints(&g, "reps", [2, 1])
        g.setConstant(Constant(name: "values", tensor: Tensor([-1, 3], shape: [2])))
        let feed = ["data": Tensor((0..<30).map { Float($0) }, shape: [2, 5, 3]), "updates": Tensor((0..<12).map { Float(-$0) - 0.5 }, shape: [2, 2, 3]),
                    "ids": Tensor(ints: [-1, 2, 7, -5], shape: [4]), "x": Tensor([1, 2, 3, 4, 5, 6], shape: [2, 3])]
        let spec = try roundTrip(g, feed)
        XCTAssertEqual(spec.specificationVersion, 5, "oneHot is specification 5")
        for k in ["scatterAlongAxis", "oneHot", "tile"] { XCTAssertTrue(kinds(spec).contains(k), "\(k) in \(kinds(spec))") }
        // ONNX counts −1 from the end: the wrapped index, not all-off.
        let h = try Interpreter(graph: g).run(feed)["h"]
        XCTAssertEqual(h?.doubles.enumerated().filter { $0.element == 3 }.map(\.offset), [3, 9, 16], "column 0 hot at 4, column 1 at 2, column 2 none, column 3 at 0")
    }

    func testNearestResizeByNonIntegerFactorsIsGathered() throws {
        for (ctm, mode) in [("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"), ("align_corners", "round_prefer_ceil")] {
            var g = Self.graph([CoreMLLoopTests.info("x", .float32, [1, 2, 5, 4])], [
                Node(name: "resize", opType: "Resize", inputs: ["x", "", "", "sizes"], outputs: ["y"],
                     attributes: ["mode": .string("nearest"), "coordinate_transformation_mode": .string(ctm), "nearest_mode": .string(mode)]),
            ], outputs: ["y"])
            CoreMLLoopTests.ints(&g, "sizes", [1, 2, 9, 7])
            let spec = try roundTrip(g, ["x": Tensor((0..<40).map { Float($0) }, shape: [1, 2, 5, 4])])
            XCTAssertEqual(kinds(spec).filter { $0 == "gather" }.count, 2, "\(ctm): \(kinds(spec))")
        }
    }

    func testLoopThroughExportPreparationAndCoremltools() throws {
        let g = CoreMLLoopTests.loopGraph()
        var stripped = g
        stripped.valueInfo = [:]
        let feed = ["x": Tensor([0.5, -1, 2, 0.25], shape: [1, 4]), "limit": Tensor([3.5], shape: [1])]
        let spec = try roundTrip(stripped, feed, keepingLoops: true)
        XCTAssertTrue(kinds(spec).contains("loop"))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coreml-loop-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try CoreMLExporter.serialize(spec).write(to: dir.appendingPathComponent("loop.mlmodel"))
        guard FileManager.default.isExecutableFile(atPath: TestPython.venv) else {
            throw XCTSkip("SKIPPED: coremltools check: no python at \(TestPython.venv) (make venv)")
        }
        try TestPython.run("""
            import coremltools as ct
            spec = ct.utils.load_spec("loop.mlmodel")
            ct.models.MLModel("loop.mlmodel", skip_model_load=True)
            loops = [l for l in spec.neuralNetwork.layers if l.WhichOneof("layer") == "loop"]
            assert len(loops) == 1 and loops[0].loop.maxLoopIterations == 5, loops
            assert spec.specificationVersion == 5
            """, in: dir, python: TestPython.venv)
    }

    // MARK: reading hand-made networks

    func layer(_ name: String, _ inputs: [String], _ outputs: [String], _ set: (inout Layer) -> Void) -> Layer {
        var l = Layer()
        l.name = name; l.input = inputs; l.output = outputs
        set(&l)
        return l
    }

    func testShapeRangeBroadcastAndDynamicSliceLayersReadBack() throws {
        var m = CoreML_Specification_Model()
        m.specificationVersion = 4
        var f = CoreML_Specification_FeatureDescription()
        f.name = "x"
        f.type.multiArrayType.shape = [2, 3]
        f.type.multiArrayType.dataType = .float32
        m.description_p.input = [f]
        for name in ["s", "b", "rd", "sd"] { f.name = name; f.type.multiArrayType.shape = []; m.description_p.output.append(f) }
        m.neuralNetwork.arrayInputShapeMapping = .exactArrayMapping
        m.neuralNetwork.layers = [
            layer("shape", ["x"], ["s"]) { $0.getShape = .init() },
            layer("range", [], ["r"]) { $0.rangeStatic.startValue = 1; $0.rangeStatic.endValue = 4; $0.rangeStatic.stepSizeValue = 1 },
            layer("broadcast", ["r", "s"], ["b"]) { $0.broadcastToDynamic = .init() },
            layer("five", [], ["five"]) { $0.loadConstantNd.shape = [1]; $0.loadConstantNd.data.floatValue = [5] },
            layer("two", [], ["two"]) { $0.loadConstantNd.shape = [1]; $0.loadConstantNd.data.floatValue = [2] },
            layer("rd", ["five", "two"], ["rd"]) { $0.rangeDynamic.stepSizeValue = 1 },
            layer("begin", [], ["begin"]) { $0.loadConstantNd.shape = [2]; $0.loadConstantNd.data.floatValue = [1, 5] },
            layer("sd", ["x", "begin"], ["sd"]) {
                $0.sliceDynamic.endIds = [2, 3]; $0.sliceDynamic.strides = [1, 2]
                $0.sliceDynamic.beginMasks = [false, true]; $0.sliceDynamic.endMasks = [false, false]; $0.sliceDynamic.squeezeMasks = [true, false]
            },
        ]
        let g = try CoreMLImporter.importModel(data: try m.serializedData(), file: "dynamic.mlmodel")
        let out = try Interpreter(graph: g).run(["x": Tensor([10, 11, 12, 13, 14, 15], shape: [2, 3])])
        XCTAssertEqual(out["s"]?.doubles, [2, 3])
        XCTAssertEqual(out["b"]?.doubles, [1, 2, 3, 1, 2, 3])
        XCTAssertEqual(out["b"]?.shape, [2, 3])
        XCTAssertEqual(out["rd"]?.doubles, [2, 3, 4])
        XCTAssertEqual(out["sd"]?.doubles, [13, 15], "row 1, columns 0 and 2 (begin masked), row axis squeezed")
        XCTAssertEqual(out["sd"]?.shape, [2])
    }
}
