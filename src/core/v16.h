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

/* p[0, k) into the first k lanes, 0 in the rest, and back: k = VW (a constant once inlined) is
 * one plain load or store; a shorter k (the last piece of a row) is masked, never a call, which
 * would make GCC keep the loops' accumulators in memory (every vector register is clobbered by
 * a call): seen as a store and reload per piece in ln_backward_rows. */
V16_INLINE vf vf_loadn(const float *p, int64_t k)
{
    vf v = {0};
    if (k == VW) {
        memcpy(&v, p, sizeof v);
        return v;
    }
#if VW == 16
    return (vf)_mm512_maskz_loadu_ps((__mmask16)((1u << k) - 1u), p);
#elif VW == 8
    const vi iota = {0, 1, 2, 3, 4, 5, 6, 7};
    return (vf)_mm256_maskload_ps(p, (__m256i)(iota < (vi){0} + (int32_t)k));
#else
    _Pragma("GCC unroll 4")
    for (int i = 0; i < VW; i++)
        if (i < k)
            v[i] = p[i];
    return v;
#endif
}

V16_INLINE void vf_storen(float *p, vf v, int64_t k)
{
    if (k == VW) {
        memcpy(p, &v, sizeof v);
        return;
    }
#if VW == 16
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << k) - 1u), (__m512)v);
#elif VW == 8
    const vi iota = {0, 1, 2, 3, 4, 5, 6, 7};
    _mm256_maskstore_ps(p, (__m256i)(iota < (vi){0} + (int32_t)k), (__m256)v);
#else
    _Pragma("GCC unroll 4")
    for (int i = 0; i < VW; i++)
        if (i < k)
            p[i] = v[i];
#endif
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

/* The low 16 bits of each lane (values <= 0xffff), stored as k uint16_t (masked, as
 * vf_storen). */
V16_INLINE void vu_store16(uint16_t *p, vu v, int64_t k)
{
#if VW == 16
    __m256i h = _mm512_cvtepi32_epi16((__m512i)v);
    if (k < VW) {
        _mm256_mask_storeu_epi16(p, (__mmask16)((1u << k) - 1u), h);
        return;
    }
#elif VW == 8
    __m128i h = _mm_packus_epi32(_mm256_castsi256_si128((__m256i)v),
                                 _mm256_extracti128_si256((__m256i)v, 1));
#else /* SSE2 packs signed: shift the range, pack, shift back */
    const __m128i bias = _mm_set1_epi32(0x8000);
    __m128i s = _mm_sub_epi32((__m128i)v, bias);
    __m128i h = _mm_xor_si128(_mm_packs_epi32(s, s), _mm_set1_epi16((short)0x8000));
#endif
    if (k == VW) {
        memcpy(p, &h, VW * sizeof *p);
        return;
    }
    uint16_t lane[sizeof h / sizeof *p];
    memcpy(lane, &h, sizeof lane);
    _Pragma("GCC unroll 16")
    for (int i = 0; i < VW; i++)
        if (i < k)
            p[i] = lane[i];
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
 * w = 8, 4, 2, 1, so lane 0 ends with the result, in the same order at every level.  Done in
 * registers: the stages that cross native vectors combine whole accumulators, the rest
 * shuffle within one.  (A fold through a float[16] copy made GCC keep the accumulators in
 * memory, a store and reload per piece.) */
#if VW == 16
#define V16_FOLD_LEVEL(acc, op)                                                                   \
    vf v_ = acc[0];                                                                               \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5,   \
                                        6, 7));                                                   \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, \
                                        11));                                                     \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, \
                                        13));                                                     \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, \
                                        14));                                                     \
    return v_[0]
#elif VW == 8
#define V16_FOLD_LEVEL(acc, op)                                                                   \
    vf v_ = op(acc[0], acc[1]);                                                                   \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 4, 5, 6, 7, 0, 1, 2, 3));                         \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 2, 3, 0, 1, 6, 7, 4, 5));                         \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 1, 0, 3, 2, 5, 4, 7, 6));                         \
    return v_[0]
#else
#define V16_FOLD_LEVEL(acc, op)                                                                   \
    vf v_ = op(op(acc[0], acc[2]), op(acc[1], acc[3]));                                           \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 2, 3, 0, 1));                                     \
    v_ = op(v_, __builtin_shufflevector(v_, v_, 1, 0, 3, 2));                                     \
    return v_[0]
#endif

V16_INLINE vf vf_add(vf a, vf b)
{
    return a + b;
}

V16_INLINE float v16_fold_sum(const vf acc[NP])
{
    V16_FOLD_LEVEL(acc, vf_add);
}

V16_INLINE float v16_fold_max(const vf acc[NP])
{
    V16_FOLD_LEVEL(acc, vf_max);
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
