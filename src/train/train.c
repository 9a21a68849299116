/* train.c: one rank's training run (see train.h).  Set-up translates the config into each
 * module's typed options once; the step is a handful of calls; everything that needs all ranks
 * (stop signals, checkpoint commits, sync checks) happens at a step boundary, where every rank
 * takes the same branch because the decision itself came out of a collective.  The checkpoints
 * (train_ckpt.c), what the trainer prints (train_log.c) and the live metrics (train_live.c) are
 * files of their own; train_internal.h holds what they share. */
#include "config.h"

#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/hooks.h"
#include "core/sha256.h"
#include "core/util.h"
#include "data/data.h"
#include "health/health.h"
#include "kernels/kernels.h"
#include "metrics/live.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "optim/optim.h"
#include "plan/plan.h"
#include "train/guard.h"
#include "train/train_internal.h"
#include "train/train_net.h"

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

static void trainer_free(struct trainer *t)
{
    free(t->live.gathered);
    free(t->live.ranks);
    free(t->live.hosts);
    free(t->live.host_names);
    health_watchdog_stop(t->watchdog);
    metrics_close(t->metrics);
    optim_destroy(t->optim);
    data_destroy(t->data);
    model_destroy(t->model);
    kern_ctx_destroy(t->kern);
    comm_finalize(t->own_comm);
    free(t->sample);
    free(t->inputs);
    free(t->targets);
    free(t->config_yaml);
    free(t->val_losses);
    free(t->gshard);
    free(t->norm_blocks);
    memset(t, 0, sizeof *t);
}

/* ---- set-up ------------------------------------------------------------------------------------ */

static struct model_dims dims_from_cfg(const struct cfg *c)
{
    struct plan_settings s = plan_settings_of(c);
    return plan_model_dims(c, &s); /* the planner's mapping, so the plan is of this model */
}

static enum rz_status optim_opts_from_cfg(struct optim_opts *o, const struct cfg *c,
                                          struct rz_err *err)
{
    memset(o, 0, sizeof *o);
    enum rz_status st = optim_kind_parse(c->optimizer.name, &o->kind, err);
    if (st == RZ_OK)
        st = optim_schedule_parse(c->optimizer.schedule, &o->schedule, err);
    o->lr = c->optimizer.lr;
    o->beta1 = c->optimizer.beta1;
    o->beta2 = c->optimizer.beta2;
    o->eps = c->optimizer.eps;
    o->weight_decay = c->optimizer.weight_decay;
    o->grad_clip = c->optimizer.grad_clip;
    o->warmup_steps = c->optimizer.warmup_steps;
    o->total_steps = c->training.steps;
    o->min_lr_ratio = c->optimizer.min_lr_ratio;
    return st;
}

/* The resolved config as YAML text (stored in checkpoints) and its SHA-256. */
static enum rz_status snapshot_config(struct trainer *t, struct rz_err *err)
{
    size_t len = 0;
    FILE *f = open_memstream(&t->config_yaml, &len);
    if (f == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory for the config text");
    cfg_write_yaml(t->cfg, f);
    if (fclose(f) != 0 || t->config_yaml == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory for the config text");
    rz_sha256_hex(t->config_yaml, len, t->config_sha256);
    return RZ_OK;
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

static enum rz_status zero_init(struct trainer *t, struct rz_err *err)
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

static enum rz_status trainer_init(struct trainer *t, struct rz_err *err)
{
    const struct cfg *c = t->cfg;
    enum kern_backend backend;
    struct data_opts dopts = {.vocab_size = c->model.vocab_size, .seq_len = c->model.seq_len,
                              .seed = (uint64_t)c->data.seed, .path = c->data.path,
                              .markov_branching = c->data.markov_branching,
                              .token_bytes = data_token_bytes(c->data.token_dtype),
                              .val_fraction = c->data.val_fraction, .val_path = c->data.val_path};
    struct optim_opts oopts;
    enum rz_status st = kern_backend_parse(c->kernels.backend, &backend, err);
    if (st == RZ_OK) st = data_kind_parse(c->data.kind, &dopts.kind, err);
    if (st == RZ_OK) st = optim_opts_from_cfg(&oopts, c, err);
    if (st == RZ_OK) st = kern_ctx_create(&t->kern, backend, err);
    if (st == RZ_OK && t->dims.bf16) st = kern_check_bf16(t->kern, err); /* no silent fallback */
    if (st == RZ_OK) st = model_create(&t->model, &t->dims, t->kern, err);
    if (st == RZ_OK) st = data_create(&t->data, &dopts, err);
    uint64_t rss0 = rz_rss_bytes(); /* the optimizer's memory, measured (pages are zeroed) */
    if (st == RZ_OK) st = zero_init(t, err);
    if (st == RZ_OK) st = optim_create(&t->optim, &oopts, t->shard_hi - t->shard_lo, err);
    t->optim_rss = rz_rss_bytes() - rss0;
    if (st == RZ_OK) st = metrics_open(&t->metrics, t->opts->run_dir, t->opts->run_id, t->rank, err);
    if (st == RZ_OK) st = snapshot_config(t, err);
    if (st != RZ_OK)
        return st;
    size_t n = (size_t)(t->dims.batch * t->dims.seq_len);
    t->sample = calloc((size_t)t->dims.seq_len + 1, sizeof *t->sample);
    t->inputs = calloc(n, sizeof *t->inputs);
    t->targets = calloc(n, sizeof *t->targets);
    t->val_losses = calloc((size_t)c->training.eval_samples, sizeof *t->val_losses);
    if (t->sample == NULL || t->inputs == NULL || t->targets == NULL || t->val_losses == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory for token buffers");
    model_init_params(t->model, (uint64_t)c->training.seed);
    return RZ_OK;
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
    if (s > 0.0 && RZ_HOOK(slow_rank, -1) == t->rank) {
        struct timespec ts = {(time_t)s, (long)(fmod(s, 1.0) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ; /* a stop signal's handler only sets a flag */
    }
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
static enum rz_status train_step(struct trainer *t, double lr, struct step_out *o,
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
    t1 = rz_now();
    st = update(t, lr, o->grad_norm, err);
    o->optim_s += rz_now() - t1;
    return st;
}

/* Test-hook build only (RYZEN_TEST_DESYNC_RANK=r, core/hooks.h): perturb one parameter on rank r
 * so the next sync check must catch it. */
static void test_desync(struct trainer *t)
{
    if (RZ_HOOK(desync_rank, -1) == t->rank && t->world > 1)
        model_params(t->model)[0] += 1e-3f;
}

static enum rz_status sync_check(struct trainer *t, const struct step_out *o,
                                 struct metrics_step *s, struct rz_err *err)
{
    int64_t every = t->cfg->health.sync_check_interval;
    if (every <= 0 || t->step % every != 0)
        return RZ_OK;
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

static enum rz_status validate(struct trainer *t, struct rz_err *err)
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
static bool validation_due(const struct trainer *t)
{
    int64_t every = t->cfg->training.eval_interval;
    return data_has_val(t->data) && every > 0 && t->step % every == 0;
}

/* ---- the loop ----------------------------------------------------------------------------------- */

struct loop_stats {
    double t_start, t_steady, comm_total, step_total;
    int64_t steady_steps;
};

/* Say what the loss guard did; after max_skipped_steps skips in the window, stop the run:
 * RZ_EHEALTH with end_reason "diverged", so the wrapper rolls back to the last good checkpoint.
 * The parameters are not damaged (skipped steps changed nothing), but the run no longer learns. */
static enum rz_status guard_after_step(struct trainer *t, const struct step_out *o,
                                       struct train_result *r, struct rz_err *err)
{
    r->skipped_steps = t->guard.skipped;
    if (o->guard == GUARD_ACCEPT)
        return RZ_OK;
    const struct cfg_training *c = &t->cfg->training;
    const struct guard_opts g = {.max_skipped = c->max_skipped_steps, .window = c->skip_window};
    char steps[256];
    int n = guard_recent_list(&t->guard, &g, t->step, steps, sizeof steps);
    tr_say(t, "loss guard: skipped step %lld: %s (%d skipped in the last %lld steps, %lld stop the "
        "run)", (long long)t->step, o->guard_why, n, (long long)c->skip_window,
        (long long)c->max_skipped_steps);
    if (o->guard != GUARD_STOP)
        return RZ_OK;
    snprintf(r->end_reason, sizeof r->end_reason, "diverged");
    return rz_fail(err, RZ_EHEALTH, "loss guard: %d steps skipped within %lld steps (steps %s; "
                   "the last: %s); stopping without a checkpoint so the run can roll back to "
                   "the last good one (lower optimizer.lr, set optimizer.grad_clip, or raise "
                   "training.max_skipped_steps)", n, (long long)c->skip_window, steps,
                   o->guard_why);
}

static enum rz_status after_step(struct trainer *t, const struct step_out *o, double dt,
                                 struct loop_stats *ls, struct train_result *r,
                                 struct rz_err *err)
{
    double flops = model_flops_per_sample(&t->dims);
    struct metrics_step s = {
        .step = t->step, .samples_seen = t->step * t->global_batch,
        .run_step = t->step - r->start_step, .loss = o->loss,
        .lr = t->last_lr, .grad_norm = o->grad_norm, .step_time_s = dt, .comm_time_s = o->comm_s,
        .samples_per_sec = (double)t->global_batch / dt,
        .tokens_per_sec = (double)(t->global_batch * t->dims.seq_len) / dt,
        .mfu = r->peak_gflops > 0 ? flops * (double)t->global_batch / (double)t->world / dt /
                                        (r->peak_gflops * 1e9) : 0.0,
        .rss_bytes = rz_rss_bytes(), .allreduce_s = o->allreduce_s, .world_size = t->world,
        .compute_time_s = o->compute_s, .grad_allreduce_s = o->grad_allreduce_s,
        .time = metrics_unix_now(),
        .skipped = o->guard != GUARD_ACCEPT,
        .skip_reason = o->guard_why, .skipped_total = t->guard.skipped};
    metrics_window_add(&t->live.window, dt, o->compute_s, o->comm_s, o->allreduce_s,
                       o->grad_allreduce_s);
    enum rz_status st = sync_check(t, o, &s, err);
    st = tr_agree(t, st, err);
    if (st == RZ_OK && validation_due(t)) {
        st = validate(t, err);
        s.has_val = 1;
        s.val_loss = t->val_loss;
    }
    if (st != RZ_OK)
        return st;
    st = metrics_write(t->metrics, &s, err);
    if (st != RZ_OK)
        return st;
    if (t->opts->losses != NULL)
        t->opts->losses[t->step - 1] = (float)o->loss;
    if (t->step == r->start_step + 1)
        r->first_loss = o->loss;
    r->final_loss = o->loss;
    t->last_loss = o->loss;
    t->loss_sum += isfinite(o->loss) ? o->loss : 0.0; /* a skipped non-finite step adds nothing */
    ls->comm_total += o->comm_s;
    ls->step_total += dt;
    int64_t steps = t->cfg->training.steps, done = t->step - r->start_step;
    if (t->step == r->start_step + 1 || t->step % t->cfg->training.log_interval == 0 ||
        t->step == steps || s.has_val)
        tr_print_progress(t, &s, (rz_now() - ls->t_start) / (double)done *
                          (double)(steps - t->step), ls->comm_total / ls->step_total);
    return guard_after_step(t, o, r, err);
}

/* Test-hook build only (RYZEN_TEST_HOLD=STEP[,STEP...]:FILE, core/hooks.h): once this run has
 * completed step STEP (metrics written, a checkpoint due at STEP committed) and before step
 * STEP+1, wait until FILE exists or this process got a stop signal, so a test can act on a job
 * that cannot get past STEP however fast the CPU is (STEP 0: a fresh run, before step 1).  The
 * wait is progress to the watchdog: only a rank
 * stopped while holding, which leaves the others in the next step's collective once they go on,
 * is a hang.  Bounded by RYZEN_TEST_HOLD_MAX_S.  Returns the seconds held, which the run's
 * duration and throughput leave out (a test's pause is not the product's speed). */
static double test_hold(struct trainer *t, const struct train_result *r, int64_t stop_at)
{
#if RZ_HOOKS_ENABLED
    const struct rz_hook_hold *h = &rz_hooks.hold;
    bool here = false;
    for (int i = 0; i < h->n; i++)
        here |= h->steps[i] == t->step;
    bool computed = r->start_step < t->step || (t->step == 0 && r->start_step == 0);
    if (!here || !computed || t->step >= stop_at)
        return 0.0;
    if (t->rank == 0) {
        fprintf(stderr, "ryzen-train: test hook: holding after step %lld until %s exists or a "
                "stop signal\n", (long long)t->step, h->file);
        fflush(stderr);
    }
    const struct timespec nap = {0, 10 * 1000 * 1000};
    double t0 = rz_now();
    while (access(h->file, F_OK) != 0 && !health_stop_signal()) {
        if (rz_now() - t0 > h->max_s) {
            fprintf(stderr, "ryzen-train: rank %d: test hook: %s still missing after %.0f s "
                    "(RYZEN_TEST_HOLD_MAX_S): going on after step %lld\n", t->rank, h->file,
                    h->max_s, (long long)t->step);
            break;
        }
        health_progress(t->watchdog);
        nanosleep(&nap, NULL);
    }
    health_progress(t->watchdog);
    return rz_now() - t0;
#else
    (void)t;
    (void)r;
    (void)stop_at;
    return 0.0;
#endif
}

static enum rz_status run_loop(struct trainer *t, struct train_result *r, struct rz_err *err)
{
    const struct cfg *c = t->cfg;
    int64_t steps = c->training.steps, warm = r->start_step + c->training.warmup_bench;
    int64_t stop_at = t->opts->stop_at_step > 0 && t->opts->stop_at_step < steps
                          ? t->opts->stop_at_step : steps;
    struct loop_stats ls = {.t_start = rz_now()};
    ls.t_steady = ls.t_start;
    double held = test_hold(t, r, stop_at); /* RYZEN_TEST_HOLD=0:FILE */
    train_net_start(&t->live.net, t->live.node_first, t->rank, comm_host(t->comm));
    ls.t_start += held;
    ls.t_steady += held;
    int stop = 0;
    enum rz_status st = comm_max_int(t->comm, health_stop_signal(), &stop, err);
    if (st == RZ_OK && stop) {
        tr_say(t, "stop signal before the first step: exiting without a new checkpoint");
        return RZ_ESIGNAL;
    }
    while (st == RZ_OK && t->step < stop_at) {
        if (t->step == warm) {
            ls.t_steady = rz_now();
            tr_profile_start(t);
        }
        struct step_out o;
        double t0 = rz_now();
        health_step_begin(t->watchdog, t->step + 1);
        t->last_lr = optim_lr_at(&t->optim->opts, t->step);
        st = train_step(t, t->last_lr, &o, err);
        if (st != RZ_OK)
            break;
        t->step++;
        double dt = rz_now() - t0;
        health_step_end(t->watchdog, t->step, dt);
        t->train_time += dt;
        if (t->step > warm) {
            ls.steady_steps++;
            tr_profile_add(t, &o, dt);
        }
        st = after_step(t, &o, dt, &ls, r, err);
        int64_t every = c->checkpoint.interval;
        if (st == RZ_OK && (o.stop || (every > 0 && t->step % every == 0)))
            st = tr_save_checkpoint(t, r, err);
        if (st == RZ_OK)
            tr_live_step_done(t);
        if (st == RZ_OK && o.stop) {
            tr_say(t, "stop signal: checkpointed at step %lld; exiting %d so the job is requeued",
                (long long)t->step, RZ_EXIT_REQUEUE);
            st = RZ_ESIGNAL;
        }
        if (st == RZ_OK) {
            held = test_hold(t, r, stop_at);
            ls.t_start += held;
            ls.t_steady += held;
        }
    }
    kern_ctx_profile(t->kern, NULL);
    if (st == RZ_OK)
        st = tr_save_checkpoint(t, r, err); /* the end of the run or of the segment */
    if (st == RZ_OK || st == RZ_ESIGNAL) {
        enum rz_status s2 = tr_params_complete(t, err); /* no gather left in flight */
        st = st == RZ_OK ? s2 : st;
    }
    if (st == RZ_OK && data_has_val(t->data) && t->val_step != t->step) {
        st = validate(t, err); /* the parameters the run ends with */
        if (st == RZ_OK)
            tr_say(t, "validation at step %lld: loss %.4f over %lld held-out samples",
                (long long)t->step, t->val_loss, (long long)c->training.eval_samples);
    }
    r->val_step = t->val_step;
    r->val_loss = t->val_loss;
    tr_live_write(t, false); /* the last file says the run no longer trains, whatever ended it */
    double t_end = rz_now();
    double span = ls.steady_steps > 0 ? t_end - ls.t_steady : t_end - ls.t_start;
    int64_t measured = ls.steady_steps > 0 ? ls.steady_steps : t->step - r->start_step;
    r->duration_s = t_end - ls.t_start;
    r->steps = t->step;
    r->avg_loss = t->step > 0 ? t->loss_sum / (double)t->step : 0.0;
    r->samples_per_sec = span > 0 ? (double)(measured * t->global_batch) / span : 0.0;
    r->mfu = r->peak_gflops > 0 ? model_flops_per_sample(&t->dims) * r->samples_per_sec /
                                      (double)t->world / (r->peak_gflops * 1e9) : 0.0;
    r->comm_share = ls.step_total > 0 ? ls.comm_total / ls.step_total : 0.0;
    return st;
}

/* The planner's peak RSS for this rank with the settings the run really has (an elastic resume
 * may have changed the micro-batch); rank 0 also stages a tensor's moments at a ZeRO checkpoint. */
static uint64_t predict_peak(const struct trainer *t)
{
    struct plan_settings s = plan_settings_of(t->cfg);
    struct plan p;
    s.batch = t->dims.batch;
    s.accum = t->accum;
    if (plan_compute(&p, t->cfg, t->world, &s, NULL) != RZ_OK)
        return 0;
    return t->rank == 0 ? p.peak_rank0 : p.peak;
}

/* ---- summary ------------------------------------------------------------------------------------ */

static enum rz_status write_summary(struct trainer *t, const struct train_result *r,
                                    struct rz_err *err)
{
    struct metrics_rank_result mine = {
        .rank = t->rank, .steps = r->steps, .avg_loss = r->avg_loss, .final_loss = r->final_loss,
        .samples_per_sec = r->samples_per_sec / (double)t->world, .comm_share = r->comm_share,
        .duration_sec = r->duration_s, .peak_rss_bytes = r->peak_rss_bytes,
        .predicted_peak_rss_bytes = r->predicted_peak_rss_bytes,
        .optimizer_rss_bytes = t->optim_rss};
    snprintf(mine.host, sizeof mine.host, "%s", comm_host(t->comm));
    struct metrics_rank_result *all = calloc((size_t)t->world, sizeof *all);
    if (all == NULL)
        return rz_fail(err, RZ_ENOMEM, "summary: out of memory");
    enum rz_status st = train_net_summary(&t->live.net, t->comm,
                                          (const char(*)[64])t->live.hosts, &mine, err);
    if (st == RZ_OK)
        st = comm_allgather_bytes(t->comm, &mine, sizeof mine, all, err);
    if (st == RZ_OK && t->rank == 0) {
        struct metrics_summary s = {
            .num_processes = t->world, .avg_loss = r->avg_loss, .final_loss = r->final_loss,
            .total_duration_sec = r->duration_s, .samples_per_sec = r->samples_per_sec,
            .tokens_per_sec = r->samples_per_sec * (double)t->dims.seq_len, .mfu = r->mfu,
            .peak_gflops = r->peak_gflops, .comm_share = r->comm_share,
            .allreduce_latency_s = r->allreduce_latency_s, .restarts = t->restarts,
            .resumed_from = r->resumed_from, .steps = r->steps,
            .num_parameters = r->num_parameters, .entropy_floor = r->entropy_floor,
            .config_path = t->cfg->source, .ranks = all, .has_val = r->val_step >= 0,
            .val_step = r->val_step,
            .val_loss = r->val_loss, .val_samples = t->cfg->training.eval_samples};
        for (int q = 0; q < t->world; q++) { /* the worst rank, measured and predicted */
            s.peak_rss_bytes = all[q].peak_rss_bytes > s.peak_rss_bytes ? all[q].peak_rss_bytes
                                                                        : s.peak_rss_bytes;
            s.predicted_peak_rss_bytes =
                all[q].predicted_peak_rss_bytes > s.predicted_peak_rss_bytes
                    ? all[q].predicted_peak_rss_bytes : s.predicted_peak_rss_bytes;
        }
        st = metrics_write_summary(t->opts->run_dir, &s, err);
    }
    free(all);
    return tr_agree(t, st, err);
}

/* ---- entry -------------------------------------------------------------------------------------- */

/* Test-hook build only (RYZEN_TEST_STOP_AT_START, core/hooks.h): this rank freezes before
 * step 1, as on a node that stops, so a test can see the start's watchdog end the others. */
static void test_stop_at_start(const struct trainer *t)
{
    if (RZ_HOOK(stop_at_start_rank, -1) == t->rank)
        raise(SIGSTOP);
}

static enum rz_status prepare(struct trainer *t, const struct train_opts *opts,
                              struct train_result *r, struct rz_err *err)
{
    memset(t, 0, sizeof *t);
    t->cfg = opts->cfg;
    t->opts = opts;
    t->saved_step = -1;
    t->val_step = -1;
    t->comm = opts->comm;
    if (t->comm == NULL) {
        enum rz_status st = comm_create_local(&t->own_comm, err);
        if (st != RZ_OK)
            return st;
        t->comm = t->own_comm;
    }
    t->rank = comm_rank(t->comm);
    t->world = comm_size(t->comm);
    t->dims = dims_from_cfg(t->cfg);
    t->accum = t->cfg->training.grad_accum;
    t->global_batch = t->dims.batch * t->world * t->accum;
    snprintf(t->ckpt_dir, sizeof t->ckpt_dir, "%s/checkpoints", opts->run_dir);
    /* Watched from here: a rank stopped while choosing or loading the checkpoint, or in the
     * first agreements, holds the others in a collective as one stopped in a step does. */
    const struct cfg *c = t->cfg;
    struct health_watchdog_opts wopts = {
        .run_dir = opts->run_dir, .attempt_dir = opts->attempt_dir,
        .host = comm_host(t->comm), .rank = t->rank, .world = t->world,
        .floor_s = c->health.watchdog_floor_s, .factor = c->health.watchdog_factor,
        .checkpoint_s = c->health.watchdog_checkpoint_s};
    char path[4096];
    enum rz_status st = tr_agree(t, health_watchdog_start(&t->watchdog, &wopts, err), err);
    if (st == RZ_OK) test_stop_at_start(t);
    if (st == RZ_OK) st = tr_choose_checkpoint(t, path, sizeof path, err);
    if (st == RZ_OK) st = tr_plan_resume(t, path, err);
    if (st == RZ_OK) st = tr_agree(t, trainer_init(t, err), err);
    if (st == RZ_OK) st = tr_agree(t, tr_live_init(t, err), err);
    if (st == RZ_OK && path[0] != '\0')
        st = tr_load_checkpoint(t, path, r, err);
    return st;
}

enum rz_status train_run(const struct train_opts *opts, struct train_result *r,
                         struct rz_err *err)
{
    struct trainer t;
    memset(r, 0, sizeof *r);
    r->val_step = -1;
    enum rz_status st = prepare(&t, opts, r, err);
    if (st == RZ_OK) {
        r->predicted_peak_rss_bytes = predict_peak(&t);
        r->num_parameters = (int64_t)model_num_params(t.model);
        r->entropy_floor = data_entropy_floor(t.data);
        r->peak_gflops = tr_measure_peak(&t, opts->peak_seconds);
        st = comm_allreduce_latency(t.comm, 20, &r->allreduce_latency_s, err);
    }
    char hosts[512] = "";
    if (st == RZ_OK)
        st = tr_describe_hosts(&t, hosts, sizeof hosts, err);
    if (st == RZ_OK) {
        tr_print_banner(&t, r->peak_gflops, r->allreduce_latency_s, hosts);
        st = run_loop(&t, r, err);
        if (st == RZ_OK && opts->profile)
            tr_print_profile(&t, r);
    }
    r->peak_rss_bytes = rz_peak_rss_bytes();
    if (st == RZ_OK || st == RZ_ESIGNAL) {
        enum rz_status s2 = write_summary(&t, r, err);
        if (st == RZ_OK)
            st = s2;
    }
    trainer_free(&t);
    return st;
}
