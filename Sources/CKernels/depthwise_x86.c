// Depthwise plane kernel for AVX-512: 16 outputs of a row held in one register across all taps, taps
// outside the input masked off, so the per-element arithmetic is kernels_impl.h's: bias, then per valid
// tap in (kh, kw) order a rounded multiply and a rounded add (the same bits on every level). Stride-2 taps
// are two masked loads and a permute; other strides are gathered under the same mask.
#pragma STDC FP_CONTRACT OFF
#include "internal.h"

#if SK_X86
#include <immintrin.h>

/// Bit l set when output column j0 + l reads input column (j0 + l)·stride + off inside [0, limit) and
/// j0 + l < count.
SK_TARGET_AVX512 static inline __mmask16 tap_mask(ptrdiff_t j0, ptrdiff_t count, ptrdiff_t stride, ptrdiff_t off,
                                                  ptrdiff_t limit) {
    __m512i lane = _mm512_add_epi32(_mm512_set1_epi32((int)j0), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512i col = _mm512_add_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32((int)stride)), _mm512_set1_epi32((int)off));
    __mmask16 in = _mm512_cmpge_epi32_mask(col, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(col, _mm512_set1_epi32((int)limit));
    return in & _mm512_cmplt_epi32_mask(lane, _mm512_set1_epi32((int)count));
}

/// One output row block's accumulators: up to ROWS rows of 16 columns, each row its own dependency chain.
enum { ROWS = 4 };

/// acc[q] += w · x(row q) for the rows of this block whose input row exists, on the lanes of `m`.
#define SK_DW_TAP(q)                                                                                           \
    if (valid[q]) {                                                                                            \
        const float *line = x + rin[q] * iw;                                                                   \
        __m512 xv;                                                                                             \
        if (sw == 1) {                                                                                         \
            xv = _mm512_maskz_loadu_ps(m, line + start);                                                       \
        } else if (sw == 2 && b < MAXK) {                                                                      \
            __m512 l = _mm512_maskz_loadu_ps(lo[b], line + start), h = _mm512_maskz_loadu_ps(hi[b], line + start + 16); \
            xv = _mm512_permutex2var_ps(l, evens, h);                                                          \
        } else {                                                                                               \
            xv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, steps, line + start, 4);                     \
        }                                                                                                      \
        acc##q = _mm512_mask_add_ps(acc##q, m, acc##q, _mm512_mul_ps(wv, xv));                                 \
    }

SK_TARGET_AVX512 void sk_depthwise_avx512(const float *x, ptrdiff_t ih, ptrdiff_t iw, const float *w, ptrdiff_t kh,
                                          ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t ph, ptrdiff_t pw,
                                          ptrdiff_t dh, ptrdiff_t dw, float bias, float *y, ptrdiff_t oh,
                                          ptrdiff_t ow) {
    enum { MAXK = 64 };
    __mmask16 masks[MAXK], lo[MAXK], hi[MAXK];
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i steps = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32((int)sw));
    for (ptrdiff_t j0 = 0; j0 < ow; j0 += 16) {
        // Per kw, which of these 16 columns have their tap inside the input (the same for every row).
        // For stride 2, the two 16-column loads covering the 32 input columns, masked to the input.
        for (ptrdiff_t b = 0; b < kw && b < MAXK; b++) {
            masks[b] = tap_mask(j0, ow, sw, b * dw - pw, iw);
            ptrdiff_t start = j0 * sw + b * dw - pw;
            lo[b] = tap_mask(0, 16, 1, start, iw);
            hi[b] = tap_mask(0, 16, 1, start + 16, iw);
        }
        __mmask16 store = tap_mask(j0, ow, 1, 0, ow);
        // ROWS output rows at a time: independent accumulators hide the add latency; each row still
        // takes its taps in (kh, kw) order, so the bits are those of one row at a time.
        for (ptrdiff_t o = 0; o < oh; o += ROWS) {
            ptrdiff_t rows = oh - o < ROWS ? oh - o : ROWS;
            __m512 acc0 = _mm512_set1_ps(bias), acc1 = acc0, acc2 = acc0, acc3 = acc0;
            for (ptrdiff_t a = 0; a < kh; a++) {
                ptrdiff_t rin[ROWS];
                int valid[ROWS];
                for (int q = 0; q < ROWS; q++) {
                    rin[q] = (o + q) * sh - ph + a * dh;
                    valid[q] = q < rows && rin[q] >= 0 && rin[q] < ih;
                }
                if (!(valid[0] | valid[1] | valid[2] | valid[3])) continue;
                for (ptrdiff_t b = 0; b < kw; b++) {
                    __mmask16 m = b < MAXK ? masks[b] : tap_mask(j0, ow, sw, b * dw - pw, iw);
                    if (m == 0) continue;
                    ptrdiff_t start = j0 * sw + b * dw - pw;  // input column of lane 0 (may be outside)
                    __m512 wv = _mm512_set1_ps(w[a * kw + b]);
                    SK_DW_TAP(0)
                    SK_DW_TAP(1)
                    SK_DW_TAP(2)
                    SK_DW_TAP(3)
                }
            }
            _mm512_mask_storeu_ps(y + o * ow + j0, store, acc0);
            if (rows > 1) _mm512_mask_storeu_ps(y + (o + 1) * ow + j0, store, acc1);
            if (rows > 2) _mm512_mask_storeu_ps(y + (o + 2) * ow + j0, store, acc2);
            if (rows > 3) _mm512_mask_storeu_ps(y + (o + 3) * ow + j0, store, acc3);
        }
    }
}
#endif
