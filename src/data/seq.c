/* seq.c: a data source's token sequence (seq.h): one file, or a manifest's shards in order,
 * with reads that cross shard boundaries.  Opening a manifest checks each shard's presence,
 * size and header against it (cheap); the SHA-256 of every byte is the preflight's
 * (manifest_verify).  Deliberately not here: windows, splits and the unigram entropy (data.c),
 * one file's header and map (file.c). */
#include "config.h"

#include "data/seq.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static enum rz_status seq_alloc(struct data_seq *s, size_t n, const char *path,
                                struct rz_err *err)
{
    s->files = calloc(n, sizeof *s->files);
    s->paths = calloc(n, sizeof *s->paths);
    s->first = calloc(n + 1, sizeof *s->first);
    if (s->files == NULL || s->paths == NULL || s->first == NULL)
        return rz_fail(err, RZ_ENOMEM, "open '%s': out of memory for %zu files", path, n);
    s->n = n;
    return RZ_OK;
}

static enum rz_status seq_vocab(const char *key, const char *path, uint64_t had, int64_t vocab,
                                struct rz_err *err)
{
    if (had == (uint64_t)vocab)
        return RZ_OK;
    return rz_fail(err, RZ_ECONFIG, "%s '%s' was encoded for a vocabulary of %" PRIu64 " tokens, "
                   "model.vocab_size is %" PRId64 ": set model.vocab_size: %" PRIu64, key, path,
                   had, vocab, had);
}

static enum rz_status seq_open_file(struct data_seq *s, const char *key, const char *label,
                                    const char *path, unsigned width, int64_t vocab,
                                    int64_t seq_len, struct rz_err *err)
{
    enum rz_status st = seq_alloc(s, 1, path, err);
    if (st == RZ_OK && (s->paths[0] = strdup(path)) == NULL)
        st = rz_fail(err, RZ_ENOMEM, "open '%s': out of memory", path);
    if (st == RZ_OK)
        st = data_file_open(&s->files[0], label, path, width, seq_len, err);
    if (st != RZ_OK)
        return st;
    const struct data_file *f = &s->files[0];
    s->width = f->width;
    s->n_tokens = s->first[1] = f->n_tokens;
    if (!f->has_header)
        return RZ_OK;
    tokfile_sha_hex(&f->header, s->tokenizer_sha256);
    return seq_vocab(key, path, f->header.vocab_size, vocab, err);
}

static enum rz_status seq_open_shards(struct data_seq *s, const char *path, int64_t seq_len,
                                      struct rz_err *err)
{
    const struct manifest *m = s->manifest;
    struct tokfile_header h;
    for (size_t i = 0; i < m->n_shards; i++) {
        const char *shard = m->shards[i].full_path;
        enum rz_status st = manifest_check_shard(m, i, &h, err);
        if (st == RZ_OK && (s->paths[i] = strdup(shard)) == NULL)
            st = rz_fail(err, RZ_ENOMEM, "open '%s': out of memory", shard);
        if (st == RZ_OK)
            st = data_file_open(&s->files[i], "data shard", shard, m->id_width, -1, err);
        if (st != RZ_OK)
            return st;
        s->first[i + 1] = s->first[i] + s->files[i].n_tokens;
    }
    s->n_tokens = s->first[m->n_shards];
    if (s->n_tokens >= (uint64_t)seq_len + 1)
        return RZ_OK;
    return rz_fail(err, RZ_EDATA, "manifest '%s' has %" PRIu64 " tokens in %zu shards; "
                   "model.seq_len %" PRId64 " needs at least %" PRId64 " (T+1)", path,
                   s->n_tokens, m->n_shards, seq_len, seq_len + 1);
}

static enum rz_status seq_open_manifest(struct data_seq *s, const char *key, const char *path,
                                        unsigned width, int64_t vocab, int64_t seq_len,
                                        struct rz_err *err)
{
    enum rz_status st = manifest_read(path, &s->manifest, err);
    if (st == RZ_OK)
        st = seq_vocab(key, path, s->manifest->vocab_size, vocab, err);
    if (st != RZ_OK)
        return st;
    const struct manifest *m = s->manifest;
    if (width != 0 && width != m->id_width)
        return rz_fail(err, RZ_ECONFIG, "%s '%s' (a manifest) holds uint%u ids, "
                       "data.token_dtype is uint%u: set data.token_dtype: auto", key, path,
                       8 * m->id_width, 8 * width);
    s->width = m->id_width;
    rz_fmt(s->tokenizer_sha256, sizeof s->tokenizer_sha256, "%s", m->tokenizer_sha256);
    st = seq_alloc(s, m->n_shards, path, err);
    return st == RZ_OK ? seq_open_shards(s, path, seq_len, err) : st;
}

enum rz_status data_seq_open(struct data_seq *s, const char *key, const char *label,
                             const char *path, unsigned width, int64_t vocab, int64_t seq_len,
                             struct rz_err *err)
{
    memset(s, 0, sizeof *s);
    if (width != 1 && manifest_sniff(path))
        return seq_open_manifest(s, key, path, width, vocab, seq_len, err);
    return seq_open_file(s, key, label, path, width, vocab, seq_len, err);
}

enum rz_status data_seq_scan(const struct data_seq *s, const char *label, int64_t vocab,
                             uint64_t *counts, uint64_t count_n, struct rz_err *err)
{
    for (size_t i = 0; i < s->n; i++) {
        uint64_t lo = s->first[i];
        uint64_t mine = count_n <= lo ? 0 : count_n - lo;
        enum rz_status st = data_file_scan(&s->files[i], s->manifest != NULL ? "data shard"
                                           : label, s->paths[i], vocab, counts, mine, err);
        if (st != RZ_OK)
            return st;
    }
    return RZ_OK;
}

/* The file holding position pos (< n_tokens): the last i with first[i] <= pos. */
static size_t seq_find(const struct data_seq *s, uint64_t pos)
{
    size_t lo = 0, hi = s->n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (s->first[mid] <= pos)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void data_seq_read(const struct data_seq *s, uint64_t first, int64_t count, int32_t *tokens)
{
    while (count > 0) {
        size_t i = seq_find(s, first);
        uint64_t avail = s->first[i + 1] - first;
        int64_t take = avail < (uint64_t)count ? (int64_t)avail : count;
        data_file_read(&s->files[i], first - s->first[i], take, tokens);
        tokens += take;
        first += (uint64_t)take;
        count -= take;
    }
}

void data_seq_close(struct data_seq *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->files != NULL)
            data_file_close(&s->files[i]);
        if (s->paths != NULL)
            free(s->paths[i]);
    }
    free(s->files);
    free(s->paths);
    free(s->first);
    manifest_free(s->manifest);
    memset(s, 0, sizeof *s);
}
