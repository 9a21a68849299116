/* check_data_errors: the "errors" test case of check_data (check_data.c builds the suite): every
 * error path, each with its status and a message naming the cause: a missing file, files empty,
 * short, of odd length or with a partial uint32 id, ids too large for the vocabulary, a bad
 * token width, a validation split that leaves too few tokens or a bad validation file, a text
 * file for a small vocabulary, and a bad kind or bad options.  Files are written by
 * data_fixtures.c into the test case's temporary directory. */

#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "data/data.h"
#include "testutil.h"

#include "data_fixtures.h"

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

TCase *data_errors_tcase(void)
{
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
    return errors;
}
