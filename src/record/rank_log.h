/* rank_log.h: RUN_DIR/metrics/<job>/rank-NNNNN.jsonl, one rank's per-step log: its records,
 * its one writer and its one reader.  The one place that knows the format.
 *   written by  ryzen-train, every rank, one line per optimizer step, flushed each step
 *   read by     ryzen-gate (gate/gate_read.c: every rank's steps, merged and judged)
 * Each line is one JSON object (keys in this order): step, samples_seen, run_step, loss,
 * loss_hex, lr, grad_norm, step_time_s, comm_time_s, samples_per_sec, tokens_per_sec, mfu,
 * rss_bytes, allreduce_s, compute_time_s, grad_allreduce_s, t (when known), skipped and
 * skip_reason (skipped steps), skipped_total (once any was skipped), world_size, val_loss and
 * val_loss_hex (steps with a validation), sync_ok, param_spread, gnorm_pre_min, gnorm_pre_max,
 * gnorm_post_spread (steps with a sync check).  A requeued job appends: a step may appear again,
 * and the later line is the one that counts (the reader keeps both, in file order).
 * Ownership: rank_log_open allocates the log, rank_log_close frees it (NULL ok); rank_log_read
 * allocates the rows (free() them, also after an error). */
#ifndef RZ_RECORD_RANK_LOG_H
#define RZ_RECORD_RANK_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* ---- the writer ------------------------------------------------------------------------------ */

struct rank_step {
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

struct rank_log;

/* Open RUN_DIR/metrics/RUN_ID/rank-NNNNN.jsonl for appending (the directory made if missing). */
enum rz_status rank_log_open(struct rank_log **out, const char *run_dir, const char *run_id,
                             int rank, struct rz_err *err);
/* Append one line, flushed; RZ_EIO naming the file. */
enum rz_status rank_log_write(struct rank_log *log, const struct rank_step *s,
                              struct rz_err *err);
void rank_log_close(struct rank_log *log);
const char *rank_log_path(const struct rank_log *log);

/* ---- the reader ------------------------------------------------------------------------------ */

/* METRICS_DIR/rank-NNNNN.jsonl into out (METRICS_DIR: RUN_DIR/metrics/<job>). */
void rank_log_file(char *out, size_t len, const char *metrics_dir, int rank);

/* One line as read back. */
struct rank_row {
    int64_t step, run_step, samples_seen;
    double loss, step_time_s, comm_time_s, allreduce_s;
    double lr, grad_norm;       /* NaN in metrics written before them, or null (non-finite) */
    double compute_time_s;      /* NaN in metrics written before it existed */
    double time;                /* wall clock when the step ended (Unix s); NaN before it existed */
    double grad_allreduce_s;    /* the gradient all-reduce's own time; NaN before it existed */
    uint64_t rss_bytes;
    bool has_sync, sync_ok;
    bool skipped;               /* the loss guard skipped the step (loss may be NaN) */
    double gnorm_post_spread;
    double val_loss;            /* NaN on steps without a validation */
};

/* Every line of PATH in file order into *rows (n of them) and its world_size into *world (0
 * with no line).  Strict (record/jsonl.h): RZ_EDATA "PATH:LINE: ..." for a missing or
 * non-numeric field (step, run_step, samples_seen, world_size, loss, step_time_s,
 * comm_time_s, allreduce_s, rss_bytes; a null loss only on a skipped step), a negative time or
 * memory, or a world_size that differs from the earlier lines'; an optional field (lr,
 * grad_norm, compute_time_s, t, grad_allreduce_s, val_loss) that is present but not a number
 * (lr and grad_norm may be null: a non-finite value, read as NaN).  On an error the rows read
 * before the bad line stay in *rows. */
enum rz_status rank_log_read(const char *path, struct rank_row **rows, size_t *n, int *world,
                             struct rz_err *err);

#endif
