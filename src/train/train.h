/* train.h: one rank's training run: config -> kernels -> model (one parameter buffer) -> data by
 * global sample index -> forward/backward -> bucketed allreduce overlapped with backward ->
 * clip -> Adam -> metrics -> checkpoints -> summary.
 *
 * Data order depends only on the global batch G = batch x ranks x grad_accum: optimizer step s
 * consumes global samples [s*G, (s+1)*G); micro-step u of rank r takes
 * s*G + u*(batch*ranks) + r*batch + [0, batch).  So N ranks train like one rank with the same G,
 * and a checkpoint written at one world size resumes at another (elastic resume keeps G).
 *
 * Validation: with a held-out split (data.val_fraction or data.val_path), the loss over a fixed
 * set of held-out samples every training.eval_interval steps and at the end of the run; the same
 * figure at any world size (tr_validate, train_step.c).
 *
 * Stops: a stop signal (health/) is agreed on by all ranks at the next step boundary; they
 * checkpoint together and train_run returns RZ_ESIGNAL (exit 75).  The loss guard (guard.h)
 * skips steps with a non-finite or outlier loss or gradient norm; when it has skipped
 * training.max_skipped_steps within training.skip_window steps, train_run returns RZ_EHEALTH
 * ("loss guard: ...", end_reason "diverged") without a new checkpoint.  Ownership: train_run owns
 * everything it creates and frees it before returning; it borrows opts->comm. */
#ifndef RZ_TRAIN_TRAIN_H
#define RZ_TRAIN_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "comm/comm.h"
#include "config/cfg.h"
#include "core/status.h"

struct train_opts {
    const struct cfg *cfg;
    struct comm *comm;       /* NULL: a local world of one */
    const char *run_dir;     /* metrics/, checkpoints/, health/ and summary.json go here */
    const char *run_id;      /* metrics/<run_id>/ */
    FILE *log;               /* banner and progress lines (rank 0); NULL = quiet */
    FILE *events;            /* resume, quarantine, checkpoint and stop lines (rank 0); NULL =
                              * none.  Kept apart from `log` so --quiet keeps the decisions. */
    float *losses;           /* optional: per-step losses, indexed by step (cfg steps entries) */
    double peak_seconds;     /* time spent measuring the matmul peak; 0 = skip (MFU 0) */
    const char *resume;      /* "auto" (default when NULL), "never", or a checkpoint path */
    int64_t stop_at_step;    /* > 0: checkpoint after this step and return (a run segment) */
    const char *attempt_dir; /* where the watchdog leaves this rank's exit record (NULL: none) */
    int profile;             /* time each op class over the steady steps; print the table and
                              * the share of the GEMM-only bound reached (rank 0, `events`) */
};

struct train_result {
    int64_t start_step;      /* 0, or the step resumed from */
    int64_t steps;           /* optimizer steps completed in total (incl. before a resume) */
    int64_t num_parameters;
    double first_loss, final_loss, avg_loss;
    double entropy_floor;    /* < 0 when the data source has no known floor */
    double unigram_entropy;  /* text and tokens: the training split's (data.h); <= 0 unknown */
    char tokenizer_sha256[65]; /* the data's tokenizer; "" when it names none */
    double duration_s;       /* this run's training-loop wall time */
    double samples_per_sec;  /* global, steady state: warm-up steps excluded */
    double mfu;
    double peak_gflops;
    double comm_share;       /* exposed communication time / step time */
    double allreduce_latency_s; /* median small-allreduce latency at start-up */
    uint64_t peak_rss_bytes;
    uint64_t predicted_peak_rss_bytes; /* the planner's figure for this rank (plan.h) */
    int64_t val_step;        /* step of the last validation (-1: none: no held-out split) */
    double val_loss;         /* mean loss over the fixed validation set at val_step */
    int64_t skipped_steps;   /* steps the loss guard skipped (in total, across resumes) */
    char checkpoint[4096];   /* last checkpoint written or loaded ("" if none) */
    /* periodic checkpoints of this run (checkpoint.interval), in line or behind training */
    int64_t ckpt_count;
    int64_t ckpt_failed;     /* ... that could not be written (checkpoint.failures_tolerated) */
    double ckpt_stall_s;     /* training's wait for them, in total (train_ckpt.c) */
    double ckpt_stall_max_s; /* ... the longest one */
    double ckpt_commit_s;    /* their writes (ckpt_save), in total */
    int64_t ckpt_interval;   /* the interval in steps at the end (checkpoint.policy) */
    char ckpt_interval_why[256]; /* why that interval */
    char resumed_from[4096]; /* checkpoint resumed from ("" if fresh) */
    char end_reason[32];     /* why the run ended when the status alone does not say it:
                              * "diverged" (the loss guard stopped it, RZ_EHEALTH); "" otherwise */
};

enum rz_status train_run(const struct train_opts *opts, struct train_result *res,
                         struct rz_err *err);

/* The data source's options from the config (data/data.h), as the trainer opens it; the
 * preflight opens it alike.  RZ_ECONFIG for an unknown data.kind.  Borrows c's strings. */
struct data_opts;
enum rz_status train_data_opts(struct data_opts *o, const struct cfg *c, struct rz_err *err);

/* checkpoint.policy young_daly: the checkpoint interval in steps, sqrt(2 x cost_s x mtbf_s)
 * seconds of training (Young 1974; Daly 2006) over step_s, rounded to the nearest step, at
 * least 1 and at most max_steps; 0 when a figure is not positive (unknown: keep the interval). */
int64_t train_young_daly_steps(double cost_s, double mtbf_s, double step_s, int64_t max_steps);

#endif
