import ShrinkwrapIR
import XCTest

final class WeightEncodingTests: XCTestCase {
    func testFloat16Decodes() throws {
        let e = WeightEncoding.float16(try Float16Weights(shape: [2, 2], bits: [0x3C00, 0xC000, 0x3800, 0x0000]))
        XCTAssertEqual(e.decoded(), Tensor([1, -2, 0.5, 0], shape: [2, 2]))
        XCTAssertEqual(e.storageBytes, 8)
        XCTAssertEqual(e.bitsPerWeight, 16)
        XCTAssertEqual(e.dtype, .float32)
        XCTAssertThrowsError(try Float16Weights(shape: [3], bits: [0, 0]))
    }

    func testAffinePerChannelDecodes() throws {
        // 2 output channels × 3 weights; channel 0: scale 0.5, zero point 2; channel 1: scale 2, zero point −1.
        let a = try AffineWeights(shape: [2, 3], bits: 4, signed: true, q: [2, 4, 0, -1, 0, 3],
                                  blockShape: [1, 3], scale: [0.5, 2], bias: [-1, 2])
        XCTAssertEqual(a.scaleShape, [2, 1])
        XCTAssertEqual(a.integerZeroPoints, [2, -1])
        // w = s·q + b = s·(q − z): [0, 1, −1, 0, 2, 8]
        XCTAssertEqual(WeightEncoding.affine(a).decoded().floats, [0, 1, -1, 0, 2, 8])
        // 6 codes × 4 bits = 3 bytes + 2 fp32 scales + 2 one-byte zero points.
        XCTAssertEqual(WeightEncoding.affine(a).storageBytes, 3 + 8 + 2)
    }

    func testAffineBlocksWithShortLastBlock() throws {
        // 1×5 weight, blocks of 2 along axis 1 → 3 scales; the last block holds one element.
        let a = try AffineWeights(shape: [1, 5], bits: 8, signed: false, q: [1, 2, 3, 4, 5],
                                  blockShape: [1, 2], scale: [1, 10, 100], bias: [0, -10, -50])
        XCTAssertEqual(a.scaleShape, [1, 3])
        XCTAssertEqual(a.decoded().floats, [1, 2, 20, 30, 450])
        XCTAssertNil(a.integerZeroPoints)
        // 5 bytes of codes + 3 scales + 3 fp32 biases (one zero point would be fractional).
        XCTAssertEqual(a.storageBytes, 5 + 12 + 12)
    }

    func testAffineRankFourPerChannelAndScalar() throws {
        let q: [Int16] = (0..<16).map { Int16($0 % 4) }
        let a = try AffineWeights(shape: [2, 2, 2, 2], bits: 2, signed: false, q: q, blockShape: [1, 2, 2, 2],
                                  scale: [1, -1], bias: [0, 0])
        XCTAssertEqual(a.decoded().floats, (0..<16).map { Float($0 % 4) * ($0 < 8 ? 1 : -1) })
        let s = try AffineWeights(shape: [], bits: 1, signed: true, q: [-1], blockShape: [], scale: [3], bias: [0])
        XCTAssertEqual(s.decoded().floats, [-3])
    }

    func testAffineRejectsInconsistentLayouts() {
        XCTAssertThrowsError(try AffineWeights(shape: [2], bits: 9, signed: false, q: [0, 0], blockShape: [2], scale: [1], bias: [0]))
        XCTAssertThrowsError(try AffineWeights(shape: [2], bits: 4, signed: false, q: [0], blockShape: [2], scale: [1], bias: [0]))
        XCTAssertThrowsError(try AffineWeights(shape: [2], bits: 4, signed: false, q: [0, 16], blockShape: [2], scale: [1], bias: [0]))
        XCTAssertThrowsError(try AffineWeights(shape: [2], bits: 4, signed: true, q: [0, -9], blockShape: [2], scale: [1], bias: [0]))
        XCTAssertThrowsError(try AffineWeights(shape: [2], bits: 4, signed: false, q: [0, 1], blockShape: [1], scale: [1], bias: [0]))
        XCTAssertThrowsError(try AffineWeights(shape: [2], bits: 4, signed: false, q: [0, 1], blockShape: [0], scale: [1, 1], bias: [0, 0]))
        XCTAssertThrowsError(try AffineWeights(shape: [2], bits: 4, signed: false, q: [0, 1], blockShape: [2], scale: [.nan], bias: [0]))
        XCTAssertThrowsError(try AffineWeights(shape: [2, 2], bits: 4, signed: false, q: [0, 1, 1, 1], blockShape: [2], scale: [1], bias: [0]))
        XCTAssertThrowsError(try AffineWeights(shape: [-1], bits: 4, signed: false, q: [], blockShape: [1], scale: [], bias: []))
    }

    func testPaletteGroupsDecode() throws {
        // 4 channels × 2 weights, groups of 2 channels, 1-bit LUTs.
        let p = try PaletteWeights(shape: [4, 2], bits: 1, indices: [0, 1, 1, 0, 0, 0, 1, 1],
                                   lut: [[-1, 1], [10, 20]], axis: 0, groupSize: 2)
        XCTAssertEqual(p.decoded().floats, [-1, 1, 1, -1, 10, 10, 20, 20])
        XCTAssertEqual(WeightEncoding.palette(p).storageBytes, 1 + 16)
    }

    func testPaletteAlongAxisOneWithShortLastGroup() throws {
        // [2, 3] with groups of 2 along axis 1 → channels {0,1} use table 0, channel 2 table 1.
        let p = try PaletteWeights(shape: [2, 3], bits: 1, indices: [1, 0, 1, 0, 1, 0],
                                   lut: [[0, 1], [5, 6]], axis: 1, groupSize: 2)
        XCTAssertEqual(p.decoded().floats, [1, 0, 6, 0, 1, 5])
    }

    func testPaletteRejectsInconsistentLayouts() {
        XCTAssertThrowsError(try PaletteWeights(shape: [2], bits: 1, indices: [0, 2], lut: [[0, 1]], axis: 0, groupSize: 2))
        XCTAssertThrowsError(try PaletteWeights(shape: [2], bits: 2, indices: [0, 1], lut: [[0, 1]], axis: 0, groupSize: 2))
        XCTAssertThrowsError(try PaletteWeights(shape: [2], bits: 1, indices: [0, 1], lut: [[0, 1]], axis: 0, groupSize: 1))
        XCTAssertThrowsError(try PaletteWeights(shape: [2], bits: 1, indices: [0, 1], lut: [[0, 1]], axis: 1, groupSize: 2))
        XCTAssertThrowsError(try PaletteWeights(shape: [2], bits: 1, indices: [0, 1], lut: [[0, .infinity]], axis: 0, groupSize: 2))
        XCTAssertThrowsError(try PaletteWeights(shape: [2], bits: 1, indices: [0, 1], lut: [[0, 1]], axis: 0, groupSize: 0))
    }
}

final class WeightTransposeTests: XCTestCase {
    /// Reference transpose of a decoded tensor, element by element.
    func transpose(_ t: Tensor, _ perm: [Int]) -> [Float] {
        let a = t.floats ?? []
        let outShape = perm.map { t.shape[$0] }
        let inStrides = stridesOf(t.shape), outStrides = stridesOf(outShape)
        return (0..<a.count).map { o in
            var src = 0
            for k in outShape.indices { src += ((o / outStrides[k]) % outShape[k]) * inStrides[perm[k]] }
            return a[src]
        }
    }

    func testEveryEncodingTransposesExactly() throws {
        let shape = [4, 3, 2]
        let n = 24
        let perms = [[1, 0, 2], [2, 1, 0], [0, 2, 1], [0, 1, 2]]
        let dense = WeightEncoding.dense(Tensor((0..<n).map { Float($0) * 0.5 - 3 }, shape: shape))
        let fp16 = WeightEncoding.float16(try Float16Weights(shape: shape, bits: (0..<n).map { UInt16(0x3C00 + $0) }))
        let affine = WeightEncoding.affine(try AffineWeights(
            shape: shape, bits: 4, signed: false, q: (0..<n).map { Int16($0 % 16) }, blockShape: [1, 3, 1],
            scale: (0..<8).map { Float($0 + 1) }, bias: (0..<8).map { Float($0) * -0.25 }))
        let palette = WeightEncoding.palette(try PaletteWeights(
            shape: shape, bits: 2, indices: (0..<n).map { UInt8($0 % 4) }, lut: [[0, 1, 2, 3], [10, 11, 12, 13]], axis: 0, groupSize: 2))
        for e in [dense, fp16, affine, palette] {
            for p in perms {
                let t = try e.transposed(p)
                XCTAssertEqual(t.shape, p.map { shape[$0] })
                XCTAssertEqual(t.decoded().floats, transpose(e.decoded(), p), "\(e.kind) \(p)")
                XCTAssertEqual(t.kind, e.kind)
            }
        }
        XCTAssertThrowsError(try dense.transposed([0, 1]))
        XCTAssertThrowsError(try dense.transposed([0, 0, 1]))
    }
}

final class WeightRowsTests: XCTestCase {
    /// Every encoding cut along axis 0 decodes to the same rows of the decoded weight.
    func testEveryEncodingCutsRowsExactly() throws {
        let shape = [6, 2, 2]
        let n = 24
        let dense = WeightEncoding.dense(Tensor((0..<n).map { Float($0) * 0.5 - 3 }, shape: shape))
        let fp16 = WeightEncoding.float16(try Float16Weights(shape: shape, bits: (0..<n).map { UInt16(0x3C00 + $0) }))
        let perRow = WeightEncoding.affine(try AffineWeights(
            shape: shape, bits: 4, signed: false, q: (0..<n).map { Int16($0 % 16) }, blockShape: [1, 2, 2],
            scale: (0..<6).map { Float($0 + 1) }, bias: (0..<6).map { Float($0) * -0.25 }))
        let perTensor = WeightEncoding.affine(try AffineWeights(
            shape: shape, bits: 3, signed: true, q: (0..<n).map { Int16($0 % 8 - 4) }, blockShape: [6, 2, 2], scale: [0.5], bias: [0]))
        let perColumn = WeightEncoding.affine(try AffineWeights(
            shape: shape, bits: 8, signed: false, q: (0..<n).map { Int16($0 * 9 % 256) }, blockShape: [6, 1, 2],
            scale: [0.1, 0.2], bias: [1, 2]))
        let grouped = WeightEncoding.palette(try PaletteWeights(
            shape: shape, bits: 2, indices: (0..<n).map { UInt8($0 % 4) }, lut: [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]],
            axis: 0, groupSize: 2))
        let one = WeightEncoding.palette(try PaletteWeights(
            shape: shape, bits: 1, indices: (0..<n).map { UInt8($0 % 2) }, lut: [[-1, 1]], axis: 0, groupSize: 6))
        let all = dense.decoded().floats ?? []
        for e in [dense, fp16, perRow, perTensor, perColumn, grouped, one] {
            let full = e.decoded().floats ?? []
            for r in [0..<2, 2..<4, 4..<6, 0..<6] {
                let cut = try e.rows(r)
                XCTAssertEqual(cut.shape, [r.count, 2, 2])
                XCTAssertEqual(cut.kind, e.kind)
                XCTAssertEqual(cut.decoded().floats, Array(full[(r.lowerBound * 4)..<(r.upperBound * 4)]), "\(e.kind) \(r)")
            }
        }
        XCTAssertEqual(all.count, n)
        XCTAssertThrowsError(try grouped.rows(1..<3), "a cut through a group of rows")
        XCTAssertThrowsError(try dense.rows(4..<7))
        XCTAssertEqual(try perRow.rows(3..<4).decoded().floats, Array((perRow.decoded().floats ?? [])[12..<16]))
    }
}
