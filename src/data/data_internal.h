/* data_internal.h: what the files of src/data/ share and the tests may inspect; not for other
 * modules (they use data.h only).
 *
 * The counter-based generator: every random number in this module is a pure function of
 * (seed, stream, index, position), computed by chaining a 64-bit mixing bijection (the splitmix64
 * finalizer: xor-shift, multiply, xor-shift, multiply, xor-shift).  There is no generator state to
 * save, share or advance, so samples can be produced in any order by any thread or rank.
 *
 * Ownership: struct data_markov is created by data_markov_create and freed by data_markov_destroy
 * (accepts NULL and half-built chains). */
#ifndef RZ_DATA_DATA_INTERNAL_H
#define RZ_DATA_DATA_INTERNAL_H

#include <stdint.h>

#include "core/status.h"
#include "data/data.h"

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

/* Index of the first entry of the nondecreasing table cum[0..n) that is > u; cum[n-1] must be 1
 * and u in [0, 1), so the answer exists.  Binary search. */
static inline int32_t data_cum_search(const double *cum, int32_t n, double u)
{
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ---- text and token files (file.c) ---- */

/* A text (1 byte per token) or tokens (little-endian uint16 or uint32) file, mapped read-only. */
struct data_file {
    const unsigned char *map;   /* the whole file (NULL when closed) */
    size_t bytes;               /* file size */
    unsigned width;             /* bytes per token: 1, 2 or 4 */
    uint64_t n_tokens;          /* bytes / width */
};

/* Open, check and map `path`: a whole number of ids, at least T+1 of them, and (width 2 or 4)
 * every id < vocab, checked in one streaming pass.  Messages start with `label` ("tokens file")
 * and name the file; a bad id names its value, token index and byte offset, a partial id at the
 * end its bytes and offset.  *f is zeroed first; data_file_close accepts it in any state. */
enum rz_status data_file_open(struct data_file *f, const char *label, const char *path,
                              unsigned width, int64_t vocab, int64_t seq_len, struct rz_err *err);
void data_file_close(struct data_file *f);

/* tokens[0..count) = the ids at token positions first .. first + count - 1 (in range). */
void data_file_read(const struct data_file *f, uint64_t first, int64_t count, int32_t *tokens);

/* "byte", "uint16" or "uint32". */
const char *data_file_dtype(const struct data_file *f);

/* ---- the markov chain (markov.c) ---- */

struct data_markov;

/* Build the chain for (V, branching, seed); the caller has checked 1 <= branching <= V. */
enum rz_status data_markov_create(struct data_markov **out, int32_t vocab, int32_t branching,
                                  uint64_t seed, struct rz_err *err);
void data_markov_destroy(struct data_markov *m);

/* tokens[0..T]: x_0 ~ pi, x_{t+1} ~ P(.|x_t), draws from the stream with key `key`. */
void data_markov_sample(const struct data_markov *m, uint64_t key, int64_t seq_len,
                        int32_t *tokens);

/* Entropy rate H = sum_s pi_s H(P(.|s)) in nats/token. */
double data_markov_entropy(const struct data_markov *m);

/* For tests: P(to | from) (0 when `to` is not a successor of `from`) and pi_s. */
double data_markov_prob(const struct data_markov *m, int32_t from, int32_t to);
double data_markov_pi(const struct data_markov *m, int32_t s);

/* For tests: the chain of a markov data source, NULL for other kinds (data.c). */
const struct data_markov *data_markov_of(const struct data *d);

#endif
