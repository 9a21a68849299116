/* check_record.c: the files the programs pass each other (src/record/): each format's writer and
 * reader agree, older files still read, and a damaged file is refused naming the file and the
 * field; the run-directory layout is parsed back as it is built. */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "record/events.h"
#include "record/exits.h"
#include "record/health_json.h"
#include "record/layout.h"
#include "record/prom_text.h"
#include "record/rank_log.h"
#include "record/report.h"
#include "record/summary.h"
#include "record_net.h"
#include "record_tok.h"
#include "testutil.h"

static char dir[4096], path[4200];

static void setup(void)
{
    const char *base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/check_record.XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/health.json", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

static void put(const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Two nodes, three ranks, a failed check, a failed host and the links: read back as written. */
START_TEST(health_round_trip)
{
    static struct health_doc h, got;
    struct health_rank ranks[3];
    struct rz_err e;
    memset(&h, 0, sizeof h);
    memset(ranks, 0, sizeof ranks);
    h.ok = false;
    rz_fmt(h.time, sizeof h.time, "2026-11-26T08:00:00Z");
    h.world_size = 3;
    rz_fmt(h.slurm_ntasks, sizeof h.slurm_ntasks, "3");
    h.n_checks = 2;
    rz_fmt(h.checks[0].name, sizeof h.checks[0].name, "ring");
    h.checks[0].ok = true;
    rz_fmt(h.checks[1].name, sizeof h.checks[1].name, "links");
    rz_fmt(h.checks[1].detail, sizeof h.checks[1].detail, "n1 -> n2 \"slow\"\n");
    rz_fmt(h.warning, sizeof h.warning, "a warning");
    h.n_hosts = 2;
    rz_fmt(h.hosts[0], HEALTH_HOST_LEN, "n1");
    rz_fmt(h.hosts[1], HEALTH_HOST_LEN, "n2");
    h.n_failed = 1;
    rz_fmt(h.failed_hosts[0], HEALTH_HOST_LEN, "n2");
    for (int r = 0; r < 3; r++) {
        ranks[r].rank = r;
        rz_fmt(ranks[r].host, sizeof ranks[r].host, "n%d", r < 2 ? 1 : 2);
        rz_fmt(ranks[r].cpus, sizeof ranks[r].cpus, "0-1");
        ranks[r].n_cpus = 2;
        ranks[r].omp_threads = 1;
        ranks[r].mem_total = 4096e6;
        ranks[r].mem_limit = 2048e6;
        ranks[r].run_root_seen = r != 2;
        snprintf(ranks[r].machine, sizeof ranks[r].machine, "boot-%d", r / 2);
        ranks[r].cpu_quota = r < 2 ? 0.5 : NAN; /* n2: no quota */
    }
    h.ranks = ranks;
    h.n_ranks = 3;
    h.has_links = true;
    h.links.n_hosts = 2;
    rz_fmt(h.links.hosts[0], HEALTH_HOST_LEN, "n1");
    rz_fmt(h.links.hosts[1], HEALTH_HOST_LEN, "n2");
    h.links.probe_bytes = 1 << 20;
    h.links.gbps[0][1] = 0.25;
    h.links.gbps[1][0] = 0.024;
    h.links.latency_us[0][1] = h.links.latency_us[1][0] = 81.5;
    h.links.ring_hop_us = 212.5;
    ck_assert_int_eq(health_write(path, &h, &e), RZ_OK);
    ck_assert_int_eq(health_read(path, &got, &e), RZ_OK);
    ck_assert(!got.ok);
    ck_assert_str_eq(got.time, h.time);
    ck_assert_int_eq(got.world_size, 3);
    ck_assert_int_eq(got.n_checks, 2);
    ck_assert_str_eq(got.checks[1].detail, h.checks[1].detail);
    ck_assert(got.checks[0].ok && !got.checks[1].ok);
    ck_assert_str_eq(got.warning, "a warning");
    ck_assert_int_eq(got.n_hosts, 2);
    ck_assert_int_eq(got.n_failed, 1);
    ck_assert_str_eq(got.failed_hosts[0], "n2");
    ck_assert_int_eq(got.n_ranks, 3);
    ck_assert_str_eq(got.ranks[2].host, "n2");
    ck_assert_int_eq(got.ranks[1].n_cpus, 2);
    ck_assert(got.ranks[0].mem_limit == 2048e6);
    ck_assert(got.ranks[0].run_root_seen && !got.ranks[2].run_root_seen);
    ck_assert_str_eq(got.ranks[1].machine, "boot-0");
    ck_assert_str_eq(got.ranks[2].machine, "boot-1");
    ck_assert_double_eq(got.ranks[1].cpu_quota, 0.5);
    ck_assert(isnan(got.ranks[2].cpu_quota));
    ck_assert(got.has_links);
    ck_assert_int_eq(got.links.n_hosts, 2);
    ck_assert(got.links.gbps[0][1] == 0.25 && got.links.gbps[1][0] == 0.024);
    ck_assert(got.links.latency_us[1][0] == 81.5);
    ck_assert_int_eq(got.links.probe_bytes, 1 << 20);
    ck_assert_double_eq(got.links.ring_hop_us, 212.5);
    health_free(&got);
    /* one rank: no ring to measure, written as null and read back as none */
    h.links.ring_hop_us = NAN;
    ck_assert_int_eq(health_write(path, &h, &e), RZ_OK);
    ck_assert_int_eq(health_read(path, &got, &e), RZ_OK);
    ck_assert(got.has_links);
    ck_assert(isnan(got.links.ring_hop_us));
    health_free(&got);
}
END_TEST

/* A file from before the checks, the limits and the links: what it has is read. */
START_TEST(health_reads_an_older_file)
{
    static struct health_doc got;
    struct rz_err e;
    put("{\"ok\":true,\"world_size\":1,\"ranks\":[{\"rank\":0,\"host\":\"n1\","
        "\"mem_total_bytes\":1e9}]}\n");
    ck_assert_int_eq(health_read(path, &got, &e), RZ_OK);
    ck_assert(got.ok);
    ck_assert_int_eq(got.n_checks, 0);
    ck_assert_int_eq(got.n_ranks, 1);
    ck_assert(got.ranks[0].mem_limit == 0.0);
    ck_assert(!got.has_links);
    health_free(&got);
}
END_TEST

START_TEST(health_refuses_what_is_not_one)
{
    static struct health_doc got;
    struct rz_err e;
    put("{\"ok\":true}\n");
    ck_assert_int_eq(health_read(path, &got, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "health.json: 'ranks' array missing"));
    put("{\"ranks\":[{\"rank\":0,\"host\":\"n1\"}]}\n");
    ck_assert_int_eq(health_read(path, &got, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "ranks[0] needs 'rank', 'host' and 'mem_total_bytes'"));
    put("{\"ranks\":[],\"links\":{\"hosts\":[\"n1\",\"n2\"],\"gbps\":[[0,1]],"
        "\"latency_us\":[[0,1],[1,0]]}}\n");
    ck_assert_int_eq(health_read(path, &got, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "links.gbps must be 2 rows, one per host"));
    put("{\"ranks\":[],\"links\":{\"hosts\":[\"n1\",\"n2\"],\"gbps\":[[0,1],[1,0]],"
        "\"latency_us\":[[0,1],[1,\"x\"]]}}\n");
    ck_assert_int_eq(health_read(path, &got, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "links.latency_us[1][1] is not a number"));
    put("{\"ranks\":[\n");
    ck_assert_int_eq(health_read(path, &got, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "health.json:"));
    unlink(path);
    ck_assert_int_eq(health_read(path, &got, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, path));
    ck_assert_ptr_null(got.ranks); /* nothing is left to free after a failure */
}
END_TEST

START_TEST(health_write_to_a_missing_directory_is_an_io_error)
{
    static struct health_doc h;
    struct rz_err e;
    char bad[4300];
    memset(&h, 0, sizeof h);
    snprintf(bad, sizeof bad, "%s/no/such/dir/health.json", dir);
    ck_assert_int_eq(health_write(bad, &h, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "no/such/dir"));
}
END_TEST

/* The run root of each run-directory layout ryzen-step writes (layout_run_dir): RUNROOT/<phase>,
 * .../rollback-<job>, .../task-<N> (a job array's task) and .../rollback-<job>/task-<N>. */
START_TEST(run_root_of_every_layout)
{
    static const char *const cases[][2] = {
        {"R/p1", "R"},
        {"/runs/p1", "/runs"},
        {"/runs/p1/rollback-42", "/runs"},
        {"/runs/p1/task-3", "/runs"},
        {"/runs/p1/rollback-42/task-0", "/runs"},
        {"runs/p1/task-17", "runs"},
        {"p1/task-3", "."},
        {"p1", "."},
        {"/p1", "/"},
        {"/runs/task-force", "/runs"},          /* a phase named like a task, no digits */
        {"/runs/p1/task-3x", "/runs/p1"},       /* not a task directory: a phase of its own */
        {"/runs/p1/task-3/", "/runs"},
        {"/runs/p1/", "/runs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[256];
        layout_run_root(cases[i][0], out, sizeof out);
        ck_assert_msg(strcmp(out, cases[i][1]) == 0, "run root of '%s' is '%s', expected '%s'",
                      cases[i][0], out, cases[i][1]);
    }
    /* built, then parsed back */
    char rd[512], root[512];
    ck_assert(layout_run_dir(rd, sizeof rd, "/r", "p1", NULL, NULL));
    ck_assert_str_eq(rd, "/r/p1");
    ck_assert(layout_run_dir(rd, sizeof rd, "/r,x", "p1", "42", "3"));
    ck_assert_str_eq(rd, "/r,x/p1/rollback-42/task-3");
    layout_run_root(rd, root, sizeof root);
    ck_assert_str_eq(root, "/r,x");
    ck_assert(layout_run_dir(rd, sizeof rd, "/r", "p1", "", "7"));
    ck_assert_str_eq(rd, "/r/p1/task-7");
    ck_assert(!layout_run_dir(rd, 8, "/r", "phase1", NULL, NULL)); /* does not fit */
    ck_assert(layout_is_rollback("rollback-9") && !layout_is_rollback("rollback-"));
    ck_assert(layout_is_task("task-12") && !layout_is_task("task-1a") && !layout_is_task("task-"));
}
END_TEST

/* Exit records: written by each rank, read back by ryzen-step; a file a rank died writing, and
 * names that are not records, are left out. */
START_TEST(exit_records_round_trip)
{
    struct exit_record w = {.rank = 3, .status = 76};
    snprintf(w.host, sizeof w.host, "n2");
    snprintf(w.end_reason, sizeof w.end_reason, "hang");
    snprintf(w.message, sizeof w.message, "rank 5 (n3) not responding \"for\" 300 s");
    struct rz_err err;
    ck_assert_int_eq(exit_record_write(dir, &w, &err), RZ_OK);
    w.rank = 0;
    w.status = 0;
    snprintf(w.end_reason, sizeof w.end_reason, "done");
    w.message[0] = '\0';
    ck_assert_int_eq(exit_record_write(dir, &w, &err), RZ_OK);
    char p[4300];
    snprintf(p, sizeof p, "%s/rank-00007.json", dir);
    FILE *f = fopen(p, "w");
    fputs("{\"rank\":7,\"sta", f); /* cut short */
    fclose(f);
    snprintf(p, sizeof p, "%s/notes.json", dir);
    f = fopen(p, "w");
    fputs("{\"rank\":9}\n", f);
    fclose(f);
    struct exit_record r[8];
    int n = 0;
    exit_records_read(dir, r, 8, &n);
    ck_assert_int_eq(n, 2);
    const struct exit_record *hang = r[0].rank == 3 ? &r[0] : &r[1];
    ck_assert_int_eq(hang->status, 76);
    ck_assert_str_eq(hang->host, "n2");
    ck_assert_str_eq(hang->end_reason, "hang");
    ck_assert_str_eq(hang->message, "rank 5 (n3) not responding \"for\" 300 s");
    exit_records_read(dir, r, 1, &n); /* at most max */
    ck_assert_int_eq(n, 1);
    exit_records_read("/nonexistent-dir", r, 8, &n);
    ck_assert_int_eq(n, 0);
    snprintf(p, sizeof p, "%s/rank-00000.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/rank-00003.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/rank-00007.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/notes.json", dir);
    unlink(p);
}
END_TEST

/* report.json read back (record/report.h): what the chain, the baseline and the ladder take
 * from it; check_gate reads back one that ryzen-gate's own writer made. */
START_TEST(report_reads_what_the_others_use)
{
    struct report_rec r;
    struct rz_err e;
    put("{\"phase\":\"phase1\",\"job\":\"12\",\"world_size\":4,\"verdict\":\"NO-GO\","
        "\"throughput\":200.5,\"throughput_p10\":190,\"allreduce_p50_ms\":0.25,\"steps\":60,"
        "\"planned_action\":{\"action\":\"rollback\",\"phase\":\"baseline\"},"
        "\"rollback_checkpoint\":{\"path\":\"/r/ck.h5\"},"
        "\"environment\":{\"global_batch\":32,\"num_parameters\":1e6},"
        "\"criteria\":[{\"name\":\"efficiency\",\"measured\":0.75},"
        "{\"name\":\"comm\",\"measured\":null}],"
        "\"per_rank\":[{\"mean_compute_s\":0.3},{\"mean_compute_s\":0.1},"
        "{\"mean_compute_s\":0.2},{\"mean_compute_s\":0.4}],"
        "\"topology\":{\"nodes\":2,\"machines\":1,\"cores_per_rank\":0.5,"
        "\"per_node\":[{\"machine_cpus\":2,\"cpu_quota\":null},"
        "{\"machine_cpus\":2,\"cpu_quota\":0.5},{\"cpu_quota\":0.75}]},"
        "\"links\":{\"hosts\":[\"n1\",\"n2\"],\"gbps\":[[0,0.25],[0.2,0]],"
        "\"latency_us\":[[0,80],[90,0]]},"
        "\"loss_curve\":[[8,5.5],[16,5.1]]}");
    ck_assert_int_eq(report_read(&r, path, &e), RZ_OK);
    ck_assert_str_eq(r.phase, "phase1");
    ck_assert_str_eq(r.job, "12");
    ck_assert_int_eq(r.world_size, 4);
    ck_assert_str_eq(r.verdict, "NO-GO");
    ck_assert_str_eq(r.action, "rollback");
    ck_assert_str_eq(r.action_phase, "baseline");
    ck_assert_str_eq(r.rollback_ckpt, "/r/ck.h5");
    ck_assert(r.has_throughput && r.has_curve);
    ck_assert_double_eq(r.throughput, 200.5);
    ck_assert_double_eq(r.throughput_p10, 190);
    ck_assert_double_eq(r.allreduce_p50_ms, 0.25);
    ck_assert_int_eq(r.steps, 60);
    ck_assert_double_eq(r.global_batch, 32);
    ck_assert_double_eq(r.num_parameters, 1e6);
    ck_assert_double_eq(report_measured(&r, "efficiency"), 0.75);
    ck_assert(isnan(report_measured(&r, "comm")));      /* null: not measured */
    ck_assert(isnan(report_measured(&r, "straggler"))); /* absent */
    ck_assert_double_eq_tol(r.median_compute_s, 0.25, 1e-12);
    ck_assert_int_eq(r.nodes, 2);
    ck_assert_int_eq(r.machines, 1);
    ck_assert_double_eq(r.cores_per_rank, 0.5);
    ck_assert_double_eq(r.machine_cpus, 2);
    ck_assert_double_eq(r.cpu_quota, 0.5); /* the tightest node's; null is none */
    ck_assert_ptr_nonnull(r.links);
    ck_assert_int_eq(r.links->n_hosts, 2);
    ck_assert_str_eq(r.links->hosts[1], "n2");
    ck_assert_double_eq(r.links->gbps[1][0], 0.2);
    ck_assert_double_eq(r.links->latency_us[0][1], 80);
    ck_assert(isnan(r.links->ring_hop_us)); /* a report from before the preflight measured it */
    ck_assert_uint_eq(r.n_curve, 2);
    ck_assert_double_eq(r.curve[3], 5.1);
    ck_assert_ptr_null(r.val_curve);
    report_free(&r);
    /* an older report: no topology, links, curves or throughput */
    put("{\"phase\":\"base\",\"job\":\"1\",\"world_size\":1}");
    ck_assert_int_eq(report_read(&r, path, &e), RZ_OK);
    ck_assert(!r.has_throughput && !r.has_curve);
    ck_assert(isnan(r.throughput) && isnan(r.cores_per_rank) && isnan(r.median_compute_s));
    ck_assert_ptr_null(r.links);
    ck_assert_str_eq(r.rollback_ckpt, "");
    report_free(&r);
}
END_TEST

START_TEST(report_refuses_what_is_not_one)
{
    static const struct { const char *text, *says; } bad[] = {
        {"{\"phase\":\"p\",\"job\":", ":1:20: unexpected end of input"},
        {"{\"job\":\"1\",\"world_size\":1}", "needs 'phase', 'job' and 'world_size' >= 0"},
        {"{\"phase\":\"p\",\"job\":\"1\",\"world_size\":-1}", "'world_size' >= 0"},
        {"[1,2]", "not a ryzen-gate report"},
        {"{\"phase\":\"p\",\"job\":\"1\",\"world_size\":1,\"loss_curve\":{}}",
         "'loss_curve' is not an array"},
        {"{\"phase\":\"p\",\"job\":\"1\",\"world_size\":1,\"loss_curve\":[[1,2],[3]]}",
         "loss_curve[1] is not [samples_seen, loss]"},
        {"{\"phase\":\"p\",\"job\":\"1\",\"world_size\":1,"
         "\"val_loss_curve\":[[4,2],[3,1]]}", "val_loss_curve[1]: samples_seen decreases"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct report_rec r;
        struct rz_err e = {0};
        put(bad[i].text);
        ck_assert_int_eq(report_read(&r, path, &e), RZ_EDATA);
        ck_assert_msg(strstr(e.msg, bad[i].says) != NULL && strstr(e.msg, path) != NULL,
                      "case %zu: %s", i, e.msg);
        report_free(&r);
    }
    struct report_rec r;
    struct rz_err e;
    ck_assert_int_eq(report_read(&r, "/nonexistent/report.json", &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/report.json"));
    report_free(&r);
}
END_TEST

/* RUN_DIR/reports/<job>/report.json: the path, and the newest of a phase by modification time. */
START_TEST(report_newest_of_a_run_dir)
{
    char p[8400], newest[8400], sub[8400];
    ck_assert(report_path(p, sizeof p, "/r/phase1", "42"));
    ck_assert_str_eq(p, "/r/phase1/reports/42/report.json");
    ck_assert(!report_path(p, 20, "/r/phase1", "42"));
    report_newest(newest, sizeof newest, dir);
    ck_assert_str_eq(newest, "");                 /* no reports/ */
    const char *jobs[] = {"7", "10", "9"};
    for (int i = 0; i < 3; i++) {
        snprintf(sub, sizeof sub, "%s/reports/%s", dir, jobs[i]);
        ck_assert_int_eq(rz_mkdirs(sub, NULL), RZ_OK);
        ck_assert(report_path(p, sizeof p, dir, jobs[i]));
        FILE *f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fputs("{}", f);
        fclose(f);
        struct timespec t[2] = {{1000 + i * 10, 0}, {1000 + i * 10, 0}};
        ck_assert_int_eq(utimensat(AT_FDCWD, p, t, 0), 0);
    }
    report_newest(newest, sizeof newest, dir);
    ck_assert(report_path(p, sizeof p, dir, "9"));
    ck_assert_str_eq(newest, p);                  /* newest by time, not by name */
    for (int i = 0; i < 3; i++) {
        ck_assert(report_path(p, sizeof p, dir, jobs[i]));
        unlink(p);
        snprintf(sub, sizeof sub, "%s/reports/%s", dir, jobs[i]);
        rmdir(sub);
    }
    snprintf(sub, sizeof sub, "%s/reports", dir);
    rmdir(sub);
}
END_TEST

/* ---- events.jsonl, rank-NNNNN.jsonl, summary.json: each in a tree of its own ---------------- */

static char tree[4096];

static void tree_setup(void) { rz_test_tmpdir(tree, sizeof tree, "check_record_files"); }
static void tree_teardown(void) { rz_test_rmtree(tree); }

static void put_at(const char *file, const char *text)
{
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static enum rz_status count_line(void *ctx, const struct gj_value *v, const char *p, long line,
                                 const char *text, struct rz_err *err)
{
    (void)v, (void)p, (void)line, (void)text, (void)err;
    ++*(int *)ctx;
    return RZ_OK;
}

/* Every written reason reads back as itself; anything else is "other". */
START_TEST(events_requeue_vocabulary)
{
    for (int r = 0; r < EVENT_N_RQ_WRITTEN; r++)
        ck_assert_int_eq(event_requeue_of(event_requeue_name((enum event_requeue)r)), r);
    ck_assert_str_eq(event_requeue_name(EVENT_RQ_PREFLIGHT_NODE), "preflight_node");
    ck_assert_str_eq(event_requeue_name(EVENT_RQ_OTHER), "other");
    ck_assert_str_eq(event_requeue_name((enum event_requeue)99), "other");
    ck_assert_int_eq(event_requeue_of("other"), EVENT_RQ_OTHER); /* never a written reason */
    ck_assert_int_eq(event_requeue_of("cosmic_ray"), EVENT_RQ_OTHER);
    ck_assert_int_eq(event_requeue_of(NULL), EVENT_RQ_OTHER);
    ck_assert_int_eq(EVENT_N_RQ, EVENT_N_RQ_WRITTEN + 1);
    struct event_rec e = {.event = "rollback_start"};
    ck_assert(event_is_chain(&e) && event_is_verdict(&e));
    rz_fmt(e.event, sizeof e.event, "relaunch");
    ck_assert(!event_is_chain(&e) && event_is_verdict(&e));
    rz_fmt(e.event, sizeof e.event, "node_failed"); /* the job's own timeline only */
    ck_assert(!event_is_chain(&e) && !event_is_verdict(&e));
}
END_TEST

/* The writer's lines read back by the strict reader with their common and key fields. */
START_TEST(events_round_trip)
{
    struct events_log log;
    struct rz_err err;
    ck_assert_int_eq(events_open(&log, tree, "100", "90", 2, "phase1", &err), RZ_OK);
    struct event_kv rq[] = {{"reason", "preemption", 0}, {"status", NULL, 75}};
    event_append(&log, 1000.25, "start", "attempt 3", NULL, 0);
    event_append(&log, 1060.5, "requeue", "preempted", rq, 2);
    events_close(&log);
    event_append(&log, 1070, "lost", "after close: nothing", NULL, 0);
    struct event_rec *ev = NULL;
    size_t n = 0;
    char file[4200];
    snprintf(file, sizeof file, "%s/events.jsonl", tree);
    ck_assert_str_eq(log.path, file);
    ck_assert_int_eq(events_read(file, &ev, &n, &err), RZ_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(ev[0].event, "start");
    ck_assert_str_eq(ev[0].job, "100");
    ck_assert_str_eq(ev[0].phase, "phase1");
    ck_assert_str_eq(ev[0].reason, "");
    ck_assert_double_eq_tol(ev[0].t, 1000.25, 1e-9);
    ck_assert_str_eq(ev[0].when, "1970-01-01 00:16:40Z");
    ck_assert_str_eq(ev[1].reason, "preemption");
    ck_assert_int_eq(event_requeue_of(ev[1].reason), EVENT_RQ_PREEMPTION);
    ck_assert_str_eq(ev[1].summary, "preempted (reason preemption, status 75)");
    ck_assert_ptr_nonnull(strstr(ev[1].json, "\"lineage\":\"90\",\"restart\":2,"));
    events_free(ev, n);
    int lines = 0; /* the tolerant reader sees the same two */
    ck_assert_int_eq(events_each(file, JSONL_TOLERANT, count_line, &lines, &err), RZ_OK);
    ck_assert_int_eq(lines, 2);
    ev = NULL;
    n = 0;
    snprintf(file, sizeof file, "%s/none.jsonl", tree); /* no wrapper: no events, no error */
    ck_assert_int_eq(events_read(file, &ev, &n, &err), RZ_OK);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* A malformed line names the file and the line; the tolerant reader skips it. */
START_TEST(events_refuses_a_malformed_line)
{
    char file[4200];
    snprintf(file, sizeof file, "%s/events.jsonl", tree);
    const char *good = "{\"job\":\"1\",\"event\":\"start\",\"t\":5}\n";
    const char *bad[][2] = {
        {"{\"job\":\"1\",\"event\":\"start\"}\n", "events.jsonl:2: an event needs"},
        {"[1, 2]\n", "events.jsonl:2: a JSON object expected"},
        {"{\"job\":\"1\",\"ev\n", "events.jsonl:2"},
        {"{\"job\":\"1\",\"event\":\"x\",\"t\":6}", "events.jsonl:2: truncated line"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s%s", good, bad[i][0], i == 3 ? "" : good);
        put_at(file, text);
        struct event_rec *ev = NULL;
        size_t n = 0;
        struct rz_err err;
        ck_assert_int_eq(events_read(file, &ev, &n, &err), RZ_EDATA);
        ck_assert_msg(strstr(err.msg, file) != NULL && strstr(err.msg, bad[i][1]) != NULL,
                      "case %zu: %s", i, err.msg);
        ck_assert_uint_eq(n, 1); /* the line before it is kept */
        events_free(ev, n);
        int lines = 0;
        ck_assert_int_eq(events_each(file, JSONL_TOLERANT, count_line, &lines, &err), RZ_OK);
        ck_assert_int_eq(lines, i == 0 ? 3 : 2); /* a line without t is still an object */
    }
    struct events_log log;
    struct rz_err err;
    ck_assert_int_ne(events_open(&log, "/proc/self/rz-no/run", "1", "1", 0, "p", &err), RZ_OK);
    ck_assert_ptr_null(log.f);
}
END_TEST

/* Two steps of a rank, the second a requeued run's with a sync check: read back in file order. */
START_TEST(rank_log_round_trip)
{
    struct rank_log *log;
    struct rz_err err;
    ck_assert_int_eq(rank_log_open(&log, tree, "42", 1, &err), RZ_OK);
    struct rank_step s = {.step = 1, .run_step = 1, .samples_seen = 16, .loss = 3.5,
                          .step_time_s = 0.5, .comm_time_s = 0.125, .allreduce_s = 0.001,
                          .compute_time_s = 0.25, .rss_bytes = 4096, .world_size = 2,
                          .time = 1700000000.5, .lr = 3e-4, .grad_norm = 1.25};
    ck_assert_int_eq(rank_log_write(log, &s, &err), RZ_OK);
    s = (struct rank_step){.step = 1, .run_step = 1, .samples_seen = 16, .loss = 3.25,
                           .step_time_s = 0.75, .world_size = 2, .has_sync = 1, .sync_ok = 1,
                           .gnorm_post_spread = 0.5, .has_val = 1, .val_loss = 3};
    ck_assert_int_eq(rank_log_write(log, &s, &err), RZ_OK);
    char mdir[4200], file[4400];
    snprintf(mdir, sizeof mdir, "%s/metrics/42", tree);
    rank_log_file(file, sizeof file, mdir, 1);
    ck_assert_str_eq(rank_log_path(log), file);
    rank_log_close(log);
    struct rank_row *rows = NULL;
    size_t n = 0;
    int world = 0;
    ck_assert_int_eq(rank_log_read(file, &rows, &n, &world, &err), RZ_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(world, 2);
    ck_assert_double_eq(rows[0].loss, 3.5);
    ck_assert_double_eq(rows[0].compute_time_s, 0.25);
    ck_assert(rows[0].lr == 3e-4 && rows[0].grad_norm == 1.25);
    ck_assert_double_eq_tol(rows[0].time, 1700000000.5, 1e-3);
    ck_assert_uint_eq(rows[0].rss_bytes, 4096);
    ck_assert(!rows[0].has_sync);
    ck_assert(isnan(rows[0].val_loss));
    ck_assert_double_eq(rows[1].loss, 3.25);
    ck_assert(isnan(rows[1].time)); /* time 0: not written */
    ck_assert(rows[1].has_sync && rows[1].sync_ok);
    ck_assert_double_eq(rows[1].gnorm_post_spread, 0.5);
    ck_assert_double_eq(rows[1].val_loss, 3);
    free(rows);
}
END_TEST

/* A bad line is RZ_EDATA "FILE:LINE: ..." and the rows before it stay. */
START_TEST(rank_log_refuses_a_malformed_line)
{
    char file[4200];
    rank_log_file(file, sizeof file, tree, 0);
    const char *good = "{\"step\":1,\"run_step\":1,\"samples_seen\":8,\"world_size\":2,"
                       "\"loss\":1,\"step_time_s\":0.5,\"comm_time_s\":0,\"allreduce_s\":0,"
                       "\"rss_bytes\":10}\n";
    const char *bad[][2] = {
        {"{\"step\":2,\"run_step\":2,\"samples_seen\":16,\"world_size\":2,\"loss\":1,"
         "\"comm_time_s\":0,\"allreduce_s\":0,\"rss_bytes\":10}\n",
         "rank-00000.jsonl:2: field 'step_time_s' is missing"},
        {"{\"step\":2,\"run_step\":2,\"samples_seen\":16,\"world_size\":4,\"loss\":1,"
         "\"step_time_s\":0.5,\"comm_time_s\":0,\"allreduce_s\":0,\"rss_bytes\":10}\n",
         "rank-00000.jsonl:2: world_size 4 differs from 2"},
        {"{\"step\":2,\"run_step\":2,\"samples_seen\":16,\"world_size\":2,\"loss\":null,"
         "\"step_time_s\":0.5,\"comm_time_s\":0,\"allreduce_s\":0,\"rss_bytes\":10}\n",
         "rank-00000.jsonl:2: field 'loss' is null"},
        {"{\"step\":2,\"run_step\":2,\"samples_seen\":16,\"world_size\":2,\"loss\":1,\"lr\":\"x\","
         "\"step_time_s\":0.5,\"comm_time_s\":0,\"allreduce_s\":0,\"rss_bytes\":10}\n",
         "rank-00000.jsonl:2: field 'lr' is not a number"},
        {"{\"step\":0,\"run_step\":1,\"samples_seen\":16,\"world_size\":2}\n",
         "rank-00000.jsonl:2: field 'step' is not an integer >= 1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", good, bad[i][0]);
        put_at(file, text);
        struct rank_row *rows = NULL;
        size_t n = 0;
        int world = 0;
        struct rz_err err;
        ck_assert_int_eq(rank_log_read(file, &rows, &n, &world, &err), RZ_EDATA);
        ck_assert_msg(strstr(err.msg, file) != NULL && strstr(err.msg, bad[i][1]) != NULL,
                      "case %zu: %s", i, err.msg);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(world, 2);
        free(rows);
    }
    /* a skipped step may carry a null (non-finite) loss and gradient norm; no lr: NaN */
    char text[1024];
    snprintf(text, sizeof text, "%s{\"step\":2,\"run_step\":2,\"samples_seen\":16,\"grad_norm\":"
             "null,\"world_size\":2,\"skipped\":true,\"loss\":null,\"step_time_s\":0.5,"
             "\"comm_time_s\":0,\"allreduce_s\":0,\"rss_bytes\":10}\n", good);
    put_at(file, text);
    struct rank_row *rows = NULL;
    size_t n = 0;
    int world = 0;
    struct rz_err err;
    ck_assert_int_eq(rank_log_read(file, &rows, &n, &world, &err), RZ_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert(rows[1].skipped && isnan(rows[1].loss) && isnan(rows[1].grad_norm));
    ck_assert(isnan(rows[0].lr) && isnan(rows[1].lr));
    free(rows);
    rank_log_file(file, sizeof file, tree, 9);
    ck_assert_int_eq(rank_log_read(file, &rows, &n, &world, &err), RZ_EDATA); /* missing */
    ck_assert_ptr_nonnull(strstr(err.msg, "rank-00009.jsonl"));
    struct rank_log *log = NULL;
    ck_assert_int_eq(rank_log_open(&log, "/proc/self/rz-no", "1", 0, &err), RZ_EIO);
    ck_assert_ptr_null(log);
}
END_TEST

/* What ryzen-gate takes of a summary the trainer's writer made. */
START_TEST(summary_round_trip)
{
    struct summary_rank ranks[3] = {
        {.rank = 0, .host = "n1", .steps = 10, .predicted_peak_rss_bytes = 1000, .has_net = 1,
         .net_seconds = 2.5, .n_peers = 1},
        {.rank = 1, .host = "n1", .steps = 10, .predicted_peak_rss_bytes = 2000},
        {.rank = 2, .host = "n2", .steps = 10, .has_net = 1, .net_seconds = 3}};
    ranks[0].net = (struct netstat){.tcp_out_segs = 900, .tcp_retrans_segs = 9, .has_ext = 1,
                                    .timeouts = 2};
    ranks[0].peers[0] = (struct summary_peer){.host = "n2", .segs_out = 800, .retrans = 8,
                                              .data_segs_out = 700, .dsack_dups = NAN};
    struct summary_doc d = {.num_processes = 3, .steps = 10, .num_parameters = 123456,
                            .entropy_floor = 1.5, .restarts = 2, .ckpt_mode = "async",
                            .unigram_entropy = 5.25, .tokenizer_sha256 = "ab12",
                            .ckpt_count = 4, .ckpt_stall_s = 0.4, .ckpt_commit_s = 2,
                            .ckpt_policy = "young_daly", .ckpt_interval = 25,
                            .ckpt_interval_why = "mtbf 600 s", .ranks = ranks};
    struct rz_err err;
    ck_assert_int_eq(summary_write(tree, &d, &err), RZ_OK);
    char file[4200];
    summary_path(file, sizeof file, tree);
    struct summary_rec s;
    ck_assert_int_eq(summary_read(file, &s, &err), RZ_OK);
    ck_assert_double_eq(s.num_parameters, 123456);
    ck_assert_double_eq(s.entropy_floor, 1.5);
    ck_assert_double_eq(s.unigram_entropy, 5.25);
    ck_assert_str_eq(s.tokenizer_sha256, "ab12");
    ck_assert_int_eq(s.restarts, 2);
    ck_assert(s.ckpts.known);
    ck_assert_str_eq(s.ckpts.mode, "async");
    ck_assert_str_eq(s.ckpts.policy, "young_daly");
    ck_assert_str_eq(s.ckpts.why, "mtbf 600 s");
    ck_assert_int_eq(s.ckpts.interval_steps, 25);
    ck_assert_double_eq_tol(s.ckpts.stall_ms_mean, 100, 1e-9);
    ck_assert_double_eq_tol(s.ckpts.commit_ms_mean, 500, 1e-9);
    ck_assert_uint_eq(s.n_ranks, 3);
    ck_assert(s.ranks[2].has_rank && s.ranks[2].rank == 2);
    ck_assert_str_eq(s.ranks[2].host, "n2");
    ck_assert_double_eq(s.ranks[1].predicted_peak_rss, 2000);
    ck_assert_int_eq(s.n_net, 2); /* the nodes' lowest ranks */
    ck_assert_str_eq(s.net[0].host, "n1");
    ck_assert_int_eq(s.net[0].steps, 10);
    ck_assert_double_eq(s.net[0].segs, 900);
    ck_assert(s.net[0].has_ext);
    ck_assert_double_eq(s.net[0].timeouts, 2);
    ck_assert_int_eq(s.net[0].n_peers, 1);
    ck_assert_double_eq(s.net[0].peers[0].data_segs, 700);
    ck_assert(isnan(s.net[0].peers[0].spurious)); /* the kernel did not count them */
    ck_assert_str_eq(s.net[1].host, "n2");
    ck_assert(!s.net[1].has_ext);
    summary_free(&s);
    d.entropy_floor = -1; /* unknown: left out, read back NaN */
    d.unigram_entropy = -1; /* random or markov data: left out, read back NaN */
    d.tokenizer_sha256 = NULL; /* no tokenizer named: left out, read back "" */
    d.num_processes = 0;
    ck_assert_int_eq(summary_write(tree, &d, &err), RZ_OK);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(file, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_null(strstr(text, "unigram_entropy"));
    ck_assert_ptr_null(strstr(text, "tokenizer_sha256"));
    free(text);
    ck_assert_int_eq(summary_read(file, &s, &err), RZ_OK);
    ck_assert(isnan(s.entropy_floor));
    ck_assert(isnan(s.unigram_entropy));
    ck_assert_str_eq(s.tokenizer_sha256, "");
    ck_assert_uint_eq(s.n_ranks, 0);
    summary_free(&s);
}
END_TEST

START_TEST(summary_refuses_what_is_not_one)
{
    char file[4200];
    summary_path(file, sizeof file, tree);
    struct summary_rec s;
    struct rz_err err;
    ck_assert_int_eq(summary_read(file, &s, &err), RZ_EIO); /* missing */
    ck_assert_ptr_nonnull(strstr(err.msg, file));
    summary_free(&s);
    put_at(file, "{\"timestamp\":\"x\",\"num_processes\":1}\n");
    ck_assert_int_eq(summary_read(file, &s, &err), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(err.msg, file));
    ck_assert_ptr_nonnull(strstr(err.msg, "'aggregated_metrics' object missing"));
    summary_free(&s);
    put_at(file, "{\"aggregated_metrics\":{\n");
    ck_assert_int_eq(summary_read(file, &s, &err), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(err.msg, file));
    summary_free(&s);
    struct summary_doc d = {.num_processes = 0};
    ck_assert_int_eq(summary_write("/proc/self/rz-no", &d, &err), RZ_EIO);
}
END_TEST

/* The Prometheus text format's pieces: a label value escaped as the format asks (\\, \", \n),
 * a family's HELP and TYPE, and values as Prometheus spells them (NaN, +Inf; a timestamp or a
 * byte count with every digit). */
START_TEST(prom_text_pieces)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    prom_text_head(f, "ryzen_x_seconds", "gauge", "A test family.");
    fputs("ryzen_x_seconds{", f);
    prom_text_label(f, "phase", "a\\b\"c\nd", true);
    prom_text_label(f, "node", "n1", false);
    fputc('}', f);
    prom_text_value(f, 0.25);
    prom_text_value(f, NAN);
    prom_text_value(f, INFINITY);
    prom_text_value(f, -INFINITY);
    prom_text_value(f, 1764300000.0);
    prom_text_value(f, 1764300000.25);
    prom_text_value(f, 123456789012.0);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(buf, "# HELP ryzen_x_seconds A test family.\n# TYPE ryzen_x_seconds gauge\n"
                          "ryzen_x_seconds{phase=\"a\\\\b\\\"c\\nd\",node=\"n1\"} 0.25\n"
                          " NaN\n +Inf\n -Inf\n 1764300000\n 1764300000.250\n 123456789012\n");
    free(buf);
}
END_TEST

static Suite *record_suite(void)
{
    Suite *s = suite_create("record");
    TCase *health = rz_test_tcase("health");
    tcase_add_checked_fixture(health, setup, teardown);
    tcase_add_test(health, health_round_trip);
    tcase_add_test(health, health_reads_an_older_file);
    suite_add_tcase(s, health);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, health_refuses_what_is_not_one);
    tcase_add_test(errors, health_write_to_a_missing_directory_is_an_io_error);
    suite_add_tcase(s, errors);
    TCase *exits = rz_test_tcase("exits");
    tcase_add_checked_fixture(exits, setup, teardown);
    tcase_add_test(exits, exit_records_round_trip);
    suite_add_tcase(s, exits);
    TCase *report = rz_test_tcase("report");
    tcase_add_checked_fixture(report, setup, teardown);
    tcase_add_test(report, report_reads_what_the_others_use);
    tcase_add_test(report, report_refuses_what_is_not_one);
    tcase_add_test(report, report_newest_of_a_run_dir);
    suite_add_tcase(s, report);
    TCase *files = rz_test_tcase("events_rank_log_summary");
    tcase_add_checked_fixture(files, tree_setup, tree_teardown);
    tcase_add_test(files, events_requeue_vocabulary);
    tcase_add_test(files, events_round_trip);
    tcase_add_test(files, rank_log_round_trip);
    tcase_add_test(files, summary_round_trip);
    tcase_add_test(files, prom_text_pieces);
    suite_add_tcase(s, files);
    TCase *file_errors = rz_test_tcase("errors_events_rank_log_summary");
    tcase_add_checked_fixture(file_errors, tree_setup, tree_teardown);
    tcase_add_test(file_errors, events_refuses_a_malformed_line);
    tcase_add_test(file_errors, rank_log_refuses_a_malformed_line);
    tcase_add_test(file_errors, summary_refuses_what_is_not_one);
    suite_add_tcase(s, file_errors);
    TCase *layout = rz_test_tcase("layout");
    tcase_add_test(layout, run_root_of_every_layout);
    suite_add_tcase(s, layout);
    suite_add_tcase(s, record_tok_tcase());
    suite_add_tcase(s, record_tok_errors_tcase());
    suite_add_tcase(s, record_net_tcase());
    return s;
}

int main(void)
{
    return rz_test_main(record_suite());
}
