import FlatBuffers
import Foundation
import Shrinkwrap
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import ShrinkwrapTFLite
import XCTest
import ZipArchive


/// The tflite-support fixtures and the ML Kit bundle (`make testdata`: Scripts/make_tflite_metadata_fixtures.py).
private let metadataFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../.testdata/tflite-metadata").standardizedFileURL

private func requireMetadataFixtures() throws {
    guard FileManager.default.fileExists(atPath: metadataFixtures.appendingPathComponent("fixtures.json").path) else {
        let message = "SKIPPED: no tflite-support metadata fixtures in \(metadataFixtures.path); run `make testdata` (needs .venv-tf with tflite-support)"
        FileHandle.standardError.write(Data((message + "\n").utf8))
        throw XCTSkip(message)
    }
}

/// A .tflite of x [1, n] → RELU → y [1, n] (field ids: Schemas/tflite/tflite.fbs), optionally with metadata.
private func reluModel(classes n: Int32, metadata: Metadata? = nil) throws -> [UInt8] {
    let encoded = try metadata.map {
        try TFLiteMetadata.encode($0, inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(Int(n))])],
                                  outputs: [ValueInfo(name: "y", dtype: .float32, shape: [.fixed(1), .fixed(Int(n))])])
    }
    let b = FlatBufferBuilder()
    var buffers = [b.table { _ in }]
    var metaEntry: FlatBufferOffset?
    if let encoded {
        let data = b.createVector(bytes: encoded.metadataBuffer, alignment: 16)
        buffers.append(b.table { $0.add(0, data) })
        let name = b.createString(TFLiteMetadata.bufferName)
        metaEntry = b.table { t in t.add(0, name); t.add(1, UInt32(1), default: 0) }
    }
    let bufferVector = b.createVector(offsets: buffers)
    let tensors = ["x", "y"].map { name -> FlatBufferOffset in
        let s = b.createVector([Int32(1), n]), nm = b.createString(name)
        return b.table { t in t.add(0, s); t.add(3, nm) }
    }
    let ins = b.createVector([Int32(0)]), outs = b.createVector([Int32(1)])
    let op = b.table { t in t.add(1, ins); t.add(2, outs) }
    let tv = b.createVector(offsets: tensors), ov = b.createVector(offsets: [op])
    let sgIn = b.createVector([Int32(0)]), sgOut = b.createVector([Int32(1)])
    let sg = b.table { t in t.add(0, tv); t.add(1, sgIn); t.add(2, sgOut); t.add(3, ov) }
    let code = b.table { t in t.add(0, Int8(19), default: 0); t.add(3, Int32(19), default: 0) }  // RELU
    let codes = b.createVector(offsets: [code]), sgs = b.createVector(offsets: [sg])
    let meta = metaEntry.map { b.createVector(offsets: [$0]) }
    let model = b.table { t in t.add(0, UInt32(3), default: 0); t.add(1, codes); t.add(2, sgs); t.add(4, bufferVector); t.add(6, meta) }
    let flatbuffer = try b.finish(root: model, fileIdentifier: "TFL3")
    return flatbuffer + (try encoded?.appendedZip(modelSize: flatbuffer.count) ?? [])
}

private func makeTempDir() throws -> URL { try ShrinkwrapTestSupport.makeTempDir("bundle") }

private func write(_ text: String, _ url: URL) throws { try Data(text.utf8).write(to: url) }

/// Image normalization, vocabulary and labels from TFLite metadata as the data loaders use them.
final class TFLiteMetadataDataTests: XCTestCase {
    func imageGraph(normalization: InputNormalization?, dtype: DType = .float32) -> Graph {
        var g = Graph(inputs: [ValueInfo(name: "image", dtype: dtype, shape: [.fixed(1), .fixed(2), .fixed(2), .fixed(3)])],
                      outputs: [ValueInfo(name: "image", dtype: dtype, shape: nil)])
        if let normalization { g.metadata.inputNormalization = [normalization] }
        return g
    }

    /// A 2×2 RGB PNG with pixels 0, 10, …, 110.
    func writePNG(_ dir: URL) throws -> String {
        let pixels: [UInt8] = (0..<12).map { UInt8($0 * 10) }
        let png = TestPNG.make(width: 2, height: 2, depth: 8, color: 2, rows: [Array(pixels[0..<6]), Array(pixels[6..<12])])
        let path = dir.appendingPathComponent("img.png").path
        try Data(png).write(to: URL(fileURLWithPath: path))
        return path
    }

    func testImagesUseTheMetadataNormalizationByDefault() throws {
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = try writePNG(dir)
        let n = InputNormalization(name: "image", mean: [10, 20, 30], std: [2, 4, 5])
        let g = imageGraph(normalization: n)
        let set = try InputData.load([png], graph: g)
        let got = try XCTUnwrap(set.samples[0]["image"]?.floats)
        let want: [Float] = (0..<12).map { k in (Float(k * 10) - n.mean[k % 3]) / n.std[k % 3] }
        XCTAssertEqual(got, want)
        XCTAssertTrue(set.description.contains("normalization from the model's metadata: image: mean [10.0, 20.0, 30.0], std [2.0, 4.0, 5.0]"),
                      set.description)

        // Any of --scale / --mean / --std replaces it whole.
        var options = DataOptions()
        options.image.scale = 1.0 / 255
        let scaled = try XCTUnwrap(try InputData.load([png], graph: g, options: options).samples[0]["image"]?.floats)
        XCTAssertEqual(scaled, (0..<12).map { Float($0 * 10) * (1.0 / 255) })
        options = DataOptions()
        options.image.mean = [1]
        XCTAssertEqual(try XCTUnwrap(try InputData.load([png], graph: g, options: options).samples[0]["image"]?.floats),
                       (0..<12).map { Float($0 * 10) - 1 })

        // Without metadata: raw pixels.
        XCTAssertEqual(try XCTUnwrap(try InputData.load([png], graph: imageGraph(normalization: nil)).samples[0]["image"]?.floats),
                       (0..<12).map { Float($0 * 10) })
        // A uint8 input takes raw pixels whatever the metadata says.
        XCTAssertEqual(try InputData.load([png], graph: imageGraph(normalization: n, dtype: .uint8)).samples[0]["image"]?.ints,
                       (0..<12).map { Int64($0 * 10) })
        // A normalization with the wrong channel count names the metadata, not a flag.
        let bad = imageGraph(normalization: InputNormalization(name: "image", mean: [1, 2], std: [1]))
        XCTAssertEqual(errorText { _ = try InputData.load([png], graph: bad) },
                       "the model's metadata normalization (mean) has 2 values but input 'image' has 3 channels")
    }

    /// End to end against tf.lite.Interpreter: the PNG through the metadata's normalization gives TFLite's output.
    func testImageClassifierFixtureMatchesTheInterpreter() throws {
        try requireMetadataFixtures()
        let g = try Models.load(metadataFixtures.appendingPathComponent("image_classifier.tflite").path)
        let set = try InputData.load([metadataFixtures.appendingPathComponent("image_classifier.png").path], graph: g)
        let out = try Interpreter(graph: g).run(set.samples[0])
        let got = try XCTUnwrap(out[g.outputs[0].name]?.floats)
        let want = try XCTUnwrap(try NPY.read(metadataFixtures.appendingPathComponent("image_classifier.output_0.npy")).floats)
        XCTAssertEqual(got.count, want.count)
        for (a, b) in zip(got, want) { XCTAssertEqual(a, b, accuracy: 1e-5) }
        let info = Inspection(graph: g, file: "image_classifier.tflite")
        XCTAssertTrue(info.text.contains("(normalized: (x − [123.675, 116.28, 103.53]) / [58.395, 57.12, 57.375])"), info.text)
        XCTAssertTrue(info.text.contains("labels:    10 (airplane, automobile, bird, cat, deer, …)"), info.text)
        XCTAssertTrue(info.text.contains("name: Shrinkwrap fixture image classifier"), info.text)
        XCTAssertTrue(info.json.contains("\"normalization\" : \"(x − [123.675, 116.28, 103.53]) \\/ [58.395, 57.12, 57.375]\""), info.json)
    }

    func testTextUsesTheMetadataVocabulary() throws {
        try requireMetadataFixtures()
        let g = try Models.load(metadataFixtures.appendingPathComponent("text_classifier.tflite").path)
        let sentence = try String(contentsOf: metadataFixtures.appendingPathComponent("text_classifier.sentence.txt"), encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        let inputs = try ModelRunner.textInput(sentence, graph: g, options: DataOptions())
        let out = try Interpreter(graph: g).run(inputs)
        let got = try XCTUnwrap(out[g.outputs[0].name]?.floats)
        let want = try XCTUnwrap(try NPY.read(metadataFixtures.appendingPathComponent("text_classifier.output_0.npy")).floats)
        for (a, b) in zip(got, want) { XCTAssertEqual(a, b, accuracy: 1e-5) }
        // Text files too, and the description says where the vocabulary came from.
        let set = try InputData.load([metadataFixtures.appendingPathComponent("text_classifier.sentence.txt").path], graph: g,
                                     options: .forLoadedModels)
        XCTAssertEqual(set.samples.count, 1)
        XCTAssertTrue(set.description.contains("vocabulary: vocab.txt in the model's metadata"), set.description)
    }

    func testVocabularyFromMetadataRules() throws {
        var g = Graph()
        XCTAssertNil(try Vocabulary.fromMetadata(g))
        g.metadata.formatData = [(TFLiteMetadata.vocabularyKey, Array("<PAD> 0\nhello 1\n".utf8))]
        XCTAssertEqual(try Vocabulary.fromMetadata(g)?.ids, ["<PAD>": 0, "hello": 1])
        g.metadata.properties = [(TFLiteMetadata.tokenizerRegexKey, "\\s+")]
        XCTAssertNil(try Vocabulary.fromMetadata(g), "another tokenizer pattern: not split the way Vocabulary.words splits")
        g.metadata.properties = []
        g.metadata.formatData = [(TFLiteMetadata.vocabularyKey, [0xFF])]
        XCTAssertTrue(errorText { _ = try Vocabulary.fromMetadata(g) }.contains("not UTF-8"))
    }

    // MARK: - Bundles

    func testBundleFixtureAsFolderAndAsManifest() throws {
        try requireMetadataFixtures()
        let folder = metadataFixtures.appendingPathComponent("bundle")
        let labels = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
        for path in [folder.path, folder.appendingPathComponent("manifest.json").path] {
            let g = try Models.load(path)
            XCTAssertEqual(g.metadata.labels, labels, path)
            XCTAssertEqual(g.metadata.property("mlkit.modelType"), "IMAGE_LABELING")
            XCTAssertEqual(g.sourceFormat, "tflite")
        }
    }

    func testBundles() throws {
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let model = try reluModel(classes: 3)
        try Data(model).write(to: dir.appendingPathComponent("model.tflite"))
        try write("a\r\nb\r\nc\r\n\r\n", dir.appendingPathComponent("dict.txt"))
        let manifest = dir.appendingPathComponent("manifest.json")
        try write(#"{"modelFile": "model.tflite", "labelsFile": "dict.txt", "modelType": "IMAGE_LABELING", "extra": 1}"#, manifest)
        XCTAssertEqual(try Models.load(dir.path).metadata.labels, ["a", "b", "c"])
        XCTAssertEqual(try Models.load(manifest.path).metadata.labels, ["a", "b", "c"])

        func loadError(_ json: String) throws -> String {
            try write(json, manifest)
            return errorText { _ = try Models.load(manifest.path) }
        }
        let m = manifest.path
        XCTAssertEqual(try loadError(#"{"labelsFile": "dict.txt"}"#),
                       "\(m): malformed: missing key \"modelFile\" (an ML Kit / AutoML manifest names its model as \"modelFile\")")
        XCTAssertEqual(try loadError(#"{"modelFile": 3}"#), "\(m): \"modelFile\": malformed: must be a non-empty string")
        XCTAssertEqual(try loadError(#"["model.tflite"]"#),
                       "\(m): malformed: not a JSON object (an ML Kit manifest is {\"modelFile\": …, \"labelsFile\": …})")
        XCTAssertTrue(try loadError("{nope").hasPrefix("\(m): malformed: not JSON"))
        XCTAssertEqual(try loadError(#"{"modelFile": "missing.tflite", "labelsFile": "dict.txt"}"#),
                       "\(m): \"modelFile\": bad external data: 'missing.tflite' is not a file in \(dir.path)")
        XCTAssertEqual(try loadError(#"{"modelFile": "../model.tflite", "labelsFile": "dict.txt"}"#),
                       "\(m): \"modelFile\": bad external data: path '../model.tflite' escapes the bundle's folder")
        XCTAssertEqual(try loadError(#"{"modelFile": "/etc/passwd.tflite"}"#),
                       "\(m): \"modelFile\": bad external data: path '/etc/passwd.tflite' escapes the bundle's folder")
        XCTAssertEqual(try loadError(#"{"modelFile": "model.tflite", "labelsFile": "nope.txt"}"#),
                       "\(m): \"labelsFile\": bad external data: 'nope.txt' is not a file in \(dir.path)")
        XCTAssertEqual(try loadError(#"{"modelFile": "dict.txt"}"#),
                       "\(m): \"modelFile\": malformed: 'dict.txt' is not a model file Shrinkwrap reads (.onnx, .mlmodel, .tflite)")
        XCTAssertEqual(try loadError(#"{"modelFile": "model.tflite"}"#),
                       "\(m): malformed: no \"labelsFile\", and the model's metadata has no labels either (an ML Kit image labeling bundle needs them)")
        // A symlink out of the folder.
        let outside = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: outside) }
        try Data(model).write(to: outside.appendingPathComponent("real.tflite"))
        try FileManager.default.createSymbolicLink(at: dir.appendingPathComponent("link.tflite"), withDestinationURL: outside.appendingPathComponent("real.tflite"))
        XCTAssertEqual(try loadError(#"{"modelFile": "link.tflite", "labelsFile": "dict.txt"}"#),
                       "\(m): \"modelFile\": bad external data: path 'link.tflite' escapes the bundle's folder")
        try FileManager.default.removeItem(at: dir.appendingPathComponent("link.tflite"))

        // Label count against the output's classes.
        try write("a\nb\n", dir.appendingPathComponent("two.txt"))
        XCTAssertEqual(try loadError(#"{"modelFile": "model.tflite", "labelsFile": "two.txt"}"#),
                       "\(dir.path)/two.txt: malformed: 2 labels, but the model's output 'y' [1, 3] has 3 classes")
        try write("\n\n", dir.appendingPathComponent("blank.txt"))
        XCTAssertEqual(try loadError(#"{"modelFile": "model.tflite", "labelsFile": "blank.txt"}"#),
                       "\(dir.path)/blank.txt: malformed: the labels file has no labels")
        // Errors inside the model name the model file.
        try Data([1, 2, 3, 4, 5, 6, 7, 8, 9]).write(to: dir.appendingPathComponent("bad.tflite"))
        XCTAssertTrue(try loadError(#"{"modelFile": "bad.tflite", "labelsFile": "dict.txt"}"#).hasPrefix("\(dir.path)/bad.tflite: "))

        // Labels from the model's metadata make labelsFile optional; a labels file replaces them.
        var md = Metadata()
        md.labels = ["x", "y", "z"]
        try Data(try reluModel(classes: 3, metadata: md)).write(to: dir.appendingPathComponent("meta.tflite"))
        XCTAssertEqual(try { try write(#"{"modelFile": "meta.tflite"}"#, manifest); return try Models.load(m).metadata.labels }(), ["x", "y", "z"])
        XCTAssertEqual(try { try write(#"{"modelFile": "meta.tflite", "labelsFile": "dict.txt"}"#, manifest); return try Models.load(m).metadata.labels }(),
                       ["a", "b", "c"])
    }

    func testFolderWithoutManifest() throws {
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        XCTAssertEqual(errorText { _ = try Models.load(dir.path) },
                       "\(dir.path): cannot read: is a folder without manifest.json, and not a bundle of exactly one model file and one dict.txt or labels.txt (found no model file, no dict.txt / labels.txt)")
        try Data(try reluModel(classes: 2)).write(to: dir.appendingPathComponent("m.tflite"))
        try write("yes\nno\n", dir.appendingPathComponent("labels.txt"))
        let g = try Models.load(dir.path)
        XCTAssertEqual(g.metadata.labels, ["yes", "no"])
        XCTAssertNil(g.metadata.property("mlkit.modelType"))
        try write("si\nno\n", dir.appendingPathComponent("dict.txt"))
        XCTAssertTrue(errorText { _ = try Models.load(dir.path) }.contains("(found model files m.tflite, dict.txt and labels.txt)"))
        XCTAssertTrue(errorText { _ = try Models.load(dir.appendingPathComponent("other.json").path) }.hasSuffix("cannot read: no such file"))
        XCTAssertTrue(errorText { _ = try Models.load(dir.appendingPathComponent("model.pt").path) }.contains("unknown model format"))
    }

    /// A package goes to the ML Program importer, whose error names the package's manifest.
    func testMLProgramPackageIsNamed() throws {
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let package = dir.appendingPathComponent("m.mlpackage")
        try FileManager.default.createDirectory(at: package.appendingPathComponent("Data/com.apple.CoreML"), withIntermediateDirectories: true)
        try write("{}", package.appendingPathComponent("Manifest.json"))
        let text = errorText { _ = try Models.load(package.path) }
        XCTAssertTrue(text.hasPrefix(package.path), text)
        XCTAssertTrue(text.contains("Manifest.json: \"rootModelIdentifier\": malformed: missing or not a string"), text)
    }
}
