import FlatBuffers
import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapTFLite
import XCTest
import ZipArchive


/// The tflite-support fixtures (`make testdata`: Scripts/make_tflite_metadata_fixtures.py).
let metadataFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../.testdata/tflite-metadata").standardizedFileURL

func requireMetadataFixtures() throws {
    guard FileManager.default.fileExists(atPath: metadataFixtures.appendingPathComponent("fixtures.json").path) else {
        let message = "SKIPPED: no tflite-support metadata fixtures in \(metadataFixtures.path); run `make testdata` (needs .venv-tf with tflite-support)"
        FileHandle.standardError.write(Data((message + "\n").utf8))
        throw XCTSkip(message)
    }
}

final class TFLiteMetadataTests: XCTestCase {
    /// image → RELU → scores, with `meta` as its TFLITE_METADATA buffer and appended ZIP.
    /// (The importer does not compare label counts with output sizes; bundles do.)
    func model(_ meta: TFLiteMetadata.Encoded?, inputShape: [Int32] = [1, 2, 2, 3]) -> TestTFLite {
        var m = TestTFLite()
        m.tensors = [TestTFLite.T(name: "image", shape: inputShape), TestTFLite.T(name: "scores", shape: inputShape)]
        m.ops = [TestTFLite.O(code: 19, inputs: [0], outputs: [1])]  // RELU
        m.inputs = [0]
        m.outputs = [1]
        if let meta {
            m.metadata = [("min_runtime_version", Array("1.5.0".utf8)), (TFLiteMetadata.bufferName, meta.metadataBuffer)]
            m.trailer = { try meta.appendedZip(modelSize: $0) }
        }
        return m
    }

    var graphIO: (inputs: [ValueInfo], outputs: [ValueInfo]) {
        ([ValueInfo(name: "image", dtype: .float32, shape: [.fixed(1), .fixed(2), .fixed(2), .fixed(3)], docString: "Input image.")],
         [ValueInfo(name: "scores", dtype: .float32, shape: [.fixed(1), .fixed(2), .fixed(2), .fixed(3)], docString: "Scores.")])
    }

    func sampleMetadata() -> Metadata {
        var md = Metadata()
        md.docString = "A test classifier."
        md.author = "Shrinkwrap tests"
        md.license = "MIT"
        md.modelVersion = 3
        md.properties = [("name", "Tiny classifier")]
        md.labels = ["zero", "one", "", "three ünïcode"]
        md.inputNormalization = [InputNormalization(name: "image", mean: [127.5, 120, 110], std: [127.5, 64, 1.5])]
        md.formatData = [(TFLiteMetadata.vocabularyKey, Array("<PAD> 0\n<START> 1\nword 2\n".utf8))]
        md.properties.append((TFLiteMetadata.vocabularyFileKey, "vocab.txt"))
        md.properties.append((TFLiteMetadata.tokenizerRegexKey, TFLiteMetadata.modelMakerRegex))
        return md
    }

    // MARK: - Round trip

    func testEncodeThenImportGivesTheSameMetadata() throws {
        let md = sampleMetadata()
        let io = graphIO
        let encoded = try TFLiteMetadata.encode(md, inputs: io.inputs, outputs: io.outputs)
        XCTAssertEqual(encoded.files.map(\.name), ["vocab.txt", "labels.txt"])
        XCTAssertEqual(Array(encoded.metadataBuffer[4..<8]), Array("M001".utf8))
        let g = try TFLiteImporter.importModel(bytes: try model(encoded).bytes(), file: "m.tflite")
        XCTAssertEqual(g.metadata.docString, md.docString)
        XCTAssertEqual(g.metadata.author, md.author)
        XCTAssertEqual(g.metadata.license, md.license)
        XCTAssertEqual(g.metadata.modelVersion, 3)
        XCTAssertEqual(g.metadata.labels, md.labels)
        XCTAssertEqual(g.metadata.inputNormalization, md.inputNormalization)
        XCTAssertEqual(g.metadata.formatData(TFLiteMetadata.vocabularyKey), md.formatData(TFLiteMetadata.vocabularyKey))
        XCTAssertEqual(g.metadata.properties.map(\.key), ["min_runtime_version", "name", TFLiteMetadata.vocabularyFileKey, TFLiteMetadata.tokenizerRegexKey])
        XCTAssertEqual(g.metadata.property("name"), "Tiny classifier")
        XCTAssertEqual(g.metadata.property(TFLiteMetadata.tokenizerRegexKey), "[^\\w\\']+")
        XCTAssertEqual(g.inputs[0].docString, "Input image.")
        XCTAssertEqual(g.outputs[0].docString, "Scores.")

        // Import → encode gives the same bytes again (deterministic, nothing lost).
        let again = try TFLiteMetadata.encode(g.metadata, inputs: g.runtimeInputs, outputs: g.outputs)
        XCTAssertEqual(again, encoded)
        XCTAssertEqual(try again.appendedZip(modelSize: 1000), try encoded.appendedZip(modelSize: 1000))
    }

    func testVersionStringAndEmptyMetadata() throws {
        var md = Metadata()
        md.properties = [("version", "v2.1")]
        let io = graphIO
        let encoded = try TFLiteMetadata.encode(md, inputs: io.inputs, outputs: io.outputs)
        XCTAssertTrue(encoded.files.isEmpty)
        XCTAssertEqual(try encoded.appendedZip(modelSize: 10), [])
        let g = try TFLiteImporter.importModel(bytes: try model(encoded).bytes(), file: "m.tflite")
        XCTAssertEqual(g.metadata.modelVersion, 0)
        XCTAssertEqual(g.metadata.property("version"), "v2.1")
        XCTAssertEqual(g.metadata.docString, "test", "Model.description stays when the metadata has none")
        XCTAssertTrue(TFLiteMetadata.worthWriting(md))
        XCTAssertFalse(TFLiteMetadata.worthWriting(Metadata()))
    }

    func testEncoderRefusals() {
        let io = graphIO
        var md = Metadata()
        md.labels = ["a\nb"]
        XCTAssertTrue(errorText { _ = try TFLiteMetadata.encode(md, inputs: io.inputs, outputs: io.outputs) }.contains("line break"))
        md = Metadata()
        md.inputNormalization = [InputNormalization(name: "nope", mean: [1], std: [1])]
        XCTAssertTrue(errorText { _ = try TFLiteMetadata.encode(md, inputs: io.inputs, outputs: io.outputs) }.contains("'nope', which is not an input"))
    }

    /// flatc reads our buffer against our schema and shows the intended fields.
    func testFlatcReadsTheEncodedBuffer() throws {
        guard let flatc = ["/usr/bin/flatc", "/usr/local/bin/flatc"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            let message = "SKIPPED: flatc not found; install flatbuffers-compiler (`make deps`) to check the metadata buffer with flatc"
            FileHandle.standardError.write(Data((message + "\n").utf8))
            throw XCTSkip(message)
        }
        let io = graphIO
        let encoded = try TFLiteMetadata.encode(sampleMetadata(), inputs: io.inputs, outputs: io.outputs)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-meta-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = dir.appendingPathComponent("m.tflitemeta")
        try Data(encoded.metadataBuffer).write(to: bin)
        let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Schemas/tflite/metadata_schema.fbs")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: flatc)
        p.arguments = ["--json", "--strict-json", "--defaults-json", "-o", dir.path, schema.standardizedFileURL.path, "--", bin.path]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("m.json"))) as? [String: Any]
        let root = try XCTUnwrap(json)
        XCTAssertEqual(root["name"] as? String, "Tiny classifier")
        XCTAssertEqual(root["description"] as? String, "A test classifier.")
        XCTAssertEqual(root["version"] as? String, "3")
        XCTAssertEqual(root["author"] as? String, "Shrinkwrap tests")
        XCTAssertEqual(root["license"] as? String, "MIT")
        XCTAssertEqual(root["min_parser_version"] as? String, "1.2.1")
        let sg = try XCTUnwrap((root["subgraph_metadata"] as? [[String: Any]])?.first)
        let input = try XCTUnwrap((sg["input_tensor_metadata"] as? [[String: Any]])?.first)
        XCTAssertEqual(input["name"] as? String, "image")
        let content = try XCTUnwrap(input["content"] as? [String: Any])
        XCTAssertEqual(content["content_properties_type"] as? String, "ImageProperties")
        XCTAssertEqual((content["content_properties"] as? [String: Any])?["color_space"] as? String, "RGB")
        let units = try XCTUnwrap(input["process_units"] as? [[String: Any]])
        XCTAssertEqual(units.map { $0["options_type"] as? String }, ["NormalizationOptions", "RegexTokenizerOptions"])
        let norm = try XCTUnwrap(units[0]["options"] as? [String: Any])
        XCTAssertEqual((norm["mean"] as? [Double])?.map { Float($0) }, [127.5, 120, 110])
        XCTAssertEqual((norm["std"] as? [Double])?.map { Float($0) }, [127.5, 64, 1.5])
        let stats = try XCTUnwrap(input["stats"] as? [String: Any])
        XCTAssertEqual((stats["min"] as? [Double])?.first ?? 0, -1, accuracy: 1e-6)
        XCTAssertEqual((stats["max"] as? [Double])?.first ?? 0, 1, accuracy: 1e-6)
        let regex = try XCTUnwrap(units[1]["options"] as? [String: Any])
        XCTAssertEqual(regex["delim_regex_pattern"] as? String, "[^\\w\\']+")
        XCTAssertEqual((regex["vocab_file"] as? [[String: Any]])?.first?["type"] as? String, "VOCABULARY")
        let output = try XCTUnwrap((sg["output_tensor_metadata"] as? [[String: Any]])?.first)
        let file = try XCTUnwrap((output["associated_files"] as? [[String: Any]])?.first)
        XCTAssertEqual(file["name"] as? String, "labels.txt")
        XCTAssertEqual(file["type"] as? String, "TENSOR_AXIS_LABELS")
    }

    /// The appended ZIP: stored members, offsets from the model's first byte, readable by ZipArchive from the whole file.
    func testAppendedZipCountsOffsetsFromTheModelStart() throws {
        let io = graphIO
        let encoded = try TFLiteMetadata.encode(sampleMetadata(), inputs: io.inputs, outputs: io.outputs)
        let bytes = try model(encoded).bytes()
        let archive = try ZipArchive(bytes: bytes, file: "m.tflite")
        XCTAssertEqual(archive.offsetBase, 0)
        XCTAssertEqual(archive.entries.map(\.name), ["vocab.txt", "labels.txt"])
        XCTAssertEqual(archive.entries.map(\.method), [0, 0])
        XCTAssertEqual(try archive.contents(ofMember: "labels.txt"), Array("zero\none\n\nthree ünïcode\n".utf8))
    }

    /// tflite-support's own reader (MetadataDisplayer) accepts what the exporter would write: the M001 buffer,
    /// the files it records match the packed ZIP, and the labels come back. Needs `make venv-tf`.
    func testTFLiteSupportReadsOurMetadata() throws {
        // Not standardized: that would resolve the venv's python symlink, and Python finds its venv from the unresolved path.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let python = root.appendingPathComponent(".venv-tf/bin/python")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-meta-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let io = graphIO
        let encoded = try TFLiteMetadata.encode(sampleMetadata(), inputs: io.inputs, outputs: io.outputs)
        try Data(try model(encoded).bytes()).write(to: dir.appendingPathComponent("m.tflite"))
        let script = """
            import json, sys
            try:
                from tensorflow_lite_support.metadata.python import metadata
            except ImportError:
                sys.exit(3)
            d = metadata.MetadataDisplayer.with_model_file("m.tflite")
            out = {"json": json.loads(d.get_metadata_json()), "packed": sorted(d.get_packed_associated_file_list()),
                   "labels": d.get_associated_file_buffer("labels.txt").decode()}
            json.dump(out, open("out.json", "w"))
            """
        try Data(script.utf8).write(to: dir.appendingPathComponent("check.py"))
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            let message = "SKIPPED: \(python.path) is missing; `make venv-tf` installs tflite-support to cross-check the metadata we write"
            FileHandle.standardError.write(Data((message + "\n").utf8))
            throw XCTSkip(message)
        }
        let p = Process()
        p.executableURL = python
        p.arguments = ["check.py"]
        p.currentDirectoryURL = dir
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        if p.terminationStatus == 3 {
            let message = "SKIPPED: tflite-support is not installed in \(python.path); `make venv-tf` installs it"
            FileHandle.standardError.write(Data((message + "\n").utf8))
            throw XCTSkip(message)
        }
        XCTAssertEqual(p.terminationStatus, 0)
        let out = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("out.json"))) as? [String: Any])
        XCTAssertEqual(out["packed"] as? [String], ["labels.txt", "vocab.txt"])
        XCTAssertEqual(out["labels"] as? String, "zero\none\n\nthree ünïcode\n")
        let json = try XCTUnwrap(out["json"] as? [String: Any])
        XCTAssertEqual(json["name"] as? String, "Tiny classifier")
        XCTAssertEqual(json["min_parser_version"] as? String, "1.2.1")
    }

    // MARK: - Labels text

    func testLabelFileText() {
        XCTAssertEqual(TFLiteMetadata.labels(fromText: Array("a\nb\n".utf8)), ["a", "b"])
        XCTAssertEqual(TFLiteMetadata.labels(fromText: Array("a\r\nb\r\n\r\n  \n".utf8)), ["a", "b"])
        XCTAssertEqual(TFLiteMetadata.labels(fromText: Array("a\n\nc".utf8)), ["a", "", "c"], "inner blank lines keep their index")
        XCTAssertEqual(TFLiteMetadata.labels(fromText: Array(" spaced \n".utf8)), [" spaced "])
        XCTAssertEqual(TFLiteMetadata.labels(fromText: []), [])
        XCTAssertNil(TFLiteMetadata.labels(fromText: [0x61, 0xFF, 0x0A]))
    }

    // MARK: - Damaged metadata

    func importError(_ bytes: [UInt8], file: String = "m.tflite") -> String {
        errorText { _ = try TFLiteImporter.importModel(bytes: bytes, file: file) }
    }

    func testDamagedMetadataGivesOneLineErrors() throws {
        let io = graphIO
        let encoded = try TFLiteMetadata.encode(sampleMetadata(), inputs: io.inputs, outputs: io.outputs)

        // Truncated buffer.
        var m = model(encoded)
        m.metadata[1].data = Array(encoded.metadataBuffer.prefix(40))
        var text = importError(try m.bytes())
        XCTAssertTrue(text.hasPrefix("m.tflite: metadata: "), text)
        XCTAssertTrue(text.contains("malformed"), text)

        // Too short for a FlatBuffer.
        m.metadata[1].data = [1, 2, 3]
        text = importError(try m.bytes())
        XCTAssertEqual(text, "m.tflite: metadata: buffer 2: malformed: 3 bytes is too short for a metadata FlatBuffer")

        // Wrong identifier.
        var wrong = encoded.metadataBuffer
        wrong.replaceSubrange(4..<8, with: Array("TFL3".utf8))
        m.metadata[1].data = wrong
        text = importError(try m.bytes())
        XCTAssertEqual(text, "m.tflite: metadata: buffer 2: malformed: file identifier is 'TFL3', not 'M001' (not TFLite model metadata)")

        // No appended ZIP at all.
        m = model(encoded)
        m.trailer = nil
        text = importError(try m.bytes())
        XCTAssertTrue(text.hasPrefix("m.tflite: metadata: subgraph_metadata[0].output_tensor_metadata[0].associated_files[0] 'labels.txt': malformed: "), text)
        XCTAssertTrue(text.contains("no ZIP archive of associated files"), text)

        // The ZIP lacks the labels file.
        m = model(encoded)
        m.trailer = { try ZipWriter.stored([("vocab.txt", Array("a 0\n".utf8))], offsetBase: $0) }
        text = importError(try m.bytes())
        XCTAssertTrue(text.contains("'labels.txt': malformed: in the appended ZIP archive: not in the archive (it has 'vocab.txt')"), text)

        // A damaged member: the CRC names it.
        m = model(encoded)
        var good = try m.bytes()
        let archive = try ZipArchive(bytes: good, file: "m.tflite")
        let labels = try XCTUnwrap(archive.entry(named: "labels.txt"))
        good[labels.localHeaderOffset + 30 + 10 + 1] ^= 0x20
        text = importError(good)
        XCTAssertTrue(text.contains("'labels.txt': malformed: in the appended ZIP archive: CRC-32 mismatch"), text)

        // A damaged central directory.
        good = try m.bytes()
        good[ZipArchive.u32(good, good.count - 22 + 16)] = 0  // the first central directory entry's signature
        text = importError(good)
        XCTAssertTrue(text.contains("the appended ZIP archive is damaged"), text)

        // Not UTF-8 labels.
        m = model(encoded)
        m.trailer = { try ZipWriter.stored([("vocab.txt", Array("a 0\n".utf8)), ("labels.txt", [0xFF, 0xFE])], offsetBase: $0) }
        text = importError(try m.bytes())
        XCTAssertTrue(text.contains("'labels.txt': malformed: the label file is not UTF-8 text"), text)

        // Metadata for a different number of inputs.
        var io2 = io
        io2.inputs.append(ValueInfo(name: "extra", dtype: .float32, shape: [.fixed(1)]))
        m = model(try TFLiteMetadata.encode(Metadata(), inputs: io2.inputs, outputs: io2.outputs))
        text = importError(try m.bytes())
        XCTAssertEqual(text, "m.tflite: metadata: subgraph_metadata[0].input_tensor_metadata: malformed: describes 2 inputs, but the model has 1")

        // Bad normalization values.
        var md = Metadata()
        md.inputNormalization = [InputNormalization(name: "image", mean: [0], std: [0])]
        m = model(try TFLiteMetadata.encode(md, inputs: io.inputs, outputs: io.outputs))
        text = importError(try m.bytes())
        XCTAssertTrue(text.contains("process_units[0].options: malformed: mean [0.0] / std [0.0] must be finite, and std not 0"), text)

        for t in [text] { XCTAssertFalse(t.contains("\n")) }
    }

    /// Every truncation of a model with metadata and a ZIP, and random damage to
    /// the metadata buffer and the archive, throws or imports; nothing crashes.
    func testTruncatedAndDamagedMetadataNeverCrashes() throws {
        let io = graphIO
        let encoded = try TFLiteMetadata.encode(sampleMetadata(), inputs: io.inputs, outputs: io.outputs)
        let bytes = try model(encoded).bytes()
        let flatbufferSize = try model(nil).bytes().count
        for n in stride(from: 0, to: bytes.count, by: 3) {
            let text = errorText { _ = try TFLiteImporter.importModel(bytes: Array(bytes[0..<n]), file: "t.tflite") }
            XCTAssertTrue(text.hasPrefix("t.tflite"), "cut at \(n): \(text)")
        }
        // Damage only the metadata buffer (found by its identifier) and the ZIP after the model.
        let metaStart = try XCTUnwrap((0..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == Array("M001".utf8) }) - 4
        let regions = [metaStart..<(metaStart + encoded.metadataBuffer.count), (bytes.count - (try encoded.appendedZip(modelSize: 0).count))..<bytes.count]
        XCTAssertGreaterThan(bytes.count, flatbufferSize)
        var rng = SplitMix(seed: 7)
        var imported = 0
        for round in 0..<4000 {
            var d = bytes
            let r = regions[round % 2]
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                d[r.lowerBound + Int(rng.next() % UInt64(r.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            do { _ = try TFLiteImporter.importModel(bytes: d, file: "d.tflite"); imported += 1 } catch {
                let text = "\(error)"
                XCTAssertTrue(text.hasPrefix("d.tflite") && !text.contains("\n"), text)
            }
        }
        XCTAssertLessThan(imported, 4000)
    }

    // MARK: - Real files (tflite-support's writers)

    func testImageClassifierWrittenByTFLiteSupport() throws {
        try requireMetadataFixtures()
        let url = metadataFixtures.appendingPathComponent("image_classifier.tflite")
        let g = try TFLiteImporter.importModel(at: url)
        XCTAssertEqual(g.metadata.property("name"), "Shrinkwrap fixture image classifier")
        XCTAssertEqual(g.metadata.docString, "A seeded 10-class CNN on 32x32 RGB images (CIFAR-10 class names).")
        XCTAssertEqual(g.metadata.author, "Shrinkwrap fixtures")
        XCTAssertEqual(g.metadata.license, "Apache License. Version 2.0")
        XCTAssertEqual(g.metadata.property("version"), "v2")
        XCTAssertEqual(g.metadata.labels, ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"],
                       "the first (English) TENSOR_AXIS_LABELS file")
        let n = try XCTUnwrap(g.metadata.normalization(of: g.runtimeInputs[0].name))
        XCTAssertEqual(n.mean, [123.675, 116.28, 103.53])
        XCTAssertEqual(n.std, [58.395, 57.12, 57.375])
        XCTAssertEqual(g.runtimeInputs[0].docString, "Input image to be classified.")
        XCTAssertEqual(g.outputs[0].docString, "Probabilities of the 10 labels respectively.")
        // Our encoder writes the same facts back (what tflite-support wrote, minus its output stats / FeatureProperties).
        let encoded = try TFLiteMetadata.encode(g.metadata, inputs: g.runtimeInputs, outputs: g.outputs)
        let back = try TFLiteImporter.importModel(bytes: try model(encoded, inputShape: [1, 32, 32, 3]).bytes(), file: "back.tflite")
        XCTAssertEqual(back.metadata.labels, g.metadata.labels)
        XCTAssertEqual(back.metadata.inputNormalization.map(\.mean), g.metadata.inputNormalization.map(\.mean))
        XCTAssertEqual(back.metadata.property("version"), "v2")
    }

    func testTextClassifierVocabularyWrittenByTFLiteSupport() throws {
        try requireMetadataFixtures()
        let g = try TFLiteImporter.importModel(at: metadataFixtures.appendingPathComponent("text_classifier.tflite"))
        XCTAssertEqual(g.metadata.labels, ["negative", "positive"])
        XCTAssertEqual(g.metadata.property(TFLiteMetadata.vocabularyFileKey), "vocab.txt")
        XCTAssertEqual(g.metadata.property(TFLiteMetadata.tokenizerRegexKey), TFLiteMetadata.modelMakerRegex)
        let vocab = String(decoding: try XCTUnwrap(g.metadata.formatData(TFLiteMetadata.vocabularyKey)), as: UTF8.self)
        XCTAssertTrue(vocab.hasPrefix("<PAD> 0\n<START> 1\n<UNKNOWN> 2\n"), vocab)
        XCTAssertTrue(g.metadata.inputNormalization.isEmpty)
    }
}
