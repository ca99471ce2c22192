import Foundation
import XCTest
@testable import HDF5

/// The committed fixtures (Scripts/make_hdf5_fixtures.py) and what h5py reads from them (expected.json).
enum Fixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let names = ["earliest.h5", "latest.h5", "dense_attr.h5", "offsets4.h5", "keras_tiny.h5"]

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func open(_ name: String, limit: Int = HDF5File.defaultLimit) throws -> HDF5File {
        try HDF5File(bytes: try bytes(name), file: name, limit: limit)
    }

    /// expected.json's "files": file name → object path → description.
    static let expected: [String: [String: [String: Any]]] = {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent("expected.json")),
              let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let files = json["files"] as? [String: [String: [String: Any]]] else { return [:] }
        return files
    }()

    static func dataset(_ file: HDF5File, _ path: String) throws -> HDF5Dataset {
        guard case .dataset(let d) = try file.object(at: path) else { throw TestFailure("'\(path)' is not a dataset") }
        return d
    }

    static func group(_ file: HDF5File, _ path: String) throws -> HDF5Group {
        guard case .group(let g) = try file.object(at: path) else { throw TestFailure("'\(path)' is not a group") }
        return g
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// What walking a whole file found.
struct WalkResult {
    var objects = 0
    var datasetsRead = 0
    var attributesRead = 0
    var errors: [String] = []
    /// Errors that were not `HDF5Error`s (there should be none).
    var foreign: [String] = []
}

/// Visits every object reachable from the root (each object header once, depth first without recursion),
/// reads every dataset and every attribute, and records each error instead of stopping.
func walkAll(_ file: HDF5File) -> WalkResult {
    var result = WalkResult()
    var seen = Set<Int>()
    func record(_ error: Error) {
        if error is HDF5Error { result.errors.append("\(error)") } else { result.foreign.append("\(type(of: error)): \(error)") }
    }
    var pending: [HDF5Object] = [.group(file.root)]
    while let object = pending.popLast() {
        guard seen.insert(object.address).inserted else { continue }
        result.objects += 1
        do { result.attributesRead += try object.attributes().count } catch { record(error) }
        switch object {
        case .dataset(let d):
            do { _ = try d.read(); result.datasetsRead += 1 } catch { record(error) }
        case .group(let g):
            do {
                for name in try g.members().reversed() {
                    do { pending.append(try g.member(name)) } catch { record(error) }
                }
            } catch { record(error) }
        }
    }
    return result
}

/// `value` equals expected.json's tagged value (`kind`, `values`; `empty` for a null dataspace; `count` alone
/// for arrays the script left out).
func assertValue(_ value: HDF5Value, _ expected: [String: Any], _ where_: String, file: StaticString = #filePath, line: UInt = #line) {
    guard let kind = expected["kind"] as? String else { return XCTFail("\(where_): no kind in expected.json", file: file, line: line) }
    if kind == "empty" { return XCTAssertEqual(value.count, 0, "\(where_): a null dataspace has no values", file: file, line: line) }
    if let count = expected["count"] as? Int {
        return XCTAssertEqual(value.count, count, "\(where_): value count", file: file, line: line)
    }
    let values = expected["values"] as? [Any] ?? []
    XCTAssertEqual(value.count, values.count, "\(where_): value count", file: file, line: line)
    switch (kind, value) {
    case ("floats", .floats(let got)):
        XCTAssertEqual(got, values.map { Float(($0 as? NSNumber)?.doubleValue ?? .nan) }, where_, file: file, line: line)
    case ("doubles", .doubles(let got)):
        XCTAssertEqual(got, values.map { ($0 as? NSNumber)?.doubleValue ?? .nan }, where_, file: file, line: line)
    case ("ints", .ints(let got)):
        XCTAssertEqual(got, values.map { ($0 as? NSNumber)?.int64Value ?? Int64(($0 as? String) ?? "") ?? 0 }, where_, file: file, line: line)
    case ("uints", .uints(let got)):
        XCTAssertEqual(got, values.map { ($0 as? NSNumber)?.uint64Value ?? UInt64(($0 as? String) ?? "") ?? 0 }, where_, file: file, line: line)
    case ("strings", .strings(let got)):
        XCTAssertEqual(got, values.map { $0 as? String ?? "?" }, where_, file: file, line: line)
    case ("bytes", .bytes(let got)):
        XCTAssertEqual(got, values.map { (($0 as? [NSNumber]) ?? []).map { $0.uint8Value } }, where_, file: file, line: line)
    case ("sequences", .sequences(let got)):
        for (i, (g, e)) in zip(got, values).enumerated() {
            assertValue(g, e as? [String: Any] ?? [:], "\(where_)[\(i)]", file: file, line: line)
        }
    default:
        XCTFail("\(where_): expected \(kind), read \(value)", file: file, line: line)
    }
}

/// An error's text is one line that names an offset.
func assertOneLine(_ error: Error, file: StaticString = #filePath, line: UInt = #line) {
    let text = "\(error)"
    XCTAssertFalse(text.contains("\n") || text.contains("\r"), "error spans lines: \(text)", file: file, line: line)
    XCTAssertTrue(text.contains(": offset "), "error names no offset: \(text)", file: file, line: line)
}
