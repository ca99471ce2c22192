import CoreMLSchema
import Foundation
import Shrinkwrap
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import ShrinkwrapRuntime
import SwiftProtobuf
import XCTest

/// Damaged ML Program packages: each a one-line error naming the file and place, never a crash.
final class MILBadInputTests: XCTestCase {
    /// y = x + w, w a float32 [2] blob in weights/weight.bin.
    static func model(_ edit: (inout CoreML_Specification_MILSpec_Operation, inout CoreML_Specification_MILSpec_Operation) -> Void = { _, _ in })
        -> CoreML_Specification_Model {
        func tensorType(_ dims: [UInt64]) -> CoreML_Specification_MILSpec_ValueType {
            var t = CoreML_Specification_MILSpec_ValueType()
            t.tensorType.dataType = .float32
            t.tensorType.rank = Int64(dims.count)
            t.tensorType.dimensions = dims.map { var d = CoreML_Specification_MILSpec_Dimension(); d.constant.size = $0; return d }
            return t
        }
        func named(_ n: String, _ dims: [UInt64]) -> CoreML_Specification_MILSpec_NamedValueType {
            var v = CoreML_Specification_MILSpec_NamedValueType(); v.name = n; v.type = tensorType(dims); return v
        }
        func argument(_ n: String) -> CoreML_Specification_MILSpec_Argument {
            var b = CoreML_Specification_MILSpec_Argument.Binding(); b.name = n
            var a = CoreML_Specification_MILSpec_Argument(); a.arguments = [b]; return a
        }
        var const = CoreML_Specification_MILSpec_Operation()
        const.type = "const"
        const.outputs = [named("w", [2])]
        var val = CoreML_Specification_MILSpec_Value()
        val.type = tensorType([2])
        val.blobFileValue.fileName = "@model_path/weights/weight.bin"
        val.blobFileValue.offset = 64
        const.attributes["val"] = val
        var add = CoreML_Specification_MILSpec_Operation()
        add.type = "add"
        add.inputs = ["x": argument("x"), "y": argument("w")]
        add.outputs = [named("y", [2])]
        edit(&const, &add)
        var block = CoreML_Specification_MILSpec_Block()
        block.operations = [const, add]
        block.outputs = ["y"]
        var f = CoreML_Specification_MILSpec_Function()
        f.inputs = [named("x", [2])]
        f.opset = "CoreML5"
        f.blockSpecializations = ["CoreML5": block]
        var m = CoreML_Specification_Model()
        m.specificationVersion = 7
        m.mlProgram.version = 1
        m.mlProgram.functions = ["main": f]
        for (name, list) in [("x", \CoreML_Specification_ModelDescription.input), ("y", \CoreML_Specification_ModelDescription.output)] {
            var fd = CoreML_Specification_FeatureDescription()
            fd.name = name; fd.type.multiArrayType.shape = [2]; fd.type.multiArrayType.dataType = .float32
            m.description_p[keyPath: list].append(fd)
        }
        return m
    }

    static func weights() -> [UInt8] {
        var w = MILBlobWriter()
        _ = w.append(MILBlob(dataType: .float32, bytes: [Float(1.5), -2].flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v.bitPattern >> (8 * $0)) } }))
        return w.bytes
    }

    /// Writes a package (optionally damaged) into a fresh folder; returns its URL.
    func package(model: CoreML_Specification_Model = model(), weights: [UInt8] = weights(),
                 damage: (URL) throws -> Void = { _ in }) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mil-bad-\(UUID().uuidString).mlpackage")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        for (path, data) in MLPackage.files(model: try model.serializedData(), weights: weights) {
            let url = dir.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        try damage(dir)
        return dir
    }

    func error(_ dir: URL, mentions: [String], file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try Models.load(dir.path)
            XCTFail("imported a bad package", file: file, line: line)
        } catch {
            let text = "\(error)"
            XCTAssertFalse(text.contains("\n"), text, file: file, line: line)
            for m in mentions { XCTAssertTrue(text.contains(m), "'\(m)' not in: \(text)", file: file, line: line) }
        }
    }

    static let weightFile = "Data/com.apple.CoreML/weights/weight.bin"
    static let modelFile = "Data/com.apple.CoreML/model.mlmodel"

    func testTheValidPackageImportsAndRuns() throws {
        let g = try Models.load(try package().path)
        let y = try Interpreter(graph: g).run(["x": Tensor([1, 1], shape: [2])])["y"]
        XCTAssertEqual(y?.floats, [2.5, -1])
    }

    /// The fuzz harness's entry: blob files in memory, by the name the program uses.
    func testBlobFilesInMemory() throws {
        let g = try MILImporter.importProgram(Self.model(), file: "m.mlmodel", blobFiles: ["@model_path/weights/weight.bin": Self.weights()])
        XCTAssertEqual(try Interpreter(graph: g).run(["x": Tensor([0, 0], shape: [2])])["y"]?.floats, [1.5, -2])
        XCTAssertThrowsError(try MILImporter.importProgram(Self.model(), file: "m.mlmodel", blobFiles: [:])) { e in
            XCTAssertTrue("\(e)".contains("m.mlmodel") && "\(e)".contains("no blob file"), "\(e)")
        }
    }

    func testMissingFiles() throws {
        error(try package { try FileManager.default.removeItem(at: $0.appendingPathComponent("Manifest.json")) }, mentions: ["Manifest.json"])
        error(try package { try FileManager.default.removeItem(at: $0.appendingPathComponent(Self.modelFile)) }, mentions: ["model.mlmodel"])
        error(try package { try FileManager.default.removeItem(at: $0.appendingPathComponent(Self.weightFile)) },
              mentions: ["model.mlmodel", "weight.bin", "operation[0] const 'w'"])
    }

    func testDamagedWeightFile() throws {
        var w = Self.weights()
        error(try package(weights: Array(w.prefix(100))), mentions: ["weight.bin", "offset"])
        w[64] = 0
        error(try package(weights: w), mentions: ["weight.bin", "offset 64", "sentinel"])
        w = Self.weights()
        w[0] = 200
        error(try package(weights: w), mentions: ["weight.bin", "offset 0", "counts 200 blobs"])
    }

    func testDamagedProgram() throws {
        error(try package(model: Self.model { c, _ in c.attributes["val"]?.blobFileValue.offset = 1 << 40 }), mentions: ["weight.bin", "no blob record"])
        error(try package(model: Self.model { c, _ in c.attributes["val"]?.blobFileValue.fileName = "@model_path/../../../etc/passwd" }),
              mentions: ["model.mlmodel", "escapes"])
        error(try package(model: Self.model { _, a in a.inputs["y"]?.arguments[0].name = "nope" }), mentions: ["model.mlmodel", "unknown value 'nope'"])
        error(try package(model: Self.model { c, _ in c.outputs[0].type.tensorType.dimensions[0].constant.size = 3 }),
              mentions: ["model.mlmodel", "declares [3]"])
        error(try package(model: Self.model { c, a in c.type = "mystery"; a.type = "frobnicate" }),
              mentions: ["unsupported ops (2): frobnicate, mystery"])
        error(try package { dir in
            let url = dir.appendingPathComponent(Self.modelFile)
            let bytes = try Data(contentsOf: url)
            try bytes.prefix(bytes.count / 2).write(to: url)
        }, mentions: ["model.mlmodel", "not a Core ML protobuf"])
    }

    /// An iOS 18 lut_to_dense whose tables are vectors, or grouped along two axes: refused by name.
    func testPalettesOutsidePaletteWeightsAreRefused() throws {
        func const(_ name: String, _ type: CoreML_Specification_MILSpec_DataType, _ dims: [UInt64], bytes: [UInt8]? = nil, floats: [Float]? = nil)
            -> CoreML_Specification_MILSpec_Operation {
            var t = CoreML_Specification_MILSpec_ValueType()
            t.tensorType.dataType = type
            t.tensorType.rank = Int64(dims.count)
            t.tensorType.dimensions = dims.map { var d = CoreML_Specification_MILSpec_Dimension(); d.constant.size = $0; return d }
            var v = CoreML_Specification_MILSpec_Value()
            v.type = t
            if let bytes { v.immediateValue.tensor.bytes.values = Data(bytes) }
            if let floats { v.immediateValue.tensor.floats.values = floats }
            var o = CoreML_Specification_MILSpec_Operation()
            o.type = "const"
            var out = CoreML_Specification_MILSpec_NamedValueType(); out.name = name; out.type = t
            o.outputs = [out]
            o.attributes["val"] = v
            return o
        }
        for (lutDims, expected) in [([1, 1, 4, 2] as [UInt64], "vector palettization (vector size 2)"),
                                    ([2, 2, 4, 1], "lookup tables grouped along several axes [0, 1]")] {
            var m = Self.model()
            var block = m.mlProgram.functions["main"]?.blockSpecializations["CoreML5"] ?? .init()
            let n = Int(lutDims.reduce(1, *))
            var lut = CoreML_Specification_MILSpec_Operation()
            lut.type = "constexpr_lut_to_dense"
            for (key, name) in [("indices", "idx"), ("lut", "table")] {
                var b = CoreML_Specification_MILSpec_Argument.Binding(); b.name = name
                var a = CoreML_Specification_MILSpec_Argument(); a.arguments = [b]
                lut.inputs[key] = a
            }
            lut.outputs = block.operations[0].outputs
            block.operations = [const("idx", .uint2, [2, 2], bytes: [0b1110_0100]), const("table", .float32, lutDims, floats: (0..<n).map(Float.init)),
                                lut, block.operations[1]]
            m.mlProgram.functions["main"]?.blockSpecializations["CoreML5"] = block
            XCTAssertThrowsError(try MILImporter.importProgram(m, file: "m.mlmodel", blobFiles: [:])) { e in
                XCTAssertTrue("\(e)".hasPrefix("m.mlmodel: ") && "\(e)".contains(expected), "\(e)")
            }
        }
    }
}
