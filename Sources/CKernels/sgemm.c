// SGEMM with register-blocked micro-kernels (AVX-512 8×32, AVX2 6×16, portable 4×8) over packed panels,
// a one-row path for M = 1 (and N = 1, transposed). The bit-exactness contract is stated on sk_sgemm in
// CKernels.h: every path below sums an element as per-block chains over the same fixed K blocks of SK_KC
// (each chain over k increasing from 0, the block sums added in order), and finishes it with the same
// alpha / beta arithmetic.
#pragma STDC FP_CONTRACT OFF
#include "CKernels.h"
#include "internal.h"
#include "sgemm_impl.h"
#include <stdlib.h>
#include <string.h>

/// The K block: part of the bit-exactness contract (changing it changes results), not a tuning knob.
enum { SK_KC = 256 };

// MARK: - packing

/// MR-row panels of op(A)[i0 ..< i0+mc][p0 ..< p0+kc], each stored k-major (MR values per k), rows past
/// the matrix zero.
static void pack_a(int mr, int ta, const float *a, ptrdiff_t lda, ptrdiff_t i0, ptrdiff_t mc, ptrdiff_t p0,
                   ptrdiff_t kc, float *dst) {
    for (ptrdiff_t ir = 0; ir < mc; ir += mr) {
        ptrdiff_t rows = mc - ir < mr ? mc - ir : mr;
        for (ptrdiff_t i = 0; i < mr; i++) {
            float *d = dst + i;
            if (i >= rows) {
                for (ptrdiff_t p = 0; p < kc; p++) d[p * mr] = 0;
            } else if (ta) {
                const float *s = a + p0 * lda + (i0 + ir + i);
                for (ptrdiff_t p = 0; p < kc; p++) d[p * mr] = s[p * lda];
            } else {
                const float *s = a + (i0 + ir + i) * lda + p0;
                for (ptrdiff_t p = 0; p < kc; p++) d[p * mr] = s[p];
            }
        }
        dst += kc * mr;
    }
}

/// NR-column panels of op(B)[p0 ..< p0+kc][j0 ..< j0+nc], each k-major (NR values per k), columns past the
/// matrix zero.
static void pack_b(int nr, int tb, const float *b, ptrdiff_t ldb, ptrdiff_t p0, ptrdiff_t kc, ptrdiff_t j0,
                   ptrdiff_t nc, float *dst) {
    for (ptrdiff_t jr = 0; jr < nc; jr += nr) {
        ptrdiff_t cols = nc - jr < nr ? nc - jr : nr;
        if (tb) {
            for (ptrdiff_t j = 0; j < nr; j++) {
                float *d = dst + j;
                if (j >= cols) {
                    for (ptrdiff_t p = 0; p < kc; p++) d[p * nr] = 0;
                } else {
                    const float *s = b + (j0 + jr + j) * ldb + p0;
                    for (ptrdiff_t p = 0; p < kc; p++) d[p * nr] = s[p];
                }
            }
        } else {
            for (ptrdiff_t p = 0; p < kc; p++) {
                const float *s = b + (p0 + p) * ldb + j0 + jr;
                float *d = dst + p * nr;
                memcpy(d, s, (size_t)cols * sizeof(float));
                for (ptrdiff_t j = cols; j < nr; j++) d[j] = 0;
            }
        }
        dst += kc * nr;
    }
}

// MARK: - portable kernels

static float finish_scalar(float acc, float alpha, float beta, float old) {
    if (beta == 0) return alpha == 1 ? acc : alpha * acc;
    return alpha * acc + beta * old;
}

/// 4×8 with the compilers' generic vector type (SSE2 / NEON registers, no target features): per lane a
/// rounded multiply then a rounded add, exactly the scalar arithmetic.
typedef float sk_v4 __attribute__((vector_size(16)));

static inline sk_v4 v4_load(const float *p) {
    sk_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v4_store(float *p, sk_v4 v) { memcpy(p, &v, sizeof v); }

static void ukr_portable(ptrdiff_t kc, const float *ap, const float *bp, float *c, ptrdiff_t ldc, int load,
                         int last, float alpha, float beta) {
    sk_v4 zero = {0, 0, 0, 0};
    sk_v4 c00 = zero, c01 = zero, c10 = zero, c11 = zero, c20 = zero, c21 = zero, c30 = zero, c31 = zero;
    for (ptrdiff_t p = 0; p < kc; p++) {
        sk_v4 b0 = v4_load(bp), b1 = v4_load(bp + 4);
        sk_v4 a0 = zero + ap[0], a1 = zero + ap[1], a2 = zero + ap[2], a3 = zero + ap[3];
        c00 = c00 + a0 * b0; c01 = c01 + a0 * b1;
        c10 = c10 + a1 * b0; c11 = c11 + a1 * b1;
        c20 = c20 + a2 * b0; c21 = c21 + a2 * b1;
        c30 = c30 + a3 * b0; c31 = c31 + a3 * b1;
        ap += 4;
        bp += 8;
    }
    float acc[4][8];
    v4_store(acc[0], c00); v4_store(acc[0] + 4, c01);
    v4_store(acc[1], c10); v4_store(acc[1] + 4, c11);
    v4_store(acc[2], c20); v4_store(acc[2] + 4, c21);
    v4_store(acc[3], c30); v4_store(acc[3] + 4, c31);
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 8; j++) {
            float v = load ? c[i * ldc + j] + acc[i][j] : acc[i][j];
            c[i * ldc + j] = last ? finish_scalar(v, alpha, beta, c[i * ldc + j]) : v;
        }
    }
}

static void row_portable(ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t n, float *c,
                         float alpha, float beta) {
    enum { W = 64 };
    for (ptrdiff_t j0 = 0; j0 < n; j0 += W) {
        ptrdiff_t w = n - j0 < W ? n - j0 : W;
        float acc[W];
        for (ptrdiff_t j = 0; j < w; j++) acc[j] = 0;
        for (ptrdiff_t p = 0; p < k; p++) {
            float av = a[p];
            const float *bk = b + p * ldb + j0;
            for (ptrdiff_t j = 0; j < w; j++) acc[j] = acc[j] + av * bk[j];
        }
        for (ptrdiff_t j = 0; j < w; j++) c[j0 + j] = finish_scalar(acc[j], alpha, beta, c[j0 + j]);
    }
}

static float madd_portable(float a, float b, float acc) { return acc + a * b; }

const sk_gemm_impl sk_gemm_portable = {4, 8, ukr_portable, row_portable, NULL, madd_portable};

static const sk_gemm_impl *impl_for(int32_t level) {
#if SK_X86
    switch (sk_level_clamp(level)) {
    case SK_LEVEL_AVX512: return &sk_gemm_avx512;
    case SK_LEVEL_AVX2: return &sk_gemm_avx2;
    default: break;
    }
#else
    (void)level;
#endif
    return &sk_gemm_portable;
}

// MARK: - drivers

/// One tile through a temporary MR×NR block (edge tiles): the valid part of C is copied in when the
/// kernel reads it, and only the valid part is copied back.
static void edge_tile(const sk_gemm_impl *im, ptrdiff_t kc, const float *ap, const float *bp, float *c,
                      ptrdiff_t ldc, ptrdiff_t rows, ptrdiff_t cols, int load, int last, float alpha, float beta) {
    float tmp[16 * 64];
    int mr = im->mr, nr = im->nr;
    memset(tmp, 0, sizeof(float) * (size_t)(mr * nr));
    if (load || (last && beta != 0)) {
        for (ptrdiff_t i = 0; i < rows; i++) memcpy(tmp + i * nr, c + i * ldc, (size_t)cols * sizeof(float));
    }
    im->ukr(kc, ap, bp, tmp, nr, load, last, alpha, beta);
    for (ptrdiff_t i = 0; i < rows; i++) memcpy(c + i * ldc, tmp + i * nr, (size_t)cols * sizeof(float));
}

/// The packed path: N in blocks of nc, K in blocks of kcb (partial sums stored in C, exact), M in blocks
/// of mc; a packed B micro-panel is reused across all A micro-panels of the M block.
static int gemm_packed(const sk_gemm_impl *im, int ta, int tb, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha,
                       const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float beta, float *c,
                       ptrdiff_t ldc) {
    const int mr = im->mr, nr = im->nr;
    // K in fixed blocks of SK_KC (beta ≠ 0 comes here only with one block, see sk_sgemm).
    ptrdiff_t kcb = k < SK_KC ? k : SK_KC;
    ptrdiff_t mc = (ptrdiff_t)mr * 16;
    ptrdiff_t nc = ((ptrdiff_t)(1 << 18) / kcb) / nr * nr;
    if (nc < nr) nc = nr;
    ptrdiff_t nPadded = (n + nr - 1) / nr * nr;
    if (nc > nPadded) nc = nPadded;
    ptrdiff_t mPadded = (m + mr - 1) / mr * mr;
    if (mc > mPadded) mc = mPadded;
    float *abuf = malloc((size_t)(mc * kcb) * sizeof(float));
    float *bbuf = malloc((size_t)(nc * kcb) * sizeof(float));
    if (abuf == NULL || bbuf == NULL) {
        free(abuf);
        free(bbuf);
        return 0;
    }
    for (ptrdiff_t jc = 0; jc < n; jc += nc) {
        ptrdiff_t ncur = n - jc < nc ? n - jc : nc;
        for (ptrdiff_t pc = 0; pc < k; pc += kcb) {
            ptrdiff_t kc = k - pc < kcb ? k - pc : kcb;
            int load = pc > 0, last = pc + kc >= k;
            pack_b(nr, tb, b, ldb, pc, kc, jc, ncur, bbuf);
            for (ptrdiff_t ic = 0; ic < m; ic += mc) {
                ptrdiff_t mcur = m - ic < mc ? m - ic : mc;
                pack_a(mr, ta, a, lda, ic, mcur, pc, kc, abuf);
                for (ptrdiff_t jr = 0; jr < ncur; jr += nr) {
                    const float *bp = bbuf + (jr / nr) * kc * nr;
                    ptrdiff_t cols = ncur - jr < nr ? ncur - jr : nr;
                    for (ptrdiff_t ir = 0; ir < mcur; ir += mr) {
                        const float *ap = abuf + (ir / mr) * kc * mr;
                        ptrdiff_t rows = mcur - ir < mr ? mcur - ir : mr;
                        float *ct = c + (ic + ir) * ldc + jc + jr;
                        if (rows == mr && cols == nr) im->ukr(kc, ap, bp, ct, ldc, load, last, alpha, beta);
                        else edge_tile(im, kc, ap, bp, ct, ldc, rows, cols, load, last, alpha, beta);
                    }
                }
            }
        }
    }
    free(abuf);
    free(bbuf);
    return 1;
}

typedef void (*sk_row_fn)(ptrdiff_t, const float *, const float *, ptrdiff_t, ptrdiff_t, float *, float, float);

/// One row in K blocks of SK_KC: each block's chain from 0 (into `tmp` after the first), added to the
/// running total in C, then alpha applied (beta ≠ 0 only with a single block). `kstep` is how far B's
/// pointer moves per k (ldb for B as stored, 1 for Bᵀ).
static void row_blocks(sk_row_fn fn, ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t kstep,
                       ptrdiff_t n, float *c, float alpha, float beta, float *tmp) {
    if (k <= SK_KC) {
        fn(k, a, b, ldb, n, c, alpha, beta);
        return;
    }
    fn(SK_KC, a, b, ldb, n, c, 1, 0);
    for (ptrdiff_t p0 = SK_KC; p0 < k; p0 += SK_KC) {
        ptrdiff_t kc = k - p0 < SK_KC ? k - p0 : SK_KC;
        fn(kc, a + p0, b + p0 * kstep, ldb, n, tmp, 1, 0);
        for (ptrdiff_t j = 0; j < n; j++) c[j] = c[j] + tmp[j];
    }
    if (alpha != 1)
        for (ptrdiff_t j = 0; j < n; j++) c[j] = alpha * c[j];
}

/// M = 1: the row kernel straight on B (B not transposed), or on NR·4-column chunks of Bᵀ transposed
/// into a small buffer.
static int gemm_row(const sk_gemm_impl *im, int ta, int tb, ptrdiff_t n, ptrdiff_t k, float alpha, const float *a,
                    ptrdiff_t lda, const float *b, ptrdiff_t ldb, float beta, float *c) {
    float *acopy = NULL;
    if (ta && k > 1) {
        acopy = malloc((size_t)k * sizeof(float));
        if (acopy == NULL) return 0;
        for (ptrdiff_t p = 0; p < k; p++) acopy[p] = a[p * lda];
        a = acopy;
    }
    int ok = 1;
    ptrdiff_t chunk = (ptrdiff_t)im->nr * 4;
    float *tmp = NULL;
    if (k > SK_KC) {
        tmp = malloc((size_t)(n > chunk ? n : chunk) * sizeof(float));
        if (tmp == NULL) {
            free(acopy);
            return 0;
        }
    }
    if (!tb) {
        row_blocks(im->row, k, a, b, ldb, ldb, n, c, alpha, beta, tmp);
    } else if (im->rowT != NULL && ldb < (1 << 27)) {
        row_blocks(im->rowT, k, a, b, ldb, 1, n, c, alpha, beta, tmp);
    } else {
        float *buf = malloc((size_t)(k * chunk) * sizeof(float));
        if (buf == NULL) {
            ok = 0;
        } else {
            for (ptrdiff_t j0 = 0; j0 < n; j0 += chunk) {
                ptrdiff_t w = n - j0 < chunk ? n - j0 : chunk;
                // Transposed in 16-deep slices of k: each slice reads one cache line per row of Bᵀ and
                // writes 16 rows of the buffer, all staying in L1.
                for (ptrdiff_t p0 = 0; p0 < k; p0 += 16) {
                    ptrdiff_t pe = k - p0 < 16 ? k : p0 + 16;
                    for (ptrdiff_t j = 0; j < w; j++) {
                        const float *s = b + (j0 + j) * ldb;
                        for (ptrdiff_t p = p0; p < pe; p++) buf[p * w + j] = s[p];
                    }
                }
                row_blocks(im->row, k, a, buf, w, w, w, c + j0, alpha, beta, tmp);
            }
            free(buf);
        }
    }
    free(acopy);
    free(tmp);
    return ok;
}

/// N = 1 as the transposed problem Cᵀ = op(B)ᵀ · op(A)ᵀ on the one-row path (same chain per element):
/// op(B)'s column is the row vector and op(A)ᵀ the matrix; a strided column of C goes through a buffer.
static int gemm_column(const sk_gemm_impl *im, int ta, int tb, ptrdiff_t m, ptrdiff_t k, float alpha, const float *a,
                       ptrdiff_t lda, const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc) {
    float *col = c;
    if (ldc != 1) {
        col = malloc((size_t)m * sizeof(float));
        if (col == NULL) return 0;
        for (ptrdiff_t i = 0; i < m; i++) col[i] = beta == 0 ? 0 : c[i * ldc];
    }
    // Row vector op(B)[p][0]: b[p·ldb] (not transposed: strided, like a transposed A row) or b[p].
    int ok = gemm_row(im, !tb, !ta, m, k, alpha, b, tb ? 1 : ldb, a, lda, beta, col);
    if (col != c) {
        if (ok) for (ptrdiff_t i = 0; i < m; i++) c[i * ldc] = col[i];
        free(col);
    }
    return ok;
}

/// The scalar fallback (out of memory for panels): the same blocks and chains, element by element.
static void gemm_scalar(const sk_gemm_impl *im, int ta, int tb, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha,
                        const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float beta, float *c,
                        ptrdiff_t ldc) {
    for (ptrdiff_t i = 0; i < m; i++) {
        for (ptrdiff_t j = 0; j < n; j++) {
            float total = 0;
            for (ptrdiff_t p0 = 0; p0 < k; p0 += SK_KC) {
                ptrdiff_t pe = k - p0 < SK_KC ? k : p0 + SK_KC;
                float acc = 0;
                for (ptrdiff_t p = p0; p < pe; p++) {
                    float av = ta ? a[p * lda + i] : a[i * lda + p];
                    float bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                    acc = im->madd(av, bv, acc);
                }
                total = p0 == 0 ? acc : total + acc;
            }
            c[i * ldc + j] = finish_scalar(total, alpha, beta, c[i * ldc + j]);
        }
    }
}

static void gemm_core(const sk_gemm_impl *im, int ta, int tb, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha,
                      const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc) {
    if (m == 1 && gemm_row(im, ta, tb, n, k, alpha, a, lda, b, ldb, beta, c)) return;
    if (n == 1 && gemm_column(im, ta, tb, m, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    if (gemm_packed(im, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    gemm_scalar(im, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sk_sgemm(int32_t level, int32_t trans_a, int32_t trans_b, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha,
              const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        for (ptrdiff_t i = 0; i < m; i++)
            for (ptrdiff_t j = 0; j < n; j++) c[i * ldc + j] = finish_scalar(0, alpha, beta, c[i * ldc + j]);
        return;
    }
    const sk_gemm_impl *im = impl_for(level);
    if (beta != 0 && k > SK_KC) {
        // The running total over K blocks lives in C, so C's old values are kept aside for the finish.
        float *old = malloc((size_t)(m * n) * sizeof(float));
        if (old == NULL) {
            gemm_scalar(im, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return;
        }
        for (ptrdiff_t i = 0; i < m; i++) memcpy(old + i * n, c + i * ldc, (size_t)n * sizeof(float));
        gemm_core(im, trans_a, trans_b, m, n, k, 1, a, lda, b, ldb, 0, c, ldc);
        for (ptrdiff_t i = 0; i < m; i++)
            for (ptrdiff_t j = 0; j < n; j++) c[i * ldc + j] = finish_scalar(c[i * ldc + j], alpha, beta, old[i * n + j]);
        free(old);
        return;
    }
    gemm_core(im, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
