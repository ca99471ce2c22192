import Foundation
import XCTest
@testable import HDF5
import ShrinkwrapTestSupport

/// Every fixture read through the public API against what h5py reads (expected.json): every group's
/// members and attributes, every dataset's shape, values and attributes.
final class HDF5FileTests: XCTestCase {
    func testExpectedValuesArePresent() {
        XCTAssertEqual(Set(Fixture.expected.keys), Set(Fixture.names), "expected.json lists other fixtures: rerun Scripts/make_hdf5_fixtures.py")
    }

    func testEveryObjectMatchesH5py() throws {
        for name in Fixture.names {
            let file = try Fixture.open(name)
            let objects = try XCTUnwrap(Fixture.expected[name], name)
            for (path, expected) in objects.sorted(by: { $0.key < $1.key }) {
                let where_ = "\(name):/\(path)"
                let object = try file.object(at: path)
                try compareAttributes(object, expected["attrs"] as? [String: [String: Any]] ?? [:], where_)
                switch (expected["kind"] as? String, object) {
                case ("group", .group(let g)):
                    XCTAssertEqual(try g.members(), expected["members"] as? [String], where_)
                case ("dataset", .dataset(let d)):
                    XCTAssertEqual(d.shape, expected["shape"] as? [Int] ?? [], where_)
                    assertValue(try d.read(), expected["value"] as? [String: Any] ?? [:], where_)
                default:
                    XCTFail("\(where_): expected a \(expected["kind"] ?? "?"), read \(object)")
                }
            }
        }
    }

    private func compareAttributes(_ object: HDF5Object, _ expected: [String: [String: Any]], _ where_: String) throws {
        let attributes = try object.attributes()
        XCTAssertEqual(attributes.map(\.name), expected.keys.sorted(), "\(where_): attribute names")
        for attribute in attributes {
            guard let e = expected[attribute.name] else { continue }
            XCTAssertEqual(attribute.shape, e["shape"] as? [Int] ?? [], "\(where_)@\(attribute.name)")
            assertValue(attribute.value, e["value"] as? [String: Any] ?? [:], "\(where_)@\(attribute.name)")
        }
    }

    func testWalkingEveryFixtureFindsNoErrorsButUnfollowedLinksAndCommittedTypes() throws {
        for name in Fixture.names {
            let walk = walkAll(try Fixture.open(name))
            XCTAssertEqual(walk.foreign, [], name)
            XCTAssertTrue(walk.errors.allSatisfy { $0.contains("which is not followed") || $0.contains("is a committed datatype, not a group or dataset") },
                          "\(name): \(walk.errors)")
            XCTAssertGreaterThan(walk.datasetsRead, 0, name)
        }
    }

    func testPaths() throws {
        let file = try Fixture.open("latest.h5")
        XCTAssertEqual(try file.object(at: "/nested/a/b/c/deep").path, "nested/a/b/c/deep")
        XCTAssertEqual(try file.object(at: "nested/a/b/c/deep").path, "nested/a/b/c/deep")
        XCTAssertEqual(try file.object(at: "/").path, "")
        XCTAssertEqual(try file.object(at: "").path, "")
        XCTAssertEqual(try Fixture.group(file, "nested/a").members(), ["b"])
        let missing = errorText { _ = try file.object(at: "nested/nope") }
        XCTAssertTrue(missing.contains("no member 'nope'") && missing.contains("(object header of 'nested')"), missing)
        let through = errorText { _ = try file.object(at: "numbers/f32le/x") }
        XCTAssertTrue(through.contains("'numbers/f32le' is a dataset, not a group"), through)
    }

    func testHardLinksShareAnAddressAndSoftLinksAreNotFollowed() throws {
        for name in ["earliest.h5", "latest.h5"] {
            let file = try Fixture.open(name)
            XCTAssertEqual(try file.object(at: "hundred/m001").address, try file.object(at: "target").address, name)
            XCTAssertNotEqual(try file.object(at: "hundred/m025").address, try file.object(at: "target").address, name)
            XCTAssertTrue(try Fixture.group(file, "nested").members().contains("soft"), name)
            let soft = errorText { _ = try file.object(at: "nested/soft") }
            XCTAssertTrue(soft.contains("'nested/soft' is a soft link to '/nested/a/b/c/deep', which is not followed"), soft)
        }
        let external = errorText { _ = try Fixture.open("latest.h5").object(at: "nested/external") }
        XCTAssertTrue(external.contains("external link to '/x' in 'other.h5'"), external)
    }

    func testGroupsOfOneNineAndHundredMembers() throws {
        for name in ["earliest.h5", "latest.h5"] {
            let file = try Fixture.open(name)
            XCTAssertEqual(try Fixture.group(file, "one").members(), ["only"], name)
            XCTAssertEqual(try Fixture.group(file, "nine").members().count, 9, name)
            let hundred = try Fixture.group(file, "hundred").members()
            XCTAssertEqual(hundred, (0..<100).map { String(format: "m%03d", $0) }, name)
            XCTAssertEqual(try Fixture.dataset(file, "hundred/m075").read(), .ints([75]), name)
        }
    }

    func testAttributesByName() throws {
        let file = try Fixture.open("earliest.h5")
        XCTAssertEqual(try file.root.attribute("weight_names")?.value, .strings(["dense/kernel:0", "dense/bias:0"]))
        XCTAssertEqual(try file.root.attribute("weight_names")?.shape, [2])
        XCTAssertNil(try file.root.attribute("absent"))
        XCTAssertEqual(try Fixture.dataset(file, "numbers/f32le").attribute("unit")?.value, .strings(["metres"]))
        let empty = try XCTUnwrap(try file.root.attribute("empty"))
        XCTAssertEqual(empty.shape, [])
        XCTAssertEqual(empty.value, .floats([]))
        XCTAssertEqual(try file.root.attribute("a_bool")?.value, .ints([1]))
    }

    func testDatasetMetadata() throws {
        let file = try Fixture.open("latest.h5")
        let rows = try Fixture.dataset(file, "layouts/unlimited_rows")
        XCTAssertEqual(rows.shape, [10, 7])
        XCTAssertEqual(rows.maxShape, [nil, 7])
        XCTAssertEqual(rows.type, .float(size: 4, bigEndian: false))
        XCTAssertEqual(try Fixture.dataset(file, "numbers/f16be").type, .float(size: 2, bigEndian: true))
        XCTAssertEqual(try Fixture.dataset(file, "numbers/scalar_f32").shape, [])
        XCTAssertEqual(try Fixture.dataset(file, "strings/vlen_utf8").type, .variableLengthString(padding: .nullTerminated, utf8: true))
        XCTAssertEqual(try Fixture.dataset(file, "numbers/f64be").read().floatArray, [-0.625, -0.375, -0.125, 0.125, 0.375, 0.625])
    }

    func testTheLimitRefusesLargeValues() throws {
        let file = try Fixture.open("latest.h5", limit: 100)
        let big = errorText { _ = try Fixture.dataset(file, "layouts/contiguous").read() }
        XCTAssertTrue(big.contains("exceeds the limit of 100 bytes"), big)
        XCTAssertEqual(try Fixture.dataset(file, "numbers/i8").read(), .ints([-128, -1, 0, 127]))
    }
}
