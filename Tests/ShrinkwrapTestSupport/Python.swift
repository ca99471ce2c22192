import Foundation

/// Python for the tests that cross-check against numpy / zlib / zipfile.
public enum TestPython {
    public struct Failed: Error, CustomStringConvertible { public let description: String }

    /// SHRINKWRAP_TEST_PYTHON when set, else the project's `.venv/bin/python`
    /// (numpy, onnx; `make venv` makes it), found from this file's place in
    /// the checkout, so a clone anywhere uses its own venv.
    public static let venv: String = {
        if let p = ProcessInfo.processInfo.environment["SHRINKWRAP_TEST_PYTHON"] { return p }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".venv/bin/python").path
    }()

    /// Runs `script` with `python` in `dir`; a non-zero exit throws with the script's stderr.
    public static func run(_ script: String, in dir: URL, python: String) throws {
        let scriptURL = dir.appendingPathComponent("gen.py")
        try Data(script.utf8).write(to: scriptURL)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [scriptURL.path]
        p.currentDirectoryURL = dir
        let err = Pipe()
        p.standardError = err
        try p.run()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw Failed(description: "python script failed (\(p.terminationStatus)): \(errText)")
        }
    }
}
