import Dispatch
import ShrinkwrapRuntime
import XCTest

/// parallelChunks on the persistent worker pool (CWorkPool): every element exactly once, for any
/// thread count, with jobs back to back, nested, and submitted from several threads at once (the
/// pool takes one job at a time; the others run on libdispatch).
final class ParallelTests: XCTestCase {
    /// Runs parallelChunks over `count` elements, returning how often each element was visited.
    func visits(_ count: Int, threads: Int, minChunk: Int = 1) -> [Int] {
        var hits = [Int](repeating: 0, count: count)
        hits.withUnsafeMutableBufferPointer { b in
            guard let base = b.baseAddress else { return }
            let p = SendablePointer(base)
            parallelChunks(count, threads: threads, minChunk: minChunk) { r in for i in r { p.p[i] += 1 } }
        }
        return hits
    }

    func testEveryElementOnceForAnyThreadCount() {
        for threads in 1...6 {
            for count in [1, 2, 3, 7, 64, 1000, 4097] {
                for minChunk in [1, 5, 100] {
                    XCTAssertEqual(visits(count, threads: threads, minChunk: minChunk), [Int](repeating: 1, count: count),
                                   "count \(count), threads \(threads), minChunk \(minChunk)")
                }
            }
        }
    }

    func testManySmallJobsBackToBack() {
        var sum = 0
        for job in 0..<20_000 {
            var parts = [Int](repeating: 0, count: 4)
            parts.withUnsafeMutableBufferPointer { b in
                guard let base = b.baseAddress else { return }
                let p = SendablePointer(base)
                parallelChunks(4, threads: 4) { r in for i in r { p.p[i] = job + i } }
            }
            sum += parts.reduce(0, +) - 4 * job
        }
        XCTAssertEqual(sum, 20_000 * 6)
    }

    func testNestedLoopsRunInline() {
        var grid = [Int](repeating: 0, count: 64 * 64)
        grid.withUnsafeMutableBufferPointer { b in
            guard let base = b.baseAddress else { return }
            let p = SendablePointer(base)
            parallelChunks(64, threads: 3) { rows in
                for row in rows {
                    parallelChunks(64, threads: 3) { cols in for col in cols { p.p[row * 64 + col] += row * 64 + col } }
                }
            }
        }
        XCTAssertEqual(grid, Array(0..<(64 * 64)))
    }

    func testConcurrentSubmittersEachGetTheirOwnResults() {
        let submitters = 4
        let failures = UnsafeMutablePointer<Int>.allocate(capacity: submitters)
        failures.initialize(repeating: 0, count: submitters)
        defer { failures.deallocate() }
        let f = SendablePointer(failures)
        DispatchQueue.concurrentPerform(iterations: submitters) { s in
            for round in 0..<2_000 {
                let count = 16 + (round % 7)
                let out = UnsafeMutablePointer<Int>.allocate(capacity: count)
                out.initialize(repeating: 0, count: count)
                let o = SendablePointer(out)
                parallelChunks(count, threads: 2) { r in for i in r { o.p[i] = s * 1_000_000 + round * 100 + i } }
                for i in 0..<count where out[i] != s * 1_000_000 + round * 100 + i { f.p[s] += 1 }
                out.deallocate()
            }
        }
        XCTAssertEqual((0..<submitters).map { failures[$0] }, [Int](repeating: 0, count: submitters))
    }
}
