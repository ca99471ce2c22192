import Foundation
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest
@testable import ShrinkwrapTensorFlow

/// The fixtures Scripts/make_tf_fixtures.py wrote (TensorFlow 2.12) and what it
/// recorded about them in expected.json.
enum TensorFlowFixtures {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    /// The SavedModel of a seeded tf.Module (one index block, as TensorFlow writes it).
    static let savedModel = dir.appendingPathComponent("module")
    static let moduleVariables = savedModel.appendingPathComponent("variables/variables")
    /// A checkpoint of 300 small variables whose index has several blocks.
    static let manyVariables = dir.appendingPathComponent("many/variables")

    struct Entry: Decodable {
        var dtype: String
        var shape: [Int]
        var values: [String]?
    }

    struct Signature: Decodable {
        var inputs: [String: String]
        var outputs: [String]
    }

    struct Expected: Decodable {
        var module: [String: Entry]
        var many: [String: Entry]
        var signature: Signature
        var kernel: [String]
        var indexBlocks: [String: Int]

        enum CodingKeys: String, CodingKey {
            case module, many, signature, kernel
            case indexBlocks = "index_blocks"
        }
    }

    static func expected() throws -> Expected {
        try JSONDecoder().decode(Expected.self, from: Data(contentsOf: dir.appendingPathComponent("expected.json")))
    }

    static func bytes(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }

    /// A copy of a bundle's two files in a new temporary folder; returns the copy's prefix.
    static func copyBundle(_ prefix: URL, label: String) throws -> URL {
        let copy = try makeTempDir(label).appendingPathComponent("variables")
        for suffix in [".index", ".data-00000-of-00001"] {
            try FileManager.default.copyItem(atPath: prefix.path + suffix, toPath: copy.path + suffix)
        }
        return copy
    }

    /// Asserts that `tensor` holds exactly what `entry` records (values as exact decimal strings).
    static func assertEqual(_ tensor: Tensor, _ entry: Entry, _ name: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(tensor.dtype.rawValue, entry.dtype, name, file: file, line: line)
        XCTAssertEqual(tensor.shape, entry.shape, name, file: file, line: line)
        let values = entry.values ?? []
        XCTAssertEqual(tensor.storage.count, values.count, name, file: file, line: line)
        switch tensor.storage {
        case .float(let a):
            let want = values.map { Float(Double($0) ?? .nan).bitPattern }
            XCTAssertEqual(a.map(\.bitPattern), want, name, file: file, line: line)
        case .int(let a):
            let want = values.map { Int64($0) ?? UInt64($0).map { Int64(bitPattern: $0) } ?? 0 }
            XCTAssertEqual(a, want, name, file: file, line: line)
        case .bool(let a):
            XCTAssertEqual(a, values.map { $0 == "true" }, name, file: file, line: line)
        }
    }
}
