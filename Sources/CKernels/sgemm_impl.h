// One level's SGEMM kernels (see sgemm.c).
#ifndef SHRINKWRAP_SGEMM_IMPL_H
#define SHRINKWRAP_SGEMM_IMPL_H
#include <stddef.h>

typedef struct {
    int mr, nr;
    /// C[mr×nr] (row stride ldc) = (load ? C + acc : acc) with acc = Σ_p A_p ⊗ B_p, a chain from 0 over kc
    /// packed steps (one K block); when `last`, the alpha / beta finish is applied (beta ≠ 0 never comes
    /// with load).
    void (*ukr)(ptrdiff_t kc, const float *ap, const float *bp, float *c, ptrdiff_t ldc, int load, int last,
                float alpha, float beta);
    /// c[0 ..< n] = finish(Σ_p a[p] · b[p·ldb + j]) for one row of A, one chain over k (callers split K into
    /// the blocks).
    void (*row)(ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t n, float *c, float alpha,
                float beta);
    /// The same with B stored transposed (element j = Σ_p a[p] · b[j·ldb + p]), reading B by gathers;
    /// NULL when the level has none (then B is transposed into a buffer). Needs 15·ldb < 2³¹.
    void (*rowT)(ptrdiff_t k, const float *a, const float *b, ptrdiff_t ldb, ptrdiff_t n, float *c, float alpha,
                 float beta);
    /// The level's multiply-add, acc + a·b (fused on AVX2 / AVX-512).
    float (*madd)(float a, float b, float acc);
} sk_gemm_impl;

extern const sk_gemm_impl sk_gemm_avx2;
extern const sk_gemm_impl sk_gemm_avx512;
extern const sk_gemm_impl sk_gemm_portable;
#endif
