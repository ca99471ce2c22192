#if canImport(Accelerate)
import Accelerate
#elseif canImport(Glibc)
import Glibc
#endif

/// Single-precision matrix multiply on the best backend available:
/// Accelerate on Apple platforms, OpenBLAS on Linux when `libopenblas.so.0`
/// can be loaded at run time (Debian's libopenblas0), else a portable Swift
/// kernel. Loading at run time keeps a plain `swift build` working on a
/// machine without OpenBLAS.
public enum GEMM {
    /// Which backend `sgemm` uses on this machine.
    public static var backendName: String {
        #if canImport(Accelerate)
        return "Accelerate"
        #else
        return OpenBLAS.shared == nil ? "Swift" : "OpenBLAS"
        #endif
    }

    /// Set to true to force the portable kernel (tests compare backends).
    nonisolated(unsafe) public static var forcePortable = false

    /// C[M×N] = alpha · op(A) · op(B) + beta · C, all row-major.
    /// `lda`, `ldb`, `ldc` are row strides of A, B, C as stored.
    public static func sgemm(transA: Bool, transB: Bool, m: Int, n: Int, k: Int, alpha: Float = 1,
                             a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int,
                             beta: Float = 0, c: UnsafeMutablePointer<Float>, ldc: Int, threads: Int) {
        guard m > 0, n > 0 else { return }
        if k == 0 {
            for i in 0..<m { for j in 0..<n { c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j] } }
            return
        }
        if !forcePortable {
            #if canImport(Accelerate)
            cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                        Int32(m), Int32(n), Int32(k), alpha, a, Int32(lda), b, Int32(ldb), beta, c, Int32(ldc))
            return
            #else
            if let blas = OpenBLAS.shared, m < Int(Int32.max), n < Int(Int32.max), k < Int(Int32.max) {
                tiled(m: m, n: n, k: k, threads: threads) { r0, rows, c0, cols in
                    let aTile = transA ? a + r0 : a + r0 * lda
                    let bTile = transB ? b + c0 * ldb : b + c0
                    blas.sgemm(101, transA ? 112 : 111, transB ? 112 : 111, Int32(rows), Int32(cols), Int32(k), alpha,
                               aTile, Int32(lda), bTile, Int32(ldb), beta, c + r0 * ldc + c0, Int32(ldc))
                }
                return
            }
            #endif
        }
        portable(transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda,
                 b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, threads: threads)
    }

    /// Splits C into tiles whose boundaries depend only on the problem's size,
    /// never on `threads`, and runs them concurrently, each with a
    /// single-threaded BLAS call. OpenBLAS's own threading picks different
    /// kernels (and so different rounding) for different thread counts; fixed
    /// tiles make every element's value independent of the thread count.
    static func tiled(m: Int, n: Int, k: Int, threads: Int,
                      _ body: @escaping (_ row: Int, _ rows: Int, _ col: Int, _ cols: Int) -> Void) {
        // At most 8 column tiles of ≥ 256 columns, or 4 row tiles of ≥ 64 rows:
        // big enough to amortize BLAS packing, enough to balance 2–8 threads.
        func roundUp(_ v: Int, _ q: Int) -> Int { (v + q - 1) / q * q }
        let colBlock = max(256, roundUp((n + 7) / 8, 64))
        let rowBlock = max(64, roundUp((m + 3) / 4, 16))
        var tiles: [(Int, Int, Int, Int)] = []
        if m * n * k < 1 << 18 {
            tiles = [(0, m, 0, n)]
        } else if n >= 2 * colBlock {
            for c0 in stride(from: 0, to: n, by: colBlock) { tiles.append((0, m, c0, min(colBlock, n - c0))) }
        } else if m >= 2 * rowBlock {
            for r0 in stride(from: 0, to: m, by: rowBlock) { tiles.append((r0, min(rowBlock, m - r0), 0, n)) }
        } else {
            tiles = [(0, m, 0, n)]
        }
        if tiles.count == 1 || threads <= 1 {
            for t in tiles { body(t.0, t.1, t.2, t.3) }
            return
        }
        parallelChunks(tiles.count, threads: threads) { range in
            for i in range { let t = tiles[i]; body(t.0, t.1, t.2, t.3) }
        }
    }

    /// The portable kernel: rows of C split across threads; each row
    /// accumulates over k in order, so results do not depend on `threads`.
    static func portable(transA: Bool, transB: Bool, m: Int, n: Int, k: Int, alpha: Float,
                         a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int,
                         beta: Float, c: UnsafeMutablePointer<Float>, ldc: Int, threads: Int) {
        // Make B row-major K×N contiguous so the inner loop streams.
        if transB {
            var bt = [Float](repeating: 0, count: k * n)
            for j in 0..<n { for p in 0..<k { bt[p * n + j] = b[j * ldb + p] } }
            bt.withUnsafeBufferPointer { buf in
                guard let base = buf.baseAddress else { return }
                portableRows(transA: transA, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: base, ldb: n,
                             beta: beta, c: c, ldc: ldc, threads: threads)
            }
        } else {
            portableRows(transA: transA, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb,
                         beta: beta, c: c, ldc: ldc, threads: threads)
        }
    }

    private static func portableRows(transA: Bool, m: Int, n: Int, k: Int, alpha: Float,
                                     a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int,
                                     beta: Float, c: UnsafeMutablePointer<Float>, ldc: Int, threads: Int) {
        let cs = SendablePointer(c)
        let work = m * n * k
        parallelChunks(m, threads: work < 1 << 16 ? 1 : threads) { rows in
            var acc = [Float](repeating: 0, count: n)
            acc.withUnsafeMutableBufferPointer { accp in
                for i in rows {
                    for j in 0..<n { accp[j] = 0 }
                    for p in 0..<k {
                        let av = transA ? a[p * lda + i] : a[i * lda + p]
                        let brow = b + p * ldb
                        for j in 0..<n { accp[j] += av * brow[j] }
                    }
                    let crow = cs.p + i * ldc
                    if beta == 0 {
                        for j in 0..<n { crow[j] = alpha * accp[j] }
                    } else {
                        for j in 0..<n { crow[j] = alpha * accp[j] + beta * crow[j] }
                    }
                }
            }
        }
    }
}

#if !canImport(Accelerate) && canImport(Glibc)
/// OpenBLAS entry points resolved with dlopen/dlsym.
final class OpenBLAS: @unchecked Sendable {
    typealias SgemmFn = @convention(c) (Int32, Int32, Int32, Int32, Int32, Int32, Float,
                                        UnsafePointer<Float>?, Int32, UnsafePointer<Float>?, Int32,
                                        Float, UnsafeMutablePointer<Float>?, Int32) -> Void
    typealias SetThreadsFn = @convention(c) (Int32) -> Void

    let sgemm: SgemmFn

    static let shared: OpenBLAS? = OpenBLAS()

    private init?() {
        if getenv("SHRINKWRAP_NO_BLAS") != nil { return nil }
        var handle: UnsafeMutableRawPointer?
        for name in ["libopenblas.so.0", "libopenblas.so", "libopenblasp.so.0"] {
            handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            if handle != nil { break }
        }
        guard let h = handle, let sym = dlsym(h, "cblas_sgemm") else { return nil }
        sgemm = unsafeBitCast(sym, to: SgemmFn.self)
        // Shrinkwrap parallelizes GEMM itself over fixed tiles (see `GEMM.tiled`),
        // so OpenBLAS runs single-threaded.
        if let t = dlsym(h, "openblas_set_num_threads") {
            unsafeBitCast(t, to: SetThreadsFn.self)(1)
        }
    }
}
#endif
