// Winograd transforms' inner loop, written once and compiled per level by winograd.c (which defines SK_ATTR
// and SK_NAME(x)). Each term is a rounded multiply then a rounded add (FP_CONTRACT is off there), so every
// level gives the same bits; the loops over t vectorise for the level's width.

static SK_ATTR void SK_NAME(wino_combine)(const float *mat, ptrdiff_t nout, ptrdiff_t nin, const float *const *in,
                                          float *const *out, ptrdiff_t n) {
    // Blocks of 256 elements keep each output row in L1 while its terms accumulate.
    for (ptrdiff_t t0 = 0; t0 < n; t0 += 256) {
        ptrdiff_t len = n - t0 < 256 ? n - t0 : 256;
        for (ptrdiff_t k = 0; k < nout; k++) {
            float *restrict y = out[k] + t0;
            const float *row = mat + k * nin;
            ptrdiff_t first = 0;
            while (first < nin && row[first] == 0.0f) first++;
            if (first == nin) {
                for (ptrdiff_t t = 0; t < len; t++) y[t] = 0.0f;
                continue;
            }
            const float c0 = row[first];
            const float *restrict x0 = in[first] + t0;
            if (c0 == 1.0f) {
                for (ptrdiff_t t = 0; t < len; t++) y[t] = x0[t];
            } else {
                for (ptrdiff_t t = 0; t < len; t++) y[t] = c0 * x0[t];
            }
            for (ptrdiff_t i = first + 1; i < nin; i++) {
                const float c = row[i];
                if (c == 0.0f) continue;
                const float *restrict x = in[i] + t0;
                if (c == 1.0f) {
                    for (ptrdiff_t t = 0; t < len; t++) y[t] = y[t] + x[t];
                } else if (c == -1.0f) {
                    for (ptrdiff_t t = 0; t < len; t++) y[t] = y[t] - x[t];
                } else {
                    for (ptrdiff_t t = 0; t < len; t++) y[t] = y[t] + c * x[t];
                }
            }
        }
    }
}

// Phases of one input row for a Winograd transform along it: ph[p·stride + q] = x[start + q·m + p] for
// q < count, p < m, zero where that position is outside 0 ..< width.
static SK_ATTR void SK_NAME(wino_phases)(const float *x, ptrdiff_t width, ptrdiff_t start, ptrdiff_t m,
                                         ptrdiff_t count, float *ph, ptrdiff_t stride) {
    // q in [qa, qb): every p inside the row.
    ptrdiff_t qa = start >= 0 ? 0 : (-start + m - 1) / m;
    ptrdiff_t qb = width - start - m < 0 ? 0 : (width - start - m) / m + 1;
    if (qa > count) qa = count;
    if (qb > count) qb = count;
    if (qb < qa) qb = qa;
    for (ptrdiff_t p = 0; p < m; p++) {
        float *restrict out = ph + p * stride;
        for (ptrdiff_t q = 0; q < qa; q++) {
            ptrdiff_t i = start + q * m + p;
            out[q] = i >= 0 && i < width ? x[i] : 0.0f;
        }
        const float *restrict in = x + start + p;
        if (m == 1) {
            for (ptrdiff_t q = qa; q < qb; q++) out[q] = in[q];
        } else {
            for (ptrdiff_t q = qa; q < qb; q++) out[q] = in[q * m];
        }
        for (ptrdiff_t q = qb; q < count; q++) {
            ptrdiff_t i = start + q * m + p;
            out[q] = i >= 0 && i < width ? x[i] : 0.0f;
        }
    }
}
