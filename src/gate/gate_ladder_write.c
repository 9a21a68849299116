#include "config.h"

/* gate_ladder_write.c: ladder.json, ladder.md and ladder.html from a struct gate_ladder (one
 * document, formatted three ways), written durably into RUN_ROOT.  ladder.html is
 * self-contained (inline CSS and SVG, no scripts or external files) with four charts against
 * ranks on a log2 axis, each an <svg> with a stable id and its values in data-* attributes:
 *   chart-ladder-throughput  measured (circle.pt), the model (polyline.model), predictions
 *                            (circle.pred with line.err from lo to hi)
 *   chart-ladder-efficiency  weak-scaling efficiency against the base attempt; above 100% is
 *                            circle.over and flagged in the text
 *   chart-ladder-comm        exposed communication ratio (worst rank)
 *   chart-ladder-p99         small-collective latency p99, ms
 * Deliberately not here: reading or fitting (gate_ladder.c). */

#include "gate/gate.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/util.h"
#include "gate/gate_internal.h"

#define GATE_MODEL_FORMULA "T(P, b) = c*b/s + H + k_net*(2(P-1)/P*M/B + 2(P-1)*lat) on several " \
                           "nodes, c*b/s + H + k_local*2(P-1)/P*M/s on one, H = 2(P-1)*q/s " \
                           "while s is under 1; throughput = P*b/T"

/* The model's throughput for a measured attempt, on its own layout. */
static double gate_attempt_model(const struct gate_ladder *l, const struct gate_attempt *a)
{
    struct gate_layout lay;
    gate_attempt_layout(a, &l->fit, &lay);
    return gate_ladder_predict(&l->fit, &lay, a->per_rank_batch);
}

static bool gate_over_100(double efficiency)
{
    return efficiency > 1.0;
}

/* ---- ladder.json --------------------------------------------------------------------------- */

static void gate_lj_attempt(struct rz_json *j, const struct gate_ladder *l,
                            const struct gate_attempt *a)
{
    rz_json_object_begin(j);
    rz_json_kv_string(j, "phase", a->phase);
    rz_json_kv_string(j, "job", a->job);
    rz_json_kv_string(j, "lineage", a->lineage);
    rz_json_kv_string(j, "report", a->report);
    rz_json_kv_string(j, "time", a->time);
    rz_json_kv_int(j, "world_size", a->world);
    rz_json_kv_string(j, "verdict", a->verdict);
    rz_json_kv_string(j, "ended", a->ended);
    rz_json_kv_double(j, "throughput", a->throughput);
    rz_json_kv_double(j, "model_throughput", gate_attempt_model(l, a));
    rz_json_kv_double(j, "efficiency", a->efficiency);
    rz_json_kv_bool(j, "efficiency_above_100", gate_over_100(a->efficiency));
    rz_json_kv_double(j, "efficiency_vs_previous", a->efficiency_prev);
    rz_json_kv_double(j, "comm", a->comm);
    rz_json_kv_double(j, "allreduce_p50_ms", a->p50_ms);
    rz_json_kv_double(j, "allreduce_p99_ms", a->p99_ms);
    rz_json_kv_double(j, "ring_hop_us", 1e6 * a->ring_hop_s);
    rz_json_kv_double(j, "straggler_ratio", a->straggler);
    rz_json_kv_double(j, "per_rank_batch", a->per_rank_batch);
    rz_json_kv_int(j, "steps", a->steps);
    rz_json_kv_int(j, "skipped_steps", a->skipped);
    rz_json_key(j, "requeues");
    rz_json_object_begin(j);
    for (int r = 0; r < GATE_N_RQ; r++)
        rz_json_kv_int(j, gate_requeue_name((enum gate_requeue)r), a->requeues[r]);
    rz_json_object_end(j);
    rz_json_kv_string(j, "from_checkpoint", a->from_ckpt);
    rz_json_kv_string(j, "rollback_checkpoint", a->rollback_ckpt);
    rz_json_kv_string(j, "handed_to", a->handed_to);
    rz_json_kv_string(j, "planned_action", a->action);
    rz_json_kv_string(j, "planned_phase", a->action_phase);
    rz_json_kv_double(j, "goodput", a->goodput);
    rz_json_key(j, "time_lost_by_kind");
    rz_json_array_begin(j);
    for (int i = 0; i < a->n_lost; i++) {
        rz_json_object_begin(j);
        rz_json_kv_string(j, "kind", a->lost[i].kind);
        rz_json_kv_double(j, "seconds", a->lost[i].seconds);
        rz_json_kv_int(j, "stops", a->lost[i].stops);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_kv_string(j, "nodes_lost", a->nodes_lost);
    rz_json_kv_string(j, "nodes_excluded", a->nodes_excluded);
    rz_json_object_end(j);
}

/* "relaunch (failure) 12.3 s x2; requeue (slurm) 9.9 s" ("-" none). */
static const char *gate_lost_text(char *buf, size_t len, const struct gate_attempt *a)
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
static void gate_ladder_excluded(const struct gate_ladder *l, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < l->n_att; i++)
        rz_list_add(out, len, l->att[i].nodes_excluded);
}

/* The early fit's prediction for a measured attempt of more than GATE_EARLY_RANKS ranks. */
static double gate_early_model(const struct gate_ladder *l, const struct gate_attempt *a)
{
    struct gate_layout lay;
    gate_attempt_layout(a, &l->early, &lay);
    return gate_ladder_predict(&l->early, &lay, a->per_rank_batch);
}

static bool gate_hindcast_row(const struct gate_attempt *a)
{
    return a->world > GATE_EARLY_RANKS && a->throughput > 0;
}

static void gate_lj_hindcast(struct rz_json *j, const struct gate_ladder *l)
{
    rz_json_key(j, "hindcast");
    rz_json_object_begin(j);
    rz_json_kv_int(j, "fitted_to_ranks_at_most", GATE_EARLY_RANKS);
    rz_json_kv_bool(j, "ok", l->early.ok);
    rz_json_kv_double(j, "error_rel", l->early.err_rel);
    rz_json_kv_string(j, "note", l->early.note);
    rz_json_key(j, "rows");
    rz_json_array_begin(j);
    for (size_t i = 0; l->early.ok && i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_hindcast_row(a))
            continue;
        double p = gate_early_model(l, a);
        rz_json_object_begin(j);
        rz_json_kv_string(j, "phase", a->phase);
        rz_json_kv_string(j, "job", a->job);
        rz_json_kv_int(j, "world_size", a->world);
        rz_json_kv_double(j, "predicted", p);
        rz_json_kv_double(j, "predicted_lo", p * (1.0 - l->early.err_rel));
        rz_json_kv_double(j, "predicted_hi", p * (1.0 + l->early.err_rel));
        rz_json_kv_double(j, "measured", a->throughput);
        rz_json_kv_double(j, "measured_vs_predicted", a->throughput / p);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_object_end(j);
}

static void gate_lj_model(struct rz_json *j, const struct gate_ladder *l)
{
    gate_lj_hindcast(j, l);
    const struct gate_fit *f = &l->fit;
    rz_json_key(j, "model");
    rz_json_object_begin(j);
    rz_json_kv_string(j, "formula", GATE_MODEL_FORMULA);
    rz_json_kv_bool(j, "ok", f->ok);
    rz_json_kv_double(j, "c_s_per_sample", f->c_s);
    rz_json_kv_double(j, "k_local_s_per_byte", f->k_local);
    rz_json_kv_double(j, "k_net", f->k_net);
    rz_json_kv_double(j, "hop_s_per_rank_sharing", f->hop_s);
    rz_json_kv_double(j, "node_cpu_quota", f->node_quota);
    rz_json_kv_double(j, "gradient_bytes", f->bytes);
    rz_json_kv_double(j, "ranks_per_node", f->ranks_per_node);
    rz_json_kv_double(j, "machine_cpus", f->machine_cpus);
    rz_json_kv_bool(j, "shared_machine", f->shared_machine);
    rz_json_kv_double(j, "link_bytes_per_s", f->link_Bps);
    rz_json_kv_double(j, "link_latency_s", f->link_lat_s);
    rz_json_kv_int(j, "points", f->points);
    rz_json_kv_double(j, "error_rel", f->err_rel);
    rz_json_kv_string(j, "note", f->note);
    rz_json_object_end(j);
    rz_json_key(j, "predictions");
    rz_json_array_begin(j);
    for (int i = 0; i < l->n_pred; i++) {
        const struct gate_prediction *p = &l->pred[i];
        rz_json_object_begin(j);
        rz_json_kv_int(j, "world_size", p->world);
        rz_json_kv_double(j, "throughput", p->throughput);
        rz_json_kv_double(j, "throughput_lo", p->lo);
        rz_json_kv_double(j, "throughput_hi", p->hi);
        rz_json_kv_double(j, "efficiency", p->efficiency);
        rz_json_kv_bool(j, "efficiency_above_100", gate_over_100(p->efficiency));
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

static void gate_lj_timeline(struct rz_json *j, const struct gate_ladder *l)
{
    rz_json_key(j, "timeline");
    rz_json_array_begin(j);
    for (size_t k = 0; k < l->n_timeline; k++) {
        size_t i = l->timeline[k];
        const struct gate_event *e = &l->events[i];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "time", e->when);
        rz_json_kv_fixed(j, "t", e->t, 3);
        rz_json_kv_string(j, "lineage", l->ev_lineage[i]);
        rz_json_kv_string(j, "job", e->job);
        rz_json_kv_string(j, "event", e->event);
        rz_json_kv_string(j, "summary", e->summary);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

void gate_ladder_write_json(FILE *f, const struct gate_ladder *l)
{
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "root", l->root);
    rz_json_kv_string(&j, "time", l->time);
    rz_json_key(&j, "base");
    if (l->base < 0) {
        rz_json_null(&j);
    } else {
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "phase", l->att[l->base].phase);
        rz_json_kv_string(&j, "job", l->att[l->base].job);
        rz_json_kv_int(&j, "world_size", l->att[l->base].world);
        rz_json_object_end(&j);
    }
    rz_json_key(&j, "attempts");
    rz_json_array_begin(&j);
    for (size_t i = 0; i < l->n_att; i++)
        gate_lj_attempt(&j, l, &l->att[i]);
    rz_json_array_end(&j);
    gate_lj_model(&j, l);
    gate_lj_timeline(&j, l);
    rz_json_object_end(&j);
    fputc('\n', f);
}

/* ---- ladder.md --------------------------------------------------------------------------------- */

static const char *gate_num(char *buf, size_t len, double v, double scale)
{
    return gate_fmt_num(buf, len, isnan(v) ? v : v * scale);
}

/* An efficiency as "96.3%" ("n/a" when unknown). */
static const char *gate_pct(char *buf, size_t len, double v)
{
    if (isnan(v))
        rz_fmt(buf, len, "n/a");
    else
        rz_fmt(buf, len, "%.1f%%", 100 * v);
    return buf;
}

static void gate_lm_attempts(FILE *f, const struct gate_ladder *l)
{
    fputs("## Phases and attempts\n\n| ranks | phase | job | verdict | samples/s | model | "
          "efficiency | comm | allreduce p99 ms | straggler | skipped | requeues (failure/"
          "other) | goodput | time lost |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
          f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        char tp[32], mo[32], ef[32], cm[32], p9[32], sg[32], gp[32], lost[600];
        int64_t other = 0;
        for (int r = 1; r < GATE_N_RQ; r++)
            other += a->requeues[r];
        fprintf(f, "| %d | %s | %s | %s%s%s | %s | %s | %s%s | %s | %s | %s | %lld | %lld/%lld "
                   "| %s | %s |\n", a->world, a->lineage, a->job, a->verdict, a->ended[0] ? ", ended: " : "",
                a->ended, gate_num(tp, sizeof tp, a->throughput, 1),
                gate_num(mo, sizeof mo, gate_attempt_model(l, a),
                         1),
                gate_pct(ef, sizeof ef, a->efficiency),
                gate_over_100(a->efficiency) ? " **(above 100%)**" : "",
                gate_num(cm, sizeof cm, a->comm, 1), gate_num(p9, sizeof p9, a->p99_ms, 1),
                gate_num(sg, sizeof sg, a->straggler, 1), (long long)a->skipped,
                (long long)a->requeues[GATE_RQ_FAILURE], (long long)other,
                gate_pct(gp, sizeof gp, a->goodput), gate_lost_text(lost, sizeof lost, a));
    }
    char excl[600];
    gate_ladder_excluded(l, excl, sizeof excl);
    fputs("\nGoodput: each attempt's training time (each step once) over its wall time from its "
          "first start, restarts included; time lost: from the last step before a stop to the "
          "first after it, by kind of restart.\n", f);
    if (excl[0] != '\0')
        fprintf(f, "\nNodes excluded for the rest of the ladder (each failed twice in this run "
                "root): %s.\n", excl);
    fputc('\n', f);
}

static void gate_lm_flags(FILE *f, const struct gate_ladder *l)
{
    bool any = false;
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_over_100(a->efficiency))
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

static void gate_lm_hindcast(FILE *f, const struct gate_ladder *l)
{
    char e[32], v[4][32];
    bool any = false;
    for (size_t i = 0; l->early.ok && i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_hindcast_row(a))
            continue;
        if (!any)
            fprintf(f, "## Predicted before, measured after\n\nThe model fitted to the phases "
                       "of at most %d ranks (band %s), against each larger phase measured "
                       "since, on that phase's own topology and links.\n\n| phase | job | ranks "
                       "| predicted samples/s | band | measured | measured / predicted |\n"
                       "|---|---|---|---|---|---|---|\n", GATE_EARLY_RANKS,
                    gate_pct(e, sizeof e, l->early.err_rel));
        any = true;
        double p = gate_early_model(l, a);
        fprintf(f, "| %s | %s | %d | %s | %s .. %s | %s | %.2f |\n", a->phase, a->job, a->world,
                gate_num(v[0], 32, p, 1), gate_fmt_num(v[1], 32, p * (1.0 - l->early.err_rel)),
                gate_fmt_num(v[2], 32, p * (1.0 + l->early.err_rel)),
                gate_num(v[3], 32, a->throughput, 1), a->throughput / p);
    }
    if (any)
        fputc('\n', f);
}

static void gate_lm_model(FILE *f, const struct gate_ladder *l)
{
    gate_lm_hindcast(f, l);
    const struct gate_fit *m = &l->fit;
    char c[32], al[32], be[32], e[32], lo[32], hi[32], bw[32];
    fprintf(f, "## Model and predictions\n\n`%s`, for P ranks of b samples each, s cores per "
               "rank (the phase's topology), M gradient bytes and the slowest link B of its "
               "preflight: c = %s s per sample on a core, k_local = %s s per byte, k_net = %s, "
               "M = %.0f bytes, B = %s bytes/s. Fitted to %s; band: %s.\n\n",
            GATE_MODEL_FORMULA, gate_num(c, sizeof c, m->c_s, 1),
            gate_num(al, sizeof al, m->k_local, 1), gate_num(be, sizeof be, m->k_net, 1),
            isnan(m->bytes) ? 0.0 : m->bytes, gate_num(bw, sizeof bw, m->link_Bps, 1), m->note,
            gate_pct(e, sizeof e, m->err_rel));
    fputs("| ranks | predicted samples/s | range | efficiency |\n|---|---|---|---|\n", f);
    for (int i = 0; i < l->n_pred; i++) {
        const struct gate_prediction *p = &l->pred[i];
        fprintf(f, "| %d | %.6g | %s .. %s | %s%s |\n", p->world, p->throughput,
                gate_fmt_num(lo, sizeof lo, p->lo), gate_fmt_num(hi, sizeof hi, p->hi),
                gate_pct(e, sizeof e, p->efficiency),
                gate_over_100(p->efficiency) ? " (above 100%)" : "");
    }
    fputs(l->n_pred == 0 ? "(every rung has been measured)\n\n" : "\n", f);
}

static void gate_lm_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        fputs(*s == '|' ? "\\|" : (char[]){*s == '\n' ? ' ' : *s, 0}, f);
}

static void gate_lm_timeline(FILE *f, const struct gate_ladder *l)
{
    fputs("## Verdict timeline\n\n| time | lineage | job | event | what |\n|---|---|---|---|---|\n",
          f);
    for (size_t k = 0; k < l->n_timeline; k++) {
        size_t i = l->timeline[k];
        const struct gate_event *e = &l->events[i];
        fprintf(f, "| %s | %s | %s | %s | ", e->when, l->ev_lineage[i], e->job, e->event);
        gate_lm_cell(f, e->summary);
        fputs(" |\n", f);
    }
    fputs("\n## Checkpoint lineage\n\n| lineage | job | started from | rollback checkpoint | "
          "handed to |\n|---|---|---|---|---|\n", f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        fprintf(f, "| %s | %s | %s | %s | %s |\n", a->lineage, a->job,
                a->from_ckpt[0] ? a->from_ckpt : "(fresh)",
                a->rollback_ckpt[0] ? a->rollback_ckpt : "none",
                a->handed_to[0] ? a->handed_to : "-");
    }
    fputc('\n', f);
}

void gate_ladder_write_md(FILE *f, const struct gate_ladder *l)
{
    fprintf(f, "# Ladder: %zu attempt(s) under `%s`\n\n", l->n_att, l->root);
    if (l->base >= 0)
        fprintf(f, "Efficiency is weak scaling against %s job %s (%d rank(s)): (samples/s per "
                   "rank) / (the base's samples/s per rank).\n\n", l->att[l->base].lineage,
                l->att[l->base].job, l->att[l->base].world);
    gate_lm_flags(f, l);
    gate_lm_attempts(f, l);
    gate_lm_model(f, l);
    gate_lm_timeline(f, l);
}

/* ---- ladder.html --------------------------------------------------------------------------------- */

/* x: log2 of the ranks, 1 .. 64. */
static struct gate_axes gate_rank_axes(void)
{
    struct gate_axes a = {-0.25, 6.25, INFINITY, -INFINITY, GATE_X_LOG2, 0};
    return a;
}

static void gate_lh_extend(struct gate_axes *a, double v)
{
    if (!isfinite(v))
        return;
    a->y0 = fmin(a->y0, v);
    a->y1 = fmax(a->y1, v);
}

static void gate_lh_point(FILE *f, const struct gate_axes *a, const struct gate_attempt *at,
                          double v, const char *cls, const char *attr)
{
    if (!isfinite(v))
        return;
    fprintf(f, "<circle class=\"%s\" r=\"4\" cx=\"%.2f\" cy=\"%.2f\" data-world=\"%d\" "
               "data-phase=\"", cls, gate_px(a, log2(at->world)), gate_py(a, v), at->world);
    gate_html_text(f, at->lineage);
    fprintf(f, "\" data-job=\"");
    gate_html_text(f, at->job);
    fprintf(f, "\" %s=\"%.9g\"/>\n", attr, v);
}

static void gate_lh_throughput(FILE *f, const struct gate_ladder *l)
{
    struct gate_axes a = gate_rank_axes();
    a.y0 = 0;
    for (size_t i = 0; i < l->n_att; i++)
        gate_lh_extend(&a, l->att[i].throughput);
    for (int i = 0; i < l->n_pred; i++)
        gate_lh_extend(&a, isnan(l->pred[i].hi) ? l->pred[i].throughput : l->pred[i].hi);
    gate_range(&a.y0, &a.y1, true);
    a.y0 = 0;
    gate_svg_begin(f, "chart-ladder-throughput", "Throughput vs ranks (measured, model, "
                   "predicted)", "ranks", "samples/s", &a);
    double b = l->n_att > 0 ? l->att[l->n_att - 1].per_rank_batch : (double)NAN;
    if (l->fit.ok) {
        fputs("<polyline class=\"model\" points=\"", f);
        for (int p = 1; p <= 64; p++)
            fprintf(f, "%s%.2f,%.2f", p > 1 ? " " : "", gate_px(&a, log2(p)),
                    gate_py(&a, gate_ladder_model(&l->fit, p, b)));
        fputs("\"/>\n", f);
    }
    for (size_t i = 0; i < l->n_att; i++)
        gate_lh_point(f, &a, &l->att[i], l->att[i].throughput, "pt", "data-sps");
    for (int i = 0; i < l->n_pred; i++) {
        const struct gate_prediction *p = &l->pred[i];
        double x = gate_px(&a, log2(p->world));
        if (!isnan(p->lo))
            fprintf(f, "<line class=\"err\" x1=\"%.2f\" x2=\"%.2f\" y1=\"%.2f\" y2=\"%.2f\"/>"
                       "\n", x, x, gate_py(&a, p->lo), gate_py(&a, p->hi));
        fprintf(f, "<circle class=\"pred\" r=\"4\" cx=\"%.2f\" cy=\"%.2f\" data-world=\"%d\" "
                   "data-sps=\"%.9g\" data-lo=\"%.9g\" data-hi=\"%.9g\"/>\n", x,
                gate_py(&a, p->throughput), p->world, p->throughput, p->lo, p->hi);
    }
    gate_svg_end(f);
}

static void gate_lh_efficiency(FILE *f, const struct gate_ladder *l)
{
    struct gate_axes a = gate_rank_axes();
    a.y0 = 0;
    a.y1 = 1;
    for (size_t i = 0; i < l->n_att; i++)
        gate_lh_extend(&a, l->att[i].efficiency);
    for (int i = 0; i < l->n_pred; i++)
        gate_lh_extend(&a, l->pred[i].efficiency);
    gate_range(&a.y0, &a.y1, true);
    a.y0 = 0;
    gate_svg_begin(f, "chart-ladder-efficiency", "Weak-scaling efficiency vs ranks (above 1: "
                   "flagged)", "ranks", "efficiency", &a);
    gate_hline(f, &a, 1.0, "full", "100%");
    for (size_t i = 0; i < l->n_att; i++)
        gate_lh_point(f, &a, &l->att[i], l->att[i].efficiency,
                      gate_over_100(l->att[i].efficiency) ? "pt over" : "pt", "data-efficiency");
    for (int i = 0; i < l->n_pred; i++)
        if (isfinite(l->pred[i].efficiency))
            fprintf(f, "<circle class=\"pred\" r=\"4\" cx=\"%.2f\" cy=\"%.2f\" data-world=\"%d\" "
                       "data-efficiency=\"%.9g\"/>\n", gate_px(&a, log2(l->pred[i].world)),
                    gate_py(&a, l->pred[i].efficiency), l->pred[i].world,
                    l->pred[i].efficiency);
    gate_svg_end(f);
}

/* A measured figure per attempt against ranks (comm ratio, p99 latency). */
static void gate_lh_series(FILE *f, const struct gate_ladder *l, const char *id,
                           const char *title, const char *yl, size_t offset, const char *attr)
{
    struct gate_axes a = gate_rank_axes();
    a.y0 = 0;
    for (size_t i = 0; i < l->n_att; i++)
        gate_lh_extend(&a, *(const double *)((const char *)&l->att[i] + offset));
    gate_range(&a.y0, &a.y1, true);
    a.y0 = 0;
    gate_svg_begin(f, id, title, "ranks", yl, &a);
    for (size_t i = 0; i < l->n_att; i++)
        gate_lh_point(f, &a, &l->att[i], *(const double *)((const char *)&l->att[i] + offset),
                      "pt", attr);
    gate_svg_end(f);
}

/* One <td> per value: text escaped. */
static void gate_lh_td(FILE *f, const char *s)
{
    fputs("<td>", f);
    gate_html_text(f, s);
    fputs("</td>", f);
}

static void gate_lh_flags(FILE *f, const struct gate_ladder *l)
{
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_over_100(a->efficiency))
            continue;
        fputs("<p class=\"flag\" data-over=\"", f);
        gate_html_text(f, a->lineage);
        fprintf(f, "\">Efficiency above 100%%: %.1f%% on %d ranks (", 100 * a->efficiency,
                a->world);
        gate_html_text(f, a->lineage);
        fputs(" job ", f);
        gate_html_text(f, a->job);
        fputs("). Under weak scaling it cannot exceed 100% except by measurement error: the base "
              "measured under heavier contention, another per-rank batch, too few windows or "
              "another machine.</p>\n", f);
    }
}

static void gate_lh_attempts(FILE *f, const struct gate_ladder *l)
{
    fputs("<h2>Phases and attempts</h2>\n<table id=\"attempts\"><tr><th>ranks</th><th>lineage"
          "</th><th>job</th><th>verdict</th><th>samples/s</th><th>model</th><th>efficiency</th>"
          "<th>comm</th><th>allreduce p99 ms</th><th>straggler</th><th>skipped</th><th>requeues"
          " (failure / other)</th><th>goodput</th><th>time lost</th></tr>\n", f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        char v[7][32], lost[600];
        int64_t other = 0;
        for (int r = 1; r < GATE_N_RQ; r++)
            other += a->requeues[r];
        fprintf(f, "<tr class=\"s-%s\"><td>%d</td>", strcmp(a->verdict, "GO") == 0 ? "go"
                : strcmp(a->verdict, "NO-GO") == 0 ? "no_go" : "hold", a->world);
        gate_lh_td(f, a->lineage);
        gate_lh_td(f, a->job);
        fprintf(f, "<td>%s%s", a->verdict, a->ended[0] ? " (ended: " : "");
        gate_html_text(f, a->ended);
        fprintf(f, "%s</td><td>%s</td><td>%s</td><td%s>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                   "<td>%lld</td><td>%lld / %lld</td><td>%s</td>", a->ended[0] ? ")" : "",
                gate_num(v[0], 32, a->throughput, 1),
                gate_num(v[1], 32, gate_attempt_model(l, a), 1),
                gate_over_100(a->efficiency) ? " class=\"flag\"" : "",
                gate_pct(v[2], 32, a->efficiency), gate_num(v[3], 32, a->comm, 1),
                gate_num(v[4], 32, a->p99_ms, 1), gate_num(v[5], 32, a->straggler, 1),
                (long long)a->skipped, (long long)a->requeues[GATE_RQ_FAILURE], (long long)other,
                gate_pct(v[6], 32, a->goodput));
        gate_lh_td(f, gate_lost_text(lost, sizeof lost, a));
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    char excl[600];
    gate_ladder_excluded(l, excl, sizeof excl);
    if (excl[0] != '\0') {
        fputs("<p id=\"excluded\">Nodes excluded for the rest of the ladder (each failed twice in "
              "this run root): ", f);
        gate_html_text(f, excl);
        fputs(".</p>\n", f);
    }
}

static void gate_lh_hindcast(FILE *f, const struct gate_ladder *l)
{
    char v[4][32];
    bool any = false;
    for (size_t i = 0; l->early.ok && i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_hindcast_row(a))
            continue;
        if (!any)
            fprintf(f, "<h2>Predicted before, measured after</h2>\n<p>The model fitted to the "
                       "phases of at most %d ranks, against each larger phase measured since."
                       "</p>\n<table id=\"hindcast\"><tr><th>phase</th><th>ranks</th>"
                       "<th>predicted samples/s</th><th>band</th><th>measured</th><th>measured / "
                       "predicted</th></tr>\n", GATE_EARLY_RANKS);
        any = true;
        double p = gate_early_model(l, a);
        fprintf(f, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%s .. %s</td><td>%s</td>"
                   "<td>%.2f</td></tr>\n", a->phase, a->world, gate_num(v[0], 32, p, 1),
                gate_fmt_num(v[1], 32, p * (1.0 - l->early.err_rel)),
                gate_fmt_num(v[2], 32, p * (1.0 + l->early.err_rel)),
                gate_num(v[3], 32, a->throughput, 1), a->throughput / p);
    }
    if (any)
        fputs("</table>\n", f);
}

static void gate_lh_model(FILE *f, const struct gate_ladder *l)
{
    gate_lh_hindcast(f, l);
    const struct gate_fit *m = &l->fit;
    char c[32], al[32], be[32];
    fprintf(f, "<h2>Model and predictions</h2>\n<p><code>%s</code> for P ranks of b samples "
               "each, s cores per rank, M gradient bytes and the slowest link B: c = %s s per "
               "sample on a core, k_local = %s s per byte, k_net = %s, M = %.0f bytes; fitted "
               "to ", GATE_MODEL_FORMULA, gate_num(c, sizeof c, m->c_s, 1),
            gate_num(al, sizeof al, m->k_local, 1), gate_num(be, sizeof be, m->k_net, 1),
            isnan(m->bytes) ? 0.0 : m->bytes);
    gate_html_text(f, m->note);
    char e[32], lo[32], hi[32];
    fprintf(f, "; band <b id=\"fit-error\">%s</b>.</p>\n"
               "<table id=\"predictions\"><tr><th>ranks</th><th>predicted samples/s</th>"
               "<th>range</th><th>efficiency</th></tr>\n", gate_pct(e, sizeof e, m->err_rel));
    for (int i = 0; i < l->n_pred; i++) {
        const struct gate_prediction *p = &l->pred[i];
        fprintf(f, "<tr><td>%d</td><td>%.6g</td><td>%s .. %s</td><td>%s</td></tr>\n", p->world,
                p->throughput, gate_fmt_num(lo, sizeof lo, p->lo),
                gate_fmt_num(hi, sizeof hi, p->hi), gate_pct(e, sizeof e, p->efficiency));
    }
    fputs("</table>\n", f);
}

static void gate_lh_timeline(FILE *f, const struct gate_ladder *l)
{
    fputs("<h2>Verdict timeline</h2>\n<table id=\"timeline\"><tr><th>time</th><th>lineage</th>"
          "<th>job</th><th>event</th><th>what</th></tr>\n", f);
    for (size_t k = 0; k < l->n_timeline; k++) {
        size_t i = l->timeline[k];
        const struct gate_event *e = &l->events[i];
        fprintf(f, "<tr class=\"ev-%s\">", e->event);
        gate_lh_td(f, e->when);
        gate_lh_td(f, l->ev_lineage[i]);
        gate_lh_td(f, e->job);
        gate_lh_td(f, e->event);
        gate_lh_td(f, e->summary);
        fputs("</tr>\n", f);
    }
    if (l->n_timeline == 0)
        fputs("<tr><td colspan=\"5\">no wrapper events (events.jsonl) under the run root</td>"
              "</tr>\n", f);
    fputs("</table>\n", f);
}

static void gate_lh_lineage(FILE *f, const struct gate_ladder *l)
{
    fputs("<h2>Checkpoint lineage</h2>\n<table id=\"lineage\"><tr><th>lineage</th><th>job</th>"
          "<th>started from</th><th>rollback checkpoint</th><th>handed to</th></tr>\n", f);
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        fputs("<tr>", f);
        gate_lh_td(f, a->lineage);
        gate_lh_td(f, a->job);
        gate_lh_td(f, a->from_ckpt[0] ? a->from_ckpt : "(fresh)");
        gate_lh_td(f, a->rollback_ckpt[0] ? a->rollback_ckpt : "none");
        gate_lh_td(f, a->handed_to[0] ? a->handed_to : "-");
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

void gate_ladder_write_html(FILE *f, const struct gate_ladder *l)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>"
               "ryzen-llm ladder</title><style>%s</style></head><body>\n<h1>Ladder</h1>\n<p>",
            gate_css);
    fprintf(f, "%zu attempt(s) under <code>", l->n_att);
    gate_html_text(f, l->root);
    fputs("</code>; written ", f);
    gate_html_text(f, l->time);
    fputs(".</p>\n<h2>Charts</h2>\n<div class=\"charts\">\n", f);
    gate_lh_throughput(f, l);
    gate_lh_efficiency(f, l);
    gate_lh_series(f, l, "chart-ladder-comm", "Exposed communication vs ranks (worst rank)",
                   "comm time / step time", offsetof(struct gate_attempt, comm), "data-comm");
    gate_lh_series(f, l, "chart-ladder-p99", "Small-collective latency p99 vs ranks", "ms",
                   offsetof(struct gate_attempt, p99_ms), "data-p99");
    fputs("</div>\n", f);
    gate_lh_flags(f, l);
    gate_lh_attempts(f, l);
    gate_lh_model(f, l);
    gate_lh_timeline(f, l);
    gate_lh_lineage(f, l);
    fputs("</body></html>\n", f);
}

/* ---- files ---------------------------------------------------------------------------------------- */

static void gate_lw_json(FILE *f, const void *l) { gate_ladder_write_json(f, l); }
static void gate_lw_md(FILE *f, const void *l) { gate_ladder_write_md(f, l); }
static void gate_lw_html(FILE *f, const void *l) { gate_ladder_write_html(f, l); }

enum rz_status gate_ladder_write(const struct gate_ladder *l, struct rz_err *err)
{
    static const struct {
        const char *name;
        rz_durable_fn fn;
    } files[] = {{"ladder.json", gate_lw_json}, {"ladder.md", gate_lw_md},
                 {"ladder.html", gate_lw_html}};
    enum rz_status st = RZ_OK;
    for (size_t i = 0; st == RZ_OK && i < RZ_ARRAY_LEN(files); i++) {
        char path[4400];
        rz_fmt(path, sizeof path, "%s/%s", l->root, files[i].name);
        st = rz_durable_write(path, "report", files[i].fn, l, err);
    }
    return st;
}
