/* check_gate_reports: the report files, in check_gate's "core" test case (check_gate.c builds the
 * suite): report.md's first line, gate.prom syntax, report.json as the next baseline, and
 * report.html's structure (balanced tags, four charts, one loss point per downsampled metrics
 * point, metric values in data attributes); the JSON reader's escapes; and
 * monitoring/ryzen-dashboard.json as a Grafana model; the CSV cells (record/csv.h: RFC 4180
 * quoting, empty cells for NULL and NaN) and steps.csv (a header and one row per step).  Fixtures
 * from gate_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "core/status.h"
#include "core/util.h"
#include "gate/gate.h"
#include "record/csv.h"
#include "record/report.h"
#include "core/json_read.h"

#include "gate_fixtures.h"

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

/* record/csv.h: quotes only where RFC 4180 needs them (doubling quotes), an empty cell for NULL
 * and for a NaN or infinite number, numbers spelt as the JSON writer does, rows ending in CRLF. */
START_TEST(csv_cells_quote_and_leave_absent_empty)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    struct rz_csv c = {f, 0};
    rz_csv_header(&c, "a,b");
    rz_csv_str(&c, "plain");
    rz_csv_str(&c, "a,b");
    rz_csv_str(&c, "say \"hi\"");
    rz_csv_str(&c, "two\nlines");
    rz_csv_str(&c, NULL);
    rz_csv_str(&c, "");
    rz_csv_end_row(&c);
    rz_csv_num(&c, 1.5);
    rz_csv_num(&c, NAN);
    rz_csv_num(&c, INFINITY);
    rz_csv_num(&c, 0.1);
    rz_csv_int(&c, -3);
    rz_csv_num(&c, 1e-10);
    rz_csv_end_row(&c);
    rz_csv_num(&c, NAN); /* a row of one absent cell */
    rz_csv_end_row(&c);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(buf, "a,b\r\n"
                          "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",,\r\n"
                          "1.5,,,0.1,-3,1e-10\r\n"
                          "\r\n");
    free(buf);
}
END_TEST

/* steps.csv of the two-rank fixture: the header, then one row per merged step, in step order,
 * with every row as wide as the header and the validation loss empty (the fixture has none). */
START_TEST(steps_csv_has_a_row_per_step)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    char dir[4096], path[4200];
    free(two_rank_reports(&c, 200, 50, &in, &res, dir, sizeof dir));
    struct gate_doc doc;
    gate_doc_build(&doc, &in, &res, &c);
    ck_assert_msg(gate_write_csv_file(&doc, &err) == RZ_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    char *csv = slurp(path);
    ck_assert_uint_ge(in.n_steps, 200);
    ck_assert_uint_eq(count(csv, "\r\n"), in.n_steps + 1);
    size_t commas = 0;
    for (const char *p = csv; *p != '\r'; p++)
        commas += *p == ',';
    ck_assert_uint_eq(count(csv, ","), commas * (in.n_steps + 1));
    char first[128], last[64];
    const struct gate_step *s0 = &in.steps[0];
    /* no validation (empty), then rank 0's lr and grad_norm as the fixture wrote them
     * (gate_fixtures.c: 0.0005 and 1), then skipped */
    ck_assert_ptr_eq(strstr(csv, "step,run_step,samples_seen,loss,val_loss,lr,grad_norm,skipped,"),
                     csv);
    snprintf(first, sizeof first, "\r\n%lld,%lld,%lld,%.9g,,0.0005,1,0,", (long long)s0->step,
             (long long)s0->run_step, (long long)s0->samples_seen, s0->loss);
    ck_assert_ptr_eq(strstr(csv, first), strstr(csv, "\r\n"));
    snprintf(last, sizeof last, "\r\n%lld,", (long long)in.steps[in.n_steps - 1].step);
    ck_assert_ptr_nonnull(strstr(csv, last));
    free(csv);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

void gate_reports_tests(TCase *tc)
{
    tcase_add_test(tc, csv_cells_quote_and_leave_absent_empty);
    tcase_add_test(tc, steps_csv_has_a_row_per_step);
    tcase_add_test(tc, reports_are_written_and_well_formed);
    tcase_add_test(tc, json_reader_escapes);
    tcase_add_test(tc, dashboard_is_a_grafana_model);
}
