import ShrinkwrapIR
import XCTest

final class WeightEncodingTests: XCTestCase {
    func testFloat16Decodes() {
        let e = WeightEncoding.float16(bits: [0x3C00, 0xC000, 0x3800, 0x0000], shape: [2, 2])
        XCTAssertEqual(e.decoded(), Tensor([1, -2, 0.5, 0], shape: [2, 2]))
        XCTAssertEqual(e.storageBytes, 8)
        XCTAssertEqual(e.dtype, .float32)
    }

    func testAffinePerChannelDecodes() {
        // 2 output channels × 3 weights; channel 0: scale 0.5, zero point 2; channel 1: scale 2, zero point −1.
        let a = AffineWeights(shape: [2, 3], bits: 4, signed: true, q: [2, 4, 0, -1, 0, 3],
                              scale: [0.5, 2], zeroPoint: [2, -1], scaleShape: [2, 1])
        // w = s·(q − z): [0, 1, −1, 0, 2, 8]
        XCTAssertEqual(WeightEncoding.affine(a).decoded().floats, [0, 1, -1, 0, 2, 8])
        // 6 codes × 4 bits = 3 bytes + 2 scales × 4 + 2 zero points × 2.
        XCTAssertEqual(WeightEncoding.affine(a).storageBytes, 3 + 8 + 4)
    }

    func testAffinePerBlockDecodes() {
        // 1×4 weight, blocks of 2 along axis 1: scales [1, 10].
        let a = AffineWeights(shape: [1, 4], bits: 8, signed: false, q: [1, 2, 3, 4],
                              scale: [1, 10], zeroPoint: [0, 1], scaleShape: [1, 2])
        XCTAssertEqual(a.decoded().floats, [1, 2, 20, 30])
    }

    func testPaletteGroupsDecode() {
        // 4 channels × 2 weights, groups of 2 channels, 1-bit LUTs.
        let p = PaletteWeights(shape: [4, 2], bits: 1, indices: [0, 1, 1, 0, 0, 0, 1, 1],
                               lut: [[-1, 1], [10, 20]], axis: 0, groupSize: 2)
        XCTAssertEqual(p.decoded().floats, [-1, 1, 1, -1, 10, 10, 20, 20])
        XCTAssertEqual(WeightEncoding.palette(p).storageBytes, 1 + 16)
    }
}
