/* check_gate_errors: the "errors" test case of check_gate (check_gate.c builds the suite):
 * malformed inputs (a truncated line, a missing rank, a non-number loss, bad JSON, a malformed
 * baseline, an absent job) refused naming their file:line, and the reasons --ended accepts.
 * Fixtures from gate_fixtures.c. */

#include "config.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"
#include "core/status.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"
#include "core/json_read.h"
#include "testutil.h"

#include "gate_fixtures.h"

static void expect_error(const struct cfg *c, const char *needle, const char *needle2)
{
    struct gate_input in;
    struct rz_err err;
    rz_err_clear(&err);
    enum rz_status st = gate_read(&in, c, run, &job7, &err);
    ck_assert_int_eq(st, RZ_EDATA);
    ck_assert_int_eq(rz_exit_code(st), 64);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "'%s' not in: %s", needle, err.msg);
    ck_assert_msg(needle2 == NULL || strstr(err.msg, needle2) != NULL, "'%s' not in: %s",
                  needle2, err.msg);
    gate_input_free(&in);
}

START_TEST(truncated_line_names_file_and_line)
{
    static struct cfg c;
    fixture();
    config(&c);
    put("metrics/7/rank-00001.jsonl", "a", "{\"step\":41,\"samples_seen\":656,\"ru");
    expect_error(&c, "rank-00001.jsonl:41:", "truncated");
    teardown_fixture();
}
END_TEST

START_TEST(missing_rank_is_named)
{
    static struct cfg c;
    char path[1024];
    fixture();
    config(&c);
    snprintf(path, sizeof path, "%s/metrics/7/rank-00001.jsonl", run);
    unlink(path);
    expect_error(&c, "metrics of rank 1 missing", "world_size 2");
    teardown_fixture();
}
END_TEST

START_TEST(non_number_loss_is_an_error)
{
    static struct cfg c;
    fixture();
    config(&c);
    put("metrics/7/rank-00000.jsonl", "a", "{\"step\":41,\"samples_seen\":656,\"run_step\":41,"
        "\"loss\":\"nan\",\"step_time_s\":0.125,\"comm_time_s\":0,\"rss_bytes\":1,"
        "\"allreduce_s\":0,\"world_size\":2}\n");
    expect_error(&c, "rank-00000.jsonl:41: field 'loss' is not a number", NULL);
    teardown_fixture();
    fixture();
    put("metrics/7/rank-00001.jsonl", "a", "{\"step\":41,\"samples_seen\":656,\"run_step\":41,"
        "\"loss\":3,\"step_time_s\":0.125,\"comm_time_s\":0,\"rss_bytes\":1,"
        "\"allreduce_s\":0,\"world_size\":2,\"val_loss\":null}\n");
    expect_error(&c, "rank-00001.jsonl:41: field 'val_loss' is null", NULL);
    teardown_fixture();
}
END_TEST

START_TEST(bad_json_names_line_and_column)
{
    static struct cfg c;
    fixture();
    config(&c);
    put("events.jsonl", "a", "{\"t\":1,\"job\":\"7\",\"event\":\"x\",}\n");
    expect_error(&c, "events.jsonl:5:30:", "object key");
    teardown_fixture();
    fixture();
    put("health.json", "w", "{\"ranks\":[{\"rank\":0}]}\n");
    expect_error(&c, "health.json: ranks[0] needs", NULL);
    teardown_fixture();
    fixture();
    put("metrics/7/rank-00001.jsonl", "a", "{\"step\":41,\"samples_seen\":656,\"run_step\":1,"
        "\"loss\":1,\"step_time_s\":0.125,\"comm_time_s\":0,\"rss_bytes\":1,"
        "\"allreduce_s\":0,\"world_size\":3}\n");
    expect_error(&c, "rank-00001.jsonl:41: world_size 3", NULL);
    teardown_fixture();
}
END_TEST

START_TEST(malformed_baseline_and_absent_job)
{
    static struct cfg c;
    struct gate_input in;
    struct rz_err err;
    fixture();
    config(&c);
    baseline_report(64);
    char saved[512];
    snprintf(saved, sizeof saved, "%s", run);
    snprintf(run, sizeof run, "%s/base", root);
    put("reports/1/report.json", "w", "{\"phase\":\"base\",\"job\":\"1\",\"world_size\":1,"
        "\"throughput\":1,\"loss_curve\":[[1,2,3]]}\n");
    snprintf(run, sizeof run, "%s", saved);
    expect_error(&c, "loss_curve[0] is not [samples_seen, loss]", NULL);
    /* a previous phase that ended before training is a report, but not a baseline */
    snprintf(run, sizeof run, "%s/base", root);
    put("reports/1/report.json", "w", "{\"phase\":\"base\",\"job\":\"1\",\"world_size\":0,"
        "\"ended\":\"health\",\"throughput\":null,\"loss_curve\":[]}\n");
    snprintf(run, sizeof run, "%s", saved);
    expect_error(&c, "not a baseline report: that phase ended before training (world_size 0, "
                 "ended: health)", NULL);
    rz_err_clear(&err);
    struct gate_opts o = {.job = "8", .status = -1};
    ck_assert_int_eq(gate_read(&in, &c, run, &o, &err), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(err.msg, "metrics of rank 0 missing"));
    gate_input_free(&in);
    o.job = "../x";
    ck_assert_int_eq(gate_read(&in, &c, run, &o, &err), RZ_ECONFIG);
    gate_input_free(&in);
    const char *bad[] = {"[1,]", "{\"a\":tru}", "\"\\x\"", "01", "[\"\\ud800\"]", "{} x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gj_value *v = NULL;
        ck_assert_int_eq(gj_parse(&v, bad[i], strlen(bad[i]), "b", 1, &err), RZ_EDATA);
        ck_assert_ptr_null(v);
        ck_assert_ptr_nonnull(strstr(err.msg, "b:1:"));
    }
    teardown_fixture();
}
END_TEST

START_TEST(end_reasons_parse)
{
    enum gate_end e = GATE_END_NONE;
    const char *names[] = {"health", "give_up", "io", "no_progress", "diverged",
                           "nothing_to_train"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ck_assert(gate_end_parse(names[i], &e));
        ck_assert_int_eq(e, (int)i + 1);
        ck_assert_str_eq(gate_end_name(e), names[i]);
    }
    ck_assert(!gate_end_parse("crash", &e));
    ck_assert(!gate_end_parse("", &e));
    ck_assert_ptr_null(gate_end_name(GATE_END_NONE));
}
END_TEST

TCase *gate_errors_tcase(void)
{
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, truncated_line_names_file_and_line);
    tcase_add_test(errors, missing_rank_is_named);
    tcase_add_test(errors, non_number_loss_is_an_error);
    tcase_add_test(errors, bad_json_names_line_and_column);
    tcase_add_test(errors, malformed_baseline_and_absent_job);
    tcase_add_test(errors, end_reasons_parse);
    return errors;
}
