import Foundation
import ShrinkwrapTestSupport
import XCTest

/// A Python 3 for cross-checks against its zlib and zipfile (standard library only):
/// SHRINKWRAP_TEST_PYTHON, else python3 on PATH. Tests that need it skip, loudly, without it.
let testPython: String? = {
    if let p = ProcessInfo.processInfo.environment["SHRINKWRAP_TEST_PYTHON"] { return p }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(dir)/python3") {
        return "\(dir)/python3"
    }
    return nil
}()

func requirePython() throws {
    guard let p = testPython, FileManager.default.isExecutableFile(atPath: p) else {
        let message = "SKIPPED: no python3 (or SHRINKWRAP_TEST_PYTHON) found, so the zlib / zipfile cross-checks are not run"
        FileHandle.standardError.write(Data((message + "\n").utf8))
        throw XCTSkip(message)
    }
}

/// Runs a Python script in `dir`; a failing script fails the test.
func runPython(_ script: String, in dir: URL) throws {
    try requirePython()
    try TestPython.run(script, in: dir, python: testPython ?? "python3")
}

func makeTempDir() throws -> URL { try ShrinkwrapTestSupport.makeTempDir("zip") }


