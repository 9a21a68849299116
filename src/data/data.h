/* data.h: training data sources.  A sample is a pure function of (kind, seed, global sample index):
 * no hidden cursor, so any rank can produce any sample, sharding is by global index, and resume
 * is exact.
 *
 *   random  uniform tokens in [0, V) from a counter-based generator keyed by (seed, index)
 *   markov  a random sparse first-order Markov chain over the vocabulary (each state has
 *           `branching` successors with random probabilities); its entropy rate is known exactly
 *           and is the best achievable loss (the "entropy floor")
 *   text    the bytes of a file as tokens (V must be >= 256); sample i starts at a pseudo-random
 *           offset derived from (seed, i)
 *   tokens  a flat file of little-endian token ids, uint16 or (for V > 65536) uint32; ids >= V
 *           and a size that is not a whole number of ids are errors naming the file, the offset
 *           and the value
 *
 * text and tokens files are memory-mapped read-only (data/file.c): a file of any size costs only
 * the pages samples touch.
 *
 * Ownership: data_create allocates; data_destroy frees (accepts NULL and half-built objects). */
#ifndef RZ_DATA_DATA_H
#define RZ_DATA_DATA_H

#include <stdint.h>

#include "core/status.h"

enum data_kind { DATA_RANDOM, DATA_MARKOV, DATA_TEXT, DATA_TOKENS };

struct data_opts {
    enum data_kind kind;
    int64_t vocab_size;       /* V */
    int64_t seq_len;          /* T: a sample is T+1 tokens (inputs = first T, targets = last T) */
    uint64_t seed;
    const char *path;         /* text and tokens */
    unsigned token_bytes;     /* tokens: 2 (uint16) or 4 (uint32); 0: 2 if V <= 65536, else 4 */
    int64_t markov_branching; /* markov only */
};

struct data;

/* Parse "random" | "markov" | "text" | "tokens". */
enum rz_status data_kind_parse(const char *name, enum data_kind *out, struct rz_err *err);

/* token_bytes for a data.token_dtype: "uint16" 2, "uint32" 4, anything else ("auto") 0. */
unsigned data_token_bytes(const char *dtype);

enum rz_status data_create(struct data **out, const struct data_opts *opts, struct rz_err *err);
void data_destroy(struct data *d);

/* Write sample `index` (T+1 token ids) into tokens[0..T]. */
void data_sample(const struct data *d, uint64_t index, int32_t *tokens);

/* Entropy floor in nats/token: exact entropy rate for markov (stationary distribution),
 * ln(V) for random; a negative value when unknown (text, tokens). */
double data_entropy_floor(const struct data *d);

/* One-line description for the start-up banner. */
const char *data_describe(const struct data *d);

#endif
