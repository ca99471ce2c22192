import XCTest
import ShrinkwrapIR
@testable import ShrinkwrapRuntime

/// The single-run plan `EWKit.plan` takes without building the general one: the same runs and offsets
/// wherever it applies, and nil wherever the general plan has more than one run.
final class FlatBroadcastPlanTests: XCTestCase {
    /// Every (start, length, offset0, offset1, offset2) a plan hands its loops, over the whole output.
    func spans(_ p: EWKit.Plan) -> [[Int]] {
        var out: [[Int]] = []
        EWKit.spans(p, 0..<p.count) { out.append([$0, $1, $2, $3, $4]) }
        return out
    }

    func testFlatPlansMatchTheGeneralPlan() throws {
        let flat: [[[Int]]] = [
            [[2, 3], [2, 3]], [[2, 3], [1]], [[1], [2, 3]], [[2, 3], []], [[], [4]], [[1, 1], [1]], [[1], [1, 1]],
            [[5], [5], [1]], [[1], [3, 1, 2], [3, 1, 2]], [[7]], [[1, 4], [1, 4], [1, 1]], [[], []],
        ]
        for shapes in flat {
            let p = try XCTUnwrap(EWKit.flatPlan(shapes), "\(shapes)")
            let out = try XCTUnwrap(Broadcast.shape(shapes))
            let general = EWKit.makePlan(out: out, count: out.reduce(1, *), shapes)
            XCTAssertEqual(p.shape, general.shape, "\(shapes)")
            XCTAssertEqual(p.count, general.count, "\(shapes)")
            XCTAssertEqual(spans(p), spans(general), "\(shapes)")
            // Any part of the output gives the same runs as the general plan's.
            var a: [[Int]] = [], b: [[Int]] = []
            EWKit.spans(p, 1..<p.count) { a.append([$0, $1, $2, $3, $4]) }
            EWKit.spans(general, 1..<general.count) { b.append([$0, $1, $2, $3, $4]) }
            XCTAssertEqual(a, b, "\(shapes) from 1")
        }
        // Real broadcasting, a higher-rank single element, incompatible and empty shapes: the general path.
        for shapes: [[Int]] in [[[2, 3], [3]], [[2, 1], [1, 3]], [[3], [1, 1]], [[2, 3], [2]], [[0, 3], [0, 3]], [[2], [3]]] {
            XCTAssertNil(EWKit.flatPlan(shapes), "\(shapes)")
        }
    }

    func testAddAndWhereGiveTheBroadcastResults() throws {
        let a = Tensor([1, 2, 3, 4, 5, 6], shape: [2, 3])
        for (b, want) in [(Tensor([10], shape: [1]), [Float](arrayLiteral: 11, 12, 13, 14, 15, 16)),
                          (Tensor([10], shape: [1, 1, 1]), [11, 12, 13, 14, 15, 16]),
                          (Tensor([10, 20, 30], shape: [3]), [11, 22, 33, 14, 25, 36])] {
            let y = try ElementwiseKernels.add(KernelContext(node: Node(name: "a", opType: "Add", inputs: ["a", "b"], outputs: ["y"]),
                                                             inputs: [a, b]))[0]
            XCTAssertEqual(y.floats, want)
            XCTAssertEqual(y.shape, b.rank > 2 ? [1, 2, 3] : [2, 3])
            let z = try ElementwiseKernels.add(KernelContext(node: Node(name: "a", opType: "Add", inputs: ["b", "a"], outputs: ["y"]),
                                                             inputs: [b, a]))[0]
            XCTAssertEqual(z, y)
        }
    }
}
