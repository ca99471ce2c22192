import ShrinkwrapIR
import XCTest

/// `rows` then `stackingRows`: cutting a weight into gates and stacking them
/// back (in any order) keeps the encoding and moves exactly the decoded rows.
final class WeightStackingTests: XCTestCase {
    let shape = [8, 3]

    func encodings() throws -> [(String, WeightEncoding)] {
        let n = 24
        let q = (0..<n).map { Int16($0 % 16) }
        return [
            ("dense", .dense(Tensor((0..<n).map { Float($0) / 3 }, shape: shape))),
            ("fp16", .float16(try Float16Weights(shape: shape, bits: (0..<n).map { Half.bits(from: Float($0) / 7) }))),
            ("affine per tensor", .affine(try AffineWeights(shape: shape, bits: 4, signed: false, q: q, blockShape: [8, 3], scale: [0.5], bias: [-1]))),
            ("affine per row", .affine(try AffineWeights(shape: shape, bits: 4, signed: false, q: q, blockShape: [1, 3],
                                                         scale: (0..<8).map { Float($0 + 1) / 8 }, bias: (0..<8).map { -Float($0) / 4 }))),
            ("affine per 2 rows", .affine(try AffineWeights(shape: shape, bits: 4, signed: false, q: q, blockShape: [2, 3],
                                                            scale: [0.1, 0.2, 0.3, 0.4], bias: [0, 0, 1, 1]))),
            ("palette one table", .palette(try PaletteWeights(shape: shape, bits: 2, indices: (0..<n).map { UInt8($0 % 4) },
                                                              lut: [[0, 1, 2, 3]], axis: 0, groupSize: 8))),
            ("palette per 2 rows", .palette(try PaletteWeights(shape: shape, bits: 2, indices: (0..<n).map { UInt8($0 % 4) },
                                                               lut: (0..<4).map { g in (0..<4).map { Float(g * 10 + $0) } }, axis: 0, groupSize: 2))),
        ]
    }

    func testGatesCutAndRestackedMoveTheirRowsAndKeepTheEncoding() throws {
        let order = [2, 0, 3, 1]  // four "gates" of two rows
        for (label, e) in try encodings() {
            let gates = try order.map { g in try e.rows((2 * g)..<(2 * g + 2)) }
            let stacked = try WeightEncoding.stackingRows(gates)
            XCTAssertEqual(stacked.kind, e.kind, label)
            XCTAssertEqual(stacked.shape, e.shape, label)
            let original = try XCTUnwrap(e.decoded().floats), got = try XCTUnwrap(stacked.decoded().floats)
            let expected = order.flatMap { g in original[(g * 2 * 3)..<((g * 2 + 2) * 3)] }
            XCTAssertEqual(got, expected, label)
            // In the original order, the encoding comes back as it was.
            XCTAssertEqual(try WeightEncoding.stackingRows(try (0..<4).map { g in try e.rows((2 * g)..<(2 * g + 2)) }), e, label)
        }
    }

    func testPartsThatCannotStackAreRefused() throws {
        let all = try encodings()
        let dense = all[0].1, palette = all[5].1
        XCTAssertThrowsError(try WeightEncoding.stackingRows([dense, palette]))
        let twoTables = try PaletteWeights(shape: [2, 3], bits: 2, indices: [UInt8](repeating: 0, count: 6), lut: [[0, 1, 2, 3]], axis: 1, groupSize: 3)
        let otherTable = try PaletteWeights(shape: [2, 3], bits: 2, indices: [UInt8](repeating: 0, count: 6), lut: [[4, 5, 6, 7]], axis: 1, groupSize: 3)
        XCTAssertThrowsError(try WeightEncoding.stackingRows([.palette(twoTables), .palette(otherTable)]))
    }
}
