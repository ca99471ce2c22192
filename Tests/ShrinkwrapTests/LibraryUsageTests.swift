import Foundation
import Shrinkwrap
import ShrinkwrapRuntime
import XCTest

/// README.md's "Using the library from Swift" snippet, run on the digits sample
/// (the same calls; paths made absolute and the output written to a temporary folder).
final class LibraryUsageTests: XCTestCase {
    func testReadmeSnippetCompressesSavesAndRunsTheDigitsSample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-library-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }

        let source = root.appendingPathComponent("Samples/digits/digits.tflite").path
        let original = try Models.load(source)
        var compressed = original

        var settings = CompressionSettings()
        settings.mode = "kmeans-lut"
        settings.bits = 4
        settings.minElements = 0
        let log = try Models.compress(&compressed, plan: settings.plan())
        let done = log.entries.filter { $0.skipped == nil }
        XCTAssertEqual(done.map(\.encoding), Array(repeating: done.first?.encoding ?? "?", count: 3))
        XCTAssertTrue(done.allSatisfy { $0.bytesAfter < $0.bytesBefore }, "\(done)")
        // 4-bit indices plus a 16-entry table per weight: over 6× smaller in all.
        XCTAssertLessThan(done.map(\.bytesAfter).reduce(0, +) * 6, done.map(\.bytesBefore).reduce(0, +))

        let target = dir.appendingPathComponent("digits-4bit.mlmodel").path
        let file = try Models.save(compressed, to: target, inputs: [source])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)), file.data)

        let image = try ModelRunner.loadInputs([root.appendingPathComponent("Samples/digits/images/digit_7_0.png").path],
                                               graph: original)
        var digits: [Int] = []
        for model in [original, compressed, try Models.load(target)] {
            let outputs = try Interpreter(graph: model).run(image)
            if let name = model.outputs.first?.name, let scores = outputs[name],
               let best = ModelRunner.topK(scores, k: 1)?.first {
                digits.append(best.index)
            }
        }
        XCTAssertEqual(digits, [7, 7, 7])
    }

    /// Module-qualified names resolve: this compiles only while no type in
    /// module `Shrinkwrap` is itself named `Shrinkwrap` (see `Models`).
    func testModuleQualifiedNamesResolve() throws {
        let graph = try Shrinkwrap.Models.load(URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/digits/digits.tflite").path)
        XCTAssertFalse(graph.nodes.isEmpty)
        XCTAssertTrue(Shrinkwrap.ModelFormats.writableExtensions.contains(".onnx"))
    }
}
