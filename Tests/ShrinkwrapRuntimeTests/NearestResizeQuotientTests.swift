import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// `Node.nearestResizeFloorsQuotient` (the Core ML writers' test for nearest upsampling)
/// against the Resize kernel: every form it accepts reads input ⌊i / s⌋ for whole factors s,
/// and the forms it refuses do not.
final class NearestResizeQuotientTests: XCTestCase {
    func testTheAcceptedFormsReadTheFlooredQuotient() throws {
        let transforms = ["asymmetric", "tf_half_pixel_for_nn", "half_pixel", "pytorch_half_pixel", "align_corners"]
        let roundings = ["floor", "ceil", "round_prefer_floor", "round_prefer_ceil"]
        var accepted: [String] = []
        for ctm in transforms {
            for nm in roundings {
                let node = Node(name: "r", opType: "Resize", inputs: ["x", "", "", "sizes"], outputs: ["y"],
                                attributes: ["mode": .string("nearest"), "coordinate_transformation_mode": .string(ctm), "nearest_mode": .string(nm)])
                var floorsEverywhere = true
                for s in [2, 3] {
                    var g = Graph(name: "t")
                    g.inputs = [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(1), .fixed(1), .fixed(4)])]
                    g.outputs = [ValueInfo(name: "y", dtype: .float32, shape: nil)]
                    g.setConstant(Constant(name: "sizes", tensor: Tensor(ints: [1, 1, 1, Int64(4 * s)], shape: [4])))
                    g.nodes = [node]
                    let y = try XCTUnwrap(try Interpreter(graph: g).run(["x": Tensor([0, 1, 2, 3], shape: [1, 1, 1, 4])])["y"])
                    if y.floats != (0..<(4 * s)).map({ Float($0 / s) }) { floorsEverywhere = false }
                }
                XCTAssertEqual(node.nearestResizeFloorsQuotient, floorsEverywhere, "\(ctm) \(nm)")
                if node.nearestResizeFloorsQuotient { accepted.append("\(ctm)/\(nm)") }
            }
        }
        XCTAssertEqual(accepted.count, 6, "\(accepted)")
    }
}
