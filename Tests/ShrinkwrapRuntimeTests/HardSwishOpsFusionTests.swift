import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// paddle2onnx's hardswish, Add(c, 3) → Clip(0, 6) → Mul(c, ·) → Div(6) after a Conv c, runs in the Conv's
/// epilogue (`FusedActivation.hardSwishOps`): the same bits as the four nodes on every Conv path (the
/// direct, pointwise and depthwise-lanes kernels' lane epilogue, the depthwise plane kernel, im2col + GEMM
/// below AVX-512, 3-D convs), with and without a BatchNormalization before it, with PP-OCR v4's scalar
/// scale and bias around it (fused as `FusedActivation.arithmetic`), 1 and 2 threads; and nothing is
/// fused when the pattern differs.
final class HardSwishOpsFusionTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    func random(_ n: Int, _ rng: inout SplitMix) -> [Float] { (0..<n).map { _ in rng.nextFloat() - 0.5 } }

    /// Conv (+ BatchNormalization) → Add 3 → Clip 0…6 → Mul → Div 6, with the constants and operand
    /// orders given.
    func graph(channels c: Int, filters m: Int, group: Int, spatial: [Int], kernel: [Int], strides: [Int]? = nil,
               batchNorm: Bool, three: Float = 3, six: Float = 6, swapped: Bool = false, affine: Bool = false,
               seed: UInt64) -> Graph {
        var rng = SplitMix(seed: seed)
        var consts = [Constant(name: "W", tensor: Tensor(random(m * c / group * kernel.reduce(1, *), &rng).map { $0 * 2 },
                                                         shape: [m, c / group] + kernel)),
                      Constant(name: "B", tensor: Tensor(random(m, &rng), shape: [m])),
                      Constant(name: "three", tensor: Tensor([three], shape: [1])),
                      Constant(name: "zero", tensor: Tensor([0], shape: [])),
                      Constant(name: "six", tensor: Tensor([6], shape: [])),
                      Constant(name: "divisor", tensor: Tensor([six], shape: []))]
        var attributes: [String: Attribute] = ["group": .int(group),
                                               "pads": .ints([Int](repeating: kernel[0] / 2, count: 2 * kernel.count))]
        if let strides { attributes["strides"] = .ints(strides) }
        var nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W", "B"], outputs: ["c0"], attributes: attributes)]
        var value = "c0"
        if batchNorm {
            consts += [Constant(name: "s", tensor: Tensor(random(m, &rng).map { $0 + 1 }, shape: [m])),
                       Constant(name: "b", tensor: Tensor(random(m, &rng), shape: [m])),
                       Constant(name: "mu", tensor: Tensor(random(m, &rng), shape: [m])),
                       Constant(name: "var", tensor: Tensor(random(m, &rng).map { $0 + 1 }, shape: [m]))]
            nodes.append(Node(name: "bn", opType: "BatchNormalization", inputs: ["c0", "s", "b", "mu", "var"], outputs: ["c"]))
            value = "c"
        }
        if affine {
            // PP-OCR v4's LearnableAffineBlock before and after the activation: scalar scale, then bias.
            consts += [Constant(name: "k1", tensor: Tensor([1.375], shape: [1])), Constant(name: "b1", tensor: Tensor([-0.25], shape: [1])),
                       Constant(name: "k2", tensor: Tensor([0.8125], shape: [1])), Constant(name: "b2", tensor: Tensor([0.0625], shape: [1]))]
            nodes += [Node(name: "scale1", opType: "Mul", inputs: [value, "k1"], outputs: ["l1"]),
                      Node(name: "bias1", opType: "Add", inputs: ["b1", "l1"], outputs: ["l2"])]
            value = "l2"
        }
        let last = affine ? "h" : "y"
        nodes += [Node(name: "add", opType: "Add", inputs: swapped ? ["three", value] : [value, "three"], outputs: ["a"]),
                  Node(name: "clip", opType: "Clip", inputs: ["a", "zero", "six"], outputs: ["k"]),
                  Node(name: "mul", opType: "Mul", inputs: swapped ? ["k", value] : [value, "k"], outputs: ["p"]),
                  Node(name: "div", opType: "Div", inputs: ["p", "divisor"], outputs: [last])]
        if affine {
            nodes += [Node(name: "scale2", opType: "Mul", inputs: ["k2", "h"], outputs: ["l3"]),
                      Node(name: "bias2", opType: "Add", inputs: ["l3", "b2"], outputs: ["y"])]
        }
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: ([1, c] + spatial).map(Dim.fixed))],
                     outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
    }

    func run(_ g: Graph, _ x: Tensor, optimize: Bool, threads: Int) throws -> (bits: [UInt32], nodes: [String]) {
        var ran: [String] = []
        let y = try Interpreter(graph: g, options: .init(threads: threads, optimize: optimize))
            .run(["x": x], observe: { node, _ in ran.append(node.opType) })
        return (try XCTUnwrap(y["y"]?.floats).map(\.bitPattern), ran)
    }

    func testFusedGivesTheFourNodesBits() throws {
        struct Shape { var c, m, group: Int; var spatial, kernel: [Int]; var strides: [Int]? = nil }
        let shapes = [
            Shape(c: 12, m: 40, group: 1, spatial: [13, 17], kernel: [3, 3]),            // direct kernel
            Shape(c: 24, m: 20, group: 1, spatial: [9, 50], kernel: [1, 1]),             // pointwise kernel
            Shape(c: 32, m: 32, group: 32, spatial: [15, 19], kernel: [3, 3]),           // depthwise, channels in lanes
            Shape(c: 4, m: 4, group: 4, spatial: [11, 9], kernel: [5, 5], strides: [2, 1]),  // depthwise plane kernel
            Shape(c: 6, m: 10, group: 2, spatial: [30], kernel: [5]),                    // grouped 1-D
            Shape(c: 3, m: 8, group: 1, spatial: [5, 6, 7], kernel: [3, 3, 3]),          // 3-D
        ]
        var rng = SplitMix(seed: 9)
        for level in Set([SIMDKernels.best, SIMDKernels.avx2].filter { $0 <= SIMDKernels.best }) {
            SIMDKernels.level = level
            for (k, s) in shapes.enumerated() {
                // Values around the clip's corners (x + 3 near 0 and 6), and specials.
                var v = random(s.c * s.spatial.reduce(1, *), &rng).map { $0 * 14 }
                v[0] = .nan; v[1] = .infinity; v[2] = -.infinity; v[3] = -0.0
                let x = Tensor(v, shape: [1, s.c] + s.spatial)
                for (batchNorm, affine) in [(false, false), (true, false), (true, true)] {
                    let g = graph(channels: s.c, filters: s.m, group: s.group, spatial: s.spatial, kernel: s.kernel,
                                  strides: s.strides, batchNorm: batchNorm, swapped: k % 2 == 1, affine: affine, seed: UInt64(k + 1))
                    let plain = try run(g, x, optimize: false, threads: 1)
                    for threads in [1, 2] {
                        let fused = try run(g, x, optimize: true, threads: threads)
                        let label = "shape \(k), BN \(batchNorm), affine \(affine), level \(level), \(threads) threads"
                        XCTAssertEqual(fused.nodes, ["Conv"], label)
                        let differ = zip(fused.bits, plain.bits).filter { $0 != $1 }.count
                        XCTAssertTrue(fused.bits.count == plain.bits.count && differ == 0, "\(label): \(differ) values differ")
                    }
                }
            }
        }
    }

    /// Another constant, or a value the rest of the graph reads too: the nodes stay.
    func testOtherPatternsAreNotFused() throws {
        let x = Tensor((0..<(8 * 36)).map { Float($0 % 13) - 6 }, shape: [1, 8, 6, 6])
        for g in [graph(channels: 8, filters: 8, group: 1, spatial: [6, 6], kernel: [3, 3], batchNorm: false, three: 2, seed: 1),
                  graph(channels: 8, filters: 8, group: 1, spatial: [6, 6], kernel: [3, 3], batchNorm: false, six: 5, seed: 1)] {
            let plain = try run(g, x, optimize: false, threads: 1), fast = try run(g, x, optimize: true, threads: 1)
            XCTAssertTrue(fast.bits == plain.bits, "the unfused nodes keep their bits")
            XCTAssertFalse(fast.nodes == ["Conv"], "fused although the constants differ: \(fast.nodes)")
        }
        var shared = graph(channels: 8, filters: 8, group: 1, spatial: [6, 6], kernel: [3, 3], batchNorm: false, seed: 1)
        shared.outputs.append(ValueInfo(name: "k", dtype: .float32, shape: nil))
        let fast = try run(shared, x, optimize: true, threads: 1)
        XCTAssertTrue(fast.nodes.contains("Div") || fast.nodes.contains("ElementwiseChain"), "the clip is a graph output: \(fast.nodes)")
    }
}
