/* train.c: one rank's training run (see train.h).  Set-up translates the config into each
 * module's typed options once; the step is a handful of calls; everything that needs all ranks
 * (stop signals, checkpoint commits, sync checks) happens at a step boundary, where every rank
 * takes the same branch because the decision itself came out of a collective. */
#include "config.h"

#include "train/train.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
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
#include "train/train_net.h"

/* The step's one small collective (step_collective): per rank, these doubles, then the rank's
 * live figures (struct metrics_rank_live). */
enum { STEP_LOSS, STEP_STOP, STEP_GNORM, STEP_FIXED };
#define STEP_DOUBLES (STEP_FIXED + METRICS_LIVE_DOUBLES)

/* Live metrics (metrics/live.h): the rank's window, what the last collective gathered, and the
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
    struct metrics_log *metrics;
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
    double last_lr, last_loss;
    struct train_live live;
    /* ZeRO (training.zero_stage 1 or 2: zero_* functions) */
    int zero;                  /* the stage; 0: every rank holds everything */
    size_t shard_lo, shard_hi; /* this rank's part of the flat layout (rz_shard) */
    float *gshard;             /* (hi - lo) reduced gradient of the part */
    double *norm_blocks;       /* (optim_norm_blocks(n)) block sums of squares (optim.h) */
    uint64_t optim_rss;        /* RSS grown by the moments (and ZeRO's gradient shard) */
    /* validation (validate) */
    double *val_losses;        /* (eval_samples) per-sample losses, gathered by sample index */
    int64_t val_step;          /* step of the last validation in this process (-1: none) */
    double val_loss;
    struct ckpt_guard guard;   /* the loss guard's state, carried through checkpoints */
    struct profile prof;
};

/* All ranks learn whether any rank failed; a rank that did not fail itself gets a message
 * pointing at the one that did. */
static enum rz_status agree(struct trainer *t, enum rz_status st, struct rz_err *err)
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

static void vsay(const struct trainer *t, FILE *f, const char *fmt, va_list ap)
{
    if (t->rank != 0 || f == NULL)
        return;
    fputs("ryzen-train: ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
}

/* A decision (resume, quarantine, checkpoint, stop): printed even with --quiet. */
static void say(const struct trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct trainer *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(t, t->opts->events, fmt, ap);
    va_end(ap);
}

/* Banner information: quiet with --quiet. */
static void inform(const struct trainer *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void inform(const struct trainer *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(t, t->opts->log, fmt, ap);
    va_end(ap);
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
 * validation, checkpoint) first waits for the gather (params_complete). */

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
static enum rz_status params_complete(struct trainer *t, struct rz_err *err)
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

/* ZeRO: rank 0's checkpoint writer asks for each tensor's moments in turn (ckpt.h: m of every
 * tensor in table order, then v); every rank takes part in each gather. */
static enum rz_status gather_moment(struct trainer *t, size_t k, float *out, struct rz_err *err)
{
    size_t count;
    const struct model_tensor *table = model_tensors(t->model, &count);
    const struct model_tensor *e = &table[k % count];
    const float *shard = k < count ? t->optim->m : t->optim->v;
    return comm_gather_range(t->comm, shard, model_num_params(t->model), OPTIM_NORM_BLOCK,
                             e->offset, e->offset + (size_t)(e->rows * e->cols), out, err);
}

struct moment_fetch {
    struct trainer *t;
    size_t calls;              /* gathers made so far */
};

static enum rz_status fetch_moment(void *user, int which, size_t index, float *out,
                                   struct rz_err *err)
{
    struct moment_fetch *f = user;
    size_t count;
    model_tensors(f->t->model, &count);
    f->calls++;
    return gather_moment(f->t, (size_t)which * count + index, out, err);
}

/* The gathers of a checkpoint from number `from` on: what ranks other than 0 do while rank 0
 * writes, and what rank 0 does after a write that stopped early, so no rank is left waiting. */
static enum rz_status gather_moments_from(struct trainer *t, size_t from, struct rz_err *err)
{
    size_t count;
    const struct model_tensor *table = model_tensors(t->model, &count);
    float *out = NULL;
    if (t->rank == 0 && from < 2 * count) {
        size_t largest = 0;
        for (size_t i = 0; i < count; i++)
            largest = (size_t)(table[i].rows * table[i].cols) > largest
                          ? (size_t)(table[i].rows * table[i].cols) : largest;
        if ((out = malloc(largest * sizeof *out)) == NULL)
            return rz_fail(err, RZ_ENOMEM, "checkpoint: out of memory for a moment gather");
    }
    enum rz_status st = RZ_OK;
    for (size_t k = from; k < 2 * count; k++) {
        struct rz_err e;
        enum rz_status s2 = gather_moment(t, k, out, &e);
        if (s2 != RZ_OK && st == RZ_OK)
            st = rz_fail(err, s2, "%s", e.msg);
    }
    free(out);
    return st;
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

/* ---- resume ------------------------------------------------------------------------------------ */

static void report_skip(void *user, const char *path, const char *reason)
{
    const struct trainer *t = user;
    say(t, "resume: skipped damaged checkpoint %s (%s); moved to quarantine/", path, reason);
}

/* Which checkpoint to resume from ("" for a fresh start); rank 0 decides, everyone learns it. */
static enum rz_status choose_checkpoint(struct trainer *t, char *path, size_t len,
                                        struct rz_err *err)
{
    const char *mode = t->opts->resume != NULL ? t->opts->resume : "auto";
    path[0] = '\0';
    if (strcmp(mode, "never") == 0)
        return RZ_OK;
    if (strcmp(mode, "auto") != 0) {
        snprintf(path, len, "%s", mode);
        return RZ_OK;
    }
    enum rz_status st = RZ_OK;
    if (t->rank == 0)
        st = ckpt_find_latest(t->ckpt_dir, path, len, report_skip, t, err);
    st = agree(t, st, err);
    if (st == RZ_OK)
        st = comm_bcast_bytes(t->comm, path, len, err);
    return st;
}

/* Keep the global batch of the checkpoint at this world size (elastic resume): first by
 * gradient accumulation at the configured per-rank batch, else by a smaller per-rank batch. */
static enum rz_status fit_global_batch(struct trainer *t, int64_t G, struct rz_err *err)
{
    int64_t B = t->cfg->training.batch_size, W = t->world;
    if (G == B * W * t->accum)
        return RZ_OK;
    if (G % (B * W) == 0) {
        t->accum = G / (B * W);
    } else if (G % W == 0 && G / W <= B * t->accum) {
        int64_t per_rank = G / W;
        t->accum = 1;
        while (per_rank / t->accum > B || per_rank % t->accum != 0)
            t->accum++;
        t->dims.batch = per_rank / t->accum;
    } else {
        return rz_fail(err, RZ_ECONFIG, "resume: the checkpoint's global batch %lld cannot be "
                       "kept on %lld ranks with training.batch_size %lld (it must be a multiple "
                       "of the rank count); resume on another number of ranks or set "
                       "training.batch_size", (long long)G, (long long)W, (long long)B);
    }
    say(t, "resume: elastic: keeping the global batch %lld on %lld ranks as batch %lld x accum "
        "%lld per rank", (long long)G, (long long)W, (long long)t->dims.batch,
        (long long)t->accum);
    t->global_batch = G;
    return RZ_OK;
}

static struct ckpt_tensors tensors_of(struct trainer *t)
{
    struct ckpt_tensors x = {.n_floats = model_num_params(t->model),
                             .params = model_params(t->model), .adam_m = t->optim->m,
                             .adam_v = t->optim->v, .moments_sharded = t->zero > 0,
                             .moment_lo = t->shard_lo, .moment_hi = t->shard_hi};
    x.table = model_tensors(t->model, &x.count);
    return x;
}

static enum rz_status load_checkpoint(struct trainer *t, const char *path, struct train_result *r,
                                      struct rz_err *err)
{
    struct ckpt_meta meta;
    memset(&meta, 0, sizeof meta);
    struct ckpt_tensors x = tensors_of(t);
    enum rz_status st = ckpt_load(path, &meta, &x, err);
    if (st == RZ_EIO)
        st = RZ_ENOCKPT; /* an unreadable checkpoint is no valid checkpoint */
    st = agree(t, st, err);
    if (st == RZ_OK) {
        t->step = meta.step;
        t->optim->t = meta.adam_t;
        t->loss_sum = meta.loss_sum;
        t->train_time = meta.train_time_s;
        t->restarts = meta.restarts + 1;
        t->guard = meta.guard;
        t->saved_step = meta.step;
        r->start_step = meta.step;
        snprintf(r->resumed_from, sizeof r->resumed_from, "%s", path);
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", path);
        say(t, "resume: loaded %s: step %lld, %lld samples seen, written by %lld rank(s)%s", path,
            (long long)meta.step, (long long)meta.samples_seen, (long long)meta.world_size,
            strcmp(meta.config_sha256, t->config_sha256) != 0 ? "; the config differs from the "
            "checkpoint's (its text is stored in the file)" : "");
    }
    ckpt_meta_free(&meta);
    return st;
}

/* Read the chosen checkpoint's metadata before building the model: the global batch decides
 * the per-rank batch (elastic resume) and the shapes must match the config. */
static enum rz_status plan_resume(struct trainer *t, const char *path, struct rz_err *err)
{
    if (path[0] == '\0')
        return RZ_OK;
    struct ckpt_meta meta;
    memset(&meta, 0, sizeof meta);
    enum rz_status st = ckpt_read_meta(path, &meta, err);
    if (st == RZ_EIO) {
        char cause[RZ_ERR_MSG_MAX]; /* err->msg cannot be its own argument */
        rz_fmt(cause, sizeof cause, "%s", err->msg);
        st = rz_fail(err, RZ_ENOCKPT, "resume from %s: %s", path, cause);
    }
    st = agree(t, st, err);
    if (st == RZ_OK)
        st = fit_global_batch(t, meta.global_batch, err);
    ckpt_meta_free(&meta);
    return agree(t, st, err);
}

/* ---- checkpoints -------------------------------------------------------------------------------- */

/* Test-hook build only (RYZEN_TEST_SAVE_DELAY_S, core/hooks.h): hold the checkpoint write, N s or
 * until a stop signal arrives, so a test that signals once it has read the line below signals
 * during the write, however long its reaction takes. */
static void test_save_delay(const struct trainer *t)
{
    double n = RZ_HOOK(save_delay_s, 0.0), t0 = rz_now();
    if (n <= 0.0)
        return;
    fprintf(stderr, "ryzen-train: test hook: delaying the checkpoint of step %lld by %.0f s or "
            "until a stop signal\n", (long long)t->step, n);
    fflush(stderr);
    const struct timespec nap = {0, 10 * 1000 * 1000};
    while (rz_now() - t0 < n && !health_stop_signal())
        nanosleep(&nap, NULL);
}

static enum rz_status save_checkpoint(struct trainer *t, struct train_result *r,
                                      struct rz_err *err)
{
    if (t->saved_step == t->step)
        return RZ_OK; /* this state is on disk already */
    enum rz_status st = params_complete(t, err);
    double commit_ms = 0.0, prune_ms = 0.0;
    char path[4096] = "";
    struct moment_fetch fetch = {.t = t};
    health_watchdog_pause(t->watchdog, 1);
    if (st == RZ_OK && t->rank != 0 && t->zero > 0)
        st = gather_moments_from(t, 0, err); /* rank 0 writes what they gather */
    if (st == RZ_OK && t->rank == 0) {
        test_save_delay(t);
        struct ckpt_meta meta = {
            .step = t->step, .samples_seen = t->step * t->global_batch,
            .global_batch = t->global_batch, .world_size = t->world, .adam_t = t->optim->t,
            .lr = t->last_lr, .init_seed = (uint64_t)t->cfg->training.seed,
            .data_seed = (uint64_t)t->cfg->data.seed, .loss_sum = t->loss_sum,
            .train_time_s = t->train_time, .restarts = t->restarts, .guard = t->guard,
            .dims = t->dims, .config_yaml = t->config_yaml};
        snprintf(meta.config_sha256, sizeof meta.config_sha256, "%s", t->config_sha256);
        struct ckpt_tensors x = tensors_of(t);
        if (t->zero > 0) {
            x.fetch = fetch_moment;
            x.fetch_user = &fetch;
        }
        double t0 = rz_now();
        st = ckpt_save(t->ckpt_dir, &meta, &x, path, sizeof path, err);
        if (t->zero > 0) {
            struct rz_err ignored; /* the write's own failure is the one to report */
            enum rz_status s2 = gather_moments_from(t, fetch.calls, &ignored);
            if (st == RZ_OK && s2 != RZ_OK)
                st = rz_fail(err, s2, "%s", ignored.msg);
        }
        commit_ms = (rz_now() - t0) * 1e3;
        if (st == RZ_OK) {
            struct rz_err perr;
            t0 = rz_now();
            /* Our own fresh commit (its checksums were computed from these buffers) counts as
             * valid without a read-back; the older kept files are verified once each. */
            ckpt_known_add(&t->ckpt_known, path);
            if (ckpt_prune(t->ckpt_dir, t->cfg->checkpoint.keep, &t->ckpt_known, &perr) != RZ_OK)
                say(t, "checkpoint: retention: %s (continuing)", perr.msg);
            prune_ms = (rz_now() - t0) * 1e3;
        }
    }
    st = agree(t, st, err);
    health_watchdog_pause(t->watchdog, 0);
    if (st != RZ_OK)
        return st;
    t->saved_step = t->step;
    t->live.last_ckpt_unix = metrics_unix_now();
    if (t->rank == 0)
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", path);
    say(t, "checkpoint: step %lld committed to %s in %.0f ms (retention %.0f ms)",
        (long long)t->step, path, commit_ms, prune_ms);
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

static void live_pack(struct trainer *t, double *out, double compute_s);

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
    live_pack(t, mine + STEP_FIXED, o->compute_s);
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
    enum rz_status st0 = params_complete(t, err);
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
    enum rz_status st0 = params_complete(t, err);
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

/* "2 node(s): n1, n2" from every rank's host name. */
static enum rz_status describe_hosts(struct trainer *t, char *out, size_t len, struct rz_err *err)
{
    enum { HOST = 64 };
    char mine[HOST];
    snprintf(mine, sizeof mine, "%s", comm_host(t->comm));
    char *all = calloc((size_t)t->world, HOST);
    if (all == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory");
    enum rz_status st = comm_allgather_bytes(t->comm, mine, HOST, all, err);
    int distinct = 0;
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; st == RZ_OK && r < t->world; r++) {
        const char *h = all + (size_t)r * HOST;
        bool seen = false;
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(h, all + (size_t)q * HOST) == 0;
        if (seen)
            continue;
        distinct++;
        if (used < len)
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", h);
    }
    char list[512];
    snprintf(list, sizeof list, "%s", out);
    if (snprintf(out, len, "%d node(s): %s", distinct, list) >= (int)len)
        out[len - 1] = '\0'; /* a long host list is cut; the summary has every rank's host */
    free(all);
    return st;
}

static void print_banner(const struct trainer *t, double peak, double latency, const char *hosts)
{
    const struct model_dims *d = &t->dims;
    inform(t, "model %zu parameters (V=%lld C=%lld H=%lld L=%lld F=%lld T=%lld)",
        model_num_params(t->model), (long long)d->vocab, (long long)d->d_model,
        (long long)d->n_heads, (long long)d->n_layers, (long long)d->d_ff, (long long)d->seq_len);
    inform(t, "batch %lld x accum %lld x %d rank(s) = %lld samples/step, %lld steps; kernels %s "
        "(%s), row kernels %s, optimizer %s; %s; matmul peak %.1f GFLOP/s (measured)",
        (long long)d->batch, (long long)t->accum, t->world, (long long)t->global_batch,
        (long long)t->cfg->training.steps, t->cfg->kernels.backend, kern_ctx_isa(t->kern),
        kern_rows_isa(), optim_isa(), t->cfg->training.precision, peak);
    if (t->world > 1)
        inform(t, "ranks: %d on %s; allreduce latency %.1f us (median, 8 bytes)", t->world,
               hosts, latency * 1e6);
    if (t->zero > 0)
        inform(t, "ZeRO-%d: rank 0 holds floats [%zu, %zu) of %zu: Adam moments and gradient shard "
               "%.1f MB (RSS measured)%s", t->zero, t->shard_lo, t->shard_hi,
               model_num_params(t->model), (double)t->optim_rss / 1e6,
               t->zero == 2 ? "; gradients live per segment" : "");
    inform(t, "data %s", data_describe(t->data));
    inform(t, "run dir %s (metrics/%s/, checkpoints/)", t->opts->run_dir, t->opts->run_id);
}

static void print_progress(const struct trainer *t, const struct metrics_step *s, double eta_s,
                           double comm_share)
{
    if (t->rank != 0 || t->opts->log == NULL)
        return;
    char eta[32], comm[32] = "", val[32] = "";
    metrics_format_eta(eta, sizeof eta, eta_s);
    if (t->world > 1)
        snprintf(comm, sizeof comm, " | comm %.1f%%", 100.0 * comm_share);
    if (s->has_val)
        snprintf(val, sizeof val, " | val %.4f", s->val_loss);
    fprintf(t->opts->log, "step %6lld/%lld | loss %.4f%s | lr %.3e | gnorm %.3f | %.1f samples/s%s"
            " | mfu %.2f | ETA %s\n", (long long)s->step, (long long)t->cfg->training.steps,
            s->loss, val, s->lr, s->grad_norm, s->samples_per_sec, comm, s->mfu, eta);
    fflush(t->opts->log);
}

static double measure_peak(struct trainer *t, double seconds)
{
    double gflops = 0.0;
    struct rz_err ignored;
    if (seconds <= 0.0)
        return 0.0;
    /* The model's most common matmul shape: (B*T, C) x (C, 3C). */
    int64_t m = t->dims.batch * t->dims.seq_len, k = t->dims.d_model, n = 3 * t->dims.d_model;
    if (kern_measure_peak(t->kern, m, n, k, t->dims.bf16, seconds, &gflops, &ignored) != RZ_OK)
        return 0.0;
    return gflops;
}

static void profile_start(struct trainer *t)
{
    memset(&t->prof, 0, sizeof t->prof);
    if (t->opts->profile)
        kern_ctx_profile(t->kern, &t->prof.k);
}

static void profile_add(struct trainer *t, const struct step_out *o, double dt)
{
    t->prof.optimizer_s += o->optim_s;
    t->prof.comm_s += o->comm_s + o->allreduce_s;
    t->prof.step_s += dt;
    t->prof.steps++;
}

static int shape_slower_first(const void *a, const void *b)
{
    double sa = (*(const struct kern_profile_shape *const *)a)->seconds;
    double sb = (*(const struct kern_profile_shape *const *)b)->seconds;
    return (sa < sb) - (sa > sb);
}

/* --profile's matmuls per shape and form, the most time first, each with its own in-context
 * rate: the numbers to hold against tools/bench-gemm's standalone rates at the same shapes. */
static void print_profile_shapes(const struct trainer *t, const struct profile *p)
{
    const struct kern_profile_shape *rows[KERN_PROFILE_SHAPES];
    int n = p->k.nshapes;
    for (int i = 0; i < n; i++)
        rows[i] = &p->k.shapes[i];
    qsort(rows, (size_t)n, sizeof rows[0], shape_slower_first);
    double per = 1e3 / (double)p->steps;
    say(t, "profile: matmuls by shape (form NT: x w^T, a forward; NN: dy w, an input gradient; "
        "TN: dy^T x, a weight gradient):");
    say(t, "  %-22s %-9s %9s %9s %10s", "m x n x k", "form", "ms/step", "GFLOP/s", "calls/step");
    for (int i = 0; i < n; i++) {
        const struct kern_profile_shape *r = rows[i];
        char shape[96], form[16];
        int at = r->batch > 1 ? snprintf(shape, sizeof shape, "%" PRId64 " x ", r->batch) : 0;
        snprintf(shape + at, sizeof shape - (size_t)at, "%" PRId64 " x %" PRId64 " x %" PRId64,
                 r->m, r->n, r->k);
        snprintf(form, sizeof form, "%c%c%s", r->trans_a ? 'T' : 'N', r->trans_b ? 'T' : 'N',
                 r->bf16 ? " bf16" : "");
        say(t, "  %-22s %-9s %9.2f %9.1f %10.1f", shape, form, r->seconds * per,
            r->seconds > 0.0 ? r->flops / r->seconds * 1e-9 : 0.0,
            (double)r->calls / (double)p->steps);
    }
    if (p->k.unlisted_calls > 0)
        say(t, "  and %.1f calls/step of further shapes (the first %d shapes are listed)",
            (double)p->k.unlisted_calls / (double)p->steps, KERN_PROFILE_SHAPES);
}

/* The table of --profile, and how close the step came to the GEMM-only bound: the samples/s
 * of a step that did nothing but its matmul flops (model_flops_per_sample) at the matmul peak
 * measured at start. */
static void print_profile(const struct trainer *t, const struct train_result *r)
{
    const struct profile *p = &t->prof;
    if (p->steps == 0 || p->step_s <= 0.0) {
        say(t, "profile: no steady steps to report (training.warmup_bench >= the steps run)");
        return;
    }
    static const char *const names[] = {"matmul", "attention", "norm", "loss"};
    double per = 1e3 / (double)p->steps, known = 0.0;
    say(t, "profile: %lld steady steps, rank %d of %d, %s, ms per step; ISA: matmuls %s, row "
        "kernels %s, optimizer %s:", (long long)p->steps, t->rank, t->world,
        t->cfg->training.precision, kern_ctx_isa(t->kern), kern_rows_isa(), optim_isa());
    say(t, "  %-14s %9s %7s %10s", "class", "ms/step", "share", "calls/step");
    for (int c = 0; c < KERN_OTHER; c++) {
        say(t, "  %-14s %9.2f %6.1f%% %10.1f", names[c], p->k.seconds[c] * per,
            100.0 * p->k.seconds[c] / p->step_s, (double)p->k.calls[c] / (double)p->steps);
        known += p->k.seconds[c];
    }
    say(t, "  %-14s %9.2f %6.1f%%", "optimizer", p->optimizer_s * per,
        100.0 * p->optimizer_s / p->step_s);
    say(t, "  %-14s %9.2f %6.1f%%", "communication", p->comm_s * per,
        100.0 * p->comm_s / p->step_s);
    double other = p->step_s - known - p->optimizer_s - p->comm_s;
    say(t, "  %-14s %9.2f %6.1f%%   (GELU %.2f ms: the rest is embeddings, residual adds, bias "
        "gradients, bf16 rounding, data)", "other", other * per, 100.0 * other / p->step_s,
        p->k.seconds[KERN_OTHER] * per);
    say(t, "  %-14s %9.2f %6.1f%%", "step", p->step_s * per, 100.0);
    print_profile_shapes(t, p);
    double in_context = p->k.seconds[KERN_MATMUL] > 0 ? p->k.matmul_flops /
                                                            p->k.seconds[KERN_MATMUL] * 1e-9 : 0;
    if (r->peak_gflops <= 0.0) {
        say(t, "profile: matmuls at %.1f GFLOP/s in context; no measured peak, no bound",
            in_context);
        return;
    }
    /* The start-up peak is one shape on oneDNN; where BLIS takes the weight gradients (oneDNN
     * at AVX2) the matmuls can run faster in context than that, and a "bound" below what ran is
     * none: the bound then uses the in-context rate, and says so. */
    double peak = r->peak_gflops > in_context ? r->peak_gflops : in_context;
    double bound = peak * 1e9 / model_flops_per_sample(&t->dims);
    double reached = r->samples_per_sec / (double)t->world;
    say(t, "profile: matmuls at %.1f GFLOP/s in context (peak measured at start %.1f); "
        "GEMM-only bound %.1f samples/s per rank (%.3f GFLOP/sample); reached %.1f = %.1f%%",
        in_context, r->peak_gflops, bound, model_flops_per_sample(&t->dims) * 1e-9, reached,
        100.0 * reached / bound);
    if (peak > r->peak_gflops)
        say(t, "profile: the matmuls ran faster in context than the peak measured at start: the "
            "bound uses their in-context rate, %.1f GFLOP/s", peak);
}

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
    say(t, "loss guard: skipped step %lld: %s (%d skipped in the last %lld steps, %lld stop the "
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
        .skipped = o->guard != GUARD_ACCEPT,
        .skip_reason = o->guard_why, .skipped_total = t->guard.skipped};
    metrics_window_add(&t->live.window, dt, o->compute_s, o->comm_s, o->allreduce_s,
                       o->grad_allreduce_s);
    enum rz_status st = sync_check(t, o, &s, err);
    st = agree(t, st, err);
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
        print_progress(t, &s, (rz_now() - ls->t_start) / (double)done *
                       (double)(steps - t->step), ls->comm_total / ls->step_total);
    return guard_after_step(t, o, r, err);
}

/* ---- live metrics (metrics/live.h, docs/monitoring.md) ---------------------------------------- */

/* The figures this rank sends in the step's collective: its window and this step's compute. */
static void live_pack(struct trainer *t, double *out, double compute_s)
{
    struct metrics_rank_live l;
    metrics_window_summary(&t->live.window, compute_s, (double)rz_rss_bytes(), &l);
    memcpy(out, &l, sizeof l);
}

/* Every rank's node (one gather at start-up), which rank writes each node's file, and where. */
static enum rz_status live_init(struct trainer *t, struct rz_err *err)
{
    struct train_live *l = &t->live;
    const struct cfg *c = t->cfg;
    size_t w = (size_t)t->world;
    l->written_step = -1;
    l->gathered = calloc(w * STEP_DOUBLES, sizeof *l->gathered);
    l->ranks = calloc(w, sizeof *l->ranks);
    l->hosts = calloc(w, sizeof *l->hosts);
    l->host_names = calloc(w, sizeof *l->host_names);
    if (l->gathered == NULL || l->ranks == NULL || l->hosts == NULL || l->host_names == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory for the live metrics");
    char mine[64];
    snprintf(mine, sizeof mine, "%s", comm_host(t->comm));
    enum rz_status st = comm_allgather_bytes(t->comm, mine, sizeof mine, l->hosts, err);
    if (st != RZ_OK)
        return st;
    l->writer = c->metrics.prom_interval > 0;
    for (int r = 0; r < t->world; r++) {
        l->host_names[r] = l->hosts[r];
        if (r < t->rank && strcmp(l->hosts[r], mine) == 0)
            l->writer = false; /* a lower rank on this node writes its file */
    }
    l->node_first = true;
    for (int r = 0; r < t->rank; r++)
        l->node_first &= strcmp(l->hosts[r], mine) != 0;
    if (c->metrics.prom_dir[0] != '\0')
        snprintf(l->dir, sizeof l->dir, "%s", c->metrics.prom_dir);
    else
        snprintf(l->dir, sizeof l->dir, "%s/prom", t->opts->run_dir);
    if (!cfg_phase_name(c->source[0] ? c->source : t->opts->run_dir, l->phase, sizeof l->phase))
        snprintf(l->phase, sizeof l->phase, "unknown");
    if (l->writer)
        l->memory_limit_bytes = metrics_memory_limit_bytes();
    return RZ_OK;
}

/* The node's textfile from the last collective's figures.  A failed write is reported once and
 * never stops training: monitoring must not take the run down. */
static void live_write(struct trainer *t, bool running)
{
    struct train_live *l = &t->live;
    if (!l->writer || !l->gathered_once || (running && l->written_step == t->step))
        return;
    for (int r = 0; r < t->world; r++)
        memcpy(&l->ranks[r], l->gathered + (size_t)r * STEP_DOUBLES + STEP_FIXED,
               sizeof l->ranks[r]);
    const struct cfg *c = t->cfg;
    struct metrics_prom_doc d = {
        .job = t->opts->run_id, .phase = l->phase, .node = l->hosts[t->rank],
        .now_unix = metrics_unix_now(), .running = running, .world = t->world,
        .ranks = l->ranks, .hosts = l->host_names, .step = t->step,
        .samples_seen = t->step * t->global_batch, .loss = t->last_loss, .lr = t->last_lr,
        .has_val = t->val_step >= 0, .val_loss = t->val_loss,
        .rank_samples_per_step = (double)(t->dims.batch * t->accum),
        .restarts = t->restarts, .skipped_steps = t->guard.skipped,
        .last_ckpt_unix = l->last_ckpt_unix, .ckpt_interval_steps = c->checkpoint.interval,
        .update_interval_steps = c->metrics.prom_interval,
        .memory_limit_bytes = l->memory_limit_bytes,
        .throughput_no_go = c->gates.throughput_no_go,
        .straggler_no_go = c->gates.straggler_ratio_no_go,
        .packet_loss_no_go = c->gates.packet_loss_no_go};
    d.has_net = train_net_since(&l->net, &d.net, NULL);
    struct rz_err err;
    char path[4400];
    if (metrics_prom_write(l->dir, &d, path, sizeof path, &err) != RZ_OK && !l->warned) {
        fprintf(stderr, "ryzen-train: rank %d: live metrics: %s (training goes on; further "
                "failures are not reported)\n", t->rank, err.msg);
        l->warned = true;
    }
    l->written_step = t->step;
}

/* Every metrics.prom_interval steps and at each checkpoint. */
static void live_step_done(struct trainer *t)
{
    int64_t every = t->cfg->metrics.prom_interval;
    if (t->live.last_ckpt_unix > 0 && t->saved_step == t->step)
        live_write(t, true);
    else if (every > 0 && t->step % every == 0)
        live_write(t, true);
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
        say(t, "stop signal before the first step: exiting without a new checkpoint");
        return RZ_ESIGNAL;
    }
    while (st == RZ_OK && t->step < stop_at) {
        if (t->step == warm) {
            ls.t_steady = rz_now();
            profile_start(t);
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
            profile_add(t, &o, dt);
        }
        st = after_step(t, &o, dt, &ls, r, err);
        int64_t every = c->checkpoint.interval;
        if (st == RZ_OK && (o.stop || (every > 0 && t->step % every == 0)))
            st = save_checkpoint(t, r, err);
        if (st == RZ_OK)
            live_step_done(t);
        if (st == RZ_OK && o.stop) {
            say(t, "stop signal: checkpointed at step %lld; exiting %d so the job is requeued",
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
        st = save_checkpoint(t, r, err); /* the end of the run or of the segment */
    if (st == RZ_OK || st == RZ_ESIGNAL) {
        enum rz_status s2 = params_complete(t, err); /* no gather left in flight */
        st = st == RZ_OK ? s2 : st;
    }
    if (st == RZ_OK && data_has_val(t->data) && t->val_step != t->step) {
        st = validate(t, err); /* the parameters the run ends with */
        if (st == RZ_OK)
            say(t, "validation at step %lld: loss %.4f over %lld held-out samples",
                (long long)t->step, t->val_loss, (long long)c->training.eval_samples);
    }
    r->val_step = t->val_step;
    r->val_loss = t->val_loss;
    live_write(t, false); /* the last file says the run no longer trains, whatever ended it */
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
    return agree(t, st, err);
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
    enum rz_status st = agree(t, health_watchdog_start(&t->watchdog, &wopts, err), err);
    if (st == RZ_OK) test_stop_at_start(t);
    if (st == RZ_OK) st = choose_checkpoint(t, path, sizeof path, err);
    if (st == RZ_OK) st = plan_resume(t, path, err);
    if (st == RZ_OK) st = agree(t, trainer_init(t, err), err);
    if (st == RZ_OK) st = agree(t, live_init(t, err), err);
    if (st == RZ_OK && path[0] != '\0')
        st = load_checkpoint(t, path, r, err);
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
        r->peak_gflops = measure_peak(&t, opts->peak_seconds);
        st = comm_allreduce_latency(t.comm, 20, &r->allreduce_latency_s, err);
    }
    char hosts[512] = "";
    if (st == RZ_OK)
        st = describe_hosts(&t, hosts, sizeof hosts, err);
    if (st == RZ_OK) {
        print_banner(&t, r->peak_gflops, r->allreduce_latency_s, hosts);
        st = run_loop(&t, r, err);
        if (st == RZ_OK && opts->profile)
            print_profile(&t, r);
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
