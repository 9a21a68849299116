#include "config.h"

/* gate_read.c: the gate's inputs: which job, every rank's metrics JSONL (record/rank_log.h
 * reads and validates it line by line; de-duplicated here by step keeping the last occurrence,
 * merged into steps present on every rank), events.jsonl (record/events.h reads it, sorted
 * here into the timelines), summary.json (record/summary.h), health.json (record/health_json.h),
 * the checkpoint list and the config hash.
 * Deliberately not here: any judgement (gate_eval.c) or the baseline report (gate_baseline.c). */

#include "gate/gate.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "core/sha256.h"
#include "core/util.h"
#include "gate/gate_internal.h"
#include "core/json_read.h"
#include "record/events.h"
#include "record/health_json.h"
#include "record/layout.h"
#include "record/rank_log.h"
#include "record/summary.h"

/* ---- metrics --------------------------------------------------------------------------------- */

/* A rank's rows (record/rank_log.h), in file order until gate_rows_dedupe. */
struct gate_rows {
    struct rank_row *v;
    size_t n;
    int world_size;
};

struct gate_key {
    int64_t step;
    size_t idx;                 /* file order */
};

static int gate_key_cmp(const void *a, const void *b)
{
    const struct gate_key *x = a, *y = b;
    if (x->step != y->step)
        return (x->step > y->step) - (x->step < y->step);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sort by step, keeping only the last occurrence (in file order) of each step: a requeued job
 * redoes the steps after its last checkpoint, and the redone values are the ones that count. */
static enum rz_status gate_rows_dedupe(struct gate_rows *rows, struct rz_err *err)
{
    struct gate_key *k = calloc(rows->n, sizeof *k);
    struct rank_row *out = calloc(rows->n, sizeof *out);
    if (k == NULL || out == NULL) {
        free(k);
        free(out);
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    }
    for (size_t i = 0; i < rows->n; i++)
        k[i] = (struct gate_key){rows->v[i].step, i};
    qsort(k, rows->n, sizeof *k, gate_key_cmp);
    size_t m = 0;
    for (size_t i = 0; i < rows->n; i++)
        if (i + 1 == rows->n || k[i + 1].step != k[i].step)
            out[m++] = rows->v[k[i].idx];
    free(k);
    free(rows->v);
    rows->v = out;
    rows->n = m;
    return RZ_OK;
}

/* An ended report reads what it can: a problem with an input becomes a warning in the report
 * instead of an error (the phase already failed; the report must still say how). */
static enum rz_status gate_tolerate(struct gate_input *in, enum rz_status st,
                                    const struct rz_err *err)
{
    if (st == RZ_OK || st == RZ_ENOMEM || in->ended == GATE_END_NONE)
        return st;
    size_t used = strlen(in->warnings);
    if (used + 4 < sizeof in->warnings)
        rz_fmt(in->warnings + used, sizeof in->warnings - used, "%s%s", used ? "\n" : "",
               err->msg);
    return RZ_OK;
}

static enum rz_status gate_read_rank(struct gate_input *in, struct gate_rank *rk, int rank,
                                     int *world, struct rz_err *err)
{
    char path[4200];
    rank_log_file(path, sizeof path, in->metrics_dir, rank);
    rk->rank = rank;
    rz_fmt(rk->host, sizeof rk->host, "unknown");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return gate_tolerate(in, rz_fail(err, RZ_EDATA, "metrics of rank %d missing: '%s': %s "
                                         "(world_size %d)", rank, path, strerror(errno),
                                         *world), err);
    struct gate_rows rows = {0};
    enum rz_status st = rank_log_read(path, &rows.v, &rows.n, &rows.world_size, err);
    st = gate_tolerate(in, st, err);
    if (st == RZ_OK && rows.n == 0 && in->ended == GATE_END_NONE)
        st = rz_fail(err, RZ_EDATA, "%s: no metrics lines", path);
    if (st == RZ_OK && *world != 0 && rows.n > 0 && rows.world_size != *world)
        st = gate_tolerate(in, rz_fail(err, RZ_EDATA, "%s: world_size %d differs from rank "
                                       "0's %d", path, rows.world_size, *world), err);
    if (st == RZ_OK && rank == 0)
        gate_recoveries_scan(in, rows.v, rows.n); /* in file order, before the redone steps go */
    if (st == RZ_OK)
        st = gate_rows_dedupe(&rows, err);
    if (st != RZ_OK) {
        free(rows.v);
        return st;
    }
    if (*world == 0)
        *world = rows.world_size;
    rk->rows = rows.v;
    rk->n_rows = rows.n;
    return RZ_OK;
}

/* Steps present on every rank, in ascending order. */
static enum rz_status gate_merge_steps(struct gate_input *in, const struct cfg *c,
                                       struct rz_err *err)
{
    in->steps = calloc(in->ranks[0].n_rows, sizeof *in->steps);
    if (in->steps == NULL && in->ranks[0].n_rows > 0)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    size_t *cur = calloc((size_t)in->world_size, sizeof *cur);
    if (cur == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    double batch = (double)(c->training.batch_size * c->training.grad_accum) * in->world_size;
    for (size_t i = 0; i < in->ranks[0].n_rows; i++) {
        const struct rank_row *r0 = &in->ranks[0].rows[i];
        struct gate_step s = {.step = r0->step, .run_step = r0->run_step,
                              .samples_seen = r0->samples_seen, .loss = r0->loss,
                              .skipped = r0->skipped, .val_loss = r0->val_loss};
        bool all = true;
        for (int k = 0; k < in->world_size && all; k++) {
            const struct gate_rank *rk = &in->ranks[k];
            if (rk->n_rows == 0 && in->ended != GATE_END_NONE)
                continue; /* an ended report: the ranks that wrote anything */
            while (cur[k] < rk->n_rows && rk->rows[cur[k]].step < s.step)
                cur[k]++;
            all = cur[k] < rk->n_rows && rk->rows[cur[k]].step == s.step;
            if (!all)
                break;
            const struct rank_row *r = &rk->rows[cur[k]];
            s.step_time_s = fmax(s.step_time_s, r->step_time_s);
            s.sync_ranks += r->has_sync;
            s.sync_ok_ranks += r->has_sync && r->sync_ok;
            s.gnorm_post_spread = fmax(s.gnorm_post_spread, r->gnorm_post_spread);
        }
        if (!all)
            continue;
        const struct gate_step *prev = in->n_steps ? &in->steps[in->n_steps - 1] : NULL;
        s.global_batch = prev != NULL && prev->step == s.step - 1
                             ? (double)(s.samples_seen - prev->samples_seen) : batch;
        in->steps[in->n_steps++] = s;
    }
    free(cur);
    return RZ_OK;
}

/* The newest RUN_DIR/metrics/<id>/ directory (mtime). */
static enum rz_status gate_newest_job(char *job, size_t len, const char *mdir,
                                      struct rz_err *err)
{
    DIR *d = opendir(mdir);
    if (d == NULL)
        return rz_fail(err, RZ_EDATA, "no metrics: open '%s': %s", mdir, strerror(errno));
    struct dirent *e;
    double best = -1;
    job[0] = '\0';
    while ((e = readdir(d)) != NULL) {
        char p[4400];
        struct stat sb;
        if (e->d_name[0] == '.' || strlen(e->d_name) >= len)
            continue;
        rz_fmt(p, sizeof p, "%s/%s", mdir, e->d_name);
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode) && (double)sb.st_mtime > best) {
            best = (double)sb.st_mtime;
            rz_fmt(job, len, "%s", e->d_name);
        }
    }
    closedir(d);
    if (job[0] == '\0')
        return rz_fail(err, RZ_EDATA, "no metrics: '%s' has no job directory", mdir);
    return RZ_OK;
}

static enum rz_status gate_read_metrics(struct gate_input *in, const struct cfg *c,
                                        struct rz_err *err)
{
    int world = 0;
    struct gate_rank r0 = {0};
    enum rz_status st = gate_read_rank(in, &r0, 0, &world, err);
    if (st != RZ_OK)
        return st;
    if (world == 0) { /* an ended report without rank 0's metrics: nothing to merge */
        free(r0.rows);
        return RZ_OK;
    }
    in->ranks = calloc((size_t)world, sizeof *in->ranks);
    if (in->ranks == NULL) {
        free(r0.rows);
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    }
    in->world_size = world;
    in->ranks[0] = r0;
    for (int r = 1; r < world && st == RZ_OK; r++)
        st = gate_read_rank(in, &in->ranks[r], r, &world, err);
    return st == RZ_OK ? gate_merge_steps(in, c, err) : st;
}

/* ---- events, summary, health, checkpoints ---------------------------------------------------- */

/* Sort the events once into the lists every consumer uses (struct gate_input). */
static enum rz_status gate_classify_events(struct gate_input *in, struct rz_err *err)
{
    size_t n = in->n_events + 1;
    in->job_events = calloc(n, sizeof *in->job_events);
    in->chain_events = calloc(n, sizeof *in->chain_events);
    in->verdict_events = calloc(n, sizeof *in->verdict_events);
    if (in->job_events == NULL || in->chain_events == NULL || in->verdict_events == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    in->first_start_t = in->last_event_t = NAN;
    for (size_t i = 0; i < in->n_events; i++) {
        const struct event_rec *e = &in->events[i];
        if (event_is_chain(e))
            in->chain_events[in->n_chain_events++] = i;
        if (event_is_verdict(e))
            in->verdict_events[in->n_verdict_events++] = i;
        if (strcmp(e->job, in->job) != 0)
            continue;
        in->job_events[in->n_job_events++] = i;
        if (strcmp(e->event, "requeue") == 0 || strcmp(e->event, "relaunch") == 0)
            in->requeues[event_requeue_of(e->reason)]++; /* a relaunch is a restart as well */
        in->give_ups += strcmp(e->event, "give_up") == 0;
        /* a "resume" event with a checkpoint; a fresh start says "resume" too, without one */
        in->resumes += strcmp(e->event, "resume") == 0 && strstr(e->json, "\"checkpoint\":") != NULL;
        if (strcmp(e->event, "start") == 0 && isnan(in->first_start_t))
            in->first_start_t = e->t;
        in->last_event_t = e->t;
    }
    return RZ_OK;
}

static enum rz_status gate_read_events(struct gate_input *in, struct rz_err *err)
{
    char path[4200];
    rz_fmt(path, sizeof path, "%s/events.jsonl", in->run_dir);
    enum rz_status st = events_read(path, &in->events, &in->n_events, err);
    st = gate_tolerate(in, st, err);
    return st == RZ_OK ? gate_classify_events(in, err) : st;
}

/* summary.json (record/summary.h): the ranks' hosts and the planner's peak RSS, the nodes'
 * network, the periodic checkpoints, the model's size, the data's reference lines and
 * tokenizer.  Optional: a run that never finished
 * training has none. */
static void gate_take_summary(struct gate_input *in, const struct summary_rec *s)
{
    in->has_summary = true;
    in->entropy_floor = s->entropy_floor;
    in->unigram_entropy = s->unigram_entropy;
    rz_fmt(in->tokenizer_sha256, sizeof in->tokenizer_sha256, "%s", s->tokenizer_sha256);
    in->num_parameters = s->num_parameters;
    in->summary_restarts = s->restarts;
    in->ckpt_policy = s->ckpts;
    in->n_net = s->n_net;
    memcpy(in->net, s->net, (size_t)s->n_net * sizeof *in->net);
    for (size_t i = 0; i < s->n_ranks; i++) {
        const struct summary_rank_rec *r = &s->ranks[i];
        if (!r->has_rank || r->rank < 0 || r->rank >= in->world_size)
            continue;
        if (r->has_host)
            rz_fmt(in->ranks[r->rank].host, sizeof in->ranks[r->rank].host, "%s", r->host);
        if (!isnan(r->predicted_peak_rss))
            in->ranks[r->rank].predicted_peak_rss = r->predicted_peak_rss;
    }
}

static enum rz_status gate_read_summary(struct gate_input *in, struct rz_err *err)
{
    char path[4200];
    struct stat sb;
    summary_path(path, sizeof path, in->run_dir);
    if (stat(path, &sb) != 0)
        return RZ_OK;
    struct summary_rec *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    enum rz_status st = summary_read(path, s, err);
    if (st == RZ_OK)
        gate_take_summary(in, s);
    summary_free(s);
    free(s);
    return st;
}

/* health.json (record/health_json.h): the preflight's checks, each rank's host, ISA and memory, and
 * the links between the nodes.  Optional: a run that never reached the preflight has none. */
static enum rz_status gate_read_health(struct gate_input *in, struct rz_err *err)
{
    char path[4200];
    struct stat sb;
    static struct health_doc h;
    rz_fmt(path, sizeof path, "%s/health.json", in->run_dir);
    if (stat(path, &sb) != 0)
        return RZ_OK;
    enum rz_status st = health_read(path, &h, err);
    if (st != RZ_OK)
        return st;
    in->checks = calloc((size_t)h.n_checks + 1, sizeof *in->checks);
    if (h.has_links)
        in->links = malloc(sizeof *in->links);
    if (in->checks == NULL || (h.has_links && in->links == NULL)) {
        health_free(&h);
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    }
    for (int i = 0; i < h.n_checks; i++) {
        struct gate_check *k = &in->checks[in->n_checks++];
        rz_fmt(k->name, sizeof k->name, "%s", h.checks[i].name);
        rz_fmt(k->detail, sizeof k->detail, "%s", h.checks[i].detail);
        k->ok = h.checks[i].ok;
    }
    if (h.has_links)
        *in->links = h.links;
    for (int i = 0; i < h.n_ranks; i++) {
        const struct health_rank *r = &h.ranks[i];
        if (r->isa[0] != '\0' && in->isa[0] == '\0')
            rz_fmt(in->isa, sizeof in->isa, "%s", r->isa);
        if (r->rank < 0 || r->rank >= in->world_size)
            continue; /* preflight of another launch size: ignore that rank */
        rz_fmt(in->ranks[r->rank].host, sizeof in->ranks[r->rank].host, "%s", r->host);
        in->ranks[r->rank].mem_total_bytes = r->mem_total;
        in->ranks[r->rank].mem_limit_bytes = r->mem_limit; /* 0 in files from before the limit */
    }
    gate_topology_read(in, &h);
    in->has_health = true;
    in->health_ok = h.ok;
    health_free(&h);
    return RZ_OK;
}

static enum rz_status gate_read_ckpts(struct gate_input *in, struct rz_err *err)
{
    char dir[4200];
    struct stat sb;
    rz_fmt(dir, sizeof dir, "%s/checkpoints", in->run_dir);
    if (stat(dir, &sb) != 0)
        return RZ_OK;
    struct ckpt_entry *e = NULL;
    size_t n = 0;
    enum rz_status st = ckpt_list(dir, &e, &n, err);
    if (st == RZ_OK && n > 0 && (in->ckpts = calloc(n, sizeof *in->ckpts)) == NULL)
        st = rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    for (size_t i = 0; st == RZ_OK && i < n; i++) {
        in->ckpts[i].step = e[i].step;
        in->ckpts[i].valid = e[i].valid != 0;
        rz_fmt(in->ckpts[i].path, sizeof in->ckpts[i].path, "%s", e[i].path);
    }
    in->n_ckpts = st == RZ_OK ? n : 0;
    free(e);
    return st;
}

static enum rz_status gate_config_hash(struct gate_input *in, const struct cfg *c,
                                       struct rz_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: config hash: out of memory");
    cfg_write_yaml(c, m);
    fclose(m);
    rz_sha256_hex(buf, len, in->config_sha256);
    free(buf);
    return RZ_OK;
}

/* ---- entry points ---------------------------------------------------------------------------- */

/* The phase is the config file's base name without .yaml (as ryzen-step names it), else the
 * run directory's base name. */
static void gate_phase_name(struct gate_input *in, const struct cfg *c)
{
    const char *src = c->source[0] != '\0' ? c->source : in->run_dir;
    if (!cfg_phase_name(src, in->phase, sizeof in->phase))
        in->phase[0] = '\0';
}

static enum rz_status gate_pick_job(struct gate_input *in, const struct gate_opts *o,
                                   struct rz_err *err)
{
    char mdir[4200];
    const char *job = o->job;
    rz_fmt(mdir, sizeof mdir, "%s/metrics", in->run_dir);
    if (job == NULL && o->env_job_id != NULL && o->env_job_id[0] != '\0')
        job = o->env_job_id;
    if (job != NULL) {
        if (job[0] == '\0' || strchr(job, '/') != NULL || strlen(job) >= sizeof in->job)
            return rz_fail(err, RZ_ECONFIG, "--job '%s': not a job id", job);
        rz_fmt(in->job, sizeof in->job, "%s", job);
    } else {
        enum rz_status st = gate_newest_job(in->job, sizeof in->job, mdir, err);
        if (st != RZ_OK)
            return st;
    }
    rz_fmt(in->metrics_dir, sizeof in->metrics_dir, "%s/%s", mdir, in->job);
    return RZ_OK;
}

/* The ladder model fitted to the phases with fewer ranks under RUNROOT: this phase's prediction.
 * Best effort: a run root that cannot be read (a malformed report of another phase) leaves the
 * fit not ok with the reason in its note, and never fails this phase's report. */
static void gate_read_ladder_fit(struct gate_input *in)
{
    char root[4096];
    memset(&in->ladder_fit, 0, sizeof in->ladder_fit);
    if (in->world_size < 1)
        return;
    layout_run_root(in->run_dir, root, sizeof root);
    ladder_fit_root(&in->ladder_fit, root, in->world_size);
}

/* What the caller passed along (struct gate_opts), kept in the input the report is built from. */
static void gate_take_opts(struct gate_input *in, const struct gate_opts *o)
{
    in->ended = o->ended;
    in->status = o->status;
    rz_fmt(in->why, sizeof in->why, "%s", o->why != NULL ? o->why : "");
    rz_fmt(in->cpus_per_rank, sizeof in->cpus_per_rank, "%s",
           o->cpus_per_rank != NULL && o->cpus_per_rank[0] != '\0' ? o->cpus_per_rank
                                                                   : "unknown");
}

enum rz_status gate_read(struct gate_input *in, const struct cfg *c, const char *run_dir,
                         const struct gate_opts *opts, struct rz_err *err)
{
    memset(in, 0, sizeof *in);
    in->entropy_floor = in->unigram_entropy = in->num_parameters = NAN;
    in->baseline.throughput = NAN;
    gate_take_opts(in, opts);
    size_t n = strlen(run_dir);
    while (n > 1 && run_dir[n - 1] == '/')
        n--;
    if (n >= 3000) /* leaves room for metrics/<job>/rank-NNNNN.jsonl in 4096-byte paths */
        return rz_fail(err, RZ_ECONFIG, "--run-dir: path longer than 3000 bytes");
    memcpy(in->run_dir, run_dir, n);
    in->run_dir[n] = '\0';
    gate_phase_name(in, c);
    enum rz_status st = gate_pick_job(in, opts, err);
    if (st == RZ_OK)
        st = gate_read_metrics(in, c, err);
    if (st == RZ_OK)
        st = gate_tolerate(in, gate_read_summary(in, err), err);
    if (st == RZ_OK)
        st = gate_tolerate(in, gate_read_health(in, err), err);
    if (st == RZ_OK)
        st = gate_read_events(in, err);
    if (st == RZ_OK)
        gate_recoveries_causes(in);
    if (st == RZ_OK)
        st = gate_tolerate(in, gate_read_ckpts(in, err), err);
    if (st == RZ_OK)
        st = gate_config_hash(in, c, err);
    if (st == RZ_OK)
        st = gate_tolerate(in, gate_find_baseline(in, c, opts->baseline, err), err);
    if (st == RZ_OK)
        gate_read_ladder_fit(in);
    return st;
}

void gate_input_free(struct gate_input *in)
{
    if (in == NULL)
        return;
    for (int r = 0; in->ranks != NULL && r < in->world_size; r++)
        free(in->ranks[r].rows);
    free(in->ranks);
    free(in->steps);
    events_free(in->events, in->n_events);
    free(in->job_events);
    free(in->chain_events);
    free(in->verdict_events);
    free(in->checks);
    free(in->links);
    free(in->ckpts);
    free(in->baseline.curve);
    free(in->baseline.val_curve);
    memset(in, 0, sizeof *in);
}
