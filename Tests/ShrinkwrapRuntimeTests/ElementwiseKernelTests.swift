import XCTest
import Foundation
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport

/// Elementwise, logic, activation, softmax, reduction and Cast kernels:
/// small hand-computed cases (the arithmetic is written next to each
/// expectation), edge cases and error paths.
final class ElementwiseKernelTests: XCTestCase {
    // MARK: helpers

    private func run(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:],
                     threads: Int = 1) throws -> [Tensor] {
        guard let k = KernelRegistry.kernels[op] else { throw KernelError.noKernel(op: op) }
        let node = Node(name: "n", opType: op, inputs: inputs.map { $0 == nil ? "" : "x" }, outputs: ["y"], attributes: attrs)
        return try k(KernelContext(node: node, inputs: inputs, threads: threads))
    }

    private func run1(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:], threads: Int = 1) throws -> Tensor {
        let r = try run(op, inputs, attrs, threads: threads)
        guard let t = r.first else { throw KernelError.noKernel(op: op) }
        return t
    }

    private func f(_ v: [Float], _ s: [Int], _ dt: DType = .float32) -> Tensor { Tensor(v, shape: s, dtype: dt) }
    private func i(_ v: [Int64], _ s: [Int], _ dt: DType = .int64) -> Tensor { Tensor(ints: v, shape: s, dtype: dt) }
    private func b(_ v: [Bool], _ s: [Int]) -> Tensor { Tensor(bools: v, shape: s) }

    private func assertClose(_ t: Tensor, _ expected: [Float], shape: [Int]? = nil, tol: Float = 1e-5,
                             file: StaticString = #filePath, line: UInt = #line) {
        guard let v = t.floats else { return XCTFail("not a float tensor: \(t)", file: file, line: line) }
        if let shape { XCTAssertEqual(t.shape, shape, file: file, line: line) }
        XCTAssertEqual(v.count, expected.count, "count", file: file, line: line)
        for (k, (a, e)) in zip(v, expected).enumerated() {
            if e.isNaN { XCTAssertTrue(a.isNaN, "[\(k)] \(a) is not NaN", file: file, line: line); continue }
            if e.isInfinite { XCTAssertEqual(a, e, "[\(k)]", file: file, line: line); continue }
            XCTAssertEqual(a, e, accuracy: tol * Swift.max(1, Swift.abs(e)), "[\(k)]", file: file, line: line)
        }
    }

    private func assertThrows(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:],
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try run(op, inputs, attrs), file: file, line: line) { e in
            XCTAssertTrue(e is KernelError, "\(e)", file: file, line: line)
        }
    }

    /// Deterministic pseudo-random floats in [-4, 4).
    private func noise(_ n: Int, seed: UInt64 = 1) -> [Float] {
        var s = seed
        return (0..<n).map { _ in
            s = s &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int((s >> 40) % 8000) - 4000) / 1000
        }
    }

    // MARK: binary arithmetic

    func testAddBroadcastingShapes() throws {
        // Same shape: [1,2,3] + [10,20,30].
        assertClose(try run1("Add", [f([1, 2, 3], [3]), f([10, 20, 30], [3])]), [11, 22, 33], shape: [3])
        // Row broadcast: [[1,2,3],[4,5,6]] + [10,20,30].
        assertClose(try run1("Add", [f([1, 2, 3, 4, 5, 6], [2, 3]), f([10, 20, 30], [3])]),
                    [11, 22, 33, 14, 25, 36], shape: [2, 3])
        // Column broadcast, both sides: [2,1] + [1,3] → [[a0+b0, a0+b1, a0+b2], [a1+…]].
        assertClose(try run1("Add", [f([1, 2], [2, 1]), f([10, 20, 30], [1, 3])]),
                    [11, 21, 31, 12, 22, 32], shape: [2, 3])
        // Scalar on the left: 100 - [1,2,3].
        assertClose(try run1("Sub", [f([100], []), f([1, 2, 3], [3])]), [99, 98, 97], shape: [3])
        // Per-channel [2,1,1] on [1,2,2,2]: channel 0 × 2, channel 1 × 10.
        assertClose(try run1("Mul", [f([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 2, 2]), f([2, 10], [2, 1, 1])]),
                    [2, 4, 6, 8, 50, 60, 70, 80], shape: [1, 2, 2, 2])
        // Middle-axis broadcast [2,1,2] with [2,3,2] (strided, not coalescable).
        assertClose(try run1("Add", [f([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [2, 3, 2]), f([100, 200, 300, 400], [2, 1, 2])]),
                    [100, 201, 102, 203, 104, 205, 306, 407, 308, 409, 310, 411], shape: [2, 3, 2])
    }

    func testBinaryEdgeCases() throws {
        // Empty: [0,3] + [3] keeps shape [0,3].
        let e = try run1("Add", [f([], [0, 3]), f([1, 2, 3], [3])])
        XCTAssertEqual(e.shape, [0, 3]); XCTAssertEqual(e.floats, [])
        // Scalars: shape [].
        assertClose(try run1("Div", [f([1], []), f([4], [])]), [0.25], shape: [])
        // Incompatible shapes, mixed storage classes.
        assertThrows("Add", [f([1, 2], [2]), f([1, 2, 3], [3])])
        assertThrows("Add", [f([1], [1]), i([1], [1])])
        assertThrows("Add", [f([1], [1])])
        // float16 results are rounded: 1 + 0.0001 is 1 in binary16 (spacing 2^-10).
        let h = try run1("Add", [f([1], [1], .float16), f([0.0001], [1], .float16)])
        XCTAssertEqual(h.dtype, .float16); XCTAssertEqual(h.floats, [1])
    }

    func testIntegerArithmetic() throws {
        // int8 wraps: 127 + 1 = -128; -128 - 1 = 127; 64 * 2 = -128.
        XCTAssertEqual(try run1("Add", [i([127], [1], .int8), i([1], [1], .int8)]).ints, [-128])
        XCTAssertEqual(try run1("Sub", [i([-128], [1], .int8), i([1], [1], .int8)]).ints, [127])
        XCTAssertEqual(try run1("Mul", [i([64], [1], .int8), i([2], [1], .int8)]).ints, [-128])
        // Division truncates toward zero: -7/2 = -3, 7/-2 = -3, 7/2 = 3.
        XCTAssertEqual(try run1("Div", [i([-7, 7, 7], [3], .int32), i([2, -2, 2], [3], .int32)]).ints, [-3, -3, 3])
        // Division by zero is an error, not a trap.
        assertThrows("Div", [i([1], [1]), i([0], [1])])
        assertThrows("Mod", [i([1], [1]), i([0], [1])])
        // uint64 divides unsigned: (2^64 - 2) / 2 = 2^63 - 1.
        XCTAssertEqual(try run1("Div", [i([-2], [1], .uint64), i([2], [1], .uint64)]).ints, [Int64.max])
        // Int64.min / -1 wraps rather than trapping.
        XCTAssertEqual(try run1("Div", [i([Int64.min], [1]), i([-1], [1])]).ints, [Int64.min])
    }

    func testMod() throws {
        // fmod = 0 takes the divisor's sign: -7 mod 3 = 2, 7 mod -3 = -2, -7 mod -3 = -1, 6 mod 3 = 0.
        XCTAssertEqual(try run1("Mod", [i([-7, 7, -7, 6], [4]), i([3, -3, -3, 3], [4])]).ints, [2, -2, -1, 0])
        // fmod = 1 takes the dividend's sign: -7 fmod 3 = -1, 7 fmod -3 = 1.
        XCTAssertEqual(try run1("Mod", [i([-7, 7], [2]), i([3, -3], [2])], ["fmod": .int(1)]).ints, [-1, 1])
        // Floats: 5.5 mod -2 = 5.5 - (-2)(-3) = -0.5; fmod(5.5, -2) = 1.5; -1 mod inf = inf (numpy).
        assertClose(try run1("Mod", [f([5.5, -1], [2]), f([-2, .infinity], [2])]), [-0.5, .infinity])
        assertClose(try run1("Mod", [f([5.5], [1]), f([-2], [1])], ["fmod": .int(1)]), [1.5])
        assertThrows("Mod", [f([1], [1]), f([1], [1])], ["fmod": .int(2)])
    }

    func testPow() throws {
        // Float base, integer exponent: [2,3]^[3,2] = [8, 9]; x^2 fast path; x^0.5 = sqrt.
        assertClose(try run1("Pow", [f([2, 3], [2]), i([3, 2], [2])]), [8, 9])
        assertClose(try run1("Pow", [f([-3, 1.5], [2]), f([2], [])]), [9, 2.25])
        assertClose(try run1("Pow", [f([4, 2], [2]), f([0.5], [1])]), [2, 1.4142135])
        // Integer base and exponent: 2^10 = 1024; int8 2^7 = 128 wraps to -128; 5^-1 truncates to 0.
        XCTAssertEqual(try run1("Pow", [i([2, 5], [2]), i([10, -1], [2])]).ints, [1024, 0])
        XCTAssertEqual(try run1("Pow", [i([2], [1], .int8), i([7], [1], .int8)]).ints, [-128])
        // Integer base, float exponent: 3^0.5 = 1.73 → 1; 2^3 = 8. Result keeps the base's dtype.
        let t = try run1("Pow", [i([3, 2], [2], .int32), f([0.5, 3], [2])])
        XCTAssertEqual(t.ints, [1, 8]); XCTAssertEqual(t.dtype, .int32)
    }

    func testVariadic() throws {
        // Sum of [1,2,3], [10] and [[100],[200]] broadcasts to [2,3].
        assertClose(try run1("Sum", [f([1, 2, 3], [3]), f([10], [1]), f([100, 200], [2, 1])]),
                    [111, 112, 113, 211, 212, 213], shape: [2, 3])
        // Mean of [1,2] and [3,6] = [2, 4].
        assertClose(try run1("Mean", [f([1, 2], [2]), f([3, 6], [2])]), [2, 4])
        // Max / Min with broadcasting; NaN propagates.
        assertClose(try run1("Max", [f([1, 5, .nan], [3]), f([3], [1])]), [3, 5, .nan])
        assertClose(try run1("Min", [f([1, 5, 2], [3]), f([3], [1]), f([0, 9, 9], [3])]), [0, 3, 2])
        // One input returns it unchanged.
        assertClose(try run1("Max", [f([4, -4], [2])]), [4, -4])
        // uint64 compares unsigned: max(2^64-1, 1) = 2^64-1 (bit pattern -1).
        XCTAssertEqual(try run1("Max", [i([-1], [1], .uint64), i([1], [1], .uint64)]).ints, [-1])
        XCTAssertEqual(try run1("Min", [i([-5, 7], [2], .int32), i([3], [1], .int32)]).ints, [-5, 3])
        assertThrows("Sum", [])
    }

    // MARK: unary

    func testUnaryMath() throws {
        let x = f([-1.5, 0, 2.25], [3])
        assertClose(try run1("Neg", [x]), [1.5, 0, -2.25])
        assertClose(try run1("Abs", [x]), [1.5, 0, 2.25])
        assertClose(try run1("Sign", [x]), [-1, 0, 1])
        // e^1 = 2.7182817, ln(e) = 1, √2.25 = 1.5, 1/4 = 0.25.
        assertClose(try run1("Exp", [f([0, 1], [2])]), [1, 2.7182817])
        assertClose(try run1("Log", [f([1, 2.7182817, 0], [3])]), [0, 1, -.infinity])
        assertClose(try run1("Sqrt", [f([2.25, 0], [2])]), [1.5, 0])
        assertClose(try run1("Reciprocal", [f([4, -0.5], [2])]), [0.25, -2])
        // erf(0.5) = 0.5204998778, erf(-1) = -0.8427007929, erf(3) = 0.9999779095.
        assertClose(try run1("Erf", [f([0.5, -1, 3], [3])]), [0.5204998778, -0.8427007929, 0.9999779095], tol: 1e-7)
        assertClose(try run1("Floor", [x]), [-2, 0, 2])
        assertClose(try run1("Ceil", [x]), [-1, 0, 3])
        // Round half to even: 0.5→0, 1.5→2, 2.5→2, -0.5→-0, -2.5→-2, 2.6→3.
        assertClose(try run1("Round", [f([0.5, 1.5, 2.5, -0.5, -2.5, 2.6], [6])]), [0, 2, 2, 0, -2, 3])
        // Trig: sin(π/2) = 1, cos(0) = 1, tan(π/4) = 1, asin(1) = π/2, acos(1) = 0, atan(1) = π/4.
        assertClose(try run1("Sin", [f([Float.pi / 2], [1])]), [1])
        assertClose(try run1("Cos", [f([0], [1])]), [1])
        assertClose(try run1("Tan", [f([Float.pi / 4], [1])]), [1])
        assertClose(try run1("Asin", [f([1], [1])]), [Float.pi / 2])
        assertClose(try run1("Acos", [f([1], [1])]), [0])
        assertClose(try run1("Atan", [f([1], [1])]), [Float.pi / 4])
        // sinh(1) = 1.1752012, cosh(1) = 1.5430806, asinh(1) = 0.8813736, acosh(2) = 1.3169579, atanh(0.5) = 0.5493061.
        assertClose(try run1("Sinh", [f([1], [1])]), [1.1752012])
        assertClose(try run1("Cosh", [f([1], [1])]), [1.5430806])
        assertClose(try run1("Asinh", [f([1], [1])]), [0.8813736])
        assertClose(try run1("Acosh", [f([2], [1])]), [1.3169579])
        assertClose(try run1("Atanh", [f([0.5], [1])]), [0.5493061])
        // Float-only ops refuse integers; Neg/Abs/Sign accept them (int8 -(-128) wraps to -128).
        assertThrows("Exp", [i([1], [1])])
        XCTAssertEqual(try run1("Neg", [i([-128, 5], [2], .int8)]).ints, [-128, -5])
        XCTAssertEqual(try run1("Abs", [i([-3, 4], [2], .int16)]).ints, [3, 4])
        XCTAssertEqual(try run1("Sign", [i([-3, 0, 4], [3])]).ints, [-1, 0, 1])
        // Empty input stays empty.
        XCTAssertEqual(try run1("Exp", [f([], [2, 0])]).shape, [2, 0])
    }

    func testIsNaNIsInf() throws {
        let x = f([1, .nan, .infinity, -.infinity], [4])
        XCTAssertEqual(try run1("IsNaN", [x]).bools, [false, true, false, false])
        XCTAssertEqual(try run1("IsInf", [x]).bools, [false, false, true, true])
        XCTAssertEqual(try run1("IsInf", [x], ["detect_negative": .int(0)]).bools, [false, false, true, false])
        XCTAssertEqual(try run1("IsInf", [x], ["detect_positive": .int(0)]).bools, [false, false, false, true])
    }

    // MARK: logic

    func testComparisonsAndLogic() throws {
        let a = f([1, 2, 3], [3]), c = f([2], [1])
        XCTAssertEqual(try run1("Equal", [a, c]).bools, [false, true, false])
        XCTAssertEqual(try run1("Greater", [a, c]).bools, [false, false, true])
        XCTAssertEqual(try run1("Less", [a, c]).bools, [true, false, false])
        XCTAssertEqual(try run1("GreaterOrEqual", [a, c]).bools, [false, true, true])
        XCTAssertEqual(try run1("LessOrEqual", [a, c]).bools, [true, true, false])
        // Integers, uint64 unsigned order (2^64-1 > 1), bools.
        XCTAssertEqual(try run1("Greater", [i([-1], [1], .uint64), i([1], [1], .uint64)]).bools, [true])
        XCTAssertEqual(try run1("Greater", [i([-1], [1]), i([1], [1])]).bools, [false])
        XCTAssertEqual(try run1("Equal", [b([true, false], [2]), b([true], [1])]).bools, [true, false])
        // Logic with broadcasting: [[T],[F]] op [T,F].
        let p = b([true, false], [2, 1]), q = b([true, false], [2])
        XCTAssertEqual(try run1("And", [p, q]).bools, [true, false, false, false])
        XCTAssertEqual(try run1("Or", [p, q]).bools, [true, true, true, false])
        XCTAssertEqual(try run1("Xor", [p, q]).bools, [false, true, true, false])
        XCTAssertEqual(try run1("Not", [q]).bools, [false, true])
        assertThrows("And", [f([1], [1]), b([true], [1])])
        assertThrows("Not", [f([1], [1])])
    }

    func testWhere() throws {
        // cond [[T,F]] picks from x [1,2] / y [[10],[20]] → [[1,10],[1,20]].
        let r = try run1("Where", [b([true, false], [1, 2]), f([1, 2], [2]), f([10, 20], [2, 1])])
        assertClose(r, [1, 10, 1, 20], shape: [2, 2])
        XCTAssertEqual(try run1("Where", [b([false, true], [2]), i([1, 2], [2], .int32), i([9], [1], .int32)]).ints, [9, 2])
        XCTAssertEqual(try run1("Where", [b([false, true], [2]), b([true], [1]), b([false], [1])]).bools, [false, true])
        assertThrows("Where", [f([1], [1]), f([1], [1]), f([1], [1])])
        assertThrows("Where", [b([true], [1]), f([1], [1]), i([1], [1])])
    }

    func testBitShift() throws {
        let left: [String: Attribute] = ["direction": .string("LEFT")]
        let right: [String: Attribute] = ["direction": .string("RIGHT")]
        // uint8: 16 << [1,2,3] = [32, 64, 128]; 16 >> [1,2,3] = [8, 4, 2].
        XCTAssertEqual(try run1("BitShift", [i([16, 16, 16], [3], .uint8), i([1, 2, 3], [3], .uint8)], left).ints, [32, 64, 128])
        XCTAssertEqual(try run1("BitShift", [i([16, 16, 16], [3], .uint8), i([1, 2, 3], [3], .uint8)], right).ints, [8, 4, 2])
        // int8: 64 << 1 wraps to -128; shift ≥ width → 0; -8 >> 1 = -4 (arithmetic); -1 >> 9 = -1.
        XCTAssertEqual(try run1("BitShift", [i([64, 1], [2], .int8), i([1, 8], [2], .int8)], left).ints, [-128, 0])
        XCTAssertEqual(try run1("BitShift", [i([-8, -1, 5], [3], .int8), i([1, 9, -1], [3], .int8)], right).ints, [-4, -1, 0])
        // uint64 right shift is logical: (2^64-1) >> 60 = 15.
        XCTAssertEqual(try run1("BitShift", [i([-1], [1], .uint64), i([60], [1], .uint64)], right).ints, [15])
        assertThrows("BitShift", [i([1], [1]), i([1], [1])], ["direction": .string("UP")])
        assertThrows("BitShift", [f([1], [1]), f([1], [1])], left)
    }

    func testBitwise() throws {
        // 12 & 10 = 8, -1 & 7 = 7; 12 | 3 = 15; 12 ^ 10 = 6; broadcasting a scalar.
        XCTAssertEqual(try run1("BitwiseAnd", [i([12, -1], [2], .int8), i([10, 7], [2], .int8)]).ints, [8, 7])
        XCTAssertEqual(try run1("BitwiseOr", [i([12, 0], [2], .int32), i([3], [], .int32)]).ints, [15, 3])
        XCTAssertEqual(try run1("BitwiseXor", [i([12], [1], .uint16), i([10], [1], .uint16)]).ints, [6])
        // ~5: int8 → -6, uint8 → 250, uint64 → 2^64 - 6 (bit pattern -6).
        XCTAssertEqual(try run1("BitwiseNot", [i([5], [1], .int8)]).ints, [-6])
        XCTAssertEqual(try run1("BitwiseNot", [i([5], [1], .uint8)]).ints, [250])
        XCTAssertEqual(try run1("BitwiseNot", [i([5], [1], .uint64)]).ints, [-6])
        assertThrows("BitwiseAnd", [f([1], [1]), f([1], [1])])
    }

    // MARK: activations

    func testActivations() throws {
        let x = f([-2, -0.5, 0, 1.5], [4])
        assertClose(try run1("Relu", [x]), [0, 0, 0, 1.5])
        XCTAssertEqual(try run1("Relu", [i([-3, 4], [2], .int32)]).ints, [0, 4])
        // LeakyRelu α=0.1: -2 → -0.2, -0.5 → -0.05.
        assertClose(try run1("LeakyRelu", [x], ["alpha": .float(0.1)]), [-0.2, -0.05, 0, 1.5])
        // Elu α=1: e^-2 - 1 = -0.8646647, e^-0.5 - 1 = -0.3934693.
        assertClose(try run1("Elu", [x]), [-0.8646647, -0.3934693, 0, 1.5])
        // Selu: γ·α·(e^x - 1) for x ≤ 0 (γα = 1.7580993), γx above: 1.5·1.0507010 = 1.5760515.
        assertClose(try run1("Selu", [x]), [-1.5201665, -0.6917582, 0, 1.5760515])
        // Celu α=2: 2·(e^(-2/2) - 1) = -1.2642411, 2·(e^-0.25 - 1) = -0.4423984.
        assertClose(try run1("Celu", [x], ["alpha": .float(2)]), [-1.2642411, -0.4423984, 0, 1.5])
        // Sigmoid: σ(0) = 0.5, σ(1.5) = 0.8175745, σ(-2) = 0.1192029; stable at ±100 (σ(-100) = 3.72e-44,
        // the float32 denormal 27 · 2^-149, written by its bits: a decimal literal that small warns).
        assertClose(try run1("Sigmoid", [f([0, 1.5, -2, 100, -100], [5])]), [0.5, 0.8175745, 0.1192029, 1, Float(bitPattern: 27)], tol: 1e-6)
        // HardSigmoid α=0.2 β=0.5: clamp(0.2x + 0.5) → [0.1, 0.4, 0.5, 0.8]; HardSwish = x·clamp(x/6 + 0.5).
        assertClose(try run1("HardSigmoid", [x]), [0.1, 0.4, 0.5, 0.8])
        assertClose(try run1("HardSwish", [f([-4, -1, 1, 4], [4])]), [0, -1.0 / 3, 2.0 / 3, 4])
        assertClose(try run1("Tanh", [f([0, 1], [2])]), [0, 0.7615942])
        // Softplus: ln(1 + e^x); ln 2 = 0.6931472, large x → x, large negative → e^x.
        assertClose(try run1("Softplus", [f([0, 100, -100], [3])]), [0.6931472, 100, Float(bitPattern: 27)], tol: 1e-6)
        assertClose(try run1("Softsign", [f([1, -3], [2])]), [0.5, -0.75])
        // Gelu: 0.5·x·(1 + erf(x/√2)): Gelu(1) = 0.8413447, Gelu(-1) = -0.1586553; tanh form Gelu(1) = 0.8411920.
        assertClose(try run1("Gelu", [f([1, -1, 0], [3])]), [0.8413447, -0.1586553, 0])
        assertClose(try run1("Gelu", [f([1], [1])], ["approximate": .string("tanh")]), [0.8411920])
        assertThrows("Gelu", [f([1], [1])], ["approximate": .string("fast")])
        // Mish(1) = tanh(ln(1 + e)) = tanh(1.3132617) = 0.8650984.
        assertClose(try run1("Mish", [f([1, 0], [2])]), [0.8650984, 0])
        // Swish: x·σ(αx): 1·σ(1) = 0.7310586; α=2: 1·σ(2) = 0.8807971, -1·σ(-2) = -0.1192029.
        assertClose(try run1("Swish", [f([1, 0], [2])]), [0.7310586, 0])
        assertClose(try run1("Swish", [f([1, -1], [2])], ["alpha": .float(2)]), [0.8807971, -0.1192029])
        // ThresholdedRelu α=1: x > 1 ? x : 0.
        assertClose(try run1("ThresholdedRelu", [f([0.5, 1, 2], [3])]), [0, 0, 2])
        // Shrink λ=1.5 bias=0.5: -2 → -1.5, 1 → 0, 2 → 1.5.
        assertClose(try run1("Shrink", [f([-2, 1, 2], [3])], ["lambd": .float(1.5), "bias": .float(0.5)]), [-1.5, 0, 1.5])
    }

    func testPRelu() throws {
        // Slope [3] broadcasts over rows of [2,3].
        assertClose(try run1("PRelu", [f([-1, -2, 3, -4, 5, -6], [2, 3]), f([0.1, 0.2, 0.3], [3])]),
                    [-0.1, -0.4, 3, -0.4, 5, -1.8], shape: [2, 3])
        // Per-channel slope [2,1,1] on [1,2,1,2].
        assertClose(try run1("PRelu", [f([-1, 1, -1, 1], [1, 2, 1, 2]), f([0.5, 2], [2, 1, 1])]), [-0.5, 1, -2, 1])
        // Slope must broadcast *to* X, not widen it.
        assertThrows("PRelu", [f([1, 2], [2]), f([1, 2, 3, 4], [2, 2])])
    }

    func testClip() throws {
        let x = f([-3, 0.5, 7], [3])
        assertClose(try run1("Clip", [x, f([-1], []), f([1], [])]), [-1, 0.5, 1])
        assertClose(try run1("Clip", [x, nil, f([1], [])]), [-3, 0.5, 1])
        assertClose(try run1("Clip", [x, f([0], [])]), [0, 0.5, 7])
        assertClose(try run1("Clip", [x]), [-3, 0.5, 7])
        // min > max: everything becomes max.
        assertClose(try run1("Clip", [x, f([2], []), f([1], [])]), [1, 1, 1])
        // Integers, with int bounds: int8 clip to [-5, 5].
        XCTAssertEqual(try run1("Clip", [i([-100, 3, 100], [3], .int8), i([-5], [], .int8), i([5], [], .int8)]).ints, [-5, 3, 5])
        XCTAssertEqual(try run1("Clip", [i([-100, 3, 100], [3], .int8), nil, i([5], [], .int8)]).ints, [-100, 3, 5])
        assertThrows("Clip", [x, f([0, 1], [2])])
    }

    // MARK: softmax

    func testSoftmaxFamily() throws {
        // softmax([1,2,3]) = e^(x-3)/Σ = [0.09003057, 0.24472848, 0.66524094].
        assertClose(try run1("Softmax", [f([1, 2, 3], [1, 3])]), [0.09003057, 0.24472848, 0.66524094])
        // Large inputs are stable: [1000, 1001, 1002] gives the same.
        assertClose(try run1("Softmax", [f([1000, 1001, 1002], [3])]), [0.09003057, 0.24472848, 0.66524094])
        // axis 0 of [[1,2],[3,4]]: columns softmax([1,3]) = [0.1192029, 0.8807971].
        assertClose(try run1("Softmax", [f([1, 2, 3, 4], [2, 2])], ["axis": .int(0)]),
                    [0.1192029, 0.1192029, 0.8807971, 0.8807971])
        // LogSoftmax([1,2,3]) = x - 3 - ln(1 + e^-1 + e^-2) = x - 3.4076059.
        assertClose(try run1("LogSoftmax", [f([1, 2, 3], [3])]), [-2.4076059, -1.4076059, -0.4076059])
        assertClose(try run1("LogSoftmax", [f([10000, 10001, 10003], [3])]), [-3.1698451, -2.1698451, -0.1698451], tol: 1e-6)
        // Hardmax: first maximum wins on ties, per row.
        assertClose(try run1("Hardmax", [f([3, 1, 3, 0, 5, 2], [2, 3])]), [1, 0, 0, 0, 1, 0])
        // Negative axis and bad axis.
        assertClose(try run1("Softmax", [f([0, 0], [2, 1])], ["axis": .int(-2)]), [0.5, 0.5])
        assertThrows("Softmax", [f([1, 2], [2])], ["axis": .int(2)])
    }

    /// Softmax over a middle axis of one big block ([1, 16, 4, 700] over axis 1, as nudenet's dfl head)
    /// is split into column ranges between threads: every column the double-precision softmax, and the
    /// same bits for 1, 2 and 3 threads; LogSoftmax too.
    func testSoftmaxOverAMiddleAxisSplitsColumns() throws {
        var rng = SplitMix(seed: 77)
        let shape = [1, 16, 4, 700], inner = 4 * 700
        let x = (0..<(16 * inner)).map { _ in rng.nextFloat() * 20 - 10 }
        for op in ["Softmax", "LogSoftmax"] {
            let runs = try [1, 2, 3].map { try run1(op, [f(x, shape)], ["axis": .int(1)], threads: $0).floats ?? [] }
            XCTAssertEqual(runs[1].map(\.bitPattern), runs[0].map(\.bitPattern), op)
            XCTAssertEqual(runs[2].map(\.bitPattern), runs[0].map(\.bitPattern), op)
            for k in stride(from: 0, to: inner, by: 97) {
                let column = (0..<16).map { Double(x[$0 * inner + k]) }
                let top = column.max() ?? 0, sum = column.map { exp($0 - top) }.reduce(0, +)
                for l in 0..<16 {
                    let want = op == "Softmax" ? exp(column[l] - top) / sum : column[l] - top - log(sum)
                    XCTAssertEqual(Double(runs[0][l * inner + k]), want, accuracy: 1e-5, "\(op) column \(k)")
                }
            }
        }
    }

    // MARK: reductions

    func testReduceAxesAndKeepdims() throws {
        // x = [[1,2,3],[4,5,6]].
        let x = f([1, 2, 3, 4, 5, 6], [2, 3])
        // Over axis 1: [6, 15]; keepdims → [2,1]; without → [2].
        assertClose(try run1("ReduceSum", [x, i([1], [1])]), [6, 15], shape: [2, 1])
        assertClose(try run1("ReduceSum", [x, i([-1], [1])], ["keepdims": .int(0)]), [6, 15], shape: [2])
        // Over axis 0: [5, 7, 9] (middle-block path).
        assertClose(try run1("ReduceSum", [x, i([0], [1])]), [5, 7, 9], shape: [1, 3])
        // No axes: everything (21), shape [1,1]; noop_with_empty_axes: identity.
        assertClose(try run1("ReduceSum", [x]), [21], shape: [1, 1])
        assertClose(try run1("ReduceSum", [x, i([], [0])], ["keepdims": .int(0)]), [21], shape: [])
        assertClose(try run1("ReduceSum", [x, nil], ["noop_with_empty_axes": .int(1)]), [1, 2, 3, 4, 5, 6], shape: [2, 3])
        // With noop, an op still applies to each element: SumSquare squares.
        assertClose(try run1("ReduceSumSquare", [x], ["noop_with_empty_axes": .int(1)]), [1, 4, 9, 16, 25, 36])
        // General (non-adjacent) axes: y[2,3,2] = 0…11 over axes {0,2}: j=0: 0+1+6+7 = 14, j=1: 22, j=2: 30.
        let y = f((0..<12).map(Float.init), [2, 3, 2])
        assertClose(try run1("ReduceSum", [y, i([0, 2], [2])], ["keepdims": .int(0)]), [14, 22, 30], shape: [3])
        // ReduceMean over spatial axes of [1,2,2,2]: channel means 2.5 and 6.5.
        let z = f([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 2, 2])
        assertClose(try run1("ReduceMean", [z, i([2, 3], [2])]), [2.5, 6.5], shape: [1, 2, 1, 1])
        // Bad axes.
        assertThrows("ReduceSum", [x, i([2], [1])])
        assertThrows("ReduceSum", [x, i([1, -1], [2])])
        assertThrows("ReduceSum", [x, f([1], [1])])
    }

    func testReduceOps() throws {
        // x = [[1,-2],[3,-4]] over axis 1.
        let x = f([1, -2, 3, -4], [2, 2])
        let ax = i([1], [1])
        let k: [String: Attribute] = ["keepdims": .int(0)]
        assertClose(try run1("ReduceMax", [x, ax], k), [1, 3])
        assertClose(try run1("ReduceMin", [x, ax], k), [-2, -4])
        assertClose(try run1("ReduceProd", [x, ax], k), [-2, -12])
        assertClose(try run1("ReduceMean", [x, ax], k), [-0.5, -0.5])
        assertClose(try run1("ReduceL1", [x, ax], k), [3, 7])
        // L2: √(1+4) = 2.2360680, √(9+16) = 5.
        assertClose(try run1("ReduceL2", [x, ax], k), [2.2360680, 5])
        assertClose(try run1("ReduceSumSquare", [x, ax], k), [5, 25])
        // LogSum of [[1,2],[3,4]]: ln 3 = 1.0986123, ln 7 = 1.9459101.
        assertClose(try run1("ReduceLogSum", [f([1, 2, 3, 4], [2, 2]), ax], k), [1.0986123, 1.9459101])
        // LogSumExp: ln(e + e^-2) = 1.0485874; ln(e^3 + e^-4) = 3 + ln(1 + e^-7) = 3.0009115; stable for 1000.
        assertClose(try run1("ReduceLogSumExp", [x, ax], k), [1.0485874, 3.0009115])
        assertClose(try run1("ReduceLogSumExp", [f([1000, 1000], [2])], k), [1000.6931472])
        // Max propagates NaN.
        assertClose(try run1("ReduceMax", [f([1, .nan, 2], [3])], k), [.nan])
        // A long innermost run (partial accumulators): Σ 1…40 = 820.
        assertClose(try run1("ReduceSum", [f((1...40).map(Float.init), [1, 40]), ax], k), [820])
    }

    func testReduceEmptySetAndTypes() throws {
        // Reducing an axis of length 0: the identity of each op (ONNX empty-set rules).
        let e = f([], [2, 0, 4])
        let ax = i([1], [1])
        assertClose(try run1("ReduceSum", [e, ax]), Array(repeating: 0, count: 8), shape: [2, 1, 4])
        assertClose(try run1("ReduceProd", [e, ax]), Array(repeating: 1, count: 8))
        assertClose(try run1("ReduceMax", [e, ax]), Array(repeating: -.infinity, count: 8))
        assertClose(try run1("ReduceMin", [e, ax]), Array(repeating: .infinity, count: 8))
        assertClose(try run1("ReduceLogSum", [e, ax]), Array(repeating: -.infinity, count: 8))
        assertClose(try run1("ReduceLogSumExp", [e, ax]), Array(repeating: -.infinity, count: 8))
        assertClose(try run1("ReduceL2", [e, ax]), Array(repeating: 0, count: 8))
        // A zero-sized kept axis gives an empty result.
        XCTAssertEqual(try run1("ReduceSum", [f([], [0, 3]), ax]).shape, [0, 1])
        // Integers: int8 max of empty is -128; uint8 min of empty is 255; sums wrap.
        XCTAssertEqual(try run1("ReduceMax", [i([], [0], .int8), nil], ["keepdims": .int(0)]).ints, [-128])
        XCTAssertEqual(try run1("ReduceMin", [i([], [0], .uint8), nil], ["keepdims": .int(0)]).ints, [255])
        XCTAssertEqual(try run1("ReduceSum", [i([100, 100], [2], .int8)], ["keepdims": .int(0)]).ints, [-56])
        XCTAssertEqual(try run1("ReduceMax", [i([1, -1], [2], .uint64)], ["keepdims": .int(0)]).ints, [-1])
        XCTAssertEqual(try run1("ReduceProd", [i([2, 3, 4], [3])], ["keepdims": .int(0)]).ints, [24])
        // Bool: Max = any, Min = all.
        let bb = b([true, false, false, false], [2, 2])
        XCTAssertEqual(try run1("ReduceMax", [bb, ax], ["keepdims": .int(0)]).bools, [true, false])
        XCTAssertEqual(try run1("ReduceMin", [bb, ax], ["keepdims": .int(0)]).bools, [false, false])
        assertThrows("ReduceSum", [bb, ax])
        assertThrows("ReduceLogSumExp", [i([1], [1])])
        // float16 results are rounded.
        let h = try run1("ReduceSum", [f([1, 0.0001], [2], .float16)], ["keepdims": .int(0)])
        XCTAssertEqual(h.floats, [1]); XCTAssertEqual(h.dtype, .float16)
    }

    func testArgMaxArgMin() throws {
        // x = [[2,1,2],[0,5,5]].
        let x = f([2, 1, 2, 0, 5, 5], [2, 3])
        XCTAssertEqual(try run1("ArgMax", [x], ["axis": .int(1)]).ints, [0, 1])
        XCTAssertEqual(try run1("ArgMax", [x], ["axis": .int(1)]).shape, [2, 1])
        XCTAssertEqual(try run1("ArgMax", [x], ["axis": .int(-1), "select_last_index": .int(1), "keepdims": .int(0)]).ints, [2, 2])
        XCTAssertEqual(try run1("ArgMin", [x], ["axis": .int(0), "keepdims": .int(0)]).ints, [1, 0, 0])
        XCTAssertEqual(try run1("ArgMin", [x], ["axis": .int(1), "keepdims": .int(0)]).shape, [2])
        XCTAssertEqual(try run1("ArgMax", [i([-1, 3], [2], .uint64)], ["keepdims": .int(0)]).ints, [0])
        XCTAssertEqual(try run1("ArgMax", [x]).dtype, .int64)
        assertThrows("ArgMax", [x], ["axis": .int(2)])
        assertThrows("ArgMax", [f([], [0, 3])], ["axis": .int(0)])
    }

    // MARK: Cast

    func testCast() throws {
        func cast(_ t: Tensor, _ to: DType) throws -> Tensor { try run1("Cast", [t], ["to": .int(to.onnxDataType)]) }
        // float → int truncates toward zero; NaN → 0; int8 wraps 300 → 44.
        XCTAssertEqual(try cast(f([-1.7, 1.7, .nan, 300], [4]), .int32).ints, [-1, 1, 0, 300])
        XCTAssertEqual(try cast(f([300, -1], [2]), .int8).ints, [44, -1])
        XCTAssertEqual(try cast(f([300, -1], [2]), .uint8).ints, [44, 255])
        // float → float16: 1.0001 rounds to 1; 65520 overflows to inf; → bfloat16: 1.00390625 ties to even (1).
        let h = try cast(f([1.0001, 65520], [2]), .float16)
        XCTAssertEqual(h.dtype, .float16); XCTAssertEqual(h.floats, [1, .infinity])
        XCTAssertEqual(try cast(f([1.00390625, 3], [2]), .bfloat16).floats, [1, 3])
        // int → float, uint64 read unsigned (2^64 - 1 ≈ 1.8446744e19); int64 → int8 wraps 300 → 44.
        XCTAssertEqual(try cast(i([-1], [1], .uint64), .float32).floats, [1.8446744e19])
        XCTAssertEqual(try cast(i([300, -129], [2]), .int8).ints, [44, 127])
        XCTAssertEqual(try cast(i([-1], [1], .int32), .uint64).ints, [-1])
        // bool conversions.
        XCTAssertEqual(try cast(f([0, -0.5, .nan], [3]), .bool).bools, [false, true, true])
        XCTAssertEqual(try cast(b([true, false], [2]), .float64).floats, [1, 0])
        XCTAssertEqual(try cast(b([true, false], [2]), .int16).ints, [1, 0])
        XCTAssertEqual(try cast(i([0, 7], [2]), .bool).bools, [false, true])
        // CastLike takes the dtype of input 1.
        let like = try run1("CastLike", [f([2.9], [1]), i([], [0], .int16)])
        XCTAssertEqual(like.dtype, .int16); XCTAssertEqual(like.ints, [2])
        // Unknown / unsupported target types.
        assertThrows("Cast", [f([1], [1])], ["to": .int(17)])
        assertThrows("Cast", [f([1], [1])])
    }

    // MARK: determinism and large tensors

    func testThreadCountDoesNotChangeResults() throws {
        // Large enough that even the cheap ops (≥ 2^18 elements per chunk) split.
        let n = 8 * 64 * 1100
        let x = f(noise(n, seed: 7), [8, 64, 1100])
        let y = f(noise(64, seed: 9), [64, 1])
        for (op, inputs, attrs) in [
            ("Add", [x, y], [:]),
            ("Sigmoid", [x], [:]),
            ("Relu", [x], [:]),
            ("Softmax", [x], [:]),
            ("Softmax", [x], ["axis": Attribute.int(1)]),
            ("ReduceSum", [x, i([2], [1])], [:]),
            ("ReduceMean", [x, i([1], [1])], [:]),
            ("ReduceMax", [x, i([0, 2], [2])], [:]),
            ("ArgMax", [x], ["axis": Attribute.int(1)]),
        ] as [(String, [Tensor], [String: Attribute])] {
            let one = try run1(op, inputs, attrs, threads: 1)
            let four = try run1(op, inputs, attrs, threads: 4)
            XCTAssertEqual(one, four, "\(op) differs between 1 and 4 threads")
        }
        // The broadcast Add agrees with a naive loop.
        let r = try run1("Add", [x, y], threads: 4)
        guard let xv = x.floats, let yv = y.floats, let rv = r.floats else { return XCTFail() }
        for k in stride(from: 0, to: n, by: 997) { XCTAssertEqual(rv[k], xv[k] + yv[(k / 1100) % 64]) }
        // Reduce over the last axis agrees with a naive sum within float rounding.
        let s = try run1("ReduceSum", [x, i([2], [1])], ["keepdims": .int(0)])
        guard let sv = s.floats else { return XCTFail() }
        for row in [0, 17, 511] {
            var acc: Double = 0
            for j in 0..<1100 { acc += Double(xv[row * 1100 + j]) }
            XCTAssertEqual(Double(sv[row]), acc, accuracy: 1e-2)
        }
    }

    func testBroadcastPlanMergesAxes() {
        // [N,C,H,W] + [C,1,1]: H and W merge; the second operand steps 0/1/0.
        let p = EWKit.makePlan(out: [2, 3, 4, 5], count: 120, [[2, 3, 4, 5], [3, 1, 1]])
        XCTAssertEqual(p.dims, [2, 3, 20])
        XCTAssertEqual(p.s0, [60, 20, 1])
        XCTAssertEqual(p.s1, [0, 1, 0])
        // Same shapes collapse to one run; size-1 axes disappear; a scalar output keeps one dim.
        XCTAssertEqual(EWKit.makePlan(out: [2, 1, 3], count: 6, [[2, 1, 3], [2, 1, 3]]).dims, [6])
        XCTAssertEqual(EWKit.makePlan(out: [], count: 1, [[], []]).dims, [1])
        // Row bias [B,S,H] + [H]: one outer dim, inner contiguous for both.
        let q = EWKit.makePlan(out: [2, 3, 4], count: 24, [[2, 3, 4], [4]])
        XCTAssertEqual(q.dims, [6, 4]); XCTAssertEqual(q.s1, [0, 1])
    }

    func testRegistryHasEveryOp() {
        let ops = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Sum", "Mean", "Max", "Min", "Equal", "Greater", "Less",
                   "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "Not", "Where", "BitShift", "Neg", "Abs", "Exp",
                   "Log", "Sqrt", "Reciprocal", "Erf", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin",
                   "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf", "Relu", "LeakyRelu",
                   "PRelu", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Softplus", "Softsign",
                   "Gelu", "Mish", "ThresholdedRelu", "Shrink", "Clip", "Softmax", "LogSoftmax", "Hardmax", "ReduceSum",
                   "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                   "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "Cast", "CastLike",
                   "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Swish"]
        for op in ops { XCTAssertNotNil(KernelRegistry.kernels[op], op) }
    }
}
