/* gate_fixtures.c: the fixtures of check_gate (see gate_fixtures.h), used by check_gate.c and its
 * other files. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "core/status.h"
#include "core/util.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"
#include "testutil.h"

#include "gate_fixtures.h"

char root[256], run[512];
double val_base = NAN;

void put(const char *rel, const char *mode, const char *text)
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

void metrics(int rank, int from, int to, int run0, double step_time)
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

void baseline_report_with(double throughput, const char *more)
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

void baseline_report(double throughput)
{
    baseline_report_with(throughput, "");
}

void fixture(void)
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

void config(struct cfg *c)
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
    c->gates.packet_loss_go = 0.001; /* n/a all the same: one node (check_gate_net.c) */
    c->gates.packet_loss_no_go = 0.002;
}

void teardown_fixture(void)
{
    rz_test_rmtree(root);
}

const struct gate_opts job7 = {.job = "7", .status = -1};

enum rz_status judge(struct gate_input *in, struct gate_result *res, const struct cfg *c,
                            struct rz_err *err)
{
    rz_err_clear(err);
    enum rz_status st = gate_read(in, c, run, &job7, err);
    if (st == RZ_OK)
        st = gate_evaluate(res, in, c, err);
    return st;
}

char *slurp(const char *path)
{
    char *text = NULL;
    size_t len;
    ck_assert_int_eq(rz_read_file(path, &text, &len, NULL), RZ_OK);
    return text;
}

void thresholds(struct cfg *c, int k, double **go, double **no_go)
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

size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

void assert_balanced(const char *html)
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

char *chart(const char *html, const char *id)
{
    char key[64];
    snprintf(key, sizeof key, "<svg id=\"%s\"", id);
    const char *a = strstr(html, key);
    ck_assert_msg(a != NULL, "%s missing", id);
    const char *b = strstr(a, "</svg>");
    ck_assert_ptr_nonnull(b);
    return strndup(a, (size_t)(b - a));
}

char *two_rank_reports(struct cfg *c, double go, double no_go, struct gate_input *in,
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
