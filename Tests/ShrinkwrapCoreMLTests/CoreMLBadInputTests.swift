import CoreMLSchema
import Foundation
@testable import ShrinkwrapCoreML
import ShrinkwrapIR
import SwiftProtobuf
import XCTest

/// Malformed and hostile .mlmodel files: each a one-line error naming the place, never a crash.
final class CoreMLBadInputTests: XCTestCase {
    /// A tiny valid model: x [4] → innerProduct (3×4, 8-bit linear) → y.
    func model(_ edit: (inout CoreML_Specification_Model) -> Void = { _ in }) -> CoreML_Specification_Model {
        var m = CoreML_Specification_Model()
        m.specificationVersion = 3
        var i = CoreML_Specification_FeatureDescription()
        i.name = "x"; i.type.multiArrayType.shape = [4]; i.type.multiArrayType.dataType = .float32
        var o = CoreML_Specification_FeatureDescription()
        o.name = "y"; o.type.multiArrayType.shape = [3]; o.type.multiArrayType.dataType = .float32
        m.description_p.input = [i]; m.description_p.output = [o]
        var l = CoreML_Specification_NeuralNetworkLayer()
        l.name = "fc"; l.input = ["x"]; l.output = ["y"]
        l.innerProduct.inputChannels = 4; l.innerProduct.outputChannels = 3
        l.innerProduct.weights.rawValue = Data((0..<12).map { UInt8($0 * 20) })
        l.innerProduct.weights.quantization.numberOfBits = 8
        l.innerProduct.weights.quantization.linearQuantization.scale = [0.01]
        l.innerProduct.weights.quantization.linearQuantization.bias = [-1]
        m.neuralNetwork.layers = [l]
        edit(&m)
        return m
    }

    func importError(_ m: CoreML_Specification_Model, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try CoreMLImporter.importModel(data: try m.serializedData(), file: "bad.mlmodel")
            XCTFail("imported a bad model", file: file, line: line)
            return ""
        } catch {
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("bad.mlmodel"), text, file: file, line: line)
            XCTAssertFalse(text.contains("\n"), text, file: file, line: line)
            return text
        }
    }

    func testTheBaseModelImports() throws {
        let g = try CoreMLImporter.importModel(data: try model().serializedData(), file: "ok.mlmodel")
        XCTAssertEqual(g.outputs.map(\.name), ["y"])
    }

    func testTruncatedFiles() throws {
        let data = try model().serializedData()
        for cut in [1, 5, data.count / 2, data.count - 1] {
            XCTAssertThrowsError(try CoreMLImporter.importModel(data: data.prefix(cut), file: "cut.mlmodel")) { e in
                XCTAssertTrue("\(e)".hasPrefix("cut.mlmodel"), "\(e)")
            }
        }
        XCTAssertThrowsError(try CoreMLImporter.importModel(data: Data(), file: "empty.mlmodel"))
    }

    func testUnknownLayerTypesAreListedTogether() throws {
        // A layer of a kind outside our schema (topK, field 1015) and one with no kind at all.
        var unknown = CoreML_Specification_NeuralNetworkLayer()
        unknown.name = "k"; unknown.input = ["y"]; unknown.output = ["z"]
        var topK = CoreML_Specification_NeuralNetworkLayer()
        topK.name = "t"; topK.input = ["y"]; topK.output = ["w"]
        var bytes = try topK.serializedData()
        bytes.append(contentsOf: [0xBA, 0x3F, 0x00])  // field 1015, length-delimited, empty
        let parsed = try CoreML_Specification_NeuralNetworkLayer(serializedBytes: bytes)
        let text = importError(model { $0.neuralNetwork.layers += [unknown, parsed] })
        XCTAssertTrue(text.contains("unsupported ops (2)"), text)
        XCTAssertTrue(text.contains("topK (field 1015)"), text)
        XCTAssertTrue(text.contains("layer 'k'"), text)
    }

    func testRawValueTooShort() {
        let text = importError(model { $0.neuralNetwork.layers[0].innerProduct.weights.rawValue = Data([1, 2, 3]) })
        XCTAssertTrue(text.contains("rawValue has 3 bytes"), text)
        XCTAssertTrue(text.contains("'fc'"), text)
    }

    func testWrongLUTLength() {
        let text = importError(model {
            var w = CoreML_Specification_WeightParams()
            w.rawValue = Data(repeating: 0x12, count: 6)
            w.quantization.numberOfBits = 4
            w.quantization.lookupTableQuantization.floatValue = [0, 1, 2]
            $0.neuralNetwork.layers[0].innerProduct.weights = w
        })
        XCTAssertTrue(text.contains("lookup table has 3 entries; 4 bits need 16"), text)
    }

    func testOversizedDeclaredShapes() {
        var text = importError(model { $0.neuralNetwork.layers[0].innerProduct.outputChannels = 1 << 40 })
        XCTAssertTrue(text.contains("outputChannels"), text)
        text = importError(model {
            $0.neuralNetwork.layers[0].innerProduct.outputChannels = 1 << 30
            $0.neuralNetwork.layers[0].innerProduct.inputChannels = 1 << 30
        })
        XCTAssertTrue(text.contains("too large") || text.contains("bytes"), text)
        text = importError(model { $0.description_p.input[0].type.multiArrayType.shape = [1 << 40, 1 << 40] })
        XCTAssertTrue(text.contains("description.input[0]"), text)
    }

    func testBlobsMustBeDefinedFirst() {
        let text = importError(model { $0.neuralNetwork.layers[0].input = ["nowhere"] })
        XCTAssertTrue(text.contains("'nowhere'"), text)
    }
}

extension CoreMLBadInputTests {
    /// Hostile N-d slice parameters and a rank-1 upsample: errors, not traps.
    func testHostileSliceAndUpsampleParameters() {
        var text = importError(model {
            var l = CoreML_Specification_NeuralNetworkLayer()
            l.name = "s"; l.input = ["y"]; l.output = ["z"]
            l.sliceStatic.beginIds = [Int64.max]; l.sliceStatic.endIds = [1]; l.sliceStatic.strides = [1]
            l.sliceStatic.beginMasks = [false]; l.sliceStatic.endMasks = [false]; l.sliceStatic.squeezeMasks = [true, true, true]
            $0.neuralNetwork.arrayInputShapeMapping = .exactArrayMapping
            $0.neuralNetwork.layers.append(l)
        })
        XCTAssertTrue(text.contains("squeeze masks"), text)
        text = importError(model {
            var l = CoreML_Specification_NeuralNetworkLayer()
            l.name = "u"; l.input = ["y"]; l.output = ["z"]
            l.upsample.scalingFactor = [2, 2]
            $0.neuralNetwork.arrayInputShapeMapping = .exactArrayMapping
            $0.neuralNetwork.layers.append(l)
        })
        XCTAssertTrue(text.contains("upsampling needs"), text)
    }
}
