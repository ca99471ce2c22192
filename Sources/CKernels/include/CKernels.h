// Shrinkwrap's compute kernels in C: SGEMM, depthwise convolution and vectorised unary math, each with an
// AVX-512, an AVX2+FMA and a portable code path. The path is chosen once per process (sk_level_active) or
// passed explicitly (tests compare levels). The C code creates no threads: callers split work themselves.
#ifndef SHRINKWRAP_CKERNELS_H
#define SHRINKWRAP_CKERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Instruction-set levels. Every kernel has all three; a level the CPU lacks falls back to a lower one.
enum { SK_LEVEL_PORTABLE = 0, SK_LEVEL_AVX2 = 1, SK_LEVEL_AVX512 = 2 };

/// The best level this CPU supports (AVX2 needs AVX2 + FMA; AVX-512 needs F, VL, BW, DQ).
int32_t sk_level_best(void);
/// The level kernels run at: SHRINKWRAP_SIMD=portable|avx2|avx512 when set (capped at sk_level_best),
/// else sk_level_best. Read once.
int32_t sk_level_active(void);
/// `level` capped at what the CPU supports (negative values mean sk_level_active()).
int32_t sk_level_clamp(int32_t level);
/// "portable", "avx2" or "avx512".
const char *sk_level_name(int32_t level);

/// C[M×N] = alpha · op(A) · op(B) + beta · C, row-major; lda / ldb / ldc are the row strides as stored.
///
/// Bit-exactness contract: for a given level, each element C[i][j] is computed over fixed blocks of K
/// (k = 0 ..< 256, 256 ..< 512, …; the block boundaries depend on nothing but K):
///   total = 0; for each block in order: { acc = 0; for p in the block (increasing): acc = acc + A[i][p]·B[p][j];
///                                         total = (first block) ? acc : total + acc }
/// (the multiply-add fused on AVX2 / AVX-512; a rounded multiply then a rounded add on the portable level),
/// then C[i][j] = total (alpha = 1, beta = 0), alpha·total (beta = 0) or alpha·total + beta·C[i][j], each
/// operation rounded. So an element's bits depend only on its row of op(A), its column of op(B), K, alpha,
/// beta and the level — never on M, N, the tiling, which other rows / columns are in the call, or how a
/// caller splits C across threads. (Summing per-block chains is also more accurate than one chain of K
/// terms.) beta = 0 never reads C (NaN in C does not propagate).
void sk_sgemm(int32_t level, int32_t trans_a, int32_t trans_b, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, float alpha,
              const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc);

/// Depthwise 2-D convolution of one plane: y[oh][ow] = bias + Σ over taps (kh, kw in increasing order,
/// taps outside the input skipped) of w[kh][kw] · x[oh·sh − ph + kh·dh][ow·sw − pw + kw·dw].
/// Each tap is a rounded multiply then a rounded add on every level (not fused), so all levels give the
/// same bits, those of the straightforward float loop. (Fused multiply-adds here moved ppocr-v4-rec's
/// output from 8e-5 to 2.5e-4 of a float64 evaluation — past onnxruntime's 2.2e-4 — on the corpus inputs.)
void sk_depthwise_plane(int32_t level, const float *x, ptrdiff_t ih, ptrdiff_t iw, const float *w, ptrdiff_t kh,
                        ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw, ptrdiff_t ph, ptrdiff_t pw, ptrdiff_t dh,
                        ptrdiff_t dw, float bias, float *y, ptrdiff_t oh, ptrdiff_t ow);

/// Depthwise 2-D convolution of `channels` (1 ... 16) planes at once, channels in the lanes of one vector:
/// plane c of x starts at x + c·xstride, its filter at w + c·kh·kw, its bias at bias[c] (bias may be NULL:
/// 0); output rows [o0, o1) of plane c are written at y + c·ystride + o·ow. Per element the arithmetic of
/// sk_depthwise_plane (the same bits) when sk_depthwise_lanes_usable said so for these weights (`channels`
/// filters of `taps` taps, all the conv's) and bias — not at a level without the kernel (only AVX-512 has
/// it), not with a weight that is not finite or a bias of −0; then sk_depthwise_plane per plane.
/// `epilogue` (NULL: none) then runs on each output, its channel arrays read from `channel0` on.
/// `scratch` holds sk_depthwise_lanes_scratch(ow, kh, kw, sh, sw, dh, dw, o1 − o0) floats. Returns 0,
/// doing nothing, for a level without the kernel or arguments out of range (an unknown activation too).
/// What sk_depthwise_lanes does to each output after the bias, per channel in the lanes, as the
/// interpreter's separate kernels do it (each step rounded): v = v · scale + shift when `scale` is set
/// (sk_conv_epilogue's affine step), then `count` activations in order, each as its elementwise kernel:
/// relu, clip(p0, p1), leaky relu (p0), prelu (slopes per channel, or p0 when `slopes` is NULL),
/// hardswish, hardsigmoid (alpha p0, beta p1), max / min with the scalar p0 (first operand when p1 ≠ 0),
/// hardswish as exporters spell it out in four nodes, v · clip(v + 3, 0, 6) / 6, each step rounded
/// (a divide by 6, not a multiply by 1/6), and add / sub / mul / div with the scalar p0 (first operand
/// when p1 ≠ 0). Arrays are indexed by the conv's channel (sk_depthwise_lanes adds its `channel0`).
enum { SK_ACT_RELU = 1, SK_ACT_CLIP = 2, SK_ACT_LEAKY_RELU = 3, SK_ACT_PRELU = 4, SK_ACT_HARDSWISH = 5,
       SK_ACT_HARDSIGMOID = 6, SK_ACT_MAX = 7, SK_ACT_MIN = 8, SK_ACT_HARDSWISH_OPS = 9, SK_ACT_ADD = 10,
       SK_ACT_SUB = 11, SK_ACT_MUL = 12, SK_ACT_DIV = 13 };
enum { SK_LANE_EPILOGUE_MAX = 6 };
typedef struct sk_lane_epilogue {
    const float *scale, *shift;
    int32_t count;
    int32_t op[SK_LANE_EPILOGUE_MAX];
    float p0[SK_LANE_EPILOGUE_MAX], p1[SK_LANE_EPILOGUE_MAX];
    const float *slopes[SK_LANE_EPILOGUE_MAX];
} sk_lane_epilogue;

int32_t sk_depthwise_lanes_usable(int32_t level, const float *w, ptrdiff_t channels, ptrdiff_t taps,
                                  const float *bias);
ptrdiff_t sk_depthwise_lanes_scratch(ptrdiff_t ow, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw,
                                     ptrdiff_t dh, ptrdiff_t dw, ptrdiff_t rows);
int32_t sk_depthwise_lanes(int32_t level, const float *x, ptrdiff_t xstride, ptrdiff_t channels, ptrdiff_t ih,
                           ptrdiff_t iw, const float *w, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw,
                           ptrdiff_t ph, ptrdiff_t pw, ptrdiff_t dh, ptrdiff_t dw, const float *bias, float *y,
                           ptrdiff_t ystride, ptrdiff_t oh, ptrdiff_t ow, ptrdiff_t o0, ptrdiff_t o1,
                           const sk_lane_epilogue *epilogue, ptrdiff_t channel0, float *scratch);

/// Direct convolution of one group (AVX-512 only), the filters in the vector lanes: no im2col.
/// Filters w[m][k] as ONNX stores them (k = channels · kh · kw) are first repacked by sk_conv_direct_pack
/// into `packed` (sk_conv_direct_packed_count(m, k) floats: blocks of 16 filters, [block][k][16], zeros
/// past m). `xp` is the input with the conv's padding already in it: `channels` planes of hp × wp, plane c
/// at xp + c · hp · wp. Output element (f, oy, ox), for filters [f0, f1) (f0 a multiple of 16) and output
/// rows [r0, r1), is written at y + f · ystride + oy · ow + ox:
///   total = 0; for each block of B = max(1, 64 / (kh·kw)) channels in order: { acc = 0;
///     for c in the block, i < kh, j < kw in increasing order: acc = fma(w[f][c][i][j], xp[c][oy·sh + i·dh][ox·sw + j·dw], acc);
///     total = (first block) ? acc : total + acc }
/// then total + bias[f] (a rounded add; none when bias is NULL), then `epilogue` (NULL: none) as in
/// sk_depthwise_lanes with channel arrays indexed by channel0 + f (a group's first channel). Each element's bits depend only on its own
/// filter and window. Returns 0, doing nothing, at a level without the kernel or for arguments out of
/// range (a window past the padded input, more than 1024 taps, an unknown activation).
/// Filters per tile for output rows `ow` wide (32, or 64 for rows of ≤ 6): callers splitting the filters
/// between threads give each part a multiple of it.
ptrdiff_t sk_conv_direct_filter_span(ptrdiff_t ow);
ptrdiff_t sk_conv_direct_packed_count(ptrdiff_t m, ptrdiff_t k);
void sk_conv_direct_pack(const float *w, ptrdiff_t m, ptrdiff_t k, float *packed);
/// The same convolution when it is 1 × 1, stride 1 and unpadded, with the pixels in the lanes instead (8
/// filters × 48 pixels per tile, no transposes: faster for few input channels): x holds `channels` planes
/// of `pixels` floats, output (f, p) for filters [f0, f1) (f0 a multiple of 8) and pixels [p0, p1) goes to
/// y + f · ystride + p. Each element is computed exactly as sk_conv_direct computes it (the same bits).
int32_t sk_conv_pointwise(int32_t level, const float *x, ptrdiff_t channels, ptrdiff_t pixels, const float *packed,
                          ptrdiff_t m, const float *bias, float *y, ptrdiff_t ystride, ptrdiff_t f0, ptrdiff_t f1,
                          ptrdiff_t p0, ptrdiff_t p1, const sk_lane_epilogue *epilogue, ptrdiff_t channel0);
int32_t sk_conv_direct(int32_t level, const float *xp, ptrdiff_t channels, ptrdiff_t hp, ptrdiff_t wp,
                       const float *packed, ptrdiff_t m, ptrdiff_t kh, ptrdiff_t kw, ptrdiff_t sh, ptrdiff_t sw,
                       ptrdiff_t dh, ptrdiff_t dw, const float *bias, float *y, ptrdiff_t ystride, ptrdiff_t oh,
                       ptrdiff_t ow, ptrdiff_t f0, ptrdiff_t f1, ptrdiff_t r0, ptrdiff_t r1,
                       const sk_lane_epilogue *epilogue, ptrdiff_t channel0);

/// Unary functions over `n` floats, `y` may equal `x` (no other overlap; in place runs as fast). Accuracy (tested against double-precision libm
/// over a dense sweep of the float range): exp ≤ 2 ulp (0 for x < −103.98, +inf above 88.73), tanh and
/// sigmoid ≤ 3 ulp; NaN stays NaN, ±inf and ±0 map as the functions do.
void sk_exp(int32_t level, const float *x, float *y, ptrdiff_t n);
/// Softmax (log_softmax ≠ 0: LogSoftmax) of one contiguous row of len floats into y (not overlapping x):
/// m = the largest non-NaN element (0 when not finite), e = exp(x − m) by the interpreter's own exp, the
/// sum in eight interleaved partial sums ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) then the tail,
/// then e / sum or (x − m) − log(sum). The same bits on every level.
void sk_softmax_row(int32_t level, const float *x, float *y, ptrdiff_t len, int32_t log_softmax);
/// The same over the middle axis of a [len, inner] block for its first `count` inner positions (each its
/// own softmax, summed in row order); m and s: count floats of scratch. The same bits on every level.
/// Resize's passes (Resize+Planes.swift): y[i] = w0·a[i] + w1·b[i], and y[o] = w[2o]·x[idx[2o]] +
/// w[2o + 1]·x[idx[2o + 1]] (every index valid in x); products rounded, then the sum.
void sk_resize_blend(int32_t level, const float *a, const float *b, float w0, float w1, float *y, ptrdiff_t n);
void sk_resize_pairs(int32_t level, const float *x, const ptrdiff_t *idx, const float *w, float *y, ptrdiff_t n);
/// y (cols × rows) = x (rows × cols) transposed; fast when rows or cols is 2, 3 or 4 (NHWC ↔ NCHW of images).
void sk_transpose_narrow(int32_t level, const float *x, float *y, ptrdiff_t rows, ptrdiff_t cols);
void sk_softmax_columns(int32_t level, const float *x, float *y, ptrdiff_t len, ptrdiff_t inner, ptrdiff_t count,
                        int32_t log_softmax, float *m, float *s);
void sk_tanh(int32_t level, const float *x, float *y, ptrdiff_t n);
void sk_sigmoid(int32_t level, const float *x, float *y, ptrdiff_t n);
/// x · sigmoid(alpha · x).
void sk_swish(int32_t level, const float *x, float *y, ptrdiff_t n, float alpha);
/// x · max(0, min(1, x · (1/6) + 0.5)): a rounded multiply and add, so every level gives the same bits.
void sk_hardswish(int32_t level, const float *x, float *y, ptrdiff_t n);
/// max(0, min(1, alpha · x + beta)) (NaN gives 1 as Swift's min / max do): same bits on every level.
void sk_hardsigmoid(int32_t level, const float *x, float *y, ptrdiff_t n, float alpha, float beta);

/// Elementwise arithmetic of the interpreter's chains, each element exactly Swift's (and C's) float
/// operation, so every level gives the same bits. `a` / `b` NULL: that operand is the scalar `sa` / `sb`.
/// y may equal a or b (no other overlap).
enum { SK_ADD = 0, SK_SUB = 1, SK_MUL = 2, SK_DIV = 3, SK_MAX = 4, SK_MIN = 5 };
/// max / min: a when a is NaN or a ≥ b (a ≤ b), else b — the interpreter's Max / Min.
void sk_binary(int32_t level, int32_t op, const float *a, float sa, const float *b, float sb, float *y, ptrdiff_t n);
enum { SK_RELU = 0, SK_NEG = 1, SK_ABS = 2, SK_RECIPROCAL = 4, SK_CLIP = 5, SK_LEAKY_RELU = 6, SK_PRELU = 7 };
/// relu: x > 0 ? x : (NaN stays, else 0); clip: min(max(x, p0), p1) with x < p0 → p0 then > p1 → p1;
/// leaky relu: x ≥ 0 ? x : p0 · x; prelu: x < 0 ? p0 · x : x. y may equal x.
void sk_unary_simple(int32_t level, int32_t op, const float *x, float *y, ptrdiff_t n, float p0, float p1);

/// A Conv epilogue's first pass over n outputs of one channel, in place: v = y[i]; with SK_EPILOGUE_BIAS
/// v = v + bias; with SK_EPILOGUE_AFFINE v = v · scale + shift; with a residual v = v + residual[i]; with
/// SK_EPILOGUE_RELU (never with a residual) relu(v) as sk_unary_simple's. Each step rounded: every level
/// gives the separate kernels' bits.
enum { SK_EPILOGUE_BIAS = 1, SK_EPILOGUE_AFFINE = 2, SK_EPILOGUE_RELU = 4 };
void sk_conv_epilogue(int32_t level, float *y, ptrdiff_t n, float bias, float scale, float shift, int32_t flags,
                      const float *residual);

/// One step of a Winograd transform over n elements: out[k][t] = sum over i of mat[k·nin + i] · in[i][t]
/// for k < nout, t < n. Terms with a zero coefficient are skipped; the others are added in order of i, each
/// a rounded multiply then a rounded add (so every level gives the same bits). No out row may overlap an in row.
void sk_wino_combine(int32_t level, const float *mat, ptrdiff_t nout, ptrdiff_t nin, const float *const *in,
                     float *const *out, ptrdiff_t n);

/// A row split by phase for a Winograd transform along it: ph[p·stride + q] = x[start + q·m + p] for q < count
/// and p < m, zero where start + q·m + p is outside 0 ..< width (a copy: the same bits on every level).
void sk_wino_phases(int32_t level, const float *x, ptrdiff_t width, ptrdiff_t start, ptrdiff_t m, ptrdiff_t count,
                    float *ph, ptrdiff_t stride);

/// Conversions for Cast: int64 → float (round to nearest), int32 → float, float → int64 truncated toward
/// zero (NaN → 0, saturating at the int64 range).
void sk_i64_to_f32(const int64_t *x, float *y, ptrdiff_t n);
void sk_f32_to_i64(const float *x, int64_t *y, ptrdiff_t n);

#ifdef __cplusplus
}
#endif
#endif
