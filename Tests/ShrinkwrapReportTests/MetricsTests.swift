import Foundation
import ShrinkwrapIR
@testable import ShrinkwrapReport
import XCTest

final class MetricsTests: XCTestCase {
    func t(_ v: [Float], _ shape: [Int]) -> Tensor { Tensor(v, shape: shape) }

    func testIdenticalTensorsAgreeFully() throws {
        var acc = MetricsAccumulator(name: "logits", labels: ["a", "b", "c", "d"])
        for v: [Float] in [[0.1, 0.7, 0.2, 0], [0.4, 0.3, 0.2, 0.1], [-1, -2, 3, 0]] {
            try acc.add(reference: t(v, [1, 4]), candidate: t(v, [1, 4]))
        }
        let m = acc.result()
        XCTAssertEqual(m.name, "logits")
        XCTAssertEqual(m.inputs, 3)
        XCTAssertEqual(m.classes, 4)
        XCTAssertEqual(m.top1Agreement, 100)
        XCTAssertEqual(m.top5Agreement, 100)
        XCTAssertNil(m.snrDB, "identical outputs have infinite SNR")
        XCTAssertNil(m.psnrDB)
        XCTAssertEqual(m.maxAbsError, 0)
        XCTAssertEqual(m.meanCosine, 1, accuracy: 1e-12)
        XCTAssertEqual(m.minCosine, 1, accuracy: 1e-12)
        XCTAssertEqual(m.flips, [])
        XCTAssertTrue(m.isScoreVector)
    }

    func testKnownFlips() throws {
        var acc = MetricsAccumulator(name: "probs", labels: ["cat", "dog", "bird"])
        let pairs: [([Float], [Float])] = [
            ([0.9, 0.05, 0.05], [0.2, 0.7, 0.1]),  // cat → dog
            ([0.1, 0.8, 0.1], [0.1, 0.8, 0.1]),    // agree
            ([0.6, 0.3, 0.1], [0.3, 0.6, 0.1]),    // cat → dog
            ([0.1, 0.2, 0.7], [0.1, 0.5, 0.4]),    // bird → dog
        ]
        for (r, c) in pairs { try acc.add(reference: t(r, [3]), candidate: t(c, [3])) }
        let m = acc.result()
        XCTAssertEqual(m.classes, 3)
        XCTAssertEqual(m.top1Agreement, 25)
        XCTAssertEqual(m.top5Agreement, 100, "k = min(5, 3) = 3 covers every class")
        XCTAssertEqual(m.flips, [LabelFlip(reference: "cat", candidate: "dog", count: 2),
                                 LabelFlip(reference: "bird", candidate: "dog", count: 1)])
    }

    func testNoFlipsWithoutLabels() throws {
        var acc = MetricsAccumulator(name: "probs")
        try acc.add(reference: t([1, 0], [1, 2]), candidate: t([0, 1], [1, 2]))
        XCTAssertEqual(acc.result().top1Agreement, 0)
        XCTAssertEqual(acc.result().flips, [])
    }

    func testTop5HitWhenTop1Differs() throws {
        var acc = MetricsAccumulator(name: "scores")
        // Reference top-1 is class 3; the candidate ranks it 4th (after 9, 0, 5).
        let ref: [Float] = [0, 0, 0, 9, 0, 0, 0, 0, 0, 0]
        let cand: [Float] = [0.8, 0.1, 0.1, 0.6, 0.2, 0.7, 0.1, 0.1, 0.1, 0.9]
        try acc.add(reference: t(ref, [1, 10]), candidate: t(cand, [1, 10]))
        // Second input: reference top-1 class 0 ranks 6th in the candidate → a top-5 miss.
        let ref2: [Float] = [5, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        let cand2: [Float] = [0.5, 0.9, 0.8, 0.7, 0.6, 0.55, 0.1, 0.1, 0.1, 0.1]
        try acc.add(reference: t(ref2, [1, 10]), candidate: t(cand2, [1, 10]))
        let m = acc.result()
        XCTAssertEqual(m.classes, 10)
        XCTAssertEqual(m.top1Agreement, 0)
        XCTAssertEqual(m.top5Agreement, 50)
    }

    func testTiesBreakTowardsLowerIndex() throws {
        // Candidate ties classes 1 and 2; argmax is 1 = reference's top-1.
        var acc = MetricsAccumulator(name: "s")
        try acc.add(reference: t([0, 2, 1, 0, 0, 0, 0], [7]), candidate: t([0, 1, 1, 0, 0, 0, 0], [7]))
        XCTAssertEqual(acc.result().top1Agreement, 100)
        // Reference class 6 tied with five lower-indexed classes ranks 6th: a top-5 miss.
        var acc2 = MetricsAccumulator(name: "s")
        try acc2.add(reference: t([0, 0, 0, 0, 0, 0, 1], [7]), candidate: t([1, 1, 1, 1, 1, 1, 1], [7]))
        XCTAssertEqual(acc2.result().top1Agreement, 0)
        XCTAssertEqual(acc2.result().top5Agreement, 0)
    }

    func testNaNNeverWinsArgmax() throws {
        var acc = MetricsAccumulator(name: "s")
        try acc.add(reference: t([0.1, 0.9, 0.0], [3]), candidate: t([.nan, 0.9, 0.0], [3]))
        let m = acc.result()
        XCTAssertEqual(m.top1Agreement, 100)
        XCTAssertTrue(m.maxAbsError.isNaN, "a NaN difference must show")
    }

    func testBatchRowsAreSeparatePredictions() throws {
        var acc = MetricsAccumulator(name: "s", labels: ["x", "y", "z"])
        // Two rows of three classes: row 0 agrees, row 1 flips z → x.
        try acc.add(reference: t([0, 1, 0, 0, 0, 1], [2, 1, 3]), candidate: t([0, 1, 0, 1, 0, 0], [2, 1, 3]))
        let m = acc.result()
        XCTAssertEqual(m.inputs, 1)
        XCTAssertEqual(m.classes, 3)
        XCTAssertEqual(m.top1Agreement, 50)
        XCTAssertEqual(m.flips, [LabelFlip(reference: "z", candidate: "x", count: 1)])
    }

    func testScoreVectorShapes() {
        XCTAssertEqual(scoreVectorClasses([1, 1000]), 1000)
        XCTAssertEqual(scoreVectorClasses([1000]), 1000)
        XCTAssertEqual(scoreVectorClasses([1, 1, 10]), 10)
        XCTAssertEqual(scoreVectorClasses([4, 10]), 10)
        XCTAssertEqual(scoreVectorClasses([4, 1, 10]), 10)
        XCTAssertNil(scoreVectorClasses([1, 4, 10]))
        XCTAssertNil(scoreVectorClasses([1, 1]))
        XCTAssertNil(scoreVectorClasses([]))
        XCTAssertNil(scoreVectorClasses([1, 3, 8, 8]))
    }

    func testOrthogonalVectorsAndHandComputedErrors() throws {
        // Shape [2, 1]: not a score vector.
        var acc = MetricsAccumulator(name: "emb")
        try acc.add(reference: t([1, 0], [2, 1]), candidate: t([0, 1], [2, 1]))
        let m = acc.result()
        XCTAssertNil(m.classes)
        XCTAssertNil(m.top1Agreement)
        XCTAssertNil(m.top5Agreement)
        XCTAssertEqual(m.meanCosine, 0, accuracy: 1e-15)
        XCTAssertEqual(m.minCosine, 0, accuracy: 1e-15)
        // Σref² = 1, Σerr² = 2 → 10·log10(1/2).
        XCTAssertEqual(try XCTUnwrap(m.snrDB), -3.010299956639812, accuracy: 1e-12)
        // peak 1, MSE 2/2 = 1 → 0 dB.
        XCTAssertEqual(try XCTUnwrap(m.psnrDB), 0, accuracy: 1e-12)
        XCTAssertEqual(m.maxAbsError, 1)
    }

    func testHandComputedOverTwoInputs() throws {
        var acc = MetricsAccumulator(name: "v")
        try acc.add(reference: t([3, 4], [2, 1]), candidate: t([3, 3], [2, 1]))
        try acc.add(reference: t([0, 0], [2, 1]), candidate: t([0, 0], [2, 1]))
        let m = acc.result()
        // cos₁ = 21 / (5·√18), cos₂ = 1 (both zero).
        let cos1 = 21 / (5 * 18.0.squareRoot())
        XCTAssertEqual(m.meanCosine, (cos1 + 1) / 2, accuracy: 1e-12)
        XCTAssertEqual(m.minCosine, cos1, accuracy: 1e-12)
        // Σref² = 25, Σerr² = 1 → 10·log10(25).
        XCTAssertEqual(try XCTUnwrap(m.snrDB), 13.979400086720377, accuracy: 1e-12)
        // peak 4, MSE 1/4 → 10·log10(64).
        XCTAssertEqual(try XCTUnwrap(m.psnrDB), 18.061799739838872, accuracy: 1e-12)
        XCTAssertEqual(m.maxAbsError, 1)
    }

    func testCosineOfZeroTensors() throws {
        var acc = MetricsAccumulator(name: "z")
        try acc.add(reference: t([0, 0, 0], [3, 1]), candidate: t([0, 0, 0], [3, 1]))
        XCTAssertEqual(acc.result().meanCosine, 1)
        try acc.add(reference: t([0, 0, 0], [3, 1]), candidate: t([0, 2, 0], [3, 1]))
        XCTAssertEqual(acc.result().minCosine, 0)
        XCTAssertEqual(acc.result().meanCosine, 0.5)
        XCTAssertEqual(acc.result().snrDB, -.infinity, "a zero reference against a non-zero candidate")
    }

    func testMixedShapesAreNotScoreVectors() throws {
        var acc = MetricsAccumulator(name: "m", labels: ["a", "b", "c"])
        try acc.add(reference: t([0, 1, 0], [1, 3]), candidate: t([1, 0, 0], [1, 3]))
        try acc.add(reference: t([0, 1], [1, 2]), candidate: t([0, 1], [1, 2]))
        let m = acc.result()
        XCTAssertNil(m.classes)
        XCTAssertNil(m.top1Agreement)
        XCTAssertEqual(m.flips, [])
        XCTAssertEqual(m.inputs, 2)
    }

    func testIntegerOutputsCompareAsNumbers() throws {
        var acc = MetricsAccumulator(name: "label")
        try acc.add(reference: Tensor(ints: [3], shape: [1]), candidate: Tensor(ints: [5], shape: [1]))
        let m = acc.result()
        XCTAssertNil(m.classes)
        XCTAssertEqual(m.maxAbsError, 2)
        XCTAssertEqual(m.meanCosine, 1, "two positive scalars point the same way")
    }

    func testShapeMismatchError() throws {
        var acc = MetricsAccumulator(name: "logits")
        XCTAssertThrowsError(try acc.add(reference: t(Array(repeating: 0, count: 10), [1, 10]),
                                         candidate: t(Array(repeating: 0, count: 5), [1, 5]))) { error in
            XCTAssertEqual(error as? MetricsError, MetricsError(output: "logits", referenceShape: [1, 10], candidateShape: [1, 5]))
            XCTAssertEqual(String(describing: error), "output 'logits': reference shape [1, 10] differs from candidate shape [1, 5]")
        }
        XCTAssertEqual(acc.result().inputs, 0, "a rejected pair is not counted")
    }

    func testEmptyAccumulator() {
        let m = MetricsAccumulator(name: "nothing").result()
        XCTAssertEqual(m.inputs, 0)
        XCTAssertEqual(m.meanCosine, 0)
        XCTAssertEqual(m.minCosine, 0)
        XCTAssertNil(m.top1Agreement)
        XCTAssertNil(m.classes)
    }

    func testFlipsSortedAndCapped() throws {
        // 25 distinct flips: class i → class i+1 (i = 0..<25) once each, and 0 → 1 twice more.
        let labels = (0..<30).map { "L\(String(format: "%02d", $0))" }
        var acc = MetricsAccumulator(name: "s", labels: labels)
        func onehot(_ i: Int) -> Tensor {
            var v = [Float](repeating: 0, count: 30)
            v[i] = 1
            return Tensor(v, shape: [1, 30])
        }
        for i in (0..<25).reversed() { try acc.add(reference: onehot(i), candidate: onehot(i + 1)) }
        try acc.add(reference: onehot(3), candidate: onehot(4))
        try acc.add(reference: onehot(3), candidate: onehot(4))
        let flips = acc.result().flips
        XCTAssertEqual(flips.count, 20)
        XCTAssertEqual(flips[0], LabelFlip(reference: "L03", candidate: "L04", count: 3))
        XCTAssertEqual(flips[1], LabelFlip(reference: "L00", candidate: "L01", count: 1))
        XCTAssertEqual(flips[19], LabelFlip(reference: "L19", candidate: "L20", count: 1))
        XCTAssertEqual(acc.result().top1Agreement, 0)
    }

    func testLabelsShorterThanClassesUseIndices() throws {
        var acc = MetricsAccumulator(name: "s", labels: ["a"])
        try acc.add(reference: t([1, 0, 0], [3]), candidate: t([0, 0, 1], [3]))
        XCTAssertEqual(acc.result().flips, [LabelFlip(reference: "a", candidate: "#2", count: 1)])
    }

    func testDeterministic() throws {
        // Same inputs in the same order give bit-identical results, flips included.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Float {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Float(state >> 40) / Float(1 << 24) - 0.5
        }
        var pairs: [(Tensor, Tensor)] = []
        for _ in 0..<50 {
            let r = (0..<40).map { _ in next() }
            let c = r.map { $0 + 0.3 * next() }
            pairs.append((t(r, [1, 40]), t(c, [1, 40])))
        }
        let labels = (0..<40).map { "class \($0)" }
        func run() throws -> OutputMetrics {
            var acc = MetricsAccumulator(name: "s", labels: labels)
            for (r, c) in pairs { try acc.add(reference: r, candidate: c) }
            return acc.result()
        }
        let a = try run(), b = try run()
        XCTAssertEqual(a, b)
        XCTAssertFalse(a.flips.isEmpty)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        XCTAssertEqual(try encoder.encode(a), try encoder.encode(b))
        for (x, y) in zip(a.flips, a.flips.dropFirst()) {
            XCTAssertTrue(x.count > y.count || (x.count == y.count && (x.reference, x.candidate) < (y.reference, y.candidate)))
        }
    }

    func testSQNR() {
        XCTAssertNil(sqnrDB(reference: [1, 2, 3], approximation: [1, 2, 3]))
        // Σref² = 5, Σerr² = 1.
        XCTAssertEqual(try XCTUnwrap(sqnrDB(reference: [1, 2], approximation: [1, 1])), 6.989700043360188, accuracy: 1e-12)
        XCTAssertEqual(sqnrDB(reference: [0, 0], approximation: [0, 1]), -.infinity)
        XCTAssertNil(sqnrDB(reference: [], approximation: []))
        // A missing element counts as 0: the error is the reference's last element.
        XCTAssertEqual(try XCTUnwrap(sqnrDB(reference: [3, 4], approximation: [3])), 10 * log10(25.0 / 16), accuracy: 1e-12)
    }

    func testVariantSizeHelpers() {
        let reference = SizeInfo(fileBytes: 1000, weightBytes: 800, weightCount: 200)
        var v = Variant(mode: "linear", bits: 4, granularity: "per-tensor", size: SizeInfo(fileBytes: 250, weightBytes: 100, weightCount: 200))
        XCTAssertEqual(v.reductionPercent(vs: reference), 75, "file sizes when both have them")
        XCTAssertEqual(v.bitsPerWeight, 4)
        v.size.fileBytes = nil
        XCTAssertEqual(v.reductionPercent(vs: reference), 87.5, "weight bytes otherwise")
        XCTAssertEqual(v.reductionPercent(vs: SizeInfo(weightBytes: 0, weightCount: 0)), 0)
        XCTAssertEqual(Variant(mode: "x", bits: 1, granularity: "g", size: SizeInfo(weightBytes: 0, weightCount: 0)).bitsPerWeight, 0)
        XCTAssertEqual(v.label, "linear 4-bit per-tensor")
    }
}

final class ScoreVectorShapeTests: XCTestCase {
    /// A convolutional classifier's [1, C, 1, 1] output is one row of C scores; [2, 3, 4] is not a score vector.
    func testConvolutionalClassifierShape() throws {
        var acc = MetricsAccumulator(name: "prob")
        try acc.add(reference: Tensor([0.1, 0.7, 0.2], shape: [1, 3, 1, 1]), candidate: Tensor([0.6, 0.3, 0.1], shape: [1, 3, 1, 1]))
        let m = acc.result()
        XCTAssertEqual(m.classes, 3)
        XCTAssertEqual(m.top1Agreement, 0)
        XCTAssertEqual(m.top5Agreement, 100)
        var other = MetricsAccumulator(name: "map")
        let t = Tensor((0..<24).map { Float($0) }, shape: [2, 3, 4])
        try other.add(reference: t, candidate: t)
        XCTAssertNil(other.result().classes)
    }
}
