#include "config.h"

/* gate_report.c: the report document (gate_doc_build), report.json and report.md, and writing
 * all four report files durably into RUN_DIR/reports/<job>/ (plus the optional node_exporter
 * copy of gate.prom).  The writers only format the document.
 * Deliberately not here: the HTML page (gate_html.c), the Prometheus text (gate_prom.c), any
 * judgement (gate_eval.c) and any event filtering (gate_read.c classifies them once).
 * report.json is read back by the next phase's baseline, ryzen-step's chain and the ladder,
 * all through record/report.h, which lists the fields they rely on: keep those names. */

#include "gate/gate.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/util.h"
#include "gate/gate_internal.h"

/* ---- report.json ----------------------------------------------------------------------------- */

static void gate_json_criteria(struct rz_json *j, const struct gate_result *res)
{
    rz_json_key(j, "criteria");
    rz_json_array_begin(j);
    for (int i = 0; i < GATE_N_CRIT; i++) {
        const struct gate_criterion *k = &res->crit[i];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "name", k->name);
        rz_json_kv_double(j, "measured", k->measured);
        rz_json_kv_double(j, "go", k->go);
        rz_json_kv_double(j, "no_go", k->no_go);
        rz_json_kv_string(j, "status", gate_status_name(k->status));
        rz_json_kv_int(j, "samples", k->samples);
        rz_json_kv_string(j, "note", k->note);
        rz_json_kv_string(j, "unit", k->unit);
        rz_json_kv_string(j, "better", k->higher_is_better ? "higher" : "lower");
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

static void gate_json_plan(struct rz_json *j, const struct gate_result *res)
{
    rz_json_key(j, "planned_action");
    rz_json_object_begin(j);
    rz_json_kv_string(j, "action", res->action);
    rz_json_kv_string(j, "phase", res->action_phase);
    rz_json_key(j, "checkpoint");
    if (strcmp(res->action, "rollback") == 0)
        rz_json_string(j, res->rollback_path);
    else
        rz_json_null(j);
    rz_json_kv_string(j, "note", res->action_note);
    rz_json_object_end(j);
    rz_json_key(j, "rollback_checkpoint");
    if (res->has_rollback) {
        rz_json_object_begin(j);
        rz_json_kv_string(j, "path", res->rollback_path);
        rz_json_kv_int(j, "step", res->rollback_step);
        rz_json_kv_int(j, "last_good_sync_step", res->last_good_sync_step);
        rz_json_object_end(j);
    } else {
        rz_json_null(j);
    }
}

/* ---- the document ---------------------------------------------------------------------------- */

static int gate_count_nodes(const struct gate_input *in)
{
    int nodes = 0;
    for (int r = 0; r < in->world_size; r++) {
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(in->ranks[q].host, in->ranks[r].host) != 0;
        nodes += first;
    }
    return nodes;
}

void gate_doc_build(struct gate_doc *d, const struct gate_input *in,
                    const struct gate_result *res, const struct cfg *c)
{
    memset(d, 0, sizeof *d);
    d->in = in;
    d->res = res;
    d->time_unix = rz_unix_now();
    rz_utc_format(d->time, sizeof d->time, d->time_unix, RZ_UTC_ISO8601);
    d->nodes = gate_count_nodes(in);
    rz_fmt(d->config_source, sizeof d->config_source, "%s", c->source);
    rz_fmt(d->data_kind, sizeof d->data_kind, "%s", c->data.kind);
    d->global_batch = c->training.batch_size * c->training.grad_accum * in->world_size;
    d->comm_go = c->gates.comm_go;
    d->comm_no_go = c->gates.comm_no_go;
    rz_fmt(d->prom_dir, sizeof d->prom_dir, "%s", c->gates.prom_dir);
}

static void gate_json_env(struct rz_json *j, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    rz_json_key(j, "environment");
    rz_json_object_begin(j);
    rz_json_kv_int(j, "nodes", d->nodes);
    rz_json_kv_int(j, "ranks", in->world_size);
    rz_json_kv_string(j, "cpus_per_rank", in->cpus_per_rank);
    rz_json_kv_string(j, "onednn_isa", in->isa[0] ? in->isa : "unknown");
    rz_json_kv_string(j, "ryzen_version", PACKAGE_VERSION);
    rz_json_kv_string(j, "config_sha256", in->config_sha256);
    rz_json_kv_string(j, "config", d->config_source);
    rz_json_kv_string(j, "data_kind", d->data_kind);
    if (in->tokenizer_sha256[0] != '\0') /* text data only: a random run's report is unchanged */
        rz_json_kv_string(j, "tokenizer_sha256", in->tokenizer_sha256);
    if (!isnan(in->unigram_entropy))
        rz_json_kv_double(j, "unigram_entropy", in->unigram_entropy);
    rz_json_kv_int(j, "global_batch", d->global_batch);
    rz_json_kv_double(j, "num_parameters", in->num_parameters);
    rz_json_object_end(j);
}

/* KEY: [[samples_seen, loss], ...] from n pairs. */
static void gate_json_curve(struct rz_json *j, const char *key, const double *xy, size_t n)
{
    rz_json_key(j, key);
    rz_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        rz_json_array_begin(j);
        rz_json_double(j, xy[2 * i]);
        rz_json_double(j, xy[2 * i + 1]);
        rz_json_array_end(j);
    }
    rz_json_array_end(j);
}

static void gate_json_baseline(struct rz_json *j, const struct gate_input *in)
{
    const struct gate_baseline *b = &in->baseline;
    rz_json_key(j, "baseline");
    rz_json_object_begin(j);
    rz_json_kv_bool(j, "present", b->present);
    if (b->present) {
        rz_json_kv_string(j, "path", b->path);
        rz_json_kv_string(j, "phase", b->phase);
        rz_json_kv_string(j, "job", b->job);
        rz_json_kv_double(j, "throughput", b->throughput);
        rz_json_kv_int(j, "world_size", b->world_size);
        gate_json_curve(j, "loss_curve", b->curve, b->n_curve);
    } else {
        rz_json_kv_string(j, "reason", b->reason);
    }
    rz_json_object_end(j);
}

static void gate_json_ranks(struct rz_json *j, const struct gate_input *in,
                            const struct gate_result *res)
{
    rz_json_key(j, "per_rank");
    rz_json_array_begin(j);
    for (int r = 0; r < in->world_size; r++) {
        const struct gate_rank_stat *rs = &res->rank_stats[r];
        rz_json_object_begin(j);
        rz_json_kv_int(j, "rank", r);
        rz_json_kv_string(j, "host", in->ranks[r].host);
        rz_json_kv_int(j, "steps", rs->steps);
        rz_json_kv_double(j, "mean_step_s", rs->mean_step_s);
        rz_json_kv_double(j, "comm_share", rs->comm_share);
        rz_json_kv_double(j, "mean_compute_s", rs->mean_compute_s);
        rz_json_kv_uint(j, "peak_rss_bytes", rs->peak_rss_bytes);
        if (in->ranks[r].predicted_peak_rss > 0)
            rz_json_kv_double(j, "predicted_peak_rss_bytes", in->ranks[r].predicted_peak_rss);
        rz_json_key(j, "step_time_quartiles_s");
        rz_json_array_begin(j);
        for (int q = 0; q < 5; q++)
            rz_json_double(j, rs->q[q]);
        rz_json_array_end(j);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

static void gate_json_event_list(struct rz_json *j, const char *key, const struct gate_input *in,
                                 const size_t *idx, size_t n)
{
    rz_json_key(j, key);
    rz_json_array_begin(j);
    for (size_t i = 0; i < n; i++)
        rz_json_raw(j, in->events[idx[i]].json);
    rz_json_array_end(j);
}

static void gate_json_events(struct rz_json *j, const struct gate_input *in)
{
    gate_json_event_list(j, "timeline", in, in->job_events, in->n_job_events);
    gate_json_event_list(j, "chain", in, in->chain_events, in->n_chain_events);
    gate_json_event_list(j, "verdict_timeline", in, in->verdict_events, in->n_verdict_events);
    rz_json_key(j, "requeues");
    rz_json_object_begin(j);
    for (int r = 0; r < EVENT_N_RQ; r++)
        rz_json_kv_int(j, event_requeue_name((enum event_requeue)r), in->requeues[r]);
    rz_json_object_end(j);
}

static void gate_json_ckpt(struct rz_json *j, const char *key, const struct gate_ckpt *k)
{
    rz_json_key(j, key);
    if (k == NULL) {
        rz_json_null(j);
        return;
    }
    rz_json_object_begin(j);
    rz_json_kv_string(j, "path", k->path);
    rz_json_kv_int(j, "step", k->step);
    rz_json_object_end(j);
}

/* The ladder model's throughput for this phase, fitted to the phases with fewer ranks under
 * RUNROOT (null before any was measured). */
static void gate_json_prediction(struct rz_json *j, const struct gate_input *in,
                                 const struct gate_result *res)
{
    rz_json_key(j, "prediction");
    if (isnan(res->predicted)) {
        rz_json_null(j);
        return;
    }
    rz_json_object_begin(j);
    rz_json_kv_double(j, "throughput", res->predicted);
    rz_json_kv_double(j, "throughput_lo", res->predicted_lo);
    rz_json_kv_double(j, "throughput_hi", res->predicted_hi);
    rz_json_kv_double(j, "measured_vs_predicted", res->crit[GATE_THROUGHPUT].measured /
                                                      res->predicted);
    rz_json_kv_int(j, "points", in->ladder_fit.points);
    rz_json_kv_string(j, "note", in->ladder_fit.note);
    rz_json_object_end(j);
}

void gate_predicted_range(char *buf, size_t len, const struct gate_result *res)
{
    if (isnan(res->predicted_lo))
        rz_fmt(buf, len, "error unknown: the fit is exact on the phases below");
    else
        rz_fmt(buf, len, "%.6g .. %.6g", res->predicted_lo, res->predicted_hi);
}

/* The steps the loss guard skipped: how many, and which. */
static void gate_json_skipped(struct rz_json *j, const struct gate_input *in,
                              const struct gate_result *res)
{
    rz_json_kv_int(j, "skipped_steps", res->skipped_steps);
    rz_json_key(j, "skipped");
    rz_json_array_begin(j);
    for (size_t i = 0; i < in->n_steps; i++)
        if (in->steps[i].skipped)
            rz_json_int(j, in->steps[i].step);
    rz_json_array_end(j);
}

/* How the phase ended: null for an ordinary report; the reason, why, the last status, the last
 * good checkpoints and the preflight's checks for one that ended without finishing training. */
static void gate_json_ended(struct rz_json *j, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    rz_json_key(j, "ended");
    if (in->ended == GATE_END_NONE)
        rz_json_null(j);
    else
        rz_json_string(j, gate_end_name(in->ended));
    rz_json_kv_string(j, "why", in->why);
    rz_json_key(j, "status");
    if (in->status >= 0)
        rz_json_int(j, in->status);
    else
        rz_json_null(j);
    gate_json_ckpt(j, "last_good_checkpoint", d->res->last_good);
    gate_json_ckpt(j, "previous_good_checkpoint", d->res->prev_good);
    rz_json_key(j, "health");
    if (!in->has_health) {
        rz_json_null(j);
    } else {
        rz_json_object_begin(j);
        rz_json_kv_bool(j, "ok", in->health_ok);
        rz_json_key(j, "checks");
        rz_json_array_begin(j);
        for (size_t i = 0; i < in->n_checks; i++) {
            rz_json_object_begin(j);
            rz_json_kv_string(j, "name", in->checks[i].name);
            rz_json_kv_bool(j, "ok", in->checks[i].ok);
            rz_json_kv_string(j, "detail", in->checks[i].detail);
            rz_json_object_end(j);
        }
        rz_json_array_end(j);
        rz_json_object_end(j);
    }
    rz_json_kv_string(j, "input_warnings", in->warnings);
}

static void gate_json_series(struct rz_json *j, const struct gate_result *res)
{
    rz_json_key(j, "windows");
    rz_json_array_begin(j);
    for (size_t i = 0; i < res->n_windows; i++) {
        rz_json_object_begin(j);
        rz_json_kv_int(j, "first_step", res->windows[i].first_step);
        rz_json_kv_int(j, "last_step", res->windows[i].last_step);
        rz_json_kv_double(j, "samples_per_sec", res->windows[i].samples_per_sec);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_key(j, "restart_steps");
    rz_json_array_begin(j);
    for (size_t i = 0; i < res->n_restarts; i++)
        rz_json_int(j, res->restart_steps[i]);
    rz_json_array_end(j);
    gate_json_curve(j, "loss_curve", res->loss_curve, res->n_loss);
    if (res->n_val > 0)
        gate_json_curve(j, "val_loss_curve", res->val_curve, res->n_val);
}

void gate_write_json(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    const struct gate_result *res = d->res;
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "verdict", gate_verdict_name(res->verdict));
    rz_json_kv_string(&j, "phase", in->phase);
    rz_json_kv_string(&j, "job", in->job);
    rz_json_kv_string(&j, "time", d->time);
    rz_json_kv_string(&j, "run_dir", in->run_dir);
    rz_json_kv_double(&j, "throughput", res->crit[GATE_THROUGHPUT].measured);
    rz_json_kv_double(&j, "throughput_p10", res->throughput_p10);
    rz_json_kv_double(&j, "allreduce_p50_ms", res->allreduce_p50_ms);
    rz_json_key(&j, "grad_allreduce_ms");
    rz_json_object_begin(&j);
    rz_json_kv_double(&j, "p50", res->grad_p50_ms);
    rz_json_kv_double(&j, "p99", res->grad_p99_ms);
    rz_json_kv_double(&j, "exposed_p50", res->exposed_p50_ms);
    rz_json_kv_double(&j, "exposed_p99", res->exposed_p99_ms);
    rz_json_object_end(&j);
    gate_json_prediction(&j, in, res);
    rz_json_kv_int(&j, "world_size", in->world_size);
    rz_json_kv_int(&j, "steps", (int64_t)in->n_steps);
    gate_json_skipped(&j, in, res);
    gate_json_ended(&j, d);
    gate_json_criteria(&j, res);
    gate_json_plan(&j, res);
    rz_json_key(&j, "suspect");
    rz_json_array_begin(&j);
    if (res->suspect[0] != '\0')
        rz_json_string(&j, res->suspect);
    rz_json_array_end(&j);
    gate_json_env(&j, d);
    gate_json_baseline(&j, in);
    gate_json_ranks(&j, in, res);
    gate_json_topology(&j, in);
    gate_json_links(&j, in);
    gate_json_network(&j, in, res);
    gate_json_recoveries(&j, in);
    gate_json_events(&j, in);
    gate_json_series(&j, res);
    rz_json_object_end(&j);
    fputc('\n', f);
}

/* ---- report.md ------------------------------------------------------------------------------- */

/* Table cells: '|' and newlines would break the row. */
static void gate_md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else
            fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
    }
}

static void gate_md_criteria(FILE *f, const struct gate_result *res)
{
    fprintf(f, "## All criteria\n\n| criterion | measured | go | no-go | status | samples | note "
               "|\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < GATE_N_CRIT; i++) {
        const struct gate_criterion *k = &res->crit[i];
        char m[32], g[32], n[32];
        fprintf(f, "| %s | %s | %s%s | %s%s | %s | %lld | ", k->name,
                gate_fmt_num(m, sizeof m, k->measured), k->higher_is_better ? ">= " : "<= ",
                gate_fmt_num(g, sizeof g, k->go), isnan(k->no_go) ? "" : k->higher_is_better ? "< "
                                                                                        : "> ",
                gate_fmt_num(n, sizeof n, k->no_go), gate_status_name(k->status),
                (long long)k->samples);
        gate_md_cell(f, k->note);
        fputs(" |\n", f);
    }
}

static void gate_md_ckpt(FILE *f, const char *what, const struct gate_ckpt *k)
{
    if (k != NULL)
        fprintf(f, "- %s: `%s` (step %lld)\n", what, k->path, (long long)k->step);
    else
        fprintf(f, "- %s: none\n", what);
}

/* An ended phase: why, how, what it can resume from, and the preflight's checks. */
static void gate_md_ended(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    if (in->ended == GATE_END_NONE)
        return;
    fprintf(f, "## Ended without finishing training: %s\n\n", gate_end_name(in->ended));
    fputs("- why: ", f);
    gate_md_cell(f, in->why[0] ? in->why : "(not given)");
    fputc('\n', f);
    if (in->status >= 0)
        fprintf(f, "- last exit status: %d\n", in->status);
    gate_md_ckpt(f, "last good checkpoint", d->res->last_good);
    gate_md_ckpt(f, "the one before it", d->res->prev_good);
    for (size_t i = 0; i < in->n_checks; i++) {
        fprintf(f, "- preflight check %s: %s; ", in->checks[i].name,
                in->checks[i].ok ? "ok" : "FAILED");
        gate_md_cell(f, in->checks[i].detail);
        fputc('\n', f);
    }
    if (in->warnings[0] != '\0') {
        fputs("- inputs that could not be read:\n", f);
        for (const char *p = in->warnings; *p;) {
            size_t n = strcspn(p, "\n");
            fprintf(f, "  - %.*s\n", (int)n, p);
            p += n + (p[n] == '\n');
        }
    }
    fputc('\n', f);
}

static void gate_md_head(FILE *f, const struct gate_input *in, const struct gate_result *res)
{
    fprintf(f, "# Verdict: %s\n\nPhase `%s`, job `%s`, %d rank(s), %zu steps, %lld skipped by "
               "the loss guard. Planned action: **%s**%s%s (%s).\n\n",
            gate_verdict_name(res->verdict), in->phase, in->job, in->world_size, in->n_steps,
            (long long)res->skipped_steps, res->action, res->action_phase[0] ? " to " : "",
            res->action_phase, res->action_note);
    bool any = false;
    for (int i = 0; i < GATE_N_CRIT; i++) {
        const struct gate_criterion *k = &res->crit[i];
        if (k->status != GATE_NO_GO && k->status != GATE_HOLD && k->status != GATE_NOT_JUDGED)
            continue;
        if (!any)
            fputs("## Failing, held and unjudged criteria\n\n", f);
        any = true;
        char m[32];
        fprintf(f, "- **%s** %s: measured %s %s; ", k->name, gate_status_name(k->status),
                gate_fmt_num(m, sizeof m, k->measured), k->unit);
        gate_md_cell(f, k->note);
        fputc('\n', f);
    }
    if (any)
        fputc('\n', f);
    if (!isnan(res->predicted)) {
        char range[96];
        gate_predicted_range(range, sizeof range, res);
        fprintf(f, "Predicted by the ladder model from the phases with fewer ranks: %.6g samples/s "
                   "(%s); measured %.6g (%.0f%% of the prediction).\n\n", res->predicted, range,
                res->crit[GATE_THROUGHPUT].measured,
                100 * res->crit[GATE_THROUGHPUT].measured / res->predicted);
    }
    if (res->suspect[0] != '\0')
        fprintf(f, "## Suspect measurements\n\n- %s\n\n", res->suspect);
    if (res->has_rollback)
        fprintf(f, "Rollback checkpoint: `%s` (step %lld; last step whose sync check passed on "
                   "every rank: %lld).\n\n", res->rollback_path, (long long)res->rollback_step,
                (long long)res->last_good_sync_step);
    else
        fputs("Rollback checkpoint: none (no valid checkpoint at or before a passed sync "
              "check).\n\n", f);
}

static void gate_md_env(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    const struct gate_result *res = d->res;
    fprintf(f, "## Environment\n\n| | |\n|---|---|\n| nodes | %d |\n| ranks | %d |\n"
               "| CPUs per rank | %s |\n| oneDNN ISA | %s |\n| ryzen-llm | %s |\n"
               "| config | `%s` |\n| config SHA-256 | `%s` |\n| data | %s |\n",
            d->nodes, in->world_size, in->cpus_per_rank, in->isa[0] ? in->isa : "unknown",
            PACKAGE_VERSION, d->config_source, in->config_sha256, d->data_kind);
    if (in->tokenizer_sha256[0] != '\0') /* its first 12 hex digits; report.json has it all */
        fprintf(f, "| tokenizer | `%.12s` |\n", in->tokenizer_sha256);
    if (!isnan(in->unigram_entropy))
        fprintf(f, "| unigram entropy | %.4f nats/token |\n", in->unigram_entropy);
    fputs("| baseline | ", f);
    if (in->baseline.present)
        fprintf(f, "%s job %s (`%s`) |\n\n", in->baseline.phase, in->baseline.job,
                in->baseline.path);
    else
        fprintf(f, "none: %s |\n\n", in->baseline.reason);
    fputs("## Per rank (steady state)\n\n| rank | host | steps | mean step s | comm share | "
          "peak RSS MiB |\n|---|---|---|---|---|---|\n", f);
    for (int r = 0; r < in->world_size; r++) {
        const struct gate_rank_stat *rs = &res->rank_stats[r];
        fprintf(f, "| %d | %s | %lld | %.4g | %.4g | %.1f |\n", r, in->ranks[r].host,
                (long long)rs->steps, rs->mean_step_s, rs->comm_share,
                (double)rs->peak_rss_bytes / 1048576.0);
    }
    fputc('\n', f);
}

static void gate_md_events(FILE *f, const char *title, const struct gate_input *in,
                           const size_t *idx, size_t n)
{
    fprintf(f, "## %s\n\n", title);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "- `%s`\n", in->events[idx[i]].json);
    fputs(n == 0 ? "(none)\n\n" : "\n", f);
}

/* Requeues by reason, then one row per decision of any job of this run directory. */
static void gate_md_verdicts(FILE *f, const struct gate_input *in)
{
    fputs("## Requeues of this job by reason\n\n| reason | requeues |\n|---|---|\n", f);
    for (int r = 0; r < EVENT_N_RQ; r++)
        fprintf(f, "| %s%s | %lld |\n", event_requeue_name((enum event_requeue)r),
                r == EVENT_RQ_FAILURE ? " (counts against the failures gate)" : "",
                (long long)in->requeues[r]);
    fputs("\n## Verdict timeline\n\n", f);
    if (in->n_verdict_events == 0) {
        fputs("(no wrapper events)\n\n", f);
        return;
    }
    fputs("| time | job | event | what |\n|---|---|---|---|\n", f);
    for (size_t i = 0; i < in->n_verdict_events; i++) {
        const struct event_rec *e = &in->events[in->verdict_events[i]];
        fprintf(f, "| %s | ", e->when);
        gate_md_cell(f, e->job);
        fputs(" | ", f);
        gate_md_cell(f, e->event);
        fputs(" | ", f);
        gate_md_cell(f, e->summary);
        fputs(" |\n", f);
    }
    fputc('\n', f);
}

void gate_write_md(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    gate_md_head(f, in, d->res);
    gate_md_ended(f, d);
    gate_md_criteria(f, d->res);
    fputc('\n', f);
    gate_md_env(f, d);
    gate_md_topology(f, in);
    gate_md_links(f, in);
    gate_md_network(f, in, d->res);
    gate_md_recoveries(f, in);
    gate_md_verdicts(f, in);
    gate_md_events(f, "Promotion and rollback chain", in, in->chain_events, in->n_chain_events);
    gate_md_events(f, "Timeline of this job", in, in->job_events, in->n_job_events);
}

/* ---- files ----------------------------------------------------------------------------------- */

enum gate_kind { GATE_JSON, GATE_MD, GATE_HTML, GATE_PROM };

static void gate_render(FILE *f, enum gate_kind kind, const struct gate_doc *d)
{
    static void (*const writers[])(FILE *, const struct gate_doc *) = {
        gate_write_json, gate_write_md, gate_write_html, gate_write_prom};
    writers[kind](f, d);
}

struct gate_render_ctx {
    enum gate_kind kind;
    const struct gate_doc *doc;
};

static void gate_render_cb(FILE *f, const void *ctx)
{
    const struct gate_render_ctx *c = ctx;
    gate_render(f, c->kind, c->doc);
}

/* Durably (core/durable.h): readers (node_exporter, the next phase) never see half a file. */
static enum rz_status gate_write_atomic(const char *path, enum gate_kind kind,
                                        const struct gate_doc *d, struct rz_err *err)
{
    struct gate_render_ctx c = {kind, d};
    return rz_durable_write(path, "report", gate_render_cb, &c, err);
}

enum rz_status gate_write_reports(const struct gate_doc *d, char *dir_out, size_t dir_len,
                                  char *warn, size_t warn_len, struct rz_err *err)
{
    static const char *const names[] = {"report.json", "report.md", "report.html", "gate.prom"};
    const struct gate_input *in = d->in;
    char dir[4200], path[4400];
    rz_fmt(dir, sizeof dir, "%s/reports/%s", in->run_dir, in->job);
    rz_fmt(dir_out, dir_len, "%s", dir);
    if (warn_len > 0)
        warn[0] = '\0';
    enum rz_status st = rz_mkdirs(dir, err);
    for (int k = 0; st == RZ_OK && k < 4; k++) {
        rz_fmt(path, sizeof path, "%s/%s", dir, names[k]);
        st = gate_write_atomic(path, (enum gate_kind)k, d, err);
    }
    if (st != RZ_OK)
        return st;
    if (d->prom_dir[0] == '\0')
        return RZ_OK;
    /* A monitoring copy that cannot be written is a warning: it must not change the verdict. */
    struct rz_err perr;
    rz_fmt(path, sizeof path, "%s/ryzen_%s.prom", d->prom_dir, in->phase);
    if (gate_write_atomic(path, GATE_PROM, d, &perr) != RZ_OK)
        rz_fmt(warn, warn_len, "gates.prom_dir: %s", perr.msg);
    return RZ_OK;
}
