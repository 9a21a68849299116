/* check_config: the key table, YAML loading, --set overrides, consistent settings validated,
 * the YAML writer (round trip) and the generated reference, in the "core" test case.  The
 * "errors" test case is check_config_errors.c's: every malformed file in tests/configs/bad/ with
 * the exact "FILE:LINE:COLUMN: KEY: cause" it must produce, bad overrides, cross-key validation,
 * and garbage that must not crash.  Input files are found through $top_srcdir
 * (config_fixtures.c; automake runs tests from the build directory). */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "config/keys.h"
#include "core/status.h"
#include "core/util.h"
#include "testutil.h"

#include "config_fixtures.h"

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
    ck_assert_str_eq(c.restart.failures, "relaunch");
    ck_assert_int_eq(c.restart.max_restarts, 3);
    ck_assert_int_eq(c.health.sync_check_interval, 50);
    ck_assert_str_eq(c.health.stop_signal, "USR2");
    ck_assert(c.health.watchdog_floor_s == 300.0);
    ck_assert(c.health.watchdog_factor == 10.0);
    ck_assert(c.health.watchdog_checkpoint_s == 1800.0);
    ck_assert(c.health.preflight_timeout_s == 120.0);
    ck_assert(c.health.start_timeout_s == 120.0);
    ck_assert_str_eq(c.health.start_rendezvous, "true");
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
    ck_assert_uint_eq(cfg_n_keys, 104);
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
    ck_assert_str_eq(c.restart.failures, "requeue");
    ck_assert_int_eq(c.health.sync_check_interval, 0);
    ck_assert_int_eq(c.origin[key_i("health.sync_check_interval")].line, 63);
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

    suite_add_tcase(s, config_errors_tcase());
    return s;
}

int main(void)
{
    return rz_test_main(config_suite());
}
