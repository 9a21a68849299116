/* manifest.c: the data manifest's reader, writer and checks (format: manifest.h, docs/data.md).
 *
 * The reader refuses what the trainer could not use (a wrong format or version, a key missing or
 * of the wrong type, shards whose token counts do not add up or whose sizes disagree with their
 * counts), naming the file and the key.  The checks compare each shard with its entry: the cheap
 * one (manifest_check_shard: present, size, header) is what the trainer does at start-up, the
 * full one (manifest_verify: also the SHA-256 of every byte) is the preflight's.
 *
 * Deliberately not here: building a manifest from shards and their .sha256 sidecars
 * (ryzen-data, src/prep/), and reading ids (src/data/). */
#include "config.h"

#include "record/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/json_read.h"
#include "core/util.h"
#include "record/tokfile.h"

bool manifest_sniff(const char *path)
{
    unsigned char buf[256];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t i = 0;
    for (size_t k = 0; k < n; k++)
        if (buf[k] < 0x20 && buf[k] != ' ' && buf[k] != '\t' && buf[k] != '\n' && buf[k] != '\r')
            return false;
    while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    if (i >= n || buf[i] != '{')
        return false;
    for (i++; i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r');)
        i++;
    return i < n && (buf[i] == '"' || buf[i] == '}');
}

void manifest_free(struct manifest *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n_shards; i++) {
        free(m->shards[i].path);
        free(m->shards[i].full_path);
    }
    free(m->shards);
    free(m);
}

/* ---- reading ---- */

static bool is_hex64(const char *s)
{
    if (strlen(s) != 64)
        return false;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* A non-negative integer member `key` of `o`; `where` is the key's full name in messages. */
static enum rz_status get_uint(const struct gj_value *o, const char *key, const char *where,
                               const char *path, uint64_t *out, struct rz_err *err)
{
    int64_t v;
    if (gj_get(o, key) == NULL)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key '%s' is missing", path, where);
    if (!gj_get_int(o, key, &v) || v < 0)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key '%s' is not a whole number >= 0",
                       path, where);
    *out = (uint64_t)v;
    return RZ_OK;
}

static enum rz_status get_str(const struct gj_value *o, const char *key, const char *where,
                              const char *path, const char **out, struct rz_err *err)
{
    if (gj_get(o, key) == NULL)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key '%s' is missing", path, where);
    *out = gj_get_str(o, key);
    if (*out == NULL)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key '%s' is not a string", path, where);
    return RZ_OK;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* `rel` against the directory of `manifest_path` (as is when absolute, or when the manifest
 * names no directory). */
static char *resolve(const char *manifest_path, const char *rel)
{
    char dir[4096];
    rz_dir_of(manifest_path, dir, sizeof dir);
    if (rel[0] == '/' || strchr(manifest_path, '/') == NULL)
        return dup_str(rel);
    size_t n = strlen(dir) + 1 + strlen(rel) + 1;
    char *p = malloc(n);
    if (p != NULL) /* "/" is the one directory that ends in a slash */
        snprintf(p, n, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", rel);
    return p;
}

static enum rz_status read_shard(const struct gj_value *o, size_t i, const char *path,
                                 const struct manifest *m, struct manifest_shard *s,
                                 struct rz_err *err)
{
    char where[64];
    const char *str;
    enum rz_status st;
    rz_fmt(where, sizeof where, "shards[%zu]", i);
    if (o->type != GJ_OBJ)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key '%s' is not an object", path, where);
    rz_fmt(where, sizeof where, "shards[%zu].path", i);
    if ((st = get_str(o, "path", where, path, &str, err)) != RZ_OK)
        return st;
    if (str[0] == '\0')
        return rz_fail(err, RZ_EDATA, "manifest '%s': key '%s' is empty", path, where);
    s->path = dup_str(str);
    s->full_path = resolve(path, str);
    if (s->path == NULL || s->full_path == NULL)
        return rz_fail(err, RZ_ENOMEM, "manifest '%s': out of memory", path);
    rz_fmt(where, sizeof where, "shards[%zu].tokens", i);
    if ((st = get_uint(o, "tokens", where, path, &s->tokens, err)) != RZ_OK)
        return st;
    rz_fmt(where, sizeof where, "shards[%zu].bytes", i);
    if ((st = get_uint(o, "bytes", where, path, &s->bytes, err)) != RZ_OK)
        return st;
    if (s->bytes != TOKFILE_HEADER_BYTES + s->tokens * m->id_width)
        return rz_fail(err, RZ_EDATA,
                       "manifest '%s': key '%s' is %llu, but %llu tokens of %u bytes and the "
                       "header make %llu", path, where, (unsigned long long)s->bytes,
                       (unsigned long long)s->tokens, m->id_width,
                       (unsigned long long)(TOKFILE_HEADER_BYTES + s->tokens * m->id_width));
    rz_fmt(where, sizeof where, "shards[%zu].sha256", i);
    if ((st = get_str(o, "sha256", where, path, &str, err)) != RZ_OK)
        return st;
    if (!is_hex64(str))
        return rz_fail(err, RZ_EDATA, "manifest '%s': key '%s' is not 64 lowercase hex digits",
                       path, where);
    memcpy(s->sha256, str, 65);
    return RZ_OK;
}

/* The top-level keys but the shards. */
static enum rz_status read_top(const struct gj_value *root, const char *path, struct manifest *m,
                               struct rz_err *err)
{
    const char *str;
    uint64_t v;
    enum rz_status st;
    if (root->type != GJ_OBJ)
        return rz_fail(err, RZ_EDATA, "manifest '%s': not a JSON object", path);
    if ((st = get_str(root, "format", "format", path, &str, err)) != RZ_OK)
        return st;
    if (strcmp(str, MANIFEST_FORMAT) != 0)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key 'format' is \"%s\", not \"%s\"", path,
                       str, MANIFEST_FORMAT);
    if ((st = get_uint(root, "version", "version", path, &v, err)) != RZ_OK)
        return st;
    if (v != MANIFEST_VERSION)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key 'version' is %llu, this build reads "
                       "version %d", path, (unsigned long long)v, MANIFEST_VERSION);
    if ((st = get_str(root, "tokenizer_sha256", "tokenizer_sha256", path, &str, err)) != RZ_OK)
        return st;
    if (str[0] != '\0' && !is_hex64(str))
        return rz_fail(err, RZ_EDATA, "manifest '%s': key 'tokenizer_sha256' is not 64 "
                       "lowercase hex digits", path);
    memcpy(m->tokenizer_sha256, str, strlen(str) + 1);
    if ((st = get_uint(root, "vocab_size", "vocab_size", path, &m->vocab_size, err)) != RZ_OK)
        return st;
    if ((st = get_uint(root, "id_width", "id_width", path, &v, err)) != RZ_OK)
        return st;
    if ((v != 2 && v != 4) || m->vocab_size == 0 || (v == 2 && m->vocab_size > 65536u))
        return rz_fail(err, RZ_EDATA, "manifest '%s': key 'id_width' is %llu with a vocab_size "
                       "of %llu: 2 (vocabulary <= 65536) or 4", path, (unsigned long long)v,
                       (unsigned long long)m->vocab_size);
    m->id_width = (unsigned)v;
    return get_uint(root, "tokens", "tokens", path, &m->tokens, err);
}

static enum rz_status read_shards(const struct gj_value *root, const char *path,
                                  struct manifest *m, struct rz_err *err)
{
    const struct gj_value *arr = gj_get(root, "shards");
    if (arr == NULL)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key 'shards' is missing", path);
    if (arr->type != GJ_ARR || arr->n == 0)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key 'shards' is not a non-empty array",
                       path);
    m->shards = calloc(arr->n, sizeof *m->shards);
    if (m->shards == NULL)
        return rz_fail(err, RZ_ENOMEM, "manifest '%s': out of memory", path);
    uint64_t sum = 0;
    for (size_t i = 0; i < arr->n; i++) {
        m->n_shards = i + 1;
        enum rz_status st = read_shard(&arr->items[i], i, path, m, &m->shards[i], err);
        if (st != RZ_OK)
            return st;
        sum += m->shards[i].tokens;
    }
    if (sum != m->tokens)
        return rz_fail(err, RZ_EDATA, "manifest '%s': key 'tokens' is %llu, the shards' tokens "
                       "add up to %llu", path, (unsigned long long)m->tokens,
                       (unsigned long long)sum);
    return RZ_OK;
}

enum rz_status manifest_read(const char *path, struct manifest **out, struct rz_err *err)
{
    struct gj_value *root = NULL;
    *out = NULL;
    enum rz_status st = gj_parse_file(path, &root, err);
    if (st != RZ_OK)
        return st;
    struct manifest *m = calloc(1, sizeof *m);
    if (m == NULL) {
        gj_free(root);
        return rz_fail(err, RZ_ENOMEM, "manifest '%s': out of memory", path);
    }
    st = read_top(root, path, m, err);
    if (st == RZ_OK)
        st = read_shards(root, path, m, err);
    gj_free(root);
    if (st != RZ_OK) {
        manifest_free(m);
        return st;
    }
    *out = m;
    return RZ_OK;
}

/* ---- writing ---- */

static void put_manifest(FILE *f, const void *ctx)
{
    const struct manifest *m = ctx;
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "format", MANIFEST_FORMAT);
    rz_json_kv_int(&j, "version", MANIFEST_VERSION);
    rz_json_kv_string(&j, "tokenizer_sha256", m->tokenizer_sha256);
    rz_json_kv_uint(&j, "vocab_size", m->vocab_size);
    rz_json_kv_uint(&j, "id_width", m->id_width);
    rz_json_kv_uint(&j, "tokens", m->tokens);
    rz_json_key(&j, "shards");
    rz_json_array_begin(&j);
    for (size_t i = 0; i < m->n_shards; i++) {
        const struct manifest_shard *s = &m->shards[i];
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "path", s->path);
        rz_json_kv_uint(&j, "tokens", s->tokens);
        rz_json_kv_uint(&j, "bytes", s->bytes);
        rz_json_kv_string(&j, "sha256", s->sha256);
        rz_json_object_end(&j);
    }
    rz_json_array_end(&j);
    rz_json_object_end(&j);
    fputc('\n', f);
}

enum rz_status manifest_write(const char *path, const struct manifest *m, struct rz_err *err)
{
    uint64_t sum = 0;
    if (m->n_shards == 0)
        return rz_fail(err, RZ_EDATA, "manifest '%s': no shards", path);
    for (size_t i = 0; i < m->n_shards; i++) {
        if (m->shards[i].path == NULL || m->shards[i].path[0] == '\0')
            return rz_fail(err, RZ_EDATA, "manifest '%s': shard %zu has no path", path, i);
        sum += m->shards[i].tokens;
    }
    if (sum != m->tokens)
        return rz_fail(err, RZ_EDATA, "manifest '%s': tokens %llu, the shards add up to %llu",
                       path, (unsigned long long)m->tokens, (unsigned long long)sum);
    return rz_durable_write(path, "manifest", put_manifest, m, err);
}

/* ---- checks ---- */

enum rz_status manifest_check_shard(const struct manifest *m, size_t i, struct tokfile_header *h,
                                    struct rz_err *err)
{
    const struct manifest_shard *s = &m->shards[i];
    struct stat sb;
    bool has_header;
    char hex[65];
    if (stat(s->full_path, &sb) != 0) {
        if (errno == ENOENT)
            return rz_fail(err, RZ_EDATA, "data shard '%s' (%zu of %zu in the manifest) is "
                           "missing", s->full_path, i + 1, m->n_shards);
        return rz_fail(err, RZ_EIO, "data shard '%s': %s", s->full_path, strerror(errno));
    }
    if ((uint64_t)sb.st_size != s->bytes)
        return rz_fail(err, RZ_EDATA, "data shard '%s' (%zu of %zu) changed size: the manifest "
                       "says %llu bytes, the file has %llu", s->full_path, i + 1, m->n_shards,
                       (unsigned long long)s->bytes, (unsigned long long)sb.st_size);
    enum rz_status st = tokfile_read_header(s->full_path, h, &has_header, err);
    if (st != RZ_OK)
        return st;
    if (!has_header)
        return rz_fail(err, RZ_EDATA, "data shard '%s': no token-file header", s->full_path);
    tokfile_sha_hex(h, hex);
    if (h->vocab_size != m->vocab_size || h->width != m->id_width || h->n_tokens != s->tokens)
        return rz_fail(err, RZ_EDATA, "data shard '%s': its header says vocabulary %llu, width "
                       "%u, %llu tokens; the manifest says %llu, %u, %llu", s->full_path,
                       (unsigned long long)h->vocab_size, h->width,
                       (unsigned long long)h->n_tokens, (unsigned long long)m->vocab_size,
                       m->id_width, (unsigned long long)s->tokens);
    if (strcmp(hex, m->tokenizer_sha256) != 0)
        return rz_fail(err, RZ_EDATA, "data shard '%s' was encoded with tokenizer %s, the "
                       "manifest says %s", s->full_path, hex[0] != '\0' ? hex : "(none)",
                       m->tokenizer_sha256[0] != '\0' ? m->tokenizer_sha256 : "(none)");
    return RZ_OK;
}

enum rz_status manifest_verify(const struct manifest *m, struct rz_err *err)
{
    struct tokfile_header h;
    char hex[65];
    for (size_t i = 0; i < m->n_shards; i++) {
        enum rz_status st = manifest_check_shard(m, i, &h, err);
        if (st == RZ_OK)
            st = tokfile_sha256_file(m->shards[i].full_path, hex, NULL, err);
        if (st != RZ_OK)
            return st;
        if (strcmp(hex, m->shards[i].sha256) != 0)
            return rz_fail(err, RZ_EDATA, "data shard '%s' (%zu of %zu) changed: its SHA-256 is "
                           "%s, the manifest says %s", m->shards[i].full_path, i + 1,
                           m->n_shards, hex, m->shards[i].sha256);
    }
    return RZ_OK;
}
