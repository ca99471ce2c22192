import XCTest
@testable import ShrinkwrapRuntime
import ShrinkwrapIR

/// LpNormalization and MeanVarianceNormalization: hand cases whose expected values were
/// computed independently with numpy in float64 (Scripts' venv, `.venv/bin/python`):
///
///     lp(x, axis, p)  = x / n, n = np.sum(np.abs(x), axis, keepdims=True)          (p = 1)
///                              n = np.sqrt(np.sum(x * x, axis, keepdims=True))     (p = 2),
///                       0 where n == 0
///     mvn(x, axes)    = (x - m) / (np.sqrt(np.mean((x - m) ** 2, axes, keepdims=True)) + 1e-9),
///                       m = np.mean(x, axes, keepdims=True)
///
/// then printed as float32. The LpNormalization values agree with onnxruntime 1.31's, the
/// MeanVarianceNormalization values with the onnx wheel's reference evaluator (ONNX's function body).
final class NormalizationKernelTests: XCTestCase {
    // MARK: helpers

    func run(_ op: String, _ x: Tensor, _ attrs: [String: Attribute] = [:], threads: Int = 1) throws -> Tensor {
        guard let k = KernelRegistry.kernels[op] else { throw KernelError.noKernel(op: op) }
        let node = Node(name: "norm1", opType: op, inputs: ["x"], outputs: ["y"], attributes: attrs)
        let out = try k(KernelContext(node: node, inputs: [x], threads: threads))
        XCTAssertEqual(out.count, 1)
        return out[0]
    }

    func assertClose(_ got: Tensor, _ want: [Float], shape: [Int], tol: Float = 1e-6,
                     file: StaticString = #filePath, line: UInt = #line) {
        assertTensorClose(got, want, shape: shape, tol: tol, file: file, line: line)
    }

    /// The kernel throws a KernelError naming the node and `attribute`, and does not crash.
    func assertBadAttribute(_ op: String, _ x: Tensor, _ attrs: [String: Attribute], _ attribute: String,
                            file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try run(op, x, attrs), file: file, line: line) { e in
            guard let k = e as? KernelError, case .invalidAttribute(let node, let opType, let a, _) = k else {
                return XCTFail("expected KernelError.invalidAttribute, got \(e)", file: file, line: line)
            }
            XCTAssertEqual([node, opType, a], ["norm1", op, attribute], file: file, line: line)
            XCTAssertTrue(k.description.contains("node 'norm1'"), k.description, file: file, line: line)
        }
    }

    /// [[[1, −2, 2], [3, 4, 0]], [[0, 0, 0], [−5, 12, 0.5]]]: negative values and a zero row.
    let x = Tensor([1, -2, 2, 3, 4, 0, 0, 0, 0, -5, 12, 0.5], shape: [2, 2, 3])

    // MARK: LpNormalization

    func testLpNormalizationDefaultIsL2OverTheLastAxis() throws {
        // lp(x, -1, 2); the all-zero row [0, 0, 0] gives zeros, not NaN.
        let want: [Float] = [0.33333334, -0.6666667, 0.6666667, 0.6, 0.8, 0, 0, 0, 0, -0.38433123, 0.92239493, 0.038433123]
        assertClose(try run("LpNormalization", x), want, shape: [2, 2, 3])
        assertClose(try run("LpNormalization", x, ["axis": .int(-1), "p": .int(2)]), want, shape: [2, 2, 3])
        assertClose(try run("LpNormalization", x, ["axis": .int(2)]), want, shape: [2, 2, 3])
    }

    func testLpNormalizationL1SumsAbsoluteValues() throws {
        // lp(x, -1, 1): [1, −2, 2] / 5 (Σ|x|, not Σx = 1).
        assertClose(try run("LpNormalization", x, ["p": .int(1)]),
                    [0.2, -0.4, 0.4, 0.42857143, 0.5714286, 0, 0, 0, 0, -0.2857143, 0.6857143, 0.028571429], shape: [2, 2, 3])
    }

    func testLpNormalizationAlongAMiddleAndANegativeAxis() throws {
        // lp(x, 1, 2): columns of each 2×3 block; [0, 0] columns stay 0.
        assertClose(try run("LpNormalization", x, ["axis": .int(1)]),
                    [0.31622776, -0.4472136, 1, 0.9486833, 0.8944272, 0, 0, 0, 0, -1, 1, 1], shape: [2, 2, 3])
        // lp(x, -3, 1): across the two blocks.
        assertClose(try run("LpNormalization", x, ["axis": .int(-3), "p": .int(1)]),
                    [1, -1, 1, 0.375, 0.25, 0, 0, 0, 0, -0.625, 0.75, 1], shape: [2, 2, 3])
    }

    func testLpNormalizationZeroVectorGivesZeros() throws {
        let y = try run("LpNormalization", Tensor([0, 0, 0, 0], shape: [1, 4]), ["p": .int(1)])
        assertClose(y, [0, 0, 0, 0], shape: [1, 4], tol: 0)
        assertClose(try run("LpNormalization", Tensor([0, 0, 0, 0], shape: [4])), [0, 0, 0, 0], shape: [4], tol: 0)
    }

    func testLpNormalizationFloat16RoundsItsResult() throws {
        // np.float16(lp(np.float16([1, 2, 3]), -1, 2)): 1/√14, 2/√14, 3/√14 rounded to half precision.
        let h = Tensor(dtype: .float16, shape: [3], storage: .float([1, 2, 3]))
        let y = try run("LpNormalization", h)
        XCTAssertEqual(y.dtype, .float16)
        assertClose(y, [0.267333984375, 0.53466796875, 0.8017578125], shape: [3], tol: 0)
    }

    func testLpNormalizationRefusesBadAttributes() {
        for p in [0, 3, -2] { assertBadAttribute("LpNormalization", x, ["p": .int(p)], "p") }
        assertBadAttribute("LpNormalization", x, ["p": .float(2)], "p")
        for axis in [3, -4, Int.max, Int.min] { assertBadAttribute("LpNormalization", x, ["axis": .int(axis)], "axis") }
        // A scalar has no axis to normalize along.
        XCTAssertThrowsError(try run("LpNormalization", Tensor([2], shape: []))) { e in
            XCTAssertTrue("\(e)".contains("norm1"), "\(e)")
        }
        XCTAssertThrowsError(try run("LpNormalization", Tensor(dtype: .int32, shape: [2], storage: .int([3, 4]))))
    }

    // MARK: MeanVarianceNormalization

    /// 2×2×2×2: batch 0 = 1…8, batch 1 = [2, 2, 2, 2, −1, 0, 4, 9] (its channel 0 is constant).
    let xm = Tensor([1, 2, 3, 4, 5, 6, 7, 8, 2, 2, 2, 2, -1, 0, 4, 9], shape: [2, 2, 2, 2])

    func testMeanVarianceNormalizationDefaultAxes() throws {
        // mvn(xm, [0, 2, 3]): per channel, over the batch and the plane.
        let want: [Float] = [-1.5075567, -0.30151135, 0.904534, 2.1105795, 0.07392213, 0.36961064, 0.6652991, 0.9609876,
                             -0.30151135, -0.30151135, -0.30151135, -0.30151135, -1.7002089, -1.4045204, -0.22176638, 1.2566762]
        assertClose(try run("MeanVarianceNormalization", xm), want, shape: [2, 2, 2, 2], tol: 1e-6)
        assertClose(try run("MeanVarianceNormalization", xm, ["axes": .ints([0, 2, 3])]), want, shape: [2, 2, 2, 2], tol: 1e-6)
        assertClose(try run("MeanVarianceNormalization", xm, ["axes": .ints([-4, -2, -1])]), want, shape: [2, 2, 2, 2], tol: 1e-6)
    }

    func testMeanVarianceNormalizationOtherAxesAndAConstantGroup() throws {
        // mvn(xm, [-1]): pairs; the constant pairs [2, 2] give 0 (ε = 1e-9 after the square root, no NaN).
        assertClose(try run("MeanVarianceNormalization", xm, ["axes": .ints([-1])]),
                    [-1, 1, -1, 1, -1, 1, -1, 1, 0, 0, 0, 0, -1, 1, -1, 1], shape: [2, 2, 2, 2])
        // mvn(xm, [1, 2, 3]): per sample.
        assertClose(try run("MeanVarianceNormalization", xm, ["axes": .ints([1, 2, 3])]),
                    [-1.5275252, -1.0910895, -0.65465367, -0.2182179, 0.2182179, 0.65465367, 1.0910895, 1.5275252,
                     -0.1767767, -0.1767767, -0.1767767, -0.1767767, -1.2374369, -0.8838835, 0.53033006, 2.2980971],
                    shape: [2, 2, 2, 2])
        // A constant tensor: 0 everywhere.
        assertClose(try run("MeanVarianceNormalization", Tensor([Float](repeating: 5, count: 8), shape: [2, 1, 2, 2])),
                    [Float](repeating: 0, count: 8), shape: [2, 1, 2, 2], tol: 0)
    }

    func testMeanVarianceNormalizationRefusesBadAxes() {
        assertBadAttribute("MeanVarianceNormalization", xm, ["axes": .ints([0, 4])], "axes")
        assertBadAttribute("MeanVarianceNormalization", xm, ["axes": .ints([-5])], "axes")
        assertBadAttribute("MeanVarianceNormalization", xm, ["axes": .ints([1, -3])], "axes")  // listed twice
        assertBadAttribute("MeanVarianceNormalization", xm, ["axes": .ints([Int.min])], "axes")
        assertBadAttribute("MeanVarianceNormalization", xm, ["axes": .string("all")], "axes")
        // The default axes [0, 2, 3] need rank 4.
        assertBadAttribute("MeanVarianceNormalization", x, [:], "axes")
        assertBadAttribute("MeanVarianceNormalization", Tensor([1], shape: []), [:], "axes")
    }

    // MARK: both

    func testEmptyInputsAndThreadCountsGiveTheSameResults() throws {
        for op in ["LpNormalization", "MeanVarianceNormalization"] {
            let e = try run(op, Tensor([], shape: [0, 3, 2, 2]))
            XCTAssertEqual(e.shape, [0, 3, 2, 2])
            XCTAssertEqual(e.count, 0)
        }
        // 8×16×8×8 with a fixed pattern: one thread and four give identical bits.
        let n = 8 * 16 * 8 * 8
        let big = Tensor((0..<n).map { Float(($0 * 7919) % 201) / 50 - 2 }, shape: [8, 16, 8, 8])
        for (op, attrs) in [("LpNormalization", ["axis": Attribute.int(1)]), ("LpNormalization", ["p": .int(1)]),
                            ("MeanVarianceNormalization", [:])] {
            let one = try run(op, big, attrs, threads: 1), four = try run(op, big, attrs, threads: 4)
            XCTAssertEqual(one.floats, four.floats, op)
        }
    }
}
