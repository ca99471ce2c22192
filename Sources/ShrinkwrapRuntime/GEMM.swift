import CKernels
#if canImport(Accelerate)
import Accelerate
#elseif canImport(Glibc)
import Glibc
#endif

/// Single-precision matrix multiply on the best backend available:
/// Accelerate on Apple platforms, OpenBLAS on Linux when `libopenblas.so.0`
/// can be loaded at run time (Debian's libopenblas0), else Shrinkwrap's own
/// kernel (CKernels' `sk_sgemm`: AVX-512, AVX2+FMA or portable C, chosen at
/// run time). Loading at run time keeps a plain `swift build` working on a
/// machine without OpenBLAS.
///
/// Our kernel alone has the property batching wants — an element's bits
/// depend only on its row, its column and K (`sk_sgemm` in CKernels.h) — and
/// is as fast as OpenBLAS on most corpus shapes, but it is not the default
/// yet: on ppocr-v4-rec's ill-conditioned attention one real sample ends
/// farther from a float64 evaluation than onnxruntime (4e-4 vs 2.2e-4) with
/// it. `SHRINKWRAP_NO_BLAS=1` runs it.
public enum GEMM {
    /// Which backend `sgemm` uses on this machine.
    public static var backendName: String {
        #if canImport(Accelerate)
        if !forcePortable { return "Accelerate" }
        #else
        if !forcePortable, let blas = OpenBLAS.shared { return blas.coreName.map { "OpenBLAS \($0)" } ?? "OpenBLAS" }
        #endif
        return "Shrinkwrap \(SIMDKernels.name(SIMDKernels.level))"
    }

    /// Whether the backend multiplies small products (M·N·K ≤ 100³) without packing its operands
    /// (OpenBLAS 0.3's small-matrix kernels): callers that split a GEMM may then prefer small calls.
    public static var packsSmallProducts: Bool {
        #if canImport(Accelerate)
        return false
        #else
        return !forcePortable && OpenBLAS.shared != nil
        #endif
    }

    /// Sets the environment OpenBLAS reads when it loads (threads, kernel family; see
    /// `OpenBLAS.prepareEnvironment`). Call it before starting threads; the first GEMM does otherwise.
    public static func prepareEnvironment() {
        #if !canImport(Accelerate) && canImport(Glibc)
        OpenBLAS.prepareEnvironment()
        #endif
    }

    /// Set to true to force Shrinkwrap's own kernel (tests compare backends).
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
                let tiles = tiles(m: m, n: n, k: k)
                runTiles(tiles, threads: threads) { t in
                    let aTile = transA ? a + t.row : a + t.row * lda
                    let bTile = transB ? b + t.col * ldb : b + t.col
                    func call(_ out: UnsafeMutablePointer<Float>, _ ldOut: Int) {
                        blas.sgemm(101, transA ? 112 : 111, transB ? 112 : 111, Int32(t.rows), Int32(t.cols),
                                   Int32(k), alpha, aTile, Int32(lda), bTile, Int32(ldb), beta, out, Int32(ldOut))
                    }
                    let cTile = c + t.row * ldc + t.col
                    if t.skipRows == 0, t.skipCols == 0 { call(cTile, ldc); return }
                    // The last tile, moved back to full size: computed aside, then only
                    // the part no earlier tile wrote is copied in.
                    var scratch = [Float](repeating: 0, count: t.rows * t.cols)
                    scratch.withUnsafeMutableBufferPointer { sp in
                        guard let s = sp.baseAddress else { return }
                        // Each element of C depends only on itself: the overlap (which the
                        // previous tile may be writing on another thread) is neither read nor kept.
                        if beta != 0 {
                            for i in t.skipRows..<t.rows { for j in t.skipCols..<t.cols { s[i * t.cols + j] = cTile[i * ldc + j] } }
                        }
                        call(s, t.cols)
                        for i in t.skipRows..<t.rows { for j in t.skipCols..<t.cols { cTile[i * ldc + j] = s[i * t.cols + j] } }
                    }
                }
                return
            }
            #endif
        }
        portable(transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda,
                 b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, threads: threads)
    }

    /// One block of C for one BLAS call: rows `row..<row+rows`, columns
    /// `col..<col+cols`, of which the first `skipRows` rows / `skipCols`
    /// columns belong to the previous tile (the last tile is moved back so it
    /// has the same size as the others).
    struct Tile: Equatable {
        var row: Int, rows: Int, col: Int, cols: Int
        var skipRows = 0, skipCols = 0
    }

    /// Splits C into tiles whose boundaries depend only on the problem's size,
    /// never on the thread count, and which all have the same shape. OpenBLAS
    /// picks its kernel by shape (its own threading, its small-matrix and
    /// GEMV paths), and different kernels round differently: one thread per
    /// tile keeps every element independent of the thread count, and one tile
    /// shape keeps equal columns equal wherever a tile boundary falls (a short
    /// last tile of 232 columns took OpenBLAS 0.3.21's other path on AVX-512
    /// and changed the last 232 of 1000 logits by one ulp).
    static func tiles(m: Int, n: Int, k: Int) -> [Tile] {
        // Up to 8 column tiles of ≥ 64 columns or 4 row tiles of ≥ 16 rows: enough to share between
        // threads, each still a full call (tiles of ≤ 100³ take OpenBLAS's small kernels, which do
        // not pack). A column tile reads all of A again, a row tile all of B: the split re-reads the
        // smaller of the two. With K > 768 every tile also stays above that 100³: the packed kernels sum
        // K in blocks that depend on K alone, so each tile has the bits of the whole call (checked
        // on 300 random shapes with K in 769 ... 4768), while the small kernel's single chain moved a
        // GEMM of mp-pose-landmark-full with K in (768, 1024] from 7.2e-4 to 7.8e-4 of TFLite's
        // reference kernels, past the 7.4e-4 by which TFLite's own kernels differ (the coverage gate).
        func roundUp(_ v: Int, _ q: Int) -> Int { (v + q - 1) / q * q }
        let small = k <= 768
        let colBlock = max(64, roundUp((n + 7) / 8, 32)), rowBlock = max(16, roundUp((m + 3) / 4, 16))
        if m * n * k < 1 << 18 { return [Tile(row: 0, rows: m, col: 0, cols: n)] }
        func packed(_ rows: Int, _ cols: Int) -> Bool { small || rows * cols * k > 1_000_000 }
        let byColumns = n >= 2 * colBlock && packed(m, colBlock), byRows = m >= 2 * rowBlock && packed(rowBlock, n)
        if byColumns && (!byRows || m <= n || !small) {
            return stride(from: 0, to: n, by: colBlock).map { c0 in
                let start = min(c0, n - colBlock)
                return Tile(row: 0, rows: m, col: start, cols: colBlock, skipCols: c0 - start)
            }
        }
        if byRows {
            return stride(from: 0, to: m, by: rowBlock).map { r0 in
                let start = min(r0, m - rowBlock)
                return Tile(row: start, rows: rowBlock, col: 0, cols: n, skipRows: r0 - start)
            }
        }
        return [Tile(row: 0, rows: m, col: 0, cols: n)]
    }

    /// Runs `body` on every tile, concurrently when there are several.
    static func runTiles(_ tiles: [Tile], threads: Int, _ body: @escaping (Tile) -> Void) {
        if tiles.count == 1 || threads <= 1 {
            for t in tiles { body(t) }
            return
        }
        parallelChunks(tiles.count, threads: threads) { range in
            for i in range { body(tiles[i]) }
        }
    }

    /// Shrinkwrap's own kernel, C split into blocks across threads (any split gives the same bits).
    /// (The Swift loop that used to be the fallback is gone: one portable kernel, in C.)
    static func portable(transA: Bool, transB: Bool, m: Int, n: Int, k: Int, alpha: Float,
                         a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int,
                         beta: Float, c: UnsafeMutablePointer<Float>, ldc: Int, threads: Int) {
        let level = SIMDKernels.level
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

#if !canImport(Accelerate) && canImport(Glibc)
/// OpenBLAS entry points resolved with dlopen/dlsym.
final class OpenBLAS: @unchecked Sendable {
    typealias SgemmFn = @convention(c) (Int32, Int32, Int32, Int32, Int32, Int32, Float,
                                        UnsafePointer<Float>?, Int32, UnsafePointer<Float>?, Int32,
                                        Float, UnsafeMutablePointer<Float>?, Int32) -> Void
    typealias SetThreadsFn = @convention(c) (Int32) -> Void

    let sgemm: SgemmFn
    /// The kernel family OpenBLAS chose (`openblas_get_corename`), e.g. "SkylakeX".
    let coreName: String?

    static let shared: OpenBLAS? = OpenBLAS()

    /// Sets the variables OpenBLAS reads once, when it is loaded:
    /// - `OPENBLAS_NUM_THREADS=1` unless set: Shrinkwrap splits GEMMs itself (`GEMM.tiles`);
    ///   with the default, OpenBLAS starts a worker per core at load, and they spin for ~0.1 s.
    /// - `OPENBLAS_CORETYPE`, the kernel family: `SHRINKWRAP_OPENBLAS_CORETYPE` when set, else
    ///   SkylakeX where the CPU has AVX-512 F/VL/BW/DQ, whatever `OPENBLAS_CORETYPE` says.
    ///   Shrinkwrap picks its GEMM kernels from the CPU as the peer runtimes do; OpenBLAS is
    ///   an implementation detail here, and the variable is often set machine-wide for other
    ///   programs (these build machines set Haswell). OpenBLAS 0.3.21 (Debian 12) does not
    ///   know AMD Zen 5 either and picks Haswell there. Its AVX2 Haswell kernels run sgemm at
    ///   half the speed of the AVX-512 ones on Zen 5 (measured on an EPYC family 26, 1 thread:
    ///   100–126 against 186–238 GFLOPS), and only the AVX-512 family has the small-matrix
    ///   kernels that `GEMM.packsSmallProducts` counts on. Where OpenBLAS knows the CPU it
    ///   picks SkylakeX or Cooperlake, whose sgemm kernels are the same.
    /// `setenv` is not safe while other threads read the environment, so the CLI calls this
    /// first thing; the first GEMM calls it again (a no-op then: the values are already set).
    static func prepareEnvironment() {
        setenv("OPENBLAS_NUM_THREADS", "1", 0)
        if let forced = getenv("SHRINKWRAP_OPENBLAS_CORETYPE") {
            if getenv("OPENBLAS_CORETYPE").map({ strcmp($0, forced) != 0 }) ?? true { setenv("OPENBLAS_CORETYPE", forced, 1) }
        } else if SIMDKernels.best == SIMDKernels.avx512,
                  getenv("OPENBLAS_CORETYPE").map({ strcmp($0, "SkylakeX") != 0 }) ?? true {
            setenv("OPENBLAS_CORETYPE", "SkylakeX", 1)
        }
    }

    private init?() {
        if getenv("SHRINKWRAP_NO_BLAS") != nil { return nil }
        Self.prepareEnvironment()
        var handle: UnsafeMutableRawPointer?
        for name in ["libopenblas.so.0", "libopenblas.so", "libopenblasp.so.0"] {
            handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            if handle != nil { break }
        }
        guard let h = handle, let sym = dlsym(h, "cblas_sgemm") else { return nil }
        sgemm = unsafeBitCast(sym, to: SgemmFn.self)
        typealias CoreNameFn = @convention(c) () -> UnsafePointer<CChar>?
        if let c = dlsym(h, "openblas_get_corename"), let name = unsafeBitCast(c, to: CoreNameFn.self)() {
            coreName = String(cString: name)
        } else {
            coreName = nil
        }
        // Shrinkwrap parallelizes GEMM itself over fixed tiles (see `GEMM.tiled`),
        // so OpenBLAS runs single-threaded.
        if let t = dlsym(h, "openblas_set_num_threads") {
            unsafeBitCast(t, to: SetThreadsFn.self)(1)
        }
    }
}
#endif
