/* optim.h: Adam / AdamW over the one flat parameter buffer, the learning-rate schedule, and
 * global gradient-norm clipping.
 *
 *   Adam  (Kingma & Ba 2015, Alg. 1), L2 weight decay folded into the gradient
 *   AdamW (Loshchilov & Hutter 2019): decoupled decay p -= lr * wd * p before the Adam step
 *   schedule: linear warm-up from 0 over warmup_steps, then cosine (or linear, or constant)
 *   decay from lr to min_lr_ratio * lr at the last step, matching PyTorch's CosineAnnealingLR
 *   with T_max = total steps when there is no warm-up.
 *
 * Ownership: optim_create allocates the two moment buffers (one allocation); optim_destroy
 * frees them and accepts NULL. */
#ifndef RZ_OPTIM_OPTIM_H
#define RZ_OPTIM_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

enum optim_kind { OPTIM_ADAM, OPTIM_ADAMW };
enum optim_schedule { SCHED_COSINE, SCHED_LINEAR, SCHED_CONSTANT };

struct optim_opts {
    enum optim_kind kind;
    double lr, beta1, beta2, eps, weight_decay;
    double grad_clip;            /* 0: off */
    enum optim_schedule schedule;
    int64_t warmup_steps;
    int64_t total_steps;
    double min_lr_ratio;
};

struct optim {
    struct optim_opts opts;
    size_t n;
    float *m, *v;                /* first and second moments (n each), one allocation */
    int64_t t;                   /* Adam steps taken so far */
};

enum rz_status optim_kind_parse(const char *name, enum optim_kind *out, struct rz_err *err);
enum rz_status optim_schedule_parse(const char *name, enum optim_schedule *out, struct rz_err *err);

enum rz_status optim_create(struct optim **out, const struct optim_opts *opts, size_t n,
                            struct rz_err *err);
void optim_destroy(struct optim *o);

/* Learning rate used at 0-based optimizer step `step`. */
double optim_lr_at(const struct optim_opts *opts, int64_t step);

/* Global L2 norm, also with sharded gradients (ZeRO): the sums of squares of fixed blocks of
 * OPTIM_NORM_BLOCK floats of the flat buffer, each in double (optim_rows.h), added in block order.
 * Shard boundaries are multiples of the block (train_step.c), so a rank that holds some blocks and a
 * rank that holds all of them add the same block sums in the same order: the norm, and so the
 * clipping, is the same bits at every world size and ZeRO stage for the same gradients. */
#define OPTIM_NORM_BLOCK 4096
size_t optim_norm_blocks(size_t n);
/* blocks[k] for the blocks k of [lo, hi) of the buffer (lo a multiple of the block, hi a
 * multiple or the buffer's end); g holds floats lo .. hi - 1. */
void optim_block_sumsq(double *blocks, const float *g, size_t lo, size_t hi);
/* sqrt of blocks[0] + blocks[1] + ... in that order. */
double optim_norm_of_blocks(const double *blocks, size_t nblocks);
/* The same norm of a whole buffer g (n) without a block array. */
double optim_grad_norm(const float *g, size_t n);

/* Scale g so its norm is at most max_norm (no-op if max_norm <= 0 or norm <= max_norm);
 * returns the factor applied. */
float optim_clip(float *g, size_t n, double norm, double max_norm);

/* One update of params (n) with gradients g at learning rate lr. */
void optim_step(struct optim *o, float *params, const float *g, double lr);

/* Sum of x^2 (n) in double, in eight lanes folded in one fixed order, on the process's level: the
 * block sums of the norm, and comm.c's per-rank sum of squares. */
double optim_sumsq(const float *x, size_t n);

/* The vector level the optimizer's loops run ("avx512", "avx2", "baseline"). */
const char *optim_isa(void);

#endif
