import Foundation
import Shrinkwrap
import ShrinkwrapData
import ShrinkwrapCompression
import ShrinkwrapIR
import XCTest

/// Runs the built `shrinkwrap` binary as a user would.
final class CLITests: XCTestCase {
    struct Result { var status: Int32; var stdout: String; var stderr: String }

    static var binary: URL {
        // The test bundle sits in the build products folder next to the executable.
        var dir = Bundle.main.bundleURL
        for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") { dir = b.bundleURL.deletingLastPathComponent() }
        let candidate = dir.appendingPathComponent("shrinkwrap")
        if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
        return Bundle.main.bundleURL.appendingPathComponent("shrinkwrap")
    }

    func sw(_ args: [String]) throws -> Result {
        let p = Process()
        p.executableURL = Self.binary
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        env["SWIFT_BACKTRACE"] = "enable=no"
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    var tmp: URL!

    override func setUpWithError() throws {
        guard FileManager.default.fileExists(atPath: Self.binary.path) else {
            throw XCTSkip("SKIPPED: the shrinkwrap binary is not built next to the tests (\(Self.binary.path))")
        }
        tmp = FileManager.default.temporaryDirectory.appendingPathComponent("swcli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let tmp { try? FileManager.default.removeItem(at: tmp) }
    }

    /// y = Softmax(x · W) with W 2×3, as ONNX bytes (made with onnx.helper; see below).
    func tinyModel() throws -> URL {
        let url = tmp.appendingPathComponent("tiny.onnx")
        try Data(base64Encoded: Self.tinyModelBase64)!.write(to: url)
        return url
    }

    func testInspectText() throws {
        let r = try sw(["inspect", try tinyModel().path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("format:    onnx (ir 8, opset 17)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("x: float32 [1, 2]"), r.stdout)
        XCTAssertTrue(r.stdout.contains("y: float32 [1, 3]"), r.stdout)
        XCTAssertTrue(r.stdout.contains("ops:       MatMul×1, Softmax×1"), r.stdout)
        XCTAssertTrue(r.stdout.contains("weights:   1 tensors, 24 B"), r.stdout)
    }

    func testInspectJSON() throws {
        let r = try sw(["inspect", try tinyModel().path, "--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let obj = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(obj?["format"] as? String, "onnx")
        XCTAssertEqual(obj?["nodeCount"] as? Int, 2)
        XCTAssertEqual(obj?["weightBytes"] as? Int, 24)
    }

    func testRunWritesOutputsAndTopK() throws {
        let model = try tinyModel()
        let x = tmp.appendingPathComponent("x.npy")
        try NPY.encode(Tensor([1, 2], shape: [1, 2])).write(to: x)
        let outDir = tmp.appendingPathComponent("out")
        let r = try sw(["run", model.path, "--input", x.path, "--output-dir", outDir.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        // x·W = [1·1 + 2·0.5, 1·(−1) + 2·1, 1·2 + 2·(−2)] = [2, 1, −2]; softmax ranks class 0, 1, 2.
        XCTAssertTrue(r.stdout.contains("1. class 0"), r.stdout)
        XCTAssertTrue(r.stdout.contains("3. class 2"), r.stdout)
        let y = try NPY.read(outDir.appendingPathComponent("y.npy"))
        let e = [2.0, 1.0, -2.0].map { exp($0) }
        let s = e.reduce(0, +)
        for (got, want) in zip(y.doubles, e.map { $0 / s }) { XCTAssertEqual(got, want, accuracy: 1e-6) }
    }

    func testErrorsAreOneLineWithNonZeroExit() throws {
        let empty = tmp.appendingPathComponent("empty.onnx")
        try Data().write(to: empty)
        let garbage = tmp.appendingPathComponent("garbage.onnx")
        try Data((0..<500).map { UInt8(truncatingIfNeeded: $0 &* 37) }).write(to: garbage)
        let truncated = tmp.appendingPathComponent("truncated.onnx")
        try Data(base64Encoded: Self.tinyModelBase64)!.prefix(40).write(to: truncated)
        for (args, needle) in [(["inspect", empty.path], "empty"), (["inspect", garbage.path], "garbage.onnx"),
                               (["run", truncated.path, "--input", "x.npy"], "truncated.onnx"),
                               (["inspect", tmp.appendingPathComponent("missing.onnx").path], "no such file"),
                               (["inspect", tmp.appendingPathComponent("model.pt").path], "unknown model format")] {
            let r = try sw(args)
            XCTAssertEqual(r.status, 1, "\(args): \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, r.stderr)
            XCTAssertTrue(r.stderr.hasPrefix("shrinkwrap: error: "), r.stderr)
            XCTAssertTrue(r.stderr.contains(needle), "\(needle) not in \(r.stderr)")
        }
    }

    /// --inputs / --outputs / --signature reach the TensorFlow importer; other formats refuse them in one line.
    func testTensorFlowImportOptions() throws {
        let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ShrinkwrapTensorFlowTests/Fixtures/models")
        let cut = try sw(["inspect", models.appendingPathComponent("mlp").path, "--outputs", "dense_4", "--signature", "serving_default", "--json"])
        XCTAssertEqual(cut.status, 0, cut.stderr)
        let outputs = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(cut.stdout.utf8)) as? [String: Any])["outputs"] as? [[String: Any]]
        XCTAssertEqual(outputs?.compactMap { $0["name"] as? String }, ["dense_4"])
        let frozen = try sw(["inspect", models.appendingPathComponent("cnn.pb").path, "--inputs", "input", "--outputs", "Identity,Identity"])
        XCTAssertEqual(frozen.status, 0, frozen.stderr)
        let refused = try sw(["inspect", try tinyModel().path, "--signature", "serving_default"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stderr, "shrinkwrap: error: \(try tinyModel().path): unsupported: --signature for ONNX (read for: TensorFlow)\n")
    }

    func testRunRejectsWrongInput() throws {
        let model = try tinyModel()
        let x = tmp.appendingPathComponent("x3.npy")
        try NPY.encode(Tensor([1, 2, 3], shape: [1, 3])).write(to: x)
        let r = try sw(["run", model.path, "--input", x.path])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("x3.npy") && r.stderr.contains("expected shape [1, 2]"), r.stderr)
        let r2 = try sw(["run", model.path])
        XCTAssertEqual(r2.status, 1)
        XCTAssertTrue(r2.stderr.contains("missing input 'x'"), r2.stderr)
    }

    /// Bad calibration data is one line before any work (nothing written); tune runs end to end.
    func testCalibrationErrorsAndTune() throws {
        let model = try tinyModel()
        let dir = tmp.appendingPathComponent("cal")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for k in 0..<12 { try NPY.encode(Tensor([Float(k % 5) - 2, Float(k % 3) - 1], shape: [1, 2])).write(to: dir.appendingPathComponent("\(k).npy")) }
        let nan = tmp.appendingPathComponent("nan.npy")
        try NPY.encode(Tensor([1, .nan], shape: [1, 2])).write(to: nan)
        let wide = tmp.appendingPathComponent("wide.npy")
        try NPY.encode(Tensor([1, 2, 3], shape: [1, 3])).write(to: wide)
        let empty = tmp.appendingPathComponent("none")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let out = tmp.appendingPathComponent("out.onnx")
        let convert = ["convert", model.path, "-o", out.path, "--mode", "linear", "--bits", "4", "--method", "gptq", "--min-elements", "0"]
        for (extra, needle) in [(["--calibration", nan.path], "element 1 is nan"), (["--calibration", wide.path], "--calibration: "),
                                (["--calibration", empty.path], "--calibration: "), ([], "need --calibration")] {
            let r = try sw(convert + extra)
            XCTAssertEqual(r.status, 1, "\(extra): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            XCTAssertTrue(r.stderr.contains(needle), "\(needle) not in \(r.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: out.path), "nothing is written")
        }
        let t = try sw(["tune", model.path, "--data", dir.path, "--calibration", nan.path, "--min-agreement", "90", "-o", out.path])
        XCTAssertEqual(t.status, 1, t.stderr)
        XCTAssertTrue(t.stderr.contains("element 1 is nan"), t.stderr)
        let ok = try sw(["tune", model.path, "--data", dir.path, "--calibration", dir.path, "--min-agreement", "90", "--min-elements", "0",
                         "-o", out.path, "--plan-out", tmp.appendingPathComponent("plan.json").path, "--quiet"])
        XCTAssertTrue([0, 3].contains(ok.status), ok.stderr)
        XCTAssertTrue(ok.stdout.contains("# Shrinkwrap tune report"), ok.stdout)
        XCTAssertTrue(FileManager.default.fileExists(atPath: out.path))
        let plan = try String(contentsOf: tmp.appendingPathComponent("plan.json"), encoding: .utf8)
        let again = try sw(["convert", model.path, "-o", tmp.appendingPathComponent("again.onnx").path, "--plan",
                            tmp.appendingPathComponent("plan.json").path] + (plan.contains("calibration_sha256") ? ["--calibration", dir.path] : []))
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try Data(contentsOf: out), try Data(contentsOf: tmp.appendingPathComponent("again.onnx")), "the plan gives the same bytes")
    }

    func testCompressPrintsTheLogAsTableAndJSON() throws {
        let model = try tinyModel()
        let r = try sw(["compress", model.path, "--mode", "kmeans-lut", "--bits", "2", "--min-elements", "0", "--threads", "1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("palette2"), r.stdout)
        XCTAssertTrue(r.stdout.contains("kmeans-lut 2-bit per-tensor"), r.stdout)
        XCTAssertTrue(r.stdout.contains("1 of 1 constants compressed"), r.stdout)
        let j = try sw(["compress", model.path, "--mode", "linear", "--bits", "4", "--symmetric", "--min-elements", "0", "--json"])
        XCTAssertEqual(j.status, 0, j.stderr)
        let log = try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any]
        let entries = try XCTUnwrap(log?["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.first?["name"] as? String, "W")
        XCTAssertEqual(entries.first?["encoding"] as? String, "affine4")
        XCTAssertEqual(entries.first?["rule"] as? String, "linear 4-bit per-channel symmetric", "linear defaults to per channel")
        XCTAssertNotNil(entries.first?["sse"] as? Double)
        // Skipped under the default minimum of 2048 elements, with the reason.
        let s = try sw(["compress", model.path, "--mode", "fp16"])
        XCTAssertEqual(s.status, 0, s.stderr)
        XCTAssertTrue(s.stdout.contains("skipped: 6 elements, fewer than the minimum 2048"), s.stdout)
    }

    func testConvertToONNXKeepsWeightsCompressedAndSaysWhatTheFileIsMadeOf() throws {
        let model = try tinyModel()
        let out = tmp.appendingPathComponent("tiny.k2.onnx"), report = tmp.appendingPathComponent("report.json")
        let r = try sw(["convert", model.path, "-o", out.path, "--mode", "kmeans-lut", "--bits", "2", "--min-elements", "0",
                        "--random", "4", "--report", report.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int)
        XCTAssertTrue(r.stderr.contains("wrote \(out.path): \(size) bytes = "), r.stderr)
        XCTAssertTrue(r.stderr.contains("compressed weight bytes + ") && r.stderr.contains("opset 17"), r.stderr)
        let text = try String(contentsOf: report, encoding: .utf8)
        XCTAssertTrue(text.contains("file_layout"), text)
        // Read back, the weight is a 2-bit palette again.
        let i = try sw(["inspect", out.path])
        XCTAssertEqual(i.status, 0, i.stderr)
        XCTAssertTrue(i.stdout.contains("palette2"), i.stdout)
        // The file is an input: never overwritten.
        let again = try sw(["convert", out.path, "-o", out.path])
        XCTAssertNotEqual(again.status, 0)
        XCTAssertTrue(again.stderr.contains("refusing to overwrite an input"), again.stderr)
    }

    /// convert's --scale / --color set the converted model's image input; its --data options
    /// (shared with sweep and compare, where --scale / --color preprocess the data) do not
    /// declare them again (a debug build's ArgumentParser refuses a name declared twice).
    func testConvertDeclaresScaleAndColorOnce() throws {
        let help = try sw(["convert", "--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        for flag in ["--scale <", "--color <", "--mean <", "--resize <"] {
            XCTAssertEqual(help.stdout.components(separatedBy: "  \(flag)").count - 1, 1, "\(flag) in: \(help.stdout)")
        }
        XCTAssertTrue(help.stdout.contains("Image preprocessing: pixel × scale"), help.stdout)
        XCTAssertTrue(help.stdout.contains("Image channel order: RGB, BGR or GRAY (default RGB)"), help.stdout)
        // The values go to the converted model's image input, which needs --image-input.
        let model = try tinyModel()
        for args in [["--scale", "0.5"], ["--color", "BGR"]] {
            let r = try sw(["convert", model.path, "-o", tmp.appendingPathComponent("t.onnx").path] + args)
            XCTAssertNotEqual(r.status, 0)
            XCTAssertTrue(r.stderr.contains("--scale, --bias and --color need --image-input"), "\(args): \(r.stderr)")
        }
        // sweep keeps the data's --scale / --color.
        let sweep = try sw(["sweep", "--help"])
        XCTAssertEqual(sweep.status, 0, sweep.stderr)
        XCTAssertTrue(sweep.stdout.contains("Images: multiply pixels (0…255) by this"), sweep.stdout)
        XCTAssertTrue(sweep.stdout.contains("Images: channel order RGB, BGR or GRAY"), sweep.stdout)
    }

    func testCompressHelpListsEveryCodec() throws {
        let r = try sw(["compress", "--help"])
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(WeightCodecs.modes.count, 5)
        for codec in WeightCodecs.all {
            XCTAssertTrue(r.stdout.contains(codec.mode + ":"), "help misses \(codec.mode): \(r.stdout)")
        }
    }

    func testCompressOptionErrors() throws {
        let model = try tinyModel()
        let cases: [([String], String)] = [
            (["--mode", "kmeans"], "unknown compression mode 'kmeans'"),
            (["--mode", "linear", "--bits", "9"], "does not support 9 bits"),
            (["--mode", "kmeans-lut", "--granularity", "per-block:8"], "does not support granularity per-block:8"),
            (["--mode", "fp16", "--bits", "8"], "fixed width"),
            (["--mode", "kmeans-lut", "--symmetric"], "--mode linear only"),
            (["--mode", "custom-lut"], "needs --lut"),
            ([], "give --mode or --plan"),
            (["--plan", tmp.appendingPathComponent("missing.json").path], "missing.json: bad compression plan"),
            (["--mode", "fp16", "-o", tmp.appendingPathComponent("out.pb").path], "cannot write this format"),
            (["--mode", "fp16", "-o", model.path], "refusing to overwrite an input file"),
        ]
        for (args, expected) in cases {
            let r = try sw(["compress", model.path] + args)
            XCTAssertNotEqual(r.status, 0, "\(args)")
            XCTAssertTrue(r.stderr.contains(expected), "\(args): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "\(args): one line: \(r.stderr)")
        }
        XCTAssertEqual(try Data(contentsOf: model), Data(base64Encoded: Self.tinyModelBase64), "the input is untouched")
    }

    /// python: onnx.helper.make_model(make_graph([MatMul(x, W) → xw, Softmax(xw, axis=-1) → y], "tiny",
    ///   [x: float[1,2]], [y: float[1,3]], [W = [[1,-1,2],[0.5,1,-2]]]), opset 17, ir_version 8,
    ///   producer "shrinkwrap-tests").SerializeToString(), base64-encoded.
    static let tinyModelBase64 = "CAgSEHNocmlua3dyYXAtdGVzdHM6mQEKFgoBeAoBVxICeHcaAm1tIgZNYXRNdWwKKgoCeHcSAXkaAnNtIgdTb2Z0bWF4KhQKBGF4aXMY////////////AaABAhIEdGlueSojCAIIAxABQgFXShgAAIA/AACAvwAAAEAAAAA/AACAPwAAAMBaEwoBeBIOCgwIARIICgIIAQoCCAJiEwoBeRIOCgwIARIICgIIAQoCCANCBAoAEBE="
}
