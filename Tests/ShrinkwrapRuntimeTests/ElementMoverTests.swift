import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import XCTest

/// The element mover's shortcuts against element-by-element references: size-1 axes dropped and
/// contiguous runs merged (`Mover.simplified`), rows of fills + one copy (Pad), Concat part by part
/// with one-element blocks, Transpose of contiguous k-element items — on the shapes basic-pitch
/// has ([1, 172, 309, 1] planes, [1, 172, 309, 2] pairs), narrow Float transposes (RGB NHWC ↔ NCHW),
/// 1 and 2 threads, large enough to split.
final class ElementMoverTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    private func run1(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:], threads: Int) throws -> Tensor {
        let node = Node(name: "n", opType: op, inputs: inputs.indices.map { "i\($0)" }, outputs: ["o"], attributes: attrs)
        let k = try XCTUnwrap(KernelRegistry.kernels[op])
        return try XCTUnwrap(try k(KernelContext(node: node, inputs: inputs, threads: threads)).first)
    }

    private func iota(_ s: [Int]) -> Tensor { Tensor((0..<s.reduce(1, *)).map { Float($0) * 0.5 - 7 }, shape: s) }

    /// The multi-index of flat position `o` in `shape`.
    private func index(_ o: Int, _ shape: [Int]) -> [Int] {
        var rest = o, ix = [Int](repeating: 0, count: shape.count)
        for j in stride(from: shape.count - 1, through: 0, by: -1) { ix[j] = rest % shape[j]; rest /= shape[j] }
        return ix
    }

    private func flat(_ ix: [Int], _ shape: [Int]) -> Int { zip(ix, stridesOf(shape)).reduce(0) { $0 + $1.0 * $1.1 } }

    func testTransposeOfContiguousItems() throws {
        for (shape, perm) in [([1, 172, 309, 2], [0, 2, 1, 3]), ([3, 40, 70, 4], [0, 2, 1, 3]), ([50, 90, 3], [1, 0, 2]),
                              ([2, 5, 7, 3], [1, 0, 2, 3]), ([6, 5, 7, 3], [0, 2, 1, 3]),
                              // Narrow matrices (CKernels' sk_transpose_narrow): RGB NHWC ↔ NCHW, 2 and 4 wide, batched.
                              ([1, 256, 130, 3], [0, 3, 1, 2]), ([1, 3, 64, 70], [0, 2, 3, 1]), ([3, 100, 2], [0, 2, 1]),
                              ([2, 4, 9000], [0, 2, 1]), ([5, 7, 4], [0, 2, 1])] {
            let x = iota(shape), v = try XCTUnwrap(x.floats), outShape = perm.map { shape[$0] }
            let expected = (0..<v.count).map { o -> Float in
                let oi = index(o, outShape)
                var ii = [Int](repeating: 0, count: shape.count)
                for (j, p) in perm.enumerated() { ii[p] = oi[j] }
                return v[flat(ii, shape)]
            }
            for level in Set([SIMDKernels.best, SIMDKernels.avx2, SIMDKernels.portable].filter { $0 <= SIMDKernels.best }) {
                SIMDKernels.level = level
                for threads in [1, 2] {
                    let y = try run1("Transpose", [x], ["perm": .ints(perm)], threads: threads)
                    XCTAssertEqual(y.shape, outShape)
                    XCTAssertTrue(y.floats == expected, "\(shape) perm \(perm), level \(level), \(threads) threads")
                }
            }
            SIMDKernels.level = SIMDKernels.best
        }
    }

    func testPadRowsAndUnitAxes() throws {
        for (shape, pads) in [([1, 172, 252, 1], [0, 0, 20, 0, 0, 0, 37, 0]), ([1, 3, 1, 500], [0, 1, 0, 7, 0, 2, 0, 0]),
                              ([2, 1, 130, 130], [0, 0, 1, 1, 0, 0, 1, 1]), ([1, 1, 43844], [0, 0, 128, 0, 0, 128])] {
            let x = iota(shape), v = try XCTUnwrap(x.floats), r = shape.count
            let outShape = (0..<r).map { shape[$0] + pads[$0] + pads[r + $0] }
            for mode in ["constant", "reflect", "edge"] {
                let expected = (0..<outShape.reduce(1, *)).map { o -> Float in
                    var ii = index(o, outShape)
                    for a in 0..<r {
                        var i = ii[a] - pads[a]
                        let d = shape[a]
                        if i < 0 || i >= d {
                            switch mode {
                            case "edge": i = i < 0 ? 0 : d - 1
                            case "reflect": i = d == 1 ? 0 : (i < 0 ? -i : 2 * (d - 1) - i)
                            default: return 1.5  // the constant
                            }
                        }
                        ii[a] = i
                    }
                    return v[flat(ii, shape)]
                }
                for threads in [1, 2] {
                    var inputs: [Tensor?] = [x, Tensor(ints: pads.map(Int64.init), shape: [pads.count])]
                    if mode == "constant" { inputs.append(Tensor([1.5], shape: [])) }
                    let y = try run1("Pad", inputs, ["mode": .string(mode)], threads: threads)
                    XCTAssertEqual(y.shape, outShape)
                    XCTAssertTrue(y.floats == expected, "\(shape) pads \(pads) \(mode), \(threads) threads")
                }
            }
        }
    }

    func testSliceMergesContiguousRuns() throws {
        let x = iota([1, 172, 324, 2]), v = try XCTUnwrap(x.floats)
        for (start, end, step) in [(15, 324, 1), (0, 309, 1), (300, 3, -2), (1, 324, 5)] {
            let count = step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step
            let outShape = [1, 172, count, 2]
            let expected = (0..<outShape.reduce(1, *)).map { o -> Float in
                var ii = index(o, outShape)
                ii[2] = start + ii[2] * step
                return v[flat(ii, [1, 172, 324, 2])]
            }
            for threads in [1, 2] {
                let y = try run1("Slice", [x, Tensor(ints: [Int64(start)], shape: [1]), Tensor(ints: [Int64(end)], shape: [1]),
                                           Tensor(ints: [2], shape: [1]), Tensor(ints: [Int64(step)], shape: [1])], threads: threads)
                XCTAssertEqual(y.shape, outShape)
                XCTAssertTrue(y.floats == expected, "slice \(start)..<\(end) step \(step), \(threads) threads")
            }
        }
    }

    func testConcatPartByPart() throws {
        // Eight [1, 172, 309, 1] planes along the last axis (one element per block), and mixed blocks with an empty part.
        let planes = (0..<8).map { k in Tensor((0..<(172 * 309)).map { Float($0 * 8 + k) }, shape: [1, 172, 309, 1]) }
        let expected = (0..<(172 * 309 * 8)).map(Float.init)
        let mixed = [iota([2, 3, 40, 50]), Tensor.zeros([2, 0, 40, 50]), iota([2, 5, 40, 50]).reshaped([2, 5, 40, 50])]
        let mixedShape = [2, 8, 40, 50]
        let mixedExpected = (0..<mixedShape.reduce(1, *)).map { o -> Float in
            var ii = index(o, mixedShape)
            let part = ii[1] < 3 ? 0 : 2
            if part == 2 { ii[1] -= 3 }
            return mixed[part].floats?[flat(ii, mixed[part].shape)] ?? .nan
        }
        for threads in [1, 2] {
            let y = try run1("Concat", planes, ["axis": .int(3)], threads: threads)
            XCTAssertEqual(y.shape, [1, 172, 309, 8])
            XCTAssertTrue(y.floats == expected, "planes, \(threads) threads")
            let m = try run1("Concat", mixed, ["axis": .int(1)], threads: threads)
            XCTAssertEqual(m.shape, mixedShape)
            XCTAssertTrue(m.floats == mixedExpected, "mixed, \(threads) threads")
        }
    }

    func testSimplifiedTables() {
        let fill = ShapeKernels.Mover.fillMark
        // Size-1 axes go, their entry joining the first remaining table; a run merges with an axis stepping by its length.
        let a = ShapeKernels.Mover.simplified(outShape: [1, 3, 1, 4], tables: [[100], [0, 4, 8], [1000], [0, 1, 2, 3]])
        XCTAssertEqual(a.shape, [12])
        XCTAssertEqual(a.tables, [Array(1100..<1112)])
        // A fill in the outer table or a gap keeps the axes apart.
        let b = ShapeKernels.Mover.simplified(outShape: [3, 4], tables: [[0, fill, 8], [0, 1, 2, 3]])
        XCTAssertEqual(b.shape, [3, 4])
        let c = ShapeKernels.Mover.simplified(outShape: [3, 4], tables: [[0, 5, 10], [0, 1, 2, 3]])
        XCTAssertEqual(c.shape, [3, 4])
        // Every axis of size 1: one element.
        let d = ShapeKernels.Mover.simplified(outShape: [1, 1], tables: [[3], [4]])
        XCTAssertEqual(d.shape, [1]); XCTAssertEqual(d.tables, [[7]])
        // Runs longer than 2^16 stay split (their table would be as long).
        let e = ShapeKernels.Mover.simplified(outShape: [300, 300], tables: [(0..<300).map { $0 * 300 }, Array(0..<300)])
        XCTAssertEqual(e.shape, [300, 300])
    }
}
