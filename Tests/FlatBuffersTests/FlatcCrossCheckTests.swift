import Foundation
import XCTest
@testable import FlatBuffers

/// Our builder and reader against the official compiler, `flatc`:
/// (a) bytes we build are decoded by flatc into the JSON we meant;
/// (b) bytes flatc builds from a JSON file are decoded by our reader into the same values.
/// Skipped (with a message) when flatc is not installed.
final class FlatcCrossCheckTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let schema = fixtures.appendingPathComponent("test.fbs")

    var tmp: URL!

    override func setUpWithError() throws {
        tmp = FileManager.default.temporaryDirectory.appendingPathComponent("fb-flatc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let tmp { try? FileManager.default.removeItem(at: tmp) }
    }

    // MARK: (a) our bytes → flatc JSON

    func testFlatcDecodesOurBuffers() throws {
        let flatc = try Flatc.require()
        var empty = RootValues()
        empty.name = "only a name"
        var defaults = RootValues()
        defaults.scalars = ScalarsValues()
        defaults.leaves = [LeafValues(name: nil)]
        var other = RootValues.full
        other.payload = .other(flag: false, values: [])
        let cases: [(String, RootValues, Bool)] = [
            ("full", .full, false), ("full-forced", .full, true), ("empty", RootValues(), false),
            ("name", empty, false), ("defaults", defaults, false), ("defaults-forced", defaults, true), ("other", other, false),
        ]
        for (name, value, force) in cases {
            let bin = tmp.appendingPathComponent("\(name).bin")
            try Data(value.buffer(forceDefaults: force)).write(to: bin)
            let outDir = tmp.appendingPathComponent("json-\(name)")
            try flatc.run(["--json", "--strict-json", "--defaults-json", "--raw-binary", "-o", outDir.path, Self.schema.path, "--", bin.path])
            let jsonData = try Data(contentsOf: outDir.appendingPathComponent("\(name).json"))
            let parsed = try JSONSerialization.jsonObject(with: jsonData)
            assertJSON(parsed, expectedJSON(value), path: name)
        }
    }

    /// What flatc prints with --defaults-json: every scalar, so also the union
    /// type of a table without a union value ("NONE").
    func expectedJSON(_ r: RootValues) -> [String: Any] {
        var d = r.json
        if r.payload == nil { d["payload_type"] = "NONE" }
        if let c = r.child.first { d["child"] = expectedJSON(c) }
        return d
    }

    // MARK: (b) flatc bytes (from JSON) → our reader

    func testWeDecodeFlatcBuffers() throws {
        let flatc = try Flatc.require()
        let json = Self.fixtures.appendingPathComponent("root.json")
        try flatc.run(["-b", "-o", tmp.path, Self.schema.path, json.path])
        let bytes = try [UInt8](Data(contentsOf: tmp.appendingPathComponent("root.fbt")))
        let fb = FlatBuffer(bytes: bytes)
        XCTAssertTrue(fb.hasFileIdentifier("FBT1"))
        let root = try fb.root(fileIdentifier: "FBT1")
        let read = try RootValues(root)
        XCTAssertEqual(read, RootValues.full)
        // Field by field, so a mismatch names the field.
        let full = RootValues.full
        XCTAssertEqual(read.scalars, full.scalars)
        XCTAssertEqual(read.unicode, full.unicode)
        XCTAssertEqual(read.leaves, full.leaves)
        XCTAssertEqual(read.mixed, full.mixed)
        XCTAssertEqual(read.tagged, full.tagged)
        XCTAssertEqual(read.payload, full.payload)
        XCTAssertEqual(read.child, full.child)
        // flatc honours force_align too.
        XCTAssertEqual(try XCTUnwrap(root.byteRange(RootField.data)).lowerBound % 16, 0)
        // Scalars at their default are absent in flatc's output, as in ours.
        let childScalars = try XCTUnwrap(root.table(RootField.child)?.table(RootField.scalars))
        XCTAssertTrue(childScalars.has(ScalarsField.i32))
        XCTAssertFalse(childScalars.has(ScalarsField.i64))
    }

    // MARK: JSON comparison

    /// Compares a parsed JSON value with the expected Swift value; floats with
    /// a relative tolerance (flatc prints floats with limited precision).
    func assertJSON(_ actual: Any?, _ expected: Any, path: String, file: StaticString = #filePath, line: UInt = #line) {
        switch expected {
        case let e as [String: Any]:
            guard let a = actual as? [String: Any] else { return XCTFail("\(path): expected an object, got \(String(describing: actual))", file: file, line: line) }
            XCTAssertEqual(Set(a.keys), Set(e.keys), "\(path): keys", file: file, line: line)
            for (k, v) in e { assertJSON(a[k], v, path: "\(path).\(k)", file: file, line: line) }
        case let e as String:
            XCTAssertEqual(actual as? String, e, path, file: file, line: line)
        case let e as Bool:
            XCTAssertEqual(actual as? Bool, e, path, file: file, line: line)
        case let e as Int64:
            XCTAssertEqual((actual as? NSNumber)?.int64Value, e, path, file: file, line: line)
        case let e as UInt64:
            XCTAssertEqual((actual as? NSNumber)?.uint64Value, e, path, file: file, line: line)
        case let e as Double:
            guard let a = (actual as? NSNumber)?.doubleValue else { return XCTFail("\(path): expected a number, got \(String(describing: actual))", file: file, line: line) }
            XCTAssertLessThanOrEqual(abs(a - e), 1e-9 + 1e-6 * abs(e), "\(path): \(a) vs \(e)", file: file, line: line)
        case let e as [Any]:
            guard let a = actual as? [Any] else { return XCTFail("\(path): expected an array, got \(String(describing: actual))", file: file, line: line) }
            XCTAssertEqual(a.count, e.count, "\(path): count", file: file, line: line)
            for (i, (x, y)) in zip(a, e).enumerated() { assertJSON(x, y, path: "\(path)[\(i)]", file: file, line: line) }
        default:
            XCTFail("\(path): unsupported expected value \(expected)", file: file, line: line)
        }
    }
}

/// Runs the `flatc` found on PATH.
struct Flatc {
    let url: URL

    /// The flatc on PATH, or an XCTSkip saying it is missing.
    static func require() throws -> Flatc {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent("flatc")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return Flatc(url: candidate) }
        }
        throw XCTSkip("SKIPPED: flatc not found on PATH; install the Debian package flatbuffers-compiler (apt-get install flatbuffers-compiler) to run the flatc cross-checks")
    }

    /// Runs flatc; throws with its stderr when it fails.
    func run(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = url
        p.arguments = arguments
        let err = Pipe()
        p.standardError = err
        p.standardOutput = err
        try p.run()
        let output = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw FlatcError(message: "flatc \(arguments.joined(separator: " ")) exited \(p.terminationStatus): \(String(decoding: output, as: UTF8.self))")
        }
    }
}

struct FlatcError: Error, CustomStringConvertible { let message: String; var description: String { message } }
