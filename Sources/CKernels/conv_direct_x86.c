// Direct convolution with the filters in the lanes (AVX-512): no im2col and no packing of the input per
// call. A tile is P (≤ 14) consecutive output pixels of one row × 16 or 32 filters, held in P × V
// accumulators (V = 1 or 2 vectors of 16 filters). For each input channel and tap, in that order, the tile
// loads V vectors of packed filter values and broadcasts each pixel's input value from the zero-padded
// input, one fused multiply-add per accumulator. Any row width or stride keeps the lanes full (the pixels
// are broadcasts); the packed filters are read in order, once per tile. The tile's pixels are then
// transposed into the filters' output planes. Each output is one chain of fused multiply-adds from 0
// over (channel, kh, kw) in increasing order, then + bias, then the lane epilogue: its bits depend on
// nothing but its own inputs, so no tiling or thread split changes them.
#pragma STDC FP_CONTRACT OFF
#include "CKernels.h"
#include "internal.h"
#include "lanes_x86.h"

ptrdiff_t sk_conv_direct_packed_count(ptrdiff_t m, ptrdiff_t k) {
    if (m < 1 || k < 1) return 0;
    return (m + 15) / 16 * 16 * k;
}

void sk_conv_direct_pack(const float *w, ptrdiff_t m, ptrdiff_t k, float *out) {
    ptrdiff_t blocks = (m + 15) / 16;
    for (ptrdiff_t b = 0; b < blocks; b++)
        for (ptrdiff_t p = 0; p < k; p++)
            for (ptrdiff_t f = 0; f < 16; f++) {
                ptrdiff_t row = b * 16 + f;
                out[(b * k + p) * 16 + f] = row < m ? w[row * k + p] : 0.0f;
            }
}

#if SK_X86

/// Pixels per tile: up to 14 with 1 or 2 filter vectors, up to 6 with 3 or 4 (narrow rows: silero's 4-wide
/// convs), so P · V accumulators + V filter vectors + the broadcast fit the 32 registers.
enum { PMAX = 14, VMAX = 4, PNARROW = 6 };

/// Channels per block of the sum: each block of ≤ 64 products (whole channels' taps) is its own chain
/// from 0, added to the total of the blocks before. One chain over all of K moved ppocr-v4-rec's output
/// to 4.8e-4 of a float64 evaluation, past onnxruntime's 2.2e-4; blocks of 256 to 3.1e-4; blocks of 64
/// to 1.4e-4 (im2col + OpenBLAS: 1.1e-4), for ~5 % of the kernel's speed.
static inline ptrdiff_t block_channels(ptrdiff_t taps) { return taps >= 64 ? 1 : 64 / taps; }

/// Accumulates one tile: P pixels (input columns x + p·S, S the stride; 0: `sw` at run time) × V filter
/// vectors (packed blocks w[0 ..< V]) over `channels` planes of `plane` floats and the `taps` offsets `off`.
SK_TARGET_AVX512 static inline __attribute__((always_inline)) void
tile_acc(int P, int V, int S, const float *x, ptrdiff_t sw, ptrdiff_t channels, ptrdiff_t plane,
         const ptrdiff_t *off, ptrdiff_t taps, const float *const *w, __m512 acc[PMAX][VMAX]) {
    const float *w0 = w[0], *w1 = w[V > 1 ? 1 : 0], *w2 = w[V > 2 ? 2 : 0], *w3 = w[V > 3 ? 3 : 0];
#pragma clang loop unroll(full)
    for (int p = 0; p < P; p++) {
#pragma clang loop unroll(full)
        for (int v = 0; v < V; v++) acc[p][v] = _mm512_setzero_ps();
    }
    const ptrdiff_t step = S ? S : sw, block = block_channels(taps);
    __m512 total[PMAX][VMAX];
    for (ptrdiff_t c0 = 0; c0 < channels; c0 += block) {
        if (c0 > 0) {
            // The block's chain starts from 0 and is added to the total of the blocks before.
#pragma clang loop unroll(full)
            for (int p = 0; p < P; p++) {
#pragma clang loop unroll(full)
                for (int q = 0; q < V; q++) {
                    total[p][q] = c0 == block ? acc[p][q] : _mm512_add_ps(total[p][q], acc[p][q]);
                    acc[p][q] = _mm512_setzero_ps();
                }
            }
        }
        const ptrdiff_t c1 = channels - c0 < block ? channels : c0 + block;
        for (ptrdiff_t c = c0; c < c1; c++) {
            const float *xc = x + c * plane;
            for (ptrdiff_t t = 0; t < taps; t++) {
                const float *xq = xc + off[t];
                __m512 b[VMAX];
                b[0] = _mm512_loadu_ps(w0);
                w0 += 16;
                if (V > 1) { b[1] = _mm512_loadu_ps(w1); w1 += 16; }
                if (V > 2) { b[2] = _mm512_loadu_ps(w2); w2 += 16; }
                if (V > 3) { b[3] = _mm512_loadu_ps(w3); w3 += 16; }
#pragma clang loop unroll(full)
                for (int p = 0; p < P; p++) {
                    __m512 v = _mm512_set1_ps(xq[p * step]);
#pragma clang loop unroll(full)
                    for (int q = 0; q < V; q++) acc[p][q] = _mm512_fmadd_ps(v, b[q], acc[p][q]);
                }
            }
        }
    }
    if (channels > block) {
#pragma clang loop unroll(full)
        for (int p = 0; p < P; p++) {
#pragma clang loop unroll(full)
            for (int q = 0; q < V; q++) acc[p][q] = _mm512_add_ps(total[p][q], acc[p][q]);
        }
    }
}

/// What a tile needs besides its position.
typedef struct {
    const float *x;
    ptrdiff_t sw, channels, plane, taps;
    const ptrdiff_t *off;
    const float *w[VMAX];
    __m512 bias[VMAX];
    const lane_ep *ep[VMAX];
    int has_bias, epilogue;
    float *y;
    ptrdiff_t ystride;
    ptrdiff_t filters[VMAX];  // valid filters in each vector (0 … 16)
} tile_args;

/// Bias, epilogue, transpose and store of the P pixels of vector v (filters[v] of them valid).
SK_TARGET_AVX512 static inline __attribute__((always_inline)) void tile_store(int P, int v, const tile_args *a,
                                                                              __m512 acc[PMAX][VMAX]) {
    __m512 r[16];
#pragma clang loop unroll(full)
    for (int p = 0; p < 16; p++) {
        if (p < P) {
            __m512 s = a->has_bias ? _mm512_add_ps(acc[p][v], a->bias[v]) : acc[p][v];
            r[p] = a->epilogue ? apply_ep(a->ep[v], s) : s;
        } else {
            r[p] = _mm512_setzero_ps();
        }
    }
    transpose16(r);
    __mmask16 m = first_lanes(P);
    float *y = a->y + v * 16 * a->ystride;
    for (ptrdiff_t f = 0; f < a->filters[v]; f++) _mm512_mask_storeu_ps(y + f * a->ystride, m, r[f]);
}

#define SK_DIRECT_TILE(P, V, S)                                                                                \
    SK_TARGET_AVX512 static void tile_##P##_##V##_##S(const tile_args *a) {                                    \
        __m512 acc[PMAX][VMAX];                                                                                \
        tile_acc(P, V, S, a->x, a->sw, a->channels, a->plane, a->off, a->taps, a->w, acc);                     \
        _Pragma("clang loop unroll(full)") for (int v = 0; v < V; v++) tile_store(P, v, a, acc);              \
    }
#define SK_DIRECT_NARROW(V, S)                                                                                 \
    SK_DIRECT_TILE(1, V, S) SK_DIRECT_TILE(2, V, S) SK_DIRECT_TILE(3, V, S) SK_DIRECT_TILE(4, V, S)           \
    SK_DIRECT_TILE(5, V, S) SK_DIRECT_TILE(6, V, S)
#define SK_DIRECT_TILES(V, S)                                                                                  \
    SK_DIRECT_NARROW(V, S) SK_DIRECT_TILE(7, V, S) SK_DIRECT_TILE(8, V, S)                                    \
    SK_DIRECT_TILE(9, V, S) SK_DIRECT_TILE(10, V, S) SK_DIRECT_TILE(11, V, S) SK_DIRECT_TILE(12, V, S)        \
    SK_DIRECT_TILE(13, V, S) SK_DIRECT_TILE(14, V, S)
SK_DIRECT_TILES(1, 1)
SK_DIRECT_TILES(2, 1)
SK_DIRECT_TILES(1, 2)
SK_DIRECT_TILES(2, 2)
SK_DIRECT_TILES(1, 0)
SK_DIRECT_TILES(2, 0)
SK_DIRECT_NARROW(3, 1)
SK_DIRECT_NARROW(4, 1)
SK_DIRECT_NARROW(3, 2)
SK_DIRECT_NARROW(4, 2)
SK_DIRECT_NARROW(3, 0)
SK_DIRECT_NARROW(4, 0)
#undef SK_DIRECT_TILES
#undef SK_DIRECT_NARROW
#undef SK_DIRECT_TILE

typedef void (*tile_fn)(const tile_args *);
#define SK_ROW(V, S)                                                                                           \
    {tile_1_##V##_##S, tile_2_##V##_##S, tile_3_##V##_##S, tile_4_##V##_##S, tile_5_##V##_##S,                 \
     tile_6_##V##_##S, tile_7_##V##_##S, tile_8_##V##_##S, tile_9_##V##_##S, tile_10_##V##_##S,                \
     tile_11_##V##_##S, tile_12_##V##_##S, tile_13_##V##_##S, tile_14_##V##_##S}
#define SK_NARROW_ROW(V, S)                                                                                    \
    {tile_1_##V##_##S, tile_2_##V##_##S, tile_3_##V##_##S, tile_4_##V##_##S, tile_5_##V##_##S,                 \
     tile_6_##V##_##S, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}
/// [V − 1][stride 1, 2, other][P − 1] (V 3 and 4 only up to P = 6)
static const tile_fn tiles[VMAX][3][PMAX] = {{SK_ROW(1, 1), SK_ROW(1, 2), SK_ROW(1, 0)},
                                             {SK_ROW(2, 1), SK_ROW(2, 2), SK_ROW(2, 0)},
                                             {SK_NARROW_ROW(3, 1), SK_NARROW_ROW(3, 2), SK_NARROW_ROW(3, 0)},
                                             {SK_NARROW_ROW(4, 1), SK_NARROW_ROW(4, 2), SK_NARROW_ROW(4, 0)}};
#undef SK_NARROW_ROW
#undef SK_ROW

/// Pixels per tile for a row of `ow`: as many as fit (14), the row split evenly (a 20-wide row as
/// 10 + 10, not 14 + 6: fewer accumulators than the FMA pipes need would idle them).
static inline ptrdiff_t tile_width(ptrdiff_t ow) {
    ptrdiff_t n = (ow + PMAX - 1) / PMAX;
    return (ow + n - 1) / n;
}
#endif

ptrdiff_t sk_conv_direct_filter_span(ptrdiff_t ow) {
#if SK_X86
    // Rows narrow enough for tiles of ≤ 6 pixels take 64 filters per tile, else 32.
    return tile_width(ow) <= PNARROW ? 64 : 32;
#else
    (void)ow;
    return 32;
#endif
}

#if SK_X86
SK_TARGET_AVX512 static int32_t direct_avx512(const float *xp, ptrdiff_t channels, ptrdiff_t hp, ptrdiff_t wp,
                                              const float *packed, ptrdiff_t m, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh,
                                              ptrdiff_t sw, ptrdiff_t dh, ptrdiff_t dw, const float *bias, float *y,
                                              ptrdiff_t ystride, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t f0, ptrdiff_t f1,
                                              ptrdiff_t r0, ptrdiff_t r1, const sk_lane_epilogue *epilogue,
                                              ptrdiff_t channel0) {
    if (channels < 1 || kh < 1 || kw < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1 || oh < 1 || ow < 1) return 0;
    if (f0 < 0 || f0 % 16 != 0 || f1 > m || f0 >= f1 || r0 < 0 || r1 > oh || r0 >= r1) return 0;
    // Every tap of every output inside the padded input.
    if ((oh - 1) * sh + (kh - 1) * dh >= hp || (ow - 1) * sw + (kw - 1) * dw >= wp) return 0;
    if (kh * kw > 1024) return 0;
    ptrdiff_t off[1024], taps = kh * kw, k = channels * taps;
    for (ptrdiff_t i = 0; i < kh; i++)
        for (ptrdiff_t j = 0; j < kw; j++) off[i * kw + j] = i * dh * wp + j * dw;
    lane_ep eps[VMAX];
    int epilogue_used = epilogue && ((epilogue->scale && epilogue->shift) || epilogue->count > 0);
    const int s = sw == 1 ? 0 : sw == 2 ? 1 : 2;
    const ptrdiff_t pw = tile_width(ow), span = sk_conv_direct_filter_span(ow);
    for (ptrdiff_t fb = f0; fb < f1; fb += span) {
        tile_args a;
        int v = 0;
        for (int q = 0; q < VMAX; q++) {
            ptrdiff_t left = f1 - fb - 16 * q, n = 16 * q >= span || left <= 0 ? 0 : (left < 16 ? left : 16);
            a.filters[q] = n;
            a.w[q] = packed + (n > 0 ? fb + 16 * q : fb) * k;
            if (n > 0) v = q + 1;
        }
        for (int q = 0; q < v; q++) {
            ptrdiff_t n = a.filters[q];
            __mmask16 mask = first_lanes(n);
            a.bias[q] = bias ? _mm512_maskz_loadu_ps(mask, bias + fb + 16 * q) : _mm512_setzero_ps();
            if (epilogue_used && !load_ep(epilogue, channel0 + fb + 16 * q, n, &eps[q], 0)) return 0;
            a.ep[q] = &eps[q];
        }
        a.epilogue = epilogue_used;
        a.has_bias = bias != NULL;
        a.sw = sw;
        a.channels = channels;
        a.plane = hp * wp;
        a.taps = taps;
        a.off = off;
        a.ystride = ystride;
        for (ptrdiff_t r = r0; r < r1; r++) {
            for (ptrdiff_t c0 = 0; c0 < ow; c0 += pw) {
                ptrdiff_t p = ow - c0 < pw ? ow - c0 : pw;
                a.x = xp + r * sh * wp + c0 * sw;
                a.y = y + fb * ystride + r * ow + c0;
                tiles[v - 1][s][p - 1](&a);
            }
        }
    }
    return 1;
}
#endif

int32_t sk_conv_direct(int32_t level, const float *xp, ptrdiff_t channels, ptrdiff_t hp, ptrdiff_t wp,
                       const float *packed, ptrdiff_t m, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw,
                       ptrdiff_t dh, ptrdiff_t dw, const float *bias, float *y, ptrdiff_t ystride, ptrdiff_t oh,
                       ptrdiff_t ow, ptrdiff_t f0, ptrdiff_t f1, ptrdiff_t r0, ptrdiff_t r1,
                       const sk_lane_epilogue *epilogue, ptrdiff_t channel0) {
#if SK_X86
    if (sk_level_clamp(level) != SK_LEVEL_AVX512) return 0;
    return direct_avx512(xp, channels, hp, wp, packed, m, kh, kw, sh, sw, dh, dw, bias, y, ystride, oh, ow, f0, f1, r0,
                         r1, epilogue, channel0);
#else
    (void)level; (void)xp; (void)channels; (void)hp; (void)wp; (void)packed; (void)m; (void)kh; (void)kw;
    (void)sh; (void)sw; (void)dh; (void)dw; (void)bias; (void)y; (void)ystride; (void)oh; (void)ow; (void)f0;
    (void)f1; (void)r0; (void)r1; (void)epilogue; (void)channel0;
    return 0;
#endif
}

// MARK: - Pointwise convs with the pixels in the lanes

#if SK_X86
enum { PW_FILTERS = 8, PW_VECTORS = 3 };

/// One tile: 8 filters (rows f0 … f0 + 7 of a packed 16-filter block, `w` at row f0 % 16 of it) × up to 48
/// pixels (`mask` per vector), over `channels` planes of `plane` floats from x; rows `rows` (≤ 8) stored.
SK_TARGET_AVX512 static void pointwise_tile(const float *x, ptrdiff_t plane, ptrdiff_t channels, const float *w,
                                            const __mmask16 mask[PW_VECTORS], const float *bias, ptrdiff_t f0,
                                            ptrdiff_t rows, const lane_ep *ep, int epilogue, float *y,
                                            ptrdiff_t ystride) {
    __m512 acc[PW_FILTERS][PW_VECTORS];
#pragma clang loop unroll(full)
    for (int i = 0; i < PW_FILTERS; i++) {
#pragma clang loop unroll(full)
        for (int v = 0; v < PW_VECTORS; v++) acc[i][v] = _mm512_setzero_ps();
    }
    __m512 total[PW_FILTERS][PW_VECTORS];
    const ptrdiff_t block = block_channels(1);
    for (ptrdiff_t c0 = 0; c0 < channels; c0 += block) {
        if (c0 > 0) {
#pragma clang loop unroll(full)
            for (int i = 0; i < PW_FILTERS; i++) {
#pragma clang loop unroll(full)
                for (int v = 0; v < PW_VECTORS; v++) {
                    total[i][v] = c0 == block ? acc[i][v] : _mm512_add_ps(total[i][v], acc[i][v]);
                    acc[i][v] = _mm512_setzero_ps();
                }
            }
        }
        const ptrdiff_t c1 = channels - c0 < block ? channels : c0 + block;
        for (ptrdiff_t c = c0; c < c1; c++) {
            const float *xc = x + c * plane, *wc = w + c * 16;
            __m512 xv[PW_VECTORS];
#pragma clang loop unroll(full)
            for (int v = 0; v < PW_VECTORS; v++) xv[v] = _mm512_maskz_loadu_ps(mask[v], xc + 16 * v);
#pragma clang loop unroll(full)
            for (int i = 0; i < PW_FILTERS; i++) {
                __m512 wv = _mm512_set1_ps(wc[i]);
#pragma clang loop unroll(full)
                for (int v = 0; v < PW_VECTORS; v++) acc[i][v] = _mm512_fmadd_ps(wv, xv[v], acc[i][v]);
            }
        }
    }
    if (channels > block) {
#pragma clang loop unroll(full)
        for (int i = 0; i < PW_FILTERS; i++) {
#pragma clang loop unroll(full)
            for (int v = 0; v < PW_VECTORS; v++) acc[i][v] = _mm512_add_ps(total[i][v], acc[i][v]);
        }
    }
    for (ptrdiff_t i = 0; i < rows; i++) {
        for (int v = 0; v < PW_VECTORS; v++) {
            if (!mask[v]) continue;
            __m512 s = bias ? _mm512_add_ps(acc[i][v], _mm512_set1_ps(bias[f0 + i])) : acc[i][v];
            if (epilogue) s = apply_ep(&ep[i], s);
            _mm512_mask_storeu_ps(y + i * ystride + 16 * v, mask[v], s);
        }
    }
}

SK_TARGET_AVX512 static int32_t pointwise_avx512(const float *x, ptrdiff_t channels, ptrdiff_t pixels,
                                                 const float *packed, ptrdiff_t m, const float *bias, float *y,
                                                 ptrdiff_t ystride, ptrdiff_t f0, ptrdiff_t f1, ptrdiff_t p0,
                                                 ptrdiff_t p1, const sk_lane_epilogue *epilogue, ptrdiff_t channel0) {
    if (channels < 1 || pixels < 1 || f0 < 0 || f0 % PW_FILTERS != 0 || f1 > m || f0 >= f1 || p0 < 0 ||
        p1 > pixels || p0 >= p1)
        return 0;
    int epilogue_used = epilogue && ((epilogue->scale && epilogue->shift) || epilogue->count > 0);
    for (ptrdiff_t f = f0; f < f1; f += PW_FILTERS) {
        ptrdiff_t rows = f1 - f < PW_FILTERS ? f1 - f : PW_FILTERS;
        lane_ep ep[PW_FILTERS];
        for (ptrdiff_t i = 0; epilogue_used && i < rows; i++)
            if (!load_ep(epilogue, channel0 + f + i, 1, &ep[i], 1)) return 0;
        const float *w = packed + (f / 16) * channels * 16 + f % 16;
        for (ptrdiff_t p = p0; p < p1; p += 16 * PW_VECTORS) {
            __mmask16 mask[PW_VECTORS];
            for (int v = 0; v < PW_VECTORS; v++) mask[v] = first_lanes(p1 - p - 16 * v);
            pointwise_tile(x + p, pixels, channels, w, mask, bias, f, rows, ep, epilogue_used, y + f * ystride + p,
                           ystride);
        }
    }
    return 1;
}
#endif

int32_t sk_conv_pointwise(int32_t level, const float *x, ptrdiff_t channels, ptrdiff_t pixels, const float *packed,
                          ptrdiff_t m, const float *bias, float *y, ptrdiff_t ystride, ptrdiff_t f0, ptrdiff_t f1,
                          ptrdiff_t p0, ptrdiff_t p1, const sk_lane_epilogue *epilogue, ptrdiff_t channel0) {
#if SK_X86
    if (sk_level_clamp(level) != SK_LEVEL_AVX512) return 0;
    return pointwise_avx512(x, channels, pixels, packed, m, bias, y, ystride, f0, f1, p0, p1, epilogue, channel0);
#else
    (void)level; (void)x; (void)channels; (void)pixels; (void)packed; (void)m; (void)bias; (void)y; (void)ystride;
    (void)f0; (void)f1; (void)p0; (void)p1; (void)epilogue; (void)channel0;
    return 0;
#endif
}
