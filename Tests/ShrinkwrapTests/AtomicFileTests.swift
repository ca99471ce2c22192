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

    /// A package folder: built beside the target, renamed into place, replacing a package written
    /// before (no files of the old one left, no temporary folders); other folders and inputs are kept.
    func testPackageFoldersReplaceOnlyPackages() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("atomic-folder-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pkg = dir.appendingPathComponent("m.mlpackage")
        func files(_ tag: String) -> [(path: String, data: Data)] {
            [("Manifest.json", Data("{\"v\": \"\(tag)\"}".utf8)), ("Data/a/model.bin", Data(tag.utf8))]
        }
        try AtomicFile.writeFolder(files("one") + [("Data/old-only.bin", Data("x".utf8))], to: pkg)
        try AtomicFile.writeFolder(files("two"), to: pkg)
        XCTAssertEqual(try String(contentsOf: pkg.appendingPathComponent("Data/a/model.bin"), encoding: .utf8), "two")
        XCTAssertFalse(FileManager.default.fileExists(atPath: pkg.appendingPathComponent("Data/old-only.bin").path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["m.mlpackage"], "no temporary folders left behind")
        let other = dir.appendingPathComponent("photos.mlpackage")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: other.appendingPathComponent("cat.jpg"))
        XCTAssertThrowsError(try AtomicFile.writeFolder(files("three"), to: other)) { XCTAssertTrue("\($0)".contains("refusing to replace it"), "\($0)") }
        XCTAssertEqual(try String(contentsOf: other.appendingPathComponent("cat.jpg"), encoding: .utf8), "keep")
        XCTAssertThrowsError(try AtomicFile.writeFolder(files("four"), to: pkg, protecting: [pkg])) { XCTAssertTrue("\($0)".contains("input"), "\($0)") }
    }

    /// A package's size and digest input (reports of a sweep over an .mlpackage): its files, in path order.
    func testSourceBytesOfAPackageFolder() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("source-bytes-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pkg = dir.appendingPathComponent("m.mlpackage")
        try AtomicFile.writeFolder([("Manifest.json", Data("ab".utf8)), ("Data/w.bin", Data("cde".utf8))], to: pkg)
        XCTAssertEqual(try Models.sourceSize(pkg.path), 5)
        XCTAssertEqual(try Models.sourceBytes(pkg.path), Data("Data/w.bincdeManifest.jsonab".utf8))
        let file = dir.appendingPathComponent("f.onnx")
        try Data("xyz".utf8).write(to: file)
        XCTAssertEqual(try Models.sourceSize(file.path), 3)
        XCTAssertEqual(try Models.sourceBytes(file.path), Data("xyz".utf8))
    }
}
