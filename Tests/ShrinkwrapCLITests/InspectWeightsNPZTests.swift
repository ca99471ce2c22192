import Foundation
@testable import ShrinkwrapData
import ShrinkwrapIR
import XCTest

/// `inspect --weights-npz`: the decoded constants of a model, as an .npz keyed by name.
extension CLITests {
    func testInspectWeightsNPZWritesDecodedConstants() throws {
        let model = try tinyModel()
        let plain = tmp.appendingPathComponent("plain.npz")
        let r = try sw(["inspect", model.path, "--weights-npz", plain.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("format:    onnx"), "the usual inspection still prints: \(r.stdout)")
        XCTAssertTrue(r.stderr.contains("wrote \(plain.path): 1 constants (0 compressed"), r.stderr)
        let arrays = try NPZ.read(plain)
        XCTAssertEqual(arrays.map(\.name), ["W"])
        XCTAssertEqual(arrays.first?.tensor.dtype, .float32)
        XCTAssertEqual(arrays.first?.tensor.shape, [2, 3])
        XCTAssertEqual(arrays.first?.tensor.floats, [1, -1, 2, 0.5, 1, -2], "tiny.onnx's W as stored")

        // A 2-bit palettized copy: the .npz holds the palette's values, not the float originals.
        let small = tmp.appendingPathComponent("tiny.k2.onnx")
        let c = try sw(["convert", model.path, "-o", small.path, "--mode", "kmeans-lut", "--bits", "2", "--min-elements", "0"])
        XCTAssertEqual(c.status, 0, c.stderr)
        let packed = tmp.appendingPathComponent("packed.npz")
        let p = try sw(["inspect", small.path, "--json", "--weights-npz", packed.path])
        XCTAssertEqual(p.status, 0, p.stderr)
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(p.stdout.utf8)), "stdout stays JSON: \(p.stdout)")
        XCTAssertTrue(p.stderr.contains("1 constants (1 compressed, decoded"), p.stderr)
        let decoded = try XCTUnwrap(NPZ.read(packed).first?.tensor.floats)
        XCTAssertEqual(decoded.count, 6)
        XCTAssertLessThanOrEqual(Set(decoded).count, 4, "2 bits: at most 4 distinct values, got \(decoded)")
        XCTAssertNotEqual(decoded, [1, -1, 2, 0.5, 1, -2], "5 distinct values do not fit 4 palette entries")

        // Byte-identical on a second run; the model itself is never overwritten.
        let again = tmp.appendingPathComponent("again.npz")
        XCTAssertEqual(try sw(["inspect", small.path, "--weights-npz", again.path]).status, 0)
        XCTAssertEqual(try Data(contentsOf: packed), try Data(contentsOf: again))
        let clobber = try sw(["inspect", small.path, "--weights-npz", small.path])
        XCTAssertNotEqual(clobber.status, 0)
        XCTAssertTrue(clobber.stderr.contains("refusing to overwrite an input"), clobber.stderr)
    }

    func testNPZEncodeRoundTripsDtypesAndRefusesDuplicateNames() throws {
        let arrays: [(name: String, tensor: Tensor)] = [
            ("a/b", Tensor([1.5, -2], shape: [2])),
            ("ids", Tensor(ints: [3, -4, 5], shape: [3], dtype: .int32)),
            ("flag", Tensor(bools: [true, false], shape: [1, 2])),
        ]
        let back = try NPZ.decode(NPZ.encode(arrays, file: "x.npz"), file: "x.npz")
        XCTAssertEqual(back.map(\.name), ["a/b", "ids", "flag"])
        XCTAssertEqual(back.map(\.tensor), arrays.map(\.tensor))
        XCTAssertThrowsError(try NPZ.encode([("w", .scalar(1)), ("w", .scalar(2))], file: "x.npz")) {
            XCTAssertTrue("\($0)".contains("member 'w': given twice"), "\($0)")
        }
    }
}
