/* ckpt_fixtures.c: the fixtures of check_ckpt (see ckpt_fixtures.h), used by check_ckpt.c,
 * check_ckpt_errors.c and check_ckpt_async.c.  Only ckpt/ may include hdf5.h, so damage is done
 * through ckpt/ckpt_debug.h. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "ckpt/ckpt_debug.h"
#include "core/sha256.h"
#include "core/status.h"
#include "testutil.h"

#include "ckpt_fixtures.h"

char tmpdir[256];

void setup(void)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/check_ckpt.XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

void teardown(void)
{
    rz_test_rmtree(tmpdir);
}

void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void add(struct tiny *m, const char *name, int64_t rows, int64_t cols)
{
    struct model_tensor *e = &m->table[m->t.count++];
    memset(e, 0x5a, sizeof *e); /* garbage after the name must not reach the file */
    snprintf(e->name, sizeof e->name, "%s", name);
    e->rows = rows;
    e->cols = cols;
    e->offset = m->t.n_floats;
    e->kind = MODEL_INIT_NORMAL;
    m->t.n_floats += (size_t)(rows * cols);
}

void tiny_table(struct tiny *m, int64_t V, int64_t C, int64_t L, int64_t F, int64_t T)
{
    static const char *const names[12] = {
        "ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
        "attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.fc.weight", "mlp.fc.bias",
        "mlp.proj.weight", "mlp.proj.bias"};
    const int64_t rows[12] = {C, C, 3 * C, 3 * C, C, C, C, C, F, F, C, C};
    const int64_t cols[12] = {1, 1, C, 1, C, 1, 1, 1, C, 1, F, 1};
    memset(m, 0, sizeof *m);
    m->dims = (struct model_dims){.vocab = V, .d_model = C, .n_heads = 2, .n_layers = L,
                                  .d_ff = F, .seq_len = T, .batch = 4, .ln_eps = 1e-5f,
                                  .init_std = 0.02f};
    m->t.table = m->table;
    add(m, "wte", V, C);
    add(m, "wpe", T, C);
    for (int64_t l = 0; l < L; l++)
        for (int j = 0; j < 12; j++) {
            char nm[MODEL_TENSOR_NAME_MAX];
            snprintf(nm, sizeof nm, "h%d.%s", (int)l, names[j]);
            add(m, nm, rows[j], cols[j]);
        }
    add(m, "ln_f.weight", C, 1);
    add(m, "ln_f.bias", C, 1);
    add(m, "head.weight", V, C);
    add(m, "head.bias", V, 1);
}

void tiny_fill(struct tiny *m, uint32_t seed)
{
    float *bufs[3] = {m->t.params, m->t.adam_m, m->t.adam_v};
    uint32_t x = seed * 2654435761u + 1;
    for (int b = 0; b < 3; b++)
        for (size_t i = 0; i < m->t.n_floats; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            uint32_t bits = (i % 97 == 0) ? 0x80000000u : (i % 89 == 0) ? 0x00000003u
                          : (i % 83 == 0) ? 0x7fc12345u : (i % 79 == 0) ? 0xff800000u
                          : (x & 0x3fffffffu) | ((x & 1u) << 31);
            memcpy(&bufs[b][i], &bits, sizeof bits);
        }
}

void tiny_alloc(struct tiny *m, uint32_t seed)
{
    m->t.params = calloc(m->t.n_floats, sizeof(float));
    m->t.adam_m = calloc(m->t.n_floats, sizeof(float));
    m->t.adam_v = calloc(m->t.n_floats, sizeof(float));
    ck_assert(m->t.params && m->t.adam_m && m->t.adam_v);
    if (seed != 0)
        tiny_fill(m, seed);
}

void tiny_free(struct tiny *m)
{
    free(m->t.params);
    free(m->t.adam_m);
    free(m->t.adam_v);
}

void make_tiny(struct tiny *m, uint32_t seed)
{
    tiny_table(m, 64, 16, 2, 32, 8);
    tiny_alloc(m, seed);
}

static const char yaml_text[] = "model:\n  vocab_size: 64\n  d_model: 16\ntraining:\n  steps: 9\n";

struct ckpt_meta make_meta(const struct tiny *m, int64_t step)
{
    struct ckpt_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.step = step;
    meta.samples_seen = step * 48 + 7;
    meta.global_batch = 48;
    meta.world_size = 3;
    meta.adam_t = step + 1;
    meta.lr = 3.25e-4 * (double)step;
    meta.init_seed = 0xdeadbeefcafef00dull; /* > INT64_MAX: must survive as unsigned */
    meta.data_seed = 1234567;
    meta.loss_sum = 123.456 + (double)step;
    meta.train_time_s = 78.9;
    meta.restarts = 2;
    meta.dims = m->dims;
    meta.config_yaml = (char *)yaml_text;
    rz_sha256_hex(yaml_text, strlen(yaml_text), meta.config_sha256);
    return meta;
}

void save_step(struct tiny *m, int64_t step, char *path, size_t len)
{
    struct ckpt_meta meta = make_meta(m, step);
    struct rz_err err;
    rz_err_clear(&err);
    enum rz_status st = ckpt_save(tmpdir, &meta, &m->t, path, len, &err);
    ck_assert_msg(st == RZ_OK, "save: %s", err.msg);
}

int64_t step_of(const char *path)
{
    const char *p = strrchr(path, '/');
    long long s = -1;
    if (p == NULL || sscanf(p, "/step-%lld.h5", &s) != 1)
        return -1;
    return s;
}

void assert_meta_equal(const struct ckpt_meta *a, const struct ckpt_meta *b)
{
    ck_assert_int_eq(a->step, b->step);
    ck_assert_int_eq(a->samples_seen, b->samples_seen);
    ck_assert_int_eq(a->global_batch, b->global_batch);
    ck_assert_int_eq(a->world_size, b->world_size);
    ck_assert_int_eq(a->adam_t, b->adam_t);
    ck_assert(memcmp(&a->lr, &b->lr, sizeof a->lr) == 0);
    ck_assert_uint_eq(a->init_seed, b->init_seed);
    ck_assert_uint_eq(a->data_seed, b->data_seed);
    ck_assert(memcmp(&a->loss_sum, &b->loss_sum, sizeof a->loss_sum) == 0);
    ck_assert(memcmp(&a->train_time_s, &b->train_time_s, sizeof a->train_time_s) == 0);
    ck_assert_int_eq(a->restarts, b->restarts);
    ck_assert_int_eq(a->dims.vocab, b->dims.vocab);
    ck_assert_int_eq(a->dims.d_model, b->dims.d_model);
    ck_assert_int_eq(a->dims.n_heads, b->dims.n_heads);
    ck_assert_int_eq(a->dims.n_layers, b->dims.n_layers);
    ck_assert_int_eq(a->dims.d_ff, b->dims.d_ff);
    ck_assert_int_eq(a->dims.seq_len, b->dims.seq_len);
    ck_assert_int_eq(a->dims.batch, b->dims.batch);
    ck_assert(memcmp(&a->dims.ln_eps, &b->dims.ln_eps, sizeof(float)) == 0);
    ck_assert(memcmp(&a->dims.init_std, &b->dims.init_std, sizeof(float)) == 0);
    ck_assert_str_eq(a->config_sha256, b->config_sha256);
    ck_assert_str_eq(a->tokenizer_sha256, b->tokenizer_sha256);
    ck_assert_str_eq(a->config_yaml, b->config_yaml);
}

enum rz_status fetch_from(void *user, int which, size_t index, float *out,
                          struct rz_err *err)
{
    struct fetch_log *f = user;
    const struct model_tensor *e = &f->from->table[index];
    size_t count = f->from->t.count;
    f->order_ok &= (size_t)f->calls == (size_t)which * count + index; /* m of all, then v */
    if (f->calls++ == f->fail_at)
        return rz_fail(err, RZ_EHANG, "gather failed on purpose");
    memcpy(out, (which == 0 ? f->from->t.adam_m : f->from->t.adam_v) + e->offset,
           (size_t)(e->rows * e->cols) * sizeof(float));
    return RZ_OK;
}

size_t count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t n = 0;
    while (d != NULL && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), s = strlen(suffix);
        n += l >= s && strcmp(de->d_name + l - s, suffix) == 0;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

void truncate_half(const char *path)
{
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(truncate(path, sb.st_size / 2), 0);
}

static void flip_byte_at(const char *path, int64_t offset)
{
    int fd = open(path, O_RDWR);
    unsigned char c;
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, &c, 1, offset), 1);
    c ^= 0x10;
    ck_assert_int_eq(pwrite(fd, &c, 1, offset), 1);
    close(fd);
}

void apply_damage(enum damage d, const char *path)
{
    struct rz_err err;
    int64_t off = 0, size = 0;
    FILE *f;
    rz_err_clear(&err);
    switch (d) {
    case FLIP_BYTE:
        ck_assert_msg(ckpt_debug_data_extent(path, "/adam_v/h1.mlp.fc.weight", &off, &size, &err) ==
                          RZ_OK, "%s", err.msg);
        ck_assert_int_eq(size, 32 * 16 * 4);
        flip_byte_at(path, off + size / 2);
        break;
    case TRUNCATE:
        truncate_half(path);
        break;
    case EMPTY:
        ck_assert_int_eq(truncate(path, 0), 0);
        break;
    case NOT_HDF5:
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs("this is a text file, not a checkpoint\n", f);
        fclose(f);
        break;
    case MISSING_DATASET:
        ck_assert_int_eq(ckpt_debug_unlink(path, "/adam_m/wpe", &err), RZ_OK);
        break;
    case NEWER_VERSION:
        ck_assert_int_eq(ckpt_debug_set_attr_i64(path, "/", "format_version", 2, &err), RZ_OK);
        break;
    }
}
