/* check_metrics: the per-step JSONL line, summary.json, the ETA format, and I/O errors. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "metrics/metrics.h"
#include "testutil.h"

static char dir[64];

static void setup(void)
{
    rz_test_tmpdir(dir, sizeof dir, "metrics");
}

static void teardown(void)
{
    rz_test_rmtree(dir);
}

START_TEST(step_line_has_every_field)
{
    struct metrics_log *log;
    ck_assert_int_eq(metrics_open(&log, dir, "77", 3, NULL), RZ_OK);
    struct metrics_step s = {.step = 5, .samples_seen = 80, .run_step = 2, .loss = 0.5,
                             .lr = 1e-3, .grad_norm = 2, .step_time_s = 0.25,
                             .comm_time_s = 0.125, .samples_per_sec = 64, .tokens_per_sec = 8192,
                             .mfu = 0.5, .rss_bytes = 1000, .allreduce_s = 1e-5, .world_size = 4,
                             .has_sync = 1, .sync_ok = 1, .has_val = 1, .val_loss = 0.75};
    ck_assert_int_eq(metrics_write(log, &s, NULL), RZ_OK);
    char path[256];
    snprintf(path, sizeof path, "%s", metrics_path(log));
    metrics_close(log);
    char want[256];
    snprintf(want, sizeof want, "%s/metrics/77/rank-00003.jsonl", dir);
    ck_assert_str_eq(path, want);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_str_eq(text, "{\"step\":5,\"samples_seen\":80,\"run_step\":2,\"loss\":0.5,"
                           "\"loss_hex\":\"0x1p-1\",\"lr\":0.001,\"grad_norm\":2,"
                           "\"step_time_s\":0.25,\"comm_time_s\":0.125,\"samples_per_sec\":64,"
                           "\"tokens_per_sec\":8192,\"mfu\":0.5,\"rss_bytes\":1000,"
                           "\"allreduce_s\":1e-05,\"world_size\":4,\"val_loss\":0.75,"
                           "\"val_loss_hex\":\"0x1.8p-1\",\"sync_ok\":true,"
                           "\"param_spread\":0,\"gnorm_pre_min\":0,\"gnorm_pre_max\":0,"
                           "\"gnorm_post_spread\":0}\n");
    free(text);
}
END_TEST

START_TEST(summary_in_the_seed_format)
{
    struct metrics_rank_result ranks[2] = {
        {.rank = 0, .host = "n1", .steps = 10, .avg_loss = 2, .samples_per_sec = 50},
        {.rank = 1, .host = "n2", .steps = 10, .avg_loss = 2, .samples_per_sec = 49}};
    struct metrics_summary s = {.num_processes = 2, .avg_loss = 2.5, .total_duration_sec = 12,
                                .samples_per_sec = 99, .steps = 10, .entropy_floor = -1,
                                .ranks = ranks};
    ck_assert_int_eq(metrics_write_summary(dir, &s, NULL), RZ_OK);
    char path[256], *text = NULL;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":"
                                       "2.5,\"total_duration_sec\":12,\"samples_per_sec\":99,"));
    ck_assert_ptr_null(strstr(text, "entropy_floor")); /* unknown: left out */
    ck_assert_ptr_null(strstr(text, "val_loss"));      /* no validation: left out */
    ck_assert_ptr_nonnull(strstr(text, "{\"rank\":1,\"host\":\"n2\",\"steps\":10,"));
    free(text);
    snprintf(path, sizeof path, "%s/summary.json.tmp", dir);
    ck_assert_int_ne(access(path, F_OK), 0); /* renamed into place */
    s.has_val = 1;
    s.val_loss = 1.5;
    s.val_step = 10;
    s.val_samples = 64;
    ck_assert_int_eq(metrics_write_summary(dir, &s, NULL), RZ_OK);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"val_loss\":1.5,\"val_loss_hex\":\"0x1.8p+0\","
                                       "\"val_step\":10,\"val_samples\":64}"));
    free(text);
}
END_TEST

START_TEST(eta_format)
{
    char b[32];
    metrics_format_eta(b, sizeof b, 59.4);
    ck_assert_str_eq(b, "0:59");
    metrics_format_eta(b, sizeof b, 3725);
    ck_assert_str_eq(b, "1:02:05");
    metrics_format_eta(b, sizeof b, -1);
    ck_assert_str_eq(b, "?");
}
END_TEST

START_TEST(unwritable_directory_is_an_io_error)
{
    struct metrics_log *log = NULL;
    struct rz_err e;
    ck_assert_int_eq(metrics_open(&log, "/proc/self/rz-no", "1", 0, &e), RZ_EIO);
    ck_assert_ptr_null(log);
    ck_assert_ptr_nonnull(strstr(e.msg, "/proc/self/rz-no"));
    struct metrics_summary s = {.num_processes = 0};
    ck_assert_int_eq(metrics_write_summary("/proc/self/rz-no", &s, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "summary.json"));
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *core = tcase_create("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, step_line_has_every_field);
    tcase_add_test(core, summary_in_the_seed_format);
    tcase_add_test(core, eta_format);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, unwritable_directory_is_an_io_error);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(metrics_suite());
}
