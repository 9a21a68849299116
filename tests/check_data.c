/* check_data.c: tests of src/data/: determinism, ranges, the statistics of the random and markov
 * sources against their known distributions, file round-trips, speed, and every error path.
 *
 * Input files are written by the tests into one mkdtemp directory per TCase, removed in teardown.
 * Not tested here: sharding across ranks (the trainer's concern; data only maps index -> sample). */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "core/util.h"
#include "data/data.h"
#include "data/data_internal.h"
#include "testutil.h"

#define PATH_LEN 512

static char tmp_dir[64];
static char tmp_files[16][PATH_LEN]; /* paths handed out by write_file, reused round-robin */
static unsigned n_tmp_files;

/* Unchecked fixture: runs in the parent process, so the directory is removed even when a test
 * fails or crashes in its forked child (which is why teardown lists the directory rather than
 * trusting a record kept by the child). */
static void setup(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/check_data.XXXXXX");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        tmp_dir[0] = '\0';
    }
}

static void teardown(void)
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

/* Write `len` bytes to tmp_dir/name; returns the path (valid for the next 15 calls). */
static const char *write_file(const char *name, const void *bytes, size_t len)
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

/* A tokens file of the ids ids[0..n) as little-endian uint16. */
static const char *write_tokens(const char *name, const unsigned *ids, size_t n)
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

/* A tokens file of the ids ids[0..n) as little-endian uint32. */
static const char *write_tokens32(const char *name, const uint32_t *ids, size_t n)
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

static struct data_opts make_opts(enum data_kind kind, int64_t vocab, int64_t seq_len,
                                  uint64_t seed, const char *path, int64_t branching)
{
    struct data_opts o = {.kind = kind, .vocab_size = vocab, .seq_len = seq_len, .seed = seed,
                          .path = path, .markov_branching = branching};
    return o;
}

static struct data *create_ok(const struct data_opts *o)
{
    struct data *d = NULL;
    struct rz_err err = {0};
    enum rz_status rc = data_create(&d, o, &err);
    ck_assert_msg(rc == RZ_OK, "data_create failed: %s", err.msg);
    ck_assert_ptr_nonnull(d);
    return d;
}

/* Expect data_create to fail with `status` and a message containing `needle`. */
static void create_fails(const struct data_opts *o, enum rz_status status, const char *needle)
{
    static int sentinel;
    struct data *d = (struct data *)(void *)&sentinel; /* must be reset to NULL */
    struct rz_err err = {0};
    enum rz_status rc = data_create(&d, o, &err);
    ck_assert_int_eq(rc, status);
    ck_assert_int_eq(err.status, status);
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
}

static const char *random_text_file(size_t len, uint64_t seed)
{
    unsigned char *buf = malloc(len);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(data_mix64(seed + i) >> 56);
    const char *path = write_file("text.bin", buf, len);
    free(buf);
    return path;
}

static const char *counting_tokens_file(size_t n)
{
    unsigned *ids = malloc(n * sizeof *ids);
    ck_assert_ptr_nonnull(ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (unsigned)i;
    const char *path = write_tokens("count.tok", ids, n);
    free(ids);
    return path;
}

/* One data_opts per kind, T = 32, seed `seed`. */
static void all_kinds(struct data_opts o[4], uint64_t seed, const char *text, const char *tok)
{
    o[0] = make_opts(DATA_RANDOM, 2048, 32, seed, NULL, 0);
    o[1] = make_opts(DATA_MARKOV, 2048, 32, seed, NULL, 8);
    o[2] = make_opts(DATA_TEXT, 256, 32, seed, text, 0);
    o[3] = make_opts(DATA_TOKENS, 20000, 32, seed, tok, 0);
}

/* ---------------------------------------------------------------- core */

START_TEST(test_kind_parse)
{
    static const char *names[] = {"random", "markov", "text", "tokens"};
    static const enum data_kind kinds[] = {DATA_RANDOM, DATA_MARKOV, DATA_TEXT, DATA_TOKENS};
    for (int i = 0; i < 4; i++) {
        enum data_kind k = DATA_TOKENS;
        struct rz_err err = {0};
        ck_assert_int_eq(data_kind_parse(names[i], &k, &err), RZ_OK);
        ck_assert_int_eq(k, kinds[i]);
    }
}
END_TEST

START_TEST(test_determinism)
{
    const char *text = random_text_file(20000, 5);
    const char *tok = counting_tokens_file(20000);
    struct data_opts o[4], other[4];
    all_kinds(o, 1234, text, tok);
    all_kinds(other, 1235, text, tok);
    int32_t a[33], b[33], c[33], e[33];
    for (int k = 0; k < 4; k++) {
        struct data *d1 = create_ok(&o[k]), *d2 = create_ok(&o[k]), *d3 = create_ok(&other[k]);
        for (uint64_t i = 0; i < 200; i++) {
            data_sample(d1, i, a);
            data_sample(d1, i, b);
            ck_assert_mem_eq(a, b, sizeof a);
            data_sample(d2, i, c);
            ck_assert_mem_eq(a, c, sizeof a);
            data_sample(d3, i, c);
            ck_assert_msg(memcmp(a, c, sizeof a) != 0, "kind %d: seeds 1234, 1235 agree", k);
            data_sample(d1, i + 1, e);
            ck_assert_msg(memcmp(a, e, sizeof a) != 0, "kind %d: samples %d, %d agree", k,
                          (int)i, (int)i + 1);
        }
        data_sample(d1, UINT64_MAX, a); /* far indices are as valid as near ones */
        data_sample(d2, UINT64_MAX, b);
        ck_assert_mem_eq(a, b, sizeof a);
        data_destroy(d1);
        data_destroy(d2);
        data_destroy(d3);
    }
}
END_TEST

START_TEST(test_ids_in_range)
{
    unsigned ids[500];
    unsigned char text[300];
    for (int i = 0; i < 500; i++)
        ids[i] = (unsigned)(i * 7919) % 300; /* every id in [0, 300) */
    for (int i = 0; i < 300; i++)
        text[i] = (unsigned char)(i * 37 % 256); /* every byte value */
    struct data_opts o[] = {
        make_opts(DATA_RANDOM, 7, 64, 3, NULL, 0),
        make_opts(DATA_RANDOM, 1, 64, 3, NULL, 0),
        make_opts(DATA_MARKOV, 5, 64, 3, NULL, 3),
        make_opts(DATA_MARKOV, 1, 64, 3, NULL, 1),
        make_opts(DATA_MARKOV, 9, 64, 3, NULL, 9),
        make_opts(DATA_TEXT, 256, 64, 3, write_file("all.txt", text, 300), 0),
        make_opts(DATA_TOKENS, 300, 64, 3, write_tokens("ids.tok", ids, 500), 0),
    };
    int32_t t[65];
    for (size_t k = 0; k < RZ_ARRAY_LEN(o); k++) {
        struct data *d = create_ok(&o[k]);
        int32_t lo = INT32_MAX, hi = -1;
        for (uint64_t i = 0; i < 2000; i++) {
            data_sample(d, i, t);
            for (int j = 0; j <= 64; j++) {
                lo = t[j] < lo ? t[j] : lo;
                hi = t[j] > hi ? t[j] : hi;
            }
        }
        ck_assert_int_eq(lo, 0);
        ck_assert_int_eq(hi, o[k].vocab_size - 1);
        data_destroy(d);
    }
}
END_TEST

START_TEST(test_random_uniform)
{
    enum { V = 64, T = 128, N = 4000 };
    struct data_opts o = make_opts(DATA_RANDOM, V, T, 42, NULL, 0);
    struct data *d = create_ok(&o);
    int64_t count[V] = {0};
    int32_t t[T + 1];
    for (uint64_t i = 0; i < N; i++) {
        data_sample(d, i, t);
        for (int j = 0; j <= T; j++)
            count[t[j]]++;
    }
    double expect = (double)N * (T + 1) / V, chi2 = 0.0;
    for (int v = 0; v < V; v++)
        chi2 += ((double)count[v] - expect) * ((double)count[v] - expect) / expect;
    /* 63 degrees of freedom: mean 63, sd 11.2; the bounds are ~ +-4 sd */
    ck_assert_double_lt(chi2, 110.0);
    ck_assert_double_gt(chi2, 25.0);
    ck_assert_double_eq_tol(data_entropy_floor(d), log(64.0), 1e-15);
    ck_assert_str_eq(data_describe(d), "random (V=64, seed 42): entropy floor 4.1589 nats/token");
    data_destroy(d);
}
END_TEST

/* data_below: in range and roughly uniform on both paths (32-bit Lemire and 64-bit modulo). */
START_TEST(test_below_uniform)
{
    static const uint64_t ns[] = {1, 10, UINT32_MAX, UINT64_C(1) << 32, (UINT64_C(1) << 32) + 1,
                                  UINT64_C(3) << 62, UINT64_MAX};
    enum { DRAWS = 200000, BUCKETS = 10 };
    for (size_t k = 0; k < RZ_ARRAY_LEN(ns); k++) {
        int64_t count[BUCKETS] = {0};
        for (uint64_t i = 0; i < DRAWS; i++) {
            uint64_t v = data_below(data_draw(data_key(9, DATA_STREAM_SAMPLE, k), i), ns[k]);
            ck_assert_uint_lt(v, ns[k]);
            int b = (int)((double)v / (double)ns[k] * BUCKETS);
            count[b < BUCKETS ? b : BUCKETS - 1]++;
        }
        if (ns[k] < BUCKETS)
            continue;
        double expect = (double)DRAWS / BUCKETS, chi2 = 0.0;
        for (int b = 0; b < BUCKETS; b++)
            chi2 += ((double)count[b] - expect) * ((double)count[b] - expect) / expect;
        ck_assert_msg(chi2 < 40.0, "n = %llu: chi2 %.1f over 9 dof", (unsigned long long)ns[k], chi2);
    }
}
END_TEST

/* Every transition allowed; the mean of -ln P(x_{t+1} | x_t) matches the entropy rate. */
START_TEST(test_markov_entropy_floor)
{
    enum { T = 128, N = 4000 };
    struct data_opts o = make_opts(DATA_MARKOV, 2048, T, 1234, NULL, 8);
    struct data *d = create_ok(&o);
    const struct data_markov *m = data_markov_of(d);
    ck_assert_ptr_nonnull(m);
    double floor = data_entropy_floor(d), nll = 0.0;
    ck_assert_double_gt(floor, 0.5);
    ck_assert_double_lt(floor, log(8.0));
    int32_t t[T + 1];
    for (uint64_t i = 0; i < N; i++) {
        data_sample(d, i, t);
        for (int j = 0; j < T; j++) {
            double p = data_markov_prob(m, t[j], t[j + 1]);
            ck_assert_msg(p > 0.0, "sample %d: %d -> %d is not a transition", (int)i, t[j], t[j + 1]);
            nll -= log(p);
        }
    }
    nll /= (double)N * T;
    ck_assert_msg(fabs(nll - floor) < 0.01 * floor, "mean nll %.5f vs floor %.5f", nll, floor);
    char want[128];
    snprintf(want, sizeof want, "markov (V=2048, branching 8, seed 1234): entropy floor %.4f "
             "nats/token", floor);
    ck_assert_str_eq(data_describe(d), want);
    data_destroy(d);
}
END_TEST

/* pi is a distribution, stationary, and the chain has its documented structure. */
START_TEST(test_markov_structure)
{
    enum { V = 64, B = 4 };
    struct data_opts o = make_opts(DATA_MARKOV, V, 16, 1, NULL, B);
    struct data *d = create_ok(&o);
    const struct data_markov *m = data_markov_of(d);
    double pi_sum = 0.0, h = 0.0;
    for (int32_t s = 0; s < V; s++) {
        double row = 0.0, flow = 0.0, hs = 0.0;
        int n_succ = 0;
        for (int32_t x = 0; x < V; x++) {
            double p = data_markov_prob(m, s, x);
            n_succ += p > 0.0;
            row += p;
            hs -= p > 0.0 ? p * log(p) : 0.0;
            flow += data_markov_pi(m, x) * data_markov_prob(m, x, s);
        }
        ck_assert_int_eq(n_succ, B);
        ck_assert_double_eq_tol(row, 1.0, 1e-14);
        ck_assert_double_gt(data_markov_prob(m, s, (s + 1) % V), 0.0);
        ck_assert_double_gt(data_markov_pi(m, s), 0.0);
        ck_assert_double_eq_tol(flow, data_markov_pi(m, s), 1e-14); /* (pi P)_s == pi_s */
        pi_sum += data_markov_pi(m, s);
        h += data_markov_pi(m, s) * hs;
    }
    ck_assert_double_gt(data_markov_prob(m, 0, 0), 0.0);
    ck_assert_double_eq_tol(pi_sum, 1.0, 1e-13);
    ck_assert_double_eq_tol(h, data_entropy_floor(d), 1e-12);
    data_destroy(d);
    o.kind = DATA_RANDOM;
    d = create_ok(&o);
    ck_assert_ptr_null(data_markov_of(d));
    data_destroy(d);
}
END_TEST

/* Transition frequencies against P (within 5 binomial sd), a plug-in estimate of H(X_{t+1} | X_t)
 * from the counts, and the state frequencies at the first and last positions against pi (the
 * samples are stationary). */
START_TEST(test_markov_plugin)
{
    enum { V = 16, B = 4, T = 64, N = 20000 };
    struct data_opts o = make_opts(DATA_MARKOV, V, T, 77, NULL, B);
    struct data *d = create_ok(&o);
    const struct data_markov *m = data_markov_of(d);
    static int64_t pair[V][V];
    int64_t first[V] = {0}, last[V] = {0};
    int32_t t[T + 1];
    for (uint64_t i = 0; i < N; i++) {
        data_sample(d, i, t);
        first[t[0]]++;
        last[t[T]]++;
        for (int j = 0; j < T; j++)
            pair[t[j]][t[j + 1]]++;
    }
    double h = 0.0, total = (double)N * T;
    for (int s = 0; s < V; s++) {
        int64_t row = 0;
        for (int x = 0; x < V; x++)
            row += pair[s][x];
        for (int x = 0; x < V; x++) {
            double p = data_markov_prob(m, s, x), freq = (double)pair[s][x] / (double)row;
            ck_assert_double_le(fabs(freq - p), 5.0 * sqrt(p * (1.0 - p) / (double)row));
            if (pair[s][x] > 0)
                h -= (double)pair[s][x] / total * log(freq);
        }
        ck_assert_double_eq_tol((double)first[s] / N, data_markov_pi(m, s), 0.015);
        ck_assert_double_eq_tol((double)last[s] / N, data_markov_pi(m, s), 0.015);
    }
    double floor = data_entropy_floor(d);
    ck_assert_msg(fabs(h - floor) < 0.03 * floor, "plug-in %.5f vs floor %.5f", h, floor);
    data_destroy(d);
}
END_TEST

START_TEST(test_text_roundtrip)
{
    enum { LEN = 600, T = 16, N = 10000 };
    const char *path = random_text_file(LEN, 11);
    unsigned char bytes[LEN];
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(bytes, 1, LEN, f), LEN);
    fclose(f);
    struct data_opts o = make_opts(DATA_TEXT, 256, T, 3, path, 0);
    struct data *d = create_ok(&o);
    int32_t t[T + 1];
    int lo = LEN, hi = -1;
    for (uint64_t i = 0; i < N; i++) {
        data_sample(d, i, t);
        int found = -1, matches = 0;
        for (int off = 0; off + T < LEN; off++) {
            int same = 1;
            for (int j = 0; j <= T && same; j++)
                same = t[j] == bytes[off + j];
            if (same) {
                found = off;
                matches++;
            }
        }
        ck_assert_int_eq(matches, 1);
        lo = found < lo ? found : lo;
        hi = found > hi ? found : hi;
    }
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(hi, LEN - T - 1); /* offsets are uniform in [0, len - T) */
    ck_assert_double_lt(data_entropy_floor(d), 0.0);
    char want[PATH_LEN + 64];
    snprintf(want, sizeof want, "text file '%s' (600 bytes)", path);
    ck_assert_str_eq(data_describe(d), want);
    data_destroy(d);
}
END_TEST

START_TEST(test_tokens_roundtrip)
{
    enum { N_TOK = 3000, T = 32, N = 20000 };
    const char *path = counting_tokens_file(N_TOK); /* ids up to 2999 exercise the high byte */
    struct data_opts o = make_opts(DATA_TOKENS, N_TOK, T, 8, path, 0); /* max id == V - 1 */
    struct data *d = create_ok(&o);
    int32_t t[T + 1];
    int32_t lo = N_TOK, hi = -1;
    for (uint64_t i = 0; i < N; i++) {
        data_sample(d, i, t);
        for (int j = 0; j <= T; j++)
            ck_assert_int_eq(t[j], t[0] + j);
        lo = t[0] < lo ? t[0] : lo;
        hi = t[0] > hi ? t[0] : hi;
    }
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(hi, N_TOK - T - 1);
    ck_assert_double_lt(data_entropy_floor(d), 0.0);
    char want[PATH_LEN + 64];
    snprintf(want, sizeof want, "tokens file '%s' (3000 uint16 tokens)", path);
    ck_assert_str_eq(data_describe(d), want);
    data_destroy(d);
}
END_TEST

/* A vocabulary above 65536 reads uint32 ids (auto), ids above 65535 included. */
START_TEST(test_tokens_uint32_roundtrip)
{
    enum { N_TOK = 3000, T = 16, V = 100000, BASE = 96000 };
    uint32_t ids[N_TOK];
    for (uint32_t i = 0; i < N_TOK; i++)
        ids[i] = BASE + i; /* the top id is V - 1 */
    const char *path = write_tokens32("wide.tok", ids, N_TOK);
    struct data_opts o = make_opts(DATA_TOKENS, V, T, 8, path, 0);
    struct data *d = create_ok(&o);
    int32_t t[T + 1];
    int32_t hi = -1;
    for (uint64_t i = 0; i < 5000; i++) {
        data_sample(d, i, t);
        ck_assert_int_ge(t[0], BASE);
        for (int j = 0; j <= T; j++)
            ck_assert_int_eq(t[j], t[0] + j);
        hi = t[0] > hi ? t[0] : hi;
    }
    ck_assert_int_eq(hi, BASE + N_TOK - T - 1);
    char want[PATH_LEN + 64];
    snprintf(want, sizeof want, "tokens file '%s' (3000 uint32 tokens)", path);
    ck_assert_str_eq(data_describe(d), want);
    data_destroy(d);
    o.token_bytes = 2; /* the same bytes read as uint16 are other ids: the width is honoured */
    o.vocab_size = 65536;
    d = create_ok(&o);
    data_sample(d, 0, t);
    ck_assert_int_lt(t[0], 65536);
    data_destroy(d);
}
END_TEST

/* A large file is mapped, not read into memory: opening it and sampling from its far end adds
 * far less than its size to the resident set. */
START_TEST(test_tokens_file_is_mapped)
{
    enum { T = 64 };
    const size_t n = (size_t)16 << 20; /* 16 Mi uint16 ids = 32 MiB */
    unsigned char *buf = malloc(2 * n);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = (unsigned char)(i & 0xff);
        buf[2 * i + 1] = (unsigned char)((i >> 8) & 0x7);   /* ids (i mod 2048) */
    }
    const char *path = write_file("large.tok", buf, 2 * n);
    free(buf);
    uint64_t before = rz_rss_bytes();
    struct data_opts o = make_opts(DATA_TOKENS, 2048, T, 3, path, 0);
    struct data *d = create_ok(&o);
    int32_t t[T + 1];
    for (uint64_t i = 0; i < 100; i++) {
        data_sample(d, i, t);
        for (int j = 1; j <= T; j++)
            ck_assert_int_eq(t[j], (t[j - 1] + 1) % 2048);
    }
    uint64_t grown = rz_rss_bytes() - before;
    ck_assert_uint_gt(before, 0);
    ck_assert_msg(grown < ((uint64_t)8 << 20), "RSS grew by %llu bytes for a 32 MiB file",
                  (unsigned long long)grown);
    data_destroy(d);
}
END_TEST

/* val_fraction of a file: validation windows lie in its last tokens, training windows before
 * them, and neither crosses the cut. */
START_TEST(test_val_fraction_of_a_file)
{
    enum { N_TOK = 3000, T = 16, CUT = 2400 };
    const char *path = counting_tokens_file(N_TOK);
    struct data_opts o = make_opts(DATA_TOKENS, N_TOK, T, 8, path, 0);
    o.val_fraction = 0.2;
    struct data *d = create_ok(&o);
    ck_assert(data_has_val(d));
    int32_t t[T + 1], v[T + 1];
    int32_t train_hi = -1, val_lo = N_TOK, val_hi = -1;
    for (uint64_t i = 0; i < 20000; i++) {
        data_sample(d, i, t);
        data_val_sample(d, i, v);
        train_hi = t[0] > train_hi ? t[0] : train_hi;
        val_lo = v[0] < val_lo ? v[0] : val_lo;
        val_hi = v[0] > val_hi ? v[0] : val_hi;
        ck_assert_int_eq(v[T], v[0] + T);
    }
    ck_assert_int_eq(train_hi, CUT - T - 1); /* the last training window ends at CUT - 1 */
    ck_assert_int_eq(val_lo, CUT);
    ck_assert_int_eq(val_hi, N_TOK - T - 1);
    data_val_sample(d, 5, t);
    data_val_sample(d, 5, v);
    ck_assert_int_eq(memcmp(t, v, sizeof t), 0); /* a fixed set: sample j is always the same */
    char want[PATH_LEN + 128];
    snprintf(want, sizeof want, "tokens file '%s' (3000 uint16 tokens); validation: its last 600 "
             "tokens (0.2), held out", path);
    ck_assert_str_eq(data_describe(d), want);
    data_destroy(d);
}
END_TEST

/* Synthetic data holds out a stream of its own; a separate validation file is read as such. */
START_TEST(test_val_stream_and_file)
{
    enum { T = 16 };
    struct data_opts o = make_opts(DATA_MARKOV, 64, T, 5, NULL, 4);
    struct data *d = create_ok(&o);
    ck_assert(!data_has_val(d));
    data_destroy(d);
    o.val_fraction = 0.01;
    d = create_ok(&o);
    ck_assert(data_has_val(d));
    int32_t t[T + 1], v[T + 1];
    int differ = 0;
    for (uint64_t i = 0; i < 50; i++) {
        data_sample(d, i, t);
        data_val_sample(d, i, v);
        differ += memcmp(t, v, sizeof t) != 0;
    }
    ck_assert_int_eq(differ, 50);
    ck_assert_ptr_nonnull(strstr(data_describe(d), "; validation: a sample stream of its own"));
    data_destroy(d);
    unsigned ids[100];
    for (unsigned i = 0; i < 100; i++)
        ids[i] = 1000 + i;
    const char *val = write_tokens("val.tok", ids, 100);
    o = make_opts(DATA_TOKENS, 2048, T, 5, counting_tokens_file(500), 0);
    o.val_path = val;
    d = create_ok(&o);
    for (uint64_t i = 0; i < 200; i++) {
        data_sample(d, i, t);
        data_val_sample(d, i, v);
        ck_assert_int_lt(t[0], 500);
        ck_assert_int_ge(v[0], 1000);
        ck_assert_int_le(v[T], 1099);
    }
    data_destroy(d);
}
END_TEST

/* Sampling speed, judged only against figures measured in the same run, so the checks hold on
 * any CPU, under the sanitizers and under load.  Each figure is the cheapest of SPEED_REPS
 * passes, the passes of the figures compared interleaved: a pass that another process
 * interrupted says nothing about the code, and a slow phase of the machine hits all of them. */
enum { SPEED_TOKENS = 1 << 16, SPEED_REPS = 15, SPEED_MAX_T = 512 };

/* One pass: seconds per token of about SPEED_TOKENS tokens of samples of d (d NULL: the least
 * any sampler must do, one 64-bit draw of the counter-based generator per token, reduced to an
 * id < 2048).  Every pass is about as long, a few milliseconds, so each has the same chance of
 * running uninterrupted on a loaded machine. */
static double speed_pass(const struct data *d, int64_t seq_len, int64_t *sink)
{
    static int32_t t[SPEED_MAX_T + 1];
    uint64_t n = (uint64_t)(SPEED_TOKENS / (seq_len + 1));
    double start = rz_now();
    for (uint64_t i = 0; i < n; i++) {
        if (d != NULL)
            data_sample(d, i, t);
        else
            for (int64_t k = 0; k <= seq_len; k++)
                t[k] = (int32_t)(rz_rand64(i, (uint64_t)k) % 2048u);
        *sink += t[seq_len];
    }
    return (rz_now() - start) / ((double)n * (double)(seq_len + 1));
}

/* best[k]: the cheapest per-token time of source k (NULL: one draw per token). */
static void speed_best(struct data *const *d, const int64_t *seq_len, int n, double *best)
{
    int64_t sink = 0;
    for (int k = 0; k < n; k++)
        best[k] = INFINITY;
    for (int rep = 0; rep < SPEED_REPS; rep++)
        for (int k = 0; k < n; k++)
            best[k] = fmin(best[k], speed_pass(d[k], seq_len[k], &sink));
    ck_assert_int_ne(sink, 0);
}

/* The random kind costs a small constant times one draw per token (measured ~1.1-1.7x here;
 * 16x leaves room for instrumented builds).  A markov sample's tokens form a chain of dependent
 * table lookups, whose cost is memory latency rather than arithmetic, so it is judged by how it
 * scales instead: per token, the same for V = 128 and V = 4096 and for T = 32 and T = 512 (a
 * search linear in V made them 20x, a replay of the chain for each token 6.4x; measured here,
 * 0.9-1.3x under a load of 12 on 2 vCPUs; the bound 3x leaves room for the larger table's cache
 * misses and a sample's fixed cost). */
START_TEST(test_sample_speed)
{
    struct data_opts o[] = {
        make_opts(DATA_RANDOM, 2048, 128, 1, NULL, 0),
        make_opts(DATA_MARKOV, 128, 128, 1, NULL, 8),
        make_opts(DATA_MARKOV, 4096, 128, 1, NULL, 8),
        make_opts(DATA_MARKOV, 2048, 32, 1, NULL, 8),
        make_opts(DATA_MARKOV, 2048, SPEED_MAX_T, 1, NULL, 8),
    };
    enum { N = sizeof o / sizeof o[0] };
    struct data *d[N + 1] = {NULL};
    int64_t seq_len[N + 1];
    double best[N + 1];
    for (int k = 0; k < N; k++) {
        d[k] = create_ok(&o[k]);
        seq_len[k] = o[k].seq_len;
    }
    seq_len[N] = 128; /* d[N] NULL: the draw */
    speed_best(d, seq_len, N + 1, best);
    static const char *const name[] = {"random", "markov V=128", "markov V=4096",
                                       "markov T=32", "markov T=512", "a draw"};
    for (int k = 0; k <= N; k++)
        fprintf(stderr, "check_data: %s: %.2f ns/token\n", name[k], best[k] * 1e9);
    ck_assert_msg(best[0] < 16.0 * best[N], "random: %.2f ns/token, %.1f times a draw (%.2f ns)",
                  best[0] * 1e9, best[0] / best[N], best[N] * 1e9);
    ck_assert_msg(best[2] < 3.0 * best[1], "markov: %.2f ns/token at V=4096, %.1f times V=128 "
                  "(%.2f ns)", best[2] * 1e9, best[2] / best[1], best[1] * 1e9);
    ck_assert_msg(best[4] < 3.0 * best[3], "markov: %.2f ns/token at T=512, %.1f times T=32 "
                  "(%.2f ns)", best[4] * 1e9, best[4] / best[3], best[3] * 1e9);
    for (int k = 0; k < N; k++)
        data_destroy(d[k]);
}
END_TEST

/* ---------------------------------------------------------------- errors */

/* A missing file or a directory as data.path is bad input (exit 64, as ryzen-step refuses the
 * same input before srun), not an I/O error (74): the message names the path and the cause. */
START_TEST(test_err_missing_file)
{
    char path[PATH_LEN];
    snprintf(path, sizeof path, "%s/no-such-file", tmp_dir);
    struct data_opts o = make_opts(DATA_TOKENS, 2048, 16, 1, path, 0);
    create_fails(&o, RZ_EDATA, "no-such-file");
    create_fails(&o, RZ_EDATA, strerror(ENOENT));
    ck_assert_int_eq(rz_exit_code(RZ_EDATA), 64);
    o.kind = DATA_TEXT;
    create_fails(&o, RZ_EDATA, "text file: open '");
    o.path = tmp_dir; /* a directory cannot be read */
    create_fails(&o, RZ_EDATA, tmp_dir);
    create_fails(&o, RZ_EDATA, "is a directory, not a regular file");
    o.kind = DATA_TOKENS;
    create_fails(&o, RZ_EDATA, "tokens file: open '");
    create_fails(&o, RZ_EDATA, "is a directory, not a regular file");
}
END_TEST

START_TEST(test_err_empty_and_short)
{
    const char *empty = write_file("empty", "", 0);
    struct data_opts o = make_opts(DATA_TOKENS, 2048, 16, 1, empty, 0);
    create_fails(&o, RZ_EDATA, "has 0 tokens (0 bytes)");
    o.kind = DATA_TEXT;
    create_fails(&o, RZ_EDATA, "has 0 bytes");
    o.path = write_file("short.txt", "0123456789abcdef", 16); /* T bytes: one short */
    create_fails(&o, RZ_EDATA, "short.txt' has 16 bytes; model.seq_len 16 needs at least 17");
    unsigned ids[16] = {0};
    o.kind = DATA_TOKENS;
    o.path = write_tokens("short.tok", ids, 16);
    create_fails(&o, RZ_EDATA, "short.tok' has 16 tokens");
}
END_TEST

START_TEST(test_err_odd_length)
{
    unsigned char bytes[41] = {0};
    struct data_opts o = make_opts(DATA_TOKENS, 2048, 16, 1, write_file("odd.tok", bytes, 41), 0);
    create_fails(&o, RZ_EDATA, "odd.tok': size 41 bytes is odd");
}
END_TEST

START_TEST(test_err_uint32_partial_id)
{
    unsigned char bytes[42] = {0};
    bytes[40] = 0xab;
    bytes[41] = 0xcd;
    struct data_opts o = make_opts(DATA_TOKENS, 100000, 4, 1, write_file("part.tok", bytes, 42), 0);
    create_fails(&o, RZ_EDATA, "part.tok': size 42 bytes is not a multiple of 4; expected "
                 "little-endian uint32 token ids (4 bytes each): the last 2 byte(s) (0xab 0xcd) "
                 "at byte offset 40 are part of no id");
    unsigned char odd[41] = {0};
    odd[40] = 0x7f;
    o = make_opts(DATA_TOKENS, 2048, 4, 1, write_file("odd1.tok", odd, 41), 0);
    create_fails(&o, RZ_EDATA, "the last 1 byte(s) (0x7f) at byte offset 40");
}
END_TEST

START_TEST(test_err_uint32_id_too_large)
{
    uint32_t ids[100];
    for (uint32_t i = 0; i < 100; i++)
        ids[i] = 70000 + i;
    ids[37] = 4000000000u; /* above INT32_MAX: reported as the unsigned value it is */
    const char *path = write_tokens32("huge.tok", ids, 100);
    struct data_opts o = make_opts(DATA_TOKENS, 100000, 8, 1, path, 0);
    char want[PATH_LEN + 128];
    snprintf(want, sizeof want, "tokens file '%s': token id 4000000000 at token #37 (byte offset "
             "148) is >= model.vocab_size 100000", path);
    create_fails(&o, RZ_EDATA, want);
    ids[37] = 100000; /* exactly V */
    o.path = write_tokens32("edge32.tok", ids, 100);
    create_fails(&o, RZ_EDATA, "token id 100000 at token #37 (byte offset 148)");
}
END_TEST

START_TEST(test_err_token_width)
{
    unsigned ids[64] = {0};
    const char *path = write_tokens("w.tok", ids, 64);
    struct data_opts o = make_opts(DATA_TOKENS, 70000, 8, 1, path, 0);
    o.token_bytes = 2;
    create_fails(&o, RZ_ECONFIG, "uint16 ids cannot reach model.vocab_size 70000");
    o.token_bytes = 3;
    create_fails(&o, RZ_ECONFIG, "3 bytes per id");
    ck_assert_uint_eq(data_token_bytes("uint16"), 2);
    ck_assert_uint_eq(data_token_bytes("uint32"), 4);
    ck_assert_uint_eq(data_token_bytes("auto"), 0);
}
END_TEST

START_TEST(test_err_validation)
{
    struct data_opts o = make_opts(DATA_TOKENS, 2048, 16, 1, counting_tokens_file(100), 0);
    o.val_fraction = 0.1; /* 10 tokens held out: fewer than T + 1 */
    create_fails(&o, RZ_EDATA, "data.val_fraction 0.1 of its 100 tokens leaves 10 for "
                 "validation and 90 for training; each needs at least 17 (T+1)");
    o.val_fraction = 0.9;
    create_fails(&o, RZ_EDATA, "leaves 90 for validation and 10 for training");
    o.val_fraction = 1.0;
    create_fails(&o, RZ_ECONFIG, "data.val_fraction 1 is not in [0, 1)");
    o.val_fraction = 0.5;
    o.val_path = o.path;
    create_fails(&o, RZ_ECONFIG, "data.val_fraction and data.val_path are both set");
    o.val_fraction = 0.0;
    char missing[PATH_LEN];
    snprintf(missing, sizeof missing, "%s/no-val.tok", tmp_dir);
    o.val_path = missing;
    create_fails(&o, RZ_EDATA, "validation tokens file: open '");
    o.val_path = tmp_dir;
    create_fails(&o, RZ_EDATA, "is a directory, not a regular file");
    o = make_opts(DATA_RANDOM, 64, 16, 1, NULL, 0);
    o.val_path = "v.tok";
    create_fails(&o, RZ_ECONFIG, "data.val_path 'v.tok' needs a file kind (text or tokens)");
}
END_TEST

START_TEST(test_err_id_too_large)
{
    unsigned ids[1000];
    for (int i = 0; i < 1000; i++)
        ids[i] = (unsigned)i % 2048;
    ids[617] = 5000;
    ids[700] = 6000; /* only the first bad id is reported */
    const char *path = write_tokens("big.tok", ids, 1000);
    struct data_opts o = make_opts(DATA_TOKENS, 2048, 16, 1, path, 0);
    char want[PATH_LEN + 128];
    snprintf(want, sizeof want, "tokens file '%s': token id 5000 at token #617 (byte offset 1234) "
             "is >= model.vocab_size 2048", path);
    create_fails(&o, RZ_EDATA, want);
    ids[617] = 1;
    ids[700] = 1;
    ids[999] = 2048; /* exactly V, at the very end */
    o.path = write_tokens("edge.tok", ids, 1000);
    create_fails(&o, RZ_EDATA, "token id 2048 at token #999 (byte offset 1998)");
}
END_TEST

START_TEST(test_err_text_small_vocab)
{
    const char *path = random_text_file(100, 1);
    struct data_opts o = make_opts(DATA_TEXT, 255, 16, 1, path, 0);
    create_fails(&o, RZ_ECONFIG, "model.vocab_size 255 is < 256");
    create_fails(&o, RZ_ECONFIG, path);
}
END_TEST

START_TEST(test_err_bad_kind)
{
    static const char *bad[] = {"bogus", "", "Markov", "token"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(bad); i++) {
        enum data_kind k = DATA_RANDOM;
        struct rz_err err = {0};
        ck_assert_int_eq(data_kind_parse(bad[i], &k, &err), RZ_ECONFIG);
        ck_assert_int_eq(err.status, RZ_ECONFIG);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "data.kind '%s'", bad[i]);
        ck_assert_ptr_nonnull(strstr(err.msg, quoted));
        ck_assert_ptr_nonnull(strstr(err.msg, "random, markov, text, tokens"));
    }
    struct data_opts o = make_opts((enum data_kind)9, 16, 16, 1, NULL, 0);
    create_fails(&o, RZ_ECONFIG, "unknown data kind 9");
}
END_TEST

START_TEST(test_err_bad_options)
{
    struct data_opts o = make_opts(DATA_MARKOV, 64, 16, 1, NULL, 0);
    create_fails(&o, RZ_ECONFIG, "data.markov_branching 0 is not in [1, model.vocab_size = 64]");
    o.markov_branching = 65;
    create_fails(&o, RZ_ECONFIG, "data.markov_branching 65");
    o.markov_branching = -3;
    create_fails(&o, RZ_ECONFIG, "data.markov_branching -3");
    o = make_opts(DATA_RANDOM, 0, 16, 1, NULL, 0);
    create_fails(&o, RZ_ECONFIG, "model.vocab_size 0");
    o = make_opts(DATA_RANDOM, INT64_C(1) << 32, 16, 1, NULL, 0);
    create_fails(&o, RZ_ECONFIG, "model.vocab_size 4294967296");
    o = make_opts(DATA_RANDOM, 64, 0, 1, NULL, 0);
    create_fails(&o, RZ_ECONFIG, "model.seq_len 0");
    o = make_opts(DATA_TOKENS, 64, 16, 1, NULL, 0);
    create_fails(&o, RZ_ECONFIG, "data.path is required");
    o = make_opts(DATA_TEXT, 256, 16, 1, "", 0);
    create_fails(&o, RZ_ECONFIG, "create text data: data.path");
}
END_TEST

static Suite *data_suite(void)
{
    Suite *s = suite_create("data");
    TCase *core = rz_test_tcase("core");
    tcase_add_unchecked_fixture(core, setup, teardown);
    tcase_add_test(core, test_kind_parse);
    tcase_add_test(core, test_determinism);
    tcase_add_test(core, test_ids_in_range);
    tcase_add_test(core, test_random_uniform);
    tcase_add_test(core, test_below_uniform);
    tcase_add_test(core, test_markov_entropy_floor);
    tcase_add_test(core, test_markov_structure);
    tcase_add_test(core, test_markov_plugin);
    tcase_add_test(core, test_text_roundtrip);
    tcase_add_test(core, test_tokens_roundtrip);
    tcase_add_test(core, test_tokens_uint32_roundtrip);
    tcase_add_test(core, test_tokens_file_is_mapped);
    tcase_add_test(core, test_val_fraction_of_a_file);
    tcase_add_test(core, test_val_stream_and_file);
    tcase_add_test(core, test_sample_speed);
    suite_add_tcase(s, core);

    TCase *errors = rz_test_tcase("errors");
    tcase_add_unchecked_fixture(errors, setup, teardown);
    tcase_add_test(errors, test_err_missing_file);
    tcase_add_test(errors, test_err_empty_and_short);
    tcase_add_test(errors, test_err_odd_length);
    tcase_add_test(errors, test_err_id_too_large);
    tcase_add_test(errors, test_err_uint32_partial_id);
    tcase_add_test(errors, test_err_uint32_id_too_large);
    tcase_add_test(errors, test_err_token_width);
    tcase_add_test(errors, test_err_validation);
    tcase_add_test(errors, test_err_text_small_vocab);
    tcase_add_test(errors, test_err_bad_kind);
    tcase_add_test(errors, test_err_bad_options);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(data_suite());
}
