import Foundation
import ONNXSchema
import Shrinkwrap
import ShrinkwrapIR
import ShrinkwrapONNX
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// Deterministic mutation fuzzing of whole model files: flipped bytes,
/// truncations, duplicated and zeroed runs. Every mutant must import or fail
/// with an error, and a mutant that imports must run or fail with an error:
/// a crash ends the test process and fails the suite.
final class ImporterFuzzTests: XCTestCase {
    typealias M = ONNXTestModels

    /// A seed corpus covering initializers in raw and typed form, attributes and several ops.
    func corpus() throws -> [Data] {
        var conv = M.model(
            nodes: [M.node("Conv", ["x", "w", "b"], ["c"], attributes: [M.intsAttr("pads", [1, 1, 1, 1])]),
                    M.node("Relu", ["c"], ["r"]),
                    M.node("MaxPool", ["r"], ["p"], attributes: [M.intsAttr("kernel_shape", [2, 2]), M.intsAttr("strides", [2, 2])]),
                    M.node("Flatten", ["p"], ["f"]),
                    M.node("Gemm", ["f", "fw"], ["g"], attributes: [M.intAttr("transB", 1)]),
                    M.node("Softmax", ["g"], ["y"])],
            inputs: [M.valueInfo("x", dims: [1, 2, 4, 4])], outputs: [M.valueInfo("y", dims: [1, 3])],
            initializers: [M.rawTensor("w", dims: [2, 2, 3, 3], raw: Data((0..<(36 * 4)).map { UInt8($0 % 7) })),
                           M.tensor("b", dims: [2], floats: [0.1, -0.2]),
                           M.tensor("fw", dims: [3, 8], floats: (0..<24).map { Float($0) / 24 })])
        conv.graph.valueInfo = [M.valueInfo("c", dims: [1, 2, 4, 4])]
        let shapes = M.model(
            nodes: [M.node("Shape", ["x"], ["s"]), M.node("ConstantOfShape", ["s"], ["z"]),
                    M.node("Add", ["x", "z"], ["a"]), M.node("Reshape", ["a", "rs"], ["r"]),
                    M.node("Transpose", ["r"], ["y"], attributes: [M.intsAttr("perm", [1, 0])])],
            inputs: [M.valueInfo("x", dims: [2, 3])], outputs: [M.valueInfo("y", dims: [3, 2])],
            initializers: [M.rawTensor("rs", dims: [2], raw: Data([2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]), type: 7)])
        return [try M.tinyMLP().serializedData(), try conv.serializedData(), try shapes.serializedData(), try compressed()]
    }

    /// What our exporter writes for compressed weights: fp16 Cast, DequantizeLinear (int4 per block with
    /// an expanded bias), bit-packed 3-bit codes, a grouped palette with Range offsets.
    func compressed() throws -> Data {
        var g = Graph(name: "c", inputs: [ValueInfo(name: "s", dtype: .float32, shape: [])], outputs: [], nodes: [])
        let weights: [(String, WeightEncoding)] = [
            ("h", .float16(try Float16Weights(shape: [2, 2], bits: [0x3C00, 0x4000, 0xBC00, 0]))),
            ("a4", .affine(try AffineWeights(shape: [2, 5], bits: 4, signed: true, q: [1, -2, 3, -4, 5, 6, 7, -8, 0, 1],
                                             blockShape: [1, 2], scale: [0.5, 0.25, 1, 2, 1.5, 0.75], bias: [0.1, 0, 0.2, 0, 0.3, 0]))),
            ("a3", .affine(try AffineWeights(shape: [3, 3], bits: 3, signed: false, q: [0, 1, 2, 3, 4, 5, 6, 7, 0],
                                             blockShape: [1, 3], scale: [1, 2, 3], bias: [0, -1, 0.5]))),
            ("p2", .palette(try PaletteWeights(shape: [4, 2], bits: 2, indices: [0, 1, 2, 3, 3, 2, 1, 0],
                                               lut: [[0, 1, 2, 3], [-1, -2, -3, -4]], axis: 0, groupSize: 2))),
        ]
        for (name, w) in weights {
            g.setConstant(Constant(name: name, encoding: w))
            g.nodes.append(Node(name: "use_\(name)", opType: "Mul", inputs: [name, "s"], outputs: ["y_\(name)"]))
            g.outputs.append(ValueInfo(name: "y_\(name)", dtype: .float32, shape: w.shape.map { .fixed($0) }))
        }
        return try ONNXExporter.export(g)
    }

    func testMutantsNeverCrash() throws {
        var rng = SplitMix(seed: 0x5eed)
        var imported = 0, ran = 0, rejected = 0
        let seeds = try corpus()
        for i in 0..<4000 {
            var bytes = [UInt8](seeds[i % seeds.count])
            let edits = 1 + Int(rng.next() % 4)
            for _ in 0..<edits {
                guard !bytes.isEmpty else { break }
                let at = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 6 {
                case 0: bytes[at] ^= UInt8(1 << (rng.next() % 8))
                case 1: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                case 2: bytes.removeSubrange(at..<bytes.count)
                case 3: bytes.replaceSubrange(at..<min(bytes.count, at + 4), with: [0xFF, 0xFF, 0xFF, 0x7F])
                case 4: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 8)], at: at)
                default: bytes[at] = 0
                }
            }
            let graph: Graph
            do {
                graph = try ONNXImporter.importModel(data: Data(bytes), file: "mutant\(i).onnx")
            } catch {
                rejected += 1
                XCTAssertFalse("\(error)".contains("\n"), "multi-line error: \(error)")
                continue
            }
            imported += 1
            guard let inputs = try? ModelRunner.syntheticInputs(graph: graph, seed: UInt64(i)),
                  inputs.values.allSatisfy({ $0.count <= 1 << 16 }) else { continue }
            if let interp = try? Interpreter(graph: graph, options: .init(threads: 2)), (try? interp.run(inputs)) != nil {
                ran += 1
            }
        }
        print("importer fuzz: 4000 mutants, \(rejected) rejected with an error, \(imported) imported, \(ran) ran")
        XCTAssertGreaterThan(rejected, 100)
        XCTAssertGreaterThan(imported, 100)
    }
}

