/* live_series.h: live metrics while training: each rank's recent step timings (a window), what it
 * reports to its node's writer, the straggler figures, and the node's Prometheus textfile
 *
 *   <prom_dir>/ryzen-<job>-<node>.prom   text exposition format for node_exporter's textfile
 *                                        collector, written durably (core/durable.h)
 *
 * Names carry their unit (_seconds, _bytes, _ratio, _total); every family has HELP and TYPE;
 * labels are slurm_job_id, phase, rank and node (docs/monitoring.md lists every series).
 * The trainer gathers one struct metrics_rank_live per rank in the step's one small collective,
 * so the node's writer (its lowest rank) has its ranks' figures without another message.
 * Deliberately not here: when to write (train/train_live.c) and any MPI (comm/).
 * Ownership: plain values; the writer borrows every pointer in struct metrics_prom_doc. */
#ifndef RZ_METRICS_LIVE_SERIES_H
#define RZ_METRICS_LIVE_SERIES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "net/netstat.h"

#define METRICS_WINDOW 64 /* steps the live figures summarize */

/* One rank's last METRICS_WINDOW steps (a ring).  Zero it to start. */
struct metrics_window {
    double step_s[METRICS_WINDOW], compute_s[METRICS_WINDOW], comm_s[METRICS_WINDOW];
    double allreduce_s[METRICS_WINDOW], grad_s[METRICS_WINDOW];
    int n, next;
};

/* One step: wall time, compute (forward and backward, not blocked in communication), exposed
 * communication wait, the small collective's latency and the gradient all-reduce's own time
 * (comm_grads_span: comm_s is the part of it the step waited for). */
void metrics_window_add(struct metrics_window *w, double step_s, double compute_s, double comm_s,
                        double allreduce_s, double grad_s);

/* What one rank reports to the writers: all doubles, so one collective carries an array of
 * them.  Means and quantiles are over the rank's window. */
struct metrics_rank_live {
    double compute_s;           /* this step's compute time */
    double step_mean_s, compute_mean_s, comm_mean_s;
    double allreduce_p50_s, allreduce_p99_s;   /* the small collective */
    double grad_p50_s, grad_p99_s;             /* the gradient all-reduce's own time */
    double exposed_p50_s, exposed_p99_s;       /* ... the part the step waited for */
    double rss_bytes;
};
#define METRICS_LIVE_DOUBLES ((int)(sizeof(struct metrics_rank_live) / sizeof(double)))

/* The window's figures (and this step's compute time and RSS) into out. */
void metrics_window_summary(const struct metrics_window *w, double compute_s, double rss_bytes,
                            struct metrics_rank_live *out);

/* Straggler: each rank's mean compute time against the median rank's. */
struct metrics_straggler {
    double ratio;               /* slowest / median; 1 for one rank; NaN without data */
    int rank;                   /* the slowest rank */
    double median_s, slowest_s;
};
void metrics_straggler(const struct metrics_rank_live *ranks, int world,
                       struct metrics_straggler *out);

/* Everything one node's textfile shows. */
struct metrics_prom_doc {
    const char *job, *phase, *node;     /* labels slurm_job_id, phase, node */
    double now_unix;                    /* ryzen_last_update_timestamp_seconds */
    bool running;                       /* false in the last file of a run */
    int world;
    const struct metrics_rank_live *ranks; /* world entries (every rank: the straggler) */
    const char *const *hosts;           /* world entries: each rank's node */
    int64_t step, samples_seen;
    double loss, lr;
    bool has_val;                       /* a validation ran: val_loss is its loss */
    double val_loss;
    double rank_samples_per_step;       /* samples one rank processes per optimizer step */
    int64_t restarts, skipped_steps;
    double last_ckpt_unix;              /* 0: none committed yet */
    double useful_train_s;              /* training time of the steps kept (ryzen_train_useful_seconds) */
    int64_t ckpt_interval_steps, update_interval_steps;
    double memory_limit_bytes;
    double throughput_no_go, straggler_no_go, packet_loss_no_go; /* the phase's gates */
    /* The node's network counters since this run's training started (net/netstat.h); none
     * when has_net is false (unreadable /proc/net). */
    bool has_net;
    struct netstat net;
    /* The job's own traffic: its MPI connections from this node to the job's other nodes, their
     * data segments sent and lost (the packet-loss gate's sample, live); none when has_mpi is
     * false (the sockets unreadable). */
    bool has_mpi;
    double mpi_data_segs, mpi_lost;
};

/* The textfile of doc->node's ranks (and, on rank 0's node, the job-wide series). */
void metrics_prom_format(FILE *f, const struct metrics_prom_doc *d);
/* Write it durably to <dir>/ryzen-<job>-<node>.prom (dir is created); path_out gets the path. */
enum rz_status metrics_prom_write(const char *dir, const struct metrics_prom_doc *d,
                                  char *path_out, size_t path_len, struct rz_err *err);


/* The memory this process may use: its cgroup's limit (v2 memory.max, v1
 * memory.limit_in_bytes), else the node's MemTotal; 0 if neither can be read. */
double metrics_memory_limit_bytes(void);

#endif
