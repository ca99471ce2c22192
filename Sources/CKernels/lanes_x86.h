// Shared by the AVX-512 kernels that keep 16 channels in the lanes of a vector (depthwise_lanes_x86.c,
// conv_direct_x86.c): the 16 × 16 register transpose, lane masks and the lane epilogue.
#ifndef SHRINKWRAP_CKERNELS_LANES_X86_H
#define SHRINKWRAP_CKERNELS_LANES_X86_H
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

/// An sk_lane_epilogue with its per-channel values loaded as vectors.
typedef struct {
    int affine, count, op[SK_LANE_EPILOGUE_MAX], first[SK_LANE_EPILOGUE_MAX];
    __m512 a, s, p0[SK_LANE_EPILOGUE_MAX], p1[SK_LANE_EPILOGUE_MAX];
} lane_ep;

/// Loads `e` for channels channel0 ..< channel0 + channels (other lanes 0), or with `broadcast` channel0's
/// values in every lane (a kernel with the pixels in the lanes); 0 for an unknown activation.
SK_TARGET_AVX512 static inline __m512 ep_values(const float *v, ptrdiff_t channel0, __mmask16 m, int broadcast) {
    return broadcast ? _mm512_set1_ps(v[channel0]) : _mm512_maskz_loadu_ps(m, v + channel0);
}

SK_TARGET_AVX512 static int load_ep(const sk_lane_epilogue *e, ptrdiff_t channel0, ptrdiff_t channels, lane_ep *l,
                                    int broadcast) {
    __mmask16 m = first_lanes(channels);
    l->affine = e && e->scale && e->shift;
    l->count = e ? e->count : 0;
    if (l->count < 0 || l->count > SK_LANE_EPILOGUE_MAX) return 0;
    if (l->affine) {
        l->a = ep_values(e->scale, channel0, m, broadcast);
        l->s = ep_values(e->shift, channel0, m, broadcast);
    }
    for (int i = 0; i < l->count; i++) {
        l->op[i] = e->op[i];
        if (l->op[i] < SK_ACT_RELU || l->op[i] > SK_ACT_DIV) return 0;
        l->p0[i] = l->op[i] == SK_ACT_PRELU && e->slopes[i] ? ep_values(e->slopes[i], channel0, m, broadcast)
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
        case SK_ACT_HARDSWISH_OPS: {  // t = v + 3; t = clip(t, 0, 6) as SK_ACT_CLIP; (v · t) / 6
            __m512 six = _mm512_set1_ps(6.0f);
            __m512 t = _mm512_add_ps(v, _mm512_set1_ps(3.0f));
            t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, zero, _CMP_LT_OQ), t, zero);
            t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, six, _CMP_GT_OQ), t, six);
            v = _mm512_div_ps(_mm512_mul_ps(v, t), six);
            break;
        }
        case SK_ACT_ADD:
        case SK_ACT_SUB:
        case SK_ACT_MUL:
        case SK_ACT_DIV: {  // u op w, u the scalar when p1 ≠ 0: one rounded operation, as the node's
            __m512 u = l->first[i] ? p0 : v, w = l->first[i] ? v : p0;
            int op = l->op[i];
            v = op == SK_ACT_ADD ? _mm512_add_ps(u, w)
                : op == SK_ACT_SUB ? _mm512_sub_ps(u, w)
                : op == SK_ACT_MUL ? _mm512_mul_ps(u, w) : _mm512_div_ps(u, w);
            break;
        }
        default: break;
        }
    }
    return v;
}
#endif

#endif
