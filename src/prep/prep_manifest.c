/* prep_manifest.c: the checksum sidecar each encoded shard carries (OUT.tok.sha256, in
 * sha256sum's format) and `ryzen-data manifest`: check every shard against its sidecar and the
 * others, then write the manifest (see prep.h).
 *
 * Not here: the manifest's format, reading and verification (record/manifest.c). */
#include "config.h"

#include "prep/prep.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/util.h"
#include "record/manifest.h"

enum rz_status prep_sidecar_write(const char *path, const char hex[65], struct rz_err *err)
{
    char side[4200], text[4400];
    const char *base = strrchr(path, '/');
    rz_fmt(side, sizeof side, "%s.sha256", path);
    rz_fmt(text, sizeof text, "%s  %s\n", hex, base != NULL ? base + 1 : path);
    return rz_durable_write_text(side, "sha256", text, err);
}

static bool is_hex64(const char *s)
{
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

enum rz_status prep_sidecar_read(const char *path, char hex[65], struct rz_err *err)
{
    char side[4200], line[256];
    rz_fmt(side, sizeof side, "%s.sha256", path);
    FILE *f = fopen(side, "r");
    if (f == NULL)
        return rz_fail(err, RZ_EDATA, "shard '%s': its checksum '%s': %s (was it encoded to "
                       "the end?)", path, side, strerror(errno));
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got || strlen(line) < 66 || !is_hex64(line) || line[64] != ' ')
        return rz_fail(err, RZ_EDATA, "shard '%s': its checksum '%s' is not \"<sha256 hex>  "
                       "<name>\"", path, side);
    memcpy(hex, line, 64);
    hex[64] = '\0';
    return RZ_OK;
}


enum rz_status prep_check_input(const char *path, struct rz_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rz_fail(err, RZ_EDATA, "'%s': %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return rz_fail(err, RZ_EDATA, "'%s' is a directory, not a file", path);
    return RZ_OK;
}

enum rz_status prep_check_out_dir(const char *path, struct rz_err *err)
{
    char dir[4096];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return rz_fail(err, RZ_ECONFIG, "output '%s' is a directory: name a file in it", path);
    rz_dir_of(path, dir, sizeof dir);
    if (stat(dir, &sb) != 0)
        return rz_fail(err, RZ_ECONFIG, "output '%s': directory '%s' does not exist", path, dir);
    if (!S_ISDIR(sb.st_mode))
        return rz_fail(err, RZ_ECONFIG, "output '%s': '%s' is not a directory", path, dir);
    return RZ_OK;
}

/* Split an absolute path into its components, in place. */
static size_t components(char *s, char **part, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *c = strtok_r(s, "/", &save); c != NULL && n < max; c = strtok_r(NULL, "/", &save))
        part[n++] = c;
    return n;
}

enum rz_status prep_relative_path(const char *dir, const char *path, char *out, size_t len,
                                  struct rz_err *err)
{
    static _Thread_local char d[PATH_MAX], p[PATH_MAX];
    static _Thread_local char *dc[PATH_MAX / 2], *pc[PATH_MAX / 2];
    if (realpath(dir, d) == NULL)
        return rz_fail(err, RZ_ECONFIG, "directory '%s': %s", dir, strerror(errno));
    if (realpath(path, p) == NULL)
        return rz_fail(err, RZ_EDATA, "shard '%s': %s", path, strerror(errno));
    size_t nd = components(d, dc, RZ_ARRAY_LEN(dc)), np = components(p, pc, RZ_ARRAY_LEN(pc));
    size_t k = 0;
    while (k < nd && k < np && strcmp(dc[k], pc[k]) == 0)
        k++;
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = k; i < nd + np - k; i++) {
        const char *c = i < nd ? ".." : pc[i - nd + k];
        size_t cl = strlen(c);
        if (used + cl + 2 > len)
            return rz_fail(err, RZ_ECONFIG, "shard '%s': its path is too long", path);
        if (used > 0)
            out[used++] = '/';
        memcpy(out + used, c, cl + 1);
        used += cl;
    }
    return RZ_OK;
}

/* One shard: header, sidecar against a fresh hash, and its relative name. */
static enum rz_status read_shard(const char *mdir, const char *path, struct manifest_shard *s,
                                 struct tokfile_header *h, struct rz_err *err)
{
    bool has = false;
    char side[65], rel[4096];
    enum rz_status st = prep_check_input(path, err);
    if (st == RZ_OK)
        st = tokfile_read_header(path, h, &has, err);
    if (st == RZ_OK && !has)
        st = rz_fail(err, RZ_EDATA, "shard '%s' has no token-file header (magic %s)", path,
                     TOKFILE_MAGIC);
    if (st == RZ_OK)
        st = prep_sidecar_read(path, side, err);
    if (st == RZ_OK)
        st = tokfile_sha256_file(path, s->sha256, &s->bytes, err);
    if (st == RZ_OK && strcmp(side, s->sha256) != 0)
        st = rz_fail(err, RZ_EDATA, "shard '%s' changed after it was encoded: its SHA-256 is "
                     "%s, its checksum file says %s", path, s->sha256, side);
    if (st == RZ_OK)
        st = prep_relative_path(mdir, path, rel, sizeof rel, err);
    if (st != RZ_OK)
        return st;
    s->tokens = h->n_tokens;
    s->path = strdup(rel);
    return s->path == NULL ? rz_fail(err, RZ_ENOMEM, "manifest: out of memory") : RZ_OK;
}

/* Every shard has the first one's tokenizer, vocabulary and width. */
static enum rz_status same_as_first(const char *path, const char *first,
                                    const struct tokfile_header *h,
                                    const struct tokfile_header *h0, struct rz_err *err)
{
    char a[65], b[65];
    tokfile_sha_hex(h, a);
    tokfile_sha_hex(h0, b);
    if (strcmp(a, b) != 0)
        return rz_fail(err, RZ_EDATA, "shard '%s' was encoded with tokenizer %s, but '%s' with "
                       "%s", path, a[0] ? a : "(not recorded)", first, b[0] ? b : "(not recorded)");
    if (h->vocab_size != h0->vocab_size || h->width != h0->width)
        return rz_fail(err, RZ_EDATA, "shard '%s' has vocabulary %" PRIu64 " and %" PRIu32
                       "-byte ids, but '%s' %" PRIu64 " and %" PRIu32, path, h->vocab_size,
                       h->width, first, h0->vocab_size, h0->width);
    return RZ_OK;
}

static void free_shards(struct manifest *m)
{
    for (size_t i = 0; i < m->n_shards; i++)
        free(m->shards[i].path);
    free(m->shards);
}

enum rz_status prep_manifest(const char *out, const char *const *shards, size_t n,
                             uint64_t *total, struct rz_err *err)
{
    char mdir[4096];
    enum rz_status st = prep_check_out_dir(out, err);
    if (st != RZ_OK)
        return st;
    rz_dir_of(out, mdir, sizeof mdir);
    if (n == 0)
        return rz_fail(err, RZ_ECONFIG, "manifest '%s': no shards given", out);
    struct manifest m = {.shards = calloc(n, sizeof *m.shards), .n_shards = n};
    if (m.shards == NULL)
        return rz_fail(err, RZ_ENOMEM, "manifest: out of memory for %zu shards", n);
    struct tokfile_header h0 = {0}, h;
    for (size_t i = 0; st == RZ_OK && i < n; i++) {
        st = read_shard(mdir, shards[i], &m.shards[i], i == 0 ? &h0 : &h, err);
        if (st == RZ_OK && i > 0)
            st = same_as_first(shards[i], shards[0], &h, &h0, err);
        m.tokens += m.shards[i].tokens;
    }
    if (st == RZ_OK) {
        tokfile_sha_hex(&h0, m.tokenizer_sha256);
        m.vocab_size = h0.vocab_size;
        m.id_width = h0.width;
        st = manifest_write(out, &m, err);
    }
    if (total != NULL)
        *total = m.tokens;
    free_shards(&m);
    return st;
}
