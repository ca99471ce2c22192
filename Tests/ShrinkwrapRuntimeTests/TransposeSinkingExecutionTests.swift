import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// The planner's layout step (`sinkTransposesForExecution`): the NHWC↔NCHW
/// pairs a TFLite import wraps around every Conv leave the graph, through
/// element-wise ops, Add, Pad and fan-out, and values keep their bits.
final class TransposeSinkingExecutionTests: XCTestCase {
    static let toNCHW: Attribute = .ints([0, 3, 1, 2])
    static let toNHWC: Attribute = .ints([0, 2, 3, 1])

    /// input (NHWC) → [T → Conv → T] → Relu → [T → Conv → T] + Pad(Relu) → Relu → output (NHWC),
    /// the way the TFLite importer writes a residual block with channel padding.
    static func block(shapes: Bool) -> Graph {
        var g = Graph(name: "nhwc")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(5), .fixed(4), .fixed(2)])]
        g.setConstant(Constant(name: "w1", tensor: Tensor((0..<(2 * 2 * 9)).map { Float($0 % 7) * 0.25 - 0.7 }, shape: [2, 2, 3, 3])))
        g.setConstant(Constant(name: "w2", tensor: Tensor((0..<(3 * 2 * 1)).map { Float($0) * 0.3 - 0.8 }, shape: [3, 2, 1, 1])))
        g.setConstant(Constant(name: "pads", tensor: Tensor(ints: [0, 0, 0, 0, 0, 0, 0, 1], shape: [8])))
        let conv: [String: Attribute] = ["pads": .ints([1, 1, 1, 1])]
        g.nodes = [
            Node(name: "t1", opType: "Transpose", inputs: ["x"], outputs: ["x_nchw"], attributes: ["perm": toNCHW]),
            Node(name: "c1", opType: "Conv", inputs: ["x_nchw", "w1"], outputs: ["c1_nchw"], attributes: conv),
            Node(name: "t2", opType: "Transpose", inputs: ["c1_nchw"], outputs: ["c1"], attributes: ["perm": toNHWC]),
            Node(name: "r1", opType: "Relu", inputs: ["c1"], outputs: ["a1"]),
            Node(name: "t3", opType: "Transpose", inputs: ["a1"], outputs: ["a1_nchw"], attributes: ["perm": toNCHW]),
            Node(name: "c2", opType: "Conv", inputs: ["a1_nchw", "w2"], outputs: ["c2_nchw"]),
            Node(name: "t4", opType: "Transpose", inputs: ["c2_nchw"], outputs: ["c2"], attributes: ["perm": toNHWC]),
            Node(name: "pad", opType: "Pad", inputs: ["a1", "pads"], outputs: ["a1_padded"]),
            Node(name: "add", opType: "Add", inputs: ["a1_padded", "c2"], outputs: ["s"]),
            Node(name: "r2", opType: "Relu", inputs: ["s"], outputs: ["y"]),
        ]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
        if shapes {
            for (v, s) in [("x_nchw", [1, 2, 5, 4]), ("c1_nchw", [1, 2, 5, 4]), ("c1", [1, 5, 4, 2]), ("a1", [1, 5, 4, 2]),
                           ("a1_nchw", [1, 2, 5, 4]), ("c2_nchw", [1, 3, 5, 4]), ("c2", [1, 5, 4, 3]), ("a1_padded", [1, 5, 4, 3]),
                           ("s", [1, 5, 4, 3])] {
                g.valueInfo[v] = ValueInfo(name: v, dtype: .float32, shape: s.map { .fixed($0) })
            }
        }
        return g
    }

    func testPairsLeaveWithAndWithoutShapes() throws {
        for shapes in [true, false] {
            let g = Self.block(shapes: shapes)
            let sunk = try LoweringPipeline([.sinkTransposesForExecution]).applied(to: g)
            // One Transpose in (the NHWC input), one out (the NHWC result); the two around c1/c2 and the
            // ones the Pad and Add would need are gone.
            XCTAssertEqual(sunk.nodes.filter { $0.opType == "Transpose" }.count, 2, "shapes known: \(shapes); \(sunk.nodes.map(\.opType))")
            XCTAssertEqual(sunk.nodes.last?.opType, "Transpose")
            let pad = try XCTUnwrap(sunk.nodes.first { $0.opType == "Pad" })
            XCTAssertEqual(sunk.constant(named: pad.inputs[1])?.encoding.decoded().ints, [0, 0, 0, 0, 0, 1, 0, 0],
                           "the channel padding moves to axis 1")
            // The exporters' pass does not move Transposes through Pads.
            let exported = try LoweringPipeline([.sinkTransposes]).applied(to: Self.block(shapes: true))
            XCTAssertGreaterThan(exported.nodes.filter { $0.opType == "Transpose" }.count, 2)
        }
    }

    func testInterpreterKeepsTheBits() throws {
        let x = Tensor((0..<40).map { Float(($0 * 37) % 23) * 0.1 - 1.1 }, shape: [1, 5, 4, 2])
        let g = Self.block(shapes: false)
        let plain = try Interpreter(graph: g, options: .init(threads: 1, optimize: false)).run(["x": x])
        for threads in [1, 2] {
            let fast = try Interpreter(graph: g, options: .init(threads: threads, optimize: true)).run(["x": x])
            XCTAssertEqual(fast["y"], plain["y"])
        }
        XCTAssertEqual(plain["y"]?.shape, [1, 5, 4, 3])
    }

    /// A Transpose whose result a Loop body captures is not dropped when it cancels.
    func testLoopCapturesKeepTheirValue() throws {
        var body = Graph(name: "body")
        body.inputs = [ValueInfo(name: "i", dtype: .int64, shape: []), ValueInfo(name: "c", dtype: .bool, shape: []),
                       ValueInfo(name: "acc", dtype: .float32, shape: nil)]
        body.nodes = [Node(name: "step", opType: "Add", inputs: ["acc", "x2"], outputs: ["acc2"]),
                      Node(name: "same", opType: "Identity", inputs: ["c"], outputs: ["c2"])]
        body.outputs = [ValueInfo(name: "c2", dtype: .bool, shape: nil), ValueInfo(name: "acc2", dtype: .float32, shape: nil)]
        var g = Graph(name: "captured")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(2), .fixed(3), .fixed(1)])]
        g.setConstant(Constant(name: "m", tensor: .scalar(int: 3)))
        g.nodes = [
            Node(name: "t", opType: "Transpose", inputs: ["x"], outputs: ["xt"], attributes: ["perm": Self.toNCHW]),
            Node(name: "back", opType: "Transpose", inputs: ["xt"], outputs: ["x2"], attributes: ["perm": Self.toNHWC]),
            Node(name: "neg", opType: "Neg", inputs: ["x2"], outputs: ["nx"]),
            Node(name: "loop", opType: "Loop", inputs: ["m", "", "x"], outputs: ["sum"], attributes: ["body": .graph(body)]),
        ]
        g.outputs = [ValueInfo(name: "sum", dtype: .float32, shape: nil), ValueInfo(name: "nx", dtype: .float32, shape: nil)]
        let x = Tensor([1, -2, 3, 4, 5, -6], shape: [1, 2, 3, 1])
        let plain = try Interpreter(graph: g, options: .init(threads: 1, optimize: false)).run(["x": x])
        let fast = try Interpreter(graph: g, options: .init(threads: 1, optimize: true)).run(["x": x])
        XCTAssertEqual(fast["sum"], plain["sum"])
        XCTAssertEqual(fast["nx"], plain["nx"])
        XCTAssertEqual(plain["sum"]?.floats, [4, -8, 12, 16, 20, -24])
        // The pair cancels for Neg; the Loop's capture still finds its value.
        let sunk = try LoweringPipeline([.sinkTransposesForExecution]).applied(to: g)
        XCTAssertTrue(sunk.nodes.contains { $0.outputs == ["x2"] }, "\(sunk.nodes.map { "\($0.opType) \($0.outputs)" })")
    }

    /// A Transpose read by two element-wise ops is split, one copy each, when that removes Transposes.
    func testFanOutIsSplitWhenThatPays() throws {
        var g = Graph(name: "fan")
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(2), .fixed(3), .fixed(3)])]
        g.nodes = [
            Node(name: "t", opType: "Transpose", inputs: ["x"], outputs: ["v"], attributes: ["perm": Self.toNHWC]),
            Node(name: "relu", opType: "Relu", inputs: ["v"], outputs: ["r"]),
            Node(name: "sig", opType: "Sigmoid", inputs: ["v"], outputs: ["s"]),
            Node(name: "b1", opType: "Transpose", inputs: ["r"], outputs: ["y1"], attributes: ["perm": Self.toNCHW]),
            Node(name: "b2", opType: "Transpose", inputs: ["s"], outputs: ["y2"], attributes: ["perm": Self.toNCHW]),
        ]
        g.outputs = [ValueInfo(name: "y1", dtype: .float32, shape: nil), ValueInfo(name: "y2", dtype: .float32, shape: nil)]
        let sunk = try LoweringPipeline([.sinkTransposesForExecution]).applied(to: g)
        XCTAssertEqual(sunk.nodes.filter { $0.opType == "Transpose" }.count, 0, "\(sunk.nodes.map(\.opType))")
        XCTAssertEqual(try LoweringPipeline([.sinkTransposes]).applied(to: g).nodes.filter { $0.opType == "Transpose" }.count, 3,
                       "the exporters' pass leaves a fan-out alone")
        let x = Tensor((0..<18).map { Float($0) * 0.37 - 3 }, shape: [1, 2, 3, 3])
        let plain = try Interpreter(graph: g, options: .init(threads: 1, optimize: false)).run(["x": x])
        let fast = try Interpreter(graph: g, options: .init(threads: 1, optimize: true)).run(["x": x])
        XCTAssertEqual(fast, plain)
    }
}
