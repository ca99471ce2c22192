// Shared by the CKernels sources: target attributes and per-level entry points.
#ifndef SHRINKWRAP_CKERNELS_INTERNAL_H
#define SHRINKWRAP_CKERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define SK_X86 1
#define SK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define SK_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#else
#define SK_X86 0
#endif

#endif
