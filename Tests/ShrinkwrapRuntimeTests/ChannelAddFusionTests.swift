import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// A Conv whose output only a per-channel constant Add reads — paddle2onnx's bias, Conv (no bias) → Add
/// [1, C, 1, 1] — takes the constant as its epilogue shift (`fuseChannelAdds`), so the activations after it
/// run in the kernel too: the Add's bits on every Conv path, 1 and 2 threads; constants that vary along
/// another axis, or that widen the output, stay an Add.
final class ChannelAddFusionTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    func random(_ n: Int, _ rng: inout SplitMix) -> [Float] { (0..<n).map { _ in rng.nextFloat() - 0.5 } }

    /// Conv (bias or not) → Add(·, k of `kShape`) → HardSigmoid → Mul (the conv output times it, a
    /// spelled-out hard swish PP-LCNet writes).
    func graph(channels c: Int, filters m: Int, group: Int, spatial: [Int], kernel: [Int], bias: Bool,
               kShape: [Int], kFirst: Bool, seed: UInt64) -> Graph {
        var rng = SplitMix(seed: seed)
        var consts = [Constant(name: "W", tensor: Tensor(random(m * c / group * kernel.reduce(1, *), &rng).map { $0 * 2 },
                                                         shape: [m, c / group] + kernel)),
                      Constant(name: "k", tensor: Tensor(random(kShape.reduce(1, *), &rng).map { $0 * 3 }, shape: kShape))]
        if bias { consts.append(Constant(name: "B", tensor: Tensor(random(m, &rng), shape: [m]))) }
        let attributes: [String: Attribute] = ["group": .int(group),
                                               "pads": .ints([Int](repeating: kernel[0] / 2, count: 2 * kernel.count))]
        let nodes = [Node(name: "conv", opType: "Conv", inputs: bias ? ["x", "W", "B"] : ["x", "W"], outputs: ["c"],
                          attributes: attributes),
                     Node(name: "bias", opType: "Add", inputs: kFirst ? ["k", "c"] : ["c", "k"], outputs: ["a"]),
                     Node(name: "gate", opType: "HardSigmoid", inputs: ["a"], outputs: ["g"],
                          attributes: ["alpha": .float(0.2), "beta": .float(0.5)]),
                     Node(name: "swish", opType: "Mul", inputs: ["a", "g"], outputs: ["y"])]
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: ([1, c] + spatial).map(Dim.fixed))],
                     outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
    }

    func run(_ g: Graph, _ x: Tensor, optimize: Bool, threads: Int) throws -> (bits: [UInt32], nodes: [String]) {
        var ran: [String] = []
        let y = try Interpreter(graph: g, options: .init(threads: threads, optimize: optimize))
            .run(["x": x], observe: { node, _ in ran.append(node.opType) })
        return (try XCTUnwrap(y["y"]?.floats).map(\.bitPattern), ran)
    }

    func testChannelConstantRunsInTheConvWithTheAddsBits() throws {
        struct Shape { var c, m, group: Int; var spatial, kernel: [Int] }
        let shapes = [
            Shape(c: 12, m: 40, group: 1, spatial: [13, 17], kernel: [3, 3]),   // direct kernel (or Winograd)
            Shape(c: 24, m: 20, group: 1, spatial: [9, 50], kernel: [1, 1]),    // pointwise kernel
            Shape(c: 32, m: 32, group: 32, spatial: [15, 19], kernel: [5, 5]),  // depthwise, channels in lanes
            Shape(c: 4, m: 4, group: 4, spatial: [11, 9], kernel: [3, 3]),      // depthwise plane kernel
            Shape(c: 6, m: 10, group: 2, spatial: [30], kernel: [5]),           // grouped 1-D
        ]
        var rng = SplitMix(seed: 5)
        for level in Set([SIMDKernels.best, SIMDKernels.avx2].filter { $0 <= SIMDKernels.best }) {
            SIMDKernels.level = level
            for (k, s) in shapes.enumerated() {
                var v = random(s.c * s.spatial.reduce(1, *), &rng).map { $0 * 8 }
                v[0] = .nan; v[1] = .infinity; v[2] = -.infinity; v[3] = -0.0
                let x = Tensor(v, shape: [1, s.c] + s.spatial)
                let ones = [Int](repeating: 1, count: s.spatial.count)
                for (kShape, bias) in [([1, s.m] + ones, false), ([s.m] + ones, true), ([1], false), ([], true)] {
                    let g = graph(channels: s.c, filters: s.m, group: s.group, spatial: s.spatial, kernel: s.kernel,
                                  bias: bias, kShape: kShape, kFirst: k % 2 == 1, seed: UInt64(k + 1))
                    let plain = try run(g, x, optimize: false, threads: 1)
                    XCTAssertEqual(plain.nodes, ["Conv", "Add", "HardSigmoid", "Mul"])
                    var planner = ExecutionPlanner(graph: g, threads: 1)
                    try planner.run(optimize: true)
                    let conv = planner.graph.nodes.first { $0.opType == "Conv" }
                    XCTAssertNotNil(conv?.attributes[NNKernels.fusedShiftAttribute], "shape \(k), k \(kShape): no shift")
                    XCTAssertNil(conv?.attributes[NNKernels.fusedResidualAttribute], "shape \(k), k \(kShape): a residual")
                    for threads in [1, 2] {
                        let fused = try run(g, x, optimize: true, threads: threads)
                        let label = "shape \(k), k \(kShape), bias \(bias), level \(level), \(threads) threads"
                        XCTAssertFalse(fused.nodes.contains("Add"), "\(label): the Add still runs: \(fused.nodes)")
                        let differ = zip(fused.bits, plain.bits).filter { $0 != $1 }.count
                        XCTAssertTrue(fused.bits.count == plain.bits.count && differ == 0, "\(label): \(differ) values differ")
                    }
                }
            }
        }
    }

    /// A constant along a spatial axis, one that adds a leading axis, or a value rather than a constant:
    /// no shift (the Add keeps its bits wherever it runs).
    func testOtherOperandsAreNotAShift() throws {
        let x = Tensor((0..<(8 * 36)).map { Float($0 % 13) - 6 }, shape: [1, 8, 6, 6])
        for kShape in [[1, 1, 6, 1], [1, 1, 1, 6], [2, 1, 8, 1, 1], [6, 1]] {
            let g = graph(channels: 8, filters: 8, group: 1, spatial: [6, 6], kernel: [3, 3], bias: false, kShape: kShape,
                          kFirst: false, seed: 3)
            var planner = ExecutionPlanner(graph: g, threads: 1)
            planner.fuseChannelAdds()
            XCTAssertTrue(planner.graph.nodes.contains { $0.opType == "Add" }, "\(kShape) became a shift")
            let plain = try run(g, x, optimize: false, threads: 1), fast = try run(g, x, optimize: true, threads: 1)
            XCTAssertTrue(fast.bits == plain.bits, "\(kShape): values changed")
        }
        XCTAssertNil(ExecutionPlanner.channelValues(shape: [1, 8, 1, 1], values: [Float](repeating: 0, count: 8), outputRank: 4, channels: 4))
        XCTAssertEqual(ExecutionPlanner.channelValues(shape: [], values: [2], outputRank: 3, channels: 3), [2, 2, 2])
    }
}
