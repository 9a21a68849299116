/* check_data_tok: token files with a header and manifests as data.path, in check_data's "tokfile"
 * test case (check_data.c builds the suite): a header file samples as the headerless file of
 * the same ids; a vocabulary or width that disagrees with the config, and a headerless file
 * with data.token_dtype auto, are refused naming both sides; a manifest of three shards samples
 * exactly as one file of their concatenation (windows straddle shard boundaries, seq.h); the
 * unigram entropy equals a hand-computed value; data_verify catches a changed shard.  Files are
 * written into the test case's temporary directory (data_fixtures.c). */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sha256.h"
#include "core/util.h"
#include "data/data.h"
#include "record/manifest.h"
#include "record/tokfile.h"
#include "testutil.h"

#include "data_fixtures.h"

static const uint8_t tok_sha[32] = {0x5e, 0xed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                                    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
                                    30};

/* tmp_dir/name as a token file with a header of ids[0..n); its path (static, one of 8). */
static const char *write_tokfile(const char *name, uint64_t vocab, unsigned width,
                                 const int32_t *ids, size_t n, char sha_hex[65])
{
    static char paths[8][PATH_LEN];
    static unsigned k;
    char *path = paths[k++ % 8];
    struct tokfile_writer w;
    struct rz_err e = {0};
    snprintf(path, PATH_LEN, "%s/%s", tmp_dir, name);
    ck_assert_msg(tokfile_writer_open(&w, path, width, vocab, tok_sha, &e) == RZ_OK, "%s", e.msg);
    ck_assert_msg(tokfile_writer_append(&w, ids, n, &e) == RZ_OK, "%s", e.msg);
    ck_assert_msg(tokfile_writer_commit(&w, sha_hex, &e) == RZ_OK, "%s", e.msg);
    return path;
}

/* ids[i] = (i * 7 + i / 3) % vocab: not a constant stride, so a window's position shows. */
static void fill_ids(int32_t *ids, size_t n, size_t from, int32_t vocab)
{
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)(((from + i) * 7 + (from + i) / 3) % (size_t)vocab);
}

static void create_fails(const struct data_opts *o, enum rz_status status, const char *a,
                         const char *b)
{
    struct data *d = NULL;
    struct rz_err err = {0};
    enum rz_status rc = data_create(&d, o, &err);
    ck_assert_msg(rc == status, "status %d, wanted %d: %s", rc, status, err.msg);
    ck_assert_ptr_null(d);
    ck_assert_msg(strstr(err.msg, a) != NULL, "message '%s' lacks '%s'", err.msg, a);
    ck_assert_msg(b == NULL || strstr(err.msg, b) != NULL, "message '%s' lacks '%s'", err.msg, b);
}

/* Every training and validation sample of a and b agree. */
static void same_samples(const struct data *a, const struct data *b, int64_t T, uint64_t n)
{
    int32_t x[64], y[64];
    ck_assert_int_le(T + 1, 64);
    for (uint64_t i = 0; i < n; i++) {
        data_sample(a, i, x);
        data_sample(b, i, y);
        ck_assert_msg(memcmp(x, y, (size_t)(T + 1) * sizeof x[0]) == 0, "sample %lu differs",
                      (unsigned long)i);
        if (!data_has_val(a))
            continue;
        data_val_sample(a, i, x);
        data_val_sample(b, i, y);
        ck_assert_msg(memcmp(x, y, (size_t)(T + 1) * sizeof x[0]) == 0,
                      "validation sample %lu differs", (unsigned long)i);
    }
}

/* The same ids with a header (width from it, data.token_dtype auto) and without (uint16):
 * identical samples; the tokenizer's hash comes from the header, "" without one. */
START_TEST(test_header_file_samples_as_headerless)
{
    enum { N = 3000, V = 512, T = 16 };
    static int32_t ids[N];
    static unsigned raw[N];
    char sha[65], want[65];
    fill_ids(ids, N, 0, V);
    for (size_t i = 0; i < N; i++)
        raw[i] = (unsigned)ids[i];
    const char *hdr = write_tokfile("h.tok", V, 0, ids, N, sha);
    const char *bare = write_tokens("bare.tok", raw, N);
    struct data_opts o = make_opts(DATA_TOKENS, V, T, 9, hdr, 0);
    o.token_bytes = 0;
    o.val_fraction = 0.1;
    struct data *a = create_ok(&o);
    o.token_bytes = 2; /* explicit and agreeing: fine */
    struct data *a2 = create_ok(&o);
    o = make_opts(DATA_TOKENS, V, T, 9, bare, 0);
    o.val_fraction = 0.1;
    struct data *b = create_ok(&o);
    same_samples(a, b, T, 2000);
    same_samples(a, a2, T, 50);
    rz_sha256_to_hex(tok_sha, want);
    ck_assert_str_eq(data_tokenizer_sha256(a), want);
    ck_assert_str_eq(data_tokenizer_sha256(b), "");
    ck_assert_ptr_nonnull(strstr(data_describe(a), "(3000 uint16 tokens)"));
    ck_assert_double_eq(data_unigram_entropy(a), data_unigram_entropy(b));
    struct rz_err e = {0};
    ck_assert_int_eq(data_verify(a, &e), RZ_OK);
    data_destroy(a);
    data_destroy(a2);
    data_destroy(b);
}
END_TEST

/* Refusals before training: a header's vocabulary against model.vocab_size (both numbers and
 * the fix), a headerless file with token_dtype auto, a width that disagrees, a token file as
 * text, and the same for data.val_path. */
START_TEST(test_header_refusals)
{
    enum { N = 200, T = 8 };
    static int32_t ids[N];
    char sha[65];
    fill_ids(ids, N, 0, 100);
    const char *big = write_tokfile("x.tok", 4096, 2, ids, N, sha);
    struct data_opts o = make_opts(DATA_TOKENS, 2048, T, 1, big, 0);
    o.token_bytes = 0;
    create_fails(&o, RZ_ECONFIG, "data.path '", "x.tok' was encoded for a vocabulary of 4096 "
                 "tokens, model.vocab_size is 2048: set model.vocab_size: 4096");
    o.vocab_size = 4096;
    o.token_bytes = 4;
    create_fails(&o, RZ_ECONFIG, "x.tok' holds uint16 ids", "data.token_dtype is uint32");
    o.token_bytes = 0;
    o.kind = DATA_TEXT;
    create_fails(&o, RZ_ECONFIG, "x.tok' is a token file", "set data.kind: tokens");

    unsigned raw[N];
    for (size_t i = 0; i < N; i++)
        raw[i] = (unsigned)ids[i];
    const char *bare = write_tokens("bare.tok", raw, N);
    o = make_opts(DATA_TOKENS, 4096, T, 1, bare, 0);
    o.token_bytes = 0;
    create_fails(&o, RZ_ECONFIG, "bare.tok' has no header", "set data.token_dtype: uint16 or "
                 "uint32, or re-encode it with `ryzen-data encode`");

    /* data.val_path: the same checks, naming that key. */
    const char *train = write_tokfile("train.tok", 4096, 2, ids, N, sha);
    o = make_opts(DATA_TOKENS, 4096, T, 1, train, 0);
    o.token_bytes = 0;
    o.val_path = bare;
    create_fails(&o, RZ_ECONFIG, "validation tokens file '", "bare.tok' has no header");
    o.val_path = write_tokfile("val.tok", 8192, 2, ids, N, sha);
    create_fails(&o, RZ_ECONFIG, "data.val_path '", "vocabulary of 8192 tokens, "
                 "model.vocab_size is 4096");
    o.val_path = write_tokfile("val.tok", 4096, 2, ids, N, sha);
    struct data *d = create_ok(&o);
    ck_assert(data_has_val(d));
    data_destroy(d);
}
END_TEST

/* Shards of 50, 70 and 40 tokens and T = 16: many windows straddle a boundary.  A manifest of
 * them samples as the one file of their concatenation, training and validation (val_fraction
 * cuts the concatenation's last tokens), and its tokenizer and entropy are the file's. */
static const char *three_shard_manifest(int32_t *all, size_t *n_all)
{
    static const size_t counts[3] = {50, 70, 40};
    static char names[3][32], mpath[PATH_LEN];
    static struct manifest_shard sh[3];
    struct manifest m = {.vocab_size = 300, .id_width = 2, .n_shards = 3, .shards = sh};
    size_t at = 0;
    rz_sha256_to_hex(tok_sha, m.tokenizer_sha256);
    for (int s = 0; s < 3; s++) {
        fill_ids(all + at, counts[s], at, 300);
        snprintf(names[s], sizeof names[s], "shard-%d.tok", s);
        write_tokfile(names[s], 300, 2, all + at, counts[s], sh[s].sha256);
        sh[s].path = names[s];
        sh[s].tokens = counts[s];
        sh[s].bytes = 128 + 2 * counts[s];
        at += counts[s];
    }
    m.tokens = at;
    *n_all = at;
    snprintf(mpath, sizeof mpath, "%s/manifest.json", tmp_dir);
    struct rz_err e = {0};
    ck_assert_msg(manifest_write(mpath, &m, &e) == RZ_OK, "%s", e.msg);
    return mpath;
}

START_TEST(test_manifest_samples_as_concatenation)
{
    enum { T = 16 };
    int32_t all[160];
    size_t n;
    char sha[65];
    const char *mp = three_shard_manifest(all, &n);
    const char *one = write_tokfile("all.tok", 300, 2, all, n, sha);
    for (int k = 0; k < 2; k++) {
        struct data_opts o = make_opts(DATA_TOKENS, 300, T, 77, mp, 0);
        o.token_bytes = (unsigned)(2 * k); /* auto, then an agreeing uint16 */
        o.val_fraction = k == 0 ? 0.25 : 0.0;
        struct data *a = create_ok(&o);
        o.path = one;
        struct data *b = create_ok(&o);
        same_samples(a, b, T, 3000);
        ck_assert_str_eq(data_tokenizer_sha256(a), data_tokenizer_sha256(b));
        ck_assert_double_eq(data_unigram_entropy(a), data_unigram_entropy(b));
        ck_assert_ptr_nonnull(strstr(data_describe(a), "(3 shards, 160 uint16 tokens)"));
        data_destroy(a);
        data_destroy(b);
    }
    struct data_opts o = make_opts(DATA_TOKENS, 300, T, 77, mp, 0);
    o.token_bytes = 4;
    create_fails(&o, RZ_ECONFIG, "manifest.json' (a manifest) holds uint16 ids",
                 "data.token_dtype is uint32");
    o.token_bytes = 0;
    o.vocab_size = 512;
    create_fails(&o, RZ_ECONFIG, "data.path '", "vocabulary of 300 tokens, model.vocab_size is "
                 "512");
    o.vocab_size = 300;
    o.seq_len = 160;
    create_fails(&o, RZ_EDATA, "has 160 tokens in 3 shards", "needs at least 161");
}
END_TEST

/* data_verify re-hashes the shards: a byte changed in place passes the cheap check at creation
 * but not the preflight's; a shard missing or resized is refused at creation, named. */
START_TEST(test_manifest_verify_and_refusals)
{
    int32_t all[160];
    size_t n;
    const char *mp = three_shard_manifest(all, &n);
    struct data_opts o = make_opts(DATA_TOKENS, 300, 8, 1, mp, 0);
    o.token_bytes = 0;
    struct data *d = create_ok(&o);
    struct rz_err e = {0};
    ck_assert_msg(data_verify(d, &e) == RZ_OK, "%s", e.msg);
    char shard[PATH_LEN];
    snprintf(shard, sizeof shard, "%s/shard-2.tok", tmp_dir);
    FILE *f = fopen(shard, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 200, SEEK_SET), 0);
    fputc(0x01, f);
    fputc(0x00, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(data_verify(d, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, "shard-2.tok' (3 of 3) changed"), "%s", e.msg);
    data_destroy(d);
    d = create_ok(&o); /* the cheap check at creation does not read every byte */
    data_destroy(d);
    f = fopen(shard, "ab");
    ck_assert_ptr_nonnull(f);
    fputc(0, f);
    fputc(0, f);
    fclose(f);
    create_fails(&o, RZ_EDATA, "shard-2.tok' (3 of 3) changed size", "the file has 210");
    unlink(shard);
    create_fails(&o, RZ_EDATA, "shard-2.tok' (3 of 3 in the manifest) is missing", NULL);
    /* A manifest as data.val_path is verified too. */
    static int32_t ids[100];
    char sha[65];
    fill_ids(ids, 100, 0, 300);
    o.path = write_tokfile("train.tok", 300, 2, ids, 100, sha);
    o.val_path = mp;
    create_fails(&o, RZ_EDATA, "shard-2.tok", "missing");
}
END_TEST

/* The unigram entropy of the training split, by hand: ids 0 0 0 0 1 1 2 3 (p = 1/2, 1/4, 1/8,
 * 1/8): H = 1.75 ln 2 nats; the held-out tail (four 5s) does not count.  The same bytes as a
 * text file; a synthetic source has none. */
START_TEST(test_unigram_entropy_by_hand)
{
    static const int32_t ids[12] = {0, 0, 1, 0, 2, 1, 0, 3, 5, 5, 5, 5};
    const double want = 1.75 * log(2.0);
    char sha[65];
    struct data_opts o = make_opts(DATA_TOKENS, 16, 1, 1, write_tokfile("u.tok", 16, 2, ids, 12,
                                                                       sha), 0);
    o.token_bytes = 0;
    o.val_fraction = 0.34; /* floor(0.34 * 12) = 4 held out */
    struct data *d = create_ok(&o);
    ck_assert_double_eq_tol(data_unigram_entropy(d), want, 1e-12);
    data_destroy(d);
    o.val_fraction = 0.0; /* all 12: 5/12, 2/12, 1/12, 1/12, 4/12 */
    d = create_ok(&o);
    double all = 0.0;
    static const double c[5] = {4, 2, 1, 1, 4};
    for (int k = 0; k < 5; k++)
        all -= c[k] / 12.0 * log(c[k] / 12.0);
    ck_assert_double_eq_tol(data_unigram_entropy(d), all, 1e-12);
    data_destroy(d);
    o = make_opts(DATA_TEXT, 256, 1, 1, write_file("u.txt", "aabacabd", 8), 0);
    d = create_ok(&o);
    ck_assert_double_eq_tol(data_unigram_entropy(d), want, 1e-12);
    ck_assert_str_eq(data_tokenizer_sha256(d), "");
    data_destroy(d);
    o = make_opts(DATA_RANDOM, 64, 4, 1, NULL, 0);
    d = create_ok(&o);
    ck_assert_double_lt(data_unigram_entropy(d), 0.0);
    struct rz_err e = {0};
    ck_assert_int_eq(data_verify(d, &e), RZ_OK);
    data_destroy(d);
}
END_TEST

TCase *data_tok_tcase(void)
{
    TCase *tc = rz_test_tcase("tokfile");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_header_file_samples_as_headerless);
    tcase_add_test(tc, test_header_refusals);
    tcase_add_test(tc, test_manifest_samples_as_concatenation);
    tcase_add_test(tc, test_manifest_verify_and_refusals);
    tcase_add_test(tc, test_unigram_entropy_by_hand);
    return tc;
}
