// Run-time choice of the instruction-set level (see CKernels.h).
#include "CKernels.h"
#include "internal.h"
#include <stdlib.h>
#include <string.h>

int32_t sk_level_best(void) {
#if SK_X86
    static int32_t best = -1;
    if (best < 0) {
        __builtin_cpu_init();
        int32_t level = SK_LEVEL_PORTABLE;
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) level = SK_LEVEL_AVX2;
        if (level == SK_LEVEL_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
            level = SK_LEVEL_AVX512;
        best = level;  // idempotent: racing first calls store the same value
    }
    return best;
#else
    return SK_LEVEL_PORTABLE;
#endif
}

int32_t sk_level_active(void) {
    static int32_t active = -1;
    if (active < 0) {
        int32_t level = sk_level_best();
        const char *env = getenv("SHRINKWRAP_SIMD");
        if (env != NULL) {
            if (strcmp(env, "portable") == 0) level = SK_LEVEL_PORTABLE;
            else if (strcmp(env, "avx2") == 0 && level > SK_LEVEL_AVX2) level = SK_LEVEL_AVX2;
        }
        active = level;
    }
    return active;
}

int32_t sk_level_clamp(int32_t level) {
    if (level < 0) return sk_level_active();
    int32_t best = sk_level_best();
    return level > best ? best : level;
}

const char *sk_level_name(int32_t level) {
    switch (sk_level_clamp(level)) {
    case SK_LEVEL_AVX512: return "avx512";
    case SK_LEVEL_AVX2: return "avx2";
    default: return "portable";
    }
}

void sk_i64_to_f32(const int64_t *x, float *y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) y[i] = (float)x[i];
}

void sk_f32_to_i64(const float *x, int64_t *y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) {
        float v = x[i];
        int64_t r;
        if (v != v) r = 0;
        else if (v >= 9.223372e18f) r = INT64_MAX;
        else if (v <= -9.223372e18f) r = INT64_MIN;
        else r = (int64_t)v;
        y[i] = r;
    }
}
