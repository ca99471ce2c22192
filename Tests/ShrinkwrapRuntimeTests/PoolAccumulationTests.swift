import ShrinkwrapIR
import ShrinkwrapRuntime
import XCTest

/// Global pools sum a whole plane: in float32 every addition past 2^24 loses
/// the small terms, and the error is the same for every position an SE block
/// then scales with it (ppocr-v4-rec's worst sample: 9× onnxruntime's error).
final class PoolAccumulationTests: XCTestCase {
    func pool(_ op: String, _ x: Tensor, _ attrs: [String: Attribute] = [:]) throws -> Tensor {
        let node = Node(name: op.lowercased(), opType: op, inputs: ["x"], outputs: ["y"], attributes: attrs)
        guard let kernel = KernelRegistry.kernels[op] else { throw XCTSkip("no \(op) kernel") }
        return try kernel(KernelContext(node: node, inputs: [x], threads: 1))[0]
    }

    /// One value of 2^24 then 4095 ones: a float32 running sum stays at 2^24 (each +1 rounds away).
    func plane() -> Tensor { Tensor([16_777_216] + [Float](repeating: 1, count: 4095), shape: [1, 1, 64, 64]) }

    func testGlobalAveragePoolKeepsSmallTerms() throws {
        let y = try pool("GlobalAveragePool", plane())
        XCTAssertEqual(y.shape, [1, 1, 1, 1])
        let exact = (16_777_216.0 + 4095.0) / 4096.0  // 4096.99975…
        XCTAssertEqual(Double(y.floats?.first ?? 0), exact, accuracy: 1e-3, "float32 accumulation would give 4096")
    }

    func testGlobalLpPoolKeepsSmallTerms() throws {
        let y = try pool("GlobalLpPool", plane(), ["p": .int(1)])
        XCTAssertEqual(Double(y.floats?.first ?? 0), 16_777_216.0 + 4095.0, accuracy: 2, "float32 accumulation would give 2^24")
    }
}
