import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// The planner's elementwise chains (`ElementwiseChain`): a run of elementwise nodes runs as one
/// node, block by block, and gives exactly the separate nodes' bits, for float32 and float16; inputs
/// that broadcast or are integers take the node-by-node path with the same result.
final class ElementwiseChainTests: XCTestCase {
    /// Runs `g` fused and unfused; returns both outputs and how many nodes the fused run observed.
    func both(_ g: Graph, _ feeds: [String: Tensor]) throws -> (Tensor?, Tensor?, Int) {
        var observed = 0
        let fused = try Interpreter(graph: g, options: .init(threads: 2)).run(feeds) { _, _ in observed += 1 }["y"]
        let exact = try Interpreter(graph: g, options: .init(threads: 2, optimize: false)).run(feeds)["y"]
        return (fused, exact, observed)
    }

    func graph(_ nodes: [Node], inputs: [(String, DType, [Int])], constants: [Constant]) -> Graph {
        Graph(inputs: inputs.map { ValueInfo(name: $0.0, dtype: $0.1, shape: $0.2.map { .fixed($0) }) },
              outputs: [ValueInfo(name: "y", dtype: inputs[0].1, shape: nil)], nodes: nodes, constants: constants)
    }

    func tensor(_ dtype: DType, _ shape: [Int], seed: UInt64, scale: Float = 6) -> Tensor {
        var rng = SplitMix(seed: seed)
        var v = (0..<shape.reduce(1, *)).map { _ in (rng.nextFloat() - 0.5) * scale }
        dtype.round(&v)
        return Tensor(dtype: dtype, shape: shape, storage: .float(v))
    }

    /// Every op a chain holds, in one long chain per dtype: each step reads the previous value and,
    /// for binary ops, the input x, a second input z or a scalar constant (on either side).
    func testEveryChainOpKeepsTheBits() throws {
        let shape = [2, 3, 37, 41]  // not a multiple of the block size
        for dtype in [DType.float32, .float16] {
            let consts = [Constant(name: "three", tensor: Tensor(dtype: dtype, shape: [], storage: .float([3]))),
                          Constant(name: "six", tensor: Tensor(dtype: dtype, shape: [1], storage: .float([6]))),
                          Constant(name: "zero", tensor: Tensor(dtype: dtype, shape: [], storage: .float([0]))),
                          Constant(name: "two", tensor: Tensor(dtype: dtype, shape: [], storage: .float([2]))),
                          Constant(name: "half", tensor: Tensor(dtype: dtype, shape: [1, 1, 1, 1], storage: .float([0.5]))),
                          Constant(name: "e3", tensor: Tensor(dtype: dtype, shape: [], storage: .float([3])))]
            // (op, second operand or nil, attributes); "·" marks the running value.
            let steps: [(String, [String], [String: Attribute])] = [
                ("Add", ["·", "three"], [:]), ("Clip", ["·", "zero", "six"], [:]), ("Mul", ["x", "·"], [:]), ("Div", ["·", "six"], [:]),
                ("Sub", ["z", "·"], [:]), ("Max", ["·", "x"], [:]), ("Min", ["·", "z"], [:]), ("Abs", ["·"], [:]),
                ("Pow", ["·", "two"], [:]), ("Sqrt", ["·"], [:]), ("Pow", ["·", "half"], [:]), ("Pow", ["·", "e3"], [:]),
                ("Neg", ["·"], [:]), ("Relu", ["·"], [:]), ("Add", ["·", "x"], [:]), ("LeakyRelu", ["·"], ["alpha": .float(0.3)]),
                ("Tanh", ["·"], [:]), ("Erf", ["·"], [:]), ("Sigmoid", ["·"], [:]), ("Reciprocal", ["·"], [:]),
                ("HardSigmoid", ["·"], ["alpha": .float(0.15), "beta": .float(0.45)]), ("HardSwish", ["·"], [:]),
                ("Exp", ["·"], [:]), ("Clip", ["·", "", "six"], [:]), ("Sub", ["three", "·"], [:]), ("Div", ["six", "·"], [:]),
                ("Max", ["zero", "·"], [:]), ("Mul", ["·", "·"], [:]),
            ]
            var nodes: [Node] = []
            var current = "x"
            for (k, (op, args, attrs)) in steps.enumerated() {
                let out = k == steps.count - 1 ? "y" : "v\(k)"
                nodes.append(Node(name: "n\(k)", opType: op, inputs: args.map { $0 == "·" ? current : $0 }, outputs: [out], attributes: attrs))
                current = out
            }
            let g = graph(nodes, inputs: [("x", dtype, shape), ("z", dtype, shape)], constants: consts)
            // Every SIMD level of CKernels' chain loops gives the separate nodes' bits.
            let saved = SIMDKernels.level
            defer { SIMDKernels.level = saved }
            for level in [SIMDKernels.portable, SIMDKernels.avx2, SIMDKernels.avx512] where level <= SIMDKernels.best {
                SIMDKernels.level = level
                let (fused, exact, observed) = try both(g, ["x": tensor(dtype, shape, seed: 1), "z": tensor(dtype, shape, seed: 2)])
                XCTAssertEqual(observed, 1, "\(dtype): one chain node")
                XCTAssertEqual(fused?.dtype, dtype)
                XCTAssertEqual(fused?.shape, shape)
                XCTAssertEqual(fused?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern), "\(dtype), level \(level)")
                XCTAssertTrue(exact?.floats?.contains { $0 != 0 && $0.isFinite } ?? false, "\(dtype): the chain computes something")
            }
        }
    }

    /// Operands that broadcast along one run of axes (a bias per channel, a row, a plane, one per
    /// batch item) are spread over each block; other broadcasts (two separate runs) run node by node.
    /// Every case against the separate nodes, bit for bit, with blocks that cut through the repeats.
    func testBroadcastingOperandsKeepTheBits() throws {
        let full = [2, 3, 37, 45]
        for shape in [[3, 1, 1], [45], [1, 37, 1], [37, 45], [2, 1, 1, 1], [1, 3, 37, 45], [3, 1, 45], [2, 1, 37, 1]] {
            let g = graph([Node(name: "add", opType: "Add", inputs: ["x", "z"], outputs: ["a"]),
                           Node(name: "tanh", opType: "Tanh", inputs: ["a"], outputs: ["t"]),
                           Node(name: "mul", opType: "Mul", inputs: ["z", "t"], outputs: ["y"])],
                          inputs: [("x", .float32, full), ("z", .float32, shape)], constants: [])
            let (fused, exact, observed) = try both(g, ["x": tensor(.float32, full, seed: 5), "z": tensor(.float32, shape, seed: 6)])
            XCTAssertEqual(observed, 1, "\(shape)")
            XCTAssertEqual(fused?.shape, full, "\(shape)")
            XCTAssertEqual(fused?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern), "\(shape)")
            // Which path ran: one run of broadcast axes is fused; [3, 1, 45] and [2, 1, 37, 1] are not.
            let chain = Node(name: "chain", opType: ElementwiseChain.opType, inputs: ["x", "z"], outputs: ["y"],
                             attributes: [ElementwiseChain.opsAttribute: .strings(["Add", "Tanh", "Mul"]),
                                          ElementwiseChain.operandsAttribute: .ints([0, 1, -1, 2, -1, -1, 1, 3, -1]),
                                          ElementwiseChain.parametersAttribute: .floats([Float](repeating: 0, count: 6))])
            let c = KernelContext(node: chain, inputs: [tensor(.float32, full, seed: 5), tensor(.float32, shape, seed: 6)], threads: 2)
            let ran = try ElementwiseChain.runFused(c, ElementwiseChain.program(c))
            XCTAssertEqual(ran == nil, [[3, 1, 45], [2, 1, 37, 1]].contains(shape), "\(shape)")
            XCTAssertEqual(ran?.floats?.map(\.bitPattern) ?? exact?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern), "\(shape)")
        }
        // The broadcast shape can also come from the smaller-looking input.
        let g = graph([Node(name: "sub", opType: "Sub", inputs: ["x", "z"], outputs: ["a"]),
                       Node(name: "relu", opType: "Relu", inputs: ["a"], outputs: ["y"])],
                      inputs: [("x", .float32, [5, 1]), ("z", .float32, [1, 7])], constants: [])
        let (fused, exact, _) = try both(g, ["x": tensor(.float32, [5, 1], seed: 7), "z": tensor(.float32, [1, 7], seed: 8)])
        XCTAssertEqual(fused?.shape, [5, 7])
        XCTAssertEqual(fused?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern))
    }

    /// A value the chain would hide but something else reads ends the chain there; a per-channel
    /// bias (broadcasting) and integer inputs run node by node, with the same results.
    func testChainBoundariesBroadcastsAndIntegers() throws {
        let shape = [1, 4, 5, 6]
        // x → Sigmoid → s; Mul(x, s) → m; Add(m, bias[4,1,1]) → y; s is also an output: no chain across s.
        let bias = Constant(name: "bias", tensor: Tensor([1, 2, 3, 4], shape: [4, 1, 1]))
        var g = graph([Node(name: "sig", opType: "Sigmoid", inputs: ["x"], outputs: ["s"]),
                       Node(name: "mul", opType: "Mul", inputs: ["x", "s"], outputs: ["m"]),
                       Node(name: "add", opType: "Add", inputs: ["m", "bias"], outputs: ["y"])],
                      inputs: [("x", .float32, shape)], constants: [bias])
        let x = tensor(.float32, shape, seed: 3)
        var (fused, exact, observed) = try both(g, ["x": x])
        XCTAssertEqual(observed, 1, "Sigmoid + Mul + broadcasting Add: one chain, run node by node")
        XCTAssertEqual(fused?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern))
        XCTAssertEqual(fused?.shape, shape)

        g.outputs.append(ValueInfo(name: "s", dtype: .float32, shape: nil))
        (fused, exact, observed) = try both(g, ["x": x])
        XCTAssertEqual(observed, 2, "s is a graph output: Sigmoid stays, Mul + Add chain")
        XCTAssertEqual(fused?.floats?.map(\.bitPattern), exact?.floats?.map(\.bitPattern))

        let ints = graph([Node(name: "a", opType: "Add", inputs: ["i", "one"], outputs: ["t"]),
                          Node(name: "m", opType: "Mul", inputs: ["t", "i"], outputs: ["u"]),
                          Node(name: "n", opType: "Neg", inputs: ["u"], outputs: ["y"])],
                         inputs: [("i", .int64, [3])], constants: [Constant(name: "one", tensor: Tensor(ints: [1], shape: []))])
        let (fi, ei, oi) = try both(ints, ["i": Tensor(ints: [2, -5, 7], shape: [3])])
        XCTAssertEqual(oi, 1)
        XCTAssertEqual(fi?.ints, [-6, -20, -56])
        XCTAssertEqual(fi?.ints, ei?.ints)
    }
}
