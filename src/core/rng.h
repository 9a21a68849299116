/* rng.h: counter-based random numbers: every value is a pure function of (seed, counter), so
 * results do not depend on call order, thread count or rank.  The mixer is the SplitMix64
 * finalizer (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).
 * Not cryptographic. */
#ifndef RZ_CORE_RNG_H
#define RZ_CORE_RNG_H

#include <stdint.h>

/* A 64-bit bijective mix of x. */
static inline uint64_t rz_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* 64 random bits for (seed, counter). */
static inline uint64_t rz_rand64(uint64_t seed, uint64_t counter)
{
    return rz_mix64(rz_mix64(seed) ^ counter);
}

/* Uniform double in (0, 1) for (seed, counter): 53 random bits, never 0 or 1. */
static inline double rz_rand_open01(uint64_t seed, uint64_t counter)
{
    return ((double)(rz_rand64(seed, counter) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal for (seed, counter) by Box-Muller on two independent uniforms. */
double rz_rand_normal(uint64_t seed, uint64_t counter);

#endif
