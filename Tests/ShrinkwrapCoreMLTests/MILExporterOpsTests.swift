import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// The ML Program exporter's writers for resizing, recurrent, indexing and
/// composed ops: small graphs exported, the written program's ops and
/// parameters read back (no Core ML runtime on Linux; coremltools' type
/// inference is run by Scripts/mil_typecheck.py).
final class MILExporterOpsTests: XCTestCase {
    typealias Op = CoreML_Specification_MILSpec_Operation

    /// A written program: its ops and the values of its constants.
    struct Program {
        var ops: [Op]
        var blobs: MILBlobReader

        func ops(_ type: String) -> [Op] { ops.filter { $0.type == type } }

        /// The const op defining `name`.
        func const(_ name: String) -> Op? { ops.first { $0.type == "const" && $0.outputs.first?.name == name } }

        func argument(_ op: Op, _ key: String) -> String? { op.inputs[key]?.arguments.first?.name }

        func string(_ op: Op, _ key: String) -> String? {
            argument(op, key).flatMap { const($0) }?.attributes["val"]?.immediateValue.tensor.strings.values.first
        }

        func ints(_ op: Op, _ key: String) -> [Int32]? {
            argument(op, key).flatMap { const($0) }?.attributes["val"]?.immediateValue.tensor.ints.values
        }

        func bool(_ op: Op, _ key: String) -> Bool? {
            argument(op, key).flatMap { const($0) }?.attributes["val"]?.immediateValue.tensor.bools.values.first
        }

        /// A float32 constant argument, immediate or in the blob file.
        func floats(_ op: Op, _ key: String) throws -> [Float]? {
            guard let c = argument(op, key).flatMap({ const($0) }), let v = c.attributes["val"] else { return nil }
            if case .blobFileValue(let f)? = v.value {
                let b = try blobs.blob(at: f.offset).bytes
                return stride(from: 0, to: b.count, by: 4).map { i in
                    Float(bitPattern: UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24)
                }
            }
            return v.immediateValue.tensor.floats.values
        }
    }

    func export(_ g: Graph, _ options: MILExporter.Options = .init()) throws -> Program {
        let prepared = try ExportPreparation.prepare(g).graph
        let pkg = try MILExporter.export(prepared, options: options)
        let model = try CoreML_Specification_Model(serializedBytes: pkg.model)
        let f = try XCTUnwrap(model.mlProgram.functions["main"])
        let block = try XCTUnwrap(f.blockSpecializations[f.opset])
        return Program(ops: block.operations, blobs: try MILBlobReader(bytes: pkg.weights, file: "weight.bin"))
    }

    func graph(_ inputs: [(String, [Int], DType)], _ nodes: [Node], outputs: [String], constants: [Constant] = []) -> Graph {
        var g = Graph(name: "t")
        for (n, s, d) in inputs { g.inputs.append(ValueInfo(name: n, dtype: d, shape: s.map { .fixed($0) })) }
        for c in constants { g.setConstant(c) }
        g.nodes = nodes
        for o in outputs { g.outputs.append(ValueInfo(name: o, dtype: nil, shape: nil)) }
        return g
    }

    func floats(_ name: String, _ v: [Float], _ shape: [Int]) -> Constant { Constant(name: name, tensor: Tensor(v, shape: shape)) }
    func ints(_ name: String, _ v: [Int]) -> Constant { Constant(name: name, tensor: Tensor(ints: v.map { Int64($0) }, shape: [v.count])) }

    /// The refusal message of exporting `g`.
    func refusal(_ g: Graph) -> String {
        do {
            _ = try export(g)
            return ""
        } catch { return "\(error)" }
    }

    // MARK: resize

    func resizeGraph(_ mode: String, _ ctm: String, from: [Int], to: [Int], nearestMode: String = "round_prefer_floor") -> Graph {
        graph([("x", from, .float32)], [Node(name: "r", opType: "Resize", inputs: ["x", "", "", "sizes"], outputs: ["y"],
                                             attributes: ["mode": .string(mode), "coordinate_transformation_mode": .string(ctm),
                                                          "nearest_mode": .string(nearestMode)])],
              outputs: ["y"], constants: [ints("sizes", to)])
    }

    func testBilinearSamplingModes() throws {
        for (ctm, mode) in [("half_pixel", "UNALIGN_CORNERS"), ("pytorch_half_pixel", "UNALIGN_CORNERS"),
                            ("align_corners", "STRICT_ALIGN_CORNERS"), ("asymmetric", "DEFAULT")] {
            let p = try export(resizeGraph("linear", ctm, from: [1, 2, 3, 5], to: [1, 2, 7, 9]))
            let op = try XCTUnwrap(p.ops("resize_bilinear").first, ctm)
            XCTAssertEqual(p.string(op, "sampling_mode"), mode, ctm)
            XCTAssertEqual(p.ints(op, "target_size_height"), [7], ctm)
            XCTAssertEqual(p.ints(op, "target_size_width"), [9], ctm)
        }
        XCTAssertTrue(refusal(resizeGraph("linear", "tf_crop_and_resize", from: [1, 2, 3, 5], to: [1, 2, 7, 9])).contains("tf_crop_and_resize"))
        XCTAssertTrue(refusal(resizeGraph("linear", "align_corners", from: [1, 2, 3, 5], to: [1, 2, 1, 9])).contains("output size 1"))
        XCTAssertTrue(refusal(resizeGraph("linear", "half_pixel", from: [1, 2, 3, 5], to: [1, 4, 3, 5])).contains("other than the last two"))
        XCTAssertTrue(refusal(resizeGraph("cubic", "half_pixel", from: [1, 2, 3, 5], to: [1, 2, 6, 10])).contains("cubic"))
    }

    func testNearestResizeByWholeAndOtherFactors() throws {
        let p = try export(resizeGraph("nearest", "asymmetric", from: [1, 2, 3, 5], to: [1, 2, 6, 15], nearestMode: "floor"))
        let op = try XCTUnwrap(p.ops("upsample_nearest_neighbor").first)
        XCTAssertEqual(p.ints(op, "scale_factor_height"), [2])
        XCTAssertEqual(p.ints(op, "scale_factor_width"), [3])
        // 3 → 5 is no whole factor: the lowering gathers source rows instead.
        let q = try export(resizeGraph("nearest", "half_pixel", from: [1, 2, 3, 5], to: [1, 2, 5, 5]))
        XCTAssertTrue(q.ops("upsample_nearest_neighbor").isEmpty)
        XCTAssertEqual(q.ops("gather").count, 1)
        // half-pixel coordinates with floor rounding do not read ⌊i / s⌋.
        XCTAssertTrue(refusal(resizeGraph("nearest", "half_pixel", from: [1, 2, 3, 5], to: [1, 2, 6, 10], nearestMode: "floor"))
            .contains("half_pixel coordinates and floor rounding"))
    }

    func testResizeScalesMustBeTheSizeRatio() throws {
        let g = graph([("x", [1, 1, 4, 4], .float32)],
                      [Node(name: "r", opType: "Resize", inputs: ["x", "", "scales"], outputs: ["y"], attributes: ["mode": .string("linear")])],
                      outputs: ["y"], constants: [floats("scales", [1, 1, 1.6, 2], [4])])
        // 4 · 1.6 = 6.4 → 6 rows: ONNX samples with 1.6, MIL with 6/4.
        XCTAssertTrue(refusal(g).contains("is not 6/4"))
    }

    // MARK: recurrent

    /// LSTM with H = 1, I = 1: W rows are ONNX gates i, o, f, c = 1, 2, 3, 4.
    func lstmGraph(direction: String = "forward", attributes: [String: Attribute] = [:], readStates: Bool = true) -> Graph {
        let dirs = direction == "bidirectional" ? 2 : 1
        var attrs = attributes
        attrs["direction"] = .string(direction)
        attrs["hidden_size"] = .int(1)
        let w = (0..<dirs).flatMap { d in [1, 2, 3, 4].map { Float($0 + 10 * d) } }
        let r = w.map { $0 / 10 }
        let b = (0..<dirs).flatMap { d in (0..<8).map { Float($0 + 100 * d) } }
        return graph([("x", [3, 2, 1], .float32), ("h0", [dirs, 2, 1], .float32), ("c0", [dirs, 2, 1], .float32)],
                     [Node(name: "l", opType: "LSTM", inputs: ["x", "W", "R", "B", "", "h0", "c0"], outputs: ["y", "yh", "yc"], attributes: attrs)],
                     outputs: readStates ? ["y", "yh", "yc"] : ["y"],
                     constants: [floats("W", w, [dirs, 4, 1]), floats("R", r, [dirs, 4, 1]), floats("B", b, [dirs, 8])])
    }

    func testLSTMGateOrderBiasAndLayouts() throws {
        let p = try export(lstmGraph())
        let op = try XCTUnwrap(p.ops("lstm").first)
        // MIL's order is i, f, o, g.
        XCTAssertEqual(try p.floats(op, "weight_ih"), [1, 3, 2, 4])
        XCTAssertEqual(try p.floats(op, "weight_hh"), [0.1, 0.3, 0.2, 0.4])
        // bias = Wb + Rb: Wb = 0, 1, 2, 3 and Rb = 4, 5, 6, 7 (ONNX order i, o, f, c).
        XCTAssertEqual(try p.floats(op, "bias"), [4, 8, 6, 10])
        XCTAssertEqual(p.string(op, "direction"), "forward")
        XCTAssertEqual(p.bool(op, "output_sequence"), true)
        XCTAssertEqual(p.string(op, "recurrent_activation"), "sigmoid")
        XCTAssertEqual(p.string(op, "cell_activation"), "tanh")
        // Y [S, 1, B, H] from [S, B, H] and the states [1, B, H] from [B, H] are reshapes only.
        XCTAssertTrue(p.ops("transpose").isEmpty)
        XCTAssertEqual(p.ops("reshape").count, 5)
    }

    func testBidirectionalLSTMIsOneOpAndTransposesItsOutputs() throws {
        let p = try export(lstmGraph(direction: "bidirectional"))
        let op = try XCTUnwrap(p.ops("lstm").first)
        XCTAssertEqual(p.ops("lstm").count, 1)
        XCTAssertEqual(p.string(op, "direction"), "bidirectional")
        XCTAssertEqual(try p.floats(op, "weight_ih_back"), [11, 13, 12, 14])
        XCTAssertEqual(try p.floats(op, "bias_back"), [204, 208, 206, 210])
        // [D, B, H] states → [B, D·H] in, [B, D·H] → [S, D, B, H] / [D, B, H] out.
        let perms = p.ops("transpose").compactMap { p.ints($0, "perm") }
        XCTAssertEqual(perms.sorted { $0.count < $1.count }, [[1, 0, 2], [1, 0, 2], [1, 0, 2], [1, 0, 2], [0, 2, 1, 3]])
    }

    func testLSTMRefusals() throws {
        XCTAssertTrue(refusal(lstmGraph(attributes: ["clip": .float(3)])).contains("clip"))
        XCTAssertTrue(refusal(lstmGraph(attributes: ["input_forget": .int(1)])).contains("input_forget"))
        XCTAssertTrue(refusal(lstmGraph(attributes: ["activations": .strings(["HardSigmoid", "Tanh", "Tanh"])])).contains("HardSigmoid"))
    }

    func testLSTMComputesInFloat32BeforeIOS17() throws {
        let p = try export(lstmGraph(), .init(target: .iOS15, precision: .float16))
        let op = try XCTUnwrap(p.ops("lstm").first)
        XCTAssertEqual(op.outputs.first?.type.tensorType.dataType, .float32)
        let q = try export(lstmGraph(), .init(target: .iOS17, precision: .float16))
        XCTAssertEqual(try XCTUnwrap(q.ops("lstm").first).outputs.first?.type.tensorType.dataType, .float16)
    }

    func gruGraph(linearBeforeReset: Int, recurrentBias: Float = 0, direction: String = "forward") -> Graph {
        let dirs = direction == "bidirectional" ? 2 : 1
        // ONNX gates z, r, h; B = [Wb_z, Wb_r, Wb_h, Rb_z, Rb_r, Rb_h].
        let b: [Float] = (0..<dirs).flatMap { _ -> [Float] in [1, 2, 3, 10, 20, recurrentBias] }
        return graph([("x", [2, 1, 1], .float32)],
                     [Node(name: "g", opType: "GRU", inputs: ["x", "W", "R", "B"], outputs: ["y", "yh"],
                           attributes: ["linear_before_reset": .int(linearBeforeReset), "direction": .string(direction)])],
                     outputs: ["y", "yh"],
                     constants: [floats("W", (0..<dirs).flatMap { _ in [1, 2, 3] }, [dirs, 3, 1]),
                                 floats("R", (0..<dirs).flatMap { _ in [4, 5, 6] }, [dirs, 3, 1]), floats("B", b, [dirs, 6])])
    }

    func testGRUMatchesLinearBeforeResetOnly() throws {
        let p = try export(gruGraph(linearBeforeReset: 1))
        let op = try XCTUnwrap(p.ops("gru").first)
        // MIL's order is r, o (= h), z.
        XCTAssertEqual(try p.floats(op, "weight_ih"), [2, 3, 1])
        XCTAssertEqual(try p.floats(op, "weight_hh"), [5, 6, 4])
        XCTAssertEqual(try p.floats(op, "bias"), [22, 3, 11])
        // The forms MIL's gru refuses are named by the writer's predicate, and unrolled by MILLowering.
        func why(_ g: Graph) -> String { MILOpWriters.recurrentCellRefusal(g.nodes[0], constant: { g.constant(named: $0)?.encoding }) ?? "" }
        XCTAssertTrue(why(gruGraph(linearBeforeReset: 0)).contains("linear_before_reset = 0"))
        XCTAssertTrue(why(gruGraph(linearBeforeReset: 1, recurrentBias: 1)).contains("recurrent bias on the h gate"))
        XCTAssertTrue(try export(gruGraph(linearBeforeReset: 0)).ops("gru").isEmpty)
        let bi = try export(gruGraph(linearBeforeReset: 1, direction: "bidirectional"))
        XCTAssertEqual(bi.ops("gru").compactMap { bi.string($0, "direction") }, ["forward", "reverse"])
        XCTAssertEqual(bi.ops("concat").count, 2)
    }

    // MARK: indexing and composed ops

    func testGatherElementsWrapsConstantIndices() throws {
        let g = graph([("x", [2, 3], .float32)],
                      [Node(name: "g", opType: "GatherElements", inputs: ["x", "i"], outputs: ["y"], attributes: ["axis": .int(1)])],
                      outputs: ["y"], constants: [Constant(name: "i", tensor: Tensor(ints: [-1, 0, 2, 1], shape: [2, 2]))])
        let p = try export(g)
        let op = try XCTUnwrap(p.ops("gather_along_axis").first)
        XCTAssertEqual(p.ints(op, "indices"), [2, 0, 2, 1])
        XCTAssertEqual(p.ints(op, "axis"), [1])
    }

    func testTriluIsAConstantMask() throws {
        let g = graph([("x", [3, 3], .float32)], [Node(name: "t", opType: "Trilu", inputs: ["x", "k"], outputs: ["y"], attributes: ["upper": .int(0)])],
                      outputs: ["y"], constants: [ints("k", [-1])])
        let p = try export(g)
        let op = try XCTUnwrap(p.ops("select").first)
        let mask = try XCTUnwrap(p.argument(op, "cond").flatMap { p.const($0) }?.attributes["val"]?.immediateValue.tensor.bools.values)
        XCTAssertEqual(mask, [false, false, false, true, false, false, true, true, false])
    }

    func testEqualOnBooleansIsNotXor() throws {
        let g = graph([("a", [4], .bool), ("b", [4], .bool)], [Node(name: "e", opType: "Equal", inputs: ["a", "b"], outputs: ["y"])], outputs: ["y"])
        let p = try export(g)
        XCTAssertEqual(p.ops.filter { $0.type != "const" }.map(\.type), ["logical_xor", "logical_not"])
        let f = graph([("a", [4], .float32), ("b", [4], .float32)], [Node(name: "e", opType: "Equal", inputs: ["a", "b"], outputs: ["y"])],
                      outputs: ["y"])
        XCTAssertEqual(try export(f).ops("equal").count, 1)
    }

    func testFloatModIsRefused() throws {
        let g = graph([("a", [4], .float32), ("b", [4], .float32)],
                      [Node(name: "m", opType: "Mod", inputs: ["a", "b"], outputs: ["y"], attributes: ["fmod": .int(1)])], outputs: ["y"])
        XCTAssertTrue(refusal(g).contains("fmod = 1"))
    }

    func testConvTransposeOutputPaddingIsACropOfTheUnpaddedResult() throws {
        var w = [Float](repeating: 0.5, count: 4 * 3 * 3 * 3)
        w[0] = 1
        let g = graph([("x", [1, 4, 5, 5], .float32)],
                      [Node(name: "d", opType: "ConvTranspose", inputs: ["x", "w"], outputs: ["y"],
                            attributes: ["strides": .ints([2, 2]), "pads": .ints([1, 1, 1, 1]), "output_padding": .ints([1, 0])])],
                      outputs: ["y"], constants: [floats("w", w, [4, 3, 3, 3])])
        let p = try export(g)
        let deconv = try XCTUnwrap(p.ops("conv_transpose").first)
        XCTAssertEqual(p.ints(deconv, "pad"), [0, 0, 0, 0])
        XCTAssertEqual(deconv.outputs.first?.type.tensorType.dimensions.map(\.constant.size), [1, 3, 11, 11])
        // Rows 1 ..< 11 (end pad 1 − output_padding 1), columns 1 ..< 10.
        let crop = try XCTUnwrap(p.ops("slice_by_index").first)
        XCTAssertEqual(p.ints(crop, "begin"), [0, 0, 1, 1])
        XCTAssertEqual(p.ints(crop, "end"), [1, 3, 11, 10])
        var beyond = g
        beyond.nodes[0].attributes["pads"] = .ints([1, 1, 0, 1])
        XCTAssertTrue(refusal(beyond).contains("beyond the end pad"))
    }
}
