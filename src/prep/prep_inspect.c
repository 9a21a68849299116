/* prep_inspect.c: reading a token file's ids back (see prep.h): `ryzen-data decode`, the
 * unigram entropy, and `ryzen-data info` for a token file or a manifest.
 *
 * Not here: the header's format (record/tokfile.c), the manifest's (record/manifest.c),
 * writing anything. */
#include "config.h"

#include "prep/prep.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/json.h"
#include "record/manifest.h"
#include "tok/tok.h"

#define BLOCK_IDS 65536

enum rz_status prep_ids_open(struct prep_ids *r, const char *path, uint64_t first,
                             struct rz_err *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    bool has = false;
    enum rz_status st = prep_check_input(path, err);
    if (st == RZ_OK)
        st = tokfile_read_header(path, &r->h, &has, err);
    if (st != RZ_OK)
        return st;
    if (!has)
        return rz_fail(err, RZ_EDATA, "'%s' has no token-file header (magic %s): a headerless "
                       "file, or not a token file", path, TOKFILE_MAGIC);
    if (first > r->h.n_tokens)
        return rz_fail(err, RZ_ECONFIG, "'%s': first id %" PRIu64 " is past its %" PRIu64
                       " tokens", path, first, r->h.n_tokens);
    r->f = fopen(path, "rb");
    if (r->f == NULL)
        return rz_fail(err, RZ_EIO, "open '%s': %s", path, strerror(errno));
    uint64_t off = TOKFILE_HEADER_BYTES + first * r->h.width;
    if (off > (uint64_t)INT64_MAX || fseeko(r->f, (off_t)off, SEEK_SET) != 0)
        return rz_fail(err, RZ_EIO, "seek '%s' to id %" PRIu64 ": %s", path, first,
                       strerror(errno));
    r->pos = first;
    return RZ_OK;
}

enum rz_status prep_ids_read(struct prep_ids *r, int32_t *ids, size_t max, size_t *n,
                             struct rz_err *err)
{
    *n = 0;
    uint64_t left = r->h.n_tokens - r->pos;
    size_t want = left < max ? (size_t)left : max;
    if (want == 0)
        return RZ_OK;
    if (want * r->h.width > r->cap) {
        uint8_t *p = realloc(r->raw, want * r->h.width);
        if (p == NULL)
            return rz_fail(err, RZ_ENOMEM, "read '%s': out of memory", r->path);
        r->raw = p;
        r->cap = want * r->h.width;
    }
    if (fread(r->raw, r->h.width, want, r->f) != want)
        return ferror(r->f) ? rz_fail(err, RZ_EIO, "read '%s': %s", r->path, strerror(errno))
                            : rz_fail(err, RZ_EDATA, "read '%s': it ends before its %" PRIu64
                                      " tokens", r->path, r->h.n_tokens);
    for (size_t i = 0; i < want; i++) {
        const uint8_t *b = r->raw + i * r->h.width;
        uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8;
        if (r->h.width == 4)
            v |= (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if (v >= r->h.vocab_size || v > INT32_MAX)
            return rz_fail(err, RZ_EDATA, "'%s': token %" PRIu64 " is id %" PRIu32 ", not below "
                           "the vocabulary size %" PRIu64, r->path, r->pos + i, v,
                           r->h.vocab_size);
        ids[i] = (int32_t)v;
    }
    r->pos += want;
    *n = want;
    return RZ_OK;
}

void prep_ids_close(struct prep_ids *r)
{
    if (r->f != NULL)
        fclose(r->f);
    free(r->raw);
    r->f = NULL;
    r->raw = NULL;
}

/* ---- decode ---- */

static enum rz_status same_tokenizer(const struct tok *t, const struct prep_ids *r,
                                     struct rz_err *err)
{
    char want[65];
    tokfile_sha_hex(&r->h, want);
    if (strcmp(want, tok_sha256_hex(t)) == 0)
        return RZ_OK;
    return rz_fail(err, RZ_EDATA, "'%s' was encoded with tokenizer %s, but '%s' is %s: decode "
                   "it with its own tokenizer", r->path, want[0] ? want : "(not recorded)",
                   tok_model_path(t), tok_sha256_hex(t));
}

static enum rz_status decode_blocks(const struct tok *t, struct prep_ids *r, uint64_t count,
                                    size_t block, int32_t *ids, FILE *out, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    while (st == RZ_OK && count > 0) {
        size_t n = 0, len = 0;
        char *text = NULL;
        st = prep_ids_read(r, ids, count < block ? (size_t)count : block, &n, err);
        if (st != RZ_OK || n == 0)
            break;
        count -= n;
        st = tok_decode(t, ids, n, &text, &len, err);
        if (st == RZ_OK && fwrite(text, 1, len, out) != len)
            st = rz_fail(err, RZ_EIO, "decode: write the text: %s", rz_io_cause(errno));
        free(text);
    }
    return st;
}

enum rz_status prep_decode(const struct tok *t, const struct prep_decode_opts *o,
                           struct rz_err *err)
{
    struct prep_ids r;
    size_t block = o->block_ids > 0 ? o->block_ids : BLOCK_IDS;
    enum rz_status st = prep_ids_open(&r, o->path, o->first, err);
    if (st == RZ_OK)
        st = same_tokenizer(t, &r, err);
    int32_t *ids = st == RZ_OK ? malloc(block * sizeof *ids) : NULL;
    if (st == RZ_OK && ids == NULL)
        st = rz_fail(err, RZ_ENOMEM, "decode '%s': out of memory", o->path);
    if (st == RZ_OK)
        st = decode_blocks(t, &r, o->count, block, ids, o->out, err);
    free(ids);
    prep_ids_close(&r);
    return st;
}

/* ---- unigram entropy ---- */

double prep_entropy_of_counts(const uint64_t *counts, uint64_t vocab)
{
    uint64_t total = 0;
    double sum = 0; /* sum_i c_i ln c_i, in index order: the same bits on every run */
    for (uint64_t i = 0; i < vocab; i++) {
        total += counts[i];
        if (counts[i] > 1)
            sum += (double)counts[i] * log((double)counts[i]);
    }
    if (total == 0)
        return 0;
    double h = log((double)total) - sum / (double)total;
    return h > 0 ? h : 0; /* one distinct id: 0, not -1e-16 */
}

static enum rz_status count_ids(const char *path, uint64_t vocab, uint64_t *counts,
                                int32_t *ids, struct rz_err *err)
{
    struct prep_ids r;
    enum rz_status st = prep_ids_open(&r, path, 0, err);
    if (st == RZ_OK && r.h.vocab_size > vocab)
        st = rz_fail(err, RZ_EDATA, "'%s': vocabulary %" PRIu64 ", not %" PRIu64, path,
                     r.h.vocab_size, vocab);
    size_t n = 1;
    while (st == RZ_OK && n > 0) {
        st = prep_ids_read(&r, ids, BLOCK_IDS, &n, err);
        for (size_t i = 0; st == RZ_OK && i < n; i++)
            counts[ids[i]]++;
    }
    prep_ids_close(&r);
    return st;
}

enum rz_status prep_unigram_entropy(const char *const *paths, size_t n, uint64_t vocab,
                                    double *nats, struct rz_err *err)
{
    *nats = 0;
    if (vocab == 0 || vocab > (uint64_t)INT32_MAX + 1)
        return rz_fail(err, RZ_EDATA, "entropy: vocabulary size %" PRIu64 " out of range",
                       vocab);
    uint64_t *counts = calloc((size_t)vocab, sizeof *counts);
    int32_t *ids = malloc(BLOCK_IDS * sizeof *ids);
    enum rz_status st = RZ_OK;
    if (counts == NULL || ids == NULL)
        st = rz_fail(err, RZ_ENOMEM, "entropy: out of memory for %" PRIu64 " counts", vocab);
    for (size_t i = 0; st == RZ_OK && i < n; i++)
        st = count_ids(paths[i], vocab, counts, ids, err);
    if (st == RZ_OK)
        *nats = prep_entropy_of_counts(counts, vocab);
    free(counts);
    free(ids);
    return st;
}

/* ---- info ---- */

static enum rz_status info_manifest(const char *path, struct prep_info *i, struct rz_err *err)
{
    struct manifest *m = NULL;
    enum rz_status st = manifest_read(path, &m, err);
    if (st != RZ_OK)
        return st;
    const char **paths = calloc(m->n_shards ? m->n_shards : 1, sizeof *paths);
    if (paths == NULL) {
        manifest_free(m);
        return rz_fail(err, RZ_ENOMEM, "info '%s': out of memory", path);
    }
    i->is_manifest = true;
    i->n_shards = m->n_shards;
    i->h.version = MANIFEST_VERSION;
    i->h.width = m->id_width;
    i->h.vocab_size = m->vocab_size;
    i->h.n_tokens = m->tokens;
    for (size_t k = 0; k < 32 && strlen(m->tokenizer_sha256) == 64; k++)
        sscanf(m->tokenizer_sha256 + 2 * k, "%2hhx", &i->h.tokenizer_sha256[k]);
    for (size_t k = 0; k < m->n_shards; k++) {
        paths[k] = m->shards[k].full_path;
        i->bytes += m->shards[k].bytes;
    }
    st = prep_unigram_entropy(paths, m->n_shards, m->vocab_size, &i->entropy, err);
    free(paths);
    manifest_free(m);
    return st;
}

enum rz_status prep_info_read(const char *path, struct prep_info *i, struct rz_err *err)
{
    memset(i, 0, sizeof *i);
    struct stat sb;
    enum rz_status st = prep_check_input(path, err);
    if (st != RZ_OK || stat(path, &sb) != 0)
        return st != RZ_OK ? st : rz_fail(err, RZ_EIO, "stat '%s': %s", path, strerror(errno));
    if (manifest_sniff(path))
        return info_manifest(path, i, err);
    bool has = false;
    st = tokfile_read_header(path, &i->h, &has, err);
    if (st == RZ_OK && !has)
        st = rz_fail(err, RZ_EDATA, "'%s' is neither a token file with a header (magic %s) nor "
                     "a manifest", path, TOKFILE_MAGIC);
    if (st != RZ_OK)
        return st;
    i->bytes = (uint64_t)sb.st_size;
    return prep_unigram_entropy(&path, 1, i->h.vocab_size, &i->entropy, err);
}

static void info_json(FILE *f, const char *path, const struct prep_info *i, const char *sha)
{
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "path", path);
    rz_json_kv_string(&j, "kind", i->is_manifest ? "manifest" : "tokens");
    rz_json_kv_string(&j, "format", i->is_manifest ? MANIFEST_FORMAT : TOKFILE_MAGIC);
    rz_json_kv_uint(&j, "version", i->h.version);
    rz_json_kv_uint(&j, "id_width", i->h.width);
    rz_json_kv_uint(&j, "vocab_size", i->h.vocab_size);
    rz_json_kv_uint(&j, "tokens", i->h.n_tokens);
    rz_json_kv_string(&j, "tokenizer_sha256", sha);
    if (i->is_manifest)
        rz_json_kv_uint(&j, "shards", i->n_shards);
    rz_json_kv_uint(&j, "bytes", i->bytes);
    rz_json_kv_double(&j, "unigram_entropy", i->entropy);
    rz_json_object_end(&j);
    fputc('\n', f);
}

void prep_info_print(FILE *f, const char *path, const struct prep_info *i, bool json)
{
    char sha[65];
    tokfile_sha_hex(&i->h, sha);
    if (json) {
        info_json(f, path, i, sha);
        return;
    }
    fprintf(f, "path              %s\n", path);
    fprintf(f, "format            %s, version %" PRIu32 "\n",
            i->is_manifest ? MANIFEST_FORMAT : TOKFILE_MAGIC, i->h.version);
    fprintf(f, "id width          %" PRIu32 " bytes\n", i->h.width);
    fprintf(f, "vocabulary        %" PRIu64 "\n", i->h.vocab_size);
    fprintf(f, "tokens            %" PRIu64 "\n", i->h.n_tokens);
    fprintf(f, "tokenizer sha256  %s\n", sha[0] ? sha : "(not recorded)");
    if (i->is_manifest)
        fprintf(f, "shards            %zu (%" PRIu64 " bytes)\n", i->n_shards, i->bytes);
    else
        fprintf(f, "bytes             %" PRIu64 "\n", i->bytes);
    fprintf(f, "unigram entropy   %.4f nats/token\n", i->entropy);
}
