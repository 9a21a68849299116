/* check_data_files: the file sources, in check_data's "core" test case (check_data.c builds the
 * suite): text and tokens files read back as written, uint32 ids for a vocabulary above 65536,
 * a large file mapped rather than read, the validation windows of a file at its end, and
 * synthetic data's own validation stream beside a separate validation file.  Files are written
 * by data_fixtures.c into the test case's temporary directory. */

#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "data/data.h"

#include "data_fixtures.h"

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

void data_files_tests(TCase *tc)
{
    tcase_add_test(tc, test_text_roundtrip);
    tcase_add_test(tc, test_tokens_roundtrip);
    tcase_add_test(tc, test_tokens_uint32_roundtrip);
    tcase_add_test(tc, test_tokens_file_is_mapped);
    tcase_add_test(tc, test_val_fraction_of_a_file);
    tcase_add_test(tc, test_val_stream_and_file);
}
