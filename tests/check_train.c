/* check_train: end-to-end training runs in-process: convergence to the Markov entropy floor,
 * bit-identical determinism, the metrics and summary files, and error paths. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"
#include "core/hooks.h"
#include "core/util.h"
#include "train/guard.h"
#include "train/preflight.h"
#include "train/preflight_internal.h"
#include "kernels/kernels.h"
#include "train/train.h"
#include "ckpt/ckpt.h"
#include "testutil.h"
#include "train_net_cases.h"
#include "train_text.h"

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

/* checkpoint.mode async trains the same bits as sync and writes the same checkpoints: the
 * snapshot is the state at the step boundary, whatever the next steps do meanwhile.  The
 * summary counts the periodic checkpoints and the stall of each mode. */
START_TEST(async_checkpoints_are_the_sync_files)
{
    struct cfg c;
    small_markov(&c);
    c.training.steps = 12;
    c.checkpoint.interval = 3;
    c.checkpoint.keep = 10;
    float l1[12], l2[12];
    struct train_result r1, r2;
    struct rz_err err;
    ck_assert_int_eq(run(&c, "sync", l1, &r1, &err), RZ_OK);
    snprintf(c.checkpoint.mode, sizeof c.checkpoint.mode, "async");
    rz_err_clear(&err);
    ck_assert_msg(run(&c, "async", l2, &r2, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(memcmp(l1, l2, sizeof l1), 0);
    ck_assert_int_eq(r1.ckpt_count, 4);
    ck_assert_int_eq(r2.ckpt_count, 4);
    ck_assert_double_gt(r1.ckpt_commit_s, 0.0);
    ck_assert_double_gt(r2.ckpt_commit_s, 0.0); /* the writes behind were collected */
    for (int step = 3; step <= 12; step += 3) {
        char p1[256], p2[256];
        struct ckpt_meta m1, m2;
        snprintf(p1, sizeof p1, "%s/sync/checkpoints/step-%08d.h5", run_root, step);
        snprintf(p2, sizeof p2, "%s/async/checkpoints/step-%08d.h5", run_root, step);
        ck_assert_msg(ckpt_inspect(p1, &m1, &err) == RZ_OK, "%s", err.msg);
        ck_assert_msg(ckpt_inspect(p2, &m2, &err) == RZ_OK, "%s", err.msg);
        ck_assert_str_eq(m1.params_sha256, m2.params_sha256);
        ck_assert_str_eq(m1.adam_sha256, m2.adam_sha256);
        ck_assert_int_eq(m2.step, step);
        ck_assert(m1.loss_sum == m2.loss_sum);
        ckpt_meta_free(&m1);
        ckpt_meta_free(&m2);
    }
    char path[256], *text = NULL;
    snprintf(path, sizeof path, "%s/async/summary.json", run_root);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_msg(strstr(text, "\"checkpoints\":{\"mode\":\"async\",\"periodic\":4,") != NULL,
                  "%s", text);
    free(text);
}
END_TEST

#ifdef RZ_TEST_HOOKS /* configure --enable-test-hooks */
static const char *const ckpt_modes[] = {"sync", "async"};

static void ckpt_full_at(const long long *steps, int n)
{
    rz_hooks.ckpt_full.n = n;
    for (int i = 0; i < n; i++)
        rz_hooks.ckpt_full.steps[i] = steps[i];
}

/* 12 steps, a checkpoint every 2, all kept. */
static void full_disk_cfg(struct cfg *c, const char *mode, int64_t tolerated)
{
    small_markov(c);
    c->training.steps = 12;
    c->checkpoint.interval = 2;
    c->checkpoint.keep = 10;
    c->checkpoint.failures_tolerated = tolerated;
    snprintf(c->checkpoint.mode, sizeof c->checkpoint.mode, "%s", mode);
}

static bool ckpt_file_is(const char *name, int step)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/checkpoints/step-%08d.h5", run_root, name, step);
    return access(path, F_OK) == 0;
}

/* checkpoint.failures_tolerated 2: periodic checkpoints that find the disk full (at 4 and 6,
 * then 10) are not written, training goes on from the last good one with the same bits as a
 * run whose every write succeeded, and the one written at 8 starts the count again; in line
 * and behind training alike. */
START_TEST(failed_checkpoints_in_a_row_are_tolerated)
{
    struct cfg c;
    full_disk_cfg(&c, ckpt_modes[_i], 2);
    float all[12], some[12];
    struct train_result r;
    struct rz_err e;
    ckpt_full_at(NULL, 0);
    ck_assert_msg(run(&c, "all", all, &r, &e) == RZ_OK, "%s", e.msg);
    ck_assert_int_eq(r.ckpt_failed, 0);
    ckpt_full_at((const long long[]){4, 6, 10}, 3);
    enum rz_status st = run(&c, "some", some, &r, &e);
    ckpt_full_at(NULL, 0);
    ck_assert_msg(st == RZ_OK, "%s", e.msg);
    ck_assert_int_eq(memcmp(all, some, sizeof all), 0);
    ck_assert_int_eq(r.ckpt_failed, 3);
    for (int step = 2; step <= 12; step += 2)
        ck_assert_msg(ckpt_file_is("some", step) == (step == 2 || step == 8 || step == 12),
                      "%s: step %d", ckpt_modes[_i], step);
    char path[256], *text = NULL;
    snprintf(path, sizeof path, "%s/some/summary.json", run_root);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_msg(strstr(text, "\"failed\":3,") != NULL, "%s", text);
    free(text);
}
END_TEST

/* One failure more than tolerated in a row ends the run as an I/O error (exit 74) naming the
 * full disk; the last good checkpoint is kept and no temporary file is left.  With 0 tolerated
 * the first failure ends it.  The step it ends at: in line, the checkpoint's own (8, or 4);
 * behind training, the next checkpoint's, where the ranks learn of the write (10, or 6). */
START_TEST(one_failure_more_than_tolerated_ends_the_run)
{
    struct cfg c;
    full_disk_cfg(&c, ckpt_modes[_i % 2], _i / 2 == 0 ? 2 : 0);
    struct train_result r;
    struct rz_err e;
    ckpt_full_at((const long long[]){4, 6, 8, 10}, 4);
    enum rz_status st = run(&c, "over", NULL, &r, &e);
    ckpt_full_at(NULL, 0);
    ck_assert_int_eq(st, RZ_EIO);
    ck_assert_int_eq(rz_exit_code(e.status), 74);
    static const int last_step[] = {8, 10, 4, 6};
    char metrics[256];
    snprintf(metrics, sizeof metrics, "%s/over/metrics/test/rank-00000.jsonl", run_root);
    ck_assert_int_eq(count_lines(metrics), last_step[_i]);
    ck_assert_msg(strstr(e.msg, "disk full (ENOSPC)") != NULL, "%s", e.msg);
    ck_assert(ckpt_file_is("over", 2));
    ck_assert(!ckpt_file_is("over", 4));
    char path[256];
    snprintf(path, sizeof path, "%s/over/checkpoints/step-00000002.h5", run_root);
    struct ckpt_meta m;
    ck_assert_msg(ckpt_inspect(path, &m, &e) == RZ_OK, "%s", e.msg);
    ck_assert_int_eq(m.step, 2);
    ckpt_meta_free(&m);
    snprintf(path, sizeof path, "%s/over/checkpoints/step-00000004.h5.tmp", run_root);
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST
#endif

/* checkpoint.policy young_daly: sqrt(2 C M) seconds of training over the step time, rounded;
 * unknown figures give 0 (the interval stays), the result is at least 1 and at most the run. */
START_TEST(young_daly_interval_by_hand)
{
    ck_assert_int_eq(train_young_daly_steps(0.05, 3600.0, 0.5, 10000), 38); /* 18.97 s / 0.5 */
    ck_assert_int_eq(train_young_daly_steps(0.036, 60.0, 0.162, 10000), 13); /* 2.08 s */
    ck_assert_int_eq(train_young_daly_steps(1e-6, 1.0, 10.0, 100), 1);
    ck_assert_int_eq(train_young_daly_steps(10.0, 1e7, 0.01, 500), 500);
    ck_assert_int_eq(train_young_daly_steps(0.0, 3600.0, 0.5, 100), 0);
    ck_assert_int_eq(train_young_daly_steps(0.05, 0.0, 0.5, 100), 0);
    ck_assert_int_eq(train_young_daly_steps(0.05, 3600.0, 0.0, 100), 0);
    ck_assert_int_eq(train_young_daly_steps(0.05, 3600.0, NAN, 100), 0);
}
END_TEST

/* A young_daly run starts at checkpoint.interval, then checkpoints at the interval its first
 * checkpoint's cost gives, counted from that checkpoint; the summary says which and why. */
START_TEST(young_daly_run_moves_its_interval)
{
    struct cfg c;
    small_markov(&c);
    c.training.steps = 30;
    c.checkpoint.interval = 2;
    c.checkpoint.keep = 100;
    snprintf(c.checkpoint.policy, sizeof c.checkpoint.policy, "young_daly");
    c.checkpoint.mtbf_s = 1e9; /* failures so rare that the run's end comes first */
    struct train_result r;
    struct rz_err err;
    ck_assert_msg(run(&c, "yd", NULL, &r, &err) == RZ_OK, "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/yd/checkpoints/step-00000002.h5", run_root);
    ck_assert_msg(access(path, F_OK) == 0, "no checkpoint at checkpoint.interval's step 2");
    ck_assert_int_eq(r.ckpt_count, 1); /* then none before the end: the interval is the run's */
    ck_assert_int_eq(r.ckpt_interval, 30);
    ck_assert_msg(strstr(r.ckpt_interval_why, "young_daly: sqrt(2 x ") != NULL, "%s",
                  r.ckpt_interval_why);
    snprintf(path, sizeof path, "%s/yd/checkpoints/step-00000004.h5", run_root);
    ck_assert_msg(access(path, F_OK) != 0, "a checkpoint at step 4: the interval did not move");
    /* without an MTBF it stays at checkpoint.interval, and says why */
    c.checkpoint.mtbf_s = 0.0;
    ck_assert_msg(run(&c, "yd0", NULL, &r, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(r.ckpt_count, 15);
    ck_assert_int_eq(r.ckpt_interval, 2);
    ck_assert_msg(strstr(r.ckpt_interval_why, "until an MTBF is configured or observed") != NULL,
                  "%s", r.ckpt_interval_why);
}
END_TEST

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

static int count_in_file(const char *path, const char *needle)
{
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    free(text);
    return n;
}

/* Validation every eval_interval steps and at the end, on a held-out stream; the training losses
 * are the same bits with and without it (its forward passes disturb nothing). */
START_TEST(validation_on_schedule_leaves_training_alone)
{
    struct cfg c;
    small_markov(&c);
    c.training.steps = 10;
    float plain[10], with_val[10];
    struct train_result r;
    ck_assert_int_eq(run(&c, "noval", plain, &r, NULL), RZ_OK);
    ck_assert_int_eq((int)r.val_step, -1);
    char path[256];
    snprintf(path, sizeof path, "%s/noval/summary.json", run_root);
    ck_assert_int_eq(count_in_file(path, "\"val_loss\""), 0);
    c.data.val_fraction = 0.1;
    c.training.eval_interval = 4;
    c.training.eval_samples = 24; /* two chunks of B = 16, the second padded */
    ck_assert_int_eq(run(&c, "val", with_val, &r, NULL), RZ_OK);
    ck_assert_int_eq(memcmp(plain, with_val, sizeof plain), 0);
    ck_assert_int_eq((int)r.val_step, 10);
    ck_assert_double_gt(r.val_loss, 0.5 * r.final_loss);
    ck_assert_double_lt(r.val_loss, 1.5 * r.final_loss);
    snprintf(path, sizeof path, "%s/val/metrics/test/rank-00000.jsonl", run_root);
    ck_assert_int_eq(count_in_file(path, "\"val_loss\":"), 2); /* steps 4 and 8 */
    ck_assert_int_eq(count_in_file(path, "{\"step\":8,"), 1);
    snprintf(path, sizeof path, "%s/val/summary.json", run_root);
    ck_assert_int_eq(count_in_file(path, "\"val_step\":10,\"val_samples\":24"), 1);
    /* the set is fixed: the same parameters give the same figure (resume of the finished run) */
    double at_end = r.val_loss;
    ck_assert_int_eq(run(&c, "val", NULL, &r, NULL), RZ_OK);
    ck_assert_int_eq((int)r.val_step, 10);
    ck_assert(r.val_loss == at_end);
}
END_TEST

/* training.recompute block trains to the same bits as none (with dropout on: its masks are
 * recomputed too), and dropout changes the losses (it is on). */
START_TEST(recompute_trains_the_same_bits)
{
    struct cfg c;
    small_markov(&c);
    c.training.steps = 6;
    c.model.n_layers = 2;
    c.model.dropout = 0.1;
    float none[6], block[6], nodrop[6];
    struct train_result r;
    ck_assert_int_eq(run(&c, "rc-none", none, &r, NULL), RZ_OK);
    snprintf(c.training.recompute, sizeof c.training.recompute, "block");
    ck_assert_int_eq(run(&c, "rc-block", block, &r, NULL), RZ_OK);
    ck_assert_int_eq(memcmp(none, block, sizeof none), 0);
    c.model.dropout = 0.0;
    ck_assert_int_eq(run(&c, "rc-nodrop", nodrop, &r, NULL), RZ_OK);
    ck_assert(nodrop[1] != block[1]);
}
END_TEST

/* Bad input, not an I/O error: ryzen-train exits 64 for it, as ryzen-step does before srun. */
START_TEST(missing_token_file_is_bad_input)
{
    struct cfg c;
    small_markov(&c);
    snprintf(c.data.kind, sizeof c.data.kind, "tokens");
    snprintf(c.data.path, sizeof c.data.path, "/nonexistent/tokens.bin");
    struct train_result r;
    struct rz_err e;
    ck_assert_int_eq(run(&c, "missing", NULL, &r, &e), RZ_EDATA);
    ck_assert_int_eq(rz_exit_code(e.status), 64);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/tokens.bin"));
    ck_assert_ptr_nonnull(strstr(e.msg, strerror(ENOENT)));
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

/* ---- the loss guard (guard.h) ---------------------------------------------------------------- */

static const struct guard_opts guard3 = {.max_skipped = 3, .window = 10, .threshold = 6};

/* n accepted steps from `first` of loss 3 +- 0.01 and gradient norm 1 +- 0.05 (alternating). */
static void guard_feed(struct ckpt_guard *g, int64_t first, int n)
{
    char why[256];
    for (int i = 0; i < n; i++) {
        double s = (first + i) % 2 ? 1.0 : -1.0;
        ck_assert_int_eq(guard_judge(g, &guard3, first + i, 3.0 + 0.01 * s, 1.0 + 0.05 * s, why,
                                     sizeof why), GUARD_ACCEPT);
    }
}

START_TEST(guard_skips_non_finite_and_outliers)
{
    struct ckpt_guard g;
    char why[256];
    memset(&g, 0, sizeof g);
    /* non-finite values are skipped from the first step on */
    ck_assert_int_eq(guard_judge(&g, &guard3, 1, NAN, 1, why, sizeof why), GUARD_SKIP);
    ck_assert_str_eq(why, "non-finite loss (nan)");
    ck_assert_int_eq(guard_judge(&g, &guard3, 2, 3, INFINITY, why, sizeof why), GUARD_SKIP);
    ck_assert_str_eq(why, "non-finite gradient norm (inf)");
    ck_assert_int_eq(g.seen, 0);
    ck_assert_int_eq(g.skipped, 2);
    /* warm-up: a spike is not judged before GUARD_WARMUP accepted steps */
    memset(&g, 0, sizeof g);
    guard_feed(&g, 1, GUARD_WARMUP - 1);
    ck_assert_int_eq(guard_judge(&g, &guard3, 20, 3.0, 5.0, why, sizeof why), GUARD_ACCEPT);
    memset(&g, 0, sizeof g);
    guard_feed(&g, 1, 30);
    ck_assert_double_eq_tol(g.loss_mean, 3.0, 1e-3);
    ck_assert_double_eq_tol(sqrt(g.loss_var), 0.01, 1e-3);
    /* 3.1 is 10 sd above 3.0 but only 3.3% above it: noise on a flat curve, accepted */
    ck_assert_int_eq(guard_judge(&g, &guard3, 31, 3.1, 1.0, why, sizeof why), GUARD_ACCEPT);
    memset(&g, 0, sizeof g);
    guard_feed(&g, 1, 30);
    struct ckpt_guard before = g;
    ck_assert_int_eq(guard_judge(&g, &guard3, 31, 4.0, 1.0, why, sizeof why), GUARD_SKIP);
    ck_assert_msg(strstr(why, "loss 4 is ") != NULL && strstr(why, "standard deviations above its "
                  "running mean 3") != NULL, "%s", why);
    /* a skipped step does not move the statistics it was judged by */
    ck_assert_double_eq(g.loss_mean, before.loss_mean);
    ck_assert_double_eq(g.loss_var, before.loss_var);
    ck_assert_int_eq(g.seen, before.seen);
    ck_assert_int_eq(guard_judge(&g, &guard3, 32, 3.0, 1.5, why, sizeof why), GUARD_SKIP);
    ck_assert_ptr_nonnull(strstr(why, "gradient norm 1.5 is "));
    /* a drop is no spike; within the band is fine */
    ck_assert_int_eq(guard_judge(&g, &guard3, 33, 1.0, 0.5, why, sizeof why), GUARD_ACCEPT);
    /* threshold 0: only non-finite steps are skipped */
    struct guard_opts off = guard3;
    off.threshold = 0;
    ck_assert_int_eq(guard_judge(&g, &off, 34, 40.0, 100.0, why, sizeof why), GUARD_ACCEPT);
}
END_TEST

START_TEST(guard_stops_after_max_skips_in_the_window)
{
    struct ckpt_guard g;
    char why[256], list[128];
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(guard_judge(&g, &guard3, 5, NAN, 1, why, sizeof why), GUARD_SKIP);
    ck_assert_int_eq(guard_judge(&g, &guard3, 8, NAN, 1, why, sizeof why), GUARD_SKIP);
    ck_assert_int_eq(guard_recent_list(&g, &guard3, 8, list, sizeof list), 2);
    ck_assert_str_eq(list, "5, 8");
    /* at 20 the window is 11..20: 5 and 8 have left it */
    ck_assert_int_eq(guard_judge(&g, &guard3, 20, NAN, 1, why, sizeof why), GUARD_SKIP);
    ck_assert_int_eq(guard_recent_list(&g, &guard3, 20, list, sizeof list), 1);
    ck_assert_int_eq(guard_judge(&g, &guard3, 21, 3, 1, why, sizeof why), GUARD_ACCEPT);
    ck_assert_int_eq(guard_judge(&g, &guard3, 22, NAN, 1, why, sizeof why), GUARD_SKIP);
    ck_assert_int_eq(guard_judge(&g, &guard3, 29, NAN, 1, why, sizeof why), GUARD_STOP);
    ck_assert_int_eq(guard_recent_list(&g, &guard3, 29, list, sizeof list), 3);
    ck_assert_str_eq(list, "20, 22, 29");
    ck_assert_int_eq(g.skipped, 5);
}
END_TEST

START_TEST(guard_with_one_allowed_skip_stops_at_once)
{
    struct ckpt_guard g;
    struct guard_opts one = guard3;
    char why[256];
    one.max_skipped = 1;
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(guard_judge(&g, &one, 1, 3, NAN, why, sizeof why), GUARD_STOP);
    ck_assert_str_eq(why, "non-finite gradient norm (nan)");
}
END_TEST

/* ---- the preflight's CPU check (preflight_cpu_clash) ---- */

static void set_cpus(unsigned char *m, int first, int last)
{
    memset(m, 0, PREFLIGHT_MAX_CPUS / 8);
    for (int c = first; c <= last; c++)
        m[c / 8] |= (unsigned char)(1u << (c % 8));
}

/* Ranks launched without binding share the job's cpuset: on a 2-CPU machine that is every CPU,
 * on a 16-CPU one a part of them; neither is a clash while the set has a CPU per thread. */
START_TEST(cpu_check_accepts_a_shared_job_cpuset_on_any_core_count)
{
    unsigned char a[PREFLIGHT_MAX_CPUS / 8], b[PREFLIGHT_MAX_CPUS / 8];
    set_cpus(a, 0, 1);
    set_cpus(b, 0, 1);
    ck_assert_int_eq(preflight_cpu_clash(a, b, 2, 4), -1);  /* 2 CPUs, all of them: not bound */
    set_cpus(a, 0, 7);
    set_cpus(b, 0, 7);
    ck_assert_int_eq(preflight_cpu_clash(a, b, 16, 4), -1); /* 4 ranks in 8 of 16 CPUs */
    ck_assert_int_eq(preflight_cpu_clash(a, b, 16, 8), -1); /* 4 ranks x 2 threads in 8 */
    set_cpus(a, 0, 3);
    set_cpus(b, 4, 7);
    ck_assert_int_eq(preflight_cpu_clash(a, b, 16, 2), -1); /* bound apart */
}
END_TEST

START_TEST(cpu_check_names_ranks_bound_to_one_cpu)
{
    unsigned char a[PREFLIGHT_MAX_CPUS / 8], b[PREFLIGHT_MAX_CPUS / 8];
    set_cpus(a, 0, 0);
    set_cpus(b, 0, 0);
    ck_assert_int_eq(preflight_cpu_clash(a, b, 2, 2), 0);   /* map_cpu:0,0 */
    set_cpus(a, 0, 7);
    set_cpus(b, 0, 7);
    ck_assert_int_eq(preflight_cpu_clash(a, b, 16, 9), 0);  /* more threads than the set has */
    set_cpus(a, 0, 3);
    set_cpus(b, 3, 6);
    ck_assert_int_eq(preflight_cpu_clash(a, b, 16, 2), 3);  /* bound to overlapping sets */
}
END_TEST

/* ---- the preflight's links check (pf_judge_links) ---- */

/* n hosts "n1".."nN", every link at `gbps` and `us`. */
static void links_of(struct comm_links *l, int n, double gbps, double us)
{
    memset(l, 0, sizeof *l);
    l->n_hosts = n;
    l->bytes = 1 << 20;
    for (int i = 0; i < n; i++) {
        snprintf(l->hosts[i], sizeof l->hosts[i], "n%d", i + 1);
        for (int j = 0; j < n; j++)
            if (i != j)
                l->gbps[i][j] = gbps, l->latency_us[i][j] = us;
    }
}

static const struct cfg_network net_gates = {.min_link_gbps = 0.1, .max_link_latency_us = 2000,
                                             .probe_mb = 1};

START_TEST(links_check_passes_even_links_and_names_the_slowest)
{
    static struct comm_links l;
    static struct verdict v;
    memset(&v, 0, sizeof v);
    links_of(&l, 1, 0, 0);
    pf_judge_links(&l, &net_gates, &v);
    ck_assert(v.ok[CHECK_LINKS]);
    ck_assert_str_eq(v.detail[CHECK_LINKS], "one node: no link between nodes to measure");
    memset(&v, 0, sizeof v);
    links_of(&l, 3, 0.25, 80);
    l.gbps[2][0] = 0.2;
    l.latency_us[0][1] = l.latency_us[1][0] = 95;
    pf_judge_links(&l, &net_gates, &v);
    ck_assert(v.ok[CHECK_LINKS]);
    ck_assert_str_eq(v.detail[CHECK_LINKS], "3 nodes, 3 links each way: slowest n3 -> n1 0.2 "
                     "Gbit/s (floor 0.1), highest latency n1 - n2 95 us (ceiling 2000)");
    ck_assert_str_eq(v.warning, "");
    ck_assert_int_eq(v.n_failed, 0);
}
END_TEST

/* One node's port at a tenth of the rate: every failed link is its own, so it is blamed. */
START_TEST(links_check_blames_the_node_of_every_slow_link)
{
    static struct comm_links l;
    static struct verdict v;
    memset(&v, 0, sizeof v);
    links_of(&l, 3, 0.25, 80);
    for (int j = 0; j < 2; j++)
        l.gbps[2][j] = l.gbps[j][2] = 0.025;
    pf_judge_links(&l, &net_gates, &v);
    ck_assert(!v.ok[CHECK_LINKS]);
    ck_assert_int_eq(v.n_failed, 1);
    ck_assert_str_eq(v.failed_hosts[0], "n3");
    ck_assert_ptr_nonnull(strstr(v.detail[CHECK_LINKS], "failed: n1 -> n3 (0.025 Gbit/s, 80 us)"));
    ck_assert_ptr_nonnull(strstr(v.detail[CHECK_LINKS], "every failed link is n3's"));
}
END_TEST

/* Two nodes: a slow link cannot tell which end is at fault, so no node is blamed; a latency
 * over the ceiling fails too. */
START_TEST(links_check_of_two_nodes_blames_neither)
{
    static struct comm_links l;
    static struct verdict v;
    memset(&v, 0, sizeof v);
    links_of(&l, 2, 0.25, 80);
    l.gbps[0][1] = 0.05;
    pf_judge_links(&l, &net_gates, &v);
    ck_assert(!v.ok[CHECK_LINKS]);
    ck_assert_int_eq(v.n_failed, 0);
    ck_assert_ptr_nonnull(strstr(v.detail[CHECK_LINKS], "failed: n1 -> n2 (0.05 Gbit/s"));
    memset(&v, 0, sizeof v);
    links_of(&l, 2, 0.25, 2500);
    pf_judge_links(&l, &net_gates, &v);
    ck_assert(!v.ok[CHECK_LINKS]);
    ck_assert_ptr_nonnull(strstr(v.detail[CHECK_LINKS], "highest latency n1 - n2 2500 us"));
}
END_TEST

/* Above the floor but under half the median: it passes, with a warning naming the link. */
START_TEST(links_check_warns_of_a_link_under_half_the_median)
{
    static struct comm_links l;
    static struct verdict v;
    memset(&v, 0, sizeof v);
    links_of(&l, 4, 0.25, 80);
    l.gbps[1][3] = 0.11;
    pf_judge_links(&l, &net_gates, &v);
    ck_assert(v.ok[CHECK_LINKS]);
    ck_assert_ptr_nonnull(strstr(v.warning, "the link n2 -> n4 carries 0.11 Gbit/s, under half "
                                 "the median link (0.25 Gbit/s)"));
}
END_TEST

static Suite *train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, markov_loss_reaches_the_entropy_floor);
    tcase_add_test(core, same_config_gives_bit_identical_losses);
    tcase_add_test(core, bf16_converges_like_fp32);
    tcase_add_test(core, grad_accum_matches_a_larger_batch);
    tcase_add_test(core, metrics_and_summary_files);
    tcase_add_test(core, async_checkpoints_are_the_sync_files);
    tcase_add_test(core, young_daly_interval_by_hand);
    tcase_add_test(core, young_daly_run_moves_its_interval);
    tcase_add_test(core, validation_on_schedule_leaves_training_alone);
    tcase_add_test(core, recompute_trains_the_same_bits);
    tcase_add_test(core, guard_skips_non_finite_and_outliers);
    tcase_add_test(core, guard_stops_after_max_skips_in_the_window);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, missing_token_file_is_bad_input);
    tcase_add_test(errors, unwritable_run_dir_is_an_io_error);
    tcase_add_test(errors, guard_with_one_allowed_skip_stops_at_once);
#ifdef RZ_TEST_HOOKS
    tcase_add_loop_test(errors, failed_checkpoints_in_a_row_are_tolerated, 0, 2);
    tcase_add_loop_test(errors, one_failure_more_than_tolerated_ends_the_run, 0, 4);
#endif
    suite_add_tcase(s, errors);
    TCase *cpus = tcase_create("cpus");
    tcase_add_test(cpus, cpu_check_accepts_a_shared_job_cpuset_on_any_core_count);
    tcase_add_test(cpus, cpu_check_names_ranks_bound_to_one_cpu);
    suite_add_tcase(s, cpus);
    TCase *links = tcase_create("links");
    tcase_add_test(links, links_check_passes_even_links_and_names_the_slowest);
    tcase_add_test(links, links_check_blames_the_node_of_every_slow_link);
    tcase_add_test(links, links_check_of_two_nodes_blames_neither);
    tcase_add_test(links, links_check_warns_of_a_link_under_half_the_median);
    suite_add_tcase(s, links);
    suite_add_tcase(s, train_text_tcase()); /* check_train_text.c */
    suite_add_tcase(s, train_net_tcase());  /* check_train_net.c */
    return s;
}

int main(void)
{
    return rz_test_main(train_suite());
}
