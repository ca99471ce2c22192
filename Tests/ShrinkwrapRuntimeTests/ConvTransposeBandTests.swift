import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// ConvTranspose in bands of input rows (`NNKernels.convTransposeBands`, taken when no two input rows
/// reach the same output row) gives the bits of the one-block path (one GEMM over the whole image, then
/// col2im), 1 and 2 threads, and the kernel through the registry agrees with a float64 reference.
final class ConvTransposeBandTests: XCTestCase {
    struct Case { var batch, channels, filters, group: Int; var input, kernel, strides, dilations, pads: [Int] }

    func geometry(_ k: Case) -> WindowGeometry {
        let r = k.input.count
        var out: [Int] = []
        for i in 0..<r {
            let extent: Int = (k.kernel[i] - 1) * k.dilations[i] + 1
            out.append(k.strides[i] * (k.input[i] - 1) + extent - 2 * k.pads[i])
        }
        return WindowGeometry(rank: r, input: WindowGeometry.promote(k.input, fill: 1), kernel: WindowGeometry.promote(k.kernel, fill: 1),
                              strides: WindowGeometry.promote(k.strides, fill: 1), dilations: WindowGeometry.promote(k.dilations, fill: 1),
                              padBegin: WindowGeometry.promote(k.pads, fill: 0), padEnd: WindowGeometry.promote(k.pads, fill: 0),
                              output: WindowGeometry.promote(out, fill: 1))
    }

    func testBandsGiveTheOneBlockBits() throws {
        let cases = [
            Case(batch: 1, channels: 24, filters: 24, group: 1, input: [37, 61], kernel: [2, 2], strides: [2, 2], dilations: [1, 1], pads: [0, 0]),
            Case(batch: 2, channels: 6, filters: 4, group: 2, input: [90, 50], kernel: [3, 3], strides: [3, 2], dilations: [1, 1], pads: [1, 1]),
            Case(batch: 1, channels: 5, filters: 3, group: 1, input: [70, 33], kernel: [2, 3], strides: [4, 1], dilations: [2, 2], pads: [0, 2]),
            Case(batch: 1, channels: 8, filters: 2, group: 1, input: [6, 500], kernel: [1, 4], strides: [1, 2], dilations: [1, 1], pads: [0, 1]),
        ]
        var rng = SplitMix(seed: 11)
        for (i, k) in cases.enumerated() {
            let geo = geometry(k), mg = k.filters, cg = k.channels / k.group, kc = geo.kernelCount
            let pIn = geo.inputCount, pOut = geo.outputCount, m = mg * k.group
            let x = (0..<(k.batch * k.channels * pIn)).map { _ in rng.nextFloat() - 0.5 }
            let w = (0..<(k.channels * mg * kc)).map { _ in rng.nextFloat() - 0.5 }
            let bias = (0..<(k.batch * m * pOut)).map { j in Float(j / pOut % m) * 0.25 - 1 }
            var reference = bias
            x.withUnsafeBufferPointer { xb in
                w.withUnsafeBufferPointer { wb in
                    reference.withUnsafeMutableBufferPointer { yb in
                        guard let xp = xb.baseAddress, let wp = wb.baseAddress, let yp = yb.baseAddress else { return }
                        var col = [Float](repeating: 0, count: mg * kc * pIn)
                        col.withUnsafeMutableBufferPointer { cb in
                            guard let cp = cb.baseAddress else { return }
                            for b in 0..<k.batch {
                                for g in 0..<k.group {
                                    GEMM.sgemm(transA: true, transB: false, m: mg * kc, n: pIn, k: cg, a: wp + g * cg * mg * kc, lda: mg * kc,
                                               b: xp + (b * k.channels + g * cg) * pIn, ldb: pIn, c: cp, ldc: pIn, threads: 1)
                                    NNKernels.col2im(col: cp, channels: mg, geo: geo, y: yp + (b * m + g * mg) * pOut, threads: 1)
                                }
                            }
                        }
                    }
                }
            }
            for threads in [1, 2] {
                var y = bias
                let taken = x.withUnsafeBufferPointer { xb in
                    w.withUnsafeBufferPointer { wb in
                        y.withUnsafeMutableBufferPointer { yb in
                            guard let xp = xb.baseAddress, let wp = wb.baseAddress, let yp = yb.baseAddress else { return false }
                            return NNKernels.convTransposeBands(x: xp, w: wp, y: yp, batch: k.batch, channels: k.channels, group: k.group,
                                                                filters: mg, geo: geo, threads: threads)
                        }
                    }
                }
                XCTAssertTrue(taken, "case \(i): the bands were not taken")
                let differ = zip(y, reference).filter { $0.bitPattern != $1.bitPattern }.count
                XCTAssertEqual(differ, 0, "case \(i), \(threads) threads: \(differ) of \(y.count) values differ")
            }
        }
    }

    /// Kernels taller than the stride overlap rows: the one-block path keeps them.
    func testOverlappingRowsAreNotBanded() {
        let k = Case(batch: 1, channels: 2, filters: 2, group: 1, input: [9, 9], kernel: [3, 3], strides: [2, 2], dilations: [1, 1], pads: [0, 0])
        let geo = geometry(k)
        var y = [Float](repeating: 0, count: 2 * geo.outputCount)
        let x = [Float](repeating: 1, count: 2 * geo.inputCount), w = [Float](repeating: 1, count: 2 * 2 * 9)
        let taken = y.withUnsafeMutableBufferPointer { yb in
            NNKernels.convTransposeBands(x: x, w: w, y: yb.baseAddress!, batch: 1, channels: 2, group: 1, filters: 2, geo: geo, threads: 1)
        }
        XCTAssertFalse(taken)
    }

    /// Through the registry (bias, 2 threads) against a float64 evaluation of the definition.
    func testKernelAgainstFloat64() throws {
        var rng = SplitMix(seed: 4)
        let x = Tensor((0..<(3 * 20 * 30)).map { _ in rng.nextFloat() - 0.5 }, shape: [1, 3, 20, 30])
        let w = Tensor((0..<(3 * 4 * 4)).map { _ in rng.nextFloat() - 0.5 }, shape: [3, 4, 2, 2])
        let b = Tensor([0.5, -0.25, 1, 0], shape: [4])
        let node = Node(name: "ct", opType: "ConvTranspose", inputs: ["x", "w", "b"], outputs: ["y"],
                        attributes: ["strides": .ints([2, 2]), "kernel_shape": .ints([2, 2])])
        let kernel = try XCTUnwrap(KernelRegistry.kernels["ConvTranspose"])
        let y = try XCTUnwrap(try kernel(KernelContext(node: node, inputs: [x, w, b], threads: 2)).first)
        XCTAssertEqual(y.shape, [1, 4, 40, 60])
        let xv = try XCTUnwrap(x.floats), wv = try XCTUnwrap(w.floats), yv = try XCTUnwrap(y.floats), bv = try XCTUnwrap(b.floats)
        var worst = 0.0
        for o in 0..<4 {
            for r in 0..<40 {
                for c in 0..<60 {
                    var s = Double(bv[o])
                    for i in 0..<3 { s += Double(xv[(i * 20 + r / 2) * 30 + c / 2]) * Double(wv[((i * 4 + o) * 2 + r % 2) * 2 + c % 2]) }
                    worst = max(worst, abs(s - Double(yv[(o * 40 + r) * 60 + c])))
                }
            }
        }
        XCTAssertLessThan(worst, 1e-5)
    }
}
