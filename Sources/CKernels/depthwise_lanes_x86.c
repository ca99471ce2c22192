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

#if SK_X86
#include <immintrin.h>

/// Transposes the 16 × 16 block in r (r[i] lane j becomes r[j] lane i).
SK_TARGET_AVX512 static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int q = 0; q < 2; q++) {
        for (int s = 0; s < 4; s++) {
            t[8 * q + s] = _mm512_shuffle_f32x4(r[8 * q + s], r[8 * q + 4 + s], 0x88);
            t[8 * q + 4 + s] = _mm512_shuffle_f32x4(r[8 * q + s], r[8 * q + 4 + s], 0xDD);
        }
    }
    for (int s = 0; s < 8; s++) {
        r[s] = _mm512_shuffle_f32x4(t[s], t[8 + s], 0x88);
        r[8 + s] = _mm512_shuffle_f32x4(t[s], t[8 + s], 0xDD);
    }
}

SK_TARGET_AVX512 static inline __mmask16 first_lanes(ptrdiff_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n > 0 ? n : 0)) - 1u);
}
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

/// An sk_lane_epilogue with its per-channel values loaded as vectors.
typedef struct {
    int affine, count, op[SK_LANE_EPILOGUE_MAX], first[SK_LANE_EPILOGUE_MAX];
    __m512 a, s, p0[SK_LANE_EPILOGUE_MAX], p1[SK_LANE_EPILOGUE_MAX];
} lane_ep;

/// Loads `e` for channels channel0 ..< channel0 + channels (other lanes 0); 0 for an unknown activation.
SK_TARGET_AVX512 static int load_ep(const sk_lane_epilogue *e, ptrdiff_t channel0, ptrdiff_t channels, lane_ep *l) {
    __mmask16 m = first_lanes(channels);
    l->affine = e && e->scale && e->shift;
    l->count = e ? e->count : 0;
    if (l->count < 0 || l->count > SK_LANE_EPILOGUE_MAX) return 0;
    if (l->affine) {
        l->a = _mm512_maskz_loadu_ps(m, e->scale + channel0);
        l->s = _mm512_maskz_loadu_ps(m, e->shift + channel0);
    }
    for (int i = 0; i < l->count; i++) {
        l->op[i] = e->op[i];
        if (l->op[i] < SK_ACT_RELU || l->op[i] > SK_ACT_MIN) return 0;
        l->p0[i] = l->op[i] == SK_ACT_PRELU && e->slopes[i] ? _mm512_maskz_loadu_ps(m, e->slopes[i] + channel0)
                                                           : _mm512_set1_ps(e->p0[i]);
        l->p1[i] = _mm512_set1_ps(e->p1[i]);
        l->first[i] = e->p1[i] != 0;
    }
    return 1;
}

/// The epilogue on one vector: each step the separate kernel's expression (kernels_impl.h), as compares
/// and blends so NaN and signed zeros take the same branch.
SK_TARGET_AVX512 static inline __m512 apply_ep(const lane_ep *l, __m512 v) {
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    if (l->affine) v = _mm512_add_ps(_mm512_mul_ps(v, l->a), l->s);
    for (int i = 0; i < l->count; i++) {
        __m512 p0 = l->p0[i], p1 = l->p1[i];
        switch (l->op[i]) {
        case SK_ACT_RELU: {  // v > 0 ? v : (v != v ? v : 0)
            __mmask16 keep = _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            v = _mm512_mask_blend_ps(keep, zero, v);
            break;
        }
        case SK_ACT_CLIP: {  // m = v < p0 ? p0 : v; m > p1 ? p1 : m
            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, p0, _CMP_LT_OQ), v, p0);
            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, p1, _CMP_GT_OQ), v, p1);
            break;
        }
        case SK_ACT_LEAKY_RELU:  // v >= 0 ? v : p0 · v
            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ), _mm512_mul_ps(p0, v), v);
            break;
        case SK_ACT_PRELU:  // v < 0 ? p0 · v : v
            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, _mm512_mul_ps(p0, v));
            break;
        case SK_ACT_HARDSWISH: {  // t = v · (1/6) + 0.5; t = t < 1 ? t : 1; t = t >= 0 ? t : 0; v · t
            __m512 t = _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.0f / 6)), _mm512_set1_ps(0.5f));
            t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, one, _CMP_LT_OQ), one, t);
            t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, zero, _CMP_GE_OQ), zero, t);
            v = _mm512_mul_ps(v, t);
            break;
        }
        case SK_ACT_HARDSIGMOID: {  // t = p0 · v + p1; t = t < 1 ? t : 1; t >= 0 ? t : 0
            __m512 t = _mm512_add_ps(_mm512_mul_ps(p0, v), p1);
            t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, one, _CMP_LT_OQ), one, t);
            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, zero, _CMP_GE_OQ), zero, t);
            break;
        }
        case SK_ACT_MAX:
        case SK_ACT_MIN: {  // (u != u || u >= w) ? u : w (max), <= (min); u the scalar when p1 ≠ 0
            __m512 u = l->first[i] ? p0 : v, w = l->first[i] ? v : p0;
            __mmask16 order = l->op[i] == SK_ACT_MAX ? _mm512_cmp_ps_mask(u, w, _CMP_GE_OQ) : _mm512_cmp_ps_mask(u, w, _CMP_LE_OQ);
            __mmask16 pick = _mm512_cmp_ps_mask(u, u, _CMP_UNORD_Q) | order;
            v = _mm512_mask_blend_ps(pick, w, u);
            break;
        }
        default: break;
        }
    }
    return v;
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
    if (!load_ep(epilogue, channel0, channels, &ep)) return 0;
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
