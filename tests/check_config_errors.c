/* check_config_errors: the "errors" test case of check_config (check_config.c builds the suite):
 * every malformed file in tests/configs/bad/ with the exact "FILE:LINE:COLUMN: KEY: cause" it
 * must produce, and every file there expected; all problems collected, and too many counted; bad
 * --set overrides; cross-key problems naming both keys, all collected; a missing file; garbage
 * that must not crash, and huge and deep inputs refused.  Fixtures from config_fixtures.c. */

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

#include "config/cfg.h"
#include "core/status.h"
#include "core/util.h"
#include "testutil.h"

#include "config_fixtures.h"

/* Every line reads "FILE:LINE:COLUMN: KEY: cause" with positive LINE and COLUMN. */
static void assert_positioned_lines(const char *msg, const char *file)
{
    size_t flen = strlen(file);
    for (const char *line = msg; line != NULL && *line != '\0';) {
        long ln = 0, col = 0;
        char keybuf[256];
        ck_assert_msg(strncmp(line, file, flen) == 0, "line does not start with %s: %s", file, line);
        int got = sscanf(line + flen, ":%ld:%ld: %255[^: ]: ", &ln, &col, keybuf);
        ck_assert_msg(got == 3 && ln >= 1 && col >= 1, "malformed problem line: %s", line);
        ck_assert_ptr_nonnull(strstr(line + flen, ": "));
        const char *nl = strchr(line, '\n');
        line = nl != NULL ? nl + 1 : NULL;
    }
}

/* Write `len` bytes to a fresh temporary file; returns its path (static). */
static const char *temp_file(const void *data, size_t len)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/check_config_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* ---- errors ----------------------------------------------------------------------------- */

/* Each malformed file with the text after "PATH:" that its message must contain, and a second
 * substring.  "L:C: KEY: " is the position of the offending node and the key it names. */
static const struct bad_case {
    const char *file, *where, *cause;
} bad_cases[] = {
    {"syntax_error.yaml", "4:3: model: ", "YAML syntax error: could not find expected ':'"},
    {"tab_indent.yaml", "2:1: model: ", "YAML syntax error: found character that cannot start"},
    {"unknown_section.yaml", "1:1: modle: ", "unknown section; did you mean 'model'?"},
    {"unknown_key.yaml", "3:3: model.d_modle: ", "unknown key; did you mean 'model.d_model'?"},
    {"misplaced_key.yaml", "2:3: training.lr: ", "unknown key; did you mean 'optimizer.lr'?"},
    {"leaf_at_top.yaml", "1:1: d_model: ", "unknown section; did you mean 'model.d_model'?"},
    {"not_integer.yaml", "2:12: model.d_model: ", "expected an integer, got 'abc'"},
    {"float_for_int.yaml", "2:12: model.n_heads: ", "expected an integer, got '1.5'"},
    {"int_overflow.yaml", "2:10: training.steps: ",
     "expected an integer, got '99999999999999999999' (does not fit in 64 bits)"},
    {"trailing_junk.yaml", "2:12: model.seq_len: ", "expected an integer, got '128abc'"},
    {"quoted_int.yaml", "2:12: model.d_model: ",
     "expected an integer, got the quoted string \"256\""},
    {"not_float.yaml", "2:7: optimizer.lr: ", "expected a number, got 'fast'"},
    {"nonfinite.yaml", "2:7: optimizer.lr: ", "expected a finite number, got '1e999'"},
    {"int_range.yaml", "2:15: model.vocab_size: ", "expected an integer in [2, 16777216], got 1"},
    {"float_range.yaml", "2:10: optimizer.beta1: ", "expected a number in [0, 1), got 1"},
    {"lr_zero.yaml", "2:7: optimizer.lr: ", "expected a number in (0, 10], got 0"},
    {"duplicate_key.yaml", "4:3: model.d_model: ", "duplicate key (first set at 2:3)"},
    {"duplicate_section.yaml", "5:1: model: ", "duplicate section (first at 1:1)"},
    {"section_scalar.yaml", "1:8: model: ", "expected a mapping of keys, got the scalar '5'"},
    {"section_sequence.yaml", "2:3: model: ", "expected a mapping of keys, got a sequence"},
    {"empty_section.yaml", "1:7: model: ", "empty section (expected a mapping of keys)"},
    {"value_mapping.yaml", "3:5: model.d_model: ", "expected a scalar value, got a mapping"},
    {"value_sequence.yaml", "2:12: model.d_model: ", "expected a scalar value, got a sequence"},
    {"anchor.yaml", "2:12: model.d_model: ", "anchors (&width) are not allowed"},
    {"alias.yaml", "3:9: model.d_ff: ", "aliases (*name) are not allowed"},
    {"tag.yaml", "2:12: model.d_model: ", "tags ('tag:yaml.org,2002:int') are not allowed"},
    {"enum_choice.yaml", "2:9: optimizer.name: ",
     "expected one of adam|adamw, got 'adamm'; did you mean 'adam'?"},
    {"enum_far.yaml", "2:12: kernels.backend: ", "expected one of dnnl|ref, got 'cuda'"},
    {"empty_value.yaml", "2:11: model.d_model: ", "empty value (expected an integer)"},
    {"null_string.yaml", "2:9: data.path: ", "empty value (expected a string"},
    {"top_scalar.yaml", "1:1: (document): ", "the top level must be a mapping of sections"},
    {"top_sequence.yaml", "1:1: (document): ",
     "the top level must be a mapping of sections, got a sequence"},
    {"multi_doc.yaml", "3:1: (document): ", "more than one YAML document"},
    {"complex_key.yaml", "1:3: (document): ", "keys must be plain scalars, got a sequence"},
    {"bad_utf8.yaml", "2:14: (document): ", "invalid input: invalid trailing UTF-8 octet"},
    {"control_char.yaml", "2:15: (document): ",
     "invalid input: control characters are not allowed"},
    {"several.yaml", "2:12: model.d_model: ", "expected an integer, got 'abc'"},
};

START_TEST(malformed_files_are_reported_with_position)
{
    const struct bad_case *bc = &bad_cases[_i];
    char rel[256], want[512];
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    snprintf(rel, sizeof rel, "tests/configs/bad/%s", bc->file);
    const char *path = src_path(rel);
    enum rz_status st = cfg_load(&c, path, &err);
    ck_assert_msg(st == RZ_ECONFIG, "%s loaded (status %d)", bc->file, (int)st);
    ck_assert_int_eq(err.status, RZ_ECONFIG);
    ck_assert_int_eq(rz_exit_code(st), 64);
    snprintf(want, sizeof want, "%s:%s%s", path, bc->where, bc->cause);
    ck_assert_msg(strstr(err.msg, want) != NULL, "%s:\n  want: %s\n  got:  %s", bc->file, want,
                  err.msg);
    assert_positioned_lines(err.msg, path);
}
END_TEST

START_TEST(every_bad_file_has_an_expectation)
{
    DIR *d = opendir(src_path("tests/configs/bad"));
    ck_assert_ptr_nonnull(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        files++;
        bool listed = false;
        for (size_t i = 0; i < RZ_ARRAY_LEN(bad_cases); i++)
            listed |= strcmp(bad_cases[i].file, e->d_name) == 0;
        ck_assert_msg(listed, "tests/configs/bad/%s has no entry in bad_cases", e->d_name);
    }
    closedir(d);
    ck_assert_int_eq(files, (int)RZ_ARRAY_LEN(bad_cases));
    ck_assert_int_ge(files, 20);
}
END_TEST

START_TEST(all_problems_are_collected)
{
    static const char *const lines[] = {
        "several.yaml:2:12: model.d_model: expected an integer, got 'abc'",
        "several.yaml:3:12: model.n_heads: expected an integer in [1, 1024], got 0",
        "several.yaml:4:3: model.d_modle: unknown key; did you mean 'model.d_model'?",
        "several.yaml:6:10: training.steps: expected an integer, got '1.5'",
        "several.yaml:8:9: optimizer.name: expected one of adam|adamw, got 'sgd'",
    };
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_int_eq(cfg_load(&c, src_path("tests/configs/bad/several.yaml"), &err), RZ_ECONFIG);
    ck_assert_int_eq(count_lines(err.msg), 5);
    const char *at = err.msg;
    for (size_t i = 0; i < RZ_ARRAY_LEN(lines); i++) {
        const char *hit = strstr(at, lines[i]);
        ck_assert_msg(hit != NULL, "missing or out of order: %s\nin:\n%s", lines[i], err.msg);
        at = hit + strlen(lines[i]);
    }
    /* a syntax error after other problems keeps them */
    ck_assert_int_eq(cfg_load_string(&c, "s.yaml", "model:\n  d_model: x\n  n_heads: [1\n", &err),
                     RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "s.yaml:2:12: model.d_model: expected an integer"));
    ck_assert_ptr_nonnull(strstr(err.msg, "\ns.yaml:4:1: model: YAML syntax error"));
}
END_TEST

START_TEST(too_many_problems_are_counted)
{
    size_t cap = 64 + 400 * 32, n = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    n += (size_t)snprintf(text + n, cap - n, "model:\n");
    for (int i = 0; i < 400; i++)
        n += (size_t)snprintf(text + n, cap - n, "  bogus_%d: 1\n", i);
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_int_eq(cfg_load_string(&c, "many.yaml", text, &err), RZ_ECONFIG);
    ck_assert_uint_lt(strlen(err.msg), RZ_ERR_MSG_MAX - 1);
    ck_assert_ptr_nonnull(strstr(err.msg, "many.yaml:2:3: model.bogus_0: unknown key"));
    const char *tail = strrchr(err.msg, '\n');
    ck_assert_ptr_nonnull(tail);
    int hidden = 0;
    ck_assert_int_eq(sscanf(tail, "\n(%d more problems not shown)", &hidden), 1);
    ck_assert_int_eq(count_lines(err.msg) - 1 + hidden, 400);
    free(text);
}
END_TEST

START_TEST(bad_overrides_are_rejected)
{
    static const struct {
        const char *assignment, *message;
    } cases[] = {
        {"model.d_model", "--set model.d_model: expected KEY=VALUE"},
        {"=5", "--set =5: expected KEY=VALUE"},
        {"", "--set : expected KEY=VALUE"},
        {"model.d_modle=5", "--set model.d_modle: unknown key; did you mean 'model.d_model'?"},
        {"lr=0.1", "--set lr: unknown key; did you mean 'optimizer.lr'?"},
        {"nothing.like.this=1", "--set nothing.like.this: unknown key (docs/config.md"},
        {"model.d_model=abc", "--set model.d_model: expected an integer, got 'abc'"},
        {"model.d_model=", "--set model.d_model: empty value (expected an integer)"},
        {"model.d_model=\"256\"", "--set model.d_model: expected an integer, got the quoted"},
        {"model.d_model= 256", "--set model.d_model: expected an integer, got ' 256'"},
        {"training.steps=1e3", "--set training.steps: expected an integer, got '1e3'"},
        {"training.seed=-9223372036854775809", "(does not fit in 64 bits)"},
        {"training.seed=-1", "--set training.seed: expected an integer in [0, 9223372036854775807]"},
        {"model.vocab_size=20000000", "--set model.vocab_size: expected an integer in [2, 16777216], got 20000000"},
        {"optimizer.lr=0", "--set optimizer.lr: expected a number in (0, 10], got 0"},
        {"optimizer.lr=nan", "--set optimizer.lr: expected a number, got 'nan'"},
        {"optimizer.lr=inf", "--set optimizer.lr: expected a number, got 'inf'"},
        {"optimizer.lr=0x1p-3", "--set optimizer.lr: expected a number, got '0x1p-3'"},
        {"optimizer.eps=1e-400", "--set optimizer.eps: expected a finite number, got '1e-400'"},
        {"optimizer.beta2=1", "--set optimizer.beta2: expected a number in [0, 1), got 1"},
        {"optimizer.min_lr_ratio=1.5", "expected a number in [0, 1], got 1.5"},
        {"optimizer.name=sgd", "--set optimizer.name: expected one of adam|adamw, got 'sgd'"},
        {"optimizer.schedule=cosin", "got 'cosin'; did you mean 'cosine'?"},
        {"data.kind=", "--set data.kind: empty value"},
        {"data.path=~", "--set data.path: empty value"},
        {"data.path=a\x01" "b", "--set data.path: string is not valid UTF-8 or has control"},
        {"data.path=caf\xe9", "--set data.path: string is not valid UTF-8"},
        {"checkpoint.keep=0", "--set checkpoint.keep: expected an integer in [1, 1000], got 0"},
    };
    struct cfg c, before;
    struct rz_err err;
    cfg_defaults(&c);
    for (size_t i = 0; i < RZ_ARRAY_LEN(cases); i++) {
        rz_err_clear(&err);
        memcpy(&before, &c, sizeof c);
        enum rz_status st = cfg_set(&c, cases[i].assignment, &err);
        ck_assert_msg(st == RZ_ECONFIG, "accepted: %s", cases[i].assignment);
        ck_assert_int_eq(rz_exit_code(st), 64);
        ck_assert_msg(strstr(err.msg, cases[i].message) != NULL, "want: %s\ngot:  %s",
                      cases[i].message, err.msg);
        ck_assert_msg(memcmp(&before, &c, sizeof c) == 0, "failed --set changed the config");
    }
    /* a path longer than the field */
    char *long_set = malloc(CFG_PATH_MAX + 64);
    ck_assert_ptr_nonnull(long_set);
    int n = snprintf(long_set, 64, "data.path=");
    memset(long_set + n, 'p', CFG_PATH_MAX);
    long_set[n + CFG_PATH_MAX] = '\0';
    ck_assert_int_eq(cfg_set(&c, long_set, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "--set data.path: string of 1024 bytes is too long (at most 1023)"));
    free(long_set);
}
END_TEST

START_TEST(cross_key_problems_name_both_keys)
{
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    /* both from the file: reported at n_heads */
    ck_assert_int_eq(cfg_load_string(&c, "h.yaml", "model:\n  d_model: 250\n  n_heads: 3\n", &err),
                     RZ_OK);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_str_eq(err.msg, "h.yaml:3:12: model.n_heads: model.n_heads = 3 (h.yaml:3:12) does "
                              "not divide model.d_model = 250 (h.yaml:2:12); the head size "
                              "d_model/n_heads must be whole");
    /* n_heads from --set */
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_set(&c, "model.n_heads=3", &err), RZ_OK);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "--set model.n_heads: model.n_heads = 3 (--set) does "
                                          "not divide model.d_model = 256 (default)"));
    /* n_heads a default: the line points at d_model, which the user wrote */
    ck_assert_int_eq(cfg_load_string(&c, "h.yaml", "model:\n  d_model: 250\n", &err), RZ_OK);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "h.yaml:2:12: model.d_model: model.n_heads = 4 "
                                          "(default) does not divide model.d_model = 250"));
    /* both defaults (struct edited directly) */
    cfg_defaults(&c);
    c.model.n_heads = 3;
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "(default) model.n_heads: model.n_heads = 3 (default)"));
    ck_assert_int_eq(rz_exit_code(err.status), 64);
}
END_TEST

START_TEST(cross_key_problems_are_all_collected)
{
    static const char *const sets[] = {"data.kind=tokens", "optimizer.warmup_steps=200",
                                       "model.n_heads=3"};
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    cfg_defaults(&c);
    for (size_t i = 0; i < RZ_ARRAY_LEN(sets); i++)
        ck_assert_int_eq(cfg_set(&c, sets[i], &err), RZ_OK);
    c.model.d_model = 100000; /* out of bounds, edited directly: validate re-checks bounds */
    c.optimizer.lr = NAN;
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_int_eq(count_lines(err.msg), 5);
    ck_assert_ptr_nonnull(strstr(err.msg, "(default) model.d_model: expected an integer in "
                                          "[1, 65536], got 100000\n"));
    ck_assert_ptr_nonnull(strstr(err.msg, "(default) optimizer.lr: expected a number in (0, 10], "
                                          "got nan\n"));
    ck_assert_ptr_nonnull(strstr(err.msg, "--set model.n_heads: model.n_heads = 3 (--set) does "
                                          "not divide model.d_model = 100000 (default)"));
    ck_assert_ptr_nonnull(strstr(err.msg, "--set data.kind: data.path = \"\" (default) must name "
                                          "the input file when data.kind = tokens (--set)"));
    ck_assert_ptr_nonnull(strstr(err.msg, "--set optimizer.warmup_steps: optimizer.warmup_steps "
                                          "= 200 (--set) must not exceed training.steps = 100 "
                                          "(default)"));
    /* markov branching beyond the vocabulary */
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_load_string(&c, "m.yaml", "data:\n  kind: markov\n  markov_branching: 4000\n",
                                     &err), RZ_OK);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "m.yaml:3:21: data.markov_branching: "
                                          "data.markov_branching = 4000 (m.yaml:3:21) must not "
                                          "exceed model.vocab_size = 2048 (default)"));
    /* uint16 ids for a vocabulary they cannot reach */
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_load_string(&c, "u.yaml", "model:\n  vocab_size: 70000\ndata:\n  kind: "
                                     "tokens\n  path: x.tok\n  token_dtype: uint16\n", &err), RZ_OK);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "u.yaml:6:16: data.token_dtype: data.token_dtype = "
                                          "uint16 (u.yaml:6:16) cannot hold the ids of "
                                          "model.vocab_size = 70000 (u.yaml:2:15)"));
    snprintf(c.data.token_dtype, sizeof c.data.token_dtype, "uint32");
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_OK);
    /* a validation file for data that has no file */
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_set(&c, "data.val_path=v.tok", &err), RZ_OK);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "data.val_path = \"v.tok\" (--set) needs a file kind, "
                                          "not data.kind = random (default)"));
}
END_TEST

START_TEST(missing_file_is_a_config_error)
{
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    const char *path = src_path("tests/configs/does-not-exist.yaml");
    enum rz_status st = cfg_load(&c, path, &err);
    ck_assert_int_eq(st, RZ_ECONFIG);
    ck_assert_int_eq(rz_exit_code(st), 64);
    char want[4200];
    snprintf(want, sizeof want, "%s: cannot open: %s", path, strerror(ENOENT));
    ck_assert_str_eq(err.msg, want);
    st = cfg_load(&c, src_path("tests/configs"), &err);
    ck_assert_int_eq(st, RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open: "));
}
END_TEST

/* Must return OK or RZ_ECONFIG with a message, never crash (ASan/UBSan builds check the rest). */
static void assert_survives(const void *data, size_t len)
{
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    const char *path = temp_file(data, len);
    enum rz_status st = cfg_load(&c, path, &err);
    unlink(path);
    ck_assert_msg(st == RZ_OK || st == RZ_ECONFIG, "status %d", (int)st);
    if (st == RZ_ECONFIG)
        ck_assert(err.msg[0] != '\0' && strlen(err.msg) < RZ_ERR_MSG_MAX);
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

START_TEST(garbage_never_crashes)
{
    static const char soup[] = "model:training: d_model 12 -[]{},&*!|>'\"#%@`\n\n  \t.eE~?=";
    unsigned char buf[512];
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int iter = 0; iter < 400; iter++) {
        size_t len = xorshift(&s) % sizeof buf;
        for (size_t i = 0; i < len; i++) {
            uint64_t r = xorshift(&s);
            buf[i] = iter % 2 ? (unsigned char)r : (unsigned char)soup[r % (sizeof soup - 1)];
        }
        assert_survives(buf, len);
    }
    static const unsigned char binary[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 0xff, 0xfe, '\n', 0};
    assert_survives(binary, sizeof binary);
    assert_survives("\xff\xfe" "m\0o\0d\0", 8); /* UTF-16 BOM, truncated */
    assert_survives("model:\n  d_model: 2\0" "56\n", 20);
}
END_TEST

START_TEST(huge_and_deep_inputs_are_rejected)
{
    const size_t big = 1u << 20;
    char *text = malloc(big + 64);
    ck_assert_ptr_nonnull(text);
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    /* one very long line */
    memset(text, 'a', big);
    text[big] = '\0';
    ck_assert_int_eq(cfg_load_string(&c, "long.yaml", text, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "long.yaml:1:1: (document): "));
    /* a very long value */
    int n = snprintf(text, 64, "data:\n  path: ");
    memset(text + n, 'p', big);
    text[n + big] = '\0';
    ck_assert_int_eq(cfg_load_string(&c, "long.yaml", text, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "long.yaml:2:9: data.path: string of 1048576 bytes is too long"));
    /* deep nesting, flow and block */
    n = snprintf(text, 64, "model:\n  d_model: ");
    memset(text + n, '[', big);
    text[n + big] = '\0';
    ck_assert_int_eq(cfg_load_string(&c, "deep.yaml", text, &err), RZ_ECONFIG);
    ck_assert_str_eq(err.msg, "deep.yaml:2:12: model.d_model: expected a scalar value, got a "
                              "sequence\ndeep.yaml:2:76: model: nesting deeper than 64 levels; "
                              "giving up");
    memset(text, '{', big);
    ck_assert_int_eq(cfg_load_string(&c, "deep.yaml", text, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "\ndeep.yaml:1:66: (document): nesting deeper than 64"));
    size_t o = 0;
    for (int d = 0; d < 2000 && o + 3000 < big; d++) {
        for (int sp = 0; sp < d; sp++)
            text[o++] = ' ';
        o += (size_t)snprintf(text + o, big - o, "k%d:\n", d);
    }
    text[o] = '\0';
    ck_assert_int_eq(cfg_load_string(&c, "deep.yaml", text, &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "deep.yaml:1:1: k0: unknown section"));
    ck_assert_ptr_nonnull(strstr(err.msg, "\ndeep.yaml:66:66: (document): nesting deeper than 64"));
    free(text);
}
END_TEST

TCase *config_errors_tcase(void)
{
    TCase *errors = rz_test_tcase("errors");
    tcase_add_loop_test(errors, malformed_files_are_reported_with_position, 0,
                        (int)RZ_ARRAY_LEN(bad_cases));
    tcase_add_test(errors, every_bad_file_has_an_expectation);
    tcase_add_test(errors, all_problems_are_collected);
    tcase_add_test(errors, too_many_problems_are_counted);
    tcase_add_test(errors, bad_overrides_are_rejected);
    tcase_add_test(errors, cross_key_problems_name_both_keys);
    tcase_add_test(errors, cross_key_problems_are_all_collected);
    tcase_add_test(errors, missing_file_is_a_config_error);
    tcase_add_test(errors, garbage_never_crashes);
    tcase_add_test(errors, huge_and_deep_inputs_are_rejected);
    return errors;
}
