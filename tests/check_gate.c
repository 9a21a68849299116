#include "config.h"

/* check_gate: gate evaluation on tiny hand-written run directories (metrics of two ranks,
 * events.jsonl, summary.json, health.json, a baseline report) built in a mkdtemp directory:
 * every criterion at its boundaries in both directions, the verdict rules, missing and empty
 * baselines, suspect efficiency, keep-last de-duplication after a requeue, warm-up after each
 * restart, the rollback checkpoint, malformed inputs (truncated line, missing rank, non-number
 * loss, bad JSON) with their file:line, and the report files: report.md's first line, gate.prom
 * syntax, report.json as the next baseline, and report.html's structure (balanced tags, four
 * charts, one loss point per downsampled metrics point, metric values in data attributes).
 * Checkpoints are injected into struct gate_input: ckpt_list itself is tested in check_ckpt. */

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "core/status.h"
#include "core/util.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"
#include "record/health.h"
#include "record/report.h"
#include "core/json.h"
#include "core/json_read.h"
#include "testutil.h"

/* ---- fixtures -------------------------------------------------------------------------------- */

static char root[256], run[512];
static double val_base = NAN; /* not NaN: metrics() adds val_loss = val_base + 0.001 s every 5 steps */

static void put(const char *rel, const char *mode, const char *text)
{
    char path[1024], dir[1024];
    snprintf(path, sizeof path, "%s/%s", run, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    ck_assert_int_eq(rz_mkdirs(dir, NULL), RZ_OK);
    FILE *f = fopen(path, mode);
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Steps [from, to] of one rank of job 7, run_step counting from run0; sync check every 10. */
static void metrics(int rank, int from, int to, int run0, double step_time)
{
    char rel[64], line[1024];
    snprintf(rel, sizeof rel, "metrics/7/rank-%05d.jsonl", rank);
    for (int s = from; s <= to; s++) {
        int n = snprintf(line, sizeof line,
                         "{\"step\":%d,\"samples_seen\":%d,\"run_step\":%d,\"loss\":%.9g,\"lr\":"
                         "0.0005,\"grad_norm\":1,\"step_time_s\":%.9g,\"comm_time_s\":0.0078125,"
                         "\"samples_per_sec\":128,\"tokens_per_sec\":1,\"mfu\":0.5,\"rss_bytes\":"
                         "1073741824,\"allreduce_s\":0.001953125,\"compute_time_s\":%.9g,"
                         "\"grad_allreduce_s\":0.03125,\"world_size\":2",
                         s, 16 * s, run0 + s - from, 4.0 - 0.001 * s, step_time,
                         rank == 1 ? 0.09375 : 0.0625);
        if (!isnan(val_base) && s % 5 == 0)
            n += snprintf(line + n, sizeof line - (size_t)n, ",\"val_loss\":%.9g",
                          val_base + 0.001 * s);
        if (s % 10 == 0)
            snprintf(line + n, sizeof line - (size_t)n, ",\"sync_ok\":true,\"param_spread\":0,"
                     "\"gnorm_pre_min\":1,\"gnorm_pre_max\":1,\"gnorm_post_spread\":1e-06}\n");
        else
            snprintf(line + n, sizeof line - (size_t)n, "}\n");
        put(rel, "a", line);
    }
}

static void baseline_report_with(double throughput, const char *more)
{
    char text[512];
    snprintf(text, sizeof text, "{\"verdict\":\"GO\",\"phase\":\"base\",\"job\":\"1\","
             "\"throughput\":%.9g,\"world_size\":1,\"loss_curve\":[[0,3.96],[1000,3.96]]%s}\n",
             throughput, more);
    char saved[512];
    snprintf(saved, sizeof saved, "%s", run);
    snprintf(run, sizeof run, "%s/base", root);
    put("reports/1/report.json", "w", text);
    snprintf(run, sizeof run, "%s", saved);
}

static void baseline_report(double throughput)
{
    baseline_report_with(throughput, "");
}

/* A complete, healthy run of 40 steps on 2 ranks of one node: throughput 128 samples/s, comm
 * 1/16, allreduce 1.953125 ms, memory 0.5, uptime 0.5, one failure requeue, efficiency 1. */
static void fixture(void)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(root, sizeof root, "%s/check_gate.XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(run, sizeof run, "%s/phase", root);
    for (int r = 0; r < 2; r++)
        metrics(r, 1, 40, 1, 0.125);
    put("events.jsonl", "w",
        "{\"time\":\"x\",\"t\":1000,\"job\":\"7\",\"restart\":0,\"phase\":\"phase\",\"event\":"
        "\"start\",\"message\":\"\"}\n"
        "{\"time\":\"x\",\"t\":1001,\"job\":\"7\",\"restart\":0,\"phase\":\"phase\",\"event\":"
        "\"requeue\",\"message\":\"\",\"reason\":\"failure\",\"status\":70,\"failures\":1}\n"
        "{\"time\":\"x\",\"t\":1002,\"job\":\"6\",\"restart\":0,\"phase\":\"phase\",\"event\":"
        "\"promote\",\"message\":\"\",\"next_job\":\"7\"}\n"
        "{\"time\":\"x\",\"t\":1010,\"job\":\"7\",\"restart\":1,\"phase\":\"phase\",\"event\":"
        "\"train_exit\",\"message\":\"\",\"status\":0}\n");
    put("summary.json", "w", "{\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":3.9,"
        "\"entropy_floor\":3.9,\"restarts\":1},\"rank_results\":[{\"rank\":0,\"host\":"
        "\"n1\",\"steps\":40,\"network\":{\"seconds\":5,\"tcp_segments_sent\":10000,"
        "\"tcp_retransmitted\":5,\"tx_bytes\":4e6,\"rx_bytes\":4e6,\"drops\":0,"
        "\"errors\":0}},{\"rank\":1,\"host\":\"n1\",\"steps\":40}]}\n");
    put("health.json", "w", "{\"ok\":true,\"ranks\":[{\"rank\":0,\"host\":\"n1\",\"isa\":"
        "\"avx2\",\"mem_total_bytes\":4294967296},{\"rank\":1,\"host\":\"n1\",\"isa\":\"avx2\","
        "\"mem_total_bytes\":4294967296}]}\n");
    baseline_report(64);
}

static void config(struct cfg *c)
{
    cfg_defaults(c);
    c->training.batch_size = 8;
    c->training.warmup_bench = 5;
    snprintf(c->data.kind, sizeof c->data.kind, "markov");
    snprintf(c->phase.previous, sizeof c->phase.previous, "base");
    snprintf(c->phase.next, sizeof c->phase.next, "next");
    c->gates.min_duration_h = 0;
    c->gates.failures_go = 1;
    c->gates.throughput_go = 100;
    c->gates.throughput_no_go = 50;
    c->gates.uptime_go = 0.5;
    c->gates.uptime_no_go = 0.4;
    c->gates.straggler_ratio_go = 1.2;
    c->gates.straggler_ratio_no_go = 1.5;
    c->gates.packet_loss_go = 0.001; /* the fixture's node retransmitted 5 of 10000 */
    c->gates.packet_loss_no_go = 0.002;
}

static void teardown_fixture(void)
{
    rz_test_rmtree(root);
}

static const struct gate_opts job7 = {.job = "7", .status = -1};

/* A stream on *text for a report section, with a JSON object begun on j; the caller ends the
 * object, closes the stream and frees the text. */
static FILE *section_open(char **text, size_t *len, struct rz_json *j)
{
    FILE *f = open_memstream(text, len);
    ck_assert_ptr_nonnull(f);
    rz_json_init(j, f);
    rz_json_object_begin(j);
    return f;
}

static enum rz_status judge(struct gate_input *in, struct gate_result *res, const struct cfg *c,
                            struct rz_err *err)
{
    rz_err_clear(err);
    enum rz_status st = gate_read(in, c, run, &job7, err);
    if (st == RZ_OK)
        st = gate_evaluate(res, in, c, err);
    return st;
}

/* ---- core ------------------------------------------------------------------------------------ */

START_TEST(judge_boundaries_both_directions)
{
    ck_assert_int_eq(gate_judge(250, 250, 200, true), GATE_GO);
    ck_assert_int_eq(gate_judge(249.999, 250, 200, true), GATE_HOLD);
    ck_assert_int_eq(gate_judge(200, 250, 200, true), GATE_HOLD);
    ck_assert_int_eq(gate_judge(199.999, 250, 200, true), GATE_NO_GO);
    ck_assert_int_eq(gate_judge(0.1, 0.1, 0.2, false), GATE_GO);
    ck_assert_int_eq(gate_judge(0.15, 0.1, 0.2, false), GATE_HOLD);
    ck_assert_int_eq(gate_judge(0.2, 0.1, 0.2, false), GATE_HOLD);
    ck_assert_int_eq(gate_judge(0.2001, 0.1, 0.2, false), GATE_NO_GO);
    ck_assert_int_eq(gate_judge(1, 1, 1, true), GATE_GO); /* sync: go 1, no-go < 1 */
    ck_assert_int_eq(gate_judge(0.99, 1, 1, true), GATE_NO_GO);
    ck_assert_int_eq(gate_judge(NAN, 1, 1, true), GATE_NOT_JUDGED);
}
END_TEST

START_TEST(fixture_measures_what_was_written)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(in.world_size, 2);
    ck_assert_uint_eq(in.n_steps, 40);
    ck_assert_double_eq(res.crit[GATE_THROUGHPUT].measured, 128.0);
    ck_assert_int_eq(res.crit[GATE_THROUGHPUT].samples, 35);
    ck_assert_double_eq(res.crit[GATE_EFFICIENCY].measured, 1.0);
    ck_assert_double_eq(res.crit[GATE_COMM].measured, 0.0625);
    ck_assert_double_eq(res.crit[GATE_ALLREDUCE_P99_MS].measured, 1.953125);
    ck_assert_double_eq(res.crit[GATE_SYNC_AGREEMENT].measured, 1.0);
    ck_assert_int_eq(res.crit[GATE_SYNC_AGREEMENT].samples, 4);
    ck_assert_double_eq_tol(res.crit[GATE_GRAD_NORM_SPREAD].measured, 1e-6, 1e-15);
    ck_assert_double_eq(res.crit[GATE_MEMORY].measured, 0.5);
    ck_assert_double_eq(res.crit[GATE_UPTIME].measured, 0.5);
    ck_assert_double_eq(res.crit[GATE_FAILURES].measured, 1.0);
    /* compute 0.0625 s on rank 0, 0.09375 s on rank 1: median 0.078125, ratio 1.2 */
    ck_assert_double_eq_tol(res.crit[GATE_STRAGGLER_RATIO].measured, 1.2, 1e-12);
    ck_assert_int_eq(res.straggler_rank, 1);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_STRAGGLER_RATIO].note, "slowest rank 1 (n1): "
                                 "93.75 ms of compute per step, 1.2x the median rank's 78.12"));
    /* last 10 steps: loss 4 - 0.001 s for s = 31..40, mean 3.9645; floor 3.9 */
    ck_assert_double_eq_tol(res.crit[GATE_ENTROPY_GAP].measured, 0.0645, 1e-9);
    /* overlap 16..640 samples, last 10%: steps 37..40, mean loss 3.9615 vs baseline 3.96 */
    ck_assert_double_eq_tol(res.crit[GATE_LOSS_VS_BASELINE_PCT].measured,
                            100.0 * 0.0015 / 3.96, 1e-9);
    ck_assert_int_eq(res.crit[GATE_LOSS_VS_BASELINE_PCT].samples, 4);
    ck_assert_int_eq(res.crit[GATE_DURATION].status, GATE_GO);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* With validation losses in the metrics, the loss criteria judge them, against the baseline's
 * validation curve when it has one; report.json carries them for the next phase. */
START_TEST(validation_loss_is_judged_when_present)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    val_base = 3.0;
    fixture();
    val_base = NAN;
    config(&c);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert(isnan(in.steps[3].val_loss));
    ck_assert_double_eq_tol(in.steps[4].val_loss, 3.005, 1e-12);
    /* validations at steps 5, 10, .., 40 (8 of them): mean 3.0225, floor 3.9 */
    ck_assert_double_eq_tol(res.crit[GATE_ENTROPY_GAP].measured, 3.0225 - 3.9, 1e-9);
    ck_assert_int_eq(res.crit[GATE_ENTROPY_GAP].samples, 8);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_ENTROPY_GAP].note, "mean validation loss of the "
                                 "last 8 validations"));
    /* overlap 80..640 samples, last 10% from 584: step 40 only, 3.04 vs the training curve */
    ck_assert_double_eq_tol(res.crit[GATE_LOSS_VS_BASELINE_PCT].measured,
                            100.0 * (3.04 - 3.96) / 3.96, 1e-9);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_LOSS_VS_BASELINE_PCT].note,
                                 "(the baseline has only training losses)"));
    ck_assert_uint_eq(res.n_val, 8);
    ck_assert_double_eq(res.val_curve[0], 80.0);
    char dir[1024], warn[256], path[1100];
    struct gate_doc doc;
    gate_doc_build(&doc, &in, &res, &c);
    ck_assert_int_eq(gate_write_reports(&doc, dir, sizeof dir, warn, sizeof warn, &err), RZ_OK);
    struct gate_baseline b = {0};
    snprintf(path, sizeof path, "%s/report.json", dir);
    ck_assert_int_eq(gate_read_baseline(&b, path, &err), RZ_OK);
    ck_assert_uint_eq(b.n_val_curve, 8);
    ck_assert_double_eq_tol(b.val_curve[15], 3.04, 1e-12);
    free(b.curve);
    free(b.val_curve);
    gate_result_free(&res);
    gate_input_free(&in);
    /* a baseline with validation losses: compared with those */
    baseline_report_with(64, ",\"val_loss_curve\":[[0,3.0],[1000,3.0]]");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_double_eq_tol(res.crit[GATE_LOSS_VS_BASELINE_PCT].measured,
                            100.0 * 0.04 / 3.0, 1e-9);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_LOSS_VS_BASELINE_PCT].note,
                                 "mean validation loss 3.04 vs baseline 3"));
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

static char *slurp(const char *path)
{
    char *text = NULL;
    size_t len;
    ck_assert_int_eq(rz_read_file(path, &text, &len, NULL), RZ_OK);
    return text;
}

/* summary.json's predicted peak RSS (the memory planner) against the measured one, in the memory
 * criterion's note and report.json's per_rank. */
START_TEST(memory_plan_against_measured)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    put("summary.json", "w", "{\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":3.9,"
        "\"restarts\":1},\"rank_results\":[{\"rank\":0,\"host\":\"n1\",\"predicted_peak_rss_"
        "bytes\":1000000000},{\"rank\":1,\"host\":\"n1\",\"predicted_peak_rss_bytes\":"
        "900000000}]}\n");
    config(&c);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_MEMORY].note, "rank 0: peak RSS 1074 MB "
                                 "measured, 1000 MB predicted by the memory plan (+7.4%)"));
    char dir[1024], warn[256], path[1100];
    struct gate_doc doc;
    gate_doc_build(&doc, &in, &res, &c);
    ck_assert_int_eq(gate_write_reports(&doc, dir, sizeof dir, warn, sizeof warn, &err), RZ_OK);
    snprintf(path, sizeof path, "%s/report.json", dir);
    char *json = slurp(path);
    ck_assert_ptr_nonnull(strstr(json, "\"peak_rss_bytes\":1073741824,\"predicted_peak_rss_bytes\":"
                                       "900000000"));
    free(json);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* Threshold fields of each judged criterion, so each can be put exactly at its measurement. */
static void thresholds(struct cfg *c, int k, double **go, double **no_go)
{
    struct cfg_gates *g = &c->gates;
    double *t[][2] = {
#define FIELDS(ID, name, ...) [GATE_##ID] = {&g->name##_go, &g->name##_no_go},
        RZ_GATES(FIELDS) /* config/gate_list.h */
#undef FIELDS
    };
    *go = t[k][0];
    *no_go = t[k][1];
}

static enum gate_status status_with(struct cfg *c, int k, double go, double no_go)
{
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    double *pg, *pn;
    thresholds(c, k, &pg, &pn);
    *pg = go;
    *pn = no_go;
    ck_assert_int_eq(judge(&in, &res, c, &err), RZ_OK);
    enum gate_status s = res.crit[k].status;
    gate_result_free(&res);
    gate_input_free(&in);
    return s;
}

START_TEST(each_criterion_at_its_boundaries)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    for (int k = 0; k < GATE_DURATION; k++) {
        double m = res.crit[k].measured, d = fmax(fabs(m) * 1e-6, 1e-12);
        bool hi = res.crit[k].higher_is_better;
        double s = hi ? 1 : -1; /* the "better" direction */
        ck_assert_msg(!isnan(m), "%s not measured", res.crit[k].name);
        ck_assert_msg(status_with(&c, k, m, m - s * d) == GATE_GO, "%s at go", res.crit[k].name);
        ck_assert_msg(status_with(&c, k, m + s * d, m - s * d) == GATE_HOLD, "%s hold",
                      res.crit[k].name);
        ck_assert_msg(status_with(&c, k, m + 2 * s * d, m + s * d) == GATE_NO_GO, "%s no-go",
                      res.crit[k].name);
        ck_assert_msg(status_with(&c, k, m + 2 * s * d, m) == GATE_HOLD, "%s at no-go",
                      res.crit[k].name);
        config(&c);
    }
    ck_assert_int_eq(res.crit[GATE_THROUGHPUT].higher_is_better, true);
    ck_assert_int_eq(res.crit[GATE_COMM].higher_is_better, false);
    gate_result_free(&res);
    gate_input_free(&in);
    /* duration: too short is HOLD, never NO-GO */
    c.gates.min_duration_h = 1;
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_DURATION].status, GATE_HOLD);
    gate_result_free(&res);
    gate_input_free(&in);
    c.gates.min_duration_h = 0;
    c.gates.min_steps = 41;
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_DURATION].status, GATE_HOLD);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* packet_loss at its defaults (GO at none, NO-GO above 0.1%): the worst node is judged and named,
 * the others and the wire bytes per step are in the note; without counters it is not judged. */
static void summary_net(const char *n1, const char *n2)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":3.9,"
             "\"num_parameters\":250000,\"restarts\":1},\"rank_results\":[{\"rank\":0,"
             "\"host\":\"n1\",\"steps\":40%s},{\"rank\":1,\"host\":\"n2\",\"steps\":40%s}]}\n",
             n1, n2);
    put("summary.json", "w", text);
}

START_TEST(packet_loss_names_the_worst_node)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    cfg_defaults(&c);
    const char *clean = ",\"network\":{\"seconds\":4,\"tcp_segments_sent\":10000,"
                        "\"tcp_retransmitted\":0,\"tx_bytes\":8e6,\"drops\":1,\"errors\":0}";
    const char *lossy = ",\"network\":{\"seconds\":4,\"tcp_segments_sent\":20000,"
                        "\"tcp_retransmitted\":400,\"tx_bytes\":12e6,\"drops\":0,\"errors\":2}";
    const char *one = ",\"network\":{\"seconds\":4,\"tcp_segments_sent\":20000,"
                      "\"tcp_retransmitted\":1,\"tx_bytes\":12e6,\"drops\":0,\"errors\":0}";
    summary_net(clean, lossy);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    const struct gate_criterion *k = &res.crit[GATE_PACKET_LOSS];
    ck_assert_int_eq(k->status, GATE_NO_GO);
    ck_assert_double_eq_tol(k->measured, 0.02, 1e-12);
    ck_assert_msg(strstr(k->note, "worst node n2: 400 of 20000 TCP segments retransmitted (2%)")
                  != NULL, "%s", k->note);
    ck_assert_msg(strstr(k->note, "n1 0 of 10000") != NULL, "%s", k->note);
    ck_assert_msg(strstr(k->note, "interfaces: 1 drop(s), 2 error(s)") != NULL, "%s", k->note);
    /* 20 MB over 40 steps: 0.5 MB a step against 1 MB of fp32 gradient */
    ck_assert_msg(strstr(k->note, "0.5 MB sent per step by the 2 node(s), 0.5x the gradient's "
                         "1 MB") != NULL, "%s", k->note);
    gate_result_free(&res);
    gate_input_free(&in);
    summary_net(clean, one); /* 1 in 20000: 0.005%, between GO (0) and NO-GO (0.1%) */
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_HOLD);
    gate_result_free(&res);
    gate_input_free(&in);
    summary_net(clean, clean);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_GO);
    gate_result_free(&res);
    gate_input_free(&in);
    summary_net("", "");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_NOT_JUDGED);
    ck_assert_str_eq(res.lossy_host, "");
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_PACKET_LOSS].note, "no network counters"));
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* Three nodes, n2's link lossy both ways: n1 -> n2, n2 -> n1, n2 -> n3 and n3 -> n2 lose 2%;
 * n1 -> n3 resends 0.3%, over the NO-GO threshold but as congestion does, under half the worst
 * link's share.  Every lossy link is n2's, though n1 resent as large a share as n2 did. */
START_TEST(packet_loss_names_the_node_of_every_lossy_link)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    cfg_defaults(&c);
    put("summary.json", "w",
        "{\"num_processes\":3,\"aggregated_metrics\":{\"avg_loss\":3.9},\"rank_results\":["
        "{\"rank\":0,\"host\":\"n1\",\"steps\":40,\"network\":{\"tcp_segments_sent\":2000,"
        "\"tcp_retransmitted\":20,\"peers\":[{\"host\":\"n2\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20},{\"host\":\"n3\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":3}]}},"
        "{\"rank\":1,\"host\":\"n2\",\"steps\":40,\"network\":{\"tcp_segments_sent\":2000,"
        "\"tcp_retransmitted\":40,\"peers\":[{\"host\":\"n1\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20},{\"host\":\"n3\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20}]}},"
        "{\"rank\":2,\"host\":\"n3\",\"steps\":40,\"network\":{\"tcp_segments_sent\":2000,"
        "\"tcp_retransmitted\":20,\"peers\":[{\"host\":\"n1\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":0},{\"host\":\"n2\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20}]}}]}\n");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    const struct gate_criterion *k = &res.crit[GATE_PACKET_LOSS];
    ck_assert_int_eq(k->status, GATE_NO_GO);
    ck_assert_str_eq(res.lossy_host, "n2");
    ck_assert_msg(strstr(k->note, "links over 1%: n1 -> n2 2% (20 of 1000); n2 -> n1 2%") != NULL,
                  "%s", k->note);
    ck_assert_msg(strstr(k->note, "every lossy link is n2's") != NULL, "%s", k->note);
    ck_assert_ptr_null(strstr(k->note, "n1 -> n3"));
    /* the report's section: JSON, Markdown and HTML name n2 */
    char *text = NULL;
    size_t len = 0;
    struct rz_json j;
    FILE *f = section_open(&text, &len, &j);
    gate_json_network(&j, &in, &res);
    rz_json_object_end(&j);
    gate_md_network(f, &in, &res);
    gate_html_network(f, &in, &res);
    fclose(f);
    ck_assert_msg(strstr(text, "{\"network\":{\"lossy_host\":\"n2\",") != NULL, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "\"retransmit_share\":0.02,"));
    ck_assert_ptr_nonnull(strstr(text, "Every lossy link is **n2**'s."));
    ck_assert_ptr_nonnull(strstr(text, "| n2 | 2000 | 40 | 2% |"));
    ck_assert_ptr_nonnull(strstr(text, "<strong id=\"lossy-host\">n2</strong>"));
    free(text);
    gate_result_free(&res);
    gate_input_free(&in);
    /* two nodes: no end can be named */
    put("summary.json", "w",
        "{\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":3.9},\"rank_results\":["
        "{\"rank\":0,\"host\":\"n1\",\"steps\":40,\"network\":{\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20,\"peers\":[{\"host\":\"n2\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20}]}},"
        "{\"rank\":1,\"host\":\"n2\",\"steps\":40,\"network\":{\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20,\"peers\":[{\"host\":\"n1\",\"tcp_segments_sent\":1000,"
        "\"tcp_retransmitted\":20}]}}]}\n");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_str_eq(res.lossy_host, "");
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_PACKET_LOSS].note, "two nodes: a lossy link "
                                                                 "cannot tell which end loses"));
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* The gradient all-reduce's own time and its exposed part, apart from the small collective. */
START_TEST(grad_allreduce_quantiles)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    config(&c);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_double_eq_tol(res.grad_p50_ms, 31.25, 1e-9);
    ck_assert_double_eq_tol(res.grad_p99_ms, 31.25, 1e-9);
    ck_assert_double_eq_tol(res.exposed_p50_ms, 7.8125, 1e-9);
    ck_assert_double_eq_tol(res.allreduce_p50_ms, 1.953125, 1e-9);
    const char *note = res.crit[GATE_ALLREDUCE_P99_MS].note;
    ck_assert_msg(strstr(note, "the small collective (loss, stop flag, norms): p50 1.953 ms") &&
                  strstr(note, "the gradient all-reduce: p50 31.25 ms, p99 31.25 ms, of which "
                               "exposed p50 7.812 ms, p99 7.812 ms"), "%s", note);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* Rank 0's rows as written: steps 1-17 at 1 s each, a stop, steps 16-20 again 40 s later: one
 * recovery of 40 s with 2 steps redone, its cause from the events between the two runs. */
START_TEST(recoveries_from_the_runs_and_events)
{
    static struct gate_input in;
    struct gate_row rows[22];
    memset(&in, 0, sizeof in);
    size_t n = 0;
    for (int s = 1; s <= 17; s++)
        rows[n++] = (struct gate_row){.step = s, .run_step = s, .time = 1000.0 + s};
    for (int s = 16; s <= 20; s++)
        rows[n++] = (struct gate_row){.step = s, .run_step = s - 15, .time = 1057.0 + s - 16};
    gate_recoveries_scan(&in, rows, n);
    ck_assert_int_eq(in.n_recov, 1);
    ck_assert_int_eq(in.recov[0].last_step, 17);
    ck_assert_int_eq(in.recov[0].first_step, 16);
    ck_assert_int_eq(in.recov[0].redone, 2);
    ck_assert_double_eq_tol(in.recov[0].seconds, 40.0, 1e-9);
    struct gate_event ev[5] = {
        {.job = "7", .event = "attempt_end", .t = 1020, .summary = "status 0: crash (requeued); "
                                                                  "a new checkpoint"},
        {.job = "7", .event = "requeue", .reason = "slurm", .t = 1021},
        {.job = "7", .event = "nodes_lost", .nodes = "n2", .t = 1050},
        {.job = "7", .event = "start", .t = 1100}, /* after the second run began: not its cause */
        {.job = "7", .event = "node_excluded", .nodes = "n2", .t = 1101},
    };
    size_t idx[5] = {0, 1, 2, 3, 4};
    in.events = ev;
    in.n_events = 5;
    in.job_events = idx;
    in.n_job_events = 5;
    gate_recoveries_causes(&in);
    ck_assert_str_eq(in.recov[0].cause, "attempt ended: status 0: crash (requeued); requeued (slurm); "
                                        "network fault: n2 unreachable");
    ck_assert_str_eq(in.recov[0].lost, "n2");
    /* a restart in the job's own allocation says so (restart.failures relaunch) */
    ev[1] = (struct gate_event){.job = "7", .event = "relaunch", .reason = "failure", .t = 1021};
    in.recov[0].lost[0] = in.recov[0].cause[0] = '\0';
    gate_recoveries_causes(&in);
    ck_assert_str_eq(in.recov[0].cause, "attempt ended: status 0: crash (requeued); relaunched in "
                                        "the allocation (failure); network fault: n2 unreachable");
    /* the nodes it lost and those excluded for the ladder; the checkpoint interval and why */
    ck_assert_str_eq(in.nodes_failed, "n2");
    ck_assert_str_eq(in.nodes_excluded, "n2");
    in.ckpt_policy = (struct gate_ckpt_policy){.known = true, .mode = "async",
                                               .policy = "young_daly", .interval_steps = 13,
                                               .failed = 2,
                                               .stall_ms_mean = 0.04, .commit_ms_mean = 37,
                                               .why = "checkpoint.policy young_daly: sqrt(...)"};
    /* the report: JSON, Markdown and HTML */
    char *text = NULL;
    size_t len = 0;
    struct rz_json j;
    FILE *f = section_open(&text, &len, &j);
    gate_json_recoveries(&j, &in);
    rz_json_object_end(&j);
    gate_md_recoveries(f, &in);
    gate_html_recoveries(f, &in);
    fclose(f);
    ck_assert_msg(strstr(text, "{\"recoveries\":[{\"last_step\":17,\"first_step\":16,"
                               "\"steps_redone\":2,\"seconds\":40,\"lost_nodes\":\"n2\",") != NULL,
                  "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "| 17 | 16 | 40.0 | 2 | attempt ended"));
    ck_assert_ptr_nonnull(strstr(text, "<table id=\"recoveries\">"));
    /* the time lost, by kind: a lost node is the stop's kind, above the relaunch after it */
    ck_assert_str_eq(in.recov[0].kind, "lost node");
    ck_assert_msg(strstr(text, "\"time_lost_by_kind\":[{\"kind\":\"lost node\",\"seconds\":40,"
                               "\"stops\":1,\"steps_redone\":2}]") != NULL, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "Time lost by kind of restart: lost node 40.0 s in 1 "
                                       "stop(s), 2 step(s) redone."));
    ck_assert_ptr_nonnull(strstr(text, "<p id=\"time-lost\">Time lost by kind of restart: lost "
                                       "node 40.0 s"));
    ck_assert_msg(strstr(text, "\"nodes_lost\":\"n2\",\"nodes_excluded\":\"n2\","
                               "\"checkpoint_interval\":{\"mode\":\"async\",\"policy\":"
                               "\"young_daly\",\"steps\":13,\"failed\":2,\"why\":\"checkpoint.policy "
                               "young_daly: sqrt(...)\"") != NULL, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "## Checkpoints and nodes\n\nCheckpoints: async, every 13 "
                                       "steps (checkpoint.policy young_daly: sqrt(...)); "));
    ck_assert_ptr_nonnull(strstr(text, "Nodes lost: n2. Excluded for the rest of the ladder"));
    ck_assert_ptr_nonnull(strstr(text, "<p id=\"checkpoint-interval\">Checkpoints: async"));
    /* periodic checkpoints not written are counted, in both formats */
    const char *unwritten = strstr(text, "ms. 2 periodic checkpoint(s) could not be written");
    ck_assert_ptr_nonnull(unwritten); /* the Markdown's line, then the HTML's */
    ck_assert_ptr_nonnull(strstr(unwritten + 1, "2 periodic checkpoint(s) could not be written"));
    free(text);
    /* without a lost node, the relaunch is the kind */
    snprintf(ev[2].event, sizeof ev[2].event, "start");
    in.recov[0].kind[0] = in.recov[0].cause[0] = in.recov[0].lost[0] = '\0';
    gate_recoveries_causes(&in);
    ck_assert_str_eq(in.recov[0].kind, "relaunch (failure)");
    /* metrics without times: the recovery is there, its time unknown */
    for (size_t i = 0; i < n; i++)
        rows[i].time = NAN;
    gate_recoveries_scan(&in, rows, n);
    in.n_job_events = 0;
    gate_recoveries_causes(&in);
    ck_assert_int_eq(in.n_recov, 1);
    ck_assert(isnan(in.recov[0].seconds));
    ck_assert_str_eq(in.recov[0].cause, "unknown (no times in the metrics)");
    /* one run: none */
    gate_recoveries_scan(&in, rows, 17);
    ck_assert_int_eq(in.n_recov, 0);
}
END_TEST

/* Where the ranks ran: the dev cluster's four nodes are one machine (one boot id) of 2 CPUs, so
 * each of 16 ranks has an eighth of a core; two machines of 4 CPUs with a rank bound to each CPU
 * give each rank a whole core, bound. */
START_TEST(topology_from_the_ranks)
{
    static struct gate_input in;
    static struct health_rank r[16];
    struct health_doc h = {.ranks = r, .n_ranks = 16};
    memset(&in, 0, sizeof in);
    memset(r, 0, sizeof r);
    for (int i = 0; i < 16; i++) {
        r[i].rank = i;
        snprintf(r[i].host, sizeof r[i].host, "n%d", 1 + i / 4);
        snprintf(r[i].machine, sizeof r[i].machine, "4b3c-boot");
        snprintf(r[i].cpus, sizeof r[i].cpus, "0-1");
        r[i].omp_threads = 1;
        r[i].cpu_quota = NAN;
    }
    gate_topology_read(&in, &h);
    ck_assert_int_eq(in.topo.n_nodes, 4);
    ck_assert_int_eq(in.topo.n_machines, 1);
    ck_assert_double_eq_tol(in.topo.cores_per_rank, 0.125, 1e-12);
    ck_assert(!in.topo.any_bound);
    ck_assert_int_eq(in.topo.node[3].machine_cpus, 2);
    ck_assert_int_eq(in.topo.node[3].machine_ranks, 16);
    ck_assert(isnan(in.topo.node[0].cpu_quota));
    /* each node held to half a core by its cgroup's quota (the dev cluster's default): with 4
     * ranks on a node each has an eighth of a core, with one rank on each of 2 nodes half a
     * core, not the machine's 2 CPUs over 2 ranks */
    for (int i = 0; i < 16; i++)
        r[i].cpu_quota = 0.5;
    r[5].cpu_quota = 0.25; /* the tightest its ranks saw */
    gate_topology_read(&in, &h);
    ck_assert_double_eq_tol(in.topo.node[0].cores_per_rank, 0.125, 1e-12);
    ck_assert_double_eq_tol(in.topo.node[1].cpu_quota, 0.25, 1e-12);
    ck_assert_double_eq_tol(in.topo.node[1].cores_per_rank, 0.0625, 1e-12);
    ck_assert_double_eq_tol(in.topo.cores_per_rank, 0.0625, 1e-12);
    h.n_ranks = 2;
    for (int i = 0; i < 2; i++)
        snprintf(r[i].host, sizeof r[i].host, "n%d", 1 + i);
    gate_topology_read(&in, &h);
    ck_assert_int_eq(in.topo.n_nodes, 2);
    ck_assert_double_eq_tol(in.topo.cores_per_rank, 0.5, 1e-12); /* not 2 CPUs / 2 ranks */
    r[0].cpu_quota = r[1].cpu_quota = NAN;
    gate_topology_read(&in, &h);
    ck_assert_double_eq_tol(in.topo.cores_per_rank, 1.0, 1e-12);
    for (int i = 0; i < 16; i++) {
        r[i].cpu_quota = NAN;
        snprintf(r[i].host, sizeof r[i].host, "n%d", 1 + i / 4);
    }
    h.n_ranks = 16;
    /* two machines of 4 CPUs, one rank bound to each */
    h.n_ranks = 8;
    for (int i = 0; i < 8; i++) {
        snprintf(r[i].host, sizeof r[i].host, "n%d", 1 + i / 4);
        snprintf(r[i].machine, sizeof r[i].machine, "boot-%d", i / 4);
        snprintf(r[i].cpus, sizeof r[i].cpus, "%d", i % 4);
    }
    gate_topology_read(&in, &h);
    ck_assert_int_eq(in.topo.n_machines, 2);
    ck_assert_double_eq_tol(in.topo.cores_per_rank, 1.0, 1e-12);
    ck_assert(in.topo.any_bound && in.topo.node[0].bound);
    ck_assert_int_eq(in.topo.node[1].machine_cpus, 4);
    /* an older file without boot ids: each host its own machine; "0-3,8" is 5 CPUs */
    h.n_ranks = 2;
    r[0].machine[0] = r[1].machine[0] = '\0';
    snprintf(r[0].cpus, sizeof r[0].cpus, "0-3,8");
    snprintf(r[1].cpus, sizeof r[1].cpus, "0-3,8");
    snprintf(r[1].host, sizeof r[1].host, "n1");
    gate_topology_read(&in, &h);
    ck_assert_int_eq(in.topo.n_machines, 1);
    ck_assert_int_eq(in.topo.node[0].machine_cpus, 5);
    ck_assert_double_eq_tol(in.topo.cores_per_rank, 1.0, 1e-12); /* 1 thread each */
    char *text = NULL;
    size_t len = 0;
    struct rz_json j;
    FILE *f = section_open(&text, &len, &j);
    gate_json_topology(&j, &in);
    rz_json_object_end(&j);
    gate_md_topology(f, &in);
    fclose(f);
    ck_assert_msg(strstr(text, "{\"topology\":{\"nodes\":1,\"machines\":1,\"cores_per_rank\":1,")
                  != NULL, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "| n1 | n1 | 2 | 1 | 0-3,8 | 5 / 2 | none | 1 |"));
    free(text);
}
END_TEST

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
    for (int k = 0; k < GATE_N_CRIT; k++)
        ck_assert_msg(res.crit[k].status == GATE_GO, "%s: %s (%s)", res.crit[k].name,
                      gate_status_name(res.crit[k].status), res.crit[k].note);
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

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Every tag opened is closed in order; void and self-closed ones stand alone. */
static void assert_balanced(const char *html)
{
    char stack[64][32];
    int depth = 0;
    for (const char *p = strchr(html, '<'); p != NULL; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        ck_assert_ptr_nonnull(end);
        if (p[1] == '!')
            continue;
        bool closing = p[1] == '/';
        const char *n = p + 1 + closing;
        size_t len = strcspn(n, " />\n");
        char name[32];
        ck_assert_uint_lt(len, sizeof name);
        memcpy(name, n, len);
        name[len] = '\0';
        if (closing) {
            ck_assert_msg(depth > 0 && strcmp(stack[depth - 1], name) == 0, "</%s> unbalanced",
                          name);
            depth--;
        } else if (end[-1] != '/' && strcmp(name, "meta") != 0 && strcmp(name, "br") != 0) {
            ck_assert_int_lt(depth, 64);
            snprintf(stack[depth++], sizeof stack[0], "%s", name);
        }
    }
    ck_assert_int_eq(depth, 0);
}

/* The text of <svg id="ID" ...>...</svg> (caller frees). */
static char *chart(const char *html, const char *id)
{
    char key[64];
    snprintf(key, sizeof key, "<svg id=\"%s\"", id);
    const char *a = strstr(html, key);
    ck_assert_msg(a != NULL, "%s missing", id);
    const char *b = strstr(a, "</svg>");
    ck_assert_ptr_nonnull(b);
    return strndup(a, (size_t)(b - a));
}

/* The fixture's two ranks of 250 steps at 128 samples/s, judged under these throughput gates
 * with a Prometheus copy directory; writes the reports into `dir` (no warning) and returns
 * report.html (the caller frees it, and in, res and the fixture). */
static char *two_rank_reports(struct cfg *c, double go, double no_go, struct gate_input *in,
                              struct gate_result *res, char *dir, size_t len)
{
    struct rz_err err;
    char path[4200], warn[256];
    fixture();
    for (int r = 0; r < 2; r++)  /* 250 steps in all: the loss curve is downsampled to 200 */
        metrics(r, 41, 250, 41, 0.125);
    config(c);
    c->gates.throughput_go = go;
    c->gates.throughput_no_go = no_go;
    snprintf(c->gates.prom_dir, sizeof c->gates.prom_dir, "%s/prom", root);
    ck_assert_int_eq(rz_mkdirs(c->gates.prom_dir, NULL), RZ_OK);
    ck_assert_int_eq(judge(in, res, c, &err), RZ_OK);
    struct gate_doc doc;
    gate_doc_build(&doc, in, res, c);
    ck_assert_int_eq(gate_write_reports(&doc, dir, len, warn, sizeof warn, &err), RZ_OK);
    ck_assert_str_eq(warn, "");
    snprintf(path, sizeof path, "%s/report.html", dir);
    return slurp(path);
}

START_TEST(reports_are_written_and_well_formed)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    char dir[4096], path[4200];
    char *html = two_rank_reports(&c, 200, 50, &in, &res, dir, sizeof dir); /* 128: HOLD */
    ck_assert_uint_eq(res.n_loss, 200);

    assert_balanced(html);
    char *loss = chart(html, "chart-loss"), *tp = chart(html, "chart-throughput");
    char *st = chart(html, "chart-steptime"), *cm = chart(html, "chart-comm");
    ck_assert_uint_eq(count(loss, "<circle class=\"pt\""), res.n_loss);
    ck_assert_ptr_nonnull(strstr(loss, "data-loss=\"3.999\""));   /* step 1 of the metrics */
    ck_assert_ptr_nonnull(strstr(loss, "data-loss=\"3.75\""));    /* step 250 */
    ck_assert_ptr_nonnull(strstr(loss, "class=\"base\""));
    ck_assert_ptr_nonnull(strstr(loss, "class=\"floor\" data-value=\"3.9\""));
    ck_assert_uint_eq(count(tp, "<circle class=\"pt\""), res.n_windows);
    ck_assert_ptr_nonnull(strstr(tp, "data-sps=\"128\""));
    ck_assert_uint_eq(count(st, "<g class=\"box\""), 2);
    ck_assert_ptr_nonnull(strstr(st, "data-median=\"0.125\""));
    ck_assert_uint_eq(count(cm, "<rect class=\"bar\""), 2);
    ck_assert_ptr_nonnull(strstr(cm, "data-comm=\"0.0625\""));
    /* the thresholds are drawn over the bars, so a bar past one does not hide its label */
    ck_assert_ptr_nonnull(strstr(cm, "thr-go"));
    ck_assert(strstr(cm, "thr-go") > strstr(cm, "<rect class=\"bar\""));
    ck_assert_ptr_null(strstr(html, "<script"));
    ck_assert_ptr_null(strstr(html, "src=\""));
    free(loss), free(tp), free(st), free(cm), free(html);

    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = slurp(path);
    ck_assert_msg(strncmp(md, "# Verdict: ", 11) == 0, "report.md starts: %.40s", md);
    ck_assert_ptr_nonnull(strstr(md, "| throughput | 128 |"));
    free(md);

    regex_t re;
    ck_assert_int_eq(regcomp(&re, "^[a-zA-Z_:][a-zA-Z0-9_:]*\\{([a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\""
                                  ",?)*\\} [^ ]+$", REG_EXTENDED | REG_NOSUB), 0);
    snprintf(path, sizeof path, "%s/ryzen_phase.prom", c.gates.prom_dir); /* the copy */
    char *prom = slurp(path), *save = NULL;
    size_t samples = 0;
    for (char *line = strtok_r(prom, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') {
            ck_assert(strncmp(line, "# HELP ryzen_", 13) == 0 ||
                      strncmp(line, "# TYPE ryzen_", 13) == 0);
            continue;
        }
        ck_assert_msg(regexec(&re, line, 0, NULL, 0) == 0, "bad sample line: %s", line);
        char *num = strrchr(line, ' ') + 1, *endp;
        (void)strtod(num, &endp);
        ck_assert_msg(*endp == '\0' && endp != num, "bad value: %s", line);
        samples++;
    }
    regfree(&re);
    ck_assert_uint_gt(samples, 2 * GATE_N_CRIT);
    free(prom);
    snprintf(path, sizeof path, "%s/gate.prom", dir);
    prom = slurp(path);
    ck_assert_ptr_nonnull(strstr(prom, "ryzen_gate_verdict{slurm_job_id=\"7\",phase=\"phase\"} "
                                       "2\n"));
    ck_assert_ptr_nonnull(strstr(prom, "ryzen_gate_throughput_samples_per_second{slurm_job_id="
                                       "\"7\",phase=\"phase\"} 128\n"));
    ck_assert_ptr_nonnull(strstr(prom, "ryzen_gate_allreduce_p99_seconds{slurm_job_id=\"7\","
                                       "phase=\"phase\"} 0.001953125\n"));
    ck_assert_ptr_nonnull(strstr(prom, "ryzen_gate_requeues{slurm_job_id=\"7\",phase=\"phase\","
                                       "reason=\"failure\"} 1\n"));
    ck_assert_ptr_null(strstr(prom, "job=\"7\"")); /* job clashes with the scrape label */
    free(prom);

    /* report.json is the next phase's baseline */
    struct gate_baseline b = {0};
    snprintf(path, sizeof path, "%s/report.json", dir);
    ck_assert_int_eq(gate_read_baseline(&b, path, &err), RZ_OK);
    ck_assert_double_eq(b.throughput, 128.0);
    ck_assert_int_eq(b.world_size, 2);
    ck_assert_uint_eq(b.n_curve, 200);
    ck_assert_double_eq(b.curve[0], 16.0);
    free(b.curve);
    /* and the record every other reader takes it through (record/report.h) agrees with the
     * writer on every field it reads */
    struct report_rec r;
    ck_assert_int_eq(report_read(&r, path, &err), RZ_OK);
    ck_assert_str_eq(r.job, "7");
    ck_assert_str_eq(r.phase, "phase");
    ck_assert_int_eq(r.world_size, 2);
    ck_assert_str_eq(r.verdict, gate_verdict_name(res.verdict));
    ck_assert_double_eq(r.throughput, 128.0);
    ck_assert_double_eq(report_measured(&r, "throughput"), 128.0);
    ck_assert_double_eq_tol(report_measured(&r, "allreduce_p99_ms"), 1.953125, 1e-9);
    ck_assert(isnan(report_measured(&r, "no_such_criterion")));
    ck_assert_int_eq(r.n_criteria, (int)GATE_N_CRIT);
    ck_assert_uint_eq(r.n_curve, 200);
    ck_assert_int_eq(r.steps, (int64_t)in.n_steps);
    ck_assert(r.median_compute_s > 0);
    ck_assert_str_eq(r.action, res.action);
    report_free(&r);
    char *json = slurp(path);
    ck_assert_ptr_nonnull(strstr(json, "\"chain\":[{\"time\":\"x\",\"t\":1002,\"job\":\"6\""));
    free(json);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* A threshold far from the data (throughput go 1e9 against 128 samples/s) stays off the axes
 * instead of squashing the data into a sliver, and the chart names it; near ones are drawn. */
START_TEST(far_thresholds_stay_off_the_chart)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    char dir[4096];
    char *html = two_rank_reports(&c, 1e9, 5e8, &in, &res, dir, sizeof dir);
    char *tp = chart(html, "chart-throughput");
    ck_assert_ptr_null(strstr(tp, "thr-go"));
    ck_assert_ptr_null(strstr(tp, "thr-nogo"));
    ck_assert_msg(strstr(tp, ">off the chart: go 1e+09 (above), no-go 5e+08 (above)<") != NULL,
                  "%s", tp);
    free(tp);
    free(html);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

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
    ck_assert_int_eq(in.requeues[GATE_RQ_FAILURE], 1);
    ck_assert_int_eq(in.requeues[GATE_RQ_PREEMPTION], 1);
    ck_assert_int_eq(in.requeues[GATE_RQ_TIME_LIMIT], 1);
    ck_assert_int_eq(in.requeues[GATE_RQ_NODE_FAILURE], 1);
    ck_assert_int_eq(in.requeues[GATE_RQ_SIGNAL], 0);
    ck_assert_int_eq(in.requeues[GATE_RQ_OTHER], 1);
    ck_assert_double_eq(res.crit[GATE_FAILURES].measured, 1.0);
    ck_assert_uint_eq(in.n_job_events, 9);
    ck_assert_uint_eq(in.n_chain_events, 1);
    /* start, requeue, promote, attempt_end and the 4 later requeues; not train_exit or the
     * unknown event */
    ck_assert_uint_eq(in.n_verdict_events, 8);
    const struct gate_event *e = &in.events[in.verdict_events[5]];
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

/* monitoring/ryzen-dashboard.json: valid JSON in Grafana's model, templated by phase and job,
 * one row per concern, every panel with at least one PromQL target on ryzen_* series.  (That the
 * names are ones the trainer and the gate write is tests/ops.sh's check, on real files.) */
START_TEST(dashboard_is_a_grafana_model)
{
    const char *top = getenv("top_srcdir");
    char path[4096], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/monitoring/ryzen-dashboard.json", top != NULL ? top : ".");
    ck_assert_int_eq(rz_read_file(path, &text, &len, NULL), RZ_OK);
    struct gj_value *v = NULL;
    struct rz_err err;
    ck_assert_msg(gj_parse(&v, text, len, path, 1, &err) == RZ_OK, "%s", err.msg);
    free(text);
    ck_assert_str_eq(gj_get_str(v, "uid"), "ryzen-llm-training");
    const struct gj_value *vars = gj_get(gj_get(v, "templating"), "list");
    ck_assert_ptr_nonnull(vars);
    bool phase = false, job = false;
    for (size_t i = 0; i < vars->n; i++) {
        const char *name = gj_get_str(&vars->items[i], "name");
        phase |= strcmp(name, "phase") == 0;
        job |= strcmp(name, "job") == 0;
    }
    ck_assert(phase && job);
    const struct gj_value *panels = gj_get(v, "panels");
    size_t rows = 0, graphs = 0;
    for (size_t i = 0; i < panels->n; i++) {
        const struct gj_value *p = &panels->items[i];
        if (strcmp(gj_get_str(p, "type"), "row") == 0) {
            rows++;
            continue;
        }
        const struct gj_value *t = gj_get(p, "targets");
        ck_assert_msg(t != NULL && t->n > 0, "panel %s has no target", gj_get_str(p, "title"));
        for (size_t k = 0; k < t->n; k++) {
            const char *e = gj_get_str(&t->items[k], "expr");
            ck_assert_msg(e != NULL && strstr(e, "ryzen_") != NULL, "panel %s: expr %s",
                          gj_get_str(p, "title"), e);
            ck_assert_msg(strstr(e, "slurm_job_id=~\"$job\"") != NULL, "not templated: %s", e);
        }
        graphs++;
    }
    ck_assert_uint_eq(rows, 7);
    ck_assert_uint_ge(graphs, 21);
    gj_free(v);
}
END_TEST

/* ---- the ladder ------------------------------------------------------------------------------ */

/* A report.json of phase PH, job JOB on W ranks: throughput X, small-collective p50 P50 ms. */
static void ladder_report(const char *lineage, const char *job, int w, double x, double p50)
{
    char rel[256], text[1024];
    snprintf(rel, sizeof rel, "%s/reports/%s/report.json", lineage, job);
    snprintf(text, sizeof text, "{\"verdict\":\"GO\",\"phase\":\"%.*s\",\"job\":\"%s\",\"time\":"
             "\"2026-11-22T10:00:0%sZ\",\"world_size\":%d,\"throughput\":%.9g,\"allreduce_p50_ms\":"
             "%.9g,\"steps\":40,\"skipped_steps\":0,\"ended\":null,\"criteria\":[{\"name\":"
             "\"comm\",\"measured\":0.05},{\"name\":\"allreduce_p99_ms\",\"measured\":0.5},"
             "{\"name\":\"uptime\",\"measured\":0.9}],\"time_lost_by_kind\":[{\"kind\":"
             "\"relaunch (failure)\",\"seconds\":5.5,\"stops\":2}],\"nodes_lost\":\"n3\","
             "\"nodes_excluded\":\"n3\","
             "\"environment\":{\"global_batch\":%d,\"num_parameters\":1000000},\"per_rank\":[]}\n",
             (int)strcspn(lineage, "/"), lineage, job, job, w, x, p50, 16 * w);
    put(rel, "w", text);
}

/* The fit by hand, reports without topology or links (one node, a core per rank): c = 1/100 s
 * per sample (the 1-rank phase); M = 4e6 bytes; k_local from the residual step times against
 * 2(P-1)/P*M (4e6 bytes on 2 ranks, 6e6 on 4). */
START_TEST(ladder_fit_predictions_and_flags)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(root, sizeof root, "%s/check_ladder.XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(run, sizeof run, "%s", root);
    ladder_report("base", "1", 1, 100, 0.01);
    ladder_report("p2", "2", 2, 190, 0.1);
    ladder_report("p4", "3", 4, 360, 0.2);
    ladder_report("p2/rollback-3", "4", 2, 210, 0.1); /* 105% of the base per rank */
    struct gate_ladder l;
    struct rz_err err;
    ck_assert_int_eq(gate_ladder_read(&l, root, &err), RZ_OK);
    ck_assert_uint_eq(l.n_att, 4);
    ck_assert_int_eq(l.att[0].world, 1);
    ck_assert_str_eq(l.att[l.base].job, "1");
    ck_assert_str_eq(l.att[2].lineage, "p2/rollback-3");
    ck_assert_double_eq_tol(l.att[2].efficiency, 1.05, 1e-12);
    double c = 0.01, r2 = 32.0 / 190 - 0.16, r4 = 64.0 / 360 - 0.16;
    double r2b = 32.0 / 210 - 0.16;
    double k = (r2 * 4e6 + r2b * 4e6 + r4 * 6e6) / (2 * 16e12 + 36e12);
    ck_assert(l.fit.ok);
    ck_assert_int_eq(l.fit.points, 4);
    ck_assert_double_eq_tol(l.fit.c_s, c, 1e-15);
    ck_assert_double_eq_tol(l.fit.k_local, k, 1e-20);
    ck_assert_double_eq(l.fit.k_net, 1.0); /* no phase on several nodes */
    ck_assert_int_eq(l.n_pred, 5);
    ck_assert_int_eq(l.pred[0].world, 8);
    ck_assert_int_eq(l.pred[4].world, 64);
    double t8 = 0.16 + k * 7e6;
    ck_assert_double_eq_tol(l.pred[0].throughput, 128 / t8, 1e-9);
    ck_assert_double_eq_tol(l.pred[0].hi / l.pred[0].throughput - 1, l.fit.err_rel, 1e-12);
    ck_assert_double_gt(l.fit.err_rel, 0);
    /* fitted to the attempts below 4 ranks only: the phase report's prediction of the 4-rank */
    struct gate_fit below;
    gate_ladder_fit(&l, 4, &below);
    ck_assert_int_eq(below.points, 3);
    ck_assert_double_gt(below.err_rel, 0); /* 3 points, 2 fitted parameters */
    /* the 1-rank phase alone: an exact fit, whose error is unknown rather than 0 */
    gate_ladder_fit(&l, 2, &below);
    ck_assert_int_eq(below.points, 1);
    ck_assert(isnan(below.err_rel));
    ck_assert_ptr_nonnull(strstr(below.note, "no phase on several nodes"));
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    gate_ladder_write_md(f, &l);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(md, "## Efficiency above 100%\n\n- p2/rollback-3 job 4 on 2 "
                                     "ranks: 105.0%."));
    ck_assert_ptr_nonnull(strstr(md, "| 2 | p2/rollback-3 | 4 | GO | 210 |"));
    /* goodput and the time lost, each attempt; the nodes excluded, once */
    ck_assert_msg(strstr(md, " | 90.0% | relaunch (failure) 5.5 s in 2 stops |\n") != NULL, "%s",
                  md);
    ck_assert_uint_eq(count(md, "Nodes excluded for the rest of the ladder (each failed twice in "
                                "this run root): n3.\n"), 1);
    free(md);
    ck_assert_int_eq(gate_ladder_write(&l, &err), RZ_OK);
    char path[600];
    snprintf(path, sizeof path, "%s/ladder.json", root);
    char *json = slurp(path);
    ck_assert_ptr_nonnull(strstr(json, "\"efficiency\":1.05,\"efficiency_above_100\":true"));
    ck_assert_ptr_nonnull(strstr(json, "\"goodput\":0.9,\"time_lost_by_kind\":[{\"kind\":"
                                       "\"relaunch (failure)\",\"seconds\":5.5,\"stops\":2}],"
                                       "\"nodes_lost\":\"n3\",\"nodes_excluded\":\"n3\""));
    free(json);
    snprintf(path, sizeof path, "%s/ladder.html", root);
    char *html = slurp(path);
    assert_balanced(html);
    ck_assert_uint_eq(count(html, "<circle class=\"pt over\""), 1);
    ck_assert_ptr_nonnull(strstr(html, "<td>90.0%</td><td>relaunch (failure) 5.5 s in 2 stops</td>"));
    ck_assert_ptr_nonnull(strstr(html, "<p id=\"excluded\">Nodes excluded"));
    free(html);
    gate_ladder_free(&l);
    teardown_fixture();
}
END_TEST

/* A report with its topology and links, as the dev cluster writes them: W ranks on N nodes of
 * one 2-CPU machine, links of 31 MB/s and 10 us. */
static void ladder_report_placed(const char *phase, const char *job, int w, int nodes, double x,
                                 double p10)
{
    char rel[256], text[4096], links[1024] = "";
    size_t used = 0;
    if (nodes > 1) {
        used += (size_t)snprintf(links, sizeof links, "{\"hosts\":[");
        for (int i = 0; i < nodes; i++)
            used += (size_t)snprintf(links + used, sizeof links - used, "%s\"n%d\"", i ? "," : "",
                                     i + 1);
        used += (size_t)snprintf(links + used, sizeof links - used, "],\"gbps\":[");
        for (int i = 0; i < nodes; i++) {
            used += (size_t)snprintf(links + used, sizeof links - used, "%s[", i ? "," : "");
            for (int k = 0; k < nodes; k++)
                used += (size_t)snprintf(links + used, sizeof links - used, "%s%g", k ? "," : "",
                                         i == k ? 0.0 : 0.248);
            used += (size_t)snprintf(links + used, sizeof links - used, "]");
        }
        used += (size_t)snprintf(links + used, sizeof links - used, "],\"latency_us\":[");
        for (int i = 0; i < nodes; i++) {
            used += (size_t)snprintf(links + used, sizeof links - used, "%s[", i ? "," : "");
            for (int k = 0; k < nodes; k++)
                used += (size_t)snprintf(links + used, sizeof links - used, "%s%g", k ? "," : "",
                                         i == k ? 0.0 : 10.0);
            used += (size_t)snprintf(links + used, sizeof links - used, "]");
        }
        snprintf(links + used, sizeof links - used, "]}");
    } else {
        snprintf(links, sizeof links, "null");
    }
    snprintf(rel, sizeof rel, "%s/reports/%s/report.json", phase, job);
    snprintf(text, sizeof text, "{\"verdict\":\"GO\",\"phase\":\"%s\",\"job\":\"%s\",\"time\":"
             "\"2026-11-26T15:00:0%sZ\",\"world_size\":%d,\"throughput\":%.9g,"
             "\"throughput_p10\":%.9g,\"steps\":60,\"criteria\":[],\"environment\":"
             "{\"global_batch\":%d,\"num_parameters\":85632},\"per_rank\":[],\"topology\":"
             "{\"nodes\":%d,\"machines\":1,\"cores_per_rank\":%.9g,\"per_node\":[{\"machine_cpus\":2}]},"
             "\"links\":%s}\n", phase, job, job, w, x, p10, 4 * w, nodes,
             w == 1 ? 1.0 : 2.0 / w, links);
    put(rel, "w", text);
}

/* The whole ladder as the dev cluster ran it (Intel Xeon, 2 vCPUs; 250 Mbit/s links; the ring
 * allreduce; measured throughputs and p10s): the model after the phases of at most 8 ranks,
 * against phase2b and phase2c measured after.  The arithmetic of the hindcast by hand. */
START_TEST(ladder_hindcast_from_the_dev_cluster)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(root, sizeof root, "%s/check_ladder.XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(run, sizeof run, "%s", root);
    ladder_report_placed("baseline_1proc", "1", 1, 1, 5886.06, 5800);
    ladder_report_placed("phase1_4proc", "2", 4, 1, 5671.50, 5500);
    ladder_report_placed("phase2a_8proc", "3", 8, 2, 1655.08, 1600);
    ladder_report_placed("phase2b_12proc", "4", 12, 3, 2343.68, 2300);
    ladder_report_placed("phase2c_16proc", "5", 16, 4, 2795.65, 2700);
    struct gate_ladder l;
    struct rz_err err;
    ck_assert_int_eq(gate_ladder_read(&l, root, &err), RZ_OK);
    const struct gate_fit *e = &l.early;
    ck_assert(e->ok);
    ck_assert_int_eq(e->points, 3);
    double M = 4.0 * 85632, B = 0.248e9 / 8, c = 1 / 5886.06;
    ck_assert_double_eq_tol(e->c_s, c, 1e-12);
    double k_loc = (16.0 / 5671.50 - c * 4 / 0.5) / (1.5 * M / 0.5);
    ck_assert_double_eq_tol(e->k_local, k_loc, 1e-18);
    double ring8 = 1.75 * M / B + 14 * 1e-5;
    double k_net = (32.0 / 1655.08 - c * 4 / 0.25) / ring8;
    ck_assert_double_eq_tol(e->k_net, k_net, 1e-9);
    ck_assert_double_eq_tol(e->err_rel, 1 - 1600 / 1655.08, 1e-9); /* exact: the widest spread */
    ck_assert(e->shared_machine);
    /* phase2b and phase2c on their own layouts */
    struct gate_layout lay;
    gate_attempt_layout(&l.att[3], e, &lay);
    ck_assert_int_eq(lay.world, 12);
    ck_assert_int_eq(lay.nodes, 3);
    ck_assert_double_eq_tol(lay.cores, 2.0 / 12, 1e-8); /* as written: %.9g */
    double t12 = c * 4 / (2.0 / 12) + k_net * (2.0 * 11 / 12 * M / B + 22 * 1e-5);
    double p12 = gate_ladder_predict(e, &lay, 4);
    ck_assert_double_eq_tol(p12, 48 / t12, 1e-3);
    ck_assert_msg(fabs(2343.68 / p12 - 1) < 0.2, "phase2b: measured %g, predicted %g", 2343.68,
                  p12);
    gate_attempt_layout(&l.att[4], e, &lay);
    double p16 = gate_ladder_predict(e, &lay, 4);
    ck_assert_msg(fabs(2795.65 / p16 - 1) < 0.2, "phase2c: measured %g, predicted %g", 2795.65,
                  p16);
    /* the same from the extrapolated layout (as for a rung not run yet) */
    ck_assert_double_eq_tol(gate_ladder_model(e, 16, 4), p16, 1e-6);
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    gate_ladder_write_md(f, &l);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(md, "## Predicted before, measured after"));
    ck_assert_ptr_nonnull(strstr(md, "| phase2b_12proc | 4 | 12 |"));
    free(md);
    gate_ladder_free(&l);
    teardown_fixture();
}
END_TEST

START_TEST(nice_steps_are_round)
{
    ck_assert_double_eq(gate_nice_step(10, 5), 2);
    ck_assert_double_eq(gate_nice_step(1, 4), 0.5);
    ck_assert_double_eq(gate_nice_step(0.07, 5), 0.02);
    ck_assert_double_eq(gate_nice_step(9000, 5), 2000);
    ck_assert_double_eq(gate_nice_step(26000, 5), 10000);
    ck_assert_double_eq(gate_nice_step(0, 5), 1); /* degenerate: any round step */
}
END_TEST

/* A threshold widens the data's range only when it is near: at most GATE_NEAR times the top,
 * at least the bottom / GATE_NEAR; with no data, always. */
START_TEST(thresholds_widen_the_range_only_when_near)
{
    double lo = 98, hi = 113;
    ck_assert(gate_range_threshold(&lo, &hi, 250));
    ck_assert(lo == 98 && hi == 250);
    ck_assert(!gate_range_threshold(&lo, &hi, 1e9));
    ck_assert(!gate_range_threshold(&lo, &hi, 20));
    ck_assert(gate_range_threshold(&lo, &hi, 30));
    ck_assert(lo == 30 && hi == 250);
    ck_assert(!gate_range_threshold(&lo, &hi, NAN));
    double nlo = INFINITY, nhi = -INFINITY;
    ck_assert(gate_range_threshold(&nlo, &nhi, 1e9));
    ck_assert(nlo == 1e9 && nhi == 1e9);
    double zlo = 0, zhi = 0; /* comm shares all zero (one rank) */
    ck_assert(gate_range_threshold(&zlo, &zhi, 0.2));
    ck_assert(zlo == 0 && zhi == 0.2);
}
END_TEST

START_TEST(json_reader_escapes)
{
    struct gj_value *v = NULL;
    const char *t = "{\"a\":\"x\\\"\\\\\\/\\n\\u00e9\\ud83d\\ude00\",\"b\":[1,-2.5e3,true,null],"
                    "\"c\":{}}";
    ck_assert_int_eq(gj_parse(&v, t, strlen(t), "t", 1, NULL), RZ_OK);
    ck_assert_str_eq(gj_get_str(v, "a"), "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
    const struct gj_value *b = gj_get(v, "b");
    ck_assert_uint_eq(b->n, 4);
    ck_assert_double_eq(b->items[1].num, -2500.0);
    ck_assert_int_eq(b->items[3].type, GJ_NULL);
    ck_assert_int_eq(gj_get(v, "c")->type, GJ_OBJ);
    gj_free(v);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

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

static Suite *gate_suite(void)
{
    Suite *s = suite_create("gate");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, judge_boundaries_both_directions);
    tcase_add_test(core, fixture_measures_what_was_written);
    tcase_add_test(core, validation_loss_is_judged_when_present);
    tcase_add_test(core, memory_plan_against_measured);
    tcase_add_test(core, each_criterion_at_its_boundaries);
    tcase_add_test(core, packet_loss_names_the_worst_node);
    tcase_add_test(core, grad_allreduce_quantiles);
    tcase_add_test(core, recoveries_from_the_runs_and_events);
    tcase_add_test(core, topology_from_the_ranks);
    tcase_add_test(core, packet_loss_names_the_node_of_every_lossy_link);
    tcase_add_test(core, verdict_rules);
    tcase_add_test(core, fixture_verdicts_and_planned_actions);
    tcase_add_test(core, missing_and_empty_baselines);
    tcase_add_test(core, baseline_found_from_task_and_rollback_dirs);
    tcase_add_test(core, suspect_efficiency_is_flagged);
    tcase_add_test(core, requeue_duplicates_keep_last_and_warmup_after_restart);
    tcase_add_test(core, rollback_checkpoint_choice);
    tcase_add_test(core, reports_are_written_and_well_formed);
    tcase_add_test(core, json_reader_escapes);
    tcase_add_test(core, dashboard_is_a_grafana_model);
    tcase_add_test(core, ladder_fit_predictions_and_flags);
    tcase_add_test(core, ladder_hindcast_from_the_dev_cluster);
    tcase_add_test(core, nice_steps_are_round);
    tcase_add_test(core, thresholds_widen_the_range_only_when_near);
    tcase_add_test(core, far_thresholds_stay_off_the_chart);
    tcase_add_test(core, requeues_by_reason_and_unknown_events);
    tcase_add_test(core, ended_report_from_whatever_exists);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, truncated_line_names_file_and_line);
    tcase_add_test(errors, missing_rank_is_named);
    tcase_add_test(errors, non_number_loss_is_an_error);
    tcase_add_test(errors, bad_json_names_line_and_column);
    tcase_add_test(errors, malformed_baseline_and_absent_job);
    tcase_add_test(errors, end_reasons_parse);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(gate_suite());
}
