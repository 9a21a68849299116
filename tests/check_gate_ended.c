/* check_gate_ended: how a phase ended, in check_gate's "core" test case (check_gate.c builds the
 * suite): requeues counted by reason (only a failure's against the failures gate) and unknown
 * events kept, and ryzen-gate --ended's report from whatever exists.  Fixtures from
 * gate_fixtures.c. */

#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "core/status.h"
#include "gate/gate.h"

#include "gate_fixtures.h"

/* A preemption, a time limit and a node failure are the site's doing: only the failure requeue
 * (and the give-up) counts against the failures gate; an unknown event is kept, not an error. */
START_TEST(requeues_by_reason_and_unknown_events)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    put("events.jsonl", "a",
        "{\"time\":\"x\",\"t\":1003,\"job\":\"7\",\"restart\":1,\"phase\":\"phase\",\"event\":"
        "\"requeue\",\"message\":\"\",\"reason\":\"preemption\"}\n"
        "{\"time\":\"x\",\"t\":1004,\"job\":\"7\",\"restart\":2,\"phase\":\"phase\",\"event\":"
        "\"requeue\",\"message\":\"\",\"reason\":\"time_limit\"}\n"
        "{\"time\":\"x\",\"t\":1005,\"job\":\"7\",\"restart\":3,\"phase\":\"phase\",\"event\":"
        "\"attempt_end\",\"message\":\"step ended\",\"status\":137,\"class\":\"crash\","
        "\"rank\":1,\"host\":\"n2\"}\n"
        "{\"time\":\"x\",\"t\":1006,\"job\":\"7\",\"restart\":3,\"phase\":\"phase\",\"event\":"
        "\"requeue\",\"message\":\"\",\"reason\":\"node_failure\"}\n"
        "{\"time\":\"x\",\"t\":1007,\"job\":\"7\",\"restart\":4,\"phase\":\"phase\",\"event\":"
        "\"something_new\",\"message\":\"from a later wrapper\"}\n"
        "{\"time\":\"x\",\"t\":1008,\"job\":\"7\",\"restart\":4,\"phase\":\"phase\",\"event\":"
        "\"requeue\",\"message\":\"\",\"reason\":\"quantum\"}\n");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(in.requeues[EVENT_RQ_FAILURE], 1);
    ck_assert_int_eq(in.requeues[EVENT_RQ_PREEMPTION], 1);
    ck_assert_int_eq(in.requeues[EVENT_RQ_TIME_LIMIT], 1);
    ck_assert_int_eq(in.requeues[EVENT_RQ_NODE_FAILURE], 1);
    ck_assert_int_eq(in.requeues[EVENT_RQ_SIGNAL], 0);
    ck_assert_int_eq(in.requeues[EVENT_RQ_OTHER], 1);
    ck_assert_double_eq(res.crit[GATE_FAILURES].measured, 1.0);
    ck_assert_uint_eq(in.n_job_events, 9);
    ck_assert_uint_eq(in.n_chain_events, 1);
    /* start, requeue, promote, attempt_end and the 4 later requeues; not train_exit or the
     * unknown event */
    ck_assert_uint_eq(in.n_verdict_events, 8);
    const struct event_rec *e = &in.events[in.verdict_events[5]];
    ck_assert_str_eq(e->event, "attempt_end");
    ck_assert_str_eq(e->summary, "step ended (class crash, status 137, rank 1, host n2)");
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* ryzen-gate --ended: whatever exists, NO-GO (HOLD for nothing_to_train), the last good
 * checkpoints, the preflight's checks; no metrics at all is no error. */
START_TEST(ended_report_from_whatever_exists)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct gate_doc doc;
    struct rz_err err;
    char dir[4096], path[4200], warn[256];
    fixture();
    config(&c);
    put("health.json", "w", "{\"ok\":false,\"world_size\":2,\"checks\":[{\"name\":\"ring\",\"ok\":"
        "true,\"detail\":\"2 ranks\"},{\"name\":\"memory\",\"ok\":false,\"detail\":\"n2: 1 GiB "
        "free, 3 GiB needed\"}],\"ranks\":[]}\n");
    struct gate_opts o = {.job = "9", .ended = GATE_END_HEALTH, .why = "preflight failed on n2",
                          .status = 70, .cpus_per_rank = "4"};
    rz_err_clear(&err);
    ck_assert_int_eq(gate_read(&in, &c, run, &o, &err), RZ_OK);
    ck_assert_int_eq(in.world_size, 0);
    ck_assert_uint_eq(in.n_checks, 2);
    ck_assert(!in.health_ok);
    ck_assert_ptr_nonnull(strstr(in.warnings, "metrics of rank 0 missing"));
    struct gate_ckpt ck[3] = {{10, true, "c10"}, {20, true, "c20"}, {30, false, "c30"}};
    in.ckpts = malloc(sizeof ck);
    memcpy(in.ckpts, ck, sizeof ck);
    in.n_ckpts = 3;
    ck_assert_int_eq(gate_evaluate(&res, &in, &c, &err), RZ_OK);
    ck_assert_int_eq(res.verdict, GATE_VERDICT_NO_GO);
    ck_assert_str_eq(res.last_good->path, "c20");
    ck_assert_str_eq(res.prev_good->path, "c10");
    ck_assert(res.has_rollback);
    ck_assert_str_eq(res.rollback_path, "c20");
    ck_assert_str_eq(res.action, "rollback");
    setenv("SLURM_CPUS_PER_TASK", "99", 1); /* the writers must not read it: 4 was passed in */
    gate_doc_build(&doc, &in, &res, &c);
    ck_assert_int_eq(gate_write_reports(&doc, dir, sizeof dir, warn, sizeof warn, &err), RZ_OK);
    unsetenv("SLURM_CPUS_PER_TASK");
    ck_assert_ptr_nonnull(strstr(dir, "/reports/9"));
    snprintf(path, sizeof path, "%s/report.json", dir);
    char *json = slurp(path);
    ck_assert_ptr_nonnull(strstr(json, "\"verdict\":\"NO-GO\""));
    ck_assert_ptr_nonnull(strstr(json, "\"ended\":\"health\",\"why\":\"preflight failed on n2\","
                                       "\"status\":70,\"last_good_checkpoint\":{\"path\":\"c20\","
                                       "\"step\":20},\"previous_good_checkpoint\":{\"path\":"
                                       "\"c10\",\"step\":10},\"health\":{\"ok\":false"));
    ck_assert_ptr_nonnull(strstr(json, "\"cpus_per_rank\":\"4\""));
    ck_assert_ptr_nonnull(strstr(json, "\"requeues\":{\"failure\":0,\"signal\":0,"));
    free(json);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = slurp(path);
    ck_assert_ptr_nonnull(strstr(md, "## Ended without finishing training: health"));
    ck_assert_ptr_nonnull(strstr(md, "- preflight check memory: FAILED; n2: 1 GiB free"));
    ck_assert_ptr_nonnull(strstr(md, "| CPUs per rank | 4 |"));
    free(md);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *html = slurp(path);
    assert_balanced(html);
    ck_assert_ptr_nonnull(strstr(html, "<h2 id=\"ended\" data-reason=\"health\">"));
    ck_assert_ptr_null(strstr(html, ">99<"));
    free(html);
    gate_result_free(&res);
    gate_input_free(&in);
    /* nothing_to_train is HOLD; partial metrics of job 7 are used */
    o.job = "7";
    o.ended = GATE_END_NOTHING_TO_TRAIN;
    ck_assert_int_eq(gate_read(&in, &c, run, &o, &err), RZ_OK);
    ck_assert_uint_eq(in.n_steps, 40);
    ck_assert_int_eq(gate_evaluate(&res, &in, &c, &err), RZ_OK);
    ck_assert_int_eq(res.verdict, GATE_VERDICT_HOLD);
    ck_assert_double_eq(res.crit[GATE_THROUGHPUT].measured, 128.0);
    gate_result_free(&res);
    gate_input_free(&in);
    /* a truncated last line (the crash that ended the phase) is a warning, not an error */
    put("metrics/7/rank-00001.jsonl", "a", "{\"step\":41,\"samples_seen\":656,\"ru");
    o.ended = GATE_END_GIVE_UP;
    ck_assert_int_eq(gate_read(&in, &c, run, &o, &err), RZ_OK);
    ck_assert_ptr_nonnull(strstr(in.warnings, "rank-00001.jsonl:41: truncated"));
    ck_assert_uint_eq(in.n_steps, 40);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

void gate_ended_tests(TCase *tc)
{
    tcase_add_test(tc, requeues_by_reason_and_unknown_events);
    tcase_add_test(tc, ended_report_from_whatever_exists);
}
