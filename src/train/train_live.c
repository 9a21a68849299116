/* train_live.c: the trainer's live metrics (metrics/live_series.h, docs/monitoring.md; see
 * train_internal.h): the figures each rank adds to the step's one collective, and the node's
 * Prometheus textfile that its lowest rank writes from what the collective gathered, every
 * metrics.prom_interval steps, at each checkpoint and once more when the run ends.  A failed
 * write is said once and never stops training. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "metrics/live_series.h"
#include "train/train_internal.h"

/* ---- live metrics (metrics/live_series.h, docs/monitoring.md) ---------------------------------------- */

/* The figures this rank sends in the step's collective: its window and this step's compute. */
void tr_live_pack(struct trainer *t, double *out, double compute_s)
{
    struct metrics_rank_live l;
    metrics_window_summary(&t->live.window, compute_s, (double)rz_rss_bytes(), &l);
    memcpy(out, &l, sizeof l);
}

/* Every rank's node (one gather at start-up), which rank writes each node's file, and where. */
enum rz_status tr_live_init(struct trainer *t, struct rz_err *err)
{
    struct train_live *l = &t->live;
    const struct cfg *c = t->cfg;
    size_t w = (size_t)t->world;
    l->written_step = -1;
    l->gathered = calloc(w * STEP_DOUBLES, sizeof *l->gathered);
    l->ranks = calloc(w, sizeof *l->ranks);
    l->hosts = calloc(w, sizeof *l->hosts);
    l->host_names = calloc(w, sizeof *l->host_names);
    if (l->gathered == NULL || l->ranks == NULL || l->hosts == NULL || l->host_names == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory for the live metrics");
    char mine[64];
    snprintf(mine, sizeof mine, "%s", comm_host(t->comm));
    enum rz_status st = comm_allgather_bytes(t->comm, mine, sizeof mine, l->hosts, err);
    if (st != RZ_OK)
        return st;
    l->node_first = true;
    for (int r = 0; r < t->world; r++) {
        l->host_names[r] = l->hosts[r];
        if (r < t->rank && strcmp(l->hosts[r], mine) == 0)
            l->node_first = false; /* a lower rank on this node writes its file */
    }
    st = train_net_addrs(&l->net, t->comm, l->node_first, err);
    if (st != RZ_OK)
        return st;
    l->writer = l->node_first && c->metrics.prom_interval > 0;
    if (c->metrics.prom_dir[0] != '\0')
        snprintf(l->dir, sizeof l->dir, "%s", c->metrics.prom_dir);
    else
        snprintf(l->dir, sizeof l->dir, "%s/prom", t->opts->run_dir);
    if (!cfg_phase_name(c->source[0] ? c->source : t->opts->run_dir, l->phase, sizeof l->phase))
        snprintf(l->phase, sizeof l->phase, "unknown");
    if (l->writer)
        l->memory_limit_bytes = metrics_memory_limit_bytes();
    return RZ_OK;
}

/* The node's textfile from the last collective's figures.  A failed write is reported once and
 * never stops training: monitoring must not take the run down. */
void tr_live_write(struct trainer *t, bool running)
{
    struct train_live *l = &t->live;
    if (!l->writer || !l->gathered_once || (running && l->written_step == t->step))
        return;
    for (int r = 0; r < t->world; r++)
        memcpy(&l->ranks[r], l->gathered + (size_t)r * STEP_DOUBLES + STEP_FIXED,
               sizeof l->ranks[r]);
    const struct cfg *c = t->cfg;
    struct metrics_prom_doc d = {
        .job = t->opts->run_id, .phase = l->phase, .node = l->hosts[t->rank],
        .now_unix = rz_unix_now(), .running = running, .world = t->world,
        .ranks = l->ranks, .hosts = l->host_names, .step = t->step,
        .samples_seen = t->step * t->global_batch, .loss = t->last_loss, .lr = t->last_lr,
        .has_val = t->val_step >= 0, .val_loss = t->val_loss,
        .rank_samples_per_step = (double)(t->dims.batch * t->accum),
        .restarts = t->restarts, .skipped_steps = t->guard.skipped,
        .last_ckpt_unix = l->last_ckpt_unix, .ckpt_interval_steps = t->ckpt_every,
        .useful_train_s = t->train_time,
        .update_interval_steps = c->metrics.prom_interval,
        .memory_limit_bytes = l->memory_limit_bytes,
        .throughput_no_go = c->gates.throughput_no_go,
        .straggler_no_go = c->gates.straggler_ratio_no_go,
        .packet_loss_no_go = c->gates.packet_loss_no_go};
    d.has_net = train_net_since(&l->net, &d.net, NULL);
    struct train_net_mpi mpi = {0};
    d.has_mpi = d.has_net &&
                train_net_mpi(&l->net, (const char(*)[64])l->hosts, l->hosts[t->rank], &mpi);
    d.mpi_data_segs = mpi.data_segs;
    d.mpi_lost = mpi.lost;
    struct rz_err err;
    char path[4400];
    if (metrics_prom_write(l->dir, &d, path, sizeof path, &err) != RZ_OK && !l->warned) {
        fprintf(stderr, "ryzen-train: rank %d: live metrics: %s (training goes on; further "
                "failures are not reported)\n", t->rank, err.msg);
        l->warned = true;
    }
    l->written_step = t->step;
}

/* Every metrics.prom_interval steps and at each checkpoint. */
void tr_live_step_done(struct trainer *t)
{
    int64_t every = t->cfg->metrics.prom_interval;
    if (t->live.last_ckpt_unix > 0 && t->saved_step == t->step)
        tr_live_write(t, true);
    else if (every > 0 && t->step % every == 0)
        tr_live_write(t, true);
}
