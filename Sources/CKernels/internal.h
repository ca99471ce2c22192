// Shared by the CKernels sources: target attributes and per-level entry points.
#ifndef SHRINKWRAP_CKERNELS_INTERNAL_H
#define SHRINKWRAP_CKERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define SK_X86 1
#define SK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define SK_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#else
#define SK_X86 0
#endif

#if SK_X86
void sk_depthwise_avx512(const float *x, ptrdiff_t ih, ptrdiff_t iw, const float *w, ptrdiff_t kh, ptrdiff_t kw,
                         ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t ph, ptrdiff_t pw, ptrdiff_t dh, ptrdiff_t dw, float bias,
                         float *y, ptrdiff_t oh, ptrdiff_t ow);
#endif

#endif
