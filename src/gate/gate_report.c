#include "config.h"

/* gate_report.c: report.json and report.md, and writing all four report files atomically into
 * RUN_DIR/reports/<job>/ (plus the optional node_exporter copy of gate.prom).
 * Deliberately not here: the HTML page (gate_html.c), the Prometheus text (gate_prom.c) and any
 * judgement (gate_eval.c).  report.json is also the next phase's baseline (gate_baseline.c reads
 * its phase, job, world_size, throughput and loss_curve): keep those names. */

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

static void gate_env_nodes(const struct gate_input *in, int *nodes)
{
    *nodes = 0;
    for (int r = 0; r < in->world_size; r++) {
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(in->ranks[q].host, in->ranks[r].host) != 0;
        *nodes += first;
    }
}

static void gate_json_env(struct rz_json *j, const struct gate_input *in, const struct cfg *c)
{
    int nodes;
    const char *cpus = getenv("SLURM_CPUS_PER_TASK");
    gate_env_nodes(in, &nodes);
    rz_json_key(j, "environment");
    rz_json_object_begin(j);
    rz_json_kv_int(j, "nodes", nodes);
    rz_json_kv_int(j, "ranks", in->world_size);
    rz_json_kv_string(j, "cpus_per_rank", cpus != NULL && cpus[0] ? cpus : "unknown");
    rz_json_kv_string(j, "onednn_isa", in->isa[0] ? in->isa : "unknown");
    rz_json_kv_string(j, "ryzen_version", PACKAGE_VERSION);
    rz_json_kv_string(j, "config_sha256", in->config_sha256);
    rz_json_kv_string(j, "config", c->source);
    rz_json_kv_string(j, "data_kind", c->data.kind);
    rz_json_kv_int(j, "global_batch", c->training.batch_size * c->training.grad_accum *
                                          in->world_size);
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
        rz_json_kv_uint(j, "peak_rss_bytes", rs->peak_rss_bytes);
        rz_json_key(j, "step_time_quartiles_s");
        rz_json_array_begin(j);
        for (int q = 0; q < 5; q++)
            rz_json_double(j, rs->q[q]);
        rz_json_array_end(j);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

bool gate_is_chain_event(const struct gate_event *e)
{
    return strcmp(e->event, "promote") == 0 || strcmp(e->event, "rollback") == 0 ||
           strcmp(e->event, "rollback_start") == 0;
}

static void gate_json_events(struct rz_json *j, const struct gate_input *in)
{
    rz_json_key(j, "timeline");
    rz_json_array_begin(j);
    for (size_t i = 0; i < in->n_events; i++)
        if (strcmp(in->events[i].job, in->job) == 0)
            rz_json_raw(j, in->events[i].json);
    rz_json_array_end(j);
    rz_json_key(j, "chain");
    rz_json_array_begin(j);
    for (size_t i = 0; i < in->n_events; i++)
        if (gate_is_chain_event(&in->events[i]))
            rz_json_raw(j, in->events[i].json);
    rz_json_array_end(j);
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

void gate_write_json(FILE *f, const struct gate_input *in, const struct gate_result *res,
                     const struct cfg *c)
{
    char stamp[32];
    struct rz_json j;
    rz_utc_iso8601(stamp, sizeof stamp);
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "verdict", gate_verdict_name(res->verdict));
    rz_json_kv_string(&j, "phase", in->phase);
    rz_json_kv_string(&j, "job", in->job);
    rz_json_kv_string(&j, "time", stamp);
    rz_json_kv_string(&j, "run_dir", in->run_dir);
    rz_json_kv_double(&j, "throughput", res->crit[GATE_THROUGHPUT].measured);
    rz_json_kv_double(&j, "throughput_p10", res->throughput_p10);
    rz_json_kv_int(&j, "world_size", in->world_size);
    rz_json_kv_int(&j, "steps", (int64_t)in->n_steps);
    gate_json_criteria(&j, res);
    gate_json_plan(&j, res);
    rz_json_key(&j, "suspect");
    rz_json_array_begin(&j);
    if (res->suspect[0] != '\0')
        rz_json_string(&j, res->suspect);
    rz_json_array_end(&j);
    gate_json_env(&j, in, c);
    gate_json_baseline(&j, in);
    gate_json_ranks(&j, in, res);
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

static void gate_md_head(FILE *f, const struct gate_input *in, const struct gate_result *res)
{
    fprintf(f, "# Verdict: %s\n\nPhase `%s`, job `%s`, %d rank(s), %zu steps. Planned action: "
               "**%s**%s%s (%s).\n\n", gate_verdict_name(res->verdict), in->phase, in->job,
            in->world_size, in->n_steps, res->action, res->action_phase[0] ? " to " : "",
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

static void gate_md_env(FILE *f, const struct gate_input *in, const struct gate_result *res,
                        const struct cfg *c)
{
    int nodes;
    const char *cpus = getenv("SLURM_CPUS_PER_TASK");
    gate_env_nodes(in, &nodes);
    fprintf(f, "## Environment\n\n| | |\n|---|---|\n| nodes | %d |\n| ranks | %d |\n"
               "| CPUs per rank | %s |\n| oneDNN ISA | %s |\n| ryzen-llm | %s |\n"
               "| config | `%s` |\n| config SHA-256 | `%s` |\n| data | %s |\n| baseline | ",
            nodes, in->world_size, cpus != NULL && cpus[0] ? cpus : "unknown",
            in->isa[0] ? in->isa : "unknown", PACKAGE_VERSION, c->source, in->config_sha256,
            c->data.kind);
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

static void gate_md_events(FILE *f, const struct gate_input *in, bool chain)
{
    fputs(chain ? "## Promotion and rollback chain\n\n" : "## Timeline of this job\n\n", f);
    size_t n = 0;
    for (size_t i = 0; i < in->n_events; i++) {
        const struct gate_event *e = &in->events[i];
        if (chain ? !gate_is_chain_event(e) : strcmp(e->job, in->job) != 0)
            continue;
        fputs("- `", f);
        fputs(e->json, f);
        fputs("`\n", f);
        n++;
    }
    fputs(n == 0 ? "(none)\n\n" : "\n", f);
}

void gate_write_md(FILE *f, const struct gate_input *in, const struct gate_result *res,
                   const struct cfg *c)
{
    gate_md_head(f, in, res);
    gate_md_criteria(f, res);
    fputc('\n', f);
    gate_md_env(f, in, res, c);
    gate_md_events(f, in, true);
    gate_md_events(f, in, false);
}

/* ---- files ----------------------------------------------------------------------------------- */

struct gate_doc {
    const struct gate_input *in;
    const struct gate_result *res;
    const struct cfg *c;
};

enum gate_kind { GATE_JSON, GATE_MD, GATE_HTML, GATE_PROM };

static void gate_render(FILE *f, enum gate_kind kind, const struct gate_doc *d)
{
    if (kind == GATE_JSON)
        gate_write_json(f, d->in, d->res, d->c);
    else if (kind == GATE_MD)
        gate_write_md(f, d->in, d->res, d->c);
    else if (kind == GATE_HTML)
        gate_write_html(f, d->in, d->res, d->c);
    else
        gate_write_prom(f, d->in, d->res);
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

enum rz_status gate_write_reports(const struct gate_input *in, const struct gate_result *res,
                                  const struct cfg *c, char *dir_out, size_t dir_len,
                                  char *warn, size_t warn_len, struct rz_err *err)
{
    static const char *const names[] = {"report.json", "report.md", "report.html", "gate.prom"};
    const struct gate_doc d = {in, res, c};
    char dir[4200], path[4400];
    rz_fmt(dir, sizeof dir, "%s/reports/%s", in->run_dir, in->job);
    rz_fmt(dir_out, dir_len, "%s", dir);
    if (warn_len > 0)
        warn[0] = '\0';
    enum rz_status st = rz_mkdirs(dir, err);
    for (int k = 0; st == RZ_OK && k < 4; k++) {
        rz_fmt(path, sizeof path, "%s/%s", dir, names[k]);
        st = gate_write_atomic(path, (enum gate_kind)k, &d, err);
    }
    if (st != RZ_OK)
        return st;
    if (c->gates.prom_dir[0] == '\0')
        return RZ_OK;
    /* A monitoring copy that cannot be written is a warning: it must not change the verdict. */
    struct rz_err perr;
    rz_fmt(path, sizeof path, "%s/ryzen_%s.prom", c->gates.prom_dir, in->phase);
    if (gate_write_atomic(path, GATE_PROM, &d, &perr) != RZ_OK)
        rz_fmt(warn, warn_len, "gates.prom_dir: %s", perr.msg);
    return RZ_OK;
}
