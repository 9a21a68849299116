/* train_step.c: the trainer's optimizer step (see train_internal.h): ZeRO's sharded gradients,
 * norm and update; the model's hooks that hand gradients to comm and wait for the gather; one
 * step's micro-steps of forward and backward over the batch, the gradient norm, the step's one
 * small collective, the loss guard's verdict and the update; the sync check that the ranks still
 * hold one model; and validation, the forward passes over the held-out samples.  The run loop in
 * train.c calls tr_train_step, then tr_sync_check and tr_validate at a step boundary.  Also
 * tr_agree, the collective by which every rank learns that one failed (the loop and the
 * checkpoints use it). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hooks.h"
#include "core/util.h"
#include "data/data.h"
#include "health/watchdog.h"
#include "model/model.h"
#include "optim/optim.h"
#include "record/rank_log.h"
#include "train/guard.h"
#include "train/train_internal.h"

/* All ranks learn whether any rank failed; a rank that did not fail itself gets a message
 * pointing at the one that did. */
enum rz_status tr_agree(struct trainer *t, enum rz_status st, struct rz_err *err)
{
    int worst = 0;
    struct rz_err ignored;
    if (comm_max_int(t->comm, (int)st, &worst, &ignored) != RZ_OK)
        return st != RZ_OK ? st : rz_fail(err, RZ_EHANG, "%s", ignored.msg);
    if (st == RZ_OK && worst != RZ_OK)
        return rz_fail(err, (enum rz_status)worst, "rank %d: another rank failed (%s); see its "
                       "message", t->rank, rz_status_name((enum rz_status)worst));
    return st;
}

/* ---- ZeRO --------------------------------------------------------------------------------------
 * Stage 1 shards the Adam moments, stage 2 also the gradients (Rajbhandari et al. 2020, "ZeRO:
 * memory optimizations toward training trillion parameter models").  Rank r owns floats
 * [lo_r, hi_r) of the flat layout (rz_shard, boundaries at multiples of OPTIM_NORM_BLOCK, so the
 * global norm adds the same block sums at any world size: optim.h).  A step reduce-scatters the
 * gradients (stage 2: every micro-step, from segment buffers that live one micro-step), clips
 * by the global norm, updates the owned part, and all-gathers the parameters, overlapped with
 * the next forward (comm.h).  Whatever reads all parameters between steps (sync check,
 * validation, checkpoint) first waits for the gather (tr_params_complete). */

enum rz_status tr_zero_init(struct trainer *t, struct rz_err *err)
{
    size_t n = model_num_params(t->model);
    t->zero = (int)t->cfg->training.zero_stage;
    t->shard_lo = 0;
    t->shard_hi = n;
    if (t->zero == 0)
        return RZ_OK;
    rz_shard(n, t->world, t->rank, OPTIM_NORM_BLOCK, &t->shard_lo, &t->shard_hi);
    size_t part = t->shard_hi - t->shard_lo;
    t->gshard = rz_alloc_aligned((part > 0 ? part : 1) * sizeof(float));
    t->norm_blocks = calloc(optim_norm_blocks(n), sizeof *t->norm_blocks);
    if (t->gshard == NULL || t->norm_blocks == NULL)
        return rz_fail(err, RZ_ENOMEM, "ZeRO: out of memory for the gradient shard of %zu floats",
                       part);
    return RZ_OK;
}

/* Every parameter is present on this rank (waits for the gather of the last update). */
enum rz_status tr_params_complete(struct trainer *t, struct rz_err *err)
{
    return t->zero > 0 ? comm_params_finish(t->comm, err) : RZ_OK;
}

/* The global gradient norm from this rank's blocks and everyone else's (optim.h). */
static enum rz_status zero_grad_norm(struct trainer *t, double *norm, struct rz_err *err)
{
    size_t nb = optim_norm_blocks(model_num_params(t->model));
    memset(t->norm_blocks, 0, nb * sizeof *t->norm_blocks);
    optim_block_sumsq(t->norm_blocks, t->gshard, t->shard_lo, t->shard_hi);
    /* one owner per block, zeros elsewhere: the sum is exact */
    enum rz_status st = comm_sum_doubles(t->comm, t->norm_blocks, (int)nb, err);
    *norm = optim_norm_of_blocks(t->norm_blocks, nb);
    return st;
}

/* Clip, update the owned part, and start gathering the parameters. */
static enum rz_status zero_update(struct trainer *t, double lr, double norm, struct rz_err *err)
{
    size_t n = model_num_params(t->model);
    size_t bucket = (size_t)(t->cfg->comm.bucket_mb * 1024.0 * 1024.0);
    optim_clip(t->gshard, t->shard_hi - t->shard_lo, norm, t->cfg->optimizer.grad_clip);
    optim_step(t->optim, model_params(t->model) + t->shard_lo, t->gshard, lr);
    return comm_params_begin(t->comm, model_params(t->model), n, OPTIM_NORM_BLOCK, bucket, err);
}

/* Start this (micro-)step's gradient reduction: an allreduce of the whole buffer (stage 0) or a
 * reduce-scatter into the shard, accumulating from the second micro-step on (stage 2). */
static enum rz_status grads_begin(struct trainer *t, int64_t micro, bool local_norm,
                                  struct rz_err *err)
{
    size_t n = model_num_params(t->model);
    size_t bucket = (size_t)(t->cfg->comm.bucket_mb * 1024.0 * 1024.0);
    if (t->zero == 0) {
        comm_grads_begin(t->comm, model_grads(t->model), n, bucket, local_norm);
        return RZ_OK;
    }
    return comm_grads_begin_sharded(t->comm, t->gshard, n, OPTIM_NORM_BLOCK, bucket, local_norm,
                                    t->zero == 2 && micro > 0, err);
}

/* ---- the step ----------------------------------------------------------------------------------- */

static void hook_grad_ready(void *user, size_t offset, size_t count, float *data)
{
    comm_grads_ready(user, offset, count, data);
}

static void hook_grad_reuse(void *user, const float *data, size_t count)
{
    comm_grads_reuse(user, data, count);
}

static void hook_params_needed(void *user, size_t offset, size_t count)
{
    comm_params_need(user, offset, count);
}

static void hook_progress(void *user)
{
    comm_progress(user);
}

/* Fill inputs/targets (B, T) with samples first .. first + B - 1 of the training split, or
 * (val) of the validation split; rows from `valid` on repeat sample first + valid - 1. */
static void load_rows(struct trainer *t, bool val, uint64_t first, int64_t valid)
{
    int64_t B = t->dims.batch, T = t->dims.seq_len;
    for (int64_t b = 0; b < B; b++) {
        uint64_t i = first + (uint64_t)(b < valid ? b : valid - 1);
        if (val)
            data_val_sample(t->data, i, t->sample);
        else
            data_sample(t->data, i, t->sample);
        memcpy(t->inputs + b * T, t->sample, (size_t)T * sizeof(int32_t));
        memcpy(t->targets + b * T, t->sample + 1, (size_t)T * sizeof(int32_t));
    }
}

static void load_batch(struct trainer *t, uint64_t first)
{
    load_rows(t, false, first, t->dims.batch);
}

/* The model's hooks for micro-step `micro`: gradients go to comm when this micro-step reduces
 * (the last one; every one with ZeRO-2); ZeRO's forward waits for each range of the gather. */
static struct model_hooks hooks_for(const struct trainer *t, bool reduce)
{
    struct model_hooks h = {.user = t->comm, .grad_ready = reduce ? hook_grad_ready : NULL,
                            .grad_reuse = hook_grad_reuse, .progress = hook_progress,
                            .params_needed = t->zero > 0 ? hook_params_needed : NULL};
    return h;
}

/* The global gradient norm: of the whole reduced gradient (stage 0), or from every rank's blocks
 * (ZeRO). */
static enum rz_status grad_norm(struct trainer *t, double *norm, struct rz_err *err)
{
    if (t->zero > 0)
        return zero_grad_norm(t, norm, err);
    *norm = optim_grad_norm(model_grads(t->model), model_num_params(t->model));
    return RZ_OK;
}

/* A checkpoint behind training (train_ckpt.c) has its copy of what the optimizer is about to
 * change: wait for it (usually over long before), counting the wait as the checkpoint's stall. */
static void fence_snapshot(struct trainer *t)
{
    if (t->writer != NULL)
        t->stall_fence_s += ckpt_writer_fence(t->writer);
}

/* Clip and update: stage 0 the whole buffer, ZeRO this rank's part (and start the gather). */
static enum rz_status update(struct trainer *t, double lr, double norm, struct rz_err *err)
{
    if (t->zero > 0)
        return zero_update(t, lr, norm, err);
    float *g = model_grads(t->model);
    size_t n = model_num_params(t->model);
    optim_clip(g, n, norm, t->cfg->optimizer.grad_clip);
    optim_step(t->optim, model_params(t->model), g, lr);
    return RZ_OK;
}

/* Test-hook build only (RYZEN_TEST_BAD_GRAD=FIRST[-LAST][:FACTOR],..., core/hooks.h): on those
 * steps rank 0 scales its loss gradient by FACTOR (nan by default), so the guard must skip them. */
static float test_bad_grad(const struct trainer *t, float scale)
{
#if RZ_HOOKS_ENABLED
    long long step = (long long)t->step + 1;
    for (int i = 0; i < 4 && t->rank == 0; i++) {
        const struct rz_hook_bad_grad *b = &rz_hooks.bad_grad[i];
        if (b->first > 0 && step >= b->first && step <= b->last)
            return scale * (float)b->factor;
    }
#else
    (void)t;
#endif
    return scale;
}

/* The loss guard (guard.h) judges the step by the gathered figures, identical on every rank:
 * the summed loss and the largest gradient norm any rank computed (non-finite wins). */
static void guard_step(struct trainer *t, struct step_out *o)
{
    const struct cfg_training *c = &t->cfg->training;
    const struct guard_opts g = {.max_skipped = c->max_skipped_steps, .window = c->skip_window,
                                 .threshold = c->spike_threshold};
    double gnorm = 0.0;
    for (int r = 0; r < t->world; r++) {
        double v = t->live.gathered[(size_t)r * STEP_DOUBLES + STEP_GNORM];
        if (!isfinite(v) || !(v <= gnorm))
            gnorm = v;
        if (!isfinite(v))
            break;
    }
    o->guard = guard_judge(&t->guard, &g, t->step + 1, o->loss, gnorm, o->guard_why,
                           sizeof o->guard_why);
}

/* Test-hook build only (RYZEN_TEST_SLOW_RANK=r, RYZEN_TEST_SLOW_FACTOR=f, core/hooks.h): rank r
 * sleeps f-1 times the compute it just measured, so its step takes about f times its own: a
 * straggler of ratio about f that the report must name, on any CPU. */
static void test_slow_rank(const struct trainer *t, double compute_s)
{
    double s = (RZ_HOOK(slow_factor, 1.0) - 1.0) * compute_s;
    if (s > 0.0 && RZ_HOOK(slow_rank, -1) == t->rank)
        rz_sleep(s); /* a stop signal's handler only sets a flag */
}

/* The step's one small collective: every rank's loss, stop flag, gradient norm and live figures,
 * gathered on every rank.  The loss is summed in rank order on each rank, so every rank holds the
 * same bits.  Its time is the step's latency sample (allreduce_s). */
static enum rz_status step_collective(struct trainer *t, double local_loss, struct step_out *o,
                                      struct rz_err *err)
{
    double *mine = t->live.mine, *all = t->live.gathered;
    mine[STEP_LOSS] = local_loss;
    mine[STEP_STOP] = (double)health_stop_signal();
    mine[STEP_GNORM] = o->grad_norm;
    tr_live_pack(t, mine + STEP_FIXED, o->compute_s);
    double t0 = rz_now();
    enum rz_status st = comm_allgather_doubles(t->comm, mine, STEP_DOUBLES, all, err);
    o->allreduce_s = rz_now() - t0;
    if (st != RZ_OK)
        return st;
    double loss = 0.0;
    o->stop = 0;
    for (int r = 0; r < t->world; r++) {
        loss += all[r * STEP_DOUBLES + STEP_LOSS];
        o->stop |= all[r * STEP_DOUBLES + STEP_STOP] > 0.0;
    }
    o->loss = loss / (double)t->world;
    t->live.gathered_once = true;
    return RZ_OK;
}

/* One optimizer step: accum micro-steps of forward + backward; the last micro-step's backward
 * (every one's with ZeRO-2) starts the bucketed reduction as layers finish; then clip and Adam. */
enum rz_status tr_train_step(struct trainer *t, double lr, struct step_out *o,
                              struct rz_err *err)
{
    int64_t B = t->dims.batch, W = t->world;
    double loss = 0.0, sumsq = 0.0, part_s = 0.0, part_sq = 0.0, t0 = rz_now();
    /* the per-rank gradient norm is only reported by the sync check */
    int64_t every = t->cfg->health.sync_check_interval;
    bool local_norm = every > 0 && (t->step + 1) % every == 0;
    enum rz_status st = RZ_OK;
    o->comm_s = o->grad_allreduce_s = 0.0;
    model_zero_grads(t->model);
    if (t->zero < 2)
        st = grads_begin(t, 0, local_norm, err);
    for (int64_t u = 0; st == RZ_OK && u < t->accum; u++) {
        bool reduce = t->zero == 2 || u + 1 == t->accum;
        struct model_hooks h = hooks_for(t, reduce);
        model_set_hooks(t->model, &h);
        if (t->zero == 2)
            st = grads_begin(t, u, local_norm, err);
        uint64_t first = (uint64_t)(t->step * t->global_batch + u * B * W + t->rank * B);
        load_batch(t, first);
        /* dropout masks by (seed, step, global sample index): the same at any world size */
        model_set_dropout(t->model, true, (uint64_t)t->cfg->training.seed, (uint64_t)t->step,
                          first);
        loss += (double)model_forward(t->model, t->inputs, t->targets);
        /* 1/(accum*W): the reduction's sum is then the mean over the global batch */
        model_backward(t->model, test_bad_grad(t, 1.0f / (float)(t->accum * W)));
        if (st == RZ_OK && t->zero == 2) {
            st = comm_grads_finish(t->comm, &part_s, &part_sq, err);
            o->comm_s += part_s;
            o->grad_allreduce_s += comm_grads_span(t->comm);
            sumsq += part_sq;
        }
    }
    /* not the waits: for the gather in forward (ZeRO) and, with ZeRO-2, each micro-step's */
    test_slow_rank(t, rz_now() - t0 - o->comm_s - comm_params_waited(t->comm));
    o->compute_s = rz_now() - t0 - o->comm_s - comm_params_waited(t->comm);
    health_sync_arrived(t->watchdog, t->step + 1);
    if (st == RZ_OK && t->zero < 2) {
        st = comm_grads_finish(t->comm, &part_s, &sumsq, err);
        o->comm_s += part_s;
        o->grad_allreduce_s += comm_grads_span(t->comm);
    }
    if (st != RZ_OK)
        return st;
    /* the norm of this rank's own mean gradient (ZeRO-2 with accumulation: of its micro-steps'
     * gradients taken apart, the only ones it ever holds) */
    o->local_gnorm = sqrt(sumsq) * (double)W;
    double t1 = rz_now();
    st = grad_norm(t, &o->grad_norm, err);
    o->optim_s = rz_now() - t1;
    if (st == RZ_OK)
        st = step_collective(t, loss / (double)t->accum, o, err);
    if (st != RZ_OK)
        return st;
    guard_step(t, o);
    if (o->guard != GUARD_ACCEPT)
        return RZ_OK; /* skipped: no update; the data position advances with the step */
    fence_snapshot(t);
    t1 = rz_now();
    st = update(t, lr, o->grad_norm, err);
    o->optim_s += rz_now() - t1;
    return st;
}

/* Test-hook build only (RYZEN_TEST_DESYNC_RANK=r, core/hooks.h): perturb one parameter on rank r
 * so the next sync check must catch it. */
static void test_desync(struct trainer *t)
{
    if (RZ_HOOK(desync_rank, -1) == t->rank && t->world > 1) {
        fence_snapshot(t);
        model_params(t->model)[0] += 1e-3f;
    }
}

static enum rz_status sync_check(struct trainer *t, const struct step_out *o,
                                 struct rank_step *s, struct rz_err *err)
{
    enum rz_status st0 = tr_params_complete(t, err);
    if (st0 != RZ_OK)
        return st0;
    test_desync(t);
    struct comm_sync sync;
    enum rz_status st = comm_sync_check(t->comm, model_params(t->model),
                                        model_num_params(t->model), o->local_gnorm,
                                        o->grad_norm, &sync, err);
    if (st != RZ_OK)
        return st;
    s->has_sync = 1;
    s->sync_ok = sync.agree;
    s->param_spread = sync.param_spread;
    s->gnorm_pre_min = sync.pre_min;
    s->gnorm_pre_max = sync.pre_max;
    s->gnorm_post_spread = sync.post_spread;
    if (!sync.agree)
        return rz_fail(err, RZ_EHANG, "gradient sync check at step %lld: parameters differ on "
                       "rank(s) %s from rank 0 (max relative spread %.3g); the ranks no longer "
                       "train one model", (long long)t->step, sync.bad_ranks, sync.param_spread);
    return RZ_OK;
}

/* The check's verdict is the same on every rank (it gathers every rank's hash), but its own
 * failures (memory, the gather in flight) may not be: its outcome is agreed when it ran.  A step
 * without it adds no collective to the step's own (a failure after it, such as the metrics
 * write, ends the rank and comm_abort ends the others).  One blocking all-reduce less per step:
 * on the dev cluster (half a core a node, a 250 Mbit/s link, both nearly used by phase2a) its
 * time moved into the next gradient all-reduce, the same wall time per step
 * (docs/reliability.md); where latency bounds the step it is one latency less per step. */
enum rz_status tr_sync_check(struct trainer *t, const struct step_out *o,
                              struct rank_step *s, struct rz_err *err)
{
    int64_t every = t->cfg->health.sync_check_interval;
    if (every <= 0 || t->step % every != 0)
        return RZ_OK;
    return tr_agree(t, sync_check(t, o, s, err), err);
}

/* ---- validation ------------------------------------------------------------------------------- */

/* The fixed validation set is held-out samples 0 .. E-1 (data_val_sample), cut into chunks of the
 * per-rank batch B; chunk c runs on rank c mod W, the last one padded with copies of sample E-1
 * whose losses are dropped.  A sample's loss is the mean of its T token losses.  The per-sample
 * losses are gathered by index (a sum with one non-zero term per index, so exact) and averaged in
 * index order: every rank gets the same figure, and any world size gets the same figure as one
 * rank with the same per-rank batch, since each chunk runs the same shapes on the same samples. */
static void validate_chunk(struct trainer *t, int64_t first)
{
    int64_t B = t->dims.batch, T = t->dims.seq_len, E = t->cfg->training.eval_samples;
    int64_t valid = E - first < B ? E - first : B;
    load_rows(t, true, (uint64_t)first, valid);
    model_set_dropout(t->model, false, 0, 0, 0);
    model_forward(t->model, t->inputs, t->targets);
    const float *loss = model_token_losses(t->model); /* (B, T) */
    for (int64_t b = 0; b < valid; b++) {
        double sum = 0.0;
        for (int64_t i = 0; i < T; i++)
            sum += (double)loss[b * T + i];
        t->val_losses[first + b] = sum / (double)T;
    }
}

enum rz_status tr_validate(struct trainer *t, struct rz_err *err)
{
    int64_t B = t->dims.batch, E = t->cfg->training.eval_samples, chunks = (E + B - 1) / B;
    enum rz_status st0 = tr_params_complete(t, err);
    if (st0 != RZ_OK)
        return st0;
    memset(t->val_losses, 0, (size_t)E * sizeof *t->val_losses);
    for (int64_t c = t->rank; c < chunks; c += t->world) {
        validate_chunk(t, c * B);
        health_progress(t->watchdog); /* a long validation that moves is not a hang */
    }
    enum rz_status st = comm_sum_doubles(t->comm, t->val_losses, (int)E, err);
    if (st != RZ_OK)
        return st;
    double sum = 0.0;
    for (int64_t j = 0; j < E; j++)
        sum += t->val_losses[j];
    t->val_loss = sum / (double)E;
    t->val_step = t->step;
    return RZ_OK;
}

/* Every training.eval_interval steps, when the data holds out a split. */
bool tr_validation_due(const struct trainer *t)
{
    int64_t every = t->cfg->training.eval_interval;
    return data_has_val(t->data) && every > 0 && t->step % every == 0;
}
