import Foundation
@testable import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

/// JPEGs made by Scripts/make_image_fixtures.py, each with the pixels Pillow decodes.
private let imageFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/Images")

final class ImageDecodingTests: XCTestCase {
    func decode(_ bytes: [UInt8]) throws -> Image8 { try ImageData.decode(bytes, file: "t.png") }

    func testEveryPNGColourTypeAndDepth() throws {
        // 8-bit gray, 3×2.
        var img = try decode(TestPNG.make(width: 3, height: 2, depth: 8, color: 0, rows: [[0, 128, 255], [1, 2, 3]]))
        XCTAssertEqual([img.width, img.height, img.channels], [3, 2, 1])
        XCTAssertEqual(img.pixels, [0, 128, 255, 1, 2, 3])
        // 1-bit gray scales 0/1 to 0/255; 2-bit to multiples of 85; 4-bit of 17.
        img = try decode(TestPNG.make(width: 5, height: 1, depth: 1, color: 0, rows: [[0b1010_1000]]))
        XCTAssertEqual(img.pixels, [255, 0, 255, 0, 255])
        img = try decode(TestPNG.make(width: 4, height: 1, depth: 2, color: 0, rows: [[0b00_01_10_11]]))
        XCTAssertEqual(img.pixels, [0, 85, 170, 255])
        img = try decode(TestPNG.make(width: 2, height: 1, depth: 4, color: 0, rows: [[0x3F]]))
        XCTAssertEqual(img.pixels, [51, 255])
        // 16-bit gray keeps the high byte.
        img = try decode(TestPNG.make(width: 2, height: 1, depth: 16, color: 0, rows: [[0x12, 0xFF, 0xAB, 0x01]]))
        XCTAssertEqual(img.pixels, [0x12, 0xAB])
        // RGB 8 and 16.
        img = try decode(TestPNG.make(width: 2, height: 1, depth: 8, color: 2, rows: [[1, 2, 3, 4, 5, 6]]))
        XCTAssertEqual(img.channels, 3)
        XCTAssertEqual(img.pixels, [1, 2, 3, 4, 5, 6])
        img = try decode(TestPNG.make(width: 1, height: 1, depth: 16, color: 2, rows: [[9, 0, 8, 0, 7, 0xFF]]))
        XCTAssertEqual(img.pixels, [9, 8, 7])
        // Gray + alpha and RGBA: alpha dropped, not composited.
        img = try decode(TestPNG.make(width: 2, height: 1, depth: 8, color: 4, rows: [[100, 0, 200, 255]]))
        XCTAssertEqual(img.channels, 1)
        XCTAssertEqual(img.pixels, [100, 200])
        img = try decode(TestPNG.make(width: 1, height: 2, depth: 8, color: 6, rows: [[10, 20, 30, 0], [40, 50, 60, 128]]))
        XCTAssertEqual(img.pixels, [10, 20, 30, 40, 50, 60])
        // Palette (2-bit indices) with tRNS: expanded to RGB, transparency dropped.
        let plte = TestPNG.chunk("PLTE", [255, 0, 0, 0, 255, 0, 0, 0, 255])
        let trns = TestPNG.chunk("tRNS", [0, 128])
        img = try decode(TestPNG.make(width: 3, height: 1, depth: 2, color: 3, rows: [[0b10_01_00_00]], extra: [plte, trns]))
        XCTAssertEqual(img.channels, 3)
        XCTAssertEqual(img.pixels, [0, 0, 255, 0, 255, 0, 255, 0, 0])
    }

    func testInterlacedPNG() throws {
        let w = 11, h = 9
        let pixels = (0..<(w * h * 3)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let png = TestPNG.make(width: w, height: h, depth: 8, color: 2, rows: TestPNG.adam7Rows(pixels, width: w, height: h, c: 3), interlaced: true)
        let img = try decode(png)
        XCTAssertEqual([img.width, img.height, img.channels], [w, h, 3])
        XCTAssertEqual(img.pixels, pixels)
    }

    func testJPEGsDecodeToPillowsPixels() throws {
        for name in ["rgb16x12", "gray9x7", "progressive16x12", "subsampled13x11"] {
            let jpeg = try Data(contentsOf: imageFixtures.appendingPathComponent(name + ".jpg"))
            let want = try NPY.read(imageFixtures.appendingPathComponent(name + ".pixels.npy"))
            let img = try ImageData.decode(Array(jpeg), file: name)
            XCTAssertEqual([img.height, img.width, img.channels], want.shape, name)
            XCTAssertEqual(img.pixels.map { Int64($0) }, want.ints, name)
        }
    }

    func testCorruptImagesAreErrorsNotCrashes() throws {
        let png = TestPNG.make(width: 7, height: 5, depth: 8, color: 2, rows: (0..<5).map { r in (0..<21).map { UInt8($0 * 9 + r) } })
        let jpeg = Array(try Data(contentsOf: imageFixtures.appendingPathComponent("rgb16x12.jpg")))
        // Every truncation is an error naming the file.
        for (name, bytes) in [("t.png", png), ("t.jpg", jpeg)] {
            for n in 0..<bytes.count {
                let text = errorText { _ = try ImageData.decode(Array(bytes[0..<n]), file: name) }
                XCTAssertTrue(text.hasPrefix("\(name): "), "\(name) cut at \(n): \(text)")
            }
        }
        // Random damage: decodes or throws, never crashes.
        var rng = SplitMix(seed: 0x5EED)
        func next() -> UInt64 { rng.next() }
        for bytes in [png, jpeg] {
            for _ in 0..<400 {
                var damaged = bytes
                for _ in 0..<(1 + Int(next() % 4)) {
                    let i = Int(next() % UInt64(damaged.count - 2)) + 2
                    damaged[i] = UInt8(truncatingIfNeeded: next())
                }
                _ = try? ImageData.decode(damaged, file: "d")
            }
        }
        // Specific damage, each with its message.
        var badCRC = png
        badCRC[20] ^= 0xFF  // inside IHDR: the chunk's CRC no longer matches
        XCTAssertTrue(errorText { _ = try self.decode(badCRC) }.contains("PNG decoding failed"), errorText { _ = try self.decode(badCRC) })
        let huge = TestPNG.make(width: 1 << 19, height: 1 << 19, depth: 8, color: 0, rows: [[0]])
        XCTAssertTrue(errorText { _ = try self.decode(huge) }.contains("pixel limit"), errorText { _ = try self.decode(huge) })
        XCTAssertTrue(errorText { _ = try ImageData.decode(Array("GIF89a".utf8), file: "x.gif") }.contains("not a PNG or JPEG"))
        XCTAssertTrue(errorText { _ = try ImageData.decode([0xFF, 0xD8, 0xFF, 0xD9], file: "e.jpg") }.hasPrefix("e.jpg: JPEG decoding failed"))
    }
}

final class ImagePreprocessingTests: XCTestCase {
    func testSizeAndNumberParsing() {
        XCTAssertEqual(ImagePreprocessing.Size.parse("256"), .side(256))
        XCTAssertEqual(ImagePreprocessing.Size.parse("224x192"), .exact(width: 224, height: 192))
        XCTAssertEqual(ImagePreprocessing.Size.parse("32×16"), .exact(width: 32, height: 16))
        for bad in ["", "0", "-3", "2x", "x2", "1x2x3", "abc", "100000"] { XCTAssertNil(ImagePreprocessing.Size.parse(bad), bad) }
        XCTAssertEqual(ImagePreprocessing.parseNumber("1/255"), Float(1.0 / 255.0))
        XCTAssertEqual(ImagePreprocessing.parseNumber(" -0.5 "), -0.5)
        for bad in ["1/0", "a", "", "nan", "inf", "1/x"] { XCTAssertNil(ImagePreprocessing.parseNumber(bad), bad) }
        XCTAssertEqual(ImagePreprocessing.parseList("0.485,0.456,1/2"), [0.485, 0.456, 0.5])
        XCTAssertNil(ImagePreprocessing.parseList("1,,2"))
    }

    func testResizeAndCropGeometry() {
        let img = Image8(width: 640, height: 480, channels: 1, pixels: [UInt8](repeating: 7, count: 640 * 480))
        XCTAssertTrue(ImageData.target(of: .side(256), for: img) == (341, 256))
        let tall = Image8(width: 3, height: 10, channels: 1, pixels: [UInt8](repeating: 0, count: 30))
        XCTAssertTrue(ImageData.target(of: .side(2), for: tall) == (2, 6))
        // A constant image stays constant through any resampling.
        for (w, h) in [(100, 70), (641, 481), (17, 3), (1, 1)] {
            let r = ImageData.resized(img, width: w, height: h)
            XCTAssertEqual([r.width, r.height], [w, h])
            XCTAssertTrue(r.pixels.allSatisfy { $0 == 7 }, "\(w)x\(h)")
        }
        // Centre crop offsets round half to even: (5 - 2) / 2 = 1.5 → 2, (4 - 1) / 2 = 1.5 → 2, (6 - 3) / 2 = 1.5 → 2.
        let ramp = Image8(width: 5, height: 4, channels: 1, pixels: (0..<20).map { UInt8($0) })
        let c = ImageData.centerCropped(ramp, width: 2, height: 1)
        XCTAssertEqual(c.pixels, [12, 13])
        // Halving a ramp: PIL's weights at scale 2 are 3/7, 3/7, 1/7 around each centre.
        let row = Image8(width: 4, height: 1, channels: 1, pixels: [0, 100, 200, 50])
        XCTAssertEqual(ImageData.resized(row, width: 2, height: 1).pixels, [71, 121])
    }

    func testColourConversion() {
        let rgb = Image8(width: 2, height: 1, channels: 3, pixels: [255, 0, 0, 10, 200, 30])
        // (R·19595 + G·38470 + B·7471 + 32768) >> 16
        XCTAssertEqual(ImageData.converted(rgb, channels: 1).pixels, [76, 124])
        let gray = Image8(width: 1, height: 1, channels: 1, pixels: [9])
        XCTAssertEqual(ImageData.converted(gray, channels: 3).pixels, [9, 9, 9])
    }

    func testLayoutsDtypesAndNormalisation() throws {
        let img = Image8(width: 2, height: 1, channels: 3, pixels: [10, 20, 30, 40, 50, 60])
        func run(_ shape: [Int], _ dtype: DType = .float32, _ o: ImagePreprocessing = ImagePreprocessing(), graph: Graph? = nil) throws -> Tensor {
            let info = ValueInfo(name: "x", dtype: dtype, shape: shape.map { .fixed($0) })
            return try ImageData.tensor(from: img, file: "i.png", for: info, graph: graph ?? Graph(inputs: [info]), options: o)
        }
        XCTAssertEqual(try run([1, 3, 1, 2]).floats, [10, 40, 20, 50, 30, 60])
        // [1, 1, 2, 3] could be either layout (H = 1 looks like a channel axis): --layout decides.
        var nhwc = ImagePreprocessing()
        nhwc.layout = .nhwc
        XCTAssertEqual(try run([1, 1, 2, 3], .float32, nhwc).floats, [10, 20, 30, 40, 50, 60])
        XCTAssertTrue(errorText { _ = try run([1, 1, 2, 3]) }.contains("cannot tell"))
        XCTAssertEqual(try run([3, 1, 2]).shape, [3, 1, 2])
        XCTAssertEqual(try run([1, 1, 2, 3], .uint8, nhwc).ints, [10, 20, 30, 40, 50, 60])
        var o = nhwc
        o.color = .bgr
        o.scale = 0.5
        o.mean = [1, 2, 3]
        o.std = [2]
        // BGR: channel 0 is blue. (p · 0.5 − mean[c]) / 2
        let expected: [Float] = [7, 4, 1, 14.5, 11.5, 8.5]  // (15 − 1) / 2, (10 − 2) / 2, (5 − 3) / 2, (30 − 1) / 2, …
        XCTAssertEqual(try run([1, 1, 2, 3], .float32, o).floats, expected)
        o = ImagePreprocessing()
        o.color = .gray
        XCTAssertEqual(try run([1, 1, 1, 2], .float32, o).floats?.count, 2)
        // Errors.
        XCTAssertTrue(errorText { _ = try run([1, 3, 1, 2], .float32, o) }.contains("--color GRAY gives 1 channel"))
        XCTAssertTrue(errorText { _ = try run([1, 3, 3, 3]) }.contains("give --layout NCHW or --layout NHWC"))
        o = ImagePreprocessing()
        o.layout = .nhwc
        XCTAssertEqual(try run([1, 3, 3, 3], .float32, o).shape, [1, 3, 3, 3])
        XCTAssertTrue(errorText { _ = try run([2, 3, 1, 2]) }.contains("batch size 2"))
        XCTAssertTrue(errorText { _ = try run([1, 5, 1, 2]) }.contains("cannot tell"))
        XCTAssertTrue(errorText { _ = try run([1, 2]) }.contains("not an image input"))
        XCTAssertTrue(errorText { _ = try run([1, 3, 1, 2], .bool) }.contains("images feed float or uint8"))
        o = ImagePreprocessing()
        o.mean = [1, 2]
        XCTAssertTrue(errorText { _ = try run([1, 3, 1, 2], .float32, o) }.contains("--mean has 2 values"))
        o = ImagePreprocessing()
        o.scale = 2
        XCTAssertTrue(errorText { _ = try run([1, 3, 1, 2], .uint8, o) }.contains("need a float input"))
        // A declared image input: BGR by default, NCHW, and no scaling options.
        let info = ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3), .fixed(1), .fixed(2)])
        var g = Graph(inputs: [info])
        g.metadata.imageInputs = [ImageInput(name: "x", color: .bgr)]
        XCTAssertEqual(try run([1, 3, 1, 2], graph: g).floats, [30, 60, 20, 50, 10, 40])
        XCTAssertTrue(errorText { _ = try run([1, 3, 1, 2], .float32, o, graph: g) }.contains("scales its 0…255 pixels itself"))
    }

    func testFoldersOfImagesThroughInputData() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-images-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = TestPNG.make(width: 4, height: 4, depth: 8, color: 0, rows: (0..<4).map { r in (0..<4).map { UInt8(r * 4 + $0) } })
        try Data(png).write(to: dir.appendingPathComponent("b.png"))
        try FileManager.default.copyItem(at: imageFixtures.appendingPathComponent("gray9x7.jpg"), to: dir.appendingPathComponent("a.JPG"))
        try Data("labels, not data".utf8).write(to: dir.appendingPathComponent("labels.txt"))
        let info = ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(4), .fixed(4), .fixed(1)])
        let g = Graph(inputs: [info])
        var options = DataOptions()
        options.image.scale = 1.0 / 255
        let set = try InputData.load([dir.path], graph: g, options: options)
        XCTAssertEqual(set.sources.map { URL(fileURLWithPath: $0).lastPathComponent }, ["a.JPG", "b.png"])
        XCTAssertEqual(set.description, "2 images in \(dir.path)/ (scale \(Float(1.0 / 255)))")
        XCTAssertEqual(set.samples[1]["x"]?.floats, (0..<16).map { Float($0) * Float(1.0 / 255) })
        XCTAssertEqual(set.samples[0]["x"]?.shape, [1, 4, 4, 1])
        // Image options without images, and a vocabulary without text, are mistakes.
        let npy = dir.appendingPathComponent("x.npy")
        try NPY.encode(Tensor([Float](repeating: 0, count: 16), shape: [1, 4, 4, 1])).write(to: npy)
        XCTAssertTrue(errorText { _ = try InputData.load([npy.path], graph: g, options: options) }.contains("no .png / .jpg images"))
        var text = DataOptions()
        text.vocabulary = try Vocabulary.parse("a 1", source: "v.txt")
        XCTAssertTrue(errorText { _ = try InputData.load([npy.path], graph: g, options: text) }.contains("no .txt files"))
        // A corrupt image in the folder names itself.
        try Data(png.prefix(40)).write(to: dir.appendingPathComponent("c.png"))
        XCTAssertTrue(errorText { _ = try InputData.load([dir.path], graph: g, options: options) }.contains("c.png: PNG decoding failed"))
    }
}

final class TextDataTests: XCTestCase {
    let vocab = try? Vocabulary.parse("<PAD> 0\n<START> 1\n<UNKNOWN> 2\ni 3\nfeel 4\ngreat 5\ndon't 6\ncafé 7\n42 8\n", source: "vocab.txt")

    func testWordsSplitAsModelMaker() {
        XCTAssertEqual(Vocabulary.words("Today is a really fun day! I feel great! :)"),
                       ["today", "is", "a", "really", "fun", "day", "i", "feel", "great"])
        XCTAssertEqual(Vocabulary.words("  Don't—STOP; snake_case 42nd\tCafé  "), ["don't", "stop", "snake_case", "42nd", "café"])
        XCTAssertEqual(Vocabulary.words("½ ٣ ⅷ x²"), ["½", "٣", "ⅷ", "x²"])
        XCTAssertEqual(Vocabulary.words("...!!!"), [])
    }

    func testEncodePadsTruncatesAndMapsUnknowns() throws {
        let v = try XCTUnwrap(vocab)
        XCTAssertEqual(try v.encode("I feel GREAT!", length: 6, place: "p"), [1, 3, 4, 5, 0, 0])
        XCTAssertEqual(try v.encode("i feel fine, don't you", length: 5, place: "p"), [1, 3, 4, 2, 6])
        XCTAssertEqual(try v.encode("Café 42", length: 2, place: "p"), [1, 7])
        XCTAssertEqual(try v.encode("", length: 3, place: "p"), [1, 0, 0])
        // No <START>, no <PAD> (pads with 0), no <UNKNOWN> (an unknown word is an error naming it).
        let plain = try Vocabulary.parse("good 5\nbad 6", source: "v.txt")
        XCTAssertEqual(try plain.encode("good bad good", length: 4, place: "p"), [5, 6, 5, 0])
        XCTAssertEqual(errorText { _ = try plain.encode("good ugly", length: 4, place: "s.txt:3") },
                       "s.txt:3: 'ugly' is not in v.txt, which has no <UNKNOWN> entry")
    }

    func testVocabularyFormats() throws {
        let positional = try Vocabulary.parse("<PAD>\n<START>\n\nhello\r\nworld\r", source: "v.txt")
        XCTAssertEqual(positional.ids, ["<PAD>": 0, "<START>": 1, "hello": 2, "world": 3])
        XCTAssertEqual(try Vocabulary.parse("a b 7\nc\t9", source: "v").ids, ["a b": 7, "c": 9])
        XCTAssertEqual(errorText { _ = try Vocabulary.parse("a 1\nb\n", source: "v.txt") }, "v.txt:2: mixes \"word id\" lines with lines that have no id")
        XCTAssertEqual(errorText { _ = try Vocabulary.parse("a 1\na 2\n", source: "v.txt") }, "v.txt:2: 'a' is listed twice")
        XCTAssertEqual(errorText { _ = try Vocabulary.parse("a -1\n", source: "v.txt") }, "v.txt:1: negative id -1")
        XCTAssertEqual(errorText { _ = try Vocabulary.parse("\n \n", source: "v.txt") }, "v.txt: the vocabulary is empty")
    }

    func testTextFilesAndSequenceLength() throws {
        let v = try XCTUnwrap(vocab)
        let info = ValueInfo(name: "ids", dtype: .int32, shape: [.fixed(1), .fixed(4)])
        let rows = try TextData.tensors(fromText: "I feel great\r\n\r\n  \ncafé\r", display: "s.txt", for: info, vocabulary: v, sequenceLength: nil)
        XCTAssertEqual(rows.map(\.source), ["s.txt:1", "s.txt:4"])
        XCTAssertEqual(rows.map(\.tensor.ints), [[1, 3, 4, 5], [1, 7, 0, 0]])
        XCTAssertEqual(rows[0].tensor.dtype, .int32)
        XCTAssertEqual(rows[0].tensor.shape, [1, 4])
        let float = ValueInfo(name: "ids", dtype: .float32, shape: [.symbolic("n")])
        let f = try TextData.tensors(fromText: "great", display: "s", for: float, vocabulary: v, sequenceLength: 3)
        XCTAssertEqual(f[0].tensor.floats, [1, 5, 0])
        XCTAssertTrue(errorText { _ = try TextData.tensors(fromText: "x", display: "s", for: float, vocabulary: v, sequenceLength: nil) }
            .contains("give --sequence-length N"))
        XCTAssertTrue(errorText { _ = try TextData.tensors(fromText: "x", display: "s", for: info, vocabulary: v, sequenceLength: 5) }
            .contains("does not match"))
        XCTAssertTrue(errorText { _ = try TextData.tensors(fromText: "x", display: "s", for: info, vocabulary: nil, sequenceLength: nil) }
            .contains("needs --vocab"))
        XCTAssertTrue(errorText { _ = try TextData.tensors(fromText: "\n\n", display: "s", for: info, vocabulary: v, sequenceLength: nil) }
            .contains("no sentences"))
    }
}
