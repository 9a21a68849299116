/* check_gate_verdicts: the verdicts, in check_gate's "core" test case (check_gate.c builds the
 * suite): the verdict rules, the fixture's verdicts and planned actions, missing and empty
 * baselines and the baseline found from every run-directory layout, suspect efficiency, keep-last
 * de-duplication after a requeue with warm-up after each restart, and the rollback checkpoint.
 * Fixtures from gate_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"
#include "core/status.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

#include "gate_fixtures.h"

START_TEST(verdict_rules)
{
    struct gate_criterion k[3];
    memset(k, 0, sizeof k);
    for (int i = 0; i < 3; i++)
        k[i].status = GATE_GO;
    ck_assert_int_eq(gate_verdict_of(k, 3), GATE_VERDICT_GO);
    k[2].status = GATE_NA;
    ck_assert_int_eq(gate_verdict_of(k, 3), GATE_VERDICT_GO);
    k[1].status = GATE_HOLD;
    ck_assert_int_eq(gate_verdict_of(k, 3), GATE_VERDICT_HOLD);
    k[1].status = GATE_NOT_JUDGED;
    ck_assert_int_eq(gate_verdict_of(k, 3), GATE_VERDICT_HOLD);
    k[0].status = GATE_NO_GO;
    ck_assert_int_eq(gate_verdict_of(k, 3), GATE_VERDICT_NO_GO);
    ck_assert_str_eq(gate_verdict_name(GATE_VERDICT_NO_GO), "NO-GO");
    ck_assert_str_eq(gate_status_name(GATE_NOT_JUDGED), "not_judged");
}
END_TEST

START_TEST(fixture_verdicts_and_planned_actions)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    /* packet_loss: one node, no network to judge; unigram_margin: markov data, no text */
    for (int k = 0; k < GATE_N_CRIT; k++)
        ck_assert_msg(res.crit[k].status == (k == GATE_PACKET_LOSS || k == GATE_UNIGRAM_MARGIN
                                             ? GATE_NA : GATE_GO),
                      "%s: %s (%s)", res.crit[k].name, gate_status_name(res.crit[k].status),
                      res.crit[k].note);
    ck_assert_int_eq(res.verdict, GATE_VERDICT_GO);
    ck_assert_str_eq(res.action, "promote");
    ck_assert_str_eq(res.action_phase, "next");
    gate_result_free(&res);
    gate_input_free(&in);
    c.gates.throughput_go = 200; /* 128 is between: HOLD */
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.verdict, GATE_VERDICT_HOLD);
    ck_assert_str_eq(res.action, "stop");
    gate_result_free(&res);
    gate_input_free(&in);
    c.gates.throughput_no_go = 150; /* NO-GO; no checkpoints: rollback impossible */
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.verdict, GATE_VERDICT_NO_GO);
    ck_assert_str_eq(res.action, "stop");
    ck_assert_ptr_nonnull(strstr(res.action_note, "no checkpoint"));
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

START_TEST(missing_and_empty_baselines)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    snprintf(c.phase.previous, sizeof c.phase.previous, "nowhere");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_EFFICIENCY].status, GATE_NOT_JUDGED);
    ck_assert_int_eq(res.crit[GATE_LOSS_VS_BASELINE_PCT].status, GATE_NOT_JUDGED);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_EFFICIENCY].note, "no report of phase 'nowhere'"));
    ck_assert_int_eq(res.verdict, GATE_VERDICT_HOLD);
    gate_result_free(&res);
    gate_input_free(&in);
    c.phase.previous[0] = '\0';
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_EFFICIENCY].status, GATE_NA);
    ck_assert_int_eq(res.crit[GATE_LOSS_VS_BASELINE_PCT].status, GATE_NA);
    ck_assert(isnan(res.crit[GATE_EFFICIENCY].measured));
    gate_result_free(&res);
    gate_input_free(&in);
    snprintf(c.data.kind, sizeof c.data.kind, "random");
    c.model.vocab_size = 2048;
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_ENTROPY_GAP].status, GATE_NA);
    ck_assert_msg(strstr(res.crit[GATE_ENTROPY_GAP].note, "its floor ln V = 7.62462 nats is also "
                         "the loss of a model that has learned nothing") != NULL, "%s",
                  res.crit[GATE_ENTROPY_GAP].note);
    gate_result_free(&res);
    gate_input_free(&in);
    snprintf(c.data.kind, sizeof c.data.kind, "text");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_ENTROPY_GAP].status, GATE_NA);
    ck_assert_str_eq(res.crit[GATE_ENTROPY_GAP].note, "data.kind is text: no known entropy floor");
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* The phase's baseline (RUNROOT/<previous>/reports/<job>/report.json) is found from every
 * run-directory layout, an array task's included. */
START_TEST(baseline_found_from_task_and_rollback_dirs)
{
    static struct cfg c;
    static const char *const sub[] = {"phase", "phase/rollback-5", "phase/task-3",
                                      "phase/rollback-5/task-0"};
    fixture();
    config(&c);
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        struct gate_input in;
        struct rz_err err;
        memset(&in, 0, sizeof in);
        snprintf(in.run_dir, sizeof in.run_dir, "%s/%s", root, sub[i]);
        ck_assert_int_eq(gate_find_baseline(&in, &c, NULL, &err), RZ_OK);
        ck_assert_msg(in.baseline.present, "%s: %s", sub[i], in.baseline.reason);
        ck_assert_str_eq(in.baseline.phase, "base");
        ck_assert_double_eq(in.baseline.throughput, 64);
        gate_input_free(&in);
    }
    teardown_fixture();
}
END_TEST

START_TEST(suspect_efficiency_is_flagged)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    baseline_report(62.5); /* (128/2)/62.5 = 1.024 > 1.02 */
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_double_eq_tol(res.crit[GATE_EFFICIENCY].measured, 1.024, 1e-12);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_EFFICIENCY].note, "SUSPECT"));
    ck_assert_ptr_nonnull(strstr(res.suspect, "contention"));
    gate_result_free(&res);
    gate_input_free(&in);
    baseline_report(64); /* exactly 1: not suspect */
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_str_eq(res.suspect, "");
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

START_TEST(requeue_duplicates_keep_last_and_warmup_after_restart)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    for (int r = 0; r < 2; r++) {
        char rel[1024];
        snprintf(rel, sizeof rel, "%s/metrics/7/rank-%05d.jsonl", run, r);
        unlink(rel);
        metrics(r, 1, 20, 1, 1.0);   /* first run: steps 16..20 are lost (slow marker 1.0) */
        metrics(r, 16, 40, 1, 0.125); /* requeued from the checkpoint at 15: run_step 1.. */
    }
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_uint_eq(in.ranks[0].n_rows, 40);
    ck_assert_uint_eq(in.n_steps, 40);
    ck_assert_double_eq(in.ranks[1].rows[15].step_time_s, 0.125);
    ck_assert_int_eq(in.ranks[1].rows[15].run_step, 1);
    ck_assert_int_eq(in.steps[19].run_step, 5);
    /* steady: run_step > 5: steps 6..15 of the first run and 21..40 of the second */
    ck_assert_int_eq(res.crit[GATE_THROUGHPUT].samples, 30);
    ck_assert_uint_eq(res.n_restarts, 1);
    ck_assert_int_eq(res.restart_steps[0], 16);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

START_TEST(rollback_checkpoint_choice)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    for (int r = 0; r < 2; r++) { /* rank 1's sync check fails at step 40 */
        char rel[1024];
        snprintf(rel, sizeof rel, "%s/metrics/7/rank-%05d.jsonl", run, r);
        unlink(rel);
        metrics(r, 1, 39, 1, 0.125);
    }
    put("metrics/7/rank-00000.jsonl", "a", "{\"step\":40,\"samples_seen\":640,\"run_step\":40,"
        "\"loss\":3.96,\"step_time_s\":0.125,\"comm_time_s\":0,\"rss_bytes\":1,\"allreduce_s\":0,"
        "\"world_size\":2,\"sync_ok\":true,\"gnorm_post_spread\":0}\n");
    put("metrics/7/rank-00001.jsonl", "a", "{\"step\":40,\"samples_seen\":640,\"run_step\":40,"
        "\"loss\":3.96,\"step_time_s\":0.125,\"comm_time_s\":0,\"rss_bytes\":1,\"allreduce_s\":0,"
        "\"world_size\":2,\"sync_ok\":false,\"gnorm_post_spread\":0}\n");
    rz_err_clear(&err);
    ck_assert_int_eq(gate_read(&in, &c, run, &job7, &err), RZ_OK);
    struct gate_ckpt ck[4] = {{10, true, "c10"}, {20, true, "c20"}, {30, false, "c30"},
                              {40, true, "c40"}};
    in.ckpts = malloc(sizeof ck);
    memcpy(in.ckpts, ck, sizeof ck);
    in.n_ckpts = 4;
    ck_assert_int_eq(gate_evaluate(&res, &in, &c, &err), RZ_OK);
    ck_assert_double_eq(res.crit[GATE_SYNC_AGREEMENT].measured, 0.75);
    ck_assert_int_eq(res.crit[GATE_SYNC_AGREEMENT].status, GATE_NO_GO);
    ck_assert_int_eq(res.verdict, GATE_VERDICT_NO_GO);
    ck_assert_int_eq(res.last_good_sync_step, 30);
    ck_assert(res.has_rollback);
    ck_assert_int_eq(res.rollback_step, 20); /* 30 is damaged, 40 after the failed check */
    ck_assert_str_eq(res.rollback_path, "c20");
    ck_assert_str_eq(res.action, "rollback");
    ck_assert_str_eq(res.action_phase, "base");
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

void gate_verdicts_tests(TCase *tc)
{
    tcase_add_test(tc, verdict_rules);
    tcase_add_test(tc, fixture_verdicts_and_planned_actions);
    tcase_add_test(tc, missing_and_empty_baselines);
    tcase_add_test(tc, baseline_found_from_task_and_rollback_dirs);
    tcase_add_test(tc, suspect_efficiency_is_flagged);
    tcase_add_test(tc, requeue_duplicates_keep_last_and_warmup_after_restart);
    tcase_add_test(tc, rollback_checkpoint_choice);
}
