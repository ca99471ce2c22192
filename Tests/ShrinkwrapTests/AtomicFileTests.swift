import Foundation
import Shrinkwrap
import XCTest

final class AtomicFileTests: XCTestCase {
    /// New file, replacing an existing one (this failed on Linux with FileManager.replaceItemAt), refusing an input.
    func testWritesReplacesAndProtectsInputs() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("atomic-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let f = dir.appendingPathComponent("sub/report.json")
        try AtomicFile.write(Data("one".utf8), to: f)
        XCTAssertEqual(try String(contentsOf: f, encoding: .utf8), "one")
        try AtomicFile.write(Data("two".utf8), to: f)
        XCTAssertEqual(try String(contentsOf: f, encoding: .utf8), "two")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: f.deletingLastPathComponent().path)
        XCTAssertEqual(leftovers, ["report.json"], "no temporary files left behind")
        XCTAssertThrowsError(try AtomicFile.write(Data("three".utf8), to: f, protecting: [f])) { e in
            XCTAssertTrue("\(e)".contains("refusing to overwrite an input"), "\(e)")
        }
        XCTAssertEqual(try String(contentsOf: f, encoding: .utf8), "two")
    }
}
