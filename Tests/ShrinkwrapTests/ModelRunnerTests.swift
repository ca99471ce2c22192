import Shrinkwrap
import ShrinkwrapData
import ShrinkwrapIR
import XCTest

final class ModelRunnerTests: XCTestCase {
    func testTopKOnClassScoreShapes() {
        let scores: [Float] = [0.1, 0.7, 0.2]
        for shape in [[3], [1, 3], [1, 3, 1, 1]] {
            let top = ModelRunner.topK(Tensor(scores, shape: shape), k: 2)
            XCTAssertEqual(top?.map(\.index), [1, 2], "\(shape)")
        }
        XCTAssertNil(ModelRunner.topK(Tensor([1, 2, 3, 4, 5, 6], shape: [2, 3])))  // a batch: not one score row
        XCTAssertNil(ModelRunner.topK(Tensor([1], shape: [1, 1])))
        XCTAssertNil(ModelRunner.topK(Tensor([1, 3, 5], shape: [3, 1])))  // three samples of one value each
        XCTAssertEqual(ModelRunner.valuePreview(Tensor([-3, 0.5, 19], shape: [3, 1])), "-3 0.5 19")
        XCTAssertEqual(ModelRunner.valuePreview(Tensor(ints: [1, 2, 3], shape: [3]), limit: 2), "1 2 … (3 values)")
        XCTAssertNil(ModelRunner.topK(Tensor(ints: [1, 2], shape: [2])))
        // Ties keep the lower index first.
        XCTAssertEqual(ModelRunner.topK(Tensor([5, 5, 1], shape: [3]), k: 3)?.map(\.index), [0, 1, 2])
    }

    func testOutputFileNames() {
        XCTAssertEqual(ModelRunner.fileName(for: "gpu_0/softmax_1"), "gpu_0_softmax_1")
        XCTAssertEqual(ModelRunner.fileName(for: "../x"), ".._x")
        XCTAssertEqual(ModelRunner.fileName(for: ""), "output")
    }

    /// run --text (was in ImageTextDataTests' text-file test, which moved to ShrinkwrapDataTests).
    func testTextInputUsesTheGivenVocabulary() throws {
        let info = ValueInfo(name: "ids", dtype: .int32, shape: [.fixed(1), .fixed(4)])
        let g = Graph(inputs: [info])
        var o = DataOptions()
        o.vocabulary = try Vocabulary.parse("<PAD> 0\n<START> 1\n<UNKNOWN> 2\ni 3\nfeel 4\ngreat 5\ndon't 6\ncafé 7\n42 8\n", source: "vocab.txt")
        XCTAssertEqual(try ModelRunner.textInput("great day", graph: g, options: o)["ids"]?.ints, [1, 5, 2, 0])
    }
}
