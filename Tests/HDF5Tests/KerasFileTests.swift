import Foundation
import XCTest
@testable import HDF5

/// A real Keras 2 file: tf.keras 2.12 `model.save(..., save_format="h5")` of a seeded
/// Sequential (Dense 3→4 relu, Dense 4→2), read the way the Keras importer reads it.
final class KerasFileTests: XCTestCase {
    let expected = Fixture.expected["keras_tiny.h5"] ?? [:]

    func testRootAttributes() throws {
        let file = try Fixture.open("keras_tiny.h5")
        XCTAssertEqual(file.superblockVersion, 0)
        XCTAssertEqual(try file.root.attribute("keras_version")?.value.stringArray, ["2.12.0"])
        XCTAssertEqual(try file.root.attribute("backend")?.value.stringArray, ["tensorflow"])
        let config = try XCTUnwrap(try file.root.attribute("model_config")?.value.stringArray?.first)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(config.utf8)) as? [String: Any])
        XCTAssertEqual(json["class_name"] as? String, "Sequential")
        let layers = try XCTUnwrap((json["config"] as? [String: Any])?["layers"] as? [[String: Any]])
        let dense = layers.filter { $0["class_name"] as? String == "Dense" }
        XCTAssertEqual(dense.compactMap { ($0["config"] as? [String: Any])?["units"] as? Int }, [4, 2])
        XCTAssertEqual((dense.first?["config"] as? [String: Any])?["activation"] as? String, "relu")
    }

    func testLayerNamesWeightNamesAndWeights() throws {
        let file = try Fixture.open("keras_tiny.h5")
        let weights = try Fixture.group(file, "model_weights")
        XCTAssertEqual(try weights.attribute("layer_names")?.value.stringArray, ["dense", "dense_1"])
        for (layer, kernelShape) in [("dense", [3, 4]), ("dense_1", [4, 2])] {
            let group = try Fixture.group(file, "model_weights/\(layer)")
            let names = try XCTUnwrap(try group.attribute("weight_names")?.value.stringArray)
            XCTAssertEqual(names, ["\(layer)/kernel:0", "\(layer)/bias:0"])
            for name in names {
                let path = "model_weights/\(layer)/\(name)"
                let dataset = try Fixture.dataset(file, path)
                XCTAssertEqual(dataset.shape, name.hasSuffix("kernel:0") ? kernelShape : [kernelShape[1]], path)
                let values = try XCTUnwrap(try dataset.read().floatArray, path)
                let reference = (expected[path]?["value"] as? [String: Any])?["values"] as? [NSNumber]
                XCTAssertEqual(values, try XCTUnwrap(reference, path).map { $0.floatValue }, path)
            }
        }
        // The kernels are seeded random (not all zero); biases start at zero.
        XCTAssertTrue(try Fixture.dataset(file, "model_weights/dense/dense/kernel:0").read().floatArray?.contains { $0 != 0 } ?? false)
        XCTAssertEqual(try Fixture.dataset(file, "model_weights/dense/dense/bias:0").read(), .floats([0, 0, 0, 0]))
    }
}
