import CKernels

/// Single-precision matrix multiply on Shrinkwrap's own kernels (CKernels' `sk_sgemm`: AVX-512, AVX2+FMA
/// or portable C, chosen at run time; `SHRINKWRAP_SIMD=portable|avx2|avx512` pins a level).
///
/// The property everything above relies on: each element of C is a fixed sequence of operations over k —
/// chains in increasing k over fixed blocks of 256, the block sums added in order, then the alpha / beta
/// finish (`sk_sgemm` in CKernels.h) — so its bits depend only on its row of op(A), its column of op(B),
/// K, alpha, beta and the SIMD level — never on M, N, tiling, which other rows or columns share the call,
/// or the thread count. Batching N inputs into one call reproduces the one-input numbers bit for bit, and
/// splitting C across threads is deterministic by construction.
public enum GEMM {
    /// What runs `sgemm` on this machine, e.g. "Shrinkwrap avx512".
    public static var backendName: String { "Shrinkwrap \(SIMDKernels.name(level))" }

    /// Set to true to force the portable level (tests compare levels).
    nonisolated(unsafe) public static var forcePortable = false

    /// The level sgemm runs at: the portable one when `forcePortable`, else `SIMDKernels.level`.
    static var level: Int32 { forcePortable ? SIMDKernels.portable : SIMDKernels.level }

    /// C[M×N] = alpha · op(A) · op(B) + beta · C, all row-major.
    /// `lda`, `ldb`, `ldc` are row strides of A, B, C as stored.
    public static func sgemm(transA: Bool, transB: Bool, m: Int, n: Int, k: Int, alpha: Float = 1,
                             a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int,
                             beta: Float = 0, c: UnsafeMutablePointer<Float>, ldc: Int, threads: Int) {
        guard m > 0, n > 0 else { return }
        let level = self.level
        let ta: Int32 = transA ? 1 : 0, tb: Int32 = transB ? 1 : 0
        let parts = split(m: m, n: n, k: k, threads: threads)
        if parts.count <= 1 {
            sk_sgemm(level, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
            return
        }
        let cs = SendablePointer(c)
        parallelChunks(parts.count, threads: threads) { range in
            for t in range {
                let p = parts[t]
                let aTile = transA ? a + p.row : a + p.row * lda
                let bTile = transB ? b + p.col * ldb : b + p.col
                sk_sgemm(level, ta, tb, p.rows, p.cols, k, alpha, aTile, lda, bTile, ldb, beta,
                         cs.p + p.row * ldc + p.col, ldc)
            }
        }
    }

    /// A block of C computed by one kernel call.
    struct Part: Equatable {
        var row: Int, rows: Int, col: Int, cols: Int
    }

    /// Splits C into disjoint blocks for `threads` threads: column blocks (multiples of 64) when N is
    /// wide enough, else row blocks (multiples of 8); one block for small problems. Any split gives the
    /// same bits (see the type's documentation), so it is chosen for speed only.
    static func split(m: Int, n: Int, k: Int, threads: Int) -> [Part] {
        let whole = [Part(row: 0, rows: m, col: 0, cols: n)]
        if threads <= 1 || m.multipliedReportingOverflow(by: n).partialValue.multipliedReportingOverflow(by: max(k, 1)).partialValue < 1 << 17 {
            return whole
        }
        let pieces = threads * 2
        if n >= 128 {
            let width = max(64, (n + pieces - 1) / pieces + 63) / 64 * 64
            return stride(from: 0, to: n, by: width).map { Part(row: 0, rows: m, col: $0, cols: min(width, n - $0)) }
        }
        if m >= 16 {
            let height = max(8, ((m + pieces - 1) / pieces + 7) / 8 * 8)
            return stride(from: 0, to: m, by: height).map { Part(row: $0, rows: min(height, m - $0), col: 0, cols: n) }
        }
        return whole
    }
}
