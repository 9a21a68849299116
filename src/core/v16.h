/* v16.h: vectors of the native width, grouped into sixteen logical lanes, for the files that are
 * compiled once per vector level (isa.h: kern_rows.c, optim_rows.c) and only for them.
 *
 * `vf` is one register of the level: 16 floats in a zmm (x86-64-v4), 8 in a ymm (x86-64-v3), 4
 * in an xmm (baseline); VW is its width and NP = 16 / VW.  Elementwise code is written once on
 * vf with GCC's vector operators, which compile to one instruction per operation at every
 * level.  (A 64-byte vector type on AVX2 did not: GCC 12 lowered its compares and selects lane
 * by lane, through scalar vcomiss and cmov.)
 *
 * Row sums and maxima must add in the same order at every level: they run in sixteen logical
 * lanes (element j of a row goes to lane j mod 16), kept as NP accumulators of VW lanes each
 * (V16_PIECES hands each piece its accumulator index q, a constant), and fold the lanes by one
 * fixed tree (v16_fold_sum).  So every level gives the same bits: lanes never mix otherwise,
 * and the files are built with -ffp-contract=off.
 *
 * Every helper is static and forced inline: one left out of line would pass vectors across the
 * ABI, whose registers differ per level. */
#ifndef RZ_CORE_V16_H
#define RZ_CORE_V16_H

#include <stdint.h>
#include <string.h>

#include <immintrin.h>

#pragma GCC diagnostic ignored "-Wpsabi" /* no vector ever crosses a call: all inlined */

#if defined(__AVX512F__)
#define VW 16
#elif defined(__AVX2__)
#define VW 8
#else
#define VW 4
#endif
#define V16 16
#define NP (V16 / VW)
#define V16_INLINE static inline __attribute__((always_inline))

typedef float vf __attribute__((vector_size(VW * 4)));
typedef int32_t vi __attribute__((vector_size(VW * 4)));
typedef uint32_t vu __attribute__((vector_size(VW * 4)));
typedef double vd __attribute__((vector_size(VW * 4))); /* VW / 2 doubles */

V16_INLINE vf vf_splat(float f)
{
    return (vf){0} + f;
}

/* p[0, k) into the first k lanes, 0 in the rest; k = VW (a constant once inlined) is one load */
V16_INLINE vf vf_loadn(const float *p, int64_t k)
{
    vf v = {0};
    memcpy(&v, p, (size_t)k * sizeof(float));
    return v;
}

V16_INLINE void vf_storen(float *p, vf v, int64_t k)
{
    memcpy(p, &v, (size_t)k * sizeof(float));
}

/* the lanes j0 + [0, VW) that are < len: all ones, else zero (rows are far below 2^31) */
V16_INLINE vi vf_below(int64_t j0, int64_t len)
{
#if VW == 16
    const vi iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
#elif VW == 8
    const vi iota = {0, 1, 2, 3, 4, 5, 6, 7};
#else
    const vi iota = {0, 1, 2, 3};
#endif
    return iota + (int32_t)j0 < (vi){0} + (int32_t)len;
}

/* where `mask` a, else b */
V16_INLINE vf vf_select(vi mask, vf a, vf b)
{
    return (vf)(((vi)a & mask) | ((vi)b & ~mask));
}

/* lane-wise b > a ? b : a (a NaN in b is skipped, as by the scalar form) */
V16_INLINE vf vf_max(vf a, vf b)
{
    return vf_select(b > a, b, a);
}

V16_INLINE vf vf_abs(vf x)
{
    return (vf)((vi)x & 0x7fffffff);
}

/* |mag| with the sign of sgn (copysignf) */
V16_INLINE vf vf_copysign(vf mag, vf sgn)
{
    return (vf)(((vi)mag & 0x7fffffff) | ((vi)sgn & (int32_t)0x80000000u));
}

/* Correctly rounded square root (IEEE): the same bits as sqrtf at every level. */
V16_INLINE vf vf_sqrt(vf x)
{
#if VW == 16
    return (vf)_mm512_sqrt_ps((__m512)x);
#elif VW == 8
    return (vf)_mm256_sqrt_ps((__m256)x);
#else
    return (vf)_mm_sqrt_ps((__m128)x);
#endif
}

/* The low 16 bits of each lane (values <= 0xffff), stored as k uint16_t. */
V16_INLINE void vu_store16(uint16_t *p, vu v, int64_t k)
{
#if VW == 16
    __m256i h = _mm512_cvtepi32_epi16((__m512i)v);
#elif VW == 8
    __m128i h = _mm_packus_epi32(_mm256_castsi256_si128((__m256i)v),
                                 _mm256_extracti128_si256((__m256i)v, 1));
#else /* SSE2 packs signed: shift the range, pack, shift back */
    const __m128i bias = _mm_set1_epi32(0x8000);
    __m128i s = _mm_sub_epi32((__m128i)v, bias);
    __m128i h = _mm_xor_si128(_mm_packs_epi32(s, s), _mm_set1_epi16((short)0x8000));
#endif
    memcpy(p, &h, (size_t)k * sizeof *p);
}

/* VW / 2 floats from p, as doubles: one vd */
V16_INLINE vd vd_load_floats(const float *p)
{
#if VW == 16
    __m256 f;
    memcpy(&f, p, sizeof f);
    return (vd)_mm512_cvtps_pd(f);
#elif VW == 8
    __m128 f;
    memcpy(&f, p, sizeof f);
    return (vd)_mm256_cvtps_pd(f);
#else
    __m128 f = _mm_setzero_ps();
    memcpy(&f, p, 2 * sizeof(float));
    return (vd)_mm_cvtps_pd(f);
#endif
}

/* The sixteen logical lanes' sum and max, folded by one fixed tree: lane i gets lane i + w for
 * w = 8, 4, 2, 1.  The same order at every level. */
V16_INLINE float v16_fold_sum(const vf acc[NP])
{
    float a[V16];
    memcpy(a, acc, sizeof a);
    for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; i++)
            a[i] = a[i] + a[i + w];
    return a[0];
}

V16_INLINE float v16_fold_max(const vf acc[NP])
{
    float a[V16];
    memcpy(a, acc, sizeof a);
    for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; i++)
            a[i] = a[i + w] > a[i] ? a[i + w] : a[i];
    return a[0];
}

/* Run `body` for each native piece [j, j + k) of [0, n), in order: k = VW except in the last
 * piece; q = (j / VW) mod NP is the piece's accumulator of the sixteen logical lanes, a constant
 * in every copy of body (the loops over q are unrolled), so accumulators stay in registers. */
#define V16_PIECES(n, body)                                                                       \
    do {                                                                                          \
        const int64_t n_ = (n);                                                                   \
        int64_t j0_ = 0;                                                                          \
        for (; j0_ + V16 <= n_; j0_ += V16) {                                                     \
            _Pragma("GCC unroll 4")                                                               \
            for (int q = 0; q < NP; q++) {                                                        \
                const int64_t j = j0_ + q * VW, k = VW;                                           \
                body;                                                                             \
            }                                                                                     \
        }                                                                                         \
        _Pragma("GCC unroll 4")                                                                   \
        for (int q = 0; q < NP; q++) {                                                            \
            const int64_t j = j0_ + q * VW;                                                       \
            if (j < n_) {                                                                         \
                const int64_t k = n_ - j < VW ? n_ - j : VW;                                      \
                body;                                                                             \
            }                                                                                     \
        }                                                                                         \
    } while (0)

#endif
