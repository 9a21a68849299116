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
 *   tokens  a token file of little-endian ids, uint16 or uint32: with a header
 *           (record/tokfile.h, written by ryzen-data) the width and vocabulary come from it, and
 *           a vocabulary other than V is refused before training (RZ_ECONFIG naming both); a
 *           headerless file needs data.token_dtype uint16 or uint32 (auto is refused).  Or a
 *           data manifest (record/manifest.h): its shards concatenated in order, each checked
 *           against the manifest (present, size, header; the full SHA-256 is data_verify's);
 *           a window may straddle two shards, so the shards sample exactly as one file of
 *           their concatenation.  Ids >= V and a size that is not a whole number of ids are
 *           errors naming the file, the offset and the value
 *
 * text and tokens files are memory-mapped read-only (data/file.c): a file of any size costs only
 * the pages samples touch.
 *
 * Validation: a held-out split, sampled by its own index j = 0, 1, ... (data_val_sample):
 *   val_fraction f   text/tokens: the last floor(f * n) tokens of the file (of the shards'
 *                    concatenation, for a manifest); training windows
 *                    stay before them and validation windows inside them, so no token is in both;
 *                    random/markov: any f > 0 holds out a sample stream of its own (the index
 *                    space is unbounded, so there is no fraction to cut: the two streams never
 *                    share a draw)
 *   val_path         text/tokens: validation windows come from that file or manifest (same
 *                    checks as data.path, and the same tokenizer when both record one)
 *
 * Ownership: data_create allocates; data_destroy frees (accepts NULL and half-built objects). */
#ifndef RZ_DATA_DATA_H
#define RZ_DATA_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

enum data_kind { DATA_RANDOM, DATA_MARKOV, DATA_TEXT, DATA_TOKENS };

struct data_opts {
    enum data_kind kind;
    int64_t vocab_size;       /* V */
    int64_t seq_len;          /* T: a sample is T+1 tokens (inputs = first T, targets = last T) */
    uint64_t seed;
    const char *path;         /* text and tokens */
    unsigned token_bytes;     /* tokens: 2 (uint16) or 4 (uint32); 0 (auto): the header's */
    double val_fraction;      /* held-out share, [0, 1); 0 = none */
    const char *val_path;     /* validation file (text/tokens); NULL or "" = none */
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

/* Whether a validation split exists (val_fraction > 0 or val_path). */
bool data_has_val(const struct data *d);

/* Write validation sample `index` (T+1 ids) into tokens[0..T]; only when data_has_val. */
void data_val_sample(const struct data *d, uint64_t index, int32_t *tokens);

/* Entropy floor in nats/token: exact entropy rate for markov (stationary distribution),
 * ln(V) for random; a negative value when unknown (text, tokens). */
double data_entropy_floor(const struct data *d);

/* tokens: the tokenizer's SHA-256 in hex, from the token file's header or the manifest; "" for
 * a headerless file or another kind. */
const char *data_tokenizer_sha256(const struct data *d);

/* text and tokens: the unigram entropy of the training split in nats/token, from its token
 * counts: the loss of a model that learned only how often each token occurs, and so the
 * reference line a text model must end below.  Not a floor.  Negative for random and markov. */
double data_unigram_entropy(const struct data *d);

/* tokens from a manifest (record/manifest.h): check every shard against it (present, same
 * size, same SHA-256): the preflight's full check; RZ_EDATA names the first shard that
 * differs.  RZ_OK at once for other kinds. */
enum rz_status data_verify(const struct data *d, struct rz_err *err);

/* One-line description for the start-up banner. */
const char *data_describe(const struct data *d);

#endif
