// Per-level instances of winograd_impl.h and the dispatching entry point declared in CKernels.h.
#pragma STDC FP_CONTRACT OFF
#include "CKernels.h"
#include "internal.h"

#define SK_ATTR
#define SK_NAME(x) x##_portable
#include "winograd_impl.h"
#undef SK_ATTR
#undef SK_NAME

#if SK_X86
#define SK_ATTR SK_TARGET_AVX2
#define SK_NAME(x) x##_avx2
#include "winograd_impl.h"
#undef SK_ATTR
#undef SK_NAME

#define SK_ATTR SK_TARGET_AVX512
#define SK_NAME(x) x##_avx512
#include "winograd_impl.h"
#undef SK_ATTR
#undef SK_NAME
#endif

void sk_wino_combine(int32_t level, const float *mat, ptrdiff_t nout, ptrdiff_t nin, const float *const *in,
                     float *const *out, ptrdiff_t n) {
#if SK_X86
    switch (sk_level_clamp(level)) {
    case SK_LEVEL_AVX512: wino_combine_avx512(mat, nout, nin, in, out, n); return;
    case SK_LEVEL_AVX2: wino_combine_avx2(mat, nout, nin, in, out, n); return;
    default: wino_combine_portable(mat, nout, nin, in, out, n); return;
    }
#else
    (void)level;
    wino_combine_portable(mat, nout, nin, in, out, n);
#endif
}

void sk_wino_phases(int32_t level, const float *x, ptrdiff_t width, ptrdiff_t start, ptrdiff_t m, ptrdiff_t count,
                    float *ph, ptrdiff_t stride) {
#if SK_X86
    switch (sk_level_clamp(level)) {
    case SK_LEVEL_AVX512: wino_phases_avx512(x, width, start, m, count, ph, stride); return;
    case SK_LEVEL_AVX2: wino_phases_avx2(x, width, start, m, count, ph, stride); return;
    default: wino_phases_portable(x, width, start, m, count, ph, stride); return;
    }
#else
    (void)level;
    wino_phases_portable(x, width, start, m, count, ph, stride);
#endif
}
