// Depthwise convolution with channels in the lanes (AVX-512): up to 16 channels are interleaved into a
// zero-padded, pixel-major scratch (one vector per input pixel), each output pixel of the 16 channels is
// one vector accumulated over the taps in registers, and 8 or 16 pixels at a time are transposed back into
// the channels' planes. Lanes stay full whatever the plane's width or the stride (a 7-wide plane fills 7
// of 16 lanes in the row kernel) and strided taps are plain loads. The arithmetic per element is
// sk_depthwise_plane's: bias, then for each valid tap in (kh, kw) order a rounded multiply and a rounded
// add — the same bits (see sk_depthwise_lanes for why the padded zeros change nothing).
#pragma STDC FP_CONTRACT OFF
#include "CKernels.h"
#include "internal.h"
#include "lanes_x86.h"

#if SK_X86
#include <immintrin.h>

#endif

/// Pixels per block: 16, or 8 for planes at most 8 wide (a 7-wide plane would leave 9 of 16 idle).
static inline ptrdiff_t block_pixels(ptrdiff_t ow) { return ow <= 8 ? 8 : 16; }

/// Columns of the padded scratch: every tap of every pixel of the last (whole) block.
static inline ptrdiff_t padded_width(ptrdiff_t ow, ptrdiff_t kw, ptrdiff_t sw, ptrdiff_t dw) {
    ptrdiff_t pix = block_pixels(ow);
    return ((ow + pix - 1) / pix * pix - 1) * sw + (kw - 1) * dw + 1;
}

ptrdiff_t sk_depthwise_lanes_scratch(ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw,
                                     ptrdiff_t dh, ptrdiff_t dw, ptrdiff_t rows) {
    ptrdiff_t span = (rows - 1) * sh + (kh - 1) * dh + 1;
    return (span * padded_width(ow, kw, sw, dw) + kh * kw + 2) * 16;  // + 16 to align to 64 bytes
}

#if SK_X86
/// Packs padded rows [pr0, pr0 + prows) of `channels` planes (≤ 16) into p, pixel-major: padded pixel
/// (pr, pc) — input (pr − ph, pc − pw), zero outside the input — at p[((pr − pr0)·pwidth + pc)·16 + c].
SK_TARGET_AVX512 static void pack_padded(const float *x, ptrdiff_t xstride, ptrdiff_t channels, ptrdiff_t ih,
                                         ptrdiff_t iw, ptrdiff_t ph, ptrdiff_t pw, ptrdiff_t pr0, ptrdiff_t prows,
                                         ptrdiff_t pwidth, float *p) {
    const __m512 zero = _mm512_setzero_ps();
    // Input columns [j0, j1) land inside the padded row.
    ptrdiff_t j0 = pw < 0 ? -pw : 0, j1 = pwidth - pw < iw ? pwidth - pw : iw;
    for (ptrdiff_t pr = 0; pr < prows; pr++) {
        float *dst = p + pr * pwidth * 16;
        ptrdiff_t r = pr0 + pr - ph;
        if (r < 0 || r >= ih || j1 <= j0) {
            for (ptrdiff_t pc = 0; pc < pwidth; pc++) _mm512_storeu_ps(dst + pc * 16, zero);
            continue;
        }
        for (ptrdiff_t pc = 0; pc < j0 + pw; pc++) _mm512_storeu_ps(dst + pc * 16, zero);
        for (ptrdiff_t pc = j1 + pw; pc < pwidth; pc++) _mm512_storeu_ps(dst + pc * 16, zero);
        for (ptrdiff_t j = j0; j < j1; j += 16) {
            ptrdiff_t n = j1 - j < 16 ? j1 - j : 16;
            __mmask16 m = first_lanes(n);
            __m512 v[16];
            for (ptrdiff_t c = 0; c < 16; c++)
                v[c] = c < channels ? _mm512_maskz_loadu_ps(m, x + c * xstride + r * iw + j) : zero;
            transpose16(v);
            for (ptrdiff_t q = 0; q < n; q++) _mm512_storeu_ps(dst + (j + pw + q) * 16, v[q]);
        }
    }
}


/// Output rows [o0, o1), P pixels per block, every tap read from the padded scratch (no test per tap).
#define SK_LANES_ROWS(P)                                                                                       \
    for (ptrdiff_t o = o0; o < o1; o++) {                                                                      \
        for (ptrdiff_t j0 = 0; j0 < ow; j0 += P) {                                                             \
            __m512 acc[16];                                                                                    \
            _Pragma("clang loop unroll(full)") for (int q = 0; q < 16; q++) acc[q] = bias;                    \
            for (ptrdiff_t a = 0; a < kh; a++) {                                                               \
                const float *line = p + ((o - o0) * sh + a * dh) * pwidth * 16 + j0 * step;                    \
                const float *wrow = wp + a * kw * 16;                                                          \
                for (ptrdiff_t b = 0; b < kw; b++) {                                                           \
                    __m512 wv = _mm512_loadu_ps(wrow + b * 16);                                                \
                    const float *src = line + b * dw * 16;                                                     \
                    _Pragma("clang loop unroll(full)") for (int q = 0; q < P; q++)                            \
                        acc[q] = _mm512_add_ps(acc[q], _mm512_mul_ps(wv, _mm512_loadu_ps(src + q * step)));    \
                }                                                                                              \
            }                                                                                                  \
            if (ep->affine || ep->count > 0) {                                                                 \
                _Pragma("clang loop unroll(full)") for (int q = 0; q < P; q++) acc[q] = apply_ep(ep, acc[q]);  \
            }                                                                                                  \
            transpose16(acc);                                                                                  \
            __mmask16 m = first_lanes(ow - j0 < P ? ow - j0 : P);                                              \
            for (ptrdiff_t c = 0; c < channels; c++)                                                           \
                _mm512_mask_storeu_ps(y + c * ystride + o * ow + j0, m, acc[c]);                               \
        }                                                                                                      \
    }

SK_TARGET_AVX512 static void lanes_rows(const float *p, ptrdiff_t pwidth, const float *wp, ptrdiff_t kh,
                                        ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t dh, ptrdiff_t dw,
                                        const float *bp, ptrdiff_t channels, float *y, ptrdiff_t ystride,
                                        ptrdiff_t ow, ptrdiff_t o0, ptrdiff_t o1, const lane_ep *ep) {
    const ptrdiff_t step = sw * 16;
    const __m512 bias = _mm512_loadu_ps(bp);
    if (block_pixels(ow) == 8) {
        SK_LANES_ROWS(8)
    } else {
        SK_LANES_ROWS(16)
    }
}
#undef SK_LANES_ROWS
#endif

int32_t sk_depthwise_lanes_usable(int32_t level, const float *w, ptrdiff_t channels, ptrdiff_t taps,
                                  const float *bias) {
    if (sk_level_clamp(level) != SK_LEVEL_AVX512) return 0;
    // A tap outside the input reads a padded zero instead of being skipped. acc + w·0 is acc exactly
    // unless w is not finite (w·0 is NaN) or acc is −0 (−0 + +0 = +0); acc can only be −0 when the bias
    // is (a rounded sum of nonzero terms is never −0, and −0 + x is x).
    for (ptrdiff_t i = 0; i < channels * taps; i++)
        if (!(w[i] - w[i] == 0.0f)) return 0;
    for (ptrdiff_t c = 0; bias && c < channels; c++)
        if (bias[c] == 0.0f && __builtin_signbit(bias[c])) return 0;
    return 1;
}

int32_t sk_depthwise_lanes(int32_t level, const float *x, ptrdiff_t xstride, ptrdiff_t channels, ptrdiff_t ih,
                           ptrdiff_t iw, const float *w, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw,
                           ptrdiff_t ph, ptrdiff_t pw, ptrdiff_t dh, ptrdiff_t dw, const float *bias, float *y,
                           ptrdiff_t ystride, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t o0, ptrdiff_t o1,
                           const sk_lane_epilogue *epilogue, ptrdiff_t channel0, float *scratch) {
#if SK_X86
    if (sk_level_clamp(level) != SK_LEVEL_AVX512 || channels < 1 || channels > 16) return 0;
    if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1 || o0 < 0 || o1 > oh || o0 >= o1) return 0;
    ptrdiff_t kc = kh * kw;
    lane_ep ep;
    if (!load_ep(epilogue, channel0, channels, &ep, 0)) return 0;
    // Every vector of the scratch on its own 64-byte line (a load across two lines costs two).
    float *wp = scratch + ((16 - ((uintptr_t)scratch / sizeof(float)) % 16) % 16), *bp = wp + kc * 16, *p = bp + 16;
    for (ptrdiff_t t = 0; t < kc; t++)
        for (ptrdiff_t c = 0; c < 16; c++) wp[t * 16 + c] = c < channels ? w[c * kc + t] : 0.0f;
    for (ptrdiff_t c = 0; c < 16; c++) bp[c] = bias && c < channels ? bias[c] : 0.0f;
    ptrdiff_t pwidth = padded_width(ow, kw, sw, dw), prows = (o1 - o0 - 1) * sh + (kh - 1) * dh + 1;
    pack_padded(x, xstride, channels, ih, iw, ph, pw, o0 * sh, prows, pwidth, p);
    lanes_rows(p, pwidth, wp, kh, kw, sh, sw, dh, dw, bp, channels, y, ystride, ow, o0, o1, &ep);
    return 1;
#else
    (void)level; (void)x; (void)xstride; (void)channels; (void)ih; (void)iw; (void)w; (void)kh; (void)kw; (void)sh;
    (void)sw; (void)ph; (void)pw; (void)dh; (void)dw; (void)bias; (void)y; (void)ystride; (void)oh; (void)ow;
    (void)o0; (void)o1; (void)epilogue; (void)channel0; (void)scratch;
    return 0;
#endif
}
