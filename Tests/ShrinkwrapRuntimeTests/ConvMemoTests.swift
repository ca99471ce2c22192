import Dispatch
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// Conv keeps what it works out from its attributes (group, geometry, the planner's epilogue) on its node
/// between runs (`NNKernels.ConvMemo`): a run with other input shapes works it out again, and runs of one
/// interpreter on several threads at once agree with fresh interpreters.
final class ConvMemoTests: XCTestCase {
    func graph() -> Graph {
        var rng = SplitMix(seed: 3)
        func values(_ n: Int) -> [Float] { (0..<n).map { _ in rng.nextFloat() - 0.5 } }
        let consts = [Constant(name: "W", tensor: Tensor(values(8 * 3 * 9), shape: [8, 3, 3, 3])),
                      Constant(name: "B", tensor: Tensor(values(8), shape: [8])),
                      Constant(name: "s", tensor: Tensor(values(8).map { $0 + 1 }, shape: [8])),
                      Constant(name: "b", tensor: Tensor(values(8), shape: [8])),
                      Constant(name: "mu", tensor: Tensor(values(8), shape: [8])),
                      Constant(name: "var", tensor: Tensor(values(8).map { $0 + 1 }, shape: [8]))]
        let nodes = [Node(name: "conv", opType: "Conv", inputs: ["x", "W", "B"], outputs: ["c"],
                          attributes: ["pads": .ints([1, 0, 1, 2]), "strides": .ints([2, 1])]),
                     Node(name: "bn", opType: "BatchNormalization", inputs: ["c", "s", "b", "mu", "var"], outputs: ["n"]),
                     Node(name: "relu", opType: "Relu", inputs: ["n"], outputs: ["y"])]
        return Graph(inputs: [ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3), .symbolic("h"), .symbolic("w")])],
                     outputs: [ValueInfo(name: "y", dtype: .float32, shape: nil)], nodes: nodes, constants: consts)
    }

    func input(_ h: Int, _ w: Int) -> Tensor {
        Tensor((0..<(3 * h * w)).map { Float(($0 * 7) % 23) / 11 - 1 }, shape: [1, 3, h, w])
    }

    func testOtherShapesWorkTheGeometryOutAgain() throws {
        let shared = try Interpreter(graph: graph(), options: .init(threads: 2))
        for (h, w) in [(9, 11), (16, 7), (9, 11), (30, 40), (5, 5)] {
            let x = input(h, w)
            let fresh = try Interpreter(graph: graph(), options: .init(threads: 2)).run(["x": x])["y"]
            let again = try shared.run(["x": x])["y"]
            XCTAssertEqual(again?.shape, fresh?.shape, "\(h)×\(w)")
            XCTAssertTrue(again?.floats?.map(\.bitPattern) == fresh?.floats?.map(\.bitPattern), "\(h)×\(w)")
        }
    }

    func testOneInterpreterOnSeveralThreads() throws {
        let shared = try Interpreter(graph: graph(), options: .init(threads: 1))
        let sizes = [(9, 11), (16, 7), (12, 12), (7, 30)]
        let expected = try sizes.map { try Interpreter(graph: graph(), options: .init(threads: 1)).run(["x": input($0.0, $0.1)])["y"] }
        let results = UnsafeMutableBufferPointer<Tensor?>.allocate(capacity: 64)
        results.initialize(repeating: nil)
        defer { results.deallocate() }
        let out = SendablePointer(results.baseAddress!)
        DispatchQueue.concurrentPerform(iterations: 64) { k in
            let (h, w) = sizes[k % sizes.count]
            out.p[k] = try? shared.run(["x": input(h, w)])["y"]
        }
        for k in 0..<64 {
            XCTAssertTrue(results[k]?.floats?.map(\.bitPattern) == expected[k % sizes.count]?.floats?.map(\.bitPattern), "run \(k)")
        }
    }
}
