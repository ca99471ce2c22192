import Foundation
import Shrinkwrap
import ShrinkwrapIR
import XCTest

/// --inputs / --outputs / --signature through `Models.load`: read by the TensorFlow importer,
/// refused for the formats that do not read them (never silently ignored).
final class ImportOptionsTests: XCTestCase {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    var models: URL { root.appendingPathComponent("Tests/ShrinkwrapTensorFlowTests/Fixtures/models") }

    func testTensorFlowReadsThem() throws {
        let saved = models.appendingPathComponent("mlp").path
        let whole = try Models.load(saved)
        XCTAssertEqual(whole.outputs.count, 2)
        let one = try Models.load(saved, options: ImportOptions(outputs: ["dense_4"]))
        XCTAssertEqual(one.outputs.map(\.name), ["dense_4"])
        XCTAssertThrowsError(try Models.load(saved, options: ImportOptions(signature: "predict"))) { error in
            XCTAssertTrue("\(error)".contains("no signature 'predict' (the SavedModel has: serving_default)"), "\(error)")
        }
        let frozen = try Models.load(models.appendingPathComponent("cnn.pb").path, options: ImportOptions(inputs: ["input"], outputs: ["Identity"]))
        XCTAssertEqual(frozen.outputs.map(\.name), ["Identity"])
    }

    func testOtherFormatsRefuseThem() {
        let onnx = root.appendingPathComponent("Samples/digits/digits.onnx").path
        XCTAssertThrowsError(try Models.load(onnx, options: ImportOptions(outputs: ["y"], signature: "s"))) { error in
            XCTAssertEqual("\(error)", "\(onnx): unsupported: --outputs, --signature for ONNX (read for: TensorFlow)")
        }
        XCTAssertEqual(ImportOptions(signature: "s").applying(to: onnx), ImportOptions())
        XCTAssertEqual(ImportOptions(signature: "s").applying(to: models.appendingPathComponent("mlp").path), ImportOptions(signature: "s"))
    }
}
