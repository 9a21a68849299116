/* plan.h: the memory planner behind `ryzen-train --plan` and the preflight's memory check: the
 * bytes one rank of a training run holds, from the config and the world size alone.  No MPI, no
 * kernels, nothing allocated: the figures come from the layouts the trainer allocates
 * (model_memory_plan for parameters, gradients or gradient segments and activations; rz_shard for
 * ZeRO's part; the optimizer's two moments), the oneDNN backend's kernel scratch in closed form
 * (kernels/kern_dnnl.c, kern_simd.c), and measured constants for what no layout describes (the
 * libraries and MPI at start-up, the MPI library's buffers for buckets in flight).
 *
 * Every figure is per rank, in bytes.  Rank 0 holds more at a checkpoint with ZeRO: the moments
 * of the largest tensor, gathered from every rank to be written (peak_rank0).
 * Ownership: plain values; nothing to free. */
#ifndef RZ_PLAN_PLAN_H
#define RZ_PLAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/cfg.h"
#include "core/status.h"
#include "model/model.h"

/* What the planner may change to make a run fit (plan_suggest). */
struct plan_settings {
    int zero_stage;           /* 0, 1, 2 */
    bool recompute;           /* training.recompute: block */
    int64_t batch, accum;     /* per-rank micro-batch and micro-steps (their product is kept) */
    bool async_ckpt;          /* checkpoint.mode async: rank 0 holds a snapshot */
};

struct plan {
    int world;
    struct plan_settings s;
    int64_t n_params;
    uint64_t params;          /* the parameter buffer (every rank holds all of it) */
    uint64_t grads;           /* stage 0: the gradient buffer; 1: it and the reduced shard;
                               * 2: the segment buffers and the reduced shard */
    uint64_t optimizer;       /* Adam's m and v (of this rank's part with ZeRO) */
    uint64_t acts_kept;       /* activations forward keeps for backward, these settings */
    uint64_t acts_kept_none;  /* ... without recomputation */
    uint64_t acts_kept_block; /* ... with recomputation by block */
    uint64_t acts_scratch;    /* backward's scratch in the activation buffer */
    uint64_t kernel_ws;       /* the kernels' own scratch (attention tiles, row sums) */
    uint64_t comm;            /* MPI's buffers for buckets in flight, ZeRO's bucket tables and
                               * the gradient norm's block sums */
    uint64_t runtime;         /* libraries, oneDNN's code and primitives, MPI at start-up */
    uint64_t ckpt_staging;    /* rank 0, writing a ZeRO checkpoint: one tensor's moments, and
                               * MPI's buffers for the other ranks' sends (measured) */
    uint64_t ckpt_snapshot;   /* rank 0, checkpoint.mode async: the writer's copy of the
                               * parameters and both moments (ckpt_async.h) */
    uint64_t peak;            /* predicted peak RSS of a rank other than 0 */
    uint64_t peak_rank0;      /* ... of rank 0 (peak + ckpt_staging + ckpt_snapshot) */
};

/* The settings the config asks for. */
struct plan_settings plan_settings_of(const struct cfg *c);

/* The model the trainer builds for c with settings s (train.c uses it too: one mapping). */
struct model_dims plan_model_dims(const struct cfg *c, const struct plan_settings *s);

/* The plan of config c at `world` ranks, with settings s (NULL: the config's own). */
enum rz_status plan_compute(struct plan *p, const struct cfg *c, int world,
                            const struct plan_settings *s, struct rz_err *err);

/* "--set training.zero_stage=2 --set training.recompute=block ..." for what s changes from c,
 * checkpoint.mode included ("" when nothing). */
void plan_describe_change(char *buf, size_t len, const struct cfg *c,
                          const struct plan_settings *s);

/* The cheapest settings whose rank-0 peak is at most `limit` bytes.  Compute is dearer than
 * communication on the ranks' own links, so: the config's compute first, then recomputation
 * (about a third more compute), then halving the micro-batch with twice the accumulation, down
 * to 1 (smaller matmuls, the same global batch); and at each of these the ZeRO stages from the
 * config's up to 2 (more than one rank; each adds communication, not compute), then, for an
 * async config, the same stages with synchronous checkpoints (no snapshot on rank 0; a stall at
 * each checkpoint instead of more compute at every step).  True with *out and its plan when one
 * fits; false with the last (smallest) candidate in *out. */
bool plan_suggest(struct plan_settings *out, struct plan *plan, const struct cfg *c, int world,
                  uint64_t limit);

/* The table `ryzen-train --plan` prints: every figure, then (limit > 0) whether it fits and the
 * cheapest change that would. */
void plan_print(FILE *f, const struct plan *p, const struct cfg *c, uint64_t limit);

/* Parse a size: bytes, or a number with K, M, G or T (binary: KiB ... TiB, as Slurm's --mem). */
enum rz_status plan_parse_size(const char *text, uint64_t *out, struct rz_err *err);

#endif
