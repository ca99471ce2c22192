import ShrinkwrapCompression
import ShrinkwrapIR
import XCTest

/// Per-channel scales on the last axis (a [in, out] MatMul weight) take row-wise
/// loops in the linear codec and in `AffineWeights.decoded` (`BlockRuns.lastAxisChannels`);
/// the same weight transposed, channels on axis 0, takes the run-by-run loops.
/// Both must give the same codes, scales and values, bit for bit, and the tiled
/// 2-D transpose must map one onto the other exactly.
final class LastAxisChannelTests: XCTestCase {
    func weight(rows: Int, columns: Int) -> [Float] {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        return (0..<rows * columns).map { i in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            let x = Float(state % 20001) / 10000 - 1
            return i % columns == 5 ? 0.25 : x * Float(1 + i % columns)  // column 5 is constant
        }
    }

    func testRowLoopsMatchRunLoops() throws {
        let (rows, columns) = (37, 53)  // not multiples of the 32-element transpose tile
        let w = weight(rows: rows, columns: columns)
        let wt = try WeightEncoding.dense(Tensor(w, shape: [rows, columns])).transposed([1, 0])
        guard case .dense(let t) = wt, let transposed = t.floats else { return XCTFail("transpose") }
        XCTAssertEqual(transposed[1 * rows + 2], w[2 * columns + 1])
        XCTAssertNotNil(BlockRuns(shape: [rows, columns], blockShape: [rows, 1]).lastAxisChannels)
        XCTAssertNil(BlockRuns(shape: [columns, rows], blockShape: [1, rows]).lastAxisChannels)
        let options = [CodecOptions(bits: 8, granularity: .perChannel), CodecOptions(bits: 4, granularity: .perChannel, symmetric: true),
                       CodecOptions(bits: 3, granularity: .perChannel, exactZero: true)]
        for o in options {
            let fast = try WeightCodecs.encode(WeightInput(name: "w", values: w, shape: [rows, columns], outputAxis: 1, inputAxis: 0),
                                               with: LinearCodec(), o).encoding
            let runs = try WeightCodecs.encode(WeightInput(name: "wt", values: transposed, shape: [columns, rows], outputAxis: 0, inputAxis: 1),
                                               with: LinearCodec(), o).encoding
            guard case .affine(let a) = fast else { return XCTFail("not affine") }
            XCTAssertEqual(a.scale.count, columns)
            XCTAssertEqual(try runs.transposed([1, 0]), fast, "\(o.bits)-bit")
            let d1 = fast.decoded().floats ?? [], d2 = runs.decoded().reshaped([columns, rows])
            guard case .dense(let back) = try WeightEncoding.dense(d2).transposed([1, 0]) else { return XCTFail("transpose") }
            XCTAssertEqual(d1.map(\.bitPattern), (back.floats ?? []).map(\.bitPattern), "\(o.bits)-bit decoded")
            if !o.exactZero { XCTAssertEqual(d1[5], 0.25) }  // a constant channel is exact (exact-zero widens it to 0)
        }
    }
}
