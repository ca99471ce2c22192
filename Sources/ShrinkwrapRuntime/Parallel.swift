import CWorkPool
import Dispatch

/// Splits `0..<count` into at most `threads` contiguous chunks and runs `body`
/// on each concurrently. Every element is processed by exactly one call, so
/// results do not depend on the thread count when `body` writes disjoint
/// outputs and reduces in a fixed order within an element.
///
/// The chunks run on the calling thread and the persistent workers of
/// CWorkPool; when the pool is busy (another thread's job, or a parallel loop
/// inside a chunk) they run on libdispatch instead. The chunk boundaries are
/// the same either way.
public func parallelChunks(_ count: Int, threads: Int, minChunk: Int = 1, _ body: (Range<Int>) -> Void) {
    guard count > 0 else { return }
    let chunks = max(1, min(threads, count / max(minChunk, 1)))
    if chunks <= 1 { body(0..<count); return }
    let per = (count + chunks - 1) / chunks
    withoutActuallyEscaping(body) { escaping in
        let job = ChunkJob(count: count, per: per, body: escaping)
        let ran = withExtendedLifetime(job) {
            swp_run(Int64(chunks), Int32(clamping: threads), chunkThunk, Unmanaged.passUnretained(job).toOpaque())
        }
        if ran != 0 {
            DispatchQueue.concurrentPerform(iterations: chunks) { job.run(Int64($0)) }
        }
    }
}

/// One parallelChunks call, handed to the pool's C threads by pointer.
private final class ChunkJob: @unchecked Sendable {
    let count: Int, per: Int
    let body: (Range<Int>) -> Void
    init(count: Int, per: Int, body: @escaping (Range<Int>) -> Void) { self.count = count; self.per = per; self.body = body }

    func run(_ chunk: Int64) {
        let lo = Int(chunk) * per, hi = min(count, lo + per)
        if lo < hi { body(lo..<hi) }
    }
}

private func chunkThunk(_ ctx: UnsafeMutableRawPointer?, _ chunk: Int64) {
    guard let ctx else { return }
    Unmanaged<ChunkJob>.fromOpaque(ctx).takeUnretainedValue().run(chunk)
}

/// A raw pointer wrapper that may cross into concurrent closures; callers
/// guarantee that concurrent writers touch disjoint elements.
public struct SendablePointer<T>: @unchecked Sendable {
    public let p: UnsafeMutablePointer<T>
    public init(_ p: UnsafeMutablePointer<T>) { self.p = p }
}
