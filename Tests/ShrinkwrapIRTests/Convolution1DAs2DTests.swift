@testable import ShrinkwrapIR
import XCTest

/// The 1-D-as-2-D pass on small graphs (the interpreter comparison is in
/// ShrinkwrapRuntimeTests/LoweringPassNumericsTests).
final class Convolution1DAs2DTests: XCTestCase {
    /// x [1, 2, 8] → Conv (k 3, pads 1) → Relu → Conv (k 1) → y, annotated.
    func chain() -> Graph {
        var g = Graph()
        g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [1, 2, 8].map { .fixed($0) })]
        g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: [1, 3, 8].map { .fixed($0) })]
        g.nodes = [
            Node(name: "c1", opType: "Conv", inputs: ["x", "w1"], outputs: ["a"], attributes: ["kernel_shape": .ints([3]), "pads": .ints([1, 1])]),
            Node(name: "relu", opType: "Relu", inputs: ["a"], outputs: ["r"]),
            Node(name: "c2", opType: "Conv", inputs: ["r", "w2"], outputs: ["y"], attributes: ["kernel_shape": .ints([1])]),
        ]
        g.setConstant(Constant(name: "w1", tensor: Tensor([Float](repeating: 0.5, count: 12), shape: [2, 2, 3])))
        g.setConstant(Constant(name: "w2", tensor: Tensor([Float](repeating: 1, count: 6), shape: [3, 2, 1])))
        for v in ["a", "r"] { g.valueInfo[v] = ValueInfo(name: v, dtype: .float32, shape: [1, 2, 8].map { .fixed($0) }) }
        return g
    }

    func testChainBecomes2DWithReshapesOnlyAtTheEnds() throws {
        var g = LoweringGraph(chain())
        try LoweringPass.convolution1DAs2D.run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["Reshape", "Conv", "Relu", "Conv", "Reshape"])
        XCTAssertEqual(g.shapes[g.nodes[0].outputs[0]], [1, 2, 1, 8])
        XCTAssertEqual(g.nodes[1].ints("kernel_shape"), [1, 3])
        XCTAssertEqual(g.nodes[1].ints("pads"), [0, 1, 0, 1])
        XCTAssertEqual(g.constants[g.nodes[1].inputs[1]]?.shape, [2, 2, 1, 3])
        XCTAssertEqual(g.shapes[g.nodes[2].outputs[0]], [1, 2, 1, 8])
        XCTAssertEqual(g.nodes.last?.outputs, ["y"])
        XCTAssertEqual(g.shapes["y"], [1, 3, 8])
        for n in g.nodes { for o in n.outputs { XCTAssertNotNil(g.shapes[o], o) } }
    }

    /// With the NHWC passes after it (TFLite's order), consecutive 1-D
    /// convolutions have no Transpose between them.
    func testNoTransposesBetweenConsecutive1DConvolutions() throws {
        var g = LoweringGraph(chain())
        try LoweringPipeline([.convolution1DAs2D, .wrapChannelsLast(ops: ["Conv"], prefix: "NHWC."), .sinkTransposes, .removeDeadNodes]).run(&g)
        XCTAssertEqual(g.nodes.map(\.opType), ["Reshape", "Transpose", "NHWC.Conv", "Relu", "NHWC.Conv", "Transpose", "Reshape"])
    }

    /// The weight keeps its encoding: per-channel int8 scales stay on the output axis.
    func testQuantizedWeightKeepsItsScales() throws {
        var src = chain()
        let q = try AffineWeights(shape: [2, 2, 3], bits: 8, signed: true, q: (0..<12).map { Int16($0) - 6 },
                                  blockShape: [1, 2, 3], scale: [0.5, 0.25], bias: [0, 0])
        src.setConstant(Constant(name: "w1", encoding: .affine(q)))
        var g = LoweringGraph(src)
        try LoweringPass.convolution1DAs2D.run(&g)
        guard case .affine(let a)? = g.constants[g.nodes[1].inputs[1]] else { return XCTFail("weight lost its encoding") }
        XCTAssertEqual(a.shape, [2, 2, 1, 3])
        XCTAssertEqual(a.blockShape, [1, 2, 1, 3])
        XCTAssertEqual(a.scale, [0.5, 0.25])
    }

    func testMaxPoolWithIndicesIsLeftAlone() throws {
        var src = chain()
        src.nodes = [Node(name: "mp", opType: "MaxPool", inputs: ["x"], outputs: ["y", "idx"], attributes: ["kernel_shape": .ints([1])])]
        var g = LoweringGraph(src)
        try LoweringPass.convolution1DAs2D.run(&g)
        XCTAssertEqual(g.nodes, src.nodes)
    }
}
