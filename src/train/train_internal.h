/* train_internal.h: what the trainer's files share: train.c (set-up, init, the run loop, the
 * summary, train_run), train_step.c (the optimizer step with its collectives and ZeRO, the sync
 * check, validation), train_ckpt.c (choosing, loading and saving checkpoints, planning the
 * resume), train_log.c (what the trainer prints: its decisions, the banner, progress, --profile)
 * and train_live.c (the live Prometheus metrics).
 * Private to src/train/: the trainer's state and the functions that cross these files (tr_*). */
#ifndef RZ_TRAIN_TRAIN_INTERNAL_H
#define RZ_TRAIN_TRAIN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/ckpt.h"
#include "ckpt/ckpt_async.h"
#include "comm/comm.h"
#include "config/cfg.h"
#include "core/status.h"
#include "kernels/kernels.h"
#include "metrics/live_series.h"
#include "model/model.h"
#include "record/rank_log.h"
#include "train/guard.h"
#include "train/train.h"
#include "train/train_net.h"

/* The step's one small collective (step_collective): per rank, these doubles, then the rank's
 * live figures (struct metrics_rank_live). */
enum { STEP_LOSS, STEP_STOP, STEP_GNORM, STEP_FIXED };
#define STEP_DOUBLES (STEP_FIXED + METRICS_LIVE_DOUBLES)

/* Live metrics (metrics/live_series.h): the rank's window, what the last collective gathered, and the
 * node's textfile, written by the node's lowest rank. */
struct train_live {
    struct metrics_window window;
    double mine[STEP_DOUBLES];
    double *gathered;          /* world * STEP_DOUBLES: the last step's collective */
    struct metrics_rank_live *ranks; /* world: unpacked from gathered for the writer */
    char (*hosts)[64];         /* world: each rank's node */
    const char **host_names;   /* world: pointers into hosts */
    bool writer;               /* the lowest rank of its node, with metrics.prom_interval > 0 */
    bool node_first;           /* the lowest rank of its node */
    struct train_net net;      /* the node's network while training (node_first reads) */
    bool gathered_once;        /* a step has run: the figures exist */
    char dir[4096], phase[256];
    double memory_limit_bytes, last_ckpt_unix;
    int64_t written_step;      /* the step of the last textfile (-1: none) */
    bool warned;               /* a failed write was reported once */
};

/* --profile: wall time per op class over the steady steps.  The kernels time their own ops
 * (matmul, attention, norm, loss; GELU counts as other); the trainer times the optimizer and the
 * communication it waits for; "other" is the rest of the step (GELU, embeddings, residual adds,
 * bias gradients, bf16 rounding, data). */
struct profile {
    struct kern_profile k;
    double optimizer_s, comm_s, step_s;
    int64_t steps;
};

struct trainer {
    const struct cfg *cfg;
    const struct train_opts *opts;
    struct comm *comm, *own_comm;
    int rank, world;
    struct model_dims dims;
    int64_t accum, global_batch;
    struct kern_ctx *kern;
    struct model *model;
    struct data *data;
    struct optim *optim;
    struct rank_log *metrics;
    struct health_watchdog *watchdog;
    int32_t *sample;           /* (T + 1) */
    int32_t *inputs, *targets; /* (B, T) */
    char ckpt_dir[4096];
    struct ckpt_known ckpt_known; /* checkpoints retention need not read again */
    char *config_yaml;
    char config_sha256[65];
    /* progress, carried across restarts through the checkpoint */
    int64_t step;              /* optimizer steps completed */
    double loss_sum, train_time;
    int64_t restarts;
    int64_t saved_step;        /* step of the newest checkpoint on disk (-1: none) */
    int64_t ckpt_failed_row;   /* periodic checkpoints that failed since the last one written */
    /* checkpoint.mode async (train_ckpt.c) */
    bool ckpt_async;           /* every rank */
    struct ckpt_writer *writer; /* rank 0 */
    int64_t submitted_step;    /* the write behind training, every rank (-1: none) */
    struct ckpt_write_result written; /* rank 0: a finished write the ranks have not agreed on */
    bool written_held;
    double stall_fence_s;      /* rank 0: the optimizer's waits for the snapshot copy, not yet
                                * counted (train_step.c fences the update on the copy) */
    double stall_last_s;       /* the last periodic checkpoint's stall so far */
    double last_commit_s;      /* rank 0: the last in-line commit (tr_save_checkpoint) */
    /* checkpoint.policy (train_ckpt.c): the interval in force, every rank */
    int64_t ckpt_every;        /* steps; 0: no periodic checkpoints */
    bool ckpt_young_daly;      /* checkpoint.policy young_daly (else fixed) */
    int64_t ckpt_from;         /* young_daly counts from this step (the last periodic one) */
    double ckpt_cost_s;        /* young_daly: the periodic checkpoints' stall so far (rank 0) */
    int64_t ckpt_costs;
    double last_lr, last_loss;
    struct train_live live;
    /* ZeRO (training.zero_stage 1 or 2: zero_* functions) */
    int zero;                  /* the stage; 0: every rank holds everything */
    size_t shard_lo, shard_hi; /* this rank's part of the flat layout (rz_shard) */
    float *gshard;             /* (hi - lo) reduced gradient of the part */
    double *norm_blocks;       /* (optim_norm_blocks(n)) block sums of squares (optim.h) */
    uint64_t optim_rss;        /* RSS grown by the moments (and ZeRO's gradient shard) */
    /* validation (tr_validate) */
    double *val_losses;        /* (eval_samples) per-sample losses, gathered by sample index */
    int64_t val_step;          /* step of the last validation in this process (-1: none) */
    double val_loss;
    struct ckpt_guard guard;   /* the loss guard's state, carried through checkpoints */
    struct profile prof;
};

struct step_out {
    double loss, grad_norm, local_gnorm, comm_s, allreduce_s;
    double grad_allreduce_s;   /* the gradient reduction's own time (comm_grads_span), summed
                                * over the micro-steps that reduce; comm_s is its exposed part */
    double compute_s;          /* forward + backward, until the wait for the allreduce */
    double optim_s;            /* the gradient norm, clipping and the update (--profile) */
    int stop;                  /* some rank got a stop signal */
    enum guard_verdict guard;  /* the loss guard's decision: accept, skip or stop */
    char guard_why[256];       /* why a step was skipped */
};

/* ---- train_step.c: the optimizer step, the sync check, validation, and the agreement ---- */

/* All ranks learn whether any rank failed (a collective). */
enum rz_status tr_agree(struct trainer *t, enum rz_status st, struct rz_err *err);

/* ZeRO (training.zero_stage): this rank's shard of the flat layout and its gradient buffer. */
enum rz_status tr_zero_init(struct trainer *t, struct rz_err *err);
/* Every parameter is present on this rank (ZeRO: waits for the gather of the last update). */
enum rz_status tr_params_complete(struct trainer *t, struct rz_err *err);
/* One optimizer step at learning rate lr: micro-steps, reduction, the step's collective, the loss
 * guard's verdict, the update (none when the guard skips the step). */
enum rz_status tr_train_step(struct trainer *t, double lr, struct step_out *o,
                             struct rz_err *err);
/* Collective, every health.sync_check_interval steps: the ranks still hold the same parameters;
 * fills s's sync figures.  Its outcome is agreed (tr_agree) when it ran; other steps call no
 * collective. */
enum rz_status tr_sync_check(struct trainer *t, const struct step_out *o, struct rank_step *s,
                             struct rz_err *err);
/* Collective: the loss over the fixed held-out set (t->val_loss, t->val_step). */
enum rz_status tr_validate(struct trainer *t, struct rz_err *err);
/* Validation is due after this step (training.eval_interval, a held-out split). */
bool tr_validation_due(const struct trainer *t);

/* ---- train_ckpt.c: checkpoints and the resume ---- */

/* Which checkpoint to resume from ("" for a fresh start); rank 0 decides, everyone learns it. */
enum rz_status tr_choose_checkpoint(struct trainer *t, char *path, size_t len, struct rz_err *err);
/* The chosen checkpoint's metadata, read before the model is built: elastic resume may change
 * the per-rank batch. */
enum rz_status tr_plan_resume(struct trainer *t, const char *path, struct rz_err *err);
/* Load it into the built trainer: progress, parameters, moments, the loss guard's state. */
enum rz_status tr_load_checkpoint(struct trainer *t, const char *path, struct train_result *r,
                                  struct rz_err *err);
/* Collective: commit the current state (nothing when it is on disk already) and prune, in line:
 * a write behind training is finished and agreed on first.  For the stop signal and the end. */
enum rz_status tr_save_checkpoint(struct trainer *t, struct train_result *r, struct rz_err *err);
/* Collective: the periodic checkpoint, behind training with checkpoint.mode async (after the
 * previous one's outcome is agreed), else tr_save_checkpoint.  Counts the stall in r. */
enum rz_status tr_checkpoint_periodic(struct trainer *t, struct train_result *r,
                                      struct rz_err *err);
/* checkpoint.policy: the interval to start with (and why, in r), and whether one is due now. */
void tr_ckpt_interval_init(struct trainer *t, struct train_result *r);
bool tr_checkpoint_due(const struct trainer *t);
/* checkpoint.mode async: start the writer (rank 0), and stop it (waiting for its write). */
enum rz_status tr_ckpt_writer_init(struct trainer *t, struct rz_err *err);
void tr_ckpt_writer_free(struct trainer *t, struct train_result *r);
/* Rank 0: take a finished background write's result, saying so (block: wait for it).  Local; the
 * ranks agree on it at the next checkpoint. */
void tr_ckpt_poll(struct trainer *t, struct train_result *r, bool block);

/* ---- train_log.c: what the trainer prints (rank 0) ---- */

/* A decision (resume, quarantine, checkpoint, stop): printed even with --quiet. */
void tr_say(const struct trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Collective: "2 node(s): n1, n2" from every rank's host name. */
enum rz_status tr_describe_hosts(struct trainer *t, char *out, size_t len, struct rz_err *err);
void tr_print_banner(const struct trainer *t, double peak, double latency, const char *hosts);
void tr_print_progress(const struct trainer *t, const struct rank_step *s, double eta_s,
                       double comm_share);
/* The matmul peak in GFLOP/s, measured for `seconds` (0: not measured). */
double tr_measure_peak(struct trainer *t, double seconds);
/* --profile: start the accounting at the first steady step, add each steady step, print. */
void tr_profile_start(struct trainer *t);
void tr_profile_add(struct trainer *t, const struct step_out *o, double dt);
void tr_print_profile(const struct trainer *t, const struct train_result *r);

/* ---- train_live.c: live metrics (metrics/live_series.h, docs/monitoring.md) ---- */

/* The figures this rank sends in the step's collective. */
void tr_live_pack(struct trainer *t, double *out, double compute_s);
/* Collective: every rank's node, and which rank writes each node's file. */
enum rz_status tr_live_init(struct trainer *t, struct rz_err *err);
/* The node's textfile from the last collective's figures (running false: the run has ended). */
void tr_live_write(struct trainer *t, bool running);
/* After a step: the textfile when it is due. */
void tr_live_step_done(struct trainer *t);

#endif
