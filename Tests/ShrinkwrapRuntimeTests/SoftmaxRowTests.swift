#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CKernels
import Foundation
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// sk_softmax_row and sk_softmax_columns, the Softmax / LogSoftmax kernels: on every level the bits of
/// the definition written out below in Swift (the interpreter's Swift code before the kernels), NaN /
/// ±inf / ±0 / huge values included; and the accuracy of its exp.
final class SoftmaxRowTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    /// The softmax exp, operation for operation: e^x = 2^n · e^r with n = round(x / ln 2) (adding 1.5·2²³
    /// rounds x / ln 2 to an integer in the low mantissa bits), r = x − n·ln 2 with ln 2 in two parts,
    /// e^r by its degree-7 Taylor polynomial, 2^n from the exponent bits; 0 below −87.33654.
    static func exp(_ x: Float) -> Float {
        let xc = Swift.min(Swift.max(x, -87.33654), 88.0)
        let magic: Float = 12582912
        let t = xc * 1.44269504088896341 + magic
        let n = t - magic
        let r = (xc - n * 0.693359375) + n * 2.12194440e-4
        var p: Float = 1.0 / 5040
        p = p * r + 1.0 / 720
        p = p * r + 1.0 / 120
        p = p * r + 1.0 / 24
        p = p * r + 1.0 / 6
        p = p * r + 0.5
        p = p * r + 1
        p = p * r + 1
        let scale = Float(bitPattern: (t.bitPattern &- 0x4B40_0000 &+ 127) &<< 23)
        return x < -87.33654 ? 0 : p * scale
    }

    func testExpAccuracy() {
        var worst: Double = 0
        var x: Float = -87.3
        while x <= 88 {
            let want = Foundation.exp(Double(x))
            worst = Swift.max(worst, Swift.abs(Double(Self.exp(x)) - want) / want)
            x += 0.0137
        }
        XCTAssertLessThan(worst, 3e-7, "worst relative error \(worst)")
        XCTAssertEqual(Self.exp(0), 1)
        XCTAssertEqual(Self.exp(-100), 0)
        XCTAssertEqual(Self.exp(-.infinity), 0)
        XCTAssertTrue(Self.exp(.nan).isNaN)
    }

    /// The interpreter's definition, in Swift, element by element.
    func reference(_ x: [Float], log: Bool) -> [Float] {
        var m = -Float.infinity
        for v in x where v > m { m = v }
        let shift = m.isFinite ? m : 0
        var y = x.map { Self.exp($0 - shift) }
        var acc = [Float](repeating: 0, count: 8)
        var j = 0
        while j + 8 <= y.count {
            for k in 0..<8 { acc[k] += y[j + k] }
            j += 8
        }
        var s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        while j < y.count { s += y[j]; j += 1 }
        if log {
            let ls = logf(s)
            y = x.map { ($0 - shift) - ls }
        } else {
            y = y.map { $0 / s }
        }
        return y
    }

    func kernel(_ x: [Float], log: Bool) -> [Float] {
        var y = [Float](repeating: .nan, count: x.count)
        x.withUnsafeBufferPointer { xb in
            y.withUnsafeMutableBufferPointer { yb in
                guard let xp = xb.baseAddress, let yp = yb.baseAddress else { return }
                sk_softmax_row(SIMDKernels.level, xp, yp, x.count, log ? 1 : 0)
            }
        }
        return y
    }

    func testEveryLevelGivesTheSwiftDefinitionsBits() {
        var rng = SplitMix(seed: 11)
        var rows: [[Float]] = []
        for len in [1, 2, 7, 8, 15, 16, 17, 31, 33, 100, 1000, 18385] {
            rows.append((0..<len).map { _ in (rng.nextFloat() - 0.5) * 40 })
        }
        // Values far below the maximum (exp underflows to 0), equal values, zeros of both signs, specials.
        rows.append((0..<40).map { Float($0) * -7 })
        rows.append([Float](repeating: 3, count: 19))
        rows.append([0, -0.0, 0, -0.0, -0.0])
        rows.append([-0.0, -1, -2])
        rows.append([1, .nan, 2, 3] + [Float](repeating: 0.5, count: 20))
        rows.append([.infinity, 1, 2])
        rows.append([-.infinity, 1, -.infinity])
        rows.append([Float](repeating: -.infinity, count: 18))
        rows.append([Float](repeating: .nan, count: 17))
        rows.append([1e30, -1e30, 3e38, -3e38])
        for level in Array(SIMDKernels.portable...SIMDKernels.best) {
            SIMDKernels.level = level
            for (r, x) in rows.enumerated() {
                for log in [false, true] {
                    let want = reference(x, log: log), got = kernel(x, log: log)
                    XCTAssertEqual(got.map(\.bitPattern), want.map(\.bitPattern), "row \(r) (\(x.count)), log \(log), level \(level)")
                }
            }
        }
    }

    /// The kernel through the Softmax node: a [2, 3, 40] input along its last axis is six such rows.
    func testSoftmaxNodeRowsAreKernelRows() throws {
        var rng = SplitMix(seed: 3)
        let x = (0..<240).map { _ in (rng.nextFloat() - 0.5) * 10 }
        for op in ["Softmax", "LogSoftmax"] {
            let y = try ActivationKernels.softmaxFamily(KernelContext(node: Node(name: "s", opType: op, inputs: ["x"], outputs: ["y"]),
                                                                      inputs: [Tensor(x, shape: [2, 3, 40])], threads: 2),
                                                        op == "Softmax" ? .softmax : .logSoftmax)[0]
            let rows = (0..<6).flatMap { reference(Array(x[($0 * 40)..<($0 * 40 + 40)]), log: op == "LogSoftmax") }
            XCTAssertEqual(y.floats?.map(\.bitPattern), rows.map(\.bitPattern), op)
        }
    }

    /// Softmax over a middle axis: every column of a [len, inner] block is the row softmax of its values
    /// (the columns kernel sums in row order, the row kernel in eight partial sums: rows of < 8 agree).
    func testColumnsKernelBits() throws {
        var rng = SplitMix(seed: 8)
        for (len, inner) in [(1, 5), (3, 17), (7, 300), (5, 1)] {
            var x = (0..<(len * inner)).map { _ in (rng.nextFloat() - 0.5) * 30 }
            if inner > 3 && len > 1 { x[1] = .nan; x[inner + 2] = .infinity; x[2] = -.infinity }
            for level in Array(SIMDKernels.portable...SIMDKernels.best) {
                SIMDKernels.level = level
                for log in [false, true] {
                    var y = [Float](repeating: .nan, count: x.count), m = [Float](repeating: 0, count: inner), s = m
                    x.withUnsafeBufferPointer { xb in
                        y.withUnsafeMutableBufferPointer { yb in
                            m.withUnsafeMutableBufferPointer { mb in
                                s.withUnsafeMutableBufferPointer { sb in
                                    guard let xp = xb.baseAddress, let yp = yb.baseAddress, let mp = mb.baseAddress,
                                          let sp = sb.baseAddress else { return }
                                    sk_softmax_columns(level, xp, yp, len, inner, inner, log ? 1 : 0, mp, sp)
                                }
                            }
                        }
                    }
                    for k in 0..<inner {
                        let column = (0..<len).map { x[$0 * inner + k] }
                        let got = (0..<len).map { y[$0 * inner + k] }
                        XCTAssertEqual(got.map(\.bitPattern), reference(column, log: log).map(\.bitPattern),
                                       "[\(len), \(inner)] column \(k), log \(log), level \(level)")
                    }
                }
            }
        }
    }
}
