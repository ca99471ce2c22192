// The elementwise math and the depthwise plane kernel, written once and compiled per level by unary.c:
// it defines SK_ATTR (target attributes), SK_NAME(x) (a per-level name) and SK_MADD(a, b, c) = a·b + c
// (fused on AVX2 / AVX-512, a rounded multiply then add on the portable level), then includes this file.
// The loops are branch-free over the element so the compiler vectorises them for the level's width.

#define SK_INL static inline __attribute__((always_inline)) SK_ATTR

// The elementwise loops run in place too (y == x): each element is read before it is written, so the
// vector loop is safe, but the compiler cannot know y never overlaps x otherwise and would fall back to
// its scalar loop for y == x (a 10x slower fused Conv epilogue). Callers never pass partial overlaps.
#ifndef SK_ELEMENTWISE_LOOP
#if defined(__clang__)
#define SK_ELEMENTWISE_LOOP _Pragma("clang loop vectorize(assume_safety)")
#else
#define SK_ELEMENTWISE_LOOP
#endif
#endif

SK_INL uint32_t SK_NAME(bits)(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

SK_INL float SK_NAME(fromBits)(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/// e^x: n = round(x / ln 2) through the 1.5·2²³ trick, r = x − n·ln 2 in two parts (Cody–Waite), e^r by
/// its degree-7 Taylor polynomial (truncation < 6·10⁻⁹ relative on |r| ≤ ln2/2), and 2ⁿ applied as two
/// exact-range powers of two so results in the subnormal range are rounded once. x is clamped to
/// [−104, 89] first (e^−104 rounds to 0, e^89 overflows to +inf); NaN fails both compares and stays NaN.
SK_INL float SK_NAME(exp1)(float x) {
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    const float magic = 12582912.0f;
    float t = SK_MADD(xc, 1.44269504088896341f, magic);
    float nf = t - magic;
    float r = SK_MADD(nf, -0.693359375f, xc);
    r = SK_MADD(nf, 2.12194440e-4f, r);
    float p = 1.0f / 5040;
    p = SK_MADD(p, r, 1.0f / 720);
    p = SK_MADD(p, r, 1.0f / 120);
    p = SK_MADD(p, r, 1.0f / 24);
    p = SK_MADD(p, r, 1.0f / 6);
    p = SK_MADD(p, r, 0.5f);
    p = SK_MADD(p, r, 1.0f);
    p = SK_MADD(p, r, 1.0f);
    int32_t n = (int32_t)(SK_NAME(bits)(t) - SK_NAME(bits)(magic));
    int32_t n1 = n >> 1, n2 = n - n1;
    float s1 = SK_NAME(fromBits)((uint32_t)(n1 + 127) << 23), s2 = SK_NAME(fromBits)((uint32_t)(n2 + 127) << 23);
    return (p * s1) * s2;
}

/// 1 / (1 + e^−x) for x ≥ 0, e^x / (1 + e^x) below (no overflow, subnormal results kept).
SK_INL float SK_NAME(sigmoid1)(float x) {
    float ax = SK_NAME(fromBits)(SK_NAME(bits)(x) & 0x7FFFFFFFu);
    float e = SK_NAME(exp1)(-ax);
    float num = x >= 0 ? 1.0f : e;
    return num / (1.0f + e);
}

/// tanh: below |x| = 0.55 the odd polynomial x + x³·Q(x²) (a relative-error fit, 1·10⁻⁹); above,
/// 1 − 2 / (e^{2|x|} + 1), which reaches exactly 1 and stays there (e^{2|x|} = +inf gives 1); sign copied.
SK_INL float SK_NAME(tanh1)(float x) {
    uint32_t sign = SK_NAME(bits)(x) & 0x80000000u;
    float a = SK_NAME(fromBits)(SK_NAME(bits)(x) & 0x7FFFFFFFu);
    float z = a * a;
    float q = -0.006274236831814051f;
    q = SK_MADD(q, z, 0.021071678027510643f);
    q = SK_MADD(q, z, -0.05385230854153633f);
    q = SK_MADD(q, z, 0.13332585990428925f);
    q = SK_MADD(q, z, -0.33333316445350647f);
    float small = SK_MADD(a * z, q, a);
    float e = SK_NAME(exp1)(a + a);
    float big = 1.0f - 2.0f / (e + 1.0f);
    float v = a < 0.55f ? small : big;
    return SK_NAME(fromBits)(SK_NAME(bits)(v) | sign);
}

SK_ATTR static void SK_NAME(exp)(const float *x, float *y, ptrdiff_t n) {
    SK_ELEMENTWISE_LOOP
    for (ptrdiff_t i = 0; i < n; i++) y[i] = SK_NAME(exp1)(x[i]);
}

/// The interpreter's Softmax exponent: x clamped to [−87.33654, 88] (NaN passes), n = round(x / ln 2)
/// through the 1.5·2²³ trick, r = x − n·ln 2 in two parts, e^r by its degree-7 Taylor polynomial, times
/// 2ⁿ from the exponent bits; 0 below −87.33654. A rounded multiply and a rounded add everywhere (never
/// SK_MADD), so every level gives the same bits; it is the only definition (Softmax and LogSoftmax, rows
/// and columns, run here).
SK_INL float SK_NAME(softmax_exp1)(float x) {
    float xc = -87.33654f >= x ? -87.33654f : x;
    xc = 88.0f < xc ? 88.0f : xc;
    const float magic = 12582912.0f;
    float t = xc * 1.44269504088896341f + magic;
    float nf = t - magic;
    float r = (xc - nf * 0.693359375f) + nf * 2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    float scale = SK_NAME(fromBits)((SK_NAME(bits)(t) - 0x4B400000u + 127u) << 23);
    return x < -87.33654f ? 0.0f : p * scale;
}

/// Softmax (log_softmax: LogSoftmax) of one contiguous row, with the bits of the interpreter's Swift
/// definition: m = the largest non-NaN element (16 running maxima; the only order effect, which zero's
/// sign is kept, changes no result); e = softmax_exp1(x − m) (m = 0 when not finite); the sum in eight
/// interleaved partial sums ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), then the tail in order;
/// then e / sum, or (x − m) − log(sum).
SK_ATTR static void SK_NAME(softmax_row)(const float *x, float *y, ptrdiff_t len, int log_softmax) {
    float mm[16];
    for (int k = 0; k < 16; k++) mm[k] = -__builtin_inff();
    ptrdiff_t j = 0;
    for (; j + 16 <= len; j += 16)
        for (int k = 0; k < 16; k++) mm[k] = x[j + k] > mm[k] ? x[j + k] : mm[k];
    float m = -__builtin_inff();
    for (int k = 0; k < 16; k++) m = mm[k] > m ? mm[k] : m;
    for (; j < len; j++) m = x[j] > m ? x[j] : m;
    float shift = (m - m == 0.0f) ? m : 0.0f;
    SK_ELEMENTWISE_LOOP
    for (ptrdiff_t i = 0; i < len; i++) y[i] = SK_NAME(softmax_exp1)(x[i] - shift);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    j = 0;
    for (; j + 8 <= len; j += 8)
        for (int k = 0; k < 8; k++) acc[k] += y[j + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; j < len; j++) s += y[j];
    if (log_softmax) {
        float ls = logf(s);
        SK_ELEMENTWISE_LOOP
        for (ptrdiff_t i = 0; i < len; i++) y[i] = (x[i] - shift) - ls;
    } else {
        SK_ELEMENTWISE_LOOP
        for (ptrdiff_t i = 0; i < len; i++) y[i] = y[i] / s;
    }
}

/// Softmax (log_softmax: LogSoftmax) over the middle axis of a [len, inner] block, for its first `count`
/// inner positions (each its own softmax): per position the largest non-NaN value m (0 when not
/// finite), e = softmax_exp1(x − m) summed in row order, then e / sum or (x − m) − log(sum). `m` and `s`
/// are count floats of scratch. Contiguous inner loops, so the compiler vectorises across positions.
SK_ATTR static void SK_NAME(softmax_columns)(const float *x, float *y, ptrdiff_t len, ptrdiff_t inner,
                                             ptrdiff_t count, int log_softmax, float *m, float *s) {
    for (ptrdiff_t k = 0; k < count; k++) { m[k] = -__builtin_inff(); s[k] = 0.0f; }
    for (ptrdiff_t l = 0; l < len; l++) {
        const float *row = x + l * inner;
        for (ptrdiff_t k = 0; k < count; k++) m[k] = row[k] > m[k] ? row[k] : m[k];
    }
    for (ptrdiff_t k = 0; k < count; k++) m[k] = (m[k] - m[k] == 0.0f) ? m[k] : 0.0f;
    for (ptrdiff_t l = 0; l < len; l++) {
        const float *row = x + l * inner;
        float *out = y + l * inner;
        for (ptrdiff_t k = 0; k < count; k++) {
            float e = SK_NAME(softmax_exp1)(row[k] - m[k]);
            out[k] = e;
            s[k] += e;
        }
    }
    if (log_softmax) {
        for (ptrdiff_t k = 0; k < count; k++) s[k] = logf(s[k]);
        for (ptrdiff_t l = 0; l < len; l++) {
            const float *row = x + l * inner;
            float *out = y + l * inner;
            for (ptrdiff_t k = 0; k < count; k++) out[k] = (row[k] - m[k]) - s[k];
        }
    } else {
        for (ptrdiff_t l = 0; l < len; l++) {
            float *out = y + l * inner;
            for (ptrdiff_t k = 0; k < count; k++) out[k] = out[k] / s[k];
        }
    }
}

SK_ATTR static void SK_NAME(tanh)(const float *x, float *y, ptrdiff_t n) {
    SK_ELEMENTWISE_LOOP
    for (ptrdiff_t i = 0; i < n; i++) y[i] = SK_NAME(tanh1)(x[i]);
}

SK_ATTR static void SK_NAME(sigmoid)(const float *x, float *y, ptrdiff_t n) {
    SK_ELEMENTWISE_LOOP
    for (ptrdiff_t i = 0; i < n; i++) y[i] = SK_NAME(sigmoid1)(x[i]);
}

SK_ATTR static void SK_NAME(swish)(const float *x, float *y, ptrdiff_t n, float alpha) {
    SK_ELEMENTWISE_LOOP
    for (ptrdiff_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v * SK_NAME(sigmoid1)(alpha * v);
    }
}

SK_ATTR static void SK_NAME(hardswish)(const float *x, float *y, ptrdiff_t n) {
    SK_ELEMENTWISE_LOOP
    for (ptrdiff_t i = 0; i < n; i++) {
        float v = x[i];
        float t = v * (1.0f / 6) + 0.5f;
        t = t < 1.0f ? t : 1.0f;
        t = t >= 0.0f ? t : 0.0f;
        y[i] = v * t;
    }
}

SK_ATTR static void SK_NAME(hardsigmoid)(const float *x, float *y, ptrdiff_t n, float alpha, float beta) {
    SK_ELEMENTWISE_LOOP
    for (ptrdiff_t i = 0; i < n; i++) {
        float t = alpha * x[i] + beta;
        t = t < 1.0f ? t : 1.0f;
        y[i] = t >= 0.0f ? t : 0.0f;
    }
}

/// One loop per op and operand kind, so each vectorises on its own.
#define SK_BINARY_LOOPS(OP, EXPR)                                                                            \
    if (a && b) {                                                                                          \
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float u = a[i], v = b[i]; y[i] = EXPR; }    \
    } else if (a) {                                                                                        \
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float u = a[i], v = sb; y[i] = EXPR; }      \
    } else if (b) {                                                                                        \
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float u = sa, v = b[i]; y[i] = EXPR; }      \
    } else {                                                                                               \
        float u = sa, v = sb, r = EXPR;                                                                    \
        for (ptrdiff_t i = 0; i < n; i++) y[i] = r;                                                        \
    }

SK_ATTR static void SK_NAME(binary)(int32_t op, const float *a, float sa, const float *b, float sb, float *y, ptrdiff_t n) {
    switch (op) {
    case SK_ADD: SK_BINARY_LOOPS(op, u + v) break;
    case SK_SUB: SK_BINARY_LOOPS(op, u - v) break;
    case SK_MUL: SK_BINARY_LOOPS(op, u * v) break;
    case SK_DIV: SK_BINARY_LOOPS(op, u / v) break;
    case SK_MAX: SK_BINARY_LOOPS(op, (u != u || u >= v) ? u : v) break;
    case SK_MIN: SK_BINARY_LOOPS(op, (u != u || u <= v) ? u : v) break;
    default: break;
    }
}

SK_ATTR static void SK_NAME(unary_simple)(int32_t op, const float *x, float *y, ptrdiff_t n, float p0, float p1) {
    switch (op) {
    case SK_RELU:
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float v = x[i]; y[i] = v > 0 ? v : (v != v ? v : 0.0f); }
        break;
    case SK_NEG: SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) y[i] = -x[i]; break;
    case SK_ABS: SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) y[i] = __builtin_fabsf(x[i]); break;
    case SK_RECIPROCAL: SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) y[i] = 1.0f / x[i]; break;
    case SK_CLIP:
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float m = x[i] < p0 ? p0 : x[i]; y[i] = m > p1 ? p1 : m; }
        break;
    case SK_LEAKY_RELU:
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float v = x[i]; y[i] = v >= 0 ? v : p0 * v; }
        break;
    case SK_PRELU:
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float v = x[i]; y[i] = v < 0 ? p0 * v : v; }
        break;
    default: break;
    }
}

// One pass of a Conv epilogue (see CKernels.h): each step a rounded operation, as the separate kernels do.
#define SK_EPILOGUE_LOOP(EXPR)                                                                                 \
    if (r) {                                                                                                   \
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float v = y[i]; v = EXPR; y[i] = v + r[i]; }   \
    } else if (relu) {                                                                                         \
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) {                                                \
            float v = y[i]; v = EXPR; y[i] = v > 0 ? v : (v != v ? v : 0.0f);                                  \
        }                                                                                                      \
    } else {                                                                                                   \
        SK_ELEMENTWISE_LOOP for (ptrdiff_t i = 0; i < n; i++) { float v = y[i]; y[i] = EXPR; }                  \
    }

SK_ATTR static void SK_NAME(conv_epilogue)(float *y, ptrdiff_t n, float b, float a, float s, int32_t flags,
                                           const float *r) {
    int relu = (flags & SK_EPILOGUE_RELU) != 0;
    switch (flags & (SK_EPILOGUE_BIAS | SK_EPILOGUE_AFFINE)) {
    case SK_EPILOGUE_BIAS | SK_EPILOGUE_AFFINE: SK_EPILOGUE_LOOP((v + b) * a + s) break;
    case SK_EPILOGUE_BIAS: SK_EPILOGUE_LOOP(v + b) break;
    case SK_EPILOGUE_AFFINE: SK_EPILOGUE_LOOP(v * a + s) break;
    default: SK_EPILOGUE_LOOP(v) break;
    }
}

/// The valid output range [lo, hi) along one axis for a tap at input offset `off` (input index
/// o·stride + off inside [0, limit)).
SK_INL void SK_NAME(validRange)(ptrdiff_t off, ptrdiff_t stride, ptrdiff_t limit, ptrdiff_t count, ptrdiff_t *lo,
                                ptrdiff_t *hi) {
    ptrdiff_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    ptrdiff_t h = limit - off <= 0 ? 0 : (limit - off + stride - 1) / stride;
    if (h > count) h = count;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

SK_ATTR static void SK_NAME(depthwise)(const float *x, ptrdiff_t ih, ptrdiff_t iw, const float *w, ptrdiff_t kh,
                                       ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t ph, ptrdiff_t pw,
                                       ptrdiff_t dh, ptrdiff_t dw, float bias, float *y, ptrdiff_t oh, ptrdiff_t ow) {
    for (ptrdiff_t o = 0; o < oh; o++) {
        float *yrow = y + o * ow;
        for (ptrdiff_t j = 0; j < ow; j++) yrow[j] = bias;
        for (ptrdiff_t a = 0; a < kh; a++) {
            ptrdiff_t r = o * sh - ph + a * dh;
            if (r < 0 || r >= ih) continue;
            const float *line = x + r * iw;
            for (ptrdiff_t b = 0; b < kw; b++) {
                float wv = w[a * kw + b];
                ptrdiff_t off = b * dw - pw, lo, hi;
                SK_NAME(validRange)(off, sw, iw, ow, &lo, &hi);
                if (sw == 1) {
                    const float *src = line + off;
                    for (ptrdiff_t j = lo; j < hi; j++) yrow[j] = yrow[j] + wv * src[j];
                } else if (sw == 2) {
                    const float *src = line + off;
                    for (ptrdiff_t j = lo; j < hi; j++) yrow[j] = yrow[j] + wv * src[2 * j];
                } else {
                    for (ptrdiff_t j = lo; j < hi; j++) yrow[j] = yrow[j] + wv * line[j * sw + off];
                }
            }
        }
    }
}

/// Resize's vertical pass for two source rows: y[i] = w0·a[i] + w1·b[i], each product rounded, then the
/// sum (no fused multiply-add: Resize+Planes.swift's combineRows, the same bits).
SK_ATTR static void SK_NAME(resize_blend)(const float *a, const float *b, float w0, float w1, float *y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) y[i] = w0 * a[i] + w1 * b[i];
}

/// Resize's horizontal pass with two taps per output: y[o] = w[2o]·x[idx[2o]] + w[2o + 1]·x[idx[2o + 1]]
/// (resizeRow's plain pairs, the same bits).
SK_ATTR static void SK_NAME(resize_pairs)(const float *x, const ptrdiff_t *idx, const float *w, float *y, ptrdiff_t n) {
    for (ptrdiff_t o = 0; o < n; o++) y[o] = w[2 * o] * x[idx[2 * o]] + w[2 * o + 1] * x[idx[2 * o + 1]];
}

/// y = the rows × cols matrix x transposed, for matrices 2, 3 or 4 wide or tall (NHWC ↔ NCHW of RGB
/// images): one loop per narrow count, so the compiler turns the strided side into vector shuffles.
#define SK_NARROW_TRANSPOSE(N)                                                                                 \
    SK_ATTR static void SK_NAME(deinterleave##N)(const float *x, float *y, ptrdiff_t n) {                      \
        for (ptrdiff_t p = 0; p < n; p++)                                                                      \
            for (ptrdiff_t c = 0; c < N; c++) y[c * n + p] = x[p * N + c];                                     \
    }                                                                                                          \
    SK_ATTR static void SK_NAME(interleave##N)(const float *x, float *y, ptrdiff_t n) {                        \
        for (ptrdiff_t p = 0; p < n; p++)                                                                      \
            for (ptrdiff_t c = 0; c < N; c++) y[p * N + c] = x[c * n + p];                                     \
    }
SK_NARROW_TRANSPOSE(2)
SK_NARROW_TRANSPOSE(3)
SK_NARROW_TRANSPOSE(4)
#undef SK_NARROW_TRANSPOSE

SK_ATTR static void SK_NAME(transpose_narrow)(const float *x, float *y, ptrdiff_t rows, ptrdiff_t cols) {
    switch (cols) {
    case 2: SK_NAME(deinterleave2)(x, y, rows); return;
    case 3: SK_NAME(deinterleave3)(x, y, rows); return;
    case 4: SK_NAME(deinterleave4)(x, y, rows); return;
    default: break;
    }
    switch (rows) {
    case 2: SK_NAME(interleave2)(x, y, cols); return;
    case 3: SK_NAME(interleave3)(x, y, cols); return;
    case 4: SK_NAME(interleave4)(x, y, cols); return;
    default: break;
    }
    for (ptrdiff_t i = 0; i < rows; i++)
        for (ptrdiff_t j = 0; j < cols; j++) y[j * rows + i] = x[i * cols + j];
}

#undef SK_INL
#undef SK_BINARY_LOOPS
