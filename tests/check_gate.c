#include "config.h"

/* check_gate: gate evaluation on tiny hand-written run directories (metrics of two ranks,
 * events.jsonl, summary.json, health.json, a baseline report) built in a mkdtemp directory
 * (gate_fixtures.c): every criterion at its boundaries in both directions, what the fixture
 * measures, validation losses, the memory plan against the measured peak, packet loss named by
 * node, the gradient all-reduce, recoveries, and where the ranks ran.  The suite's "core" test
 * case goes on with the verdicts (check_gate_verdicts.c), the report files
 * (check_gate_reports.c), a threshold far from a chart's data
 * (check_gate_charts.c) and how a phase ended (check_gate_ended.c); its "errors" test case,
 * malformed inputs with their file:line, is check_gate_errors.c's (gate_fixtures.h).
 * Checkpoints are injected into struct gate_input: ckpt_list itself is tested in check_ckpt. */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "core/status.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"
#include "record/health_json.h"
#include "core/json.h"
#include "testutil.h"

#include "gate_fixtures.h"

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
        if (k == GATE_PACKET_LOSS)
            continue; /* judged on bounds, n/a on the fixture's one node: check_gate_net.c */
        if (k == GATE_UNIGRAM_MARGIN)
            continue; /* text data only, n/a on the fixture's markov: check_gate_text.c */
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
    struct rank_row rows[22];
    memset(&in, 0, sizeof in);
    size_t n = 0;
    for (int s = 1; s <= 17; s++)
        rows[n++] = (struct rank_row){.step = s, .run_step = s, .time = 1000.0 + s};
    for (int s = 16; s <= 20; s++)
        rows[n++] = (struct rank_row){.step = s, .run_step = s - 15, .time = 1057.0 + s - 16};
    gate_recoveries_scan(&in, rows, n);
    ck_assert_int_eq(in.n_recov, 1);
    ck_assert_int_eq(in.recov[0].last_step, 17);
    ck_assert_int_eq(in.recov[0].first_step, 16);
    ck_assert_int_eq(in.recov[0].redone, 2);
    ck_assert_double_eq_tol(in.recov[0].seconds, 40.0, 1e-9);
    struct event_rec ev[5] = {
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
    ev[1] = (struct event_rec){.job = "7", .event = "relaunch", .reason = "failure", .t = 1021};
    in.recov[0].lost[0] = in.recov[0].cause[0] = '\0';
    gate_recoveries_causes(&in);
    ck_assert_str_eq(in.recov[0].cause, "attempt ended: status 0: crash (requeued); relaunched in "
                                        "the allocation (failure); network fault: n2 unreachable");
    /* a link Slurm could not see (ryzen-step's probe): the recovery names it, a network fault */
    struct event_rec lost = ev[2];
    ev[1] = (struct event_rec){.job = "7", .event = "requeue", .reason = "network", .t = 1021};
    ev[2] = (struct event_rec){.job = "7", .event = "network_partition", .nodes = "n1,n2",
                                .t = 1019, .summary = "network fault: n1 and n2 cannot reach "
                                "each other (Slurm sees both up); Slurm: n1 MIXED, n2 MIXED; "
                                "probe: n1 -> n2: no answer in 3 s"};
    in.recov[0].lost[0] = in.recov[0].cause[0] = in.recov[0].kind[0] = '\0';
    gate_recoveries_causes(&in);
    ck_assert_str_eq(in.recov[0].cause, "attempt ended: status 0: crash (requeued); requeued "
                                        "(network); network fault: n1 and n2 cannot reach each "
                                        "other (Slurm sees both up)");
    ck_assert_str_eq(in.recov[0].kind, "network fault");
    ck_assert_str_eq(in.recov[0].lost, "n1,n2");
    ck_assert_int_eq(event_requeue_of("network"), EVENT_RQ_NETWORK);
    ev[1] = (struct event_rec){.job = "7", .event = "relaunch", .reason = "failure", .t = 1021};
    ev[2] = lost;
    in.recov[0].lost[0] = in.recov[0].cause[0] = in.recov[0].kind[0] = '\0';
    gate_recoveries_causes(&in);
    /* the nodes it lost and those excluded for the ladder; the checkpoint interval and why */
    ck_assert_str_eq(in.nodes_failed, "n2");
    ck_assert_str_eq(in.nodes_excluded, "n2");
    in.ckpt_policy = (struct summary_ckpts){.known = true, .mode = "async",
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

static Suite *gate_suite(void)
{
    Suite *s = suite_create("gate");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, judge_boundaries_both_directions);
    tcase_add_test(core, fixture_measures_what_was_written);
    tcase_add_test(core, validation_loss_is_judged_when_present);
    tcase_add_test(core, memory_plan_against_measured);
    tcase_add_test(core, each_criterion_at_its_boundaries);
    tcase_add_test(core, grad_allreduce_quantiles);
    tcase_add_test(core, recoveries_from_the_runs_and_events);
    tcase_add_test(core, topology_from_the_ranks);
    gate_verdicts_tests(core);
    gate_net_tests(core);
    gate_reports_tests(core);
    gate_charts_tests(core);
    gate_text_tests(core);
    gate_ended_tests(core);
    suite_add_tcase(s, core);
    suite_add_tcase(s, gate_errors_tcase());
    return s;
}

int main(void)
{
    return rz_test_main(gate_suite());
}
