/* metrics.h: per-step metrics (one JSON object per line per rank), the run summary in the seed
 * benchmark's format, and the human progress line.
 *
 *   RUN_DIR/metrics/<run-id>/rank-NNNNN.jsonl   fields as in docs/DESIGN.md, flushed every step
 *   RUN_DIR/summary.json                         written to a temp name, fsynced, renamed
 *
 * Ownership: metrics_open allocates the log; metrics_close flushes, closes and frees it (NULL ok). */
#ifndef RZ_METRICS_METRICS_H
#define RZ_METRICS_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "net/netstat.h"

struct metrics_step {
    int64_t step;            /* 1-based optimizer step just completed */
    int64_t run_step;        /* 1-based step within this process's run (warm-up detection:
                              * after a restart, steps are re-counted from 1) */
    int64_t samples_seen;    /* global samples consumed so far */
    double loss;             /* mean loss of this step (all micro-steps, all ranks) */
    double lr;               /* learning rate used for this step */
    double grad_norm;        /* global gradient L2 norm before clipping */
    double step_time_s;      /* wall time of this step */
    double comm_time_s;      /* exposed (not overlapped) communication time */
    double samples_per_sec;  /* global samples / step_time_s */
    double tokens_per_sec;
    double mfu;              /* achieved matmul FLOP/s / measured peak FLOP/s */
    uint64_t rss_bytes;      /* resident set size of this rank */
    double allreduce_s;      /* latency of this step's small collective (loss, stop flag,
                              * gradient norm and live figures of every rank) */
    double compute_time_s;   /* forward + backward, not blocked in communication */
    double grad_allreduce_s; /* the gradient all-reduce's own time (comm_grads_span), of which
                              * comm_time_s is the exposed part */
    double time;             /* wall clock when the step ended, Unix seconds (0: not written) */
    int skipped;             /* the loss guard skipped this step (no update) */
    const char *skip_reason; /* why (skipped steps only) */
    int64_t skipped_total;   /* steps skipped so far in the run, this one included */
    int world_size;
    /* validation, on the steps that ran one (has_val) */
    int has_val;
    double val_loss;         /* mean loss over the fixed validation set */
    /* gradient-sync check, on the steps that ran one (has_sync) */
    int has_sync;
    int sync_ok;             /* every rank's parameter hash identical */
    double param_spread;     /* max relative parameter spread across ranks (0 when identical) */
    double gnorm_pre_min, gnorm_pre_max; /* per-rank pre-allreduce gradient norms */
    double gnorm_post_spread;/* relative spread of the post-allreduce gradient norms */
};

struct metrics_log;

enum rz_status metrics_open(struct metrics_log **out, const char *run_dir, const char *run_id,
                            int rank, struct rz_err *err);
enum rz_status metrics_write(struct metrics_log *log, const struct metrics_step *s,
                             struct rz_err *err);
void metrics_close(struct metrics_log *log);
const char *metrics_path(const struct metrics_log *log);

/* The TCP connections of a node to one other node of the job (net/netsock.h): segments sent and
 * retransmitted, this run's connections alone (the job user's: MPI's, not Slurm's). */
#define METRICS_MAX_PEERS 16
struct metrics_peer {
    char host[64];
    double segs_out, retrans;
    double data_segs_out, dsack_dups; /* dsack_dups NaN: the kernel has no tcpi_dsack_dups */
    int conns;
};

struct metrics_rank_result {
    int rank;
    char host[64];
    int64_t steps;
    double avg_loss, final_loss;
    double samples_per_sec;  /* this rank's share, steady state */
    double comm_share;       /* this rank's exposed communication share */
    double duration_sec;
    uint64_t peak_rss_bytes;
    uint64_t optimizer_rss_bytes; /* RSS grown by the Adam moments (+ ZeRO's gradient shard) */
    uint64_t predicted_peak_rss_bytes; /* the memory planner's figure (plan.h) */
    /* The node's network counters (net/netstat.h), read by its lowest rank alone (has_net) at
     * the first step and at the end: their change while this run trained, whole host. */
    int has_net;
    struct netstat net;
    double net_seconds;
    int n_peers;             /* has_net only: the other nodes its connections reached */
    struct metrics_peer peers[METRICS_MAX_PEERS];
};

struct metrics_summary {
    int num_processes;
    double avg_loss;             /* mean of the per-step losses of the run */
    double final_loss;
    double total_duration_sec;   /* wall time of the training loop */
    double samples_per_sec;      /* global, steady state (warm-up steps excluded) */
    double tokens_per_sec;
    double mfu;
    double peak_gflops;          /* measured matmul peak used for MFU */
    double comm_share;           /* exposed communication time / step time */
    double allreduce_latency_s;  /* median small-allreduce latency measured at start-up */
    int64_t restarts;            /* resumes from a checkpoint so far */
    const char *resumed_from;    /* checkpoint this run resumed from, or NULL */
    int64_t steps;
    int64_t num_parameters;
    double entropy_floor;        /* < 0 when unknown */
    const char *config_path;
    uint64_t peak_rss_bytes;     /* the largest of the ranks' peak RSS */
    uint64_t predicted_peak_rss_bytes; /* the largest of the planner's figures for them */
    int has_val;                 /* a validation ran: the three below are set */
    int64_t val_step;            /* step of the last validation */
    double val_loss;
    int64_t val_samples;         /* size of the validation set */
    /* periodic checkpoints (checkpoint.interval) of this run, rank 0's view */
    const char *ckpt_mode;       /* checkpoint.mode: "sync" or "async" */
    int64_t ckpt_count;
    int64_t ckpt_failed; /* periodic checkpoints that could not be written */
    double ckpt_stall_s;         /* training's wait for them, in total */
    double ckpt_stall_max_s;     /* ... the longest */
    double ckpt_commit_s;        /* their writes, in total (behind training when async) */
    const char *ckpt_policy;     /* checkpoint.policy */
    int64_t ckpt_interval;       /* the interval in steps at the end, and why */
    const char *ckpt_interval_why;
    const struct metrics_rank_result *ranks; /* num_processes entries */
};

/* Write RUN_DIR/summary.json atomically. */
enum rz_status metrics_write_summary(const char *run_dir, const struct metrics_summary *s,
                                     struct rz_err *err);

/* "H:MM:SS" (or "M:SS") for an ETA into buf. */
void metrics_format_eta(char *buf, size_t len, double seconds);

#endif
