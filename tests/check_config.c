/* check_config: the key table, YAML loading, --set overrides, cross-key validation, the YAML
 * writer (round trip) and the generated reference; every malformed file in tests/configs/bad/
 * with the exact "FILE:LINE:COLUMN: KEY: cause" it must produce, and garbage that must not crash.
 * Input files are found through $top_srcdir (automake runs tests from the build directory). */
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

#include "config/config.h"
#include "config/keys.h"
#include "core/status.h"
#include "core/util.h"
#include "testutil.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static const char *srcdir(void)
{
    const char *d = getenv("top_srcdir");
    return d != NULL && d[0] != '\0' ? d : ".";
}

/* $top_srcdir/rel in a rotating static buffer (two live at a time is enough here). */
static const char *src_path(const char *rel)
{
    static char bufs[2][4096];
    static int which;
    char *b = bufs[which++ % 2];
    snprintf(b, sizeof bufs[0], "%s/%s", srcdir(), rel);
    return b;
}

static const struct cfg_key *key(const char *name)
{
    int i = cfg_key_index(name);
    ck_assert_msg(i >= 0, "no key %s", name);
    return &cfg_keys[i];
}

static int key_i(const char *name)
{
    int i = cfg_key_index(name);
    ck_assert_msg(i >= 0, "no key %s", name);
    return i;
}

/* The value of `name` in c as text (cfg_key_format). */
static const char *value_of(const struct cfg *c, const char *name)
{
    static char buf[CFG_PATH_MAX];
    cfg_key_format(key(name), c, buf, sizeof buf);
    return buf;
}

static void assert_all_equal(const struct cfg *a, const struct cfg *b)
{
    for (size_t i = 0; i < cfg_n_keys; i++) {
        char va[CFG_PATH_MAX], vb[CFG_PATH_MAX];
        cfg_key_format(&cfg_keys[i], a, va, sizeof va);
        cfg_key_format(&cfg_keys[i], b, vb, sizeof vb);
        ck_assert_msg(cfg_key_equal(&cfg_keys[i], a, b), "%s: '%s' != '%s'", cfg_keys[i].name, va,
                      vb);
    }
}

static int count_lines(const char *s)
{
    int n = s[0] != '\0';
    for (; *s != '\0'; s++)
        n += *s == '\n';
    return n;
}

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

/* cfg_write_yaml into a heap string (caller frees). */
static char *yaml_of(const struct cfg *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    cfg_write_yaml(c, f);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

/* ---- core ------------------------------------------------------------------------------- */

START_TEST(defaults_are_the_reference_workload)
{
    struct cfg c;
    cfg_defaults(&c);
    ck_assert_int_eq(c.model.vocab_size, 2048);
    ck_assert_int_eq(c.model.d_model, 256);
    ck_assert_int_eq(c.model.n_heads, 4);
    ck_assert_int_eq(c.model.n_layers, 2);
    ck_assert_int_eq(c.model.d_ff, 512);
    ck_assert_int_eq(c.model.seq_len, 128);
    ck_assert(c.model.ln_eps == 1e-5);
    ck_assert(c.model.init_std == 0.02);
    ck_assert_int_eq(c.training.batch_size, 16);
    ck_assert_int_eq(c.training.grad_accum, 1);
    ck_assert_int_eq(c.training.steps, 100);
    ck_assert_int_eq(c.training.seed, 1234);
    ck_assert_int_eq(c.training.log_interval, 10);
    ck_assert_int_eq(c.training.warmup_bench, 5);
    ck_assert_str_eq(c.training.precision, "fp32");
    ck_assert_str_eq(c.optimizer.name, "adam");
    ck_assert(c.optimizer.lr == 5e-4);
    ck_assert(c.optimizer.beta1 == 0.9);
    ck_assert(c.optimizer.beta2 == 0.999);
    ck_assert(c.optimizer.eps == 1e-8);
    ck_assert(c.optimizer.weight_decay == 0.0);
    ck_assert(c.optimizer.grad_clip == 0.0);
    ck_assert_str_eq(c.optimizer.schedule, "cosine");
    ck_assert_int_eq(c.optimizer.warmup_steps, 0);
    ck_assert(c.optimizer.min_lr_ratio == 0.0);
    ck_assert_str_eq(c.data.kind, "random");
    ck_assert_int_eq(c.data.seed, 1234);
    ck_assert_str_eq(c.data.path, "");
    ck_assert_int_eq(c.data.markov_branching, 8);
    ck_assert_str_eq(c.kernels.backend, "dnnl");
    ck_assert_int_eq(c.checkpoint.interval, 100);
    ck_assert_int_eq(c.checkpoint.keep, 3);
    ck_assert_str_eq(c.checkpoint.mode, "sync");
    ck_assert_str_eq(c.checkpoint.policy, "fixed");
    ck_assert(c.checkpoint.mtbf_s == 0.0);
    ck_assert_str_eq(c.restart.when_stuck, "fail");
    ck_assert_str_eq(c.restart.failures, "requeue");
    ck_assert_int_eq(c.restart.max_restarts, 3);
    ck_assert_int_eq(c.health.sync_check_interval, 50);
    ck_assert_str_eq(c.health.stop_signal, "USR2");
    ck_assert(c.health.watchdog_floor_s == 300.0);
    ck_assert(c.health.watchdog_factor == 10.0);
    ck_assert(c.health.watchdog_checkpoint_s == 1800.0);
    ck_assert(c.comm.bucket_mb == 4.0);
    ck_assert_str_eq(c.source, "");
    for (size_t i = 0; i < cfg_n_keys; i++)
        ck_assert_int_eq(c.origin[i].kind, CFG_ORIGIN_DEFAULT);
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_OK);
    ck_assert_str_eq(err.msg, "");
}
END_TEST

START_TEST(key_table_is_consistent)
{
    struct cfg c;
    cfg_defaults(&c);
    ck_assert_uint_le(cfg_n_keys, CFG_MAX_KEYS);
    ck_assert_uint_eq(cfg_n_keys, 98);
    for (size_t i = 0; i < cfg_n_keys; i++) {
        const struct cfg_key *k = &cfg_keys[i];
        struct rz_err cause;
        rz_err_clear(&cause);
        ck_assert_uint_lt(strlen(k->name), CFG_KEY_NAME_MAX);
        ck_assert_ptr_nonnull(strchr(k->name, '.'));
        ck_assert_ptr_null(strchr(cfg_key_leaf(k), '.'));
        ck_assert_int_eq(cfg_key_index(k->name), (int)i);
        ck_assert_msg(k->doc[0] != '\0' && strchr(k->doc, '|') == NULL, "%s: bad doc", k->name);
        ck_assert_msg(cfg_key_check(k, &c, &cause) == RZ_OK, "%s: %s", k->name, cause.msg);
        if (k->type == CFG_INT || k->type == CFG_FLOAT)
            ck_assert_uint_eq(k->size, 8);
        if (k->type == CFG_ENUM)
            ck_assert_ptr_nonnull(k->choices);
        /* keys of one section are contiguous, and every section has a description */
        size_t n = cfg_key_section_len(k);
        bool documented = false;
        for (size_t s = 0; s < cfg_n_sections; s++)
            documented |= strlen(cfg_sections[s].name) == n &&
                          strncmp(cfg_sections[s].name, k->name, n) == 0;
        ck_assert_msg(documented, "%s: section has no row in cfg_sections", k->name);
        for (size_t j = i + 2; j < cfg_n_keys; j++) {
            bool same_sec = cfg_key_section_len(&cfg_keys[j]) == n &&
                            strncmp(cfg_keys[j].name, k->name, n) == 0;
            bool prev_same = cfg_key_section_len(&cfg_keys[j - 1]) == n &&
                             strncmp(cfg_keys[j - 1].name, k->name, n) == 0;
            ck_assert_msg(!same_sec || prev_same, "%s: section is split in the table", k->name);
        }
    }
    ck_assert_uint_eq(cfg_n_sections, 13);
}
END_TEST

START_TEST(seed_benchmark_is_the_defaults)
{
    struct cfg c, d;
    struct rz_err err;
    rz_err_clear(&err);
    const char *path = src_path("configs/seed_benchmark.yaml");
    ck_assert_msg(cfg_load(&c, path, &err) == RZ_OK, "%s", err.msg);
    cfg_defaults(&d);
    assert_all_equal(&c, &d);
    /* The workload is written out in full; the phase and gate sections belong to the phase
     * configs and stay at their defaults here. */
    const char *workload[] = {"model.", "training.", "optimizer.", "data.", "kernels."};
    for (size_t i = 0; i < cfg_n_keys; i++)
        for (size_t w = 0; w < sizeof workload / sizeof workload[0]; w++)
            if (strncmp(cfg_keys[i].name, workload[w], strlen(workload[w])) == 0)
                ck_assert_msg(c.origin[i].kind == CFG_ORIGIN_FILE,
                              "%s not written out in the file", cfg_keys[i].name);
    ck_assert_str_eq(c.source, path);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_OK);
}
END_TEST

START_TEST(minimal_file_sets_one_key)
{
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_msg(cfg_load(&c, src_path("tests/configs/good/minimal.yaml"), &err) == RZ_OK, "%s",
                  err.msg);
    ck_assert_int_eq(c.model.d_model, 128);
    ck_assert_int_eq(c.model.n_heads, 4);
    ck_assert_int_eq(c.training.steps, 100);
    int i = key_i("model.d_model");
    ck_assert_int_eq(c.origin[i].kind, CFG_ORIGIN_FILE);
    ck_assert_int_eq(c.origin[i].line, 3);
    ck_assert_int_eq(c.origin[i].column, 12);
    ck_assert_int_eq(c.origin[key_i("model.n_heads")].kind, CFG_ORIGIN_DEFAULT);
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_OK);
}
END_TEST

START_TEST(full_file_sets_every_key)
{
    struct cfg c, d;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_msg(cfg_load(&c, src_path("tests/configs/good/full.yaml"), &err) == RZ_OK, "%s",
                  err.msg);
    cfg_defaults(&d);
    for (size_t i = 0; i < cfg_n_keys; i++) {
        ck_assert_msg(!cfg_key_equal(&cfg_keys[i], &c, &d), "%s kept its default",
                      cfg_keys[i].name);
        ck_assert_int_eq(c.origin[i].kind, CFG_ORIGIN_FILE);
    }
    ck_assert_int_eq(c.model.vocab_size, 512);
    ck_assert_int_eq(c.model.n_heads, 3);
    ck_assert(c.model.ln_eps == 1e-6);
    ck_assert_int_eq(c.training.seed, 42);
    ck_assert_str_eq(c.optimizer.name, "adamw");
    ck_assert(c.optimizer.lr == 3e-4);
    ck_assert(c.optimizer.grad_clip == 1.0);
    ck_assert_str_eq(c.optimizer.schedule, "linear");
    ck_assert_str_eq(c.data.kind, "tokens");
    ck_assert_str_eq(c.data.path, "data/train: tokens #1.bin");
    ck_assert_str_eq(c.kernels.backend, "ref");
    ck_assert_str_eq(c.checkpoint.mode, "async");
    ck_assert_str_eq(c.checkpoint.policy, "young_daly");
    ck_assert(c.checkpoint.mtbf_s == 86400.0);
    ck_assert_str_eq(c.restart.when_stuck, "hold");
    ck_assert_str_eq(c.restart.failures, "relaunch");
    ck_assert_int_eq(c.health.sync_check_interval, 0);
    ck_assert_int_eq(c.origin[key_i("health.sync_check_interval")].line, 62);
    /* data.val_fraction and data.val_path exclude each other: one problem, then valid */
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_ECONFIG);
    ck_assert_int_eq(count_lines(err.msg), 1);
    ck_assert_ptr_nonnull(strstr(err.msg, "data.val_fraction = 0.05 ("));
    ck_assert_ptr_nonnull(strstr(err.msg, "are both set; hold out one or the other"));
    c.data.val_path[0] = '\0';
    ck_assert_int_eq(cfg_validate(&c, &err), RZ_OK);
}
END_TEST

START_TEST(empty_documents_mean_defaults)
{
    static const char *const docs[] = {"", "# only a comment\n", "---\n", "---\n...\n", "\n\n"};
    struct cfg c, d;
    struct rz_err err;
    cfg_defaults(&d);
    rz_err_clear(&err);
    ck_assert_msg(cfg_load(&c, src_path("tests/configs/good/empty.yaml"), &err) == RZ_OK, "%s",
                  err.msg);
    assert_all_equal(&c, &d);
    for (size_t i = 0; i < RZ_ARRAY_LEN(docs); i++) {
        ck_assert_msg(cfg_load_string(&c, "e.yaml", docs[i], &err) == RZ_OK, "%s", err.msg);
        assert_all_equal(&c, &d);
        ck_assert_str_eq(c.source, "e.yaml");
    }
    ck_assert_int_eq(cfg_load_string(&c, NULL, "model: {d_model: 64}\n", &err), RZ_OK);
    ck_assert_str_eq(c.source, "<string>");
    ck_assert_int_eq(c.model.d_model, 64);
}
END_TEST

START_TEST(set_overrides_apply)
{
    static const struct {
        const char *assignment, *key, *value;
    } cases[] = {
        {"model.d_model=128", "model.d_model", "128"},
        {"training.seed=-0", "training.seed", "0"},
        {"training.steps=+7", "training.steps", "7"},
        {"training.seed=9223372036854775807", "training.seed", "9223372036854775807"},
        {"optimizer.lr=1e-3", "optimizer.lr", "0.001"},
        {"optimizer.lr=2", "optimizer.lr", "2"},
        {"optimizer.beta2=.95", "optimizer.beta2", "0.95"},
        {"optimizer.name=adamw", "optimizer.name", "adamw"},
        {"optimizer.schedule='constant'", "optimizer.schedule", "constant"},
        {"data.path=/data/a b=c.txt", "data.path", "/data/a b=c.txt"},
        {"data.path=\"quoted: #x\"", "data.path", "quoted: #x"},
        {"data.path=\"\"", "data.path", ""},
        {"kernels.backend=ref", "kernels.backend", "ref"},
    };
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_int_eq(cfg_load(&c, src_path("tests/configs/good/minimal.yaml"), &err), RZ_OK);
    for (size_t i = 0; i < RZ_ARRAY_LEN(cases); i++) {
        ck_assert_msg(cfg_set(&c, cases[i].assignment, &err) == RZ_OK, "%s", err.msg);
        ck_assert_str_eq(value_of(&c, cases[i].key), cases[i].value);
        ck_assert_int_eq(c.origin[key_i(cases[i].key)].kind, CFG_ORIGIN_SET);
    }
    /* keys from the file and defaults keep their origin */
    ck_assert_int_eq(c.origin[key_i("model.n_heads")].kind, CFG_ORIGIN_DEFAULT);
    ck_assert_int_eq(cfg_set(&c, "model.d_model=64", &err), RZ_OK);
    ck_assert_int_eq(c.model.d_model, 64);
}
END_TEST

START_TEST(yaml_round_trips_exactly)
{
    static const char *const sets[] = {
        "optimizer.lr=0.1",
        "optimizer.eps=3.3333333333333331e-07",
        "optimizer.min_lr_ratio=0.30000000000000004",
        "optimizer.beta1=0.99999999999999989",
        "model.init_std=1e-300",
        "optimizer.grad_clip=123456.789",
        "training.seed=9223372036854775807",
        "data.path=a \"quoted\" \\back\\slash: #not-a-comment, caf\xc3\xa9 'x' - [y] {z} *w &v !u",
    };
    struct cfg c, back, d;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_int_eq(cfg_load(&c, src_path("tests/configs/good/full.yaml"), &err), RZ_OK);
    for (size_t i = 0; i < RZ_ARRAY_LEN(sets); i++)
        ck_assert_msg(cfg_set(&c, sets[i], &err) == RZ_OK, "%s: %s", sets[i], err.msg);
    char *text = yaml_of(&c);
    ck_assert_msg(cfg_load_string(&back, "written.yaml", text, &err) == RZ_OK, "%s\n%s", err.msg,
                  text);
    assert_all_equal(&c, &back);
    ck_assert(back.optimizer.eps == 3.3333333333333331e-07);
    ck_assert_ptr_nonnull(strstr(text, "  lr: 0.1\n"));
    ck_assert_ptr_nonnull(strstr(text, "optimizer:\n  name: adamw\n"));
    free(text);
    /* defaults too; and writing the re-read struct gives the same text */
    cfg_defaults(&d);
    text = yaml_of(&d);
    ck_assert_int_eq(cfg_load_string(&back, "d.yaml", text, &err), RZ_OK);
    assert_all_equal(&d, &back);
    char *again = yaml_of(&back);
    ck_assert_str_eq(text, again);
    free(text);
    free(again);
}
END_TEST

START_TEST(reference_lists_every_key)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    cfg_write_reference(f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_ptr_nonnull(strstr(buf, "# Configuration reference"));
    ck_assert_ptr_nonnull(strstr(buf, "generated"));
    for (size_t i = 0; i < cfg_n_keys; i++) {
        char row[128];
        snprintf(row, sizeof row, "\n| `%s` | %s | ", cfg_keys[i].name,
                 cfg_type_name(cfg_keys[i].type));
        ck_assert_msg(strstr(buf, row) != NULL, "reference lacks %s", cfg_keys[i].name);
        ck_assert_ptr_nonnull(strstr(buf, cfg_keys[i].doc));
    }
    for (size_t s = 0; s < cfg_n_sections; s++) {
        char head[64];
        snprintf(head, sizeof head, "\n## %s\n\n%s\n", cfg_sections[s].name, cfg_sections[s].doc);
        ck_assert_msg(strstr(buf, head) != NULL, "reference lacks section %s", cfg_sections[s].name);
    }
    ck_assert_ptr_nonnull(strstr(buf, "| `model.vocab_size` | integer | `2048` | `[2, 16777216]` |"));
    ck_assert_ptr_nonnull(strstr(buf, "| `optimizer.lr` | float | `5e-4` | `(0, 10]` |"));
    ck_assert_ptr_nonnull(strstr(buf, "| `optimizer.beta1` | float | `0.9` | `[0, 1)` |"));
    ck_assert_ptr_nonnull(strstr(buf, "| `optimizer.name` | enum | `adam` | `adam`, `adamw` |"));
    ck_assert_ptr_nonnull(strstr(buf, "`random`, `markov`, `text`, `tokens`"));
    ck_assert_ptr_nonnull(strstr(buf, "| `data.path` | string | `\"\"` |"));
    int rows = 0;
    for (const char *p = buf; (p = strstr(p, "\n| `")) != NULL; p++)
        rows++;
    ck_assert_int_eq(rows, (int)cfg_n_keys);
    free(buf);
}
END_TEST

START_TEST(suggestions_and_distance)
{
    ck_assert_uint_eq(cfg_edit_distance("kitten", 6, "sitting", 7), 3);
    ck_assert_uint_eq(cfg_edit_distance("ab", 2, "ba", 2), 1);
    ck_assert_uint_eq(cfg_edit_distance("", 0, "abc", 3), 3);
    ck_assert_str_eq(cfg_key_suggest("model.d_modle", 13), "model.d_model");
    ck_assert_str_eq(cfg_key_suggest("training.lr", 11), "optimizer.lr");
    ck_assert_str_eq(cfg_key_suggest("lr", 2), "optimizer.lr");
    ck_assert_str_eq(cfg_key_suggest("modle", 5), "model");
    ck_assert_str_eq(cfg_key_suggest("vocab", 5), "model.vocab_size");
    ck_assert_str_eq(cfg_key_suggest("training.bach_size", 18), "training.batch_size");
    ck_assert_str_eq(cfg_key_suggest("data.seed", 9), "data.seed");
    ck_assert_ptr_null(cfg_key_suggest("zzzzzzzz", 8));
    ck_assert_ptr_null(cfg_key_suggest("q", 1));
    ck_assert_ptr_null(cfg_key_suggest("model.", 6));
    ck_assert_str_eq(cfg_key_suggest("model.vocab", 11), "model.vocab_size");
    char near[32];
    ck_assert(cfg_enum_suggest(key("optimizer.schedule"), "cosin", 5, near, sizeof near));
    ck_assert_str_eq(near, "cosine");
    ck_assert(!cfg_enum_suggest(key("kernels.backend"), "cuda", 4, near, sizeof near));
}
END_TEST

START_TEST(validate_accepts_consistent_settings)
{
    static const char *const sets[] = {"data.kind=markov", "data.markov_branching=2048",
                                       "optimizer.warmup_steps=100", "model.n_heads=256",
                                       "model.d_model=512"};
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    cfg_defaults(&c);
    for (size_t i = 0; i < RZ_ARRAY_LEN(sets); i++)
        ck_assert_msg(cfg_set(&c, sets[i], &err) == RZ_OK, "%s", err.msg);
    ck_assert_msg(cfg_validate(&c, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(cfg_set(&c, "data.kind=text", &err), RZ_OK);
    ck_assert_int_eq(cfg_set(&c, "data.path=corpus.txt", &err), RZ_OK);
    ck_assert_msg(cfg_validate(&c, &err) == RZ_OK, "%s", err.msg);
}
END_TEST

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

START_TEST(load_with_overrides_and_phase_name)
{
    struct cfg c;
    struct rz_err err;
    rz_err_clear(&err);
    const char *sets[] = {"training.steps=7", "model.n_heads=8"};
    ck_assert_int_eq(cfg_load_with_overrides(&c, src_path("configs/seed_benchmark.yaml"), sets, 2,
                                             &err), RZ_OK);
    ck_assert_int_eq(c.training.steps, 7);
    ck_assert_int_eq(c.model.n_heads, 8);
    const char *bad[] = {"model.n_heads=3"}; /* 256 % 3 != 0: caught by the validation stage */
    ck_assert_int_eq(cfg_load_with_overrides(&c, src_path("configs/seed_benchmark.yaml"), bad, 1,
                                             &err), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "model.n_heads"));
    char phase[32];
    ck_assert(cfg_phase_name("configs/phase2a_8proc.yaml", phase, sizeof phase));
    ck_assert_str_eq(phase, "phase2a_8proc");
    ck_assert(cfg_phase_name("x.yml", phase, sizeof phase));
    ck_assert_str_eq(phase, "x");
    ck_assert(!cfg_phase_name("a-very-long-name.yaml", phase, 4));
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, defaults_are_the_reference_workload);
    tcase_add_test(core, key_table_is_consistent);
    tcase_add_test(core, load_with_overrides_and_phase_name);
    tcase_add_test(core, seed_benchmark_is_the_defaults);
    tcase_add_test(core, minimal_file_sets_one_key);
    tcase_add_test(core, full_file_sets_every_key);
    tcase_add_test(core, empty_documents_mean_defaults);
    tcase_add_test(core, set_overrides_apply);
    tcase_add_test(core, yaml_round_trips_exactly);
    tcase_add_test(core, reference_lists_every_key);
    tcase_add_test(core, suggestions_and_distance);
    tcase_add_test(core, validate_accepts_consistent_settings);
    suite_add_tcase(s, core);

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
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(config_suite());
}
