/* live_series.c: the live metrics of a training run (see live_series.h): step-time windows, the straggler
 * figures and one node's Prometheus textfile.  The series are listed in three tables (per rank,
 * per file, per job), each row a name, a type, a help text and how its value is computed, so
 * the file, docs/monitoring.md and the alert rules name the same things.
 * Deliberately not here: when a file is written and by which rank (train/train_live.c). */
#include "config.h"

#include "metrics/live_series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/durable.h"
#include "core/util.h"
#include "record/prom_text.h"

/* ---- windows and the straggler --------------------------------------------------------------- */

void metrics_window_add(struct metrics_window *w, double step_s, double compute_s, double comm_s,
                        double allreduce_s, double grad_s)
{
    w->grad_s[w->next] = grad_s;
    w->step_s[w->next] = step_s;
    w->compute_s[w->next] = compute_s;
    w->comm_s[w->next] = comm_s;
    w->allreduce_s[w->next] = allreduce_s;
    w->next = (w->next + 1) % METRICS_WINDOW;
    if (w->n < METRICS_WINDOW)
        w->n++;
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n > 0 ? s / n : (double)NAN;
}

void metrics_window_summary(const struct metrics_window *w, double compute_s, double rss_bytes,
                            struct metrics_rank_live *out)
{
    double a[METRICS_WINDOW];
    memcpy(a, w->allreduce_s, sizeof a);
    out->compute_s = compute_s;
    out->step_mean_s = mean(w->step_s, w->n);
    out->compute_mean_s = mean(w->compute_s, w->n);
    out->comm_mean_s = mean(w->comm_s, w->n);
    out->allreduce_p50_s = rz_quantile(a, (size_t)w->n, 0.5);
    out->allreduce_p99_s = rz_quantile(a, (size_t)w->n, 0.99);
    memcpy(a, w->grad_s, sizeof a);
    out->grad_p50_s = rz_quantile(a, (size_t)w->n, 0.5);
    out->grad_p99_s = rz_quantile(a, (size_t)w->n, 0.99);
    memcpy(a, w->comm_s, sizeof a);
    out->exposed_p50_s = rz_quantile(a, (size_t)w->n, 0.5);
    out->exposed_p99_s = rz_quantile(a, (size_t)w->n, 0.99);
    out->rss_bytes = rss_bytes;
}

void metrics_straggler(const struct metrics_rank_live *ranks, int world,
                       struct metrics_straggler *out)
{
    double *v = calloc((size_t)world + 1, sizeof *v);
    *out = (struct metrics_straggler){.ratio = NAN, .rank = 0, .median_s = NAN,
                                      .slowest_s = NAN};
    if (v == NULL || world < 1)
        goto done;
    for (int r = 0; r < world; r++) {
        v[r] = ranks[r].compute_mean_s;
        if (isnan(out->slowest_s) || v[r] > out->slowest_s) {
            out->slowest_s = v[r];
            out->rank = r;
        }
    }
    out->median_s = rz_quantile(v, (size_t)world, 0.5);
    if (out->median_s > 0)
        out->ratio = out->slowest_s / out->median_s;
done:
    free(v);
}

/* ---- the textfile ---------------------------------------------------------------------------- */

struct prom_ctx {
    const struct metrics_prom_doc *d;
    struct metrics_straggler strag;
    int rank;                   /* the rank a per-rank row is evaluated for */
};

typedef double (*prom_get)(const struct prom_ctx *x);

struct prom_row {
    const char *name, *type, *help;
    prom_get get;               /* NaN: no sample */
};

static const struct metrics_rank_live *me(const struct prom_ctx *x) { return &x->d->ranks[x->rank]; }

static double g_step(const struct prom_ctx *x) { return (double)x->d->step; }
static double g_loss(const struct prom_ctx *x) { return x->d->loss; }
static double g_lr(const struct prom_ctx *x) { return x->d->lr; }
static double g_val(const struct prom_ctx *x) { return x->d->has_val ? x->d->val_loss : (double)NAN; }
static double g_sps(const struct prom_ctx *x)
{
    return x->d->rank_samples_per_step / me(x)->step_mean_s;
}
static double g_step_s(const struct prom_ctx *x) { return me(x)->step_mean_s; }
static double g_compute_s(const struct prom_ctx *x) { return me(x)->compute_mean_s; }
static double g_comm_s(const struct prom_ctx *x) { return me(x)->comm_mean_s; }
static double g_p50(const struct prom_ctx *x) { return me(x)->allreduce_p50_s; }
static double g_p99(const struct prom_ctx *x) { return me(x)->allreduce_p99_s; }
static double g_grad_p50(const struct prom_ctx *x) { return me(x)->grad_p50_s; }
static double g_grad_p99(const struct prom_ctx *x) { return me(x)->grad_p99_s; }
static double g_exp_p50(const struct prom_ctx *x) { return me(x)->exposed_p50_s; }
static double g_exp_p99(const struct prom_ctx *x) { return me(x)->exposed_p99_s; }
static double g_exposed(const struct prom_ctx *x)
{
    return me(x)->comm_mean_s / me(x)->step_mean_s;
}
static double g_slowdown(const struct prom_ctx *x)
{
    return me(x)->compute_mean_s / x->strag.median_s;
}
static double g_rss(const struct prom_ctx *x) { return me(x)->rss_bytes; }
static double g_limit(const struct prom_ctx *x) { return x->d->memory_limit_bytes; }
static double g_ckpt_age(const struct prom_ctx *x)
{
    return x->d->last_ckpt_unix > 0 ? x->d->now_unix - x->d->last_ckpt_unix : (double)NAN;
}
static double g_restarts(const struct prom_ctx *x) { return (double)x->d->restarts; }
static double g_skipped(const struct prom_ctx *x) { return (double)x->d->skipped_steps; }

static const struct prom_row rank_rows[] = {
    {"ryzen_train_step", "gauge", "Optimizer steps completed.", g_step},
    {"ryzen_train_loss", "gauge", "Training loss of the last step (nats, mean over the global "
     "batch; NaN when it was not finite).", g_loss},
    {"ryzen_train_validation_loss", "gauge", "Loss over the fixed held-out validation set at the "
     "last validation (nats; only with data.val_fraction or data.val_path).", g_val},
    {"ryzen_train_learning_rate", "gauge", "Learning rate of the last step.", g_lr},
    {"ryzen_train_samples_per_second", "gauge", "Samples this rank trains per second (window "
     "mean).", g_sps},
    {"ryzen_train_step_seconds", "gauge", "Wall time of a step (window mean).", g_step_s},
    {"ryzen_train_compute_seconds", "gauge", "Forward and backward time of a step, not blocked "
     "in communication (window mean).", g_compute_s},
    {"ryzen_train_comm_wait_seconds", "gauge", "Time a step waits for the gradient allreduce "
     "(exposed communication, window mean).", g_comm_s},
    {"ryzen_train_allreduce_p50_seconds", "gauge", "Latency of the step's small collective, "
     "median over the window.", g_p50},
    {"ryzen_train_allreduce_p99_seconds", "gauge", "Latency of the step's small collective, "
     "99th percentile over the window.", g_p99},
    {"ryzen_train_grad_allreduce_p50_seconds", "gauge", "The gradient all-reduce's own time per "
     "step, from its first bucket's post until every bucket completed, median over the "
     "window.", g_grad_p50},
    {"ryzen_train_grad_allreduce_p99_seconds", "gauge", "The gradient all-reduce's own time per "
     "step, 99th percentile over the window.", g_grad_p99},
    {"ryzen_train_grad_allreduce_exposed_p50_seconds", "gauge", "The part of the gradient "
     "all-reduce a step waited for after backward (not hidden), median over the window.",
     g_exp_p50},
    {"ryzen_train_grad_allreduce_exposed_p99_seconds", "gauge", "The part of the gradient "
     "all-reduce a step waited for after backward, 99th percentile over the window.", g_exp_p99},
    {"ryzen_train_comm_exposed_ratio", "gauge", "Exposed communication time / step time "
     "(window).", g_exposed},
    {"ryzen_train_compute_slowdown_ratio", "gauge", "This rank's compute time / the median "
     "rank's (window means).", g_slowdown},
    {"ryzen_train_rss_bytes", "gauge", "Resident set size of this rank.", g_rss},
    {"ryzen_train_memory_limit_bytes", "gauge", "Memory the job may use on this node (cgroup "
     "limit, else the node's memory).", g_limit},
    {"ryzen_train_checkpoint_age_seconds", "gauge", "Seconds since the last committed "
     "checkpoint, when the file was written.", g_ckpt_age},
    {"ryzen_train_restarts_total", "counter", "Resumes from a checkpoint so far.", g_restarts},
    {"ryzen_train_skipped_steps_total", "counter", "Steps the loss guard skipped so far "
     "(non-finite or outlier loss or gradient norm).", g_skipped},
};

static double g_now(const struct prom_ctx *x) { return x->d->now_unix; }
static double g_running(const struct prom_ctx *x) { return x->d->running ? 1 : 0; }
/* The node's slowest rank's mean step time sets the expected period between updates. */
static double node_step_s(const struct prom_ctx *x)
{
    double worst = 0;
    for (int r = 0; r < x->d->world; r++)
        if (strcmp(x->d->hosts[r], x->d->node) == 0 && x->d->ranks[r].step_mean_s > worst)
            worst = x->d->ranks[r].step_mean_s;
    return worst;
}
static double g_update_s(const struct prom_ctx *x)
{
    return (double)x->d->update_interval_steps * node_step_s(x);
}
static double g_last_ckpt(const struct prom_ctx *x)
{
    return x->d->last_ckpt_unix > 0 ? x->d->last_ckpt_unix : (double)NAN;
}
static double g_ckpt_interval(const struct prom_ctx *x)
{
    return (double)x->d->ckpt_interval_steps * node_step_s(x);
}
static double g_useful(const struct prom_ctx *x) { return x->d->useful_train_s; }

static const struct prom_row file_rows[] = {
    {"ryzen_last_update_timestamp_seconds", "gauge", "When this file was written (Unix "
     "seconds): an old value means the run has stalled or died.", g_now},
    {"ryzen_train_running", "gauge", "1 while the run trains; 0 in the last file of a run that "
     "ended (done, stopped by a signal or by the loss guard).", g_running},
    {"ryzen_train_update_interval_seconds", "gauge", "Expected seconds between two writes of "
     "this file (metrics.prom_interval steps).", g_update_s},
    {"ryzen_train_last_checkpoint_timestamp_seconds", "gauge", "When the last checkpoint was "
     "committed (Unix seconds).", g_last_ckpt},
    {"ryzen_train_checkpoint_interval_seconds", "gauge", "Expected seconds between periodic "
     "checkpoints (the interval in force, checkpoint.interval or checkpoint.policy's; 0: only at "
     "the end and on signals).", g_ckpt_interval},
    {"ryzen_train_useful_seconds", "gauge", "Training time of the steps this run keeps: the "
     "checkpointed progress and the steps since.  A restart from an older checkpoint lowers it "
     "by the work lost, and it stands still while the job is down: its change over a window, "
     "over the window, is the goodput (docs/reliability.md).", g_useful},
};

static double g_world(const struct prom_ctx *x) { return x->d->world; }
static double g_samples(const struct prom_ctx *x) { return (double)x->d->samples_seen; }
static double g_throughput(const struct prom_ctx *x)
{
    return x->d->rank_samples_per_step * x->d->world / x->d->ranks[0].step_mean_s;
}
static double g_tp_no_go(const struct prom_ctx *x) { return x->d->throughput_no_go; }
static double g_strag_no_go(const struct prom_ctx *x) { return x->d->straggler_no_go; }
static double g_loss_no_go(const struct prom_ctx *x) { return x->d->packet_loss_no_go; }

static const struct prom_row job_rows[] = {
    {"ryzen_train_world_size", "gauge", "Ranks of the run.", g_world},
    {"ryzen_train_samples_total", "counter", "Global samples trained so far (the data cursor).",
     g_samples},
    {"ryzen_train_throughput_samples_per_second", "gauge", "Global samples per second "
     "(window).", g_throughput},
    {"ryzen_train_gate_throughput_no_go_samples_per_second", "gauge", "The phase's NO-GO "
     "throughput (gates.throughput_no_go).", g_tp_no_go},
    {"ryzen_train_gate_straggler_no_go_ratio", "gauge", "The phase's NO-GO straggler ratio "
     "(gates.straggler_ratio_no_go).", g_strag_no_go},
    {"ryzen_train_gate_packet_loss_no_go_ratio", "gauge", "The phase's NO-GO share of MPI "
     "data segments lost between nodes (gates.packet_loss_no_go).", g_loss_no_go},
};

static double g_segs(const struct prom_ctx *x) { return x->d->net.tcp_out_segs; }
static double g_retrans(const struct prom_ctx *x) { return x->d->net.tcp_retrans_segs; }
static double g_retrans_share(const struct prom_ctx *x) { return netstat_retrans_share(&x->d->net); }
static double g_tx(const struct prom_ctx *x) { return x->d->net.tx_bytes; }
static double g_rx(const struct prom_ctx *x) { return x->d->net.rx_bytes; }
static double g_drops(const struct prom_ctx *x) { return x->d->net.drops; }
static double g_errors(const struct prom_ctx *x) { return x->d->net.errors; }

/* The node's kernel counters (the whole host's: context, not what the gate judges) since this
 * run's training started. */
static const struct prom_row net_rows[] = {
    {"ryzen_train_net_tcp_segments_sent_total", "counter", "TCP segments the node sent since "
     "this run's training started (the whole host's, all traffic: context).", g_segs},
    {"ryzen_train_net_tcp_retransmitted_segments_total", "counter", "TCP segments the node "
     "retransmitted since this run's training started (the whole host's: context).", g_retrans},
    {"ryzen_train_net_tcp_retransmit_ratio", "gauge", "Retransmitted / sent TCP segments of the "
     "whole host since this run's training started (context; the gate judges "
     "ryzen_train_net_packet_loss_ratio).", g_retrans_share},
    {"ryzen_train_net_transmit_bytes_total", "counter", "Bytes the node's interfaces (all but "
     "lo) sent since this run's training started.", g_tx},
    {"ryzen_train_net_receive_bytes_total", "counter", "Bytes the node's interfaces (all but "
     "lo) received since this run's training started.", g_rx},
    {"ryzen_train_net_drops_total", "counter", "Packets the node's interfaces dropped (receive "
     "and transmit) since this run's training started.", g_drops},
    {"ryzen_train_net_errors_total", "counter", "Receive and transmit errors of the node's "
     "interfaces since this run's training started.", g_errors},
};

static double g_mpi_segs(const struct prom_ctx *x) { return x->d->mpi_data_segs; }
static double g_mpi_lost(const struct prom_ctx *x) { return x->d->mpi_lost; }
static double g_mpi_share(const struct prom_ctx *x)
{
    return x->d->mpi_data_segs > 0.0 ? x->d->mpi_lost / x->d->mpi_data_segs : 0.0;
}

/* The job's own traffic: its MPI connections from the node to the job's other nodes, counted
 * since each opened (on first use, in training) - the packet-loss gate's sample, live. */
static const struct prom_row mpi_rows[] = {
    {"ryzen_train_net_mpi_data_segments_sent_total", "counter", "Data segments the job's MPI "
     "connections from this node to its other nodes sent (tcpi_data_segs_out).", g_mpi_segs},
    {"ryzen_train_net_mpi_lost_segments_total", "counter", "Of them, lost: retransmitted less "
     "the resends D-SACK proved spurious (tcpi_total_retrans - tcpi_dsack_dups).", g_mpi_lost},
    {"ryzen_train_net_packet_loss_ratio", "gauge", "Lost / sent data segments of the job's MPI "
     "connections to its other nodes (the report's packet_loss, live; 0 on one node).",
     g_mpi_share},
};

/* One sample; rank < 0 for series without a rank label.  node NULL: no node label. */
static void prom_sample(FILE *f, const struct prom_row *row, const struct prom_ctx *x, int rank,
                        const char *node, double v)
{
    fprintf(f, "%s{", row->name);
    prom_text_label(f, "slurm_job_id", x->d->job, true);
    prom_text_label(f, "phase", x->d->phase, false);
    if (rank >= 0) {
        char r[16];
        snprintf(r, sizeof r, "%d", rank);
        prom_text_label(f, "rank", r, false);
    }
    if (node != NULL)
        prom_text_label(f, "node", node, false);
    fputc('}', f);
    prom_text_value(f, v);
}

static void prom_head(FILE *f, const struct prom_row *row)
{
    prom_text_head(f, row->name, row->type, row->help);
}

/* The loss is the one series that is NaN on purpose (a non-finite loss must show); every other
 * NaN means "not known yet" and is left out. */
static bool prom_keep(const struct prom_row *row, double v)
{
    return !isnan(v) || row->get == g_loss;
}

void metrics_prom_format(FILE *f, const struct metrics_prom_doc *d)
{
    struct prom_ctx x = {.d = d};
    metrics_straggler(d->ranks, d->world, &x.strag);
    for (size_t i = 0; i < RZ_ARRAY_LEN(file_rows); i++) {
        double v = file_rows[i].get(&x);
        prom_head(f, &file_rows[i]);
        if (prom_keep(&file_rows[i], v))
            prom_sample(f, &file_rows[i], &x, -1, d->node, v);
    }
    for (size_t i = 0; d->has_net && i < RZ_ARRAY_LEN(net_rows); i++) {
        prom_head(f, &net_rows[i]);
        prom_sample(f, &net_rows[i], &x, -1, d->node, net_rows[i].get(&x));
    }
    for (size_t i = 0; d->has_mpi && i < RZ_ARRAY_LEN(mpi_rows); i++) {
        prom_head(f, &mpi_rows[i]);
        prom_sample(f, &mpi_rows[i], &x, -1, d->node, mpi_rows[i].get(&x));
    }
    for (size_t i = 0; i < RZ_ARRAY_LEN(rank_rows); i++) {
        prom_head(f, &rank_rows[i]);
        for (x.rank = 0; x.rank < d->world; x.rank++) {
            double v = rank_rows[i].get(&x);
            if (strcmp(d->hosts[x.rank], d->node) == 0 && prom_keep(&rank_rows[i], v))
                prom_sample(f, &rank_rows[i], &x, x.rank, d->node, v);
        }
    }
    if (d->world < 1 || strcmp(d->hosts[0], d->node) != 0)
        return; /* the job-wide series come from rank 0's node only */
    for (size_t i = 0; i < RZ_ARRAY_LEN(job_rows); i++) {
        double v = job_rows[i].get(&x);
        prom_head(f, &job_rows[i]);
        if (prom_keep(&job_rows[i], v))
            prom_sample(f, &job_rows[i], &x, -1, NULL, v);
    }
    static const struct prom_row strag = {
        "ryzen_train_straggler_ratio", "gauge", "Slowest rank's compute time / the median "
        "rank's (window means); rank and node name the slowest.", NULL};
    prom_head(f, &strag);
    if (!isnan(x.strag.ratio))
        prom_sample(f, &strag, &x, x.strag.rank, d->hosts[x.strag.rank], x.strag.ratio);
}

static void prom_writer(FILE *f, const void *ctx) { metrics_prom_format(f, ctx); }

/* File names keep to [A-Za-z0-9._-]: a job id or host name cannot leave the directory. */
static void safe_name(char *out, size_t len, const char *s)
{
    size_t i = 0;
    for (; s[i] != '\0' && i + 1 < len; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        out[i] = ok ? ch : '_';
    }
    out[i] = '\0';
}

enum rz_status metrics_prom_write(const char *dir, const struct metrics_prom_doc *d,
                                  char *path_out, size_t path_len, struct rz_err *err)
{
    char job[128], node[128], path[4400];
    safe_name(job, sizeof job, d->job);
    safe_name(node, sizeof node, d->node);
    rz_fmt(path, sizeof path, "%s/ryzen-%s-%s.prom", dir, job, node);
    if (path_out != NULL)
        rz_fmt(path_out, path_len, "%s", path);
    enum rz_status st = rz_mkdirs(dir, err);
    return st == RZ_OK ? rz_durable_write(path, "prom", prom_writer, d, err) : st;
}

/* ---- the memory limit -------------------------------------------------------------------------- */

/* A number read from a one-line file; 0 for "max", a missing file or garbage. */
static double read_limit(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    double v = 0;
    if (rz_read_file(path, &text, &len, NULL) == RZ_OK && text[0] >= '0' && text[0] <= '9')
        v = strtod(text, NULL);
    free(text);
    return v;
}

/* This process's cgroup path (the v2 line "0::/path", else v1's memory controller line). */
static bool cgroup_path(char *out, size_t len, bool *v2)
{
    char *text = NULL;
    size_t n = 0;
    bool found = false;
    if (rz_read_file("/proc/self/cgroup", &text, &n, NULL) != RZ_OK)
        return false;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line != NULL && !found;
         line = strtok_r(NULL, "\n", &save)) {
        char *a = strchr(line, ':'), *b = a != NULL ? strchr(a + 1, ':') : NULL;
        if (b == NULL)
            continue;
        *b = '\0';
        *v2 = strcmp(a + 1, "") == 0;
        if (*v2 || strstr(a + 1, "memory") != NULL) {
            rz_fmt(out, len, "%s", b + 1);
            found = true;
        }
    }
    free(text);
    return found;
}

double metrics_memory_limit_bytes(void)
{
    char cg[2048], path[2200];
    bool v2 = false;
    double limit = 0;
    if (cgroup_path(cg, sizeof cg, &v2)) {
        rz_fmt(path, sizeof path, v2 ? "/sys/fs/cgroup%s/memory.max"
                                     : "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", cg);
        limit = read_limit(path);
    }
    char *text = NULL;
    size_t n = 0;
    double total = 0;
    if (rz_read_file("/proc/meminfo", &text, &n, NULL) == RZ_OK) {
        const char *p = strstr(text, "MemTotal:");
        if (p != NULL)
            total = strtod(p + 9, NULL) * 1024.0;
        free(text);
    }
    /* v1 reports "no limit" as a huge number; the node's memory is the real bound then */
    return limit > 0 && (total == 0 || limit < total) ? limit : total;
}
