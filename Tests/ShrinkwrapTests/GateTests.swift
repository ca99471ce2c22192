import Foundation
import Shrinkwrap
import ShrinkwrapReport
import XCTest

/// The quality gates of compare / convert / sweep (--min-agreement, --min-cosine, --min-psnr).
final class GateTests: XCTestCase {
    /// A class-score output ("probs") with these numbers.
    func scores(agreement: Double = 98, cosine: Double = 0.999, psnr: Double? = 40) -> OutputMetrics {
        OutputMetrics(name: "probs", inputs: 10, classes: 5, top1Agreement: agreement, top5Agreement: 100,
                      meanCosine: cosine, minCosine: cosine, psnrDB: psnr, maxAbsError: 0.01)
    }

    /// A regression output: no top-1 agreement.
    func values(cosine: Double = 0.9999, psnr: Double? = 50) -> OutputMetrics {
        OutputMetrics(name: "box", inputs: 10, meanCosine: cosine, minCosine: cosine, psnrDB: psnr, maxAbsError: 0.01)
    }

    func testIsSetWhenAnyThresholdIsGiven() {
        XCTAssertFalse(QualityGate().isSet)
        XCTAssertTrue(QualityGate(minAgreement: 90).isSet)
        XCTAssertTrue(QualityGate(minCosine: 0.99).isSet)
        XCTAssertTrue(QualityGate(minPSNR: 30).isSet)
        XCTAssertEqual(QualityGate.failedExitCode, 3)
    }

    func testMet() {
        let gate = QualityGate(minAgreement: 95, minCosine: 0.99, minPSNR: 30)
        XCTAssertEqual(gate.shortfalls([scores(), values()]), [])
        XCTAssertNil(gate.failureMessage([scores(), values()]))
        // Thresholds are minimums: equal passes.
        XCTAssertNil(QualityGate(minAgreement: 98, minCosine: 0.999, minPSNR: 40).failureMessage([scores()]))
        // Identical outputs have no PSNR, and pass --min-psnr.
        XCTAssertNil(QualityGate(minPSNR: 1000).failureMessage([scores(psnr: nil)]))
        // No gate: nothing to fail.
        XCTAssertNil(QualityGate().failureMessage([scores(agreement: 0, cosine: -1, psnr: 0)]))
    }

    func testUnmetNamesEachMetricAndOutput() {
        XCTAssertEqual(QualityGate(minAgreement: 99).shortfalls([scores()]), ["top-1 agreement 98.00% < 99.00% (output 'probs')"])
        XCTAssertEqual(QualityGate(minCosine: 0.9995).shortfalls([scores(), values()]), ["mean cosine 0.999000 < 0.999500 (output 'probs')"])
        XCTAssertEqual(QualityGate(minPSNR: 45).shortfalls([scores(), values()]), ["PSNR 40.00 dB < 45.00 dB (output 'probs')"])
        // Every output is checked for cosine and PSNR; agreement only on the first.
        XCTAssertEqual(QualityGate(minCosine: 1, minPSNR: 60).shortfalls([scores(), values()]), [
            "mean cosine 0.999000 < 1.000000 (output 'probs')", "PSNR 40.00 dB < 60.00 dB (output 'probs')",
            "mean cosine 0.999900 < 1.000000 (output 'box')", "PSNR 50.00 dB < 60.00 dB (output 'box')",
        ])
        XCTAssertEqual(QualityGate(minAgreement: 99).shortfalls([values(), scores(agreement: 0)]),
                       ["output 'box' is not a class-score vector; --min-agreement does not apply (use --min-cosine)"])
        XCTAssertEqual(QualityGate(minAgreement: 99, minCosine: 0.9995).failureMessage([scores()]),
                       "quality gate failed: top-1 agreement 98.00% < 99.00% (output 'probs'); mean cosine 0.999000 < 0.999500 (output 'probs')")
    }

    func testRejectedOutputIsMovedAside() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("shrinkwrap-gate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("model.tflite").path
        let rejected = output + ".rejected"
        try Data("older rejected model".utf8).write(to: URL(fileURLWithPath: rejected))
        try Data("new model".utf8).write(to: URL(fileURLWithPath: output))

        // Met: the file stays where it was written.
        XCTAssertNil(QualityGate(minCosine: 0.99).rejectIfFailing([scores()], writtenTo: output))
        XCTAssertTrue(FileManager.default.fileExists(atPath: output))

        // Unmet: renamed to .rejected (replacing the older one); nothing is left at the target name.
        let message = QualityGate(minCosine: 0.9999).rejectIfFailing([scores()], writtenTo: output)
        XCTAssertEqual(message, "quality gate failed: mean cosine 0.999000 < 0.999900 (output 'probs'); the model is kept as \(rejected)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: output))
        XCTAssertEqual(try String(contentsOfFile: rejected, encoding: .utf8), "new model")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["model.tflite.rejected"])
    }

    func testSweepVerdict() {
        let reference = SizeInfo(weightBytes: 1000, weightCount: 250)
        func variant(_ mode: String, _ bits: Int, bytes: Int, cosine: Double) -> Variant {
            Variant(mode: mode, bits: bits, granularity: "per-channel", size: SizeInfo(weightBytes: bytes, weightCount: 250),
                    outputs: [scores(cosine: cosine)])
        }
        let report = SweepReport(tool: "test", model: ModelInfo(file: "m.onnx", sha256: "-", format: "onnx"),
                                 data: DataInfo(description: "d", count: 10, sha256: "-", random: false), reference: reference,
                                 variants: [variant("fp16", 16, bytes: 500, cosine: 1), variant("linear", 8, bytes: 250, cosine: 0.9999),
                                            variant("linear", 4, bytes: 125, cosine: 0.99), variant("linear", 2, bytes: 63, cosine: 0.9)])
        let some = QualityGate(minCosine: 0.995).verdict(report)
        XCTAssertTrue(some.met)
        XCTAssertEqual(some.passing.map(\.label), ["fp16 16-bit per-channel", "linear 8-bit per-channel"])
        XCTAssertEqual(some.smallest?.label, "linear 8-bit per-channel")
        XCTAssertEqual(some.message, "quality gate: 2 of 4 variants pass; smallest: linear 8-bit per-channel")

        let none = QualityGate(minCosine: 2).verdict(report)
        XCTAssertFalse(none.met)
        XCTAssertNil(none.smallest)
        XCTAssertEqual(none.message, "quality gate: no variant passes")
    }
}
