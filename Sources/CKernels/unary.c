// Per-level instances of kernels_impl.h and the dispatching entry points declared in CKernels.h.
#pragma STDC FP_CONTRACT OFF
#include "CKernels.h"
#include "internal.h"
#include <math.h>
#include <string.h>

#define SK_ATTR
#define SK_NAME(x) x##_portable
#define SK_MADD(a, b, c) ((a) * (b) + (c))
#include "kernels_impl.h"
#undef SK_ATTR
#undef SK_NAME
#undef SK_MADD

#if SK_X86
#define SK_ATTR SK_TARGET_AVX2
#define SK_NAME(x) x##_avx2
#define SK_MADD(a, b, c) __builtin_fmaf((a), (b), (c))
#include "kernels_impl.h"
#undef SK_ATTR
#undef SK_NAME

#define SK_ATTR SK_TARGET_AVX512
#define SK_NAME(x) x##_avx512
#include "kernels_impl.h"
#undef SK_ATTR
#undef SK_NAME
#undef SK_MADD

#define SK_DISPATCH(fn, ...)                                                                                   \
    switch (sk_level_clamp(level)) {                                                                           \
    case SK_LEVEL_AVX512: fn##_avx512(__VA_ARGS__); return;                                                    \
    case SK_LEVEL_AVX2: fn##_avx2(__VA_ARGS__); return;                                                        \
    default: fn##_portable(__VA_ARGS__); return;                                                               \
    }
#else
#define SK_DISPATCH(fn, ...)                                                                                   \
    (void)level;                                                                                               \
    fn##_portable(__VA_ARGS__);
#endif

void sk_exp(int32_t level, const float *x, float *y, ptrdiff_t n) { SK_DISPATCH(exp, x, y, n) }
void sk_softmax_row(int32_t level, const float *x, float *y, ptrdiff_t len, int32_t log_softmax) {
    SK_DISPATCH(softmax_row, x, y, len, log_softmax)
}
void sk_softmax_columns(int32_t level, const float *x, float *y, ptrdiff_t len, ptrdiff_t inner, ptrdiff_t count,
                        int32_t log_softmax, float *m, float *s) {
    SK_DISPATCH(softmax_columns, x, y, len, inner, count, log_softmax, m, s)
}
void sk_resize_blend(int32_t level, const float *a, const float *b, float w0, float w1, float *y, ptrdiff_t n) {
    SK_DISPATCH(resize_blend, a, b, w0, w1, y, n)
}
void sk_resize_pairs(int32_t level, const float *x, const ptrdiff_t *idx, const float *w, float *y, ptrdiff_t n) {
    SK_DISPATCH(resize_pairs, x, idx, w, y, n)
}
void sk_transpose_narrow(int32_t level, const float *x, float *y, ptrdiff_t rows, ptrdiff_t cols) {
    SK_DISPATCH(transpose_narrow, x, y, rows, cols)
}
void sk_tanh(int32_t level, const float *x, float *y, ptrdiff_t n) { SK_DISPATCH(tanh, x, y, n) }
void sk_sigmoid(int32_t level, const float *x, float *y, ptrdiff_t n) { SK_DISPATCH(sigmoid, x, y, n) }
void sk_swish(int32_t level, const float *x, float *y, ptrdiff_t n, float alpha) { SK_DISPATCH(swish, x, y, n, alpha) }
void sk_hardswish(int32_t level, const float *x, float *y, ptrdiff_t n) { SK_DISPATCH(hardswish, x, y, n) }
void sk_hardsigmoid(int32_t level, const float *x, float *y, ptrdiff_t n, float alpha, float beta) {
    SK_DISPATCH(hardsigmoid, x, y, n, alpha, beta)
}

void sk_binary(int32_t level, int32_t op, const float *a, float sa, const float *b, float sb, float *y, ptrdiff_t n) {
    SK_DISPATCH(binary, op, a, sa, b, sb, y, n)
}
void sk_unary_simple(int32_t level, int32_t op, const float *x, float *y, ptrdiff_t n, float p0, float p1) {
    SK_DISPATCH(unary_simple, op, x, y, n, p0, p1)
}
void sk_conv_epilogue(int32_t level, float *y, ptrdiff_t n, float bias, float scale, float shift, int32_t flags,
                      const float *residual) {
    SK_DISPATCH(conv_epilogue, y, n, bias, scale, shift, flags, residual)
}

void sk_depthwise_plane(int32_t level, const float *x, ptrdiff_t ih, ptrdiff_t iw, const float *w, ptrdiff_t kh,
                        ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t ph, ptrdiff_t pw, ptrdiff_t dh,
                        ptrdiff_t dw, float bias, float *y, ptrdiff_t oh, ptrdiff_t ow) {
#if SK_X86
    // Lane indices are 32-bit in the AVX-512 kernel.
    if (sk_level_clamp(level) == SK_LEVEL_AVX512 && iw * (sw > dw ? sw : dw) < (1 << 30) && ow + kw * dw < (1 << 30)) {
        sk_depthwise_avx512(x, ih, iw, w, kh, kw, sh, sw, ph, pw, dh, dw, bias, y, oh, ow);
        return;
    }
#endif
    SK_DISPATCH(depthwise, x, ih, iw, w, kh, kw, sh, sw, ph, pw, dh, dw, bias, y, oh, ow)
}
