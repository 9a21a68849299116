/* ladder_write.c: ladder.md and ladder.html from a struct ladder (one document, formatted; its
 * JSON is record/ladder_json.c), and the three files written durably into RUN_ROOT.  ladder.html
 * is self-contained (inline CSS and SVG, no scripts or external files) with four charts against
 * ranks on a log2 axis, each an <svg> with a stable id and its values in data-* attributes:
 *   chart-ladder-throughput  measured (circle.pt), the model (polyline.model), predictions
 *                            (circle.pred with line.err from lo to hi)
 *   chart-ladder-efficiency  weak-scaling efficiency against the base attempt; above 100% is
 *                            circle.over and flagged in the text
 *   chart-ladder-comm        exposed communication ratio (worst rank)
 *   chart-ladder-p99         small-collective latency p99, ms
 * The chart primitives are chart/chart.h's, shared with report.html.
 * Deliberately not here: reading or fitting (ladder_read.c, ladder_model.c); no figure is
 * computed here that another writer also needs. */
#include "config.h"

#include "ladder/ladder.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "chart/chart.h"
#include "core/durable.h"
#include "core/util.h"

/* "relaunch (failure) 12.3 s x2; requeue (slurm) 9.9 s" ("-" none). */
static const char *ladder_lost_text(char *buf, size_t len, const struct ladder_attempt *a)
{
    buf[0] = '\0';
    for (int i = 0; i < a->n_lost; i++) {
        size_t used = strlen(buf);
        rz_fmt(buf + used, len - used, "%s%s %.1f s", i ? "; " : "", a->lost[i].kind,
               a->lost[i].seconds);
        used = strlen(buf);
        if (a->lost[i].stops > 1)
            rz_fmt(buf + used, len - used, " in %lld stops", (long long)a->lost[i].stops);
    }
    if (buf[0] == '\0')
        rz_fmt(buf, len, "-");
    return buf;
}

/* Every attempt's nodes_excluded, once each ("" none). */
static void ladder_excluded(const struct ladder *l, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < l->n_att; i++)
        rz_list_add(out, len, l->att[i].nodes_excluded);
}

/* ---- ladder.md ------------------------------------------------------------------------------- */
static const char *ladder_num(char *buf, size_t len, double v, double scale)
{
    if (isnan(v))
        rz_fmt(buf, len, "n/a");
    else
        rz_fmt(buf, len, "%.6g", v * scale);
    return buf;
}

/* An efficiency as "96.3%" ("n/a" when unknown). */
static const char *ladder_pct(char *buf, size_t len, double v)
{
    if (isnan(v))
        rz_fmt(buf, len, "n/a");
    else
        rz_fmt(buf, len, "%.1f%%", 100 * v);
    return buf;
}

static void ladder_md_attempts(FILE *f, const struct ladder *l)
{
    fputs("## Phases and attempts\n\n| ranks | phase | job | verdict | samples/s | model | "
          "efficiency | comm | allreduce p99 ms | straggler | skipped | requeues (failure/"
          "other) | goodput | time lost |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
          f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        char tp[32], mo[32], ef[32], cm[32], p9[32], sg[32], gp[32], lost[600];
        int64_t other = 0;
        for (int r = 1; r < l->n_rq; r++)
            other += a->requeues[r];
        fprintf(f, "| %d | %s | %s | %s%s%s | %s | %s | %s%s | %s | %s | %s | %lld | %lld/%lld "
                   "| %s | %s |\n", a->world, a->lineage, a->job, a->verdict, a->ended[0] ? ", ended: " : "",
                a->ended, ladder_num(tp, sizeof tp, a->throughput, 1),
                ladder_num(mo, sizeof mo, a->model,
                         1),
                ladder_pct(ef, sizeof ef, a->efficiency),
                ladder_over_100(a->efficiency) ? " **(above 100%)**" : "",
                ladder_num(cm, sizeof cm, a->comm, 1), ladder_num(p9, sizeof p9, a->p99_ms, 1),
                ladder_num(sg, sizeof sg, a->straggler, 1), (long long)a->skipped,
                (long long)a->requeues[0], (long long)other,
                ladder_pct(gp, sizeof gp, a->goodput), ladder_lost_text(lost, sizeof lost, a));
    }
    char excl[600];
    ladder_excluded(l, excl, sizeof excl);
    fputs("\nGoodput: each attempt's training time (each step once) over its wall time from its "
          "first start, restarts included; time lost: from the last step before a stop to the "
          "first after it, by kind of restart.\n", f);
    if (excl[0] != '\0')
        fprintf(f, "\nNodes excluded for the rest of the ladder (each failed twice in this run "
                "root): %s.\n", excl);
    fputc('\n', f);
}

static void ladder_md_flags(FILE *f, const struct ladder *l)
{
    bool any = false;
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        if (!ladder_over_100(a->efficiency))
            continue;
        if (!any)
            fputs("## Efficiency above 100%\n\n", f);
        any = true;
        fprintf(f, "- %s job %s on %d ranks: %.1f%%. Under weak scaling efficiency cannot exceed "
                   "100%% except by measurement error; likely causes: the base was measured "
                   "under heavier contention, a different per-rank batch, too few windows, or "
                   "another machine.\n", a->lineage, a->job, a->world, 100 * a->efficiency);
    }
    if (any)
        fputc('\n', f);
}

static void ladder_md_hindcast(FILE *f, const struct ladder *l)
{
    char e[32], v[4][32];
    if (l->n_hindcast == 0)
        return;
    fprintf(f, "## Predicted before, measured after\n\nThe model fitted to the phases of at most %d "
               "ranks (band %s), against each larger phase measured since, on that phase's own "
               "topology and links.\n\n| phase | job | ranks | predicted samples/s | band | "
               "measured | measured / predicted |\n|---|---|---|---|---|---|---|\n",
            LADDER_EARLY_RANKS, ladder_pct(e, sizeof e, l->early.err_rel));
    for (size_t i = 0; i < l->n_hindcast; i++) {
        const struct ladder_hindcast_row *h = &l->hindcast[i];
        fprintf(f, "| %s | %s | %d | %s | %s .. %s | %s | %.2f |\n", h->phase, h->job, h->world,
                ladder_num(v[0], 32, h->predicted, 1), ladder_num(v[1], 32, h->lo, 1),
                ladder_num(v[2], 32, h->hi, 1), ladder_num(v[3], 32, h->measured, 1), h->ratio);
    }
    fputc('\n', f);
}

static void ladder_md_model(FILE *f, const struct ladder *l)
{
    ladder_md_hindcast(f, l);
    const struct ladder_fit *m = &l->fit;
    char c[32], al[32], be[32], e[32], lo[32], hi[32], bw[32];
    fprintf(f, "## Model and predictions\n\n`%s`, for P ranks of b samples each, s cores per "
               "rank (the phase's topology), M gradient bytes and the slowest link B of its "
               "preflight: c = %s s per sample on a core, k_local = %s s per byte, k_net = %s, "
               "M = %.0f bytes, B = %s bytes/s. Fitted to %s; band: %s.\n\n",
            LADDER_MODEL_FORMULA, ladder_num(c, sizeof c, m->c_s, 1),
            ladder_num(al, sizeof al, m->k_local, 1), ladder_num(be, sizeof be, m->k_net, 1),
            isnan(m->bytes) ? 0.0 : m->bytes, ladder_num(bw, sizeof bw, m->link_Bps, 1), m->note,
            ladder_pct(e, sizeof e, m->err_rel));
    fputs("| ranks | predicted samples/s | range | efficiency |\n|---|---|---|---|\n", f);
    for (int i = 0; i < l->n_pred; i++) {
        const struct ladder_prediction *p = &l->pred[i];
        fprintf(f, "| %d | %.6g | %s .. %s | %s%s |\n", p->world, p->throughput,
                ladder_num(lo, sizeof lo, p->lo, 1), ladder_num(hi, sizeof hi, p->hi, 1),
                ladder_pct(e, sizeof e, p->efficiency),
                ladder_over_100(p->efficiency) ? " (above 100%)" : "");
    }
    fputs(l->n_pred == 0 ? "(every rung has been measured)\n\n" : "\n", f);
}

static void ladder_md_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        fputs(*s == '|' ? "\\|" : (char[]){*s == '\n' ? ' ' : *s, 0}, f);
}

static void ladder_md_timeline(FILE *f, const struct ladder *l)
{
    fputs("## Verdict timeline\n\n| time | lineage | job | event | what |\n|---|---|---|---|---|\n",
          f);
    for (size_t k = 0; k < l->n_timeline; k++) {
        const struct ladder_event *e = &l->timeline[k];
        fprintf(f, "| %s | %s | %s | %s | ", e->when, e->lineage, e->job, e->event);
        ladder_md_cell(f, e->summary);
        fputs(" |\n", f);
    }
    fputs("\n## Checkpoint lineage\n\n| lineage | job | started from | rollback checkpoint | "
          "handed to |\n|---|---|---|---|---|\n", f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        fprintf(f, "| %s | %s | %s | %s | %s |\n", a->lineage, a->job,
                a->from_ckpt[0] ? a->from_ckpt : "(fresh)",
                a->rollback_ckpt[0] ? a->rollback_ckpt : "none",
                a->handed_to[0] ? a->handed_to : "-");
    }
    fputc('\n', f);
}

void ladder_write_md(FILE *f, const struct ladder *l)
{
    fprintf(f, "# Ladder: %zu attempt(s) under `%s`\n\n", l->n_att, l->root);
    if (l->base >= 0)
        fprintf(f, "Efficiency is weak scaling against %s job %s (%d rank(s)): (samples/s per "
                   "rank) / (the base's samples/s per rank).\n\n", l->att[l->base].lineage,
                l->att[l->base].job, l->att[l->base].world);
    ladder_md_flags(f, l);
    ladder_md_attempts(f, l);
    ladder_md_model(f, l);
    ladder_md_timeline(f, l);
}

/* ---- ladder.html --------------------------------------------------------------------------------- */

/* x: log2 of the ranks, 1 .. 64. */
static struct chart_axes ladder_rank_axes(void)
{
    struct chart_axes a = {-0.25, 6.25, INFINITY, -INFINITY, CHART_X_LOG2, 0};
    return a;
}

static void ladder_html_extend(struct chart_axes *a, double v)
{
    if (!isfinite(v))
        return;
    a->y0 = fmin(a->y0, v);
    a->y1 = fmax(a->y1, v);
}

static void ladder_html_point(FILE *f, const struct chart_axes *a, const struct ladder_attempt *at,
                          double v, const char *cls, const char *attr)
{
    if (!isfinite(v))
        return;
    fprintf(f, "<circle class=\"%s\" r=\"4\" cx=\"%.2f\" cy=\"%.2f\" data-world=\"%d\" "
               "data-phase=\"", cls, chart_px(a, log2(at->world)), chart_py(a, v), at->world);
    chart_html_text(f, at->lineage);
    fprintf(f, "\" data-job=\"");
    chart_html_text(f, at->job);
    fprintf(f, "\" %s=\"%.9g\"/>\n", attr, v);
}

static void ladder_html_throughput(FILE *f, const struct ladder *l)
{
    struct chart_axes a = ladder_rank_axes();
    a.y0 = 0;
    for (size_t i = 0; i < l->n_att; i++)
        ladder_html_extend(&a, l->att[i].throughput);
    for (int i = 0; i < l->n_pred; i++)
        ladder_html_extend(&a, isnan(l->pred[i].hi) ? l->pred[i].throughput : l->pred[i].hi);
    chart_range(&a.y0, &a.y1, true);
    a.y0 = 0;
    chart_begin(f, "chart-ladder-throughput", "Throughput vs ranks (measured, model, "
                "predicted)", "ranks", "samples/s", &a);
    double b = l->n_att > 0 ? l->att[l->n_att - 1].per_rank_batch : (double)NAN;
    if (l->fit.ok) {
        fputs("<polyline class=\"model\" points=\"", f);
        for (int p = 1; p <= 64; p++)
            fprintf(f, "%s%.2f,%.2f", p > 1 ? " " : "", chart_px(&a, log2(p)),
                    chart_py(&a, ladder_model(&l->fit, p, b)));
        fputs("\"/>\n", f);
    }
    for (size_t i = 0; i < l->n_att; i++)
        ladder_html_point(f, &a, &l->att[i], l->att[i].throughput, "pt", "data-sps");
    for (int i = 0; i < l->n_pred; i++) {
        const struct ladder_prediction *p = &l->pred[i];
        double x = chart_px(&a, log2(p->world));
        if (!isnan(p->lo))
            fprintf(f, "<line class=\"err\" x1=\"%.2f\" x2=\"%.2f\" y1=\"%.2f\" y2=\"%.2f\"/>"
                       "\n", x, x, chart_py(&a, p->lo), chart_py(&a, p->hi));
        fprintf(f, "<circle class=\"pred\" r=\"4\" cx=\"%.2f\" cy=\"%.2f\" data-world=\"%d\" "
                   "data-sps=\"%.9g\" data-lo=\"%.9g\" data-hi=\"%.9g\"/>\n", x,
                chart_py(&a, p->throughput), p->world, p->throughput, p->lo, p->hi);
    }
    chart_end(f);
}

static void ladder_html_efficiency(FILE *f, const struct ladder *l)
{
    struct chart_axes a = ladder_rank_axes();
    a.y0 = 0;
    a.y1 = 1;
    for (size_t i = 0; i < l->n_att; i++)
        ladder_html_extend(&a, l->att[i].efficiency);
    for (int i = 0; i < l->n_pred; i++)
        ladder_html_extend(&a, l->pred[i].efficiency);
    chart_range(&a.y0, &a.y1, true);
    a.y0 = 0;
    chart_begin(f, "chart-ladder-efficiency", "Weak-scaling efficiency vs ranks (above 1: "
                "flagged)", "ranks", "efficiency", &a);
    chart_hline(f, &a, 1.0, "full", "100%");
    for (size_t i = 0; i < l->n_att; i++)
        ladder_html_point(f, &a, &l->att[i], l->att[i].efficiency,
                      ladder_over_100(l->att[i].efficiency) ? "pt over" : "pt", "data-efficiency");
    for (int i = 0; i < l->n_pred; i++)
        if (isfinite(l->pred[i].efficiency))
            fprintf(f, "<circle class=\"pred\" r=\"4\" cx=\"%.2f\" cy=\"%.2f\" data-world=\"%d\" "
                       "data-efficiency=\"%.9g\"/>\n", chart_px(&a, log2(l->pred[i].world)),
                    chart_py(&a, l->pred[i].efficiency), l->pred[i].world,
                    l->pred[i].efficiency);
    chart_end(f);
}

/* A measured figure per attempt against ranks (comm ratio, p99 latency). */
static void ladder_html_series(FILE *f, const struct ladder *l, const char *id,
                           const char *title, const char *yl, size_t offset, const char *attr)
{
    struct chart_axes a = ladder_rank_axes();
    a.y0 = 0;
    for (size_t i = 0; i < l->n_att; i++)
        ladder_html_extend(&a, *(const double *)((const char *)&l->att[i] + offset));
    chart_range(&a.y0, &a.y1, true);
    a.y0 = 0;
    chart_begin(f, id, title, "ranks", yl, &a);
    for (size_t i = 0; i < l->n_att; i++)
        ladder_html_point(f, &a, &l->att[i], *(const double *)((const char *)&l->att[i] + offset),
                      "pt", attr);
    chart_end(f);
}

/* One <td> per value: text escaped. */
static void ladder_html_td(FILE *f, const char *s)
{
    fputs("<td>", f);
    chart_html_text(f, s);
    fputs("</td>", f);
}

static void ladder_html_flags(FILE *f, const struct ladder *l)
{
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        if (!ladder_over_100(a->efficiency))
            continue;
        fputs("<p class=\"flag\" data-over=\"", f);
        chart_html_text(f, a->lineage);
        fprintf(f, "\">Efficiency above 100%%: %.1f%% on %d ranks (", 100 * a->efficiency,
                a->world);
        chart_html_text(f, a->lineage);
        fputs(" job ", f);
        chart_html_text(f, a->job);
        fputs("). Under weak scaling it cannot exceed 100% except by measurement error: the base "
              "measured under heavier contention, another per-rank batch, too few windows or "
              "another machine.</p>\n", f);
    }
}

static void ladder_html_attempts(FILE *f, const struct ladder *l)
{
    fputs("<h2>Phases and attempts</h2>\n<table id=\"attempts\"><tr><th>ranks</th><th>lineage"
          "</th><th>job</th><th>verdict</th><th>samples/s</th><th>model</th><th>efficiency</th>"
          "<th>comm</th><th>allreduce p99 ms</th><th>straggler</th><th>skipped</th><th>requeues"
          " (failure / other)</th><th>goodput</th><th>time lost</th></tr>\n", f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        char v[7][32], lost[600];
        int64_t other = 0;
        for (int r = 1; r < l->n_rq; r++)
            other += a->requeues[r];
        fprintf(f, "<tr class=\"s-%s\"><td>%d</td>", strcmp(a->verdict, "GO") == 0 ? "go"
                : strcmp(a->verdict, "NO-GO") == 0 ? "no_go" : "hold", a->world);
        ladder_html_td(f, a->lineage);
        ladder_html_td(f, a->job);
        fprintf(f, "<td>%s%s", a->verdict, a->ended[0] ? " (ended: " : "");
        chart_html_text(f, a->ended);
        fprintf(f, "%s</td><td>%s</td><td>%s</td><td%s>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                   "<td>%lld</td><td>%lld / %lld</td><td>%s</td>", a->ended[0] ? ")" : "",
                ladder_num(v[0], 32, a->throughput, 1),
                ladder_num(v[1], 32, a->model, 1),
                ladder_over_100(a->efficiency) ? " class=\"flag\"" : "",
                ladder_pct(v[2], 32, a->efficiency), ladder_num(v[3], 32, a->comm, 1),
                ladder_num(v[4], 32, a->p99_ms, 1), ladder_num(v[5], 32, a->straggler, 1),
                (long long)a->skipped, (long long)a->requeues[0], (long long)other,
                ladder_pct(v[6], 32, a->goodput));
        ladder_html_td(f, ladder_lost_text(lost, sizeof lost, a));
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    char excl[600];
    ladder_excluded(l, excl, sizeof excl);
    if (excl[0] != '\0') {
        fputs("<p id=\"excluded\">Nodes excluded for the rest of the ladder (each failed twice in "
              "this run root): ", f);
        chart_html_text(f, excl);
        fputs(".</p>\n", f);
    }
}

static void ladder_html_hindcast(FILE *f, const struct ladder *l)
{
    char v[4][32];
    if (l->n_hindcast == 0)
        return;
    fprintf(f, "<h2>Predicted before, measured after</h2>\n<p>The model fitted to the phases of at "
               "most %d ranks, against each larger phase measured since.</p>\n<table id=\"hindcast"
               "\"><tr><th>phase</th><th>ranks</th><th>predicted samples/s</th><th>band</th><th>"
               "measured</th><th>measured / predicted</th></tr>\n", LADDER_EARLY_RANKS);
    for (size_t i = 0; i < l->n_hindcast; i++) {
        const struct ladder_hindcast_row *h = &l->hindcast[i];
        fprintf(f, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%s .. %s</td><td>%s</td>"
                   "<td>%.2f</td></tr>\n", h->phase, h->world, ladder_num(v[0], 32, h->predicted, 1),
                ladder_num(v[1], 32, h->lo, 1), ladder_num(v[2], 32, h->hi, 1),
                ladder_num(v[3], 32, h->measured, 1), h->ratio);
    }
    fputs("</table>\n", f);
}

static void ladder_html_model(FILE *f, const struct ladder *l)
{
    ladder_html_hindcast(f, l);
    const struct ladder_fit *m = &l->fit;
    char c[32], al[32], be[32];
    fprintf(f, "<h2>Model and predictions</h2>\n<p><code>%s</code> for P ranks of b samples "
               "each, s cores per rank, M gradient bytes and the slowest link B: c = %s s per "
               "sample on a core, k_local = %s s per byte, k_net = %s, M = %.0f bytes; fitted "
               "to ", LADDER_MODEL_FORMULA, ladder_num(c, sizeof c, m->c_s, 1),
            ladder_num(al, sizeof al, m->k_local, 1), ladder_num(be, sizeof be, m->k_net, 1),
            isnan(m->bytes) ? 0.0 : m->bytes);
    chart_html_text(f, m->note);
    char e[32], lo[32], hi[32];
    fprintf(f, "; band <b id=\"fit-error\">%s</b>.</p>\n"
               "<table id=\"predictions\"><tr><th>ranks</th><th>predicted samples/s</th>"
               "<th>range</th><th>efficiency</th></tr>\n", ladder_pct(e, sizeof e, m->err_rel));
    for (int i = 0; i < l->n_pred; i++) {
        const struct ladder_prediction *p = &l->pred[i];
        fprintf(f, "<tr><td>%d</td><td>%.6g</td><td>%s .. %s</td><td>%s</td></tr>\n", p->world,
                p->throughput, ladder_num(lo, sizeof lo, p->lo, 1),
                ladder_num(hi, sizeof hi, p->hi, 1), ladder_pct(e, sizeof e, p->efficiency));
    }
    fputs("</table>\n", f);
}

static void ladder_html_timeline(FILE *f, const struct ladder *l)
{
    fputs("<h2>Verdict timeline</h2>\n<table id=\"timeline\"><tr><th>time</th><th>lineage</th>"
          "<th>job</th><th>event</th><th>what</th></tr>\n", f);
    for (size_t k = 0; k < l->n_timeline; k++) {
        const struct ladder_event *e = &l->timeline[k];
        fprintf(f, "<tr class=\"ev-%s\">", e->event);
        ladder_html_td(f, e->when);
        ladder_html_td(f, e->lineage);
        ladder_html_td(f, e->job);
        ladder_html_td(f, e->event);
        ladder_html_td(f, e->summary);
        fputs("</tr>\n", f);
    }
    if (l->n_timeline == 0)
        fputs("<tr><td colspan=\"5\">no wrapper events (events.jsonl) under the run root</td>"
              "</tr>\n", f);
    fputs("</table>\n", f);
}

static void ladder_html_lineage(FILE *f, const struct ladder *l)
{
    fputs("<h2>Checkpoint lineage</h2>\n<table id=\"lineage\"><tr><th>lineage</th><th>job</th>"
          "<th>started from</th><th>rollback checkpoint</th><th>handed to</th></tr>\n", f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        fputs("<tr>", f);
        ladder_html_td(f, a->lineage);
        ladder_html_td(f, a->job);
        ladder_html_td(f, a->from_ckpt[0] ? a->from_ckpt : "(fresh)");
        ladder_html_td(f, a->rollback_ckpt[0] ? a->rollback_ckpt : "none");
        ladder_html_td(f, a->handed_to[0] ? a->handed_to : "-");
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

void ladder_write_html(FILE *f, const struct ladder *l)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>"
               "ryzen-llm ladder</title><style>%s</style></head><body>\n<h1>Ladder</h1>\n<p>",
            chart_css);
    fprintf(f, "%zu attempt(s) under <code>", l->n_att);
    chart_html_text(f, l->root);
    fputs("</code>; written ", f);
    chart_html_text(f, l->time);
    fputs(".</p>\n<h2>Charts</h2>\n<div class=\"charts\">\n", f);
    ladder_html_throughput(f, l);
    ladder_html_efficiency(f, l);
    ladder_html_series(f, l, "chart-ladder-comm", "Exposed communication vs ranks (worst rank)",
                   "comm time / step time", offsetof(struct ladder_attempt, comm), "data-comm");
    ladder_html_series(f, l, "chart-ladder-p99", "Small-collective latency p99 vs ranks", "ms",
                   offsetof(struct ladder_attempt, p99_ms), "data-p99");
    fputs("</div>\n", f);
    ladder_html_flags(f, l);
    ladder_html_attempts(f, l);
    ladder_html_model(f, l);
    ladder_html_timeline(f, l);
    ladder_html_lineage(f, l);
    fputs("</body></html>\n", f);
}

/* ---- files ---------------------------------------------------------------------------------- */

static void ladder_file_json(FILE *f, const void *l) { ladder_json_write(f, l); }
static void ladder_file_md(FILE *f, const void *l) { ladder_write_md(f, l); }
static void ladder_file_html(FILE *f, const void *l) { ladder_write_html(f, l); }

enum rz_status ladder_write(const struct ladder *l, struct rz_err *err)
{
    static const struct {
        const char *name;
        rz_durable_fn fn;
    } files[] = {{"ladder.json", ladder_file_json}, {"ladder.md", ladder_file_md},
                 {"ladder.html", ladder_file_html}};
    enum rz_status st = RZ_OK;
    for (size_t i = 0; st == RZ_OK && i < RZ_ARRAY_LEN(files); i++) {
        char path[4400];
        rz_fmt(path, sizeof path, "%s/%s", l->root, files[i].name);
        st = rz_durable_write(path, "report", files[i].fn, l, err);
    }
    return st;
}
