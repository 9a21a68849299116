/* check_ladder: the ladder of phases (src/ladder/, record/ladder_json.c): "core", the model
 * fitted by hand from the phases' report.json files, its predictions and flags, and the whole
 * ladder as the dev cluster ran it, hindcast, and ladder.csv (one row per attempt, RFC 4180);
 * "errors", a run root without reports.  Fixtures
 * (the scratch directory, put) from gate_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ladder/ladder.h"

#include "gate_fixtures.h"
#include "testutil.h"

/* A fresh run root in $TMPDIR (root and run; teardown_fixture removes it). */
static void ladder_root(void)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(root, sizeof root, "%s/check_ladder.XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(run, sizeof run, "%s", root);
}

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
    ladder_root();
    ladder_report("base", "1", 1, 100, 0.01);
    ladder_report("p2", "2", 2, 190, 0.1);
    ladder_report("p4", "3", 4, 360, 0.2);
    ladder_report("p2/rollback-3", "4", 2, 210, 0.1); /* 105% of the base per rank */
    struct ladder l;
    struct rz_err err;
    ck_assert_int_eq(ladder_read(&l, root, &err), RZ_OK);
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
    struct ladder_fit below;
    ladder_fit(&l, 4, &below);
    ck_assert_int_eq(below.points, 3);
    ck_assert_double_gt(below.err_rel, 0); /* 3 points, 2 fitted parameters */
    /* the 1-rank phase alone: an exact fit, whose error is unknown rather than 0 */
    ladder_fit(&l, 2, &below);
    ck_assert_int_eq(below.points, 1);
    ck_assert(isnan(below.err_rel));
    ck_assert_ptr_nonnull(strstr(below.note, "no link measured yet"));
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    ladder_write_md(f, &l);
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
    ck_assert_int_eq(ladder_write(&l, &err), RZ_OK);
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
    ladder_free(&l);
    teardown_fixture();
}
END_TEST

/* A report with its topology and links, as the dev cluster writes them: W ranks on N nodes of
 * one 2-CPU machine, links of 31 MB/s and 10 us, and its preflight's ring hop (HOP_US; 0: a
 * report from before it was measured). */
static void ladder_report_placed_hop(const char *phase, const char *job, int w, int nodes, double x,
                                     double p10, double params, int per_rank, double p50_ms,
                                     double hop_us)
{
    char rel[256], text[4096], links[1024] = "";
    size_t used = 0;
    if (nodes == 1 && hop_us > 0) {
        snprintf(links, sizeof links, "{\"hosts\":[\"n1\"],\"gbps\":[[0]],\"latency_us\":[[0]],"
                 "\"ring_hop_us\":%g}", hop_us);
    } else if (nodes > 1) {
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
        used += (size_t)snprintf(links + used, sizeof links - used, "]");
        if (hop_us > 0)
            used += (size_t)snprintf(links + used, sizeof links - used, ",\"ring_hop_us\":%g",
                                     hop_us);
        snprintf(links + used, sizeof links - used, "}");
    } else {
        snprintf(links, sizeof links, "null");
    }
    snprintf(rel, sizeof rel, "%s/reports/%s/report.json", phase, job);
    snprintf(text, sizeof text, "{\"verdict\":\"GO\",\"phase\":\"%s\",\"job\":\"%s\",\"time\":"
             "\"2026-11-26T15:00:0%sZ\",\"world_size\":%d,\"throughput\":%.9g,"
             "\"throughput_p10\":%.9g,\"allreduce_p50_ms\":%.9g,\"steps\":60,\"criteria\":[],"
             "\"environment\":{\"global_batch\":%d,\"num_parameters\":%.9g},\"per_rank\":[],"
             "\"topology\":{\"nodes\":%d,\"machines\":1,\"cores_per_rank\":%.9g,\"per_node\":"
             "[{\"machine_cpus\":2}]},\"links\":%s}\n", phase, job, job, w, x, p10, p50_ms,
             per_rank * w, params, nodes, w == 1 ? 1.0 : 2.0 / w, links);
    put(rel, "w", text);
}

/* ... without its preflight's ring hop. */
static void ladder_report_placed_p50(const char *phase, const char *job, int w, int nodes, double x,
                                     double p10, double params, int per_rank, double p50_ms)
{
    ladder_report_placed_hop(phase, job, w, nodes, x, p10, params, per_rank, p50_ms, 0);
}

/* The small model, 4 samples a rank, without the small collective's latency (0: none). */
static void ladder_report_placed(const char *phase, const char *job, int w, int nodes, double x,
                                 double p10)
{
    ladder_report_placed_p50(phase, job, w, nodes, x, p10, 85632, 4, 0);
}

/* The whole ladder as the dev cluster ran it (Intel Xeon, 2 vCPUs; 250 Mbit/s links; the ring
 * allreduce; measured throughputs and p10s): the model after the phases of at most 8 ranks,
 * against phase2b and phase2c measured after.  The arithmetic of the hindcast by hand. */
START_TEST(ladder_hindcast_from_the_dev_cluster)
{
    ladder_root();
    ladder_report_placed("baseline_1proc", "1", 1, 1, 5886.06, 5800);
    ladder_report_placed("phase1_4proc", "2", 4, 1, 5671.50, 5500);
    ladder_report_placed("phase2a_8proc", "3", 8, 2, 1655.08, 1600);
    ladder_report_placed("phase2b_12proc", "4", 12, 3, 2343.68, 2300);
    ladder_report_placed("phase2c_16proc", "5", 16, 4, 2795.65, 2700);
    struct ladder l;
    struct rz_err err;
    ck_assert_int_eq(ladder_read(&l, root, &err), RZ_OK);
    const struct ladder_fit *e = &l.early;
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
    struct ladder_layout lay;
    ladder_attempt_layout(&l.att[3], e, &lay);
    ck_assert_int_eq(lay.world, 12);
    ck_assert_int_eq(lay.nodes, 3);
    ck_assert_double_eq_tol(lay.cores, 2.0 / 12, 1e-8); /* as written: %.9g */
    double t12 = c * 4 / (2.0 / 12) + k_net * (2.0 * 11 / 12 * M / B + 22 * 1e-5);
    double p12 = ladder_predict(e, &lay, 4);
    ck_assert_double_eq_tol(p12, 48 / t12, 1e-3);
    ck_assert_msg(fabs(2343.68 / p12 - 1) < 0.2, "phase2b: measured %g, predicted %g", 2343.68,
                  p12);
    ladder_attempt_layout(&l.att[4], e, &lay);
    double p16 = ladder_predict(e, &lay, 4);
    ck_assert_msg(fabs(2795.65 / p16 - 1) < 0.2, "phase2c: measured %g, predicted %g", 2795.65,
                  p16);
    /* the same from the extrapolated layout (as for a rung not run yet) */
    ck_assert_double_eq_tol(ladder_model(e, 16, 4), p16, 1e-6);
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    ladder_write_md(f, &l);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(md, "## Predicted before, measured after"));
    ck_assert_ptr_nonnull(strstr(md, "| phase2b_12proc | 4 | 12 |"));
    free(md);
    ladder_free(&l);
    teardown_fixture();
}
END_TEST

/* A report of the demo's ladder (tools/demo, the dev cluster's default CPU quota): W ranks on
 * one node, each node held to QUOTA cores (0: none) of a 2-CPU machine. */
static void ladder_report_quota(const char *phase, const char *job, int w, double x, double quota)
{
    char rel[256], text[2048], q[32];
    double cores = fmin(1.0, 2.0 / w);
    if (quota > 0)
        cores = fmin(cores, quota / w);
    snprintf(q, sizeof q, quota > 0 ? "%g" : "null", quota);
    snprintf(rel, sizeof rel, "%s/reports/%s/report.json", phase, job);
    snprintf(text, sizeof text, "{\"verdict\":\"GO\",\"phase\":\"%s\",\"job\":\"%s\",\"time\":"
             "\"2026-12-01T09:0%s:00Z\",\"world_size\":%d,\"throughput\":%.9g,"
             "\"throughput_p10\":%.9g,\"steps\":60,\"criteria\":[],\"environment\":"
             "{\"global_batch\":%d,\"num_parameters\":85632},\"per_rank\":[],\"topology\":"
             "{\"nodes\":1,\"machines\":1,\"cores_per_rank\":%.9g,\"per_node\":[{\"host\":"
             "\"n1\",\"machine_cpus\":2,\"cpu_quota\":%s,\"cores_per_rank\":%.9g}]},"
             "\"links\":null}\n", phase, job, job, w, x, 0.95 * x, 4 * w, cores, q, cores);
    put(rel, "w", text);
}

/* The demo's ladder (a fresh clone, the dev cluster's default half a core per node): baseline
 * 38.8 samples/s on 1 rank, phase 1 40.5 on 4 ranks of one node.  phase2a, 2 nodes x 4 ranks,
 * gets each node's half a core over its 4 ranks, an eighth of a core per rank; the model once
 * placed it on the machine's CPUs alone (2 over a node's 4 ranks, half a core each) and
 * predicted 310 samples/s, 100% efficiency. */
START_TEST(ladder_forward_on_the_nodes_it_gets)
{
    ladder_root();
    ladder_report_quota("baseline_1proc", "1", 1, 38.8, 0.5);
    ladder_report_quota("phase1_4proc", "2", 4, 40.5, 0.5);
    struct ladder l;
    struct rz_err err;
    ck_assert_int_eq(ladder_read(&l, root, &err), RZ_OK);
    ck_assert_double_eq(l.att[0].node_quota, 0.5);
    ck_assert_double_eq(l.fit.node_quota, 0.5);
    ck_assert_double_eq_tol(l.fit.c_s, 0.5 / 38.8, 1e-12);
    struct ladder_layout lay;
    ladder_rung_layout(&l.fit, 8, &lay);
    ck_assert_int_eq(lay.nodes, 2);
    ck_assert_double_eq_tol(lay.cores, 0.125, 1e-12); /* the quota, not the machine's 2/4 */
    ck_assert_int_eq(l.pred[0].world, 8);
    /* two half-core nodes: at most twice the baseline's half a core */
    ck_assert_double_le(l.pred[0].throughput, 2 * 38.8 * (1 + 1e-9));
    ck_assert_double_gt(l.pred[0].throughput, 0.8 * 2 * 38.8);
    /* no phase crossed a link yet: the network is left out, and the note says so */
    ck_assert_ptr_nonnull(strstr(l.fit.note, "no link measured yet"));
    ck_assert_double_le(l.pred[0].efficiency, 0.25 + 1e-9);
    /* 12 and 16 ranks: 3 and 4 nodes, each its half a core over 4 ranks */
    ladder_rung_layout(&l.fit, 16, &lay);
    ck_assert_int_eq(lay.nodes, 4);
    ck_assert_double_eq_tol(lay.cores, 0.125, 1e-12);
    /* the newest phase ran with the quota lifted: the machine's 2 CPUs over a node's 4 ranks */
    ladder_report_quota("phase1_4proc", "3", 4, 80, 0);
    ladder_free(&l);
    ck_assert_int_eq(ladder_read(&l, root, &err), RZ_OK);
    ck_assert(isnan(l.fit.node_quota));
    ladder_rung_layout(&l.fit, 8, &lay);
    ck_assert_double_eq_tol(lay.cores, 0.5, 1e-12);
    ladder_free(&l);
    teardown_fixture();
}
END_TEST

/* The ladder on a fast CPU (tools/check --fast's tiny workload on the Intel Xeon, quota lifted,
 * 60 steps a phase): compute is short, and the ring's hops, each waiting its peer's turn on a
 * core that 4 to 8 ranks share, are most of a step.  The small collective's p50 per round times
 * s (q) carries that cost from the fitted phases to the larger ones. */
START_TEST(ladder_hops_on_shared_cores)
{
    ladder_root();
    ladder_report_placed_p50("baseline_1proc", "1", 1, 1, 34599.44, 30849.15, 2816, 2, 3.1e-5);
    ladder_report_placed_p50("phase1_4proc", "2", 4, 1, 5471.67, 2630.03, 2816, 2, 0.064431);
    ladder_report_placed_p50("phase2a_8proc", "3", 8, 2, 7651.13, 5725.38, 2816, 2, 0.2990815);
    ladder_report_placed_p50("phase2b_12proc", "4", 12, 3, 6137.70, 2325.44, 2816, 2, 0.604431);
    ladder_report_placed_p50("phase2c_16proc", "5", 16, 4, 3784.63, 2611.62, 2816, 2, 0.960404);
    struct ladder l;
    struct rz_err err;
    ck_assert_int_eq(ladder_read(&l, root, &err), RZ_OK);
    const struct ladder_fit *e = &l.early;
    /* q: the median of phase1's and phase2a's p50 per round (2 and 3 rounds) times s */
    double q = 0.5 * (0.064431e-3 / 2 * 0.5 + 0.2990815e-3 / 3 * 0.25);
    ck_assert_double_eq_tol(e->hop_s, q, 1e-15);
    ck_assert_ptr_nonnull(strstr(e->note, "the ring's hops wait q per rank sharing a core"));
    /* phase2b by hand: compute, the hops, the ring over the links */
    struct ladder_layout lay;
    ladder_attempt_layout(&l.att[3], e, &lay);
    double c = 1 / 34599.44, s = 2.0 / 12, M = 4.0 * 2816, B = 0.248e9 / 8;
    double t = c * 2 / s + 22 * q / s + e->k_net * (22.0 / 12 * M / B + 22 * 1e-5);
    ck_assert_double_eq_tol(ladder_predict(e, &lay, 2), 24 / t, 1e-3);
    ck_assert_msg(fabs(6137.70 / (24 / t) - 1) < 0.2, "phase2b: measured 6137.7, predicted %g",
                  24 / t);
    /* the same ladder without the term: the hops were charged to the links' k_net, which grows
     * with 2(P-1) alone, and phase2b came out at two thirds of the prediction */
    struct ladder_fit no_hop = *e;
    no_hop.hop_s = 0;
    no_hop.k_net = (16 / 7651.13 - c * 2 / 0.25) / (14.0 / 8 * M / B + 14 * 1e-5);
    ck_assert_double_lt(6137.70 / ladder_predict(&no_hop, &lay, 2), 0.7);
    /* a rank with a core of its own waits for no one's turn */
    lay.cores = 1;
    double t1 = c * 2 + e->k_net * (22.0 / 12 * M / B + 22 * 1e-5);
    ck_assert_double_eq_tol(ladder_predict(e, &lay, 2), 24 / t1, 1e-3);
    ladder_free(&l);
    teardown_fixture();
}
END_TEST

/* The tiny ladder with each phase's preflight ring hop (health.json links.ring_hop_us, copied
 * into report.json's links): 25 us per rank sharing a core up to phase2a, 30 at phase2b.
 * phase2a's small collective was disturbed while it trained (1.37 ms, five times its share):
 * q, fitted from the preflights, is not.  Each phase is evaluated with its own hop, as with its
 * own links; a rung not run yet with the fitted q; a report without the hop with its small
 * collective. */
START_TEST(ladder_preflight_hop_is_context)
{
    /* Each phase's preflight ring hop (health.json links.ring_hop_us) is read and kept, but the
     * model's q is the small collective's while the fitted phases trained: the preflight's hop,
     * every rank idle, was 4 to 7 times shorter than a training step's (docs/ladder.md). */
    ladder_root();
    ladder_report_placed_hop("baseline_1proc", "1", 1, 1, 34599.44, 30849.15, 2816, 2, 3.1e-5, 0);
    ladder_report_placed_hop("phase1_4proc", "2", 4, 1, 5471.67, 2630.03, 2816, 2, 0.064, 5);
    ladder_report_placed_hop("phase2a_8proc", "3", 8, 2, 7651.13, 5725.38, 2816, 2, 0.3, 10);
    ladder_report_placed_hop("phase2b_12proc", "4", 12, 3, 6137.70, 2325.44, 2816, 2, 0.6, 18);
    struct ladder l;
    struct rz_err err;
    ck_assert_int_eq(ladder_read(&l, root, &err), RZ_OK);
    ck_assert(isnan(l.att[0].ring_hop_s));
    ck_assert_double_eq_tol(l.att[2].ring_hop_s, 10e-6, 1e-15);
    const struct ladder_fit *e = &l.early;
    /* q: phase1 0.064 ms / 2 rounds x 1/2 = 16 us, phase2a 0.3 ms / 3 rounds x 1/4 = 25 us */
    ck_assert_double_eq_tol(e->hop_s, 0.5 * (16e-6 + 25e-6), 1e-15);
    ck_assert_ptr_nonnull(strstr(e->note, "small collective"));
    /* phase2b on its own layout: the fitted q, whatever its own preflight measured */
    struct ladder_layout lay;
    ladder_attempt_layout(&l.att[3], e, &lay);
    double c = 1 / 34599.44, M = 4.0 * 2816, B = 0.248e9 / 8;
    double t = c * 2 * 6 + 22 * e->hop_s * 6 + e->k_net * (22.0 / 12 * M / B + 22 * 1e-5);
    ck_assert_double_eq_tol(ladder_predict(e, &lay, 2), 24 / t, 1e-6 * 24 / t);
    ladder_free(&l);
    teardown_fixture();
}
END_TEST

/* A run root that is not there, and one without a phase report: RZ_EDATA naming the root. */
START_TEST(ladder_read_errors)
{
    struct ladder l;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_int_eq(ladder_read(&l, "/nonexistent/check_ladder", &err), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(err.msg, "ladder: open '/nonexistent/check_ladder'"));
    ladder_free(&l);
    ladder_root();
    put("phase1/events.jsonl", "w", "");
    rz_err_clear(&err);
    ck_assert_int_eq(ladder_read(&l, root, &err), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(err.msg, "no phase report under"));
    ladder_free(&l);
    /* a phase's prediction from such a root: not ok, the reason in its note */
    struct ladder_fit fit;
    ladder_fit_root(&fit, root, 4);
    ck_assert(!fit.ok);
    ck_assert_ptr_nonnull(strstr(fit.note, "no phase report under"));
    teardown_fixture();
}
END_TEST

/* A phase that ended before any rank wrote a metric (world_size 0 in its report): listed with
 * how it ended, left out of the fit, and the rest of the run root still read. */
START_TEST(ladder_lists_a_phase_that_ended_before_training)
{
    ladder_root();
    ladder_report("base", "1", 1, 100, 0.01);
    ladder_report("p2", "2", 2, 190, 0.1);
    put("p4/reports/3/report.json", "w", "{\"verdict\":\"NO-GO\",\"phase\":\"p4\",\"job\":"
        "\"3\",\"time\":\"2026-11-22T10:00:09Z\",\"world_size\":0,\"throughput\":null,"
        "\"ended\":\"health\",\"criteria\":[],\"per_rank\":[]}\n");
    struct ladder l;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_msg(ladder_read(&l, root, &err) == RZ_OK, "%s", err.msg);
    ck_assert_uint_eq(l.n_att, 3);
    const struct ladder_attempt *ended = NULL;
    for (size_t i = 0; i < l.n_att; i++)
        if (strcmp(l.att[i].job, "3") == 0)
            ended = &l.att[i];
    ck_assert_ptr_nonnull(ended);
    ck_assert_int_eq(ended->world, 0);
    ck_assert_str_eq(ended->ended, "health");
    ck_assert(isnan(ended->per_rank_batch));
    ck_assert(l.fit.ok);
    ck_assert_int_eq(l.fit.points, 2); /* the two phases that trained */
    ladder_free(&l);
    teardown_fixture();
}
END_TEST

/* ladder.csv: the header, one row per attempt in the ladder's order, a field with a comma and a
 * quote quoted, an attempt that never trained with its figures empty (NaN) and its ended reason. */
START_TEST(ladder_csv_has_a_row_per_attempt)
{
    static struct ladder l;
    struct ladder_attempt att[2];
    memset(att, 0, sizeof att);
    for (int i = 0; i < 2; i++) {
        struct ladder_attempt *a = &att[i];
        a->throughput = a->throughput_p10 = a->model = a->efficiency = a->efficiency_prev = NAN;
        a->comm = a->p50_ms = a->p99_ms = a->straggler = a->compute_s = NAN;
        a->per_rank_batch = a->cores_per_rank = a->goodput = NAN;
    }
    snprintf(att[0].phase, sizeof att[0].phase, "p1");
    snprintf(att[0].lineage, sizeof att[0].lineage, "p1");
    snprintf(att[0].job, sizeof att[0].job, "11");
    snprintf(att[0].verdict, sizeof att[0].verdict, "GO");
    snprintf(att[0].from_ckpt, sizeof att[0].from_ckpt, "/r/ckpt,\"a\"");
    att[0].world = 2;
    att[0].nodes = 1;
    att[0].throughput = 128.5;
    att[0].efficiency = 1;
    att[0].steps = 40;
    snprintf(att[1].phase, sizeof att[1].phase, "p2");
    snprintf(att[1].lineage, sizeof att[1].lineage, "p2/rollback-12");
    snprintf(att[1].job, sizeof att[1].job, "13");
    snprintf(att[1].verdict, sizeof att[1].verdict, "NO-GO");
    snprintf(att[1].ended, sizeof att[1].ended, "health");
    l.att = att;
    l.n_att = 2;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ladder_write_csv(f, &l);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_ptr_eq(strstr(buf, "phase,lineage,job,world_size,nodes,verdict,ended,"), buf);
    const char *r1 = strstr(buf, "\r\n") + 2;
    ck_assert_ptr_eq(strstr(r1, "p1,p1,11,2,1,GO,,,,128.5,,,1,,"), r1);
    ck_assert_ptr_nonnull(strstr(r1, ",40,0,,\"/r/ckpt,\"\"a\"\"\"\r\n"));
    const char *r2 = strstr(r1, "\r\n") + 2;
    ck_assert_ptr_eq(strstr(r2, "p2,p2/rollback-12,13,0,0,NO-GO,health,,,,,,,,"), r2);
    ck_assert_str_eq(strstr(r2, "\r\n"), "\r\n");
    free(buf);
}
END_TEST

static Suite *ladder_suite(void)
{
    Suite *s = suite_create("ladder");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, ladder_fit_predictions_and_flags);
    tcase_add_test(core, ladder_hindcast_from_the_dev_cluster);
    tcase_add_test(core, ladder_forward_on_the_nodes_it_gets);
    tcase_add_test(core, ladder_hops_on_shared_cores);
    tcase_add_test(core, ladder_preflight_hop_is_context);
    tcase_add_test(core, ladder_lists_a_phase_that_ended_before_training);
    tcase_add_test(core, ladder_csv_has_a_row_per_attempt);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, ladder_read_errors);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(ladder_suite());
}
