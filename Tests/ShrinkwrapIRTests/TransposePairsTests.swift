import ShrinkwrapIR
import XCTest

final class TransposePairsTests: XCTestCase {
    func testInversePairsCancel() {
        let nodes = [
            Node(name: "a", opType: "Transpose", inputs: ["x"], outputs: ["x_nchw"], attributes: ["perm": .ints([0, 3, 1, 2])]),
            Node(name: "c", opType: "Conv", inputs: ["x_nchw", "w"], outputs: ["c"]),
            Node(name: "b", opType: "Transpose", inputs: ["c"], outputs: ["c_nhwc"], attributes: ["perm": .ints([0, 2, 3, 1])]),
            Node(name: "d", opType: "Transpose", inputs: ["c_nhwc"], outputs: ["c2"], attributes: ["perm": .ints([0, 3, 1, 2])]),
            Node(name: "p", opType: "MaxPool", inputs: ["c2"], outputs: ["p"]),
            Node(name: "e", opType: "Transpose", inputs: ["p"], outputs: ["y"], attributes: ["perm": .ints([0, 2, 3, 1])]),
        ]
        let out = nodes.cancellingInverseTransposes(keeping: ["y"])
        XCTAssertEqual(out.map(\.name), ["a", "c", "p", "e"])
        XCTAssertEqual(out[2].inputs, ["c"])
        // A middle value read twice stays.
        let shared = nodes + [Node(name: "r", opType: "Relu", inputs: ["c_nhwc"], outputs: ["r"])]
        XCTAssertEqual(shared.cancellingInverseTransposes(keeping: ["y", "r"]).count, shared.count)
    }
}
