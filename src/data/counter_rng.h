/* counter_rng.h: the counter-based generator of src/data/: every random number in the module is a
 * pure function of (seed, stream, index, position), computed by chaining a 64-bit mixing bijection
 * (the splitmix64 finalizer: xor-shift, multiply, xor-shift, multiply, xor-shift).  There is no
 * generator state to save, share or advance, so samples can be produced in any order by any
 * thread or rank.  Header-only (static inline), private to the module.
 * Deliberately not here: what is drawn with it (data.c's samples, markov.c's chain) and the
 * model's initialisation generator (core/rng.h). */
#ifndef RZ_DATA_COUNTER_RNG_H
#define RZ_DATA_COUNTER_RNG_H

#include <stdint.h>

/* Weyl increment (2^64 / golden ratio), odd, so `k + DATA_GOLDEN * n` visits distinct inputs. */
#define DATA_GOLDEN UINT64_C(0x9e3779b97f4a7c15)

/* Independent streams of the generator, so e.g. the chain's structure and its samples never
 * reuse the same numbers. */
enum data_stream {
    DATA_STREAM_SAMPLE = 1, /* per-sample draws: tokens, text/tokens offsets */
    DATA_STREAM_SUCC,       /* markov: which states follow state s */
    DATA_STREAM_WEIGHT,     /* markov: the unnormalised weights of those successors */
    DATA_STREAM_VAL,        /* per-sample draws of the validation split */
};

/* A bijection of 64-bit words whose output bits each depend on all input bits. */
static inline uint64_t data_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The key of one counter stream: (seed, stream, index) -> 64 bits. */
static inline uint64_t data_key(uint64_t seed, enum data_stream stream, uint64_t index)
{
    uint64_t k = data_mix64(seed + DATA_GOLDEN * (uint64_t)stream);
    return data_mix64(k ^ data_mix64(index + DATA_GOLDEN));
}

/* Draw number `pos` of the stream with key `key`. */
static inline uint64_t data_draw(uint64_t key, uint64_t pos)
{
    return data_mix64(key + DATA_GOLDEN * (pos + 1));
}

/* Uniform double in [0, 1) from the top 53 bits of h. */
static inline double data_unit(uint64_t h)
{
    return (double)(h >> 11) * 0x1.0p-53;
}

/* Unbiased uniform integer in [0, n), n >= 1, from h (redrawn deterministically from h when a draw
 * is rejected).  n < 2^32: Lemire's multiply-shift on the top 32 bits with rejection (Lemire 2019,
 * "Fast random integer generation in an interval"); larger n: modulo with rejection of the
 * 2^64 mod n lowest words. */
static inline uint64_t data_below(uint64_t h, uint64_t n)
{
    if (n <= UINT32_MAX) {
        uint64_t m = (h >> 32) * n;
        if ((uint32_t)m < n) {
            uint32_t t = (uint32_t)(0u - (uint32_t)n) % (uint32_t)n;
            while ((uint32_t)m < t) {
                h = data_mix64(h + DATA_GOLDEN);
                m = (h >> 32) * n;
            }
        }
        return m >> 32;
    }
    uint64_t t = (0 - n) % n;
    while (h < t)
        h = data_mix64(h + DATA_GOLDEN);
    return h % n;
}

#endif
