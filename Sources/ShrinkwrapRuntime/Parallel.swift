import Dispatch

/// Splits `0..<count` into at most `threads` contiguous chunks and runs `body`
/// on each concurrently. Every element is processed by exactly one call, so
/// results do not depend on the thread count when `body` writes disjoint
/// outputs and reduces in a fixed order within an element.
@inlinable
public func parallelChunks(_ count: Int, threads: Int, minChunk: Int = 1, _ body: (Range<Int>) -> Void) {
    guard count > 0 else { return }
    let chunks = max(1, min(threads, count / max(minChunk, 1)))
    if chunks <= 1 { body(0..<count); return }
    let per = (count + chunks - 1) / chunks
    DispatchQueue.concurrentPerform(iterations: chunks) { c in
        let lo = c * per
        let hi = min(count, lo + per)
        if lo < hi { body(lo..<hi) }
    }
}

/// A raw pointer wrapper that may cross into concurrent closures; callers
/// guarantee that concurrent writers touch disjoint elements.
public struct SendablePointer<T>: @unchecked Sendable {
    public let p: UnsafeMutablePointer<T>
    public init(_ p: UnsafeMutablePointer<T>) { self.p = p }
}
