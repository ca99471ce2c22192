// SGEMM micro-kernels for AVX2 + FMA (6×16) and AVX-512 (8×32), and their one-row kernels. Each element
// is one chain of fused multiply-adds over k from 0, then the alpha / beta finish of sgemm.c done with
// separately rounded vector multiplies and adds (the same operations as the scalar finish).
#pragma STDC FP_CONTRACT OFF
#include "internal.h"
#include "sgemm_impl.h"

#if SK_X86
#include <immintrin.h>

// MARK: - AVX2

SK_TARGET_AVX2 static inline __m256 finish256(__m256 acc, __m256 old, float alpha, float beta) {
    if (beta == 0) return alpha == 1 ? acc : _mm256_mul_ps(_mm256_set1_ps(alpha), acc);
    return _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(alpha), acc), _mm256_mul_ps(_mm256_set1_ps(beta), old));
}

SK_TARGET_AVX2 static inline void store256(float *p, __m256 acc, int last, float alpha, float beta) {
    if (!last) { _mm256_storeu_ps(p, acc); return; }
    __m256 old = beta == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(p);
    _mm256_storeu_ps(p, finish256(acc, old, alpha, beta));
}

#define SK_INIT2(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
#define SK_STEP2(i)                                                                                            \
    {                                                                                                          \
        __m256 av = _mm256_broadcast_ss(ap + (i));                                                             \
        c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0);                                                            \
        c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1);                                                            \
    }
#define SK_OUT2(i)                                                                                             \
    if (load) {                                                                                                \
        c##i##0 = _mm256_add_ps(_mm256_loadu_ps(c + (i) * ldc), c##i##0);                                     \
        c##i##1 = _mm256_add_ps(_mm256_loadu_ps(c + (i) * ldc + 8), c##i##1);                                 \
    }                                                                                                          \
    store256(c + (i) * ldc, c##i##0, last, alpha, beta);                                                      \
    store256(c + (i) * ldc + 8, c##i##1, last, alpha, beta);

SK_TARGET_AVX2 static void ukr_avx2(ptrdiff_t kc, const float *ap, const float *bp, float *c, ptrdiff_t ldc,
                                    int load, int last, float alpha, float beta) {
    SK_INIT2(0) SK_INIT2(1) SK_INIT2(2) SK_INIT2(3) SK_INIT2(4) SK_INIT2(5)
    for (ptrdiff_t p = 0; p < kc; p++) {
        __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
        SK_STEP2(0) SK_STEP2(1) SK_STEP2(2) SK_STEP2(3) SK_STEP2(4) SK_STEP2(5)
        ap += 6;
        bp += 16;
    }
    SK_OUT2(0) SK_OUT2(1) SK_OUT2(2) SK_OUT2(3) SK_OUT2(4) SK_OUT2(5)
}

SK_TARGET_AVX2 static float madd_fma(float a, float b, float acc) { return __builtin_fmaf(a, b, acc); }

SK_TARGET_AVX2 static void row_avx2(ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t n,
                                    float *c, float alpha, float beta) {
    ptrdiff_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (ptrdiff_t p = 0; p < k; p++) {
            __m256 av = _mm256_broadcast_ss(a + p);
            const float *bk = b + p * ldb + j;
            s0 = _mm256_fmadd_ps(av, _mm256_loadu_ps(bk), s0);
            s1 = _mm256_fmadd_ps(av, _mm256_loadu_ps(bk + 8), s1);
            s2 = _mm256_fmadd_ps(av, _mm256_loadu_ps(bk + 16), s2);
            s3 = _mm256_fmadd_ps(av, _mm256_loadu_ps(bk + 24), s3);
        }
        store256(c + j, s0, 1, alpha, beta);
        store256(c + j + 8, s1, 1, alpha, beta);
        store256(c + j + 16, s2, 1, alpha, beta);
        store256(c + j + 24, s3, 1, alpha, beta);
    }
    for (; j + 8 <= n; j += 8) {
        __m256 s = _mm256_setzero_ps();
        for (ptrdiff_t p = 0; p < k; p++) s = _mm256_fmadd_ps(_mm256_broadcast_ss(a + p), _mm256_loadu_ps(b + p * ldb + j), s);
        store256(c + j, s, 1, alpha, beta);
    }
    for (; j < n; j++) {
        float s = 0;
        for (ptrdiff_t p = 0; p < k; p++) s = __builtin_fmaf(a[p], b[p * ldb + j], s);
        c[j] = beta == 0 ? (alpha == 1 ? s : alpha * s) : alpha * s + beta * c[j];
    }
}

SK_TARGET_AVX2 static void rowT_avx2(ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t n,
                                     float *c, float alpha, float beta) {
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)ldb));
    ptrdiff_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const float *b0 = b + j * ldb, *b1 = b + (j + 8) * ldb;
        __m256 s0 = _mm256_setzero_ps(), s1 = s0;
        for (ptrdiff_t p = 0; p < k; p++) {
            __m256 av = _mm256_broadcast_ss(a + p);
            s0 = _mm256_fmadd_ps(av, _mm256_i32gather_ps(b0 + p, rows, 4), s0);
            s1 = _mm256_fmadd_ps(av, _mm256_i32gather_ps(b1 + p, rows, 4), s1);
        }
        store256(c + j, s0, 1, alpha, beta);
        store256(c + j + 8, s1, 1, alpha, beta);
    }
    for (; j < n; j++) {
        float s = 0;
        for (ptrdiff_t p = 0; p < k; p++) s = __builtin_fmaf(a[p], b[j * ldb + p], s);
        c[j] = beta == 0 ? (alpha == 1 ? s : alpha * s) : alpha * s + beta * c[j];
    }
}

const sk_gemm_impl sk_gemm_avx2 = {6, 16, ukr_avx2, row_avx2, rowT_avx2, madd_fma};

// MARK: - AVX-512

SK_TARGET_AVX512 static inline __m512 finish512(__m512 acc, __m512 old, float alpha, float beta) {
    if (beta == 0) return alpha == 1 ? acc : _mm512_mul_ps(_mm512_set1_ps(alpha), acc);
    return _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(alpha), acc), _mm512_mul_ps(_mm512_set1_ps(beta), old));
}

SK_TARGET_AVX512 static inline void store512(float *p, __m512 acc, int last, float alpha, float beta) {
    if (!last) { _mm512_storeu_ps(p, acc); return; }
    __m512 old = beta == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(p);
    _mm512_storeu_ps(p, finish512(acc, old, alpha, beta));
}

#define SK_INIT5(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define SK_STEP5(i)                                                                                            \
    {                                                                                                          \
        __m512 av = _mm512_set1_ps(ap[i]);                                                                     \
        c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0);                                                            \
        c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1);                                                            \
    }
#define SK_OUT5(i)                                                                                             \
    if (load) {                                                                                                \
        c##i##0 = _mm512_add_ps(_mm512_loadu_ps(c + (i) * ldc), c##i##0);                                     \
        c##i##1 = _mm512_add_ps(_mm512_loadu_ps(c + (i) * ldc + 16), c##i##1);                                \
    }                                                                                                          \
    store512(c + (i) * ldc, c##i##0, last, alpha, beta);                                                      \
    store512(c + (i) * ldc + 16, c##i##1, last, alpha, beta);

SK_TARGET_AVX512 static void ukr_avx512(ptrdiff_t kc, const float *ap, const float *bp, float *c, ptrdiff_t ldc,
                                        int load, int last, float alpha, float beta) {
    SK_INIT5(0) SK_INIT5(1) SK_INIT5(2) SK_INIT5(3) SK_INIT5(4) SK_INIT5(5) SK_INIT5(6) SK_INIT5(7)
    for (ptrdiff_t p = 0; p < kc; p++) {
        __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
        SK_STEP5(0) SK_STEP5(1) SK_STEP5(2) SK_STEP5(3) SK_STEP5(4) SK_STEP5(5) SK_STEP5(6) SK_STEP5(7)
        ap += 8;
        bp += 32;
    }
    SK_OUT5(0) SK_OUT5(1) SK_OUT5(2) SK_OUT5(3) SK_OUT5(4) SK_OUT5(5) SK_OUT5(6) SK_OUT5(7)
}

SK_TARGET_AVX512 static void row_avx512(ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t n,
                                        float *c, float alpha, float beta) {
    ptrdiff_t j = 0;
    for (; j + 64 <= n; j += 64) {
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (ptrdiff_t p = 0; p < k; p++) {
            __m512 av = _mm512_set1_ps(a[p]);
            const float *bk = b + p * ldb + j;
            s0 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bk), s0);
            s1 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bk + 16), s1);
            s2 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bk + 32), s2);
            s3 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bk + 48), s3);
        }
        store512(c + j, s0, 1, alpha, beta);
        store512(c + j + 16, s1, 1, alpha, beta);
        store512(c + j + 32, s2, 1, alpha, beta);
        store512(c + j + 48, s3, 1, alpha, beta);
    }
    for (; j < n; j += 16) {
        __mmask16 mask = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
        __m512 s = _mm512_setzero_ps();
        for (ptrdiff_t p = 0; p < k; p++)
            s = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), _mm512_maskz_loadu_ps(mask, b + p * ldb + j), s);
        __m512 old = beta == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, c + j);
        _mm512_mask_storeu_ps(c + j, mask, finish512(s, old, alpha, beta));
    }
}

/// Transposes 16 rows of 16 floats in registers: on return r[c] holds column c (rows 0 … 15 in lanes).
SK_TARGET_AVX512 static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 2; i++) {
        for (int q = 0; q < 4; q++) {
            t[8 * i + q] = _mm512_shuffle_f32x4(r[8 * i + q], r[8 * i + 4 + q], 0x88);
            t[8 * i + 4 + q] = _mm512_shuffle_f32x4(r[8 * i + q], r[8 * i + 4 + q], 0xDD);
        }
    }
    for (int q = 0; q < 4; q++) {
        r[q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0x88);
        r[8 + q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0xDD);
        r[4 + q] = _mm512_shuffle_f32x4(t[4 + q], t[12 + q], 0x88);
        r[12 + q] = _mm512_shuffle_f32x4(t[4 + q], t[12 + q], 0xDD);
    }
}

/// Bᵀ rows read 16 at a time in 16-deep slices of k (contiguous loads), transposed in registers, then
/// the FMA chain in increasing k.
SK_TARGET_AVX512 static void rowT_avx512(ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t n,
                                         float *c, float alpha, float beta) {
    for (ptrdiff_t j = 0; j < n; j += 16) {
        ptrdiff_t rows = n - j < 16 ? n - j : 16;
        __mmask16 out = rows == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << rows) - 1);
        __m512 s = _mm512_setzero_ps();
        for (ptrdiff_t p = 0; p < k; p += 16) {
            ptrdiff_t depth = k - p < 16 ? k - p : 16;
            __mmask16 in = depth == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << depth) - 1);
            __m512 r[16];
            for (ptrdiff_t i = 0; i < 16; i++)
                r[i] = i < rows ? _mm512_maskz_loadu_ps(in, b + (j + i) * ldb + p) : _mm512_setzero_ps();
            transpose16(r);
            for (ptrdiff_t q = 0; q < depth; q++) s = _mm512_fmadd_ps(_mm512_set1_ps(a[p + q]), r[q], s);
        }
        __m512 old = beta == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(out, c + j);
        _mm512_mask_storeu_ps(c + j, out, finish512(s, old, alpha, beta));
    }
}

const sk_gemm_impl sk_gemm_avx512 = {8, 32, ukr_avx512, row_avx512, rowT_avx512, madd_fma};
#endif
