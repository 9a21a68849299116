#include "config.h"

/* check_ckpt: SHA-256 against the FIPS 180-4 vectors (portable and SHA-NI code), checkpoint
 * save/load round trips, the parameter hash, discovery, retention, listing, crash injection at
 * each commit point, every kind of damage (detected, quarantined, fallen back from), shape
 * mismatches, I/O errors, the background writer (ckpt_async.h), and the ryzen-ckpt command
 * line ($top_builddir/ryzen-ckpt, skipped
 * with a note when it has not been built).  Tiny model tables are built by hand; no model code is
 * used.  Only ckpt/ may include hdf5.h, so damage is done through ckpt/ckpt_debug.h. */

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "config/config.h"
#include "ckpt/ckpt_async.h"
#include "ckpt/ckpt_debug.h"
#include "core/hooks.h"
#include "core/sha256.h"
#include "core/status.h"
#include "core/util.h"
#include "testutil.h"

/* ---- fixtures -------------------------------------------------------------------------------- */

static char tmpdir[256];

static void setup(void)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/check_ckpt.XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    rz_test_rmtree(tmpdir);
}

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A model table shaped like model.c's (wte, wpe, L blocks of 12, ln_f, head) for tiny dims. */
struct tiny {
    struct model_dims dims;
    struct model_tensor table[64];
    struct ckpt_tensors t;
};

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

static void tiny_table(struct tiny *m, int64_t V, int64_t C, int64_t L, int64_t F, int64_t T)
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

/* Deterministic values with awkward bit patterns: -0, denormals, NaN payloads, infinities. */
static void tiny_fill(struct tiny *m, uint32_t seed)
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

static void tiny_alloc(struct tiny *m, uint32_t seed)
{
    m->t.params = calloc(m->t.n_floats, sizeof(float));
    m->t.adam_m = calloc(m->t.n_floats, sizeof(float));
    m->t.adam_v = calloc(m->t.n_floats, sizeof(float));
    ck_assert(m->t.params && m->t.adam_m && m->t.adam_v);
    if (seed != 0)
        tiny_fill(m, seed);
}

static void tiny_free(struct tiny *m)
{
    free(m->t.params);
    free(m->t.adam_m);
    free(m->t.adam_v);
}

static void make_tiny(struct tiny *m, uint32_t seed)
{
    tiny_table(m, 64, 16, 2, 32, 8);
    tiny_alloc(m, seed);
}

static const char yaml_text[] = "model:\n  vocab_size: 64\n  d_model: 16\ntraining:\n  steps: 9\n";

static struct ckpt_meta make_meta(const struct tiny *m, int64_t step)
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

static void save_step(struct tiny *m, int64_t step, char *path, size_t len)
{
    struct ckpt_meta meta = make_meta(m, step);
    struct rz_err err;
    rz_err_clear(&err);
    enum rz_status st = ckpt_save(tmpdir, &meta, &m->t, path, len, &err);
    ck_assert_msg(st == RZ_OK, "save: %s", err.msg);
}

static int64_t step_of(const char *path)
{
    const char *p = strrchr(path, '/');
    long long s = -1;
    if (p == NULL || sscanf(p, "/step-%lld.h5", &s) != 1)
        return -1;
    return s;
}

/* ---- SHA-256 --------------------------------------------------------------------------------- */

static void check_vectors(void)
{
    char hex[65];
    rz_sha256_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    rz_sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    rz_sha256_hex(m448, strlen(m448), hex);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

    /* one million 'a', fed in uneven pieces to exercise the block buffering */
    static char a[1000000];
    memset(a, 'a', sizeof a);
    struct rz_sha256 s;
    uint8_t d[32];
    rz_sha256_init(&s);
    size_t done = 0, piece = 1;
    while (done < sizeof a) {
        size_t n = piece < sizeof a - done ? piece : sizeof a - done;
        rz_sha256_update(&s, a + done, n);
        done += n;
        piece = piece * 3 % 1021 + 1;
    }
    rz_sha256_final(&s, d);
    rz_sha256_to_hex(d, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    rz_sha256_hex(a, sizeof a, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

START_TEST(sha256_fips_vectors)
{
    bool was = rz_sha256_set_accel(false);
    check_vectors();
    rz_sha256_set_accel(true);
    check_vectors();
    rz_sha256_set_accel(was);
}
END_TEST

START_TEST(sha256_accel_matches_portable)
{
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t len = 0; len <= sizeof buf; len += 13) {
        char portable[65], accel[65];
        rz_sha256_set_accel(false);
        rz_sha256_hex(buf, len, portable);
        rz_sha256_set_accel(true);
        rz_sha256_hex(buf, len, accel);
        ck_assert_str_eq(portable, accel);
    }
}
END_TEST

/* ---- core ------------------------------------------------------------------------------------ */

static void assert_meta_equal(const struct ckpt_meta *a, const struct ckpt_meta *b)
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
    ck_assert_str_eq(a->config_yaml, b->config_yaml);
}

START_TEST(round_trip_is_bit_exact)
{
    struct tiny a, b;
    char path[4096], want[4096];
    struct rz_err err;
    make_tiny(&a, 7);
    make_tiny(&b, 0);
    save_step(&a, 1, path, sizeof path);
    path_in(want, sizeof want, "step-00000001.h5");
    ck_assert_str_eq(path, want);
    ck_assert(!exists(strcat(want, ".tmp")));

    struct ckpt_meta in = make_meta(&a, 1), out, only;
    rz_err_clear(&err);
    ck_assert_msg(ckpt_load(path, &out, &b.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert(memcmp(a.t.params, b.t.params, a.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(a.t.adam_m, b.t.adam_m, a.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(a.t.adam_v, b.t.adam_v, a.t.n_floats * sizeof(float)) == 0);
    assert_meta_equal(&in, &out);
    ck_assert_int_eq(out.format_version, CKPT_FORMAT_VERSION);
    ck_assert_str_eq(out.build, PACKAGE_STRING);
    char hex[65];
    ckpt_params_sha256(&a.t, hex);
    ck_assert_str_eq(out.params_sha256, hex);

    ck_assert_msg(ckpt_read_meta(path, &only, &err) == RZ_OK, "%s", err.msg);
    assert_meta_equal(&out, &only);
    ck_assert_str_eq(only.params_sha256, hex);
    ck_assert_int_eq(ckpt_verify(path, &err), RZ_OK);
    ckpt_meta_free(&out);
    ckpt_meta_free(&only);
    ck_assert_ptr_null(out.config_yaml);
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

/* ZeRO: moments that come tensor by tensor from a fetch callback make the same file as whole
 * buffers, and a load that keeps only a part of the layout gets exactly that part. */
struct fetch_log {
    const struct tiny *from;
    int calls, fail_at;
    int order_ok;
};

static enum rz_status fetch_from(void *user, int which, size_t index, float *out,
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

START_TEST(sharded_moments_same_file_and_part_loads)
{
    struct tiny a, b;
    char whole[4096], fetched[4096];
    struct rz_err err;
    make_tiny(&a, 11);
    make_tiny(&b, 0);
    save_step(&a, 1, whole, sizeof whole);
    struct fetch_log log = {.from = &a, .fail_at = -1, .order_ok = 1};
    float *spare_p = b.t.params, *spare_m = b.t.adam_m, *spare_v = b.t.adam_v;
    b.t.params = a.t.params;
    memset(spare_m, 0xff, b.t.n_floats * sizeof(float)); /* must not be written out */
    b.t.moments_sharded = 1;
    b.t.moment_lo = 100;
    b.t.moment_hi = 700;
    b.t.fetch = fetch_from;
    b.t.fetch_user = &log;
    save_step(&b, 2, fetched, sizeof fetched);
    ck_assert_int_eq(log.calls, 2 * (int)a.t.count);
    ck_assert(log.order_ok);
    struct ckpt_meta ma, mb;
    ck_assert_int_eq(ckpt_inspect(whole, &ma, &err), RZ_OK);
    ck_assert_int_eq(ckpt_inspect(fetched, &mb, &err), RZ_OK);
    ck_assert_str_eq(ma.adam_sha256, mb.adam_sha256);
    ck_assert_str_eq(ma.params_sha256, mb.params_sha256);
    ckpt_meta_free(&ma);
    ckpt_meta_free(&mb);
    /* a part of [100, 700): the moments of that part only, in a (600)-float buffer */
    b.t.params = spare_m;
    b.t.adam_m = calloc(600, sizeof(float));
    b.t.adam_v = calloc(600, sizeof(float));
    b.t.fetch = NULL;
    ck_assert_msg(ckpt_load(whole, &mb, &b.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert(memcmp(b.t.adam_m, a.t.adam_m + 100, 600 * sizeof(float)) == 0);
    ck_assert(memcmp(b.t.adam_v, a.t.adam_v + 100, 600 * sizeof(float)) == 0);
    ck_assert(memcmp(spare_m, a.t.params, a.t.n_floats * sizeof(float)) == 0);
    ck_assert_str_eq(mb.adam_sha256, ma.adam_sha256); /* every moment was still read, checked */
    ckpt_meta_free(&mb);
    free(b.t.adam_m);
    free(b.t.adam_v);
    b.t.params = spare_p;
    b.t.adam_m = spare_m;
    b.t.adam_v = spare_v;
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

START_TEST(params_sha256_stable_and_sensitive)
{
    struct tiny a;
    char h1[65], h2[65], h3[65], whole[65], path[4096];
    make_tiny(&a, 3);
    ckpt_params_sha256(&a.t, h1);
    ckpt_params_sha256(&a.t, h2);
    ck_assert_str_eq(h1, h2);
    /* the table is contiguous in buffer order, so it is the hash of the whole buffer */
    rz_sha256_hex(a.t.params, a.t.n_floats * sizeof(float), whole);
    ck_assert_str_eq(h1, whole);
    /* adam state is not part of it */
    a.t.adam_m[5] += 1.0f;
    ckpt_params_sha256(&a.t, h2);
    ck_assert_str_eq(h1, h2);
    /* one bit of one parameter changes it */
    uint32_t bits;
    size_t k = a.table[9].offset + 3;
    memcpy(&bits, &a.t.params[k], sizeof bits);
    bits ^= 1u;
    memcpy(&a.t.params[k], &bits, sizeof bits);
    ckpt_params_sha256(&a.t, h3);
    ck_assert_str_ne(h1, h3);
    save_step(&a, 4, path, sizeof path);
    struct ckpt_meta m;
    struct rz_err err;
    ck_assert_int_eq(ckpt_read_meta(path, &m, &err), RZ_OK);
    ck_assert_str_eq(m.params_sha256, h3);
    ckpt_meta_free(&m);
    tiny_free(&a);
}
END_TEST

START_TEST(find_latest_picks_newest_valid)
{
    struct tiny a;
    char path[4096], found[4096], junk[4096];
    struct rz_err err;
    make_tiny(&a, 5);
    save_step(&a, 5, path, sizeof path);
    save_step(&a, 300, path, sizeof path);
    save_step(&a, 40, path, sizeof path);
    save_step(&a, 123456789, path, sizeof path); /* nine digits still sort numerically */
    save_step(&a, 1000, path, sizeof path);
    /* leftovers that must be ignored */
    const char *ignored[] = {"step-99999999.h5.tmp", "notes.txt", "step-abc.h5", "step-7.h5x"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(ignored); i++) {
        path_in(junk, sizeof junk, ignored[i]);
        FILE *f = fopen(junk, "w");
        ck_assert_ptr_nonnull(f);
        fputs("junk", f);
        fclose(f);
    }
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, NULL, NULL, &err), RZ_OK);
    ck_assert_int_eq(step_of(found), 123456789);
    path_in(junk, sizeof junk, "step-123456789.h5");
    ck_assert_str_eq(found, junk);
    tiny_free(&a);
}
END_TEST

static size_t count_files(const char *dir, const char *suffix)
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

static void truncate_half(const char *path)
{
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(truncate(path, sb.st_size / 2), 0);
}

START_TEST(prune_keeps_n_and_never_the_last_good)
{
    struct tiny a;
    char path[4096], p[4096], q[4096];
    struct rz_err err;
    make_tiny(&a, 9);
    for (int64_t s = 1; s <= 5; s++)
        save_step(&a, s, path, sizeof path);
    path_in(p, sizeof p, "step-00000006.h5.tmp");
    fclose(fopen(p, "w"));
    path_in(q, sizeof q, "quarantine");
    ck_assert_int_eq(rz_mkdirs(q, &err), RZ_OK);
    path_in(q, sizeof q, "quarantine/step-00000000.h5");
    fclose(fopen(q, "w"));

    ck_assert_int_eq(ckpt_prune(tmpdir, 2, NULL, &err), RZ_OK);
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 2);
    ck_assert_uint_eq(count_files(tmpdir, ".tmp"), 0);
    path_in(p, sizeof p, "step-00000004.h5");
    ck_assert(exists(p));
    path_in(p, sizeof p, "step-00000005.h5");
    ck_assert(exists(p));
    ck_assert(exists(q)); /* quarantined files are never touched */

    /* keep 0 still keeps the newest valid one */
    ck_assert_int_eq(ckpt_prune(tmpdir, 0, NULL, &err), RZ_OK);
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 1);
    ck_assert(exists(p));

    /* a damaged newer file does not count: the newest valid one survives keep 1 */
    save_step(&a, 6, path, sizeof path);
    truncate_half(path);
    ck_assert_int_eq(ckpt_prune(tmpdir, 1, NULL, &err), RZ_OK);
    ck_assert(exists(p));
    ck_assert_int_eq(ckpt_verify(p, &err), RZ_OK);
    ck_assert(exists(q));
    /* missing directory: nothing to do */
    path_in(p, sizeof p, "nope");
    ck_assert_int_eq(ckpt_prune(p, 1, NULL, &err), RZ_OK);
    tiny_free(&a);
}
END_TEST

START_TEST(list_reports_steps_sizes_validity)
{
    struct tiny a;
    char p1[4096], p2[4096];
    struct rz_err err;
    struct ckpt_entry *v = NULL;
    size_t n = 0;
    make_tiny(&a, 11);
    save_step(&a, 2, p2, sizeof p2);
    save_step(&a, 1, p1, sizeof p1);
    truncate_half(p2);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_list(tmpdir, &v, &n, &err), RZ_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(v[0].step, 1);
    ck_assert_str_eq(v[0].path, p1);
    ck_assert_int_eq(v[0].valid, 1);
    ck_assert_str_eq(v[0].reason, "");
    struct stat sb;
    ck_assert_int_eq(stat(p1, &sb), 0);
    ck_assert_int_eq(v[0].size_bytes, (int64_t)sb.st_size);
    ck_assert_int_eq(v[0].mtime, (int64_t)sb.st_mtime); /* the file's own, not "near now" */
    ck_assert_int_eq(v[1].step, 2);
    ck_assert_int_eq(v[1].valid, 0);
    ck_assert_msg(strstr(v[1].reason, "truncated") != NULL, "reason: %s", v[1].reason);
    free(v);
    /* listing does not quarantine */
    ck_assert(exists(p2));
    tiny_free(&a);
}
END_TEST

#ifdef RZ_TEST_HOOKS /* configure --enable-test-hooks */
/* ---- crash injection ------------------------------------------------------------------------- */

static const char *const crash_points[3] = {"before_fsync", "before_rename", "before_dirsync"};

START_TEST(crash_during_commit_never_exposes_partial_file)
{
    struct tiny a;
    char p1[4096], found[4096], p2[4096];
    struct rz_err err;
    make_tiny(&a, 13);
    save_step(&a, 1, p1, sizeof p1);
    path_in(p2, sizeof p2, "step-00000002.h5");
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        snprintf(rz_hooks.crash_at, sizeof rz_hooks.crash_at, "ckpt:%s", crash_points[_i]);
        struct ckpt_meta meta = make_meta(&a, 2);
        ckpt_save(tmpdir, &meta, &a.t, NULL, 0, NULL);
        _exit(1); /* the hook did not fire */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 86);

    bool renamed = _i == 2;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", p2);
    ck_assert(exists(tmp) == !renamed);
    ck_assert(exists(p2) == renamed);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, NULL, NULL, &err), RZ_OK);
    ck_assert_str_eq(found, renamed ? p2 : p1);
    ck_assert_int_eq(ckpt_verify(found, &err), RZ_OK);
    ck_assert_int_eq(ckpt_verify(p1, &err), RZ_OK);
    /* the next prune clears the debris */
    ck_assert_int_eq(ckpt_prune(tmpdir, 5, NULL, &err), RZ_OK);
    ck_assert(!exists(tmp));
    ck_assert(exists(p1));
    tiny_free(&a);
}
END_TEST
#endif


/* ---- command line ---------------------------------------------------------------------------- */

struct run_result {
    int rc;
    char *out, *err;
};

/* Run $top_builddir/ryzen-ckpt with up to two arguments; false if it has not been built. */
static bool run_cli(const char *a1, const char *a2, struct run_result *r)
{
    const char *top = getenv("top_builddir");
    char exe[4096], out[4096], errp[4096];
    snprintf(exe, sizeof exe, "%s/ryzen-ckpt", top != NULL ? top : ".");
    if (access(exe, X_OK) != 0) {
        fprintf(stderr, "check_ckpt: NOTE: %s not built; ryzen-ckpt CLI checks skipped\n",
                exe);
        return false;
    }
    path_in(out, sizeof out, "cli.out");
    path_in(errp, sizeof errp, "cli.err");
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(127);
        execl(exe, "ryzen-ckpt", a1, a2, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    r->rc = WEXITSTATUS(status);
    ck_assert_int_eq(rz_read_file(out, &r->out, NULL, NULL), RZ_OK);
    ck_assert_int_eq(rz_read_file(errp, &r->err, NULL, NULL), RZ_OK);
    return true;
}

static void run_free(struct run_result *r)
{
    free(r->out);
    free(r->err);
}

START_TEST(cli_list_info_verify)
{
    struct tiny a;
    char p1[4096], p2[4096], expect[4200], hex[65];
    struct run_result r;
    make_tiny(&a, 17);
    save_step(&a, 1, p1, sizeof p1);
    a.t.params[0] += 1.0f;
    save_step(&a, 2, p2, sizeof p2);
    ckpt_params_sha256(&a.t, hex);
    if (!run_cli("verify", p2, &r)) {
        tiny_free(&a);
        return;
    }
    ck_assert_int_eq(r.rc, 0);
    snprintf(expect, sizeof expect, "%s: ok\n", p2);
    ck_assert_str_eq(r.out, expect);
    run_free(&r);

    ck_assert(run_cli("info", p2, &r));
    ck_assert_int_eq(r.rc, 0);
    snprintf(expect, sizeof expect, "\"params_sha256\":\"%s\"", hex);
    ck_assert_msg(strstr(r.out, expect) != NULL, "info: %s", r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "\"step\":2,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"samples_seen\":103,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"world_size\":3,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"global_batch\":48,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"format_version\":1,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"build\":\"" PACKAGE_STRING "\""));
    ck_assert_ptr_nonnull(strstr(r.out, "\"d_model\":16,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"config_sha256\":\""));
    run_free(&r);

    truncate_half(p2);
    ck_assert(run_cli("list", tmpdir, &r));
    ck_assert_int_eq(r.rc, 0);
    char *l1 = strstr(r.out, "\n1 "), *l2 = strstr(r.out, "\n2 ");
    ck_assert_ptr_nonnull(l1);
    ck_assert_ptr_nonnull(l2);
    ck_assert(l1 < l2);
    ck_assert_ptr_nonnull(strstr(l1, "valid"));
    ck_assert_ptr_nonnull(strstr(l2, "INVALID: "));
    run_free(&r);

    ck_assert(run_cli("verify", p2, &r));
    ck_assert_int_eq(r.rc, 65);
    ck_assert_ptr_nonnull(strstr(r.err, "truncated"));
    ck_assert_str_eq(r.out, "");
    run_free(&r);

    ck_assert(run_cli("info", p2, &r));
    ck_assert_int_eq(r.rc, 65);
    run_free(&r);

    path_in(expect, sizeof expect, "missing.h5");
    ck_assert(run_cli("verify", expect, &r));
    ck_assert_int_eq(r.rc, 65); /* no checkpoint there (74 is for a file that cannot be read) */
    ck_assert_ptr_nonnull(strstr(r.err, "No such file"));
    run_free(&r);

    ck_assert(run_cli("frobnicate", p1, &r));
    ck_assert_int_eq(r.rc, 64);
    ck_assert_ptr_nonnull(strstr(r.err, "usage"));
    run_free(&r);
    tiny_free(&a);
}
END_TEST

/* ---- errors: damage -------------------------------------------------------------------------- */

enum damage { FLIP_BYTE, TRUNCATE, EMPTY, NOT_HDF5, MISSING_DATASET, NEWER_VERSION };

static const char *const damage_reason[] = {
    "dataset /adam_v/h1.mlp.fc.weight: SHA-256 mismatch", "truncated file", "empty file",
    "not an HDF5 file", "missing dataset /adam_m/wpe", "format version 2 is newer"};

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

static void apply_damage(enum damage d, const char *path)
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

struct skips {
    int n;
    char path[4096];
    char reason[8192];
};

START_TEST(prune_trusts_known_files_until_they_change)
{
    struct tiny a;
    char p1[4096], p2[4096], p3[4096];
    struct rz_err err;
    struct ckpt_known known;
    memset(&known, 0, sizeof known);
    make_tiny(&a, 4);
    save_step(&a, 1, p1, sizeof p1);
    save_step(&a, 2, p2, sizeof p2);
    save_step(&a, 3, p3, sizeof p3);
    ck_assert_int_eq(ckpt_prune(tmpdir, 3, &known, &err), RZ_OK);
    ck_assert_uint_eq(known.n, 3); /* each verified once, then known */
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 3);

    /* a changed file (new size) is unknown again: verified, damaged, not counted */
    truncate_half(p3);
    ck_assert_int_eq(ckpt_prune(tmpdir, 2, &known, &err), RZ_OK);
    ck_assert(exists(p1) && exists(p2) && exists(p3));
    ck_assert_uint_eq(known.n, 3);

    /* a known file is not read again: damage that keeps its size and mtime goes unseen here
     * (the load still catches it) and step 1 is pruned behind it */
    struct stat sb;
    ck_assert_int_eq(stat(p2, &sb), 0);
    apply_damage(FLIP_BYTE, p2);
    struct timespec times[2] = {sb.st_atim, sb.st_mtim};
    ck_assert_int_eq(utimensat(AT_FDCWD, p2, times, 0), 0);
    ck_assert_int_eq(ckpt_verify(p2, &err), RZ_ENOCKPT);
    ck_assert_int_eq(ckpt_prune(tmpdir, 1, &known, &err), RZ_OK);
    ck_assert(!exists(p1));
    ck_assert(exists(p2));
    /* without the record the same prune verifies and keeps going: nothing valid is left, so
     * nothing is deleted */
    ck_assert_int_eq(ckpt_prune(tmpdir, 1, NULL, &err), RZ_OK);
    ck_assert(exists(p2) && exists(p3));

    /* the record is bounded: the oldest entry makes room */
    memset(&known, 0, sizeof known);
    for (int i = 0; i < CKPT_KNOWN_MAX + 3; i++)
        ckpt_known_add(&known, p2);
    ck_assert_uint_eq(known.n, CKPT_KNOWN_MAX);
    ck_assert_uint_eq(known.next, 3);
    ckpt_known_add(&known, "/nonexistent/step-00000001.h5"); /* cannot stat: ignored */
    ck_assert_uint_eq(known.n, CKPT_KNOWN_MAX);

    /* ... and holds every file the config lets retention keep, so no kept file is read again
     * at each save: a keep above the record is refused by the config */
    struct cfg c;
    cfg_defaults(&c);
    char set[64];
    snprintf(set, sizeof set, "checkpoint.keep=%d", CKPT_KNOWN_MAX + 1);
    ck_assert_int_ne(cfg_set(&c, set, &err), RZ_OK);
    memset(&known, 0, sizeof known);
    for (int s = 4; s <= 24; s++)
        save_step(&a, s, p1, sizeof p1);
    ck_assert_int_eq(ckpt_prune(tmpdir, 20, &known, &err), RZ_OK);
    ck_assert_uint_ge(known.n, 20); /* all twenty kept, each verified once */
    tiny_free(&a);
}
END_TEST

static void on_skip(void *user, const char *path, const char *reason)
{
    struct skips *s = user;
    s->n++;
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->reason, sizeof s->reason, "%s", reason);
}

START_TEST(damage_is_detected_quarantined_and_skipped)
{
    struct tiny a, b;
    char p1[4096], p2[4096], found[4096], q[4096], note[4200];
    struct rz_err err;
    struct skips sk = {0};
    const char *want = damage_reason[_i];
    make_tiny(&a, 19);
    make_tiny(&b, 0);
    save_step(&a, 1, p1, sizeof p1);
    save_step(&a, 2, p2, sizeof p2);
    apply_damage((enum damage)_i, p2);

    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_verify(p2, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, want) != NULL, "want '%s' in: %s", want, err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, p2));
    struct ckpt_meta m;
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_load(p2, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, want) != NULL, "want '%s' in: %s", want, err.msg);

    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, p1);
    ck_assert_int_eq(sk.n, 1);
    ck_assert_str_eq(sk.path, p2);
    ck_assert_msg(strstr(sk.reason, want) != NULL, "reason: %s", sk.reason);
    ck_assert_ptr_nonnull(strstr(sk.reason, "quarantined as"));
    ck_assert(!exists(p2));
    path_in(q, sizeof q, "quarantine/step-00000002.h5");
    ck_assert(exists(q));
    snprintf(note, sizeof note, "%s.reason", q);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(note, &text, NULL, &err), RZ_OK);
    ck_assert_msg(strstr(text, want) != NULL, "note: %s", text);
    ck_assert_ptr_nonnull(strstr(text, "quarantined_utc: 20"));
    free(text);

    /* the previous checkpoint loads bit-exactly */
    rz_err_clear(&err);
    ck_assert_msg(ckpt_load(p1, &m, &b.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(m.step, 1);
    ck_assert(memcmp(a.t.adam_v, b.t.adam_v, a.t.n_floats * sizeof(float)) == 0);
    ckpt_meta_free(&m);
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

START_TEST(all_damaged_gives_none_and_quarantines_each)
{
    struct tiny a;
    char p[4096], found[4096] = "junk", q[4096];
    struct rz_err err;
    struct skips sk = {0};
    make_tiny(&a, 23);
    save_step(&a, 1, p, sizeof p);
    apply_damage(TRUNCATE, p);
    save_step(&a, 2, p, sizeof p);
    apply_damage(FLIP_BYTE, p);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    ck_assert_int_eq(sk.n, 2);
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 0);
    /* the same name damaged again is quarantined under a distinct name */
    save_step(&a, 1, p, sizeof p);
    apply_damage(EMPTY, p);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    ck_assert_int_eq(sk.n, 3);
    ck_assert_ptr_nonnull(strstr(sk.reason, "quarantine/step-00000001.h5.1"));
    path_in(q, sizeof q, "quarantine");
    ck_assert_uint_eq(count_files(q, ".h5"), 2);
    ck_assert_uint_eq(count_files(q, ".h5.1"), 1);
    ck_assert_uint_eq(count_files(q, ".reason"), 3);
    tiny_free(&a);
}
END_TEST

/* ---- errors: shapes, paths ------------------------------------------------------------------- */

START_TEST(shape_mismatch_is_refused_naming_the_tensor)
{
    struct tiny a, b;
    char path[4096];
    struct ckpt_meta m;
    struct rz_err err;
    make_tiny(&a, 29);
    save_step(&a, 1, path, sizeof path);

    tiny_table(&b, 64, 16, 2, 40, 8); /* d_ff 40 instead of 32 */
    tiny_alloc(&b, 0);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_load(path, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, "'h0.mlp.fc.weight'") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "(32, 16)") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "(40, 16)") != NULL, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    tiny_free(&b);

    tiny_table(&b, 64, 16, 3, 32, 8); /* one more layer */
    tiny_alloc(&b, 0);
    ck_assert_int_eq(ckpt_load(path, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, "file has 30 tensors but the model has 42") != NULL, "%s",
                  err.msg);
    tiny_free(&b);

    tiny_table(&b, 64, 16, 2, 32, 8);
    snprintf(b.table[3].name, sizeof b.table[3].name, "h0.ln_one.bias");
    tiny_alloc(&b, 0);
    ck_assert_int_eq(ckpt_load(path, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, "'h0.ln1.bias' in the file but 'h0.ln_one.bias'") != NULL,
                  "%s", err.msg);
    tiny_free(&b);
    /* the file itself is fine */
    ck_assert_int_eq(ckpt_verify(path, &err), RZ_OK);
    tiny_free(&a);
}
END_TEST

/* The newest committed name, without reading files: temporary files and other names do not
 * count; a damaged file still counts (it was committed; resuming verifies). */
START_TEST(newest_committed_reads_names_only)
{
    struct tiny a;
    char p1[4096], p2[4096], tmp[4200], dir[4096];
    make_tiny(&a, 7);
    path_in(dir, sizeof dir, "no/such/dir");
    ck_assert_int_eq(ckpt_newest_committed(dir), -1);
    ck_assert_int_eq(ckpt_newest_committed(tmpdir), -1);
    save_step(&a, 3, p1, sizeof p1);
    save_step(&a, 12, p2, sizeof p2);
    snprintf(tmp, sizeof tmp, "%s/step-00000099.h5.tmp", tmpdir);
    FILE *f = fopen(tmp, "w");
    fputs("half", f);
    fclose(f);
    ck_assert_int_eq(ckpt_newest_committed(tmpdir), 12);
    ck_assert_int_eq(truncate(p2, 10), 0);
    ck_assert_int_eq(ckpt_newest_committed(tmpdir), 12);
    tiny_free(&a);
}
END_TEST

/* A fetch that fails mid-write: the save fails naming the tensor, leaves no file, and the
 * caller can tell how many fetches were made (train_ckpt.c makes the rest, so no rank waits). */
START_TEST(failed_fetch_fails_the_save)
{
    struct tiny a, b;
    char path[4096];
    struct rz_err err;
    make_tiny(&a, 3);
    make_tiny(&b, 3);
    struct fetch_log log = {.from = &a, .fail_at = 5, .order_ok = 1};
    b.t.moments_sharded = 1;
    b.t.fetch = fetch_from;
    b.t.fetch_user = &log;
    struct ckpt_meta meta = make_meta(&b, 4);
    ck_assert_int_eq(ckpt_save(tmpdir, &meta, &b.t, path, sizeof path, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, "moments of 'h0.attn.qkv.bias': gather failed on "
                                   "purpose") != NULL, "%s", err.msg);
    ck_assert_int_eq(log.calls, 6);
    path_in(path, sizeof path, "step-00000004.h5");
    ck_assert(!exists(path));
    ck_assert(!exists(strcat(path, ".tmp")));
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

START_TEST(missing_directory_is_empty_not_error)
{
    char dir[4096], found[4096] = "junk";
    struct rz_err err;
    struct skips sk = {0};
    path_in(dir, sizeof dir, "no/such/dir");
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(dir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    ck_assert_int_eq(sk.n, 0);
    ck_assert(!exists(dir));
    /* an empty directory too */
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, NULL, NULL, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    /* but listing a missing directory is an I/O error */
    struct ckpt_entry *v = NULL;
    size_t n = 5;
    ck_assert_int_eq(ckpt_list(dir, &v, &n, &err), RZ_EIO);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_nonnull(strstr(err.msg, dir));
}
END_TEST

/* What a checkpoint save did as an unprivileged user (unwritable_directory_is_eio). */
struct unpriv_save {
    enum rz_status status;
    long uid;
    char msg[RZ_ERR_MSG_MAX];
};

/* The uid and gid an unprivileged save runs as: rzuser when it exists (tools/devcluster creates
 * it), else nobody (65534). */
static void unprivileged_ids(uid_t *uid, gid_t *gid)
{
    const struct passwd *pw = getpwnam("rzuser");
    *uid = pw != NULL ? pw->pw_uid : 65534;
    *gid = pw != NULL ? pw->pw_gid : 65534;
}

/* ckpt_save into dir by this user, or, when this process is root (whom permissions do not bind),
 * in a child that has dropped to an unprivileged user and owns dir.  The child reports through a
 * pipe, so the assertions stay in the test process in either of Check's fork modes. */
static struct unpriv_save save_unprivileged(const char *dir, const struct ckpt_meta *meta,
                                            const struct ckpt_tensors *t)
{
    struct unpriv_save r = {.status = RZ_OK, .uid = (long)geteuid()};
    char path[4096];
    struct rz_err err;
    if (geteuid() != 0) {
        rz_err_clear(&err);
        r.status = ckpt_save(dir, meta, t, path, sizeof path, &err);
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        return r;
    }
    uid_t uid;
    gid_t gid;
    unprivileged_ids(&uid, &gid);
    ck_assert_int_eq(chown(dir, uid, gid), 0);
    ck_assert_int_eq(chmod(tmpdir, 0755), 0); /* the child must reach dir */
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0 || geteuid() == 0)
            _exit(90);
        r.uid = (long)geteuid();
        rz_err_clear(&err);
        r.status = ckpt_save(dir, meta, t, path, sizeof path, &err);
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        _exit(write(fds[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 91);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child as uid %ld failed: status "
                  "0x%x (90: could not drop root)", (long)uid, st);
    ck_assert_int_eq(got, (ssize_t)sizeof r);
    return r;
}

START_TEST(unwritable_directory_is_eio)
{
    struct tiny a;
    char file[2048], dir[4096], path[4096];
    struct rz_err err;
    make_tiny(&a, 31);
    struct ckpt_meta meta = make_meta(&a, 1);
    /* a directory below a regular file cannot be created, even by root */
    path_in(file, sizeof file, "plain");
    fclose(fopen(file, "w"));
    snprintf(dir, sizeof dir, "%s/checkpoints", file);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_save(dir, &meta, &a.t, path, sizeof path, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, file) != NULL, "%s", err.msg);
    /* a read-only directory of the user's own: permissions bind every user but root, so as root
     * the save runs in a child that has become an unprivileged user first (never skipped) */
    path_in(dir, sizeof dir, "ro");
    ck_assert_int_eq(mkdir(dir, 0555), 0);
    struct unpriv_save r = save_unprivileged(dir, &meta, &a.t);
    ck_assert_msg(r.status == RZ_EIO, "save into read-only %s as uid %ld: status %d (%s)", dir,
                  r.uid, (int)r.status, r.msg);
    ck_assert_msg(r.uid != 0, "the save ran as root");
    ck_assert_msg(strstr(r.msg, "Permission denied") != NULL, "%s", r.msg);
    ck_assert_msg(strstr(r.msg, dir) != NULL, "%s", r.msg);
    ck_assert_uint_eq(count_files(dir, ".tmp"), 0);
    ck_assert_uint_eq(count_files(dir, ".h5"), 0);
    tiny_free(&a);
}
END_TEST

START_TEST(unreadable_paths_are_eio)
{
    struct tiny a;
    char path[4096];
    struct ckpt_meta m;
    struct rz_err err;
    make_tiny(&a, 0);
    path_in(path, sizeof path, "missing.h5");
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_verify(path, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, "No such file") != NULL && strstr(err.msg, path) != NULL,
                  "%s", err.msg);
    ck_assert_int_eq(ckpt_load(path, &m, &a.t, &err), RZ_EIO);
    ck_assert_int_eq(ckpt_read_meta(path, &m, &err), RZ_EIO);
    ck_assert_int_eq(ckpt_verify(tmpdir, &err), RZ_EIO); /* a directory */
    ck_assert_ptr_nonnull(strstr(err.msg, "not a regular file"));
    tiny_free(&a);
}
END_TEST

/* ---- the background writer (ckpt_async.h) --------------------------------------------------- */

static struct ckpt_writer *writer_of(const struct tiny *m)
{
    struct ckpt_writer *w = NULL;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_msg(ckpt_writer_create(&w, m->t.n_floats, &err) == RZ_OK, "%s", err.msg);
    return w;
}

static void assert_same_file_data(const char *p1, const char *p2)
{
    struct tiny x, y;
    struct ckpt_meta mx, my;
    struct rz_err err;
    make_tiny(&x, 0);
    make_tiny(&y, 0);
    ck_assert_msg(ckpt_load(p1, &mx, &x.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert_msg(ckpt_load(p2, &my, &y.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert(memcmp(x.t.params, y.t.params, x.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(x.t.adam_m, y.t.adam_m, x.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(x.t.adam_v, y.t.adam_v, x.t.n_floats * sizeof(float)) == 0);
    assert_meta_equal(&mx, &my);
    ck_assert_str_eq(mx.params_sha256, my.params_sha256);
    ckpt_meta_free(&mx);
    ckpt_meta_free(&my);
    tiny_free(&x);
    tiny_free(&y);
}

/* The file written behind holds the state at submit, not what the caller's buffers hold once
 * the fence has passed, and is the file a save in line writes. */
START_TEST(async_write_is_the_sync_file_of_the_state_at_submit)
{
    struct tiny a, b;
    char d1[2048], d2[2048], inline_path[4096];
    struct rz_err err;
    make_tiny(&a, 7);
    make_tiny(&b, 7);
    path_in(d1, sizeof d1, "behind");
    path_in(d2, sizeof d2, "inline");
    struct ckpt_meta meta = make_meta(&a, 5);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    rz_err_clear(&err);
    ck_assert_msg(ckpt_writer_submit(w, d1, &meta, &a.t, 3, &known, &err) == RZ_OK, "%s",
                  err.msg);
    ck_assert(ckpt_writer_pending(w));
    ckpt_writer_fence(w);
    tiny_fill(&a, 9); /* what the optimizer would do next */
    struct ckpt_write_result res;
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_msg(res.status == RZ_OK, "%s", res.err.msg);
    ck_assert_int_eq(res.step, 5);
    ck_assert(!ckpt_writer_pending(w));
    ck_assert(!ckpt_writer_wait(w, &res, NULL)); /* nothing left to collect */
    ck_assert_int_eq(ckpt_save(d2, &meta, &b.t, inline_path, sizeof inline_path, &err), RZ_OK);
    assert_same_file_data(res.path, inline_path);
    ck_assert_int_eq(ckpt_verify(res.path, &err), RZ_OK);
    ck_assert_uint_eq(count_files(d1, ".tmp"), 0);
    ckpt_writer_destroy(w);
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

/* ZeRO's form: moments gathered into the writer's buffers make the same file. */
START_TEST(async_sharded_moments_come_from_the_writer_buffers)
{
    struct tiny a;
    char d1[2048], d2[2048], inline_path[4096];
    struct rz_err err;
    make_tiny(&a, 11);
    path_in(d1, sizeof d1, "behind");
    path_in(d2, sizeof d2, "inline");
    struct ckpt_meta meta = make_meta(&a, 2);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    memcpy(ckpt_writer_moment(w, 0), a.t.adam_m, a.t.n_floats * sizeof(float));
    memcpy(ckpt_writer_moment(w, 1), a.t.adam_v, a.t.n_floats * sizeof(float));
    struct ckpt_tensors x = a.t;
    x.moments_sharded = 1;
    x.adam_m = x.adam_v = NULL; /* the writer must not read them */
    x.moment_lo = x.moment_hi = 0;
    rz_err_clear(&err);
    ck_assert_msg(ckpt_writer_submit(w, d1, &meta, &x, 3, &known, &err) == RZ_OK, "%s", err.msg);
    struct ckpt_write_result res;
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_msg(res.status == RZ_OK, "%s", res.err.msg);
    ck_assert_int_eq(ckpt_save(d2, &meta, &a.t, inline_path, sizeof inline_path, &err), RZ_OK);
    assert_same_file_data(res.path, inline_path);
    ckpt_writer_destroy(w);
    tiny_free(&a);
}
END_TEST

/* Retention runs behind too: keep 2 of 4, the newest two. */
START_TEST(async_writes_keep_the_newest)
{
    struct tiny a;
    char dir[2048], want[4096];
    struct rz_err err;
    make_tiny(&a, 3);
    path_in(dir, sizeof dir, "ckpts");
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    for (int64_t step = 1; step <= 4; step++) {
        struct ckpt_meta meta = make_meta(&a, step);
        struct ckpt_write_result res;
        ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 2, &known, &err), RZ_OK);
        ck_assert(ckpt_writer_wait(w, &res, NULL));
        ck_assert_msg(res.status == RZ_OK && !res.prune_failed, "%s %s", res.err.msg,
                      res.prune_msg);
    }
    ck_assert_uint_eq(count_files(dir, ".h5"), 2);
    snprintf(want, sizeof want, "%s/step-00000004.h5", dir);
    ck_assert(exists(want));
    snprintf(want, sizeof want, "%s/step-00000003.h5", dir);
    ck_assert(exists(want));
    ckpt_writer_destroy(w);
    tiny_free(&a);
}
END_TEST

/* Destroying a writer with a write in flight finishes the write: nothing submitted is lost. */
START_TEST(async_destroy_finishes_the_write_in_flight)
{
    struct tiny a;
    char dir[2048], want[4096];
    struct rz_err err;
    make_tiny(&a, 5);
    path_in(dir, sizeof dir, "ckpts");
    struct ckpt_meta meta = make_meta(&a, 8);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 3, &known, &err), RZ_OK);
    ckpt_writer_destroy(w);
    snprintf(want, sizeof want, "%s/step-00000008.h5", dir);
    rz_err_clear(&err);
    ck_assert_msg(ckpt_verify(want, &err) == RZ_OK, "%s", err.msg);
    tiny_free(&a);
}
END_TEST

/* Misuse and a failed write: a second submit before the first is collected and a snapshot of
 * another size are refused, naming why; a write that fails says so in its result, with the path,
 * and leaves no file. */
START_TEST(async_errors_are_reported)
{
    struct tiny a;
    char dir[2048], file[2048], bad[4096];
    struct rz_err err;
    make_tiny(&a, 2);
    path_in(dir, sizeof dir, "ckpts");
    struct ckpt_meta meta = make_meta(&a, 1);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 3, &known, &err), RZ_OK);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 3, &known, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "not collected") != NULL, "%s", err.msg);
    struct ckpt_write_result res;
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_int_eq(res.status, RZ_OK);

    struct ckpt_tensors other = a.t;
    other.n_floats--;
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &other, 3, &known, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "floats") != NULL, "%s", err.msg);
    ck_assert(!ckpt_writer_pending(w));

    path_in(file, sizeof file, "plain"); /* a directory below a regular file cannot exist */
    fclose(fopen(file, "w"));
    snprintf(bad, sizeof bad, "%s/checkpoints", file);
    meta.step = 2;
    ck_assert_int_eq(ckpt_writer_submit(w, bad, &meta, &a.t, 3, &known, &err), RZ_OK);
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_int_eq(res.status, RZ_EIO);
    ck_assert_int_eq(res.step, 2);
    ck_assert_msg(strstr(res.err.msg, file) != NULL, "%s", res.err.msg);
    ckpt_writer_destroy(w);
    tiny_free(&a);
}
END_TEST

static Suite *ckpt_suite(void)
{
    Suite *s = suite_create("ckpt");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, sha256_fips_vectors);
    tcase_add_test(core, sha256_accel_matches_portable);
    tcase_add_test(core, round_trip_is_bit_exact);
    tcase_add_test(core, params_sha256_stable_and_sensitive);
    tcase_add_test(core, sharded_moments_same_file_and_part_loads);
    tcase_add_test(core, find_latest_picks_newest_valid);
    tcase_add_test(core, newest_committed_reads_names_only);
    tcase_add_test(core, prune_keeps_n_and_never_the_last_good);
    tcase_add_test(core, prune_trusts_known_files_until_they_change);
    tcase_add_test(core, list_reports_steps_sizes_validity);
#ifdef RZ_TEST_HOOKS
    tcase_add_loop_test(core, crash_during_commit_never_exposes_partial_file, 0, 3);
#endif
    tcase_add_test(core, cli_list_info_verify);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_loop_test(errors, damage_is_detected_quarantined_and_skipped, FLIP_BYTE,
                        NEWER_VERSION + 1);
    tcase_add_test(errors, all_damaged_gives_none_and_quarantines_each);
    tcase_add_test(errors, shape_mismatch_is_refused_naming_the_tensor);
    tcase_add_test(errors, failed_fetch_fails_the_save);
    tcase_add_test(errors, missing_directory_is_empty_not_error);
    tcase_add_test(errors, unwritable_directory_is_eio);
    tcase_add_test(errors, unreadable_paths_are_eio);
    suite_add_tcase(s, errors);
    TCase *async = rz_test_tcase("async");
    tcase_add_checked_fixture(async, setup, teardown);
    tcase_add_test(async, async_write_is_the_sync_file_of_the_state_at_submit);
    tcase_add_test(async, async_sharded_moments_come_from_the_writer_buffers);
    tcase_add_test(async, async_writes_keep_the_newest);
    tcase_add_test(async, async_destroy_finishes_the_write_in_flight);
    tcase_add_test(async, async_errors_are_reported);
    suite_add_tcase(s, async);
    return s;
}

int main(void)
{
    return rz_test_main(ckpt_suite());
}
