import CoreMLSchema
import Foundation
import Shrinkwrap
@testable import ShrinkwrapCoreML
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// ML Program while_loop and list ops read as an IR Loop over list tensors: a hand-made program with
/// known results, malformed loops and lists (one-line errors), and the Keras LSTM / GRU / bidirectional
/// LSTM packages coremltools made from TensorFlow's while loops (.testdata/keras-mlprogram,
/// Scripts/make_keras_mlprogram.py), which must give Keras' outputs.
final class MILLoopImportTests: XCTestCase {
    // MARK: - A hand-made program

    typealias Op = CoreML_Specification_MILSpec_Operation
    typealias ValueType = CoreML_Specification_MILSpec_ValueType

    static func tensor(_ type: MILDataType, _ dims: [UInt64]) -> ValueType {
        var t = ValueType()
        t.tensorType.dataType = type
        t.tensorType.rank = Int64(dims.count)
        t.tensorType.dimensions = dims.map { var d = CoreML_Specification_MILSpec_Dimension(); d.constant.size = $0; return d }
        return t
    }

    static func listType(_ length: UInt64, _ elem: [UInt64]) -> ValueType {
        var t = ValueType()
        t.listType.type = tensor(.float32, elem)
        t.listType.length.constant.size = length
        return t
    }

    static func named(_ n: String, _ t: ValueType) -> CoreML_Specification_MILSpec_NamedValueType {
        var v = CoreML_Specification_MILSpec_NamedValueType(); v.name = n; v.type = t; return v
    }

    static func op(_ type: String, _ inputs: [String: [String]], _ outputs: [(String, ValueType)]) -> Op {
        var o = Op()
        o.type = type
        for (key, names) in inputs {
            var a = CoreML_Specification_MILSpec_Argument()
            a.arguments = names.map { var b = CoreML_Specification_MILSpec_Argument.Binding(); b.name = $0; return b }
            o.inputs[key] = a
        }
        o.outputs = outputs.map { named($0.0, $0.1) }
        return o
    }

    /// A const op: int32 / fp32 / bool / string scalars or int32 vectors.
    static func const(_ name: String, ints: [Int32]? = nil, scalarInt: Int32? = nil, bool: Bool? = nil, string: String? = nil) -> Op {
        var v = CoreML_Specification_MILSpec_Value()
        if let ints { v.type = tensor(.int32, [UInt64(ints.count)]); v.immediateValue.tensor.ints.values = ints }
        if let scalarInt { v.type = tensor(.int32, []); v.immediateValue.tensor.ints.values = [scalarInt] }
        if let bool { v.type = tensor(.bool, []); v.immediateValue.tensor.bools.values = [bool] }
        if let string { v.type = tensor(.string, []); v.immediateValue.tensor.strings.values = [string] }
        var o = op("const", [:], [(name, v.type)])
        o.attributes["val"] = v
        return o
    }

    /// y = stack of x·(k+1) for k in 0..<3 (a while loop writing a fixed-length list), r = its last row,
    /// n = the list's length. `edit` damages the main block's operations.
    static func loopModel(dynamicLength: Bool = false, _ edit: (inout [Op]) -> Void = { _ in }) -> CoreML_Specification_Model {
        let i = tensor(.int32, []), v2 = tensor(.float32, [2]), ls = listType(3, [2])
        let cond = { (p: String) -> CoreML_Specification_MILSpec_Block in
            var b = CoreML_Specification_MILSpec_Block()
            b.inputs = [named("\(p)i", i), named("\(p)acc", v2), named("\(p)ls", ls)]
            b.operations = [op("less", ["x": ["\(p)i"], "y": ["three"]], [("\(p)c", tensor(.bool, []))])]
            b.outputs = ["\(p)c"]
            return b
        }
        var body = CoreML_Specification_MILSpec_Block()
        body.inputs = [named("bi", i), named("bacc", v2), named("bls", ls)]
        body.operations = [
            op("add", ["x": ["bacc"], "y": ["x"]], [("acc2", v2)]),
            op("list_write", ["ls": ["bls"], "index": ["bi"], "value": ["acc2"]], [("ls2", ls)]),
            op("add", ["x": ["bi"], "y": ["one"]], [("i2", i)]),
        ]
        body.outputs = ["i2", "acc2", "ls2"]
        var loop = op("while_loop", ["loop_vars": ["zero", "x", "ls0"]], [("i_out", i), ("acc_out", v2), ("ls_out", ls)])
        loop.blocks = [cond("c"), body]
        var ops = [
            const("zero", scalarInt: 0), const("one", scalarInt: 1), const("three", scalarInt: 3), const("two", scalarInt: 2),
            const("len", scalarInt: 3), const("dyn", bool: dynamicLength), const("d0", scalarInt: 2), const("dtype", string: "fp32"),
            op("make_list", ["init_length": ["len"], "dynamic_length": ["dyn"], "elem_shape": ["d0"], "dtype": ["dtype"]], [("ls0", ls)]),
            loop,
            const("all", ints: [0, 1, 2]),
            op("list_gather", ["ls": ["ls_out"], "indices": ["all"]], [("y", tensor(.float32, [3, 2]))]),
            op("list_read", ["ls": ["ls_out"], "index": ["two"]], [("r", v2)]),
            op("list_length", ["ls": ["ls_out"]], [("n", i)]),
        ]
        edit(&ops)
        var block = CoreML_Specification_MILSpec_Block()
        block.operations = ops
        block.outputs = ["y", "r", "n"]
        var f = CoreML_Specification_MILSpec_Function()
        f.inputs = [named("x", v2)]
        f.opset = "CoreML5"
        f.blockSpecializations = ["CoreML5": block]
        var m = CoreML_Specification_Model()
        m.specificationVersion = 6
        m.mlProgram.version = 1
        m.mlProgram.functions = ["main": f]
        return m
    }

    static func load(_ m: CoreML_Specification_Model) throws -> Graph {
        try MILImporter.importProgram(m, file: "m.mlmodel", blobFiles: [:])
    }

    func testAWhileLoopWritingAListRuns() throws {
        let g = try Self.load(Self.loopModel())
        XCTAssertEqual(g.nodes.filter { $0.opType == "Loop" }.count, 1)
        let out = try Interpreter(graph: g).run(["x": Tensor([1, -2], shape: [2])])
        XCTAssertEqual(out["y"]?.shape, [3, 2])
        XCTAssertEqual(out["y"]?.floats, [2, -4, 3, -6, 4, -8])
        XCTAssertEqual(out["r"]?.floats, [4, -8])
        XCTAssertEqual(out["n"]?.ints, [3])
    }

    /// The fuzz seed (a Model message, "MILBLOB:", weight.bin) holds a while_loop the harness reads.
    func testTheFuzzSeedImportsWithItsLoop() throws {
        let url = Self.dir.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/ModelFuzz/seeds/mlprogram_gru_while_loop.mlmodel")
        let bytes = try Data(contentsOf: url)
        let marker = try XCTUnwrap(bytes.range(of: Data("MILBLOB:".utf8), options: .backwards))
        let model = try MILImporter.parse(bytes[bytes.startIndex..<marker.lowerBound], file: "seed.mlmodel")
        let g = try MILImporter.importProgram(model, file: "seed.mlmodel",
                                              blobFiles: [MLPackage.modelPathPrefix + "weights/weight.bin": [UInt8](bytes[marker.upperBound...])])
        XCTAssertEqual(g.nodes.filter { $0.opType == "Loop" }.count, 1)
        let probs = try Interpreter(graph: g).run(["tokens": Tensor(ints: Array(repeating: 3, count: 12), shape: [1, 12], dtype: .int32)])["probs"]
        XCTAssertEqual(probs?.shape, [1, 3])
    }

    // MARK: - Malformed loops and lists

    func error(_ m: CoreML_Specification_Model, mentions: [String], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try Self.load(m), file: file, line: line) { e in
            let text = "\(e)"
            XCTAssertFalse(text.contains("\n"), text, file: file, line: line)
            XCTAssertTrue(text.hasPrefix("m.mlmodel: "), text, file: file, line: line)
            for s in mentions { XCTAssertTrue(text.contains(s), "'\(s)' not in: \(text)", file: file, line: line) }
        }
    }

    static func editLoop(_ edit: @escaping (inout Op) -> Void) -> (inout [Op]) -> Void {
        { ops in for k in ops.indices where ops[k].type == "while_loop" { edit(&ops[k]) } }
    }

    func testAWhileLoopWithoutBlocks() {
        error(Self.loopModel(Self.editLoop { $0.blocks = [] }), mentions: ["while_loop 'i_out'", "needs two blocks (cond, body), has 0"])
    }

    func testLoopVarsCountMismatch() {
        error(Self.loopModel(Self.editLoop { $0.inputs["loop_vars"]?.arguments.removeLast() }),
              mentions: ["while_loop 'i_out'", "2 loop_vars, but the cond block takes 3"])
        error(Self.loopModel(Self.editLoop { $0.blocks[1].outputs.removeLast() }), mentions: ["while_loop 'i_out'", "returns 2"])
    }

    func testAListReadOutOfRange() {
        error(Self.loopModel { ops in
            for k in ops.indices where ops[k].type == "list_read" { ops[k].inputs["index"]?.arguments[0].name = "len" }
        }, mentions: ["list_read 'r'", "list_read index 3 outside the list's length 3"])
    }

    func testAListThatMayGrowIsRefused() {
        error(Self.loopModel(dynamicLength: true), mentions: ["body block", "list_write 'ls2'", "a list with unbounded length"])
    }

    func testALoopVarOfTheWrongKind() {
        error(Self.loopModel(Self.editLoop { $0.blocks[1].inputs[2].type = Self.tensor(.float32, [3, 2]) }),
              mentions: ["body block input[2] 'bls'", "does not match loop_vars[2] 'ls0'"])
    }

    /// The cond block is read twice; a loop nested in it would double the work at every level.
    func testACondBlockHoldingALoopIsRefused() {
        error(Self.loopModel(Self.editLoop { $0.blocks[0].operations[0].blocks = [$0.blocks[1]] }),
              mentions: ["while_loop 'i_out'", "cond block holds a nested loop"])
    }

    func testUnsupportedOpsInsideLoopsAreListedWithTheOthers() {
        error(Self.loopModel { ops in
            for k in ops.indices where ops[k].type == "while_loop" { ops[k].blocks[1].operations[0].type = "frobnicate" }
            for k in ops.indices where ops[k].type == "list_length" { ops[k].type = "mystery" }
        }, mentions: ["unsupported ops (2): frobnicate, mystery"])
    }

    // MARK: - Keras packages

    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".testdata/keras-mlprogram")

    struct Manifest: Decodable {
        struct Case: Decodable { let inputs: [String: String]; let outputs: [String: String] }
        struct Package: Decodable { let name: String; let file: String; let cases: [Case] }
        let packages: [Package]
    }

    /// Keras' outputs (float32 packages; the others: Keras on the weights coremltools decodes from the
    /// package): within rel 1e-4, 2e-2 for fp16. Loops: 1 for LSTM and GRU, 2 for the bidirectional LSTM.
    func testKerasRecurrentPackagesMatchKeras() throws {
        guard let data = try? Data(contentsOf: Self.dir.appendingPathComponent("manifest.json")) else {
            throw XCTSkip("SKIPPED: no Keras ML Program fixtures in \(Self.dir.path); run Scripts/make_keras_mlprogram.py (needs .venv-tf)")
        }
        let manifest = try JSONDecoder().decode(Manifest.self, from: data)
        let wanted: [(name: String, loops: Int, tolerance: Double)] = [
            ("text_lstm.fp32", 1, 1e-4), ("text_gru.fp32", 1, 1e-4), ("text_bilstm.fp32", 2, 1e-4),
            ("text_lstm.q8sym", 1, 1e-4), ("text_gru.fp16", 1, 2e-2),
        ]
        for w in wanted {
            guard let p = manifest.packages.first(where: { $0.name == w.name }) else { XCTFail("\(w.name) not in the manifest"); continue }
            let g = try Models.load(Self.dir.appendingPathComponent(p.file).path)
            XCTAssertEqual(g.nodes.filter { $0.opType == "Loop" }.count, w.loops, p.name)
            if p.name.hasSuffix("q8sym") { XCTAssertTrue(g.constants.contains { $0.encoding.isCompressed }, "\(p.name): weights kept compressed") }
            let interpreter = try Interpreter(graph: g)
            XCTAssertFalse(p.cases.isEmpty, p.name)
            var worst = 0.0
            for c in p.cases {
                var inputs: [String: Tensor] = [:]
                for (name, file) in c.inputs { inputs[name] = try NPY.read(Self.dir.appendingPathComponent(file)) }
                let got = try interpreter.run(inputs)
                for (name, file) in c.outputs {
                    let want = try NPY.read(Self.dir.appendingPathComponent(file))
                    guard let out = got[name], out.count == want.count, out.count > 0 else { XCTFail("\(p.name): output \(name)"); continue }
                    for (a, b) in zip(out.doubles, want.doubles) { worst = max(worst, abs(a - b) / max(abs(b), 1e-6)) }
                }
            }
            XCTAssertLessThanOrEqual(worst, w.tolerance, p.name)
            print("\(p.name): \(p.cases.count) cases, worst rel \(worst)")
        }
    }
}
