#include "config.h"

/* gate_html.c: report.html, one self-contained page (inline CSS and SVG; no scripts, fonts or
 * other files) with four charts, each an <svg> with a stable id:
 *   chart-loss        loss vs samples seen (one circle.pt per loss_curve point), the baseline's
 *                     curve (polyline.base) and the reference lines when known: the entropy
 *                     floor (line.floor) and the unigram entropy (line.floor.unigram, drawn
 *                     alike: text's line that a model must end below, not a floor)
 *   chart-throughput  samples/s per window (circle.pt), restarts as line.restart at their step
 *   chart-steptime    per-rank steady step-time box plot (g.box with data-min..data-max)
 *   chart-comm        per-rank exposed-communication share (rect.bar)
 * Every plotted point carries its value in data-* attributes so tests can check the page
 * against the metrics.  Deliberately not here: any judgement (gate_eval.c) or interactivity. */

#include "gate/gate.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "chart/chart.h"
#include "core/util.h"
#include "gate/gate_internal.h"

/* ---- the four charts ------------------------------------------------------------------------- */

static void gate_chart_loss(FILE *f, const struct gate_input *in, const struct gate_result *res)
{
    const struct gate_baseline *b = &in->baseline;
    struct chart_axes a = {INFINITY, -INFINITY, INFINITY, -INFINITY, CHART_X_LINEAR, 0};
    for (size_t i = 0; i < res->n_loss; i++) {
        a.x0 = fmin(a.x0, res->loss_curve[2 * i]);
        a.x1 = fmax(a.x1, res->loss_curve[2 * i]);
        a.y0 = fmin(a.y0, res->loss_curve[2 * i + 1]);
        a.y1 = fmax(a.y1, res->loss_curve[2 * i + 1]);
    }
    for (size_t i = 0; b->present && i < b->n_curve; i++) {
        a.x0 = fmin(a.x0, b->curve[2 * i]);
        a.x1 = fmax(a.x1, b->curve[2 * i]);
        a.y0 = fmin(a.y0, b->curve[2 * i + 1]);
        a.y1 = fmax(a.y1, b->curve[2 * i + 1]);
    }
    if (!isnan(in->entropy_floor)) {
        a.y0 = fmin(a.y0, in->entropy_floor);
        a.y1 = fmax(a.y1, in->entropy_floor);
    }
    if (!isnan(in->unigram_entropy)) {
        a.y0 = fmin(a.y0, in->unigram_entropy);
        a.y1 = fmax(a.y1, in->unigram_entropy);
    }
    chart_range(&a.x0, &a.x1, false);
    chart_range(&a.y0, &a.y1, true);
    chart_begin(f, "chart-loss", "Loss vs samples seen", "samples seen", "loss", &a);
    if (b->present && b->n_curve > 0) {
        fprintf(f, "<polyline class=\"base\" data-points=\"%zu\" points=\"", b->n_curve);
        for (size_t i = 0; i < b->n_curve; i++)
            fprintf(f, "%s%.2f,%.2f", i ? " " : "", chart_px(&a, b->curve[2 * i]),
                    chart_py(&a, b->curve[2 * i + 1]));
        fputs("\"/>\n", f);
    }
    chart_hline(f, &a, in->entropy_floor, "floor", "entropy floor");
    chart_hline(f, &a, in->unigram_entropy, "floor unigram", "unigram entropy");
    fputs("<polyline class=\"line\" points=\"", f);
    for (size_t i = 0; i < res->n_loss; i++)
        fprintf(f, "%s%.2f,%.2f", i ? " " : "", chart_px(&a, res->loss_curve[2 * i]),
                chart_py(&a, res->loss_curve[2 * i + 1]));
    fputs("\"/>\n", f);
    for (size_t i = 0; i < res->n_loss; i++)
        fprintf(f, "<circle class=\"pt\" r=\"2\" cx=\"%.2f\" cy=\"%.2f\" data-step=\"%lld\" "
                   "data-samples=\"%.9g\" data-loss=\"%.9g\"/>\n",
                chart_px(&a, res->loss_curve[2 * i]), chart_py(&a, res->loss_curve[2 * i + 1]),
                (long long)res->loss_steps[i], res->loss_curve[2 * i], res->loss_curve[2 * i + 1]);
    if (res->n_loss == 0)
        chart_empty(f, "no steps");
    chart_end(f);
}

static void gate_chart_throughput(FILE *f, const struct gate_input *in,
                                  const struct gate_result *res)
{
    const struct gate_criterion *k = &res->crit[GATE_THROUGHPUT];
    struct chart_axes a = {INFINITY, -INFINITY, INFINITY, -INFINITY, CHART_X_LINEAR, 0};
    if (in->n_steps > 0) {
        a.x0 = (double)in->steps[0].step;
        a.x1 = (double)in->steps[in->n_steps - 1].step;
    }
    for (size_t i = 0; i < res->n_windows; i++) {
        a.y0 = fmin(a.y0, res->windows[i].samples_per_sec);
        a.y1 = fmax(a.y1, res->windows[i].samples_per_sec);
    }
    (void)chart_range_threshold(&a.y0, &a.y1, k->no_go);
    (void)chart_range_threshold(&a.y0, &a.y1, k->go);
    chart_range(&a.x0, &a.x1, false);
    chart_range(&a.y0, &a.y1, true);
    chart_begin(f, "chart-throughput", "Throughput per window (restarts marked)", "step",
                "samples/s", &a);
    chart_thresholds(f, &a, k->go, k->no_go);
    for (size_t i = 0; i < res->n_restarts; i++)
        fprintf(f, "<line class=\"restart\" data-step=\"%lld\" x1=\"%.2f\" x2=\"%.2f\" "
                   "y1=\"%.1f\" y2=\"%.1f\"/>\n", (long long)res->restart_steps[i],
                chart_px(&a, (double)res->restart_steps[i]),
                chart_px(&a, (double)res->restart_steps[i]), CHART_T, CHART_H - CHART_B);
    fputs("<polyline class=\"line\" points=\"", f);
    for (size_t i = 0; i < res->n_windows; i++) {
        const struct gate_window *w = &res->windows[i];
        fprintf(f, "%s%.2f,%.2f", i ? " " : "",
                chart_px(&a, 0.5 * (double)(w->first_step + w->last_step)),
                chart_py(&a, w->samples_per_sec));
    }
    fputs("\"/>\n", f);
    for (size_t i = 0; i < res->n_windows; i++) {
        const struct gate_window *w = &res->windows[i];
        fprintf(f, "<circle class=\"pt\" r=\"3\" cx=\"%.2f\" cy=\"%.2f\" data-first-step=\"%lld\" "
                   "data-last-step=\"%lld\" data-sps=\"%.9g\"/>\n",
                chart_px(&a, 0.5 * (double)(w->first_step + w->last_step)),
                chart_py(&a, w->samples_per_sec), (long long)w->first_step,
                (long long)w->last_step, w->samples_per_sec);
    }
    if (res->n_windows == 0)
        chart_empty(f, "no steady-state steps");
    chart_end(f);
}

static void gate_chart_steptime(FILE *f, const struct gate_input *in,
                                const struct gate_result *res)
{
    struct chart_axes a = {-0.5, (in->world_size > 0 ? in->world_size : 1) - 0.5, INFINITY,
                           -INFINITY, CHART_X_RANKS, 0};
    for (int r = 0; r < in->world_size; r++) {
        if (isnan(res->rank_stats[r].q[0]))
            continue;
        a.y0 = fmin(a.y0, res->rank_stats[r].q[0]);
        a.y1 = fmax(a.y1, res->rank_stats[r].q[4]);
    }
    chart_range(&a.y0, &a.y1, true);
    chart_begin(f, "chart-steptime", "Steady step time per rank (min, quartiles, max)",
                "rank", "seconds", &a);
    double bw = (CHART_W - CHART_L - CHART_R) / fmax(in->world_size, 1) * 0.5;
    for (int r = 0; r < in->world_size; r++) {
        const double *q = res->rank_stats[r].q;
        if (isnan(q[0]))
            continue;
        double x = chart_px(&a, r);
        fprintf(f, "<g class=\"box\" data-rank=\"%d\" data-min=\"%.9g\" data-q1=\"%.9g\" "
                   "data-median=\"%.9g\" data-q3=\"%.9g\" data-max=\"%.9g\">", r, q[0], q[1],
                q[2], q[3], q[4]);
        fprintf(f, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.2f\" y2=\"%.2f\"/>", x, x,
                chart_py(&a, q[0]), chart_py(&a, q[4]));
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>", x - bw / 2,
                chart_py(&a, q[3]), bw, fmax(chart_py(&a, q[1]) - chart_py(&a, q[3]), 0.5));
        fprintf(f, "<line class=\"med\" x1=\"%.2f\" x2=\"%.2f\" y1=\"%.2f\" y2=\"%.2f\"/></g>\n",
                x - bw / 2, x + bw / 2, chart_py(&a, q[2]), chart_py(&a, q[2]));
    }
    chart_end(f);
}

static void gate_chart_comm(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    const struct gate_result *res = d->res;
    struct chart_axes a = {-0.5, (in->world_size > 0 ? in->world_size : 1) - 0.5, 0, 0,
                           CHART_X_RANKS, 0};
    for (int r = 0; r < in->world_size; r++)
        if (!isnan(res->rank_stats[r].comm_share))
            a.y1 = fmax(a.y1, res->rank_stats[r].comm_share);
    (void)chart_range_threshold(&a.y0, &a.y1, d->comm_go);
    (void)chart_range_threshold(&a.y0, &a.y1, d->comm_no_go);
    a.y1 = a.y1 > 0 ? a.y1 * 1.1 : 1;
    chart_begin(f, "chart-comm", "Exposed communication share per rank", "rank",
                "comm time / step time", &a);
    double bw = (CHART_W - CHART_L - CHART_R) / fmax(in->world_size, 1) * 0.6;
    for (int r = 0; r < in->world_size; r++) {
        double v = res->rank_stats[r].comm_share;
        if (isnan(v))
            continue;
        fprintf(f, "<rect class=\"bar\" data-rank=\"%d\" data-comm=\"%.9g\" x=\"%.2f\" "
                   "y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n", r, v,
                chart_px(&a, r) - bw / 2, chart_py(&a, v), bw, chart_py(&a, 0) - chart_py(&a, v));
    }
    /* after the bars, so that a bar over a threshold does not hide its line and label */
    chart_thresholds(f, &a, d->comm_go, d->comm_no_go);
    chart_end(f);
}

/* ---- the page -------------------------------------------------------------------------------- */

static void gate_html_criteria(FILE *f, const struct gate_result *res)
{
    fputs("<h2>Criteria</h2>\n<table><tr><th>criterion</th><th>measured</th><th>go</th>"
          "<th>no-go</th><th>status</th><th>samples</th><th>note</th></tr>\n", f);
    for (int i = 0; i < GATE_N_CRIT; i++) {
        const struct gate_criterion *k = &res->crit[i];
        char m[32], g[32], n[32];
        fprintf(f, "<tr class=\"s-%s\"><td>%s</td><td>%s %s</td><td>%s %s</td><td>%s %s</td>"
                   "<td>%s</td><td>%lld</td><td>",
                k->status == GATE_NA ? "na" : gate_status_name(k->status), k->name,
                gate_fmt_num(m, sizeof m, k->measured), k->unit,
                k->higher_is_better ? "&gt;=" : "&lt;=", gate_fmt_num(g, sizeof g, k->go),
                isnan(k->no_go) ? "" : k->higher_is_better ? "&lt;" : "&gt;",
                gate_fmt_num(n, sizeof n, k->no_go), gate_status_name(k->status),
                (long long)k->samples);
        chart_html_text(f, k->note);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void gate_html_ranks(FILE *f, const struct gate_input *in, const struct gate_result *res)
{
    fputs("<h2>Per rank (steady state)</h2>\n<table><tr><th>rank</th><th>host</th><th>steps"
          "</th><th>mean step s</th><th>comm share</th><th>peak RSS MiB</th></tr>\n", f);
    for (int r = 0; r < in->world_size; r++) {
        const struct gate_rank_stat *rs = &res->rank_stats[r];
        fprintf(f, "<tr><td>%d</td><td>", r);
        chart_html_text(f, in->ranks[r].host);
        fprintf(f, "</td><td>%lld</td><td>%.4g</td><td>%.4g</td><td>%.1f</td></tr>\n",
                (long long)rs->steps, rs->mean_step_s, rs->comm_share,
                (double)rs->peak_rss_bytes / 1048576.0);
    }
    fputs("</table>\n", f);
}

static void gate_html_env(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    fputs("<h2>Environment</h2>\n<table>", f);
    const char *rows[][2] = {
        {"phase", in->phase}, {"job", in->job}, {"run directory", in->run_dir},
        {"config", d->config_source}, {"config SHA-256", in->config_sha256},
        {"oneDNN ISA", in->isa[0] ? in->isa : "unknown"},
        {"CPUs per rank", in->cpus_per_rank},
        {"ryzen-llm", PACKAGE_VERSION}, {"data", d->data_kind},
        {"tokenizer", in->tokenizer_sha256}, {"unigram entropy", ""},
        {"baseline", in->baseline.present ? in->baseline.path : in->baseline.reason},
    };
    for (size_t i = 0; i < RZ_ARRAY_LEN(rows); i++) {
        bool tok = strcmp(rows[i][0], "tokenizer") == 0;
        bool uni = strcmp(rows[i][0], "unigram entropy") == 0;
        if ((tok && in->tokenizer_sha256[0] == '\0') || (uni && isnan(in->unigram_entropy)))
            continue; /* text data only: a random run's page is unchanged */
        fprintf(f, "<tr><th>%s</th><td>", rows[i][0]);
        if (tok && strspn(in->tokenizer_sha256, "0123456789abcdef") == 64)
            /* the first 12 hex digits, the whole hash on hover (report.json has it) */
            fprintf(f, "<code title=\"%s\">%.12s</code>", in->tokenizer_sha256,
                    in->tokenizer_sha256);
        else if (tok) /* not a SHA-256 in hex: shown as it is, escaped */
            chart_html_text(f, in->tokenizer_sha256);
        else if (uni)
            fprintf(f, "%.4f nats/token", in->unigram_entropy);
        else
            chart_html_text(f, rows[i][1]);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void gate_html_events(FILE *f, const char *title, const struct gate_input *in,
                             const size_t *idx, size_t n)
{
    fprintf(f, "<h2>%s</h2>\n<div class=\"ev\">", title);
    for (size_t i = 0; i < n; i++) {
        chart_html_text(f, in->events[idx[i]].json);
        fputc('\n', f);
    }
    fputs(n == 0 ? "(none)</div>\n" : "</div>\n", f);
}

/* Requeues by reason and one row per decision of any job of this run directory. */
static void gate_html_verdicts(FILE *f, const struct gate_input *in)
{
    fputs("<h2>Requeues of this job by reason</h2>\n<table id=\"requeues\"><tr>", f);
    for (int r = 0; r < EVENT_N_RQ; r++)
        fprintf(f, "<th>%s</th>", event_requeue_name((enum event_requeue)r));
    fputs("</tr><tr>", f);
    for (int r = 0; r < EVENT_N_RQ; r++)
        fprintf(f, "<td data-reason=\"%s\">%lld</td>", event_requeue_name((enum event_requeue)r),
                (long long)in->requeues[r]);
    fputs("</tr></table>\n<p>Only <i>failure</i> requeues count against the failures gate.</p>\n"
          "<h2>Verdict timeline</h2>\n<table id=\"verdicts\"><tr><th>time</th><th>job</th>"
          "<th>event</th><th>what</th></tr>\n", f);
    for (size_t i = 0; i < in->n_verdict_events; i++) {
        const struct event_rec *e = &in->events[in->verdict_events[i]];
        fprintf(f, "<tr class=\"ev-%s\"><td>%s</td><td>", e->event, e->when);
        chart_html_text(f, e->job);
        fputs("</td><td>", f);
        chart_html_text(f, e->event);
        fputs("</td><td>", f);
        chart_html_text(f, e->summary);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void gate_html_ckpt(FILE *f, const char *what, const struct gate_ckpt *k)
{
    fprintf(f, "<tr><th>%s</th><td>", what);
    if (k != NULL) {
        chart_html_text(f, k->path);
        fprintf(f, " (step %lld)", (long long)k->step);
    } else {
        fputs("none", f);
    }
    fputs("</td></tr>\n", f);
}

/* An ended phase: why, how, what it can resume from, and the preflight's checks. */
static void gate_html_ended(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    if (in->ended == GATE_END_NONE)
        return;
    fprintf(f, "<h2 id=\"ended\" data-reason=\"%s\">Ended without finishing training: %s</h2>"
               "\n<table><tr><th>why</th><td>", gate_end_name(in->ended), gate_end_name(in->ended));
    chart_html_text(f, in->why[0] ? in->why : "(not given)");
    fputs("</td></tr>\n", f);
    if (in->status >= 0)
        fprintf(f, "<tr><th>last exit status</th><td>%d</td></tr>\n", in->status);
    gate_html_ckpt(f, "last good checkpoint", d->res->last_good);
    gate_html_ckpt(f, "the one before it", d->res->prev_good);
    for (size_t i = 0; i < in->n_checks; i++) {
        fprintf(f, "<tr class=\"s-%s\"><th>preflight: ", in->checks[i].ok ? "go" : "no_go");
        chart_html_text(f, in->checks[i].name);
        fprintf(f, "</th><td>%s: ", in->checks[i].ok ? "ok" : "FAILED");
        chart_html_text(f, in->checks[i].detail);
        fputs("</td></tr>\n", f);
    }
    if (in->warnings[0] != '\0') {
        fputs("<tr><th>inputs not read</th><td class=\"ev\">", f);
        chart_html_text(f, in->warnings);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

void gate_write_html(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    const struct gate_result *res = d->res;
    const char *v = gate_verdict_name(res->verdict);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>", f);
    chart_html_text(f, in->phase);
    fprintf(f, " job %s: %s</title><style>%s</style></head><body>\n", in->job, v, chart_css);
    fprintf(f, "<h1><span class=\"v %s\" id=\"verdict\">%s</span> ", v, v);
    chart_html_text(f, in->phase);
    fprintf(f, " &middot; job ");
    chart_html_text(f, in->job);
    fprintf(f, "</h1>\n<p>%d rank(s), %zu steps, <span id=\"skipped\">%lld</span> skipped by "
               "the loss guard. Planned action: <b>%s</b> ", in->world_size, in->n_steps,
            (long long)res->skipped_steps, res->action);
    chart_html_text(f, res->action_phase);
    fputs(" (", f);
    chart_html_text(f, res->action_note);
    fputs(").</p>\n", f);
    gate_html_ended(f, d);
    if (!isnan(res->predicted)) {
        char range[96];
        gate_predicted_range(range, sizeof range, res);
        fprintf(f, "<p id=\"prediction\" data-predicted=\"%.9g\" data-measured=\"%.9g\">"
                   "Predicted by the ladder model from the phases with fewer ranks: %.6g samples/s "
                   "(%s); measured %.6g (%.0f%% of the prediction).</p>\n",
                res->predicted, res->crit[GATE_THROUGHPUT].measured, res->predicted, range,
                res->crit[GATE_THROUGHPUT].measured,
                100 * res->crit[GATE_THROUGHPUT].measured / res->predicted);
    }
    if (res->suspect[0] != '\0') {
        fputs("<h2>Suspect measurements</h2>\n<p id=\"suspect\">", f);
        chart_html_text(f, res->suspect);
        fputs("</p>\n", f);
    }
    gate_html_criteria(f, res);
    fputs("<h2>Charts</h2>\n<div class=\"charts\">\n", f);
    gate_chart_loss(f, in, res);
    gate_chart_throughput(f, in, res);
    gate_chart_steptime(f, in, res);
    gate_chart_comm(f, d);
    fputs("</div>\n", f);
    gate_html_ranks(f, in, res);
    gate_html_topology(f, in);
    gate_html_links(f, in);
    gate_html_network(f, in, res);
    gate_html_recoveries(f, in);
    gate_html_env(f, d);
    gate_html_verdicts(f, in);
    gate_html_events(f, "Promotion and rollback chain", in, in->chain_events, in->n_chain_events);
    gate_html_events(f, "Timeline of this job", in, in->job_events, in->n_job_events);
    fputs("</body></html>\n", f);
}
