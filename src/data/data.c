/* data.c: the data sources of data.h: option checks, the random kind, the text and tokens file
 * kinds, and dispatch to the markov chain (markov.c).  Sample i is a pure function of
 * (kind, seed, i): its draws come from the counter stream data_key(seed, SAMPLE, i).
 *
 *   random  tokens[t] = uniform in [0, V) from draw t
 *   text    offset = uniform in [0, len - T) from draw 0; tokens = bytes[offset .. offset + T]
 *   tokens  the same over the uint16 or uint32 ids (little-endian on disk, decoded when sampled)
 *           of one token file or of a manifest's shards concatenated (seq.h: a window may
 *           straddle two shards, so shards sample exactly as the file of their concatenation)
 *
 * Files are mapped, not read (file.c).  One streaming pass at creation checks every id and
 * counts the training split's unigrams (data_unigram_entropy).  Deliberately not here:
 * tokenisation (text bytes are the tokens; ryzen-data encodes), sequential epochs or shuffling
 * without replacement (offsets are independent draws), and sharding (callers pick the global
 * indices). */
#include "config.h"

#include "data/data.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "data/data_internal.h"

/* T is bounded so that T + 1 tokens stay comfortably inside int32 indexing and memory. */
#define DATA_MAX_SEQ_LEN (INT64_C(1) << 30)

struct data {
    enum data_kind kind;
    int32_t vocab;              /* V */
    int64_t seq_len;            /* T */
    uint64_t seed;
    struct data_seq seq;        /* text and tokens: the mapped file or a manifest's shards */
    /* Sample windows (T+1 tokens) lie in [train_lo, train_hi) of `seq` and, for validation, in
     * [val_lo, val_hi) of `val` (which is `seq` itself with a val_fraction, val_seq with a
     * val_path).  Synthetic kinds draw validation samples from their own stream instead. */
    uint64_t train_lo, train_hi, val_lo, val_hi;
    const struct data_seq *val;
    struct data_seq val_seq;    /* data.val_path: the validation file or manifest */
    double unigram;             /* data_unigram_entropy; negative when unknown */
    int has_val;
    struct data_markov *markov; /* markov only */
    char *desc;                 /* data_describe */
};

static const char *const data_kind_names[] = {
    [DATA_RANDOM] = "random",
    [DATA_MARKOV] = "markov",
    [DATA_TEXT] = "text",
    [DATA_TOKENS] = "tokens",
};

enum rz_status data_kind_parse(const char *name, enum data_kind *out, struct rz_err *err)
{
    assert(name != NULL && out != NULL);
    for (size_t k = 0; k < RZ_ARRAY_LEN(data_kind_names); k++) {
        if (strcmp(name, data_kind_names[k]) == 0) {
            *out = (enum data_kind)k;
            return RZ_OK;
        }
    }
    return rz_fail(err, RZ_ECONFIG,
                   "data.kind '%s' is not a data source; choose one of: random, markov, text, tokens",
                   name);
}

static enum rz_status data_check_sizes(const struct data_opts *o, struct rz_err *err)
{
    if ((unsigned)o->kind >= RZ_ARRAY_LEN(data_kind_names))
        return rz_fail(err, RZ_ECONFIG, "create data source: unknown data kind %d", (int)o->kind);
    if (o->vocab_size < 1 || o->vocab_size > INT32_MAX)
        return rz_fail(err, RZ_ECONFIG, "create %s data: model.vocab_size %" PRId64
                       " is not in [1, %" PRId32 "]", data_kind_names[o->kind], o->vocab_size,
                       INT32_MAX);
    if (o->seq_len < 1 || o->seq_len > DATA_MAX_SEQ_LEN)
        return rz_fail(err, RZ_ECONFIG, "create %s data: model.seq_len %" PRId64
                       " is not in [1, %" PRId64 "]", data_kind_names[o->kind], o->seq_len,
                       DATA_MAX_SEQ_LEN);
    return RZ_OK;
}

static enum rz_status data_check_kind_opts(const struct data_opts *o, struct rz_err *err)
{
    if (o->kind == DATA_MARKOV && (o->markov_branching < 1 || o->markov_branching > o->vocab_size))
        return rz_fail(err, RZ_ECONFIG, "create markov data: data.markov_branching %" PRId64
                       " is not in [1, model.vocab_size = %" PRId64 "]", o->markov_branching,
                       o->vocab_size);
    if ((o->kind == DATA_TEXT || o->kind == DATA_TOKENS) && (o->path == NULL || o->path[0] == '\0'))
        return rz_fail(err, RZ_ECONFIG, "create %s data: data.path is required for this kind",
                       data_kind_names[o->kind]);
    if (o->kind == DATA_TOKENS && o->token_bytes != 0 && o->token_bytes != 2 && o->token_bytes != 4)
        return rz_fail(err, RZ_ECONFIG, "tokens file '%s': %u bytes per id; ids are uint16 (2) or "
                       "uint32 (4)", o->path, o->token_bytes);
    if (o->kind == DATA_TOKENS && o->token_bytes == 2 && o->vocab_size > 65536)
        return rz_fail(err, RZ_ECONFIG, "tokens file '%s': uint16 ids cannot reach model.vocab_size "
                       "%" PRId64 " (the largest is 65535); use uint32 ids", o->path,
                       o->vocab_size);
    if (!(o->val_fraction >= 0.0 && o->val_fraction < 1.0))
        return rz_fail(err, RZ_ECONFIG, "create %s data: data.val_fraction %g is not in [0, 1)",
                       data_kind_names[o->kind], o->val_fraction);
    bool has_path = o->val_path != NULL && o->val_path[0] != '\0';
    if (has_path && o->val_fraction > 0.0)
        return rz_fail(err, RZ_ECONFIG, "create %s data: data.val_fraction and data.val_path are "
                       "both set; hold out one or the other", data_kind_names[o->kind]);
    if (has_path && o->kind != DATA_TEXT && o->kind != DATA_TOKENS)
        return rz_fail(err, RZ_ECONFIG, "create %s data: data.val_path '%s' needs a file kind "
                       "(text or tokens); %s data holds out a stream with data.val_fraction",
                       data_kind_names[o->kind], o->val_path, data_kind_names[o->kind]);
    if (o->kind == DATA_TEXT && o->vocab_size < 256)
        return rz_fail(err, RZ_ECONFIG, "text file '%s': model.vocab_size %" PRId64 " is < 256; "
                       "byte tokens need a vocabulary of at least 256", o->path, o->vocab_size);
    return RZ_OK;
}

/* printf into a fresh d->desc. */
__attribute__((format(printf, 3, 4)))
static enum rz_status data_set_desc(struct data *d, struct rz_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    d->desc = n < 0 ? NULL : malloc((size_t)n + 1);
    if (d->desc == NULL)
        return rz_fail(err, RZ_ENOMEM, "describe %s data: out of memory", data_kind_names[d->kind]);
    va_start(ap, fmt);
    vsnprintf(d->desc, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return RZ_OK;
}

/* Append printf output to d->desc (which data_set_desc made). */
__attribute__((format(printf, 3, 4)))
static enum rz_status data_append_desc(struct data *d, struct rz_err *err, const char *fmt, ...)
{
    char more[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(more, sizeof more, fmt, ap);
    va_end(ap);
    size_t had = strlen(d->desc), add = strlen(more);
    char *grown = realloc(d->desc, had + add + 1);
    if (grown == NULL)
        return rz_fail(err, RZ_ENOMEM, "describe %s data: out of memory", data_kind_names[d->kind]);
    memcpy(grown + had, more, add + 1);
    d->desc = grown;
    return RZ_OK;
}

unsigned data_token_bytes(const char *dtype)
{
    return strcmp(dtype, "uint16") == 0 ? 2u : strcmp(dtype, "uint32") == 0 ? 4u : 0u;
}

static enum rz_status data_open_text(struct data *d, const char *path, struct rz_err *err)
{
    enum rz_status rc = data_seq_open(&d->seq, "data.path", "text file", path, 1, d->vocab,
                                      d->seq_len, err);
    if (rc != RZ_OK)
        return rc;
    return data_set_desc(d, err, "text file '%s' (%zu bytes)", path, d->seq.files[0].bytes);
}

/* A tokens file or manifest; width 0 (data.token_dtype auto): from the header or manifest. */
static enum rz_status data_open_tokens(struct data *d, const char *path, unsigned width,
                                       struct rz_err *err)
{
    enum rz_status rc = data_seq_open(&d->seq, "data.path", "tokens file", path, width, d->vocab,
                                      d->seq_len, err);
    if (rc != RZ_OK)
        return rc;
    if (d->seq.manifest != NULL)
        return data_set_desc(d, err, "tokens manifest '%s' (%zu shards, %" PRIu64 " %s tokens)",
                             path, d->seq.n, d->seq.n_tokens, data_file_dtype(&d->seq.files[0]));
    return data_set_desc(d, err, "tokens file '%s' (%" PRIu64 " %s tokens)", path,
                         d->seq.n_tokens, data_file_dtype(&d->seq.files[0]));
}

static enum rz_status data_open_markov(struct data *d, int64_t branching, struct rz_err *err)
{
    enum rz_status rc = data_markov_create(&d->markov, d->vocab, (int32_t)branching, d->seed, err);
    if (rc != RZ_OK)
        return rc;
    return data_set_desc(d, err, "markov (V=%" PRId32 ", branching %" PRId64 ", seed %" PRIu64
                         "): entropy floor %.4f nats/token", d->vocab, branching, d->seed,
                         data_markov_entropy(d->markov));
}

static enum rz_status data_open(struct data *d, const struct data_opts *o, struct rz_err *err)
{
    switch (o->kind) {
    case DATA_RANDOM:
        return data_set_desc(d, err, "random (V=%" PRId32 ", seed %" PRIu64 "): entropy floor "
                             "%.4f nats/token", d->vocab, d->seed, log((double)d->vocab));
    case DATA_MARKOV: return data_open_markov(d, o->markov_branching, err);
    case DATA_TEXT: return data_open_text(d, o->path, err);
    case DATA_TOKENS: return data_open_tokens(d, o->path, o->token_bytes, err);
    }
    return rz_fail(err, RZ_ECONFIG, "create data source: unknown data kind %d", (int)o->kind);
}

/* val_fraction of a file: its last tokens are held out; windows never cross the cut. */
static enum rz_status data_split_file(struct data *d, const char *path, double fraction,
                                      struct rz_err *err)
{
    uint64_t n = d->seq.n_tokens, held = (uint64_t)floor(fraction * (double)n);
    uint64_t need = (uint64_t)d->seq_len + 1;
    if (held < need || n - held < need)
        return rz_fail(err, RZ_EDATA, "%s file '%s': data.val_fraction %g of its %" PRIu64
                       " tokens leaves %" PRIu64 " for validation and %" PRIu64 " for training; "
                       "each needs at least %" PRIu64 " (T+1)", data_kind_names[d->kind], path,
                       fraction, n, held, n - held, need);
    d->train_hi = n - held;
    d->val = &d->seq;
    d->val_lo = n - held;
    d->val_hi = n;
    return data_append_desc(d, err, "; validation: its last %" PRIu64 " tokens (%g), held out",
                            held, fraction);
}

static enum rz_status data_open_val_file(struct data *d, const struct data_opts *o,
                                         struct rz_err *err)
{
    const char *label = d->kind == DATA_TEXT ? "validation text file" : "validation tokens file";
    unsigned width = d->kind == DATA_TEXT ? 1u : o->token_bytes;
    enum rz_status rc = data_seq_open(&d->val_seq, "data.val_path", label, o->val_path, width,
                                      d->vocab, d->seq_len, err);
    if (rc != RZ_OK)
        return rc;
    const char *a = d->seq.tokenizer_sha256, *b = d->val_seq.tokenizer_sha256;
    if (a[0] != '\0' && b[0] != '\0' && strcmp(a, b) != 0)
        return rz_fail(err, RZ_ECONFIG, "data.val_path '%s' was encoded with tokenizer %s, "
                       "data.path '%s' with %s: encode both with one tokenizer", o->val_path, b,
                       o->path, a);
    d->val = &d->val_seq;
    d->val_hi = d->val_seq.n_tokens;
    return data_append_desc(d, err, "; validation: file '%s' (%" PRIu64 " tokens)", o->val_path,
                            d->val_seq.n_tokens);
}

/* The held-out split (data.h): none, a fraction of the file, a file, or a stream of its own. */
static enum rz_status data_open_val(struct data *d, const struct data_opts *o, struct rz_err *err)
{
    bool file_kind = d->kind == DATA_TEXT || d->kind == DATA_TOKENS;
    bool has_path = o->val_path != NULL && o->val_path[0] != '\0';
    d->train_hi = d->seq.n_tokens;
    d->has_val = o->val_fraction > 0.0 || has_path;
    if (!d->has_val)
        return RZ_OK;
    if (has_path)
        return data_open_val_file(d, o, err);
    if (file_kind)
        return data_split_file(d, o->path, o->val_fraction, err);
    return data_append_desc(d, err, "; validation: a sample stream of its own, held out");
}

/* Unigram counts above this vocabulary (a 512 MiB table) are not kept: the entropy is then
 * unknown.  Tokenizers stop far below it (GPT-2: 50,257). */
#define DATA_UNIGRAM_MAX_VOCAB (INT64_C(1) << 26)

/* H = -sum_v p_v ln p_v, p_v = counts[v] / n: nats per token (summed in id order, so the value
 * is the same bits on every rank and run). */
static double data_entropy_of(const uint64_t *counts, int64_t vocab, uint64_t n)
{
    double h = 0.0;
    for (int64_t v = 0; v < vocab; v++) {
        if (counts[v] == 0)
            continue;
        double p = (double)counts[v] / (double)n;
        h -= p * log(p);
    }
    return h;
}

/* The one streaming pass over the files (ids < V, file.c) that also counts the training split's
 * unigrams [train_lo, train_hi) = [0, train_hi); the validation file is checked, not counted. */
static enum rz_status data_scan(struct data *d, struct rz_err *err)
{
    const char *label = d->kind == DATA_TEXT ? "text file" : "tokens file";
    uint64_t *counts = NULL;
    if (d->vocab <= DATA_UNIGRAM_MAX_VOCAB)
        counts = calloc((size_t)d->vocab, sizeof *counts);
    if (counts == NULL && d->vocab <= DATA_UNIGRAM_MAX_VOCAB)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory for %" PRId32 " unigram counts", label,
                       d->vocab);
    enum rz_status rc = data_seq_scan(&d->seq, label, d->vocab, counts, d->train_hi, err);
    if (rc == RZ_OK && d->val == &d->val_seq)
        rc = data_seq_scan(&d->val_seq, d->kind == DATA_TEXT ? "validation text file"
                           : "validation tokens file", d->vocab, NULL, 0, err);
    if (rc == RZ_OK && counts != NULL)
        d->unigram = data_entropy_of(counts, d->vocab, d->train_hi - d->train_lo);
    free(counts);
    return rc;
}

enum rz_status data_create(struct data **out, const struct data_opts *opts, struct rz_err *err)
{
    assert(out != NULL && opts != NULL);
    *out = NULL;
    enum rz_status rc = data_check_sizes(opts, err);
    if (rc == RZ_OK)
        rc = data_check_kind_opts(opts, err);
    if (rc != RZ_OK)
        return rc;
    struct data *d = calloc(1, sizeof *d);
    if (d == NULL)
        return rz_fail(err, RZ_ENOMEM, "create %s data: out of memory", data_kind_names[opts->kind]);
    d->kind = opts->kind;
    d->vocab = (int32_t)opts->vocab_size;
    d->seq_len = opts->seq_len;
    d->seed = opts->seed;
    d->unigram = -1.0;
    rc = data_open(d, opts, err);
    if (rc == RZ_OK)
        rc = data_open_val(d, opts, err);
    if (rc == RZ_OK && (d->kind == DATA_TEXT || d->kind == DATA_TOKENS))
        rc = data_scan(d, err);
    if (rc != RZ_OK) {
        data_destroy(d);
        return rc;
    }
    *out = d;
    return RZ_OK;
}

void data_destroy(struct data *d)
{
    if (d == NULL)
        return;
    data_markov_destroy(d->markov);
    data_seq_close(&d->seq);
    data_seq_close(&d->val_seq);
    free(d->desc);
    free(d);
}

static void data_sample_random(const struct data *d, uint64_t key, int32_t *tokens)
{
    for (int64_t t = 0; t <= d->seq_len; t++)
        tokens[t] = (int32_t)data_below(data_draw(key, (uint64_t)t), (uint64_t)d->vocab);
}

/* text and tokens: T+1 consecutive ids of s from a uniform offset in [lo, hi - T). */
static void data_sample_file(const struct data *d, const struct data_seq *s, uint64_t lo,
                             uint64_t hi, uint64_t key, int32_t *tokens)
{
    uint64_t span = hi - lo - (uint64_t)d->seq_len;
    uint64_t offset = lo + data_below(data_draw(key, 0), span);
    data_seq_read(s, offset, d->seq_len + 1, tokens);
}

/* One sample of the training split (val == false) or the validation split, from `key`. */
static void data_sample_split(const struct data *d, bool val, uint64_t key, int32_t *tokens)
{
    switch (d->kind) {
    case DATA_RANDOM: data_sample_random(d, key, tokens); return;
    case DATA_MARKOV: data_markov_sample(d->markov, key, d->seq_len, tokens); return;
    case DATA_TEXT:
    case DATA_TOKENS:
        if (val)
            data_sample_file(d, d->val, d->val_lo, d->val_hi, key, tokens);
        else
            data_sample_file(d, &d->seq, d->train_lo, d->train_hi, key, tokens);
        return;
    }
    assert(!"unknown data kind");
}

void data_sample(const struct data *d, uint64_t index, int32_t *tokens)
{
    assert(d != NULL && tokens != NULL);
    data_sample_split(d, false, data_key(d->seed, DATA_STREAM_SAMPLE, index), tokens);
}

bool data_has_val(const struct data *d)
{
    return d->has_val != 0;
}

void data_val_sample(const struct data *d, uint64_t index, int32_t *tokens)
{
    assert(d != NULL && tokens != NULL && d->has_val);
    data_sample_split(d, true, data_key(d->seed, DATA_STREAM_VAL, index), tokens);
}

double data_entropy_floor(const struct data *d)
{
    assert(d != NULL);
    switch (d->kind) {
    case DATA_RANDOM: return log((double)d->vocab);
    case DATA_MARKOV: return data_markov_entropy(d->markov);
    case DATA_TEXT:
    case DATA_TOKENS: return -1.0;
    }
    return -1.0;
}

const char *data_tokenizer_sha256(const struct data *d)
{
    assert(d != NULL);
    return d->kind == DATA_TOKENS ? d->seq.tokenizer_sha256 : "";
}

double data_unigram_entropy(const struct data *d)
{
    assert(d != NULL);
    return d->unigram;
}

enum rz_status data_verify(const struct data *d, struct rz_err *err)
{
    assert(d != NULL);
    enum rz_status rc = RZ_OK;
    if (d->seq.manifest != NULL)
        rc = manifest_verify(d->seq.manifest, err);
    if (rc == RZ_OK && d->val_seq.manifest != NULL)
        rc = manifest_verify(d->val_seq.manifest, err);
    return rc;
}

const char *data_describe(const struct data *d)
{
    assert(d != NULL);
    return d->desc;
}

const struct data_markov *data_markov_of(const struct data *d)
{
    return d->kind == DATA_MARKOV ? d->markov : NULL;
}
