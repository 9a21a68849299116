/* data_fixtures.c: the fixtures of check_data (see data_fixtures.h), used by check_data.c,
 * check_data_files.c and check_data_errors.c. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/data.h"
#include "data/data_internal.h"

#include "data_fixtures.h"

char tmp_dir[64];
static char tmp_files[16][PATH_LEN]; /* paths handed out by write_file, reused round-robin */
static unsigned n_tmp_files;

void setup(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/check_data.XXXXXX");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        tmp_dir[0] = '\0';
    }
}

void teardown(void)
{
    DIR *dir = tmp_dir[0] ? opendir(tmp_dir) : NULL;
    if (dir == NULL)
        return;
    char path[PATH_LEN];
    for (struct dirent *e = readdir(dir); e != NULL; e = readdir(dir)) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%.400s", tmp_dir, e->d_name);
        unlink(path);
    }
    closedir(dir);
    rmdir(tmp_dir);
}

const char *write_file(const char *name, const void *bytes, size_t len)
{
    ck_assert_msg(tmp_dir[0] != '\0', "no temporary directory");
    char *path = tmp_files[n_tmp_files++ % 16];
    snprintf(path, PATH_LEN, "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

const char *write_tokens(const char *name, const unsigned *ids, size_t n)
{
    unsigned char *buf = malloc(2 * n + 1);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = (unsigned char)(ids[i] & 0xff);
        buf[2 * i + 1] = (unsigned char)(ids[i] >> 8);
    }
    const char *path = write_file(name, buf, 2 * n);
    free(buf);
    return path;
}

const char *write_tokens32(const char *name, const uint32_t *ids, size_t n)
{
    unsigned char *buf = malloc(4 * n + 1);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 4; b++)
            buf[4 * i + (size_t)b] = (unsigned char)(ids[i] >> (8 * b));
    const char *path = write_file(name, buf, 4 * n);
    free(buf);
    return path;
}

struct data_opts make_opts(enum data_kind kind, int64_t vocab, int64_t seq_len,
                                  uint64_t seed, const char *path, int64_t branching)
{
    struct data_opts o = {.kind = kind, .vocab_size = vocab, .seq_len = seq_len, .seed = seed,
                          .path = path, .markov_branching = branching};
    /* the files these tests write are headerless: their width is data.token_dtype's */
    if (kind == DATA_TOKENS)
        o.token_bytes = vocab <= 65536 ? 2u : 4u;
    return o;
}

struct data *create_ok(const struct data_opts *o)
{
    struct data *d = NULL;
    struct rz_err err = {0};
    enum rz_status rc = data_create(&d, o, &err);
    ck_assert_msg(rc == RZ_OK, "data_create failed: %s", err.msg);
    ck_assert_ptr_nonnull(d);
    return d;
}

const char *random_text_file(size_t len, uint64_t seed)
{
    unsigned char *buf = malloc(len);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(data_mix64(seed + i) >> 56);
    const char *path = write_file("text.bin", buf, len);
    free(buf);
    return path;
}

const char *counting_tokens_file(size_t n)
{
    unsigned *ids = malloc(n * sizeof *ids);
    ck_assert_ptr_nonnull(ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (unsigned)i;
    const char *path = write_tokens("count.tok", ids, n);
    free(ids);
    return path;
}
