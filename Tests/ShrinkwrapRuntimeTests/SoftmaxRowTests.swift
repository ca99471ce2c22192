#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CKernels
import ShrinkwrapIR
@testable import ShrinkwrapRuntime
import ShrinkwrapTestSupport
import XCTest

/// sk_softmax_row, the Softmax / LogSoftmax of a contiguous row: on every level the bits of the Swift
/// definition it replaced (written out below as the reference), NaN / ±inf / ±0 / huge values included.
final class SoftmaxRowTests: XCTestCase {
    override func tearDown() { SIMDKernels.level = SIMDKernels.best }

    /// The interpreter's definition, in Swift, element by element.
    func reference(_ x: [Float], log: Bool) -> [Float] {
        var m = -Float.infinity
        for v in x where v > m { m = v }
        let shift = m.isFinite ? m : 0
        var y = x.map { EWKit.fastExp($0 - shift) }
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
}
