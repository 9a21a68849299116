/* plan.c: the memory planner (see plan.h): per-rank bytes of a run from its config and world
 * size, the cheapest change that fits a limit, and the table `ryzen-train --plan` prints.
 *
 * What is computed from the trainer's own layouts is exact to the byte (parameters, gradients and
 * their segments, the moments, the activation buffer); the kernels' scratch mirrors the oneDNN
 * backend's closed forms; the rest are constants measured on this code (runtime, MPI's buffers),
 * which is why the prediction is checked against measured peak RSS (summary.json,
 * tools/bench-memory).  Deliberately not planned: the reference backend's scratch (it is for
 * tests), page-cache pages of a token file (released after each sample, data/file.c). */
#include "config.h"

#include "plan/plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/model.h"
#include "optim/optim.h"

/* Measured: the peak RSS of a run whose buffers are all negligible (libraries, oneDNN's JIT code
 * and primitive descriptors, libxsmm's kernels, MPI at start-up, stacks); seed-shaped runs of 1
 * and 2 ranks. */
#define PLAN_RUNTIME_BYTES ((uint64_t)48 << 20)
/* Not a constant but a rule: the MPI library's buffers for buckets in flight (Open MPI's
 * nonblocking collectives keep a temporary as large as each bucket) are counted as one gradient
 * segment's, the largest, since each segment's buckets start as backward finishes it. */
/* Measured: what rank 0 grows by while every other rank sends it moments for a ZeRO checkpoint
 * (MPI's shared-memory fragments, per sender), on top of the largest tensor it stages. */
#define PLAN_GATHER_PEER_BYTES ((uint64_t)6 << 20)
#define PLAN_ROW_CHUNK 64     /* kern_simd.c: rows per partial sum of the row kernels */

struct plan_settings plan_settings_of(const struct cfg *c)
{
    struct plan_settings s = {.zero_stage = (int)c->training.zero_stage,
                              .recompute = strcmp(c->training.recompute, "block") == 0,
                              .batch = c->training.batch_size, .accum = c->training.grad_accum,
                              .async_ckpt = strcmp(c->checkpoint.mode, "async") == 0};
    return s;
}

struct model_dims plan_model_dims(const struct cfg *c, const struct plan_settings *s)
{
    struct model_dims d = {
        .vocab = c->model.vocab_size, .d_model = c->model.d_model, .n_heads = c->model.n_heads,
        .n_layers = c->model.n_layers, .d_ff = c->model.d_ff, .seq_len = c->model.seq_len,
        .batch = s->batch, .ln_eps = (float)c->model.ln_eps,
        .init_std = (float)c->model.init_std,
        .tie_embeddings = strcmp(c->model.tie_embeddings, "true") == 0,
        .no_head_bias = strcmp(c->model.head_bias, "false") == 0,
        .dropout = (float)c->model.dropout, .bf16 = strcmp(c->training.precision, "bf16") == 0,
        .recompute = s->recompute ? MODEL_RECOMPUTE_BLOCK : MODEL_RECOMPUTE_NONE,
        .segment_grads = s->zero_stage == 2};
    return d;
}

/* floats of the oneDNN backend's kernel scratch: the attention's (kern_xsmm.c: per OpenMP
 * thread, K^T and V^T of a head, two score tiles, a tile's statistics and delta; the plan counts
 * one thread, the trainer's setting in every test and benchmark here), and the LayerNorm's and
 * the cross-entropy's partial sums (kern_simd.c). */
static uint64_t kernel_floats(const struct model_dims *d)
{
    uint64_t T = (uint64_t)d->seq_len, D = (uint64_t)(d->d_model / d->n_heads);
    uint64_t tile = T <= 256 ? 64 : T <= 1024 ? 128 : 256;
    tile = tile < T ? tile : T;
    uint64_t N = (uint64_t)(d->batch * d->seq_len), chunks = (N + PLAN_ROW_CHUNK - 1) / PLAN_ROW_CHUNK;
    uint64_t attention = (2 * D * T + 2 * tile * tile + 2 * tile + T + 15) & ~(uint64_t)15;
    uint64_t layernorm = 2 * chunks * (uint64_t)d->d_model;
    uint64_t xent = chunks * (uint64_t)d->vocab;
    return attention + layernorm + xent;
}

/* The activations forward keeps for backward: fp32, and bf16 copies of matmul inputs. */
static uint64_t kept_bytes(const struct model_memory *mm)
{
    return (uint64_t)mm->acts_kept * 4 + (uint64_t)mm->acts_halves_kept * 2;
}

enum rz_status plan_compute(struct plan *p, const struct cfg *c, int world,
                            const struct plan_settings *s, struct rz_err *err)
{
    memset(p, 0, sizeof *p);
    if (world < 1)
        return rz_fail(err, RZ_ECONFIG, "plan: world size %d is not a positive number of ranks",
                       world);
    p->world = world;
    p->s = s != NULL ? *s : plan_settings_of(c);
    struct model_dims d = plan_model_dims(c, &p->s);
    struct model_memory mm, other;
    model_memory_plan(&d, &mm);
    if (mm.params == 0)
        return rz_fail(err, RZ_ENOMEM, "plan: out of memory for the model's table");
    size_t lo = 0, hi = mm.params, largest_part = 0;
    for (int r = 0; r < world; r++) { /* the largest part: rank 0's, or a later one */
        size_t a, b;
        rz_shard(mm.params, world, r, OPTIM_NORM_BLOCK, &a, &b);
        if (b - a > largest_part) {
            largest_part = b - a;
            lo = a;
            hi = b;
        }
    }
    size_t part = p->s.zero_stage > 0 ? hi - lo : mm.params;
    p->n_params = (int64_t)mm.params;
    p->params = (uint64_t)mm.params * 4 + (uint64_t)mm.params_halves * 2; /* bf16: the copy */
    p->grads = (uint64_t)mm.grads * 4 + (p->s.zero_stage > 0 ? (uint64_t)part * 4 : 0);
    p->optimizer = 2 * (uint64_t)part * 4;
    p->acts_kept = kept_bytes(&mm);
    p->acts_scratch = (uint64_t)(mm.acts - mm.acts_kept) * 4 +
                      (uint64_t)(mm.acts_halves - mm.acts_halves_kept) * 2;
    d.recompute = MODEL_RECOMPUTE_NONE;
    model_memory_plan(&d, &other);
    p->acts_kept_none = kept_bytes(&other);
    d.recompute = MODEL_RECOMPUTE_BLOCK;
    model_memory_plan(&d, &other);
    p->acts_kept_block = kept_bytes(&other);
    p->kernel_ws = kernel_floats(&d) * 4;
    p->comm = 8 * (uint64_t)optim_norm_blocks(mm.params);
    if (world > 1)
        p->comm += (uint64_t)mm.largest_segment * 4 + (uint64_t)3 * 4096 * (uint64_t)world * 4;
    p->runtime = PLAN_RUNTIME_BYTES;
    p->ckpt_staging = p->s.zero_stage > 0 ? (uint64_t)mm.largest_tensor * 4 +
                                                (uint64_t)(world - 1) * PLAN_GATHER_PEER_BYTES
                                          : 0;
    /* checkpoint.mode async: rank 0's writer holds parameters, m and v whole (ckpt_async.h);
     * its gathers go straight into them, so no staging besides */
    p->ckpt_snapshot = p->s.async_ckpt ? (uint64_t)mm.params * 3 * 4 : 0;
    if (p->ckpt_snapshot > 0 && p->ckpt_staging > 0)
        p->ckpt_staging = (uint64_t)(world - 1) * PLAN_GATHER_PEER_BYTES;
    p->peak = p->params + p->grads + p->optimizer + p->acts_kept + p->acts_scratch +
              p->kernel_ws + p->comm + p->runtime;
    p->peak_rank0 = p->peak + p->ckpt_staging + p->ckpt_snapshot;
    return RZ_OK;
}

void plan_describe_change(char *buf, size_t len, const struct cfg *c,
                          const struct plan_settings *s)
{
    struct plan_settings now = plan_settings_of(c);
    size_t used = 0;
    buf[0] = '\0';
    if (s->zero_stage != now.zero_stage && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%s--set training.zero_stage=%d",
                                 used ? " " : "", s->zero_stage);
    if (s->recompute != now.recompute && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%s--set training.recompute=%s",
                                 used ? " " : "", s->recompute ? "block" : "none");
    if (s->batch != now.batch && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%s--set training.batch_size=%" PRId64
                                 " --set training.grad_accum=%" PRId64, used ? " " : "",
                                 s->batch, s->accum);
    if (s->async_ckpt != now.async_ckpt && used < len)
        snprintf(buf + used, len - used, "%s--set checkpoint.mode=%s", used ? " " : "",
                 s->async_ckpt ? "async" : "sync");
}

/* The candidates of plan_suggest in order; returns how many (at most max).  Compute costs first
 * (as configured; recomputation; then each halving of the micro-batch), and within each, the
 * ZeRO stages from the config's up (more than one rank), then (an async config) the same with
 * synchronous checkpoints. */
static int plan_candidates(struct plan_settings *out, int max, const struct cfg *c, int world)
{
    struct plan_settings base = plan_settings_of(c), tier = base;
    int n = 0, top = world > 1 ? 2 : base.zero_stage;
    for (int t = 0; n < max; t++) {
        if (t > 0 && !tier.recompute) {
            tier.recompute = true;
        } else if (t > 0) {
            if (tier.batch % 2 != 0)
                break;
            tier.batch /= 2;
            tier.accum *= 2;
        }
        for (int mode = base.async_ckpt ? 1 : 0; mode >= 0; mode--)
            for (int stage = base.zero_stage; stage <= top && n < max; stage++) {
                out[n] = tier;
                out[n].async_ckpt = mode == 1;
                out[n++].zero_stage = stage;
            }
    }
    return n;
}

bool plan_suggest(struct plan_settings *out, struct plan *plan, const struct cfg *c, int world,
                  uint64_t limit)
{
    struct plan_settings cand[256];
    int n = plan_candidates(cand, 256, c, world);
    for (int i = 0; i < n; i++) {
        *out = cand[i];
        if (plan_compute(plan, c, world, &cand[i], NULL) == RZ_OK && plan->peak_rank0 <= limit)
            return true;
    }
    return false;
}

/* ---- printing ------------------------------------------------------------------------------------ */

static double gib(uint64_t bytes)
{
    return (double)bytes / (double)((uint64_t)1 << 30);
}

/* "12.34 GiB", or "123.4 MiB" below one GiB. */
static const char *plan_size(char *buf, size_t len, uint64_t bytes)
{
    if (bytes >= (uint64_t)1 << 30)
        snprintf(buf, len, "%.2f GiB", gib(bytes));
    else
        snprintf(buf, len, "%.1f MiB", (double)bytes / 1048576.0);
    return buf;
}

static void plan_row(FILE *f, const char *what, uint64_t bytes, const char *note)
{
    char size[32];
    fprintf(f, "  %-26s %14s  %s\n", what, plan_size(size, sizeof size, bytes), note);
}

static void plan_print_settings(FILE *f, const struct plan *p, const struct cfg *c)
{
    fprintf(f, "ryzen-train: memory plan per rank, %d rank(s): %s\n", p->world,
            c->source[0] ? c->source : "(defaults)");
    fprintf(f, "  model      %" PRId64 " parameters (V=%" PRId64 " C=%" PRId64 " H=%" PRId64
            " L=%" PRId64 " F=%" PRId64 " T=%" PRId64 "%s%s)\n", p->n_params, c->model.vocab_size,
            c->model.d_model, c->model.n_heads, c->model.n_layers, c->model.d_ff,
            c->model.seq_len, strcmp(c->model.tie_embeddings, "true") == 0 ? ", tied head" : "",
            strcmp(c->model.head_bias, "false") == 0 ? ", no head bias" : "");
    fprintf(f, "  settings   micro-batch %" PRId64 " x accum %" PRId64 " per rank (global batch "
            "%" PRId64 "), ZeRO stage %d, recompute %s, dropout %g, %s, checkpoint.mode %s\n",
            p->s.batch, p->s.accum, p->s.batch * p->s.accum * p->world, p->s.zero_stage,
            p->s.recompute ? "block" : "none", c->model.dropout, c->training.precision,
            p->s.async_ckpt ? "async" : "sync");
}

/* Every combination of ZeRO stage, recomputation and micro-batch (the same global batch), its
 * rank-0 peak and whether it fits `usable`. */
static void plan_print_grid(FILE *f, const struct cfg *c, int world, uint64_t usable)
{
    struct plan_settings base = plan_settings_of(c);
    fprintf(f, "  every setting (same global batch %" PRId64 ", checkpoint.mode %s):\n",
            base.batch * base.accum * world, base.async_ckpt ? "async" : "sync");
    for (int stage = 0; stage <= (world > 1 ? 2 : 0); stage++)
        for (int rc = 0; rc < 2; rc++)
            for (int64_t b = base.batch; b >= 1; b /= 2) {
                struct plan_settings s = {.zero_stage = stage, .recompute = rc != 0, .batch = b,
                                          .accum = base.accum * (base.batch / b),
                                          .async_ckpt = base.async_ckpt};
                struct plan q;
                char size[32];
                if (plan_compute(&q, c, world, &s, NULL) != RZ_OK)
                    continue;
                fprintf(f, "    ZeRO %d, recompute %-5s micro-batch %4" PRId64 " x accum %4" PRId64
                        ": %12s  %s\n", stage, rc ? "block" : "none", b, s.accum,
                        plan_size(size, sizeof size, q.peak_rank0),
                        q.peak_rank0 <= usable ? "fits" : "-");
                if (b % 2 != 0)
                    break;
            }
}

void plan_print(FILE *f, const struct plan *p, const struct cfg *c, uint64_t limit)
{
    char note[256];
    plan_print_settings(f, p, c);
    plan_row(f, "parameters", p->params, strcmp(c->training.precision, "bf16") == 0
             ? "every rank holds them all, fp32 and a bf16 copy" : "every rank holds them all");
    snprintf(note, sizeof note, "%s", p->s.zero_stage == 2 ? "ZeRO-2: this rank's part, and "
             "per-segment buffers during backward" : p->s.zero_stage == 1 ? "the whole buffer, "
             "and this rank's part reduced" : "the whole buffer");
    plan_row(f, "gradients", p->grads, note);
    snprintf(note, sizeof note, "Adam m and v%s", p->s.zero_stage > 0 ? ", this rank's part" : "");
    plan_row(f, "optimizer state", p->optimizer, note);
    char none[32], block[32];
    snprintf(note, sizeof note, "recompute %s (none: %s, block: %s)",
             p->s.recompute ? "block" : "none", plan_size(none, sizeof none, p->acts_kept_none),
             plan_size(block, sizeof block, p->acts_kept_block));
    plan_row(f, "activations kept", p->acts_kept, note);
    plan_row(f, "activation scratch", p->acts_scratch, "backward's working buffers");
    plan_row(f, "kernel workspace", p->kernel_ws, "attention tiles (one thread), row sums");
    plan_row(f, "communication", p->comm, p->world > 1 ? "buckets in flight, bucket tables, "
             "norm blocks" : "norm blocks");
    plan_row(f, "runtime", p->runtime, "libraries, oneDNN, MPI (measured)");
    plan_row(f, "predicted peak RSS", p->peak, "");
    if (p->ckpt_snapshot > 0)
        plan_row(f, "checkpoint snapshot", p->ckpt_snapshot,
                 "rank 0, checkpoint.mode async: parameters, m and v, written behind training");
    if (p->ckpt_staging > 0 || p->ckpt_snapshot > 0)
        plan_row(f, "... rank 0 at a checkpoint", p->peak_rank0, p->ckpt_snapshot > 0
                 ? "+ the snapshot (and MPI's buffers for ZeRO's gathers)"
                 : "+ the largest tensor's moments, gathered from every rank to be written");
    if (limit == 0)
        return;
    /* the preflight's rule: the ranks may use 90% of the limit */
    uint64_t usable = (uint64_t)((double)limit * 0.9);
    struct plan_settings s;
    struct plan q;
    bool fits = plan_suggest(&s, &q, c, p->world, usable);
    char a[32], b[32], change[512];
    fprintf(f, "  limit      %s per rank, 90%% usable: %s\n", plan_size(a, sizeof a, limit),
            plan_size(b, sizeof b, usable));
    plan_describe_change(change, sizeof change, c, &s);
    if (fits && change[0] == '\0')
        fprintf(f, "  fits       yes\n");
    else if (fits)
        fprintf(f, "  fits       no; the cheapest change that fits: %s (predicted %s)\n", change,
                plan_size(a, sizeof a, q.peak_rank0));
    else
        fprintf(f, "  fits       no, and nothing the planner may change fits: the smallest is %s "
                "(%s); use more ranks or a smaller model\n", change,
                plan_size(a, sizeof a, q.peak_rank0));
    plan_print_grid(f, c, p->world, usable);
}

enum rz_status plan_parse_size(const char *text, uint64_t *out, struct rz_err *err)
{
    char *end = NULL;
    double v = strtod(text, &end);
    static const char units[] = "KMGT";
    int shift = 0;
    if (end != text && *end != '\0') {
        const char *u = strchr(units, *end);
        if (u == NULL || *u == '\0' || end[1] != '\0')
            end = (char *)text;
        else
            shift = 10 * (int)(u - units + 1);
    }
    if (end == text || !(v > 0) || !isfinite(v))
        return rz_fail(err, RZ_ECONFIG, "size '%s': expected bytes, or a number with K, M, G "
                       "or T (binary, as Slurm's --mem)", text);
    *out = (uint64_t)ldexp(v, shift);
    return RZ_OK;
}
