/* check_train: end-to-end training runs in-process: convergence to the Markov entropy floor,
 * bit-identical determinism, the metrics and summary files, and error paths. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "train/train.h"
#include "testutil.h"

static char run_root[64];

static void setup(void)
{
    rz_test_tmpdir(run_root, sizeof run_root, "train");
}

static void teardown(void)
{
    rz_test_rmtree(run_root);
}

/* A small model on a small Markov chain: learnable to the floor in a few hundred steps. */
static void small_markov(struct cfg *c)
{
    cfg_defaults(c);
    c->model.vocab_size = 64;
    c->model.d_model = 64;
    c->model.n_heads = 2;
    c->model.n_layers = 1;
    c->model.d_ff = 128;
    c->model.seq_len = 32;
    c->training.batch_size = 16;
    c->training.steps = 300;
    c->training.log_interval = 100;
    snprintf(c->data.kind, sizeof c->data.kind, "markov");
    c->data.markov_branching = 4;
    c->data.seed = 7;
    c->optimizer.lr = 3e-3;
    c->optimizer.warmup_steps = 20;
}

static enum rz_status run(const struct cfg *c, const char *name, float *losses,
                          struct train_result *r, struct rz_err *err)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", run_root, name);
    struct train_opts o = {.cfg = c, .run_dir = dir, .run_id = "test", .log = NULL,
                           .losses = losses};
    return train_run(&o, r, err);
}

START_TEST(markov_loss_reaches_the_entropy_floor)
{
    struct cfg c;
    small_markov(&c);
    struct train_result r;
    struct rz_err e;
    float *losses = calloc((size_t)c.training.steps, sizeof *losses);
    ck_assert_int_eq(run(&c, "markov", losses, &r, &e), RZ_OK);
    ck_assert_double_gt(r.entropy_floor, 0.3);
    ck_assert_double_lt(r.entropy_floor, log(4.0));
    /* starts near ln V and ends within 0.15 nats of the floor (mean of the last 20 steps) */
    ck_assert_double_lt(fabs(r.first_loss - log(64.0)), 0.3);
    double tail = 0;
    for (int i = 280; i < 300; i++)
        tail += (double)losses[i];
    tail /= 20;
    ck_assert_msg(tail - r.entropy_floor < 0.15, "final loss %.4f vs floor %.4f", tail,
                  r.entropy_floor);
    ck_assert_double_gt(tail, r.entropy_floor - 0.05); /* cannot beat the floor */
    free(losses);
}
END_TEST

/* The mean loss of steps [from, to) (0-based). */
static double mean_loss(const float *losses, int from, int to)
{
    double s = 0.0;
    for (int i = from; i < to; i++)
        s += (double)losses[i];
    return s / (to - from);
}

/* bf16 runs with the oneDNN backend where the CPU has avx512_bf16 or AMX, else with the
 * reference backend's emulation, so the test runs on any machine. */
static void bf16_backend(struct cfg *c)
{
    struct kern_ctx *k = NULL;
    snprintf(c->training.precision, sizeof c->training.precision, "bf16");
    if (kern_ctx_create(&k, KERN_DNNL, NULL) != RZ_OK || kern_check_bf16(k, NULL) != RZ_OK)
        snprintf(c->kernels.backend, sizeof c->kernels.backend, "ref");
    kern_ctx_destroy(k);
}

/* bf16 training reaches the same loss as fp32: within 0.05 nats over the last 20 steps. */
START_TEST(bf16_converges_like_fp32)
{
    struct cfg c;
    small_markov(&c);
    struct train_result r;
    struct rz_err e;
    float *l32 = calloc((size_t)c.training.steps, sizeof *l32);
    float *l16 = calloc((size_t)c.training.steps, sizeof *l16);
    ck_assert_int_eq(run(&c, "fp32", l32, &r, &e), RZ_OK);
    bf16_backend(&c);
    ck_assert_msg(run(&c, "bf16", l16, &r, &e) == RZ_OK, "%s", e.msg);
    double t32 = mean_loss(l32, 280, 300), t16 = mean_loss(l16, 280, 300);
    ck_assert_msg(fabs(t16 - t32) < 0.05, "bf16 (%s) final loss %.4f vs fp32 %.4f",
                  c.kernels.backend, t16, t32);
    ck_assert_msg(t16 - r.entropy_floor < 0.15, "bf16 final loss %.4f vs floor %.4f", t16,
                  r.entropy_floor);
    free(l32);
    free(l16);
}
END_TEST

START_TEST(same_config_gives_bit_identical_losses)
{
    const char *backends[3] = {"dnnl", "ref", "bf16"};
    for (int b = 0; b < 3; b++) {
        struct cfg c;
        small_markov(&c);
        c.training.steps = 8;
        c.model.seq_len = 16;
        if (b < 2)
            snprintf(c.kernels.backend, sizeof c.kernels.backend, "%s", backends[b]);
        else
            bf16_backend(&c);
        float l1[8], l2[8];
        struct train_result r;
        char dir1[32], dir2[32]; /* fresh run directories: resume=auto would continue */
        snprintf(dir1, sizeof dir1, "det-%s-1", backends[b]);
        snprintf(dir2, sizeof dir2, "det-%s-2", backends[b]);
        ck_assert_int_eq(run(&c, dir1, l1, &r, NULL), RZ_OK);
        ck_assert_int_eq(run(&c, dir2, l2, &r, NULL), RZ_OK);
        ck_assert_int_eq(memcmp(l1, l2, sizeof l1), 0);
        ck_assert(l1[7] < l1[0]);
    }
}
END_TEST

START_TEST(grad_accum_matches_a_larger_batch)
{
    /* 1 x batch 8 x accum 2 sees the same samples per step as 1 x batch 16: same losses */
    struct cfg c;
    small_markov(&c);
    c.training.steps = 5;
    float big[5], acc[5];
    struct train_result r;
    ck_assert_int_eq(run(&c, "b16", big, &r, NULL), RZ_OK);
    c.training.batch_size = 8;
    c.training.grad_accum = 2;
    ck_assert_int_eq(run(&c, "b8x2", acc, &r, NULL), RZ_OK);
    for (int i = 0; i < 5; i++)
        ck_assert_float_eq_tol(acc[i], big[i], 1e-5f * big[i]);
}
END_TEST

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

START_TEST(metrics_and_summary_files)
{
    struct cfg c;
    small_markov(&c);
    c.training.steps = 6;
    struct train_result r;
    ck_assert_int_eq(run(&c, "files", NULL, &r, NULL), RZ_OK);
    char path[256];
    snprintf(path, sizeof path, "%s/files/metrics/test/rank-00000.jsonl", run_root);
    ck_assert_int_eq(count_lines(path), 6);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    const char *fields[] = {"\"step\":1,", "\"samples_seen\":16,", "\"loss\":", "\"lr\":",
                            "\"grad_norm\":", "\"step_time_s\":", "\"comm_time_s\":",
                            "\"samples_per_sec\":", "\"tokens_per_sec\":", "\"mfu\":",
                            "\"rss_bytes\":", "\"step\":6,", "\"samples_seen\":96,"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        ck_assert_msg(strstr(text, fields[i]) != NULL, "metrics lack %s", fields[i]);
    free(text);
    snprintf(path, sizeof path, "%s/files/summary.json", run_root);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    const char *keys[] = {"\"timestamp\":", "\"num_processes\":1,", "\"aggregated_metrics\":{",
                          "\"avg_loss\":", "\"total_duration_sec\":", "\"samples_per_sec\":",
                          "\"rank_results\":[{\"rank\":0,"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(text, keys[i]) != NULL, "summary lacks %s", keys[i]);
    free(text);
    ck_assert_int_eq((int)r.steps, 6);
    ck_assert_double_gt(r.samples_per_sec, 0.0);
    ck_assert_uint_gt(r.peak_rss_bytes, 0);
}
END_TEST

START_TEST(missing_token_file_is_an_io_error)
{
    struct cfg c;
    small_markov(&c);
    snprintf(c.data.kind, sizeof c.data.kind, "tokens");
    snprintf(c.data.path, sizeof c.data.path, "/nonexistent/tokens.bin");
    struct train_result r;
    struct rz_err e;
    ck_assert_int_eq(run(&c, "missing", NULL, &r, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/tokens.bin"));
}
END_TEST

START_TEST(unwritable_run_dir_is_an_io_error)
{
    struct cfg c;
    small_markov(&c);
    c.training.steps = 1;
    struct train_opts o = {.cfg = &c, .run_dir = "/proc/self/rz-no", .run_id = "x"};
    struct train_result r;
    struct rz_err e;
    ck_assert_int_eq(train_run(&o, &r, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/proc/self/rz-no"));
}
END_TEST

static Suite *train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *core = tcase_create("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_set_timeout(core, 300);
    tcase_add_test(core, markov_loss_reaches_the_entropy_floor);
    tcase_add_test(core, same_config_gives_bit_identical_losses);
    tcase_add_test(core, bf16_converges_like_fp32);
    tcase_add_test(core, grad_accum_matches_a_larger_batch);
    tcase_add_test(core, metrics_and_summary_files);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_set_timeout(errors, 120);
    tcase_add_test(errors, missing_token_file_is_an_io_error);
    tcase_add_test(errors, unwritable_run_dir_is_an_io_error);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(train_suite());
}
