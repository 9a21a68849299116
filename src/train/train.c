/* train.c: one rank's training run (see train.h).  Set-up translates the config into each
 * module's typed options once; the step is a handful of calls; everything that needs all ranks
 * (stop signals, checkpoint commits, sync checks) happens at a step boundary, where every rank
 * takes the same branch because the decision itself came out of a collective. */
#include "config.h"

#include "train/train.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/sha256.h"
#include "core/util.h"
#include "data/data.h"
#include "health/health.h"
#include "kernels/kernels.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "optim/optim.h"

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
    double last_lr;
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
    memset(t, 0, sizeof *t);
}

/* ---- set-up ------------------------------------------------------------------------------------ */

static struct model_dims dims_from_cfg(const struct cfg *c)
{
    struct model_dims d = {
        .vocab = c->model.vocab_size, .d_model = c->model.d_model, .n_heads = c->model.n_heads,
        .n_layers = c->model.n_layers, .d_ff = c->model.d_ff, .seq_len = c->model.seq_len,
        .batch = c->training.batch_size, .ln_eps = (float)c->model.ln_eps,
        .init_std = (float)c->model.init_std, .bf16 = strcmp(c->training.precision, "bf16") == 0};
    return d;
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

static enum rz_status trainer_init(struct trainer *t, struct rz_err *err)
{
    const struct cfg *c = t->cfg;
    enum kern_backend backend;
    struct data_opts dopts = {.vocab_size = c->model.vocab_size, .seq_len = c->model.seq_len,
                              .seed = (uint64_t)c->data.seed, .path = c->data.path,
                              .markov_branching = c->data.markov_branching};
    struct optim_opts oopts;
    struct health_watchdog_opts wopts = {
        .run_dir = t->opts->run_dir, .rank = t->rank, .world = t->world,
        .floor_s = c->health.watchdog_floor_s, .factor = c->health.watchdog_factor};
    enum rz_status st = kern_backend_parse(c->kernels.backend, &backend, err);
    if (st == RZ_OK) st = data_kind_parse(c->data.kind, &dopts.kind, err);
    if (st == RZ_OK) st = optim_opts_from_cfg(&oopts, c, err);
    if (st == RZ_OK) st = kern_ctx_create(&t->kern, backend, err);
    if (st == RZ_OK && t->dims.bf16) st = kern_check_bf16(t->kern, err); /* no silent fallback */
    if (st == RZ_OK) st = model_create(&t->model, &t->dims, t->kern, err);
    if (st == RZ_OK) st = data_create(&t->data, &dopts, err);
    if (st == RZ_OK) st = optim_create(&t->optim, &oopts, model_num_params(t->model), err);
    if (st == RZ_OK) st = metrics_open(&t->metrics, t->opts->run_dir, t->opts->run_id, t->rank, err);
    if (st == RZ_OK) st = health_watchdog_start(&t->watchdog, &wopts, err);
    if (st == RZ_OK) st = snapshot_config(t, err);
    if (st != RZ_OK)
        return st;
    size_t n = (size_t)(t->dims.batch * t->dims.seq_len);
    t->sample = calloc((size_t)t->dims.seq_len + 1, sizeof *t->sample);
    t->inputs = calloc(n, sizeof *t->inputs);
    t->targets = calloc(n, sizeof *t->targets);
    if (t->sample == NULL || t->inputs == NULL || t->targets == NULL)
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
                             .adam_v = t->optim->v};
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
    if (st == RZ_EIO)
        st = rz_fail(err, RZ_ENOCKPT, "resume: %s", err->msg);
    st = agree(t, st, err);
    if (st == RZ_OK)
        st = fit_global_batch(t, meta.global_batch, err);
    ckpt_meta_free(&meta);
    return agree(t, st, err);
}

/* ---- checkpoints -------------------------------------------------------------------------------- */

/* Test-only (RYZEN_TEST_SAVE_DELAY_S): lengthen the checkpoint write so a test can deliver a
 * signal during it.  Documented in docs/operations.md. */
static void test_save_delay(void)
{
    const char *v = getenv("RYZEN_TEST_SAVE_DELAY_S");
    if (v != NULL)
        sleep((unsigned)atoi(v));
}

static enum rz_status save_checkpoint(struct trainer *t, struct train_result *r,
                                      struct rz_err *err)
{
    if (t->saved_step == t->step)
        return RZ_OK; /* this state is on disk already */
    enum rz_status st = RZ_OK;
    double commit_ms = 0.0, prune_ms = 0.0;
    char path[4096] = "";
    health_watchdog_pause(t->watchdog, 1);
    if (t->rank == 0) {
        test_save_delay();
        struct ckpt_meta meta = {
            .step = t->step, .samples_seen = t->step * t->global_batch,
            .global_batch = t->global_batch, .world_size = t->world, .adam_t = t->optim->t,
            .lr = t->last_lr, .init_seed = (uint64_t)t->cfg->training.seed,
            .data_seed = (uint64_t)t->cfg->data.seed, .loss_sum = t->loss_sum,
            .train_time_s = t->train_time, .restarts = t->restarts, .dims = t->dims,
            .config_yaml = t->config_yaml};
        snprintf(meta.config_sha256, sizeof meta.config_sha256, "%s", t->config_sha256);
        struct ckpt_tensors x = tensors_of(t);
        double t0 = rz_now();
        st = ckpt_save(t->ckpt_dir, &meta, &x, path, sizeof path, err);
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
    if (t->rank == 0)
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", path);
    say(t, "checkpoint: step %lld committed to %s in %.0f ms (retention %.0f ms)",
        (long long)t->step, path, commit_ms, prune_ms);
    return RZ_OK;
}

/* ---- the step ----------------------------------------------------------------------------------- */

static void grad_ready(void *user, size_t offset, size_t count)
{
    comm_grads_ready(user, offset, count);
}

/* Fill inputs/targets (B, T) with global samples first .. first + B - 1. */
static void load_batch(struct trainer *t, uint64_t first)
{
    int64_t B = t->dims.batch, T = t->dims.seq_len;
    for (int64_t b = 0; b < B; b++) {
        data_sample(t->data, first + (uint64_t)b, t->sample);
        memcpy(t->inputs + b * T, t->sample, (size_t)T * sizeof(int32_t));
        memcpy(t->targets + b * T, t->sample + 1, (size_t)T * sizeof(int32_t));
    }
}

struct step_out {
    double loss, grad_norm, local_gnorm, comm_s, allreduce_s, optim_s;
    int stop;                  /* some rank got a stop signal */
};

/* One optimizer step: accum micro-steps of forward + backward; the last micro-step's backward
 * starts the bucketed allreduce as layers finish; then clip and Adam. */
static enum rz_status train_step(struct trainer *t, double lr, struct step_out *o,
                                 struct rz_err *err)
{
    int64_t B = t->dims.batch, W = t->world;
    float *g = model_grads(t->model);
    size_t n = model_num_params(t->model);
    double loss = 0.0, sumsq = 0.0;
    size_t bucket = (size_t)(t->cfg->comm.bucket_mb * 1024.0 * 1024.0);
    /* the per-rank gradient norm is only reported by the sync check */
    int64_t every = t->cfg->health.sync_check_interval;
    bool local_norm = every > 0 && (t->step + 1) % every == 0;
    model_zero_grads(t->model);
    comm_grads_begin(t->comm, g, n, bucket, local_norm);
    for (int64_t u = 0; u < t->accum; u++) {
        uint64_t first = (uint64_t)(t->step * t->global_batch + u * B * W + t->rank * B);
        load_batch(t, first);
        loss += (double)model_forward(t->model, t->inputs, t->targets);
        bool last = u + 1 == t->accum;
        model_set_grad_ready_hook(t->model, last ? grad_ready : NULL, t->comm);
        /* 1/(accum*W): the allreduce sum is then the mean over the global batch */
        model_backward(t->model, 1.0f / (float)(t->accum * W));
    }
    health_sync_arrived(t->watchdog, t->step + 1);
    enum rz_status st = comm_grads_finish(t->comm, &o->comm_s, &sumsq, err);
    if (st != RZ_OK)
        return st;
    /* one small allreduce carries the loss and the stop flag; its time is a latency sample */
    double vals[2] = {loss / (double)t->accum, (double)health_stop_signal()};
    double t0 = rz_now();
    st = comm_sum_doubles(t->comm, vals, 2, err);
    o->allreduce_s = rz_now() - t0;
    if (st != RZ_OK)
        return st;
    o->loss = vals[0] / (double)W;
    o->stop = vals[1] > 0.0;
    o->local_gnorm = sqrt(sumsq) * (double)W; /* the norm of this rank's own mean gradient */
    t0 = rz_now();
    o->grad_norm = optim_grad_norm(g, n);
    optim_clip(g, n, o->grad_norm, t->cfg->optimizer.grad_clip);
    optim_step(t->optim, model_params(t->model), g, lr);
    o->optim_s = rz_now() - t0;
    return RZ_OK;
}

/* Test-only (RYZEN_TEST_DESYNC_RANK=r): perturb one parameter on rank r so the next sync check
 * must catch it.  Never set in production; documented in docs/operations.md. */
static void test_desync(struct trainer *t)
{
    const char *v = getenv("RYZEN_TEST_DESYNC_RANK");
    if (v != NULL && atoi(v) == t->rank && t->world > 1)
        model_params(t->model)[0] += 1e-3f;
}

static enum rz_status sync_check(struct trainer *t, const struct step_out *o,
                                 struct metrics_step *s, struct rz_err *err)
{
    int64_t every = t->cfg->health.sync_check_interval;
    if (every <= 0 || t->step % every != 0)
        return RZ_OK;
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
        "(%s), %s; matmul peak %.1f GFLOP/s (measured)", (long long)d->batch, (long long)t->accum,
        t->world, (long long)t->global_batch, (long long)t->cfg->training.steps,
        t->cfg->kernels.backend, kern_ctx_isa(t->kern), t->cfg->training.precision, peak);
    if (t->world > 1)
        inform(t, "ranks: %d on %s; allreduce latency %.1f us (median, 8 bytes)", t->world,
               hosts, latency * 1e6);
    inform(t, "data %s", data_describe(t->data));
    inform(t, "run dir %s (metrics/%s/, checkpoints/)", t->opts->run_dir, t->opts->run_id);
}

static void print_progress(const struct trainer *t, const struct metrics_step *s, double eta_s,
                           double comm_share)
{
    if (t->rank != 0 || t->opts->log == NULL)
        return;
    char eta[32], comm[32] = "";
    metrics_format_eta(eta, sizeof eta, eta_s);
    if (t->world > 1)
        snprintf(comm, sizeof comm, " | comm %.1f%%", 100.0 * comm_share);
    fprintf(t->opts->log, "step %6lld/%lld | loss %.4f | lr %.3e | gnorm %.3f | %.1f samples/s%s"
            " | mfu %.2f | ETA %s\n", (long long)s->step, (long long)t->cfg->training.steps,
            s->loss, s->lr, s->grad_norm, s->samples_per_sec, comm, s->mfu, eta);
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
    say(t, "profile: %lld steady steps, rank %d of %d, %s, ms per step:", (long long)p->steps,
        t->rank, t->world, t->cfg->training.precision);
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
    double in_context = p->k.seconds[KERN_MATMUL] > 0 ? p->k.matmul_flops /
                                                            p->k.seconds[KERN_MATMUL] * 1e-9 : 0;
    if (r->peak_gflops <= 0.0) {
        say(t, "profile: matmuls at %.1f GFLOP/s in context; no measured peak, no bound",
            in_context);
        return;
    }
    double bound = r->peak_gflops * 1e9 / model_flops_per_sample(&t->dims);
    double reached = r->samples_per_sec / (double)t->world;
    say(t, "profile: matmuls at %.1f GFLOP/s in context (peak measured at start %.1f); "
        "GEMM-only bound %.1f samples/s per rank (%.3f GFLOP/sample); reached %.1f = %.1f%%",
        in_context, r->peak_gflops, bound, model_flops_per_sample(&t->dims) * 1e-9, reached,
        100.0 * reached / bound);
}

struct loop_stats {
    double t_start, t_steady, comm_total, step_total;
    int64_t steady_steps;
};

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
        .rss_bytes = rz_rss_bytes(), .allreduce_s = o->allreduce_s, .world_size = t->world};
    enum rz_status st = sync_check(t, o, &s, err);
    st = agree(t, st, err);
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
    t->loss_sum += o->loss;
    ls->comm_total += o->comm_s;
    ls->step_total += dt;
    int64_t steps = t->cfg->training.steps, done = t->step - r->start_step;
    if (t->step == r->start_step + 1 || t->step % t->cfg->training.log_interval == 0 ||
        t->step == steps)
        print_progress(t, &s, (rz_now() - ls->t_start) / (double)done *
                       (double)(steps - t->step), ls->comm_total / ls->step_total);
    if (!isfinite(o->loss))
        return rz_fail(err, RZ_EHEALTH, "training diverged: loss is %g at step %lld (lower "
                       "optimizer.lr or set optimizer.grad_clip)", o->loss, (long long)t->step);
    return RZ_OK;
}

static enum rz_status run_loop(struct trainer *t, struct train_result *r, struct rz_err *err)
{
    const struct cfg *c = t->cfg;
    int64_t steps = c->training.steps, warm = r->start_step + c->training.warmup_bench;
    int64_t stop_at = t->opts->stop_at_step > 0 && t->opts->stop_at_step < steps
                          ? t->opts->stop_at_step : steps;
    struct loop_stats ls = {.t_start = rz_now()};
    ls.t_steady = ls.t_start;
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
        if (st == RZ_OK && o.stop) {
            say(t, "stop signal: checkpointed at step %lld; exiting %d so the job is requeued",
                (long long)t->step, RZ_EXIT_REQUEUE);
            st = RZ_ESIGNAL;
        }
    }
    kern_ctx_profile(t->kern, NULL);
    if (st == RZ_OK)
        st = save_checkpoint(t, r, err); /* the end of the run or of the segment */
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

/* ---- summary ------------------------------------------------------------------------------------ */

static enum rz_status write_summary(struct trainer *t, const struct train_result *r,
                                    struct rz_err *err)
{
    struct metrics_rank_result mine = {
        .rank = t->rank, .steps = r->steps, .avg_loss = r->avg_loss, .final_loss = r->final_loss,
        .samples_per_sec = r->samples_per_sec / (double)t->world, .comm_share = r->comm_share,
        .duration_sec = r->duration_s, .peak_rss_bytes = r->peak_rss_bytes};
    snprintf(mine.host, sizeof mine.host, "%s", comm_host(t->comm));
    struct metrics_rank_result *all = calloc((size_t)t->world, sizeof *all);
    if (all == NULL)
        return rz_fail(err, RZ_ENOMEM, "summary: out of memory");
    enum rz_status st = comm_allgather_bytes(t->comm, &mine, sizeof mine, all, err);
    if (st == RZ_OK && t->rank == 0) {
        struct metrics_summary s = {
            .num_processes = t->world, .avg_loss = r->avg_loss, .final_loss = r->final_loss,
            .total_duration_sec = r->duration_s, .samples_per_sec = r->samples_per_sec,
            .tokens_per_sec = r->samples_per_sec * (double)t->dims.seq_len, .mfu = r->mfu,
            .peak_gflops = r->peak_gflops, .comm_share = r->comm_share,
            .allreduce_latency_s = r->allreduce_latency_s, .restarts = t->restarts,
            .resumed_from = r->resumed_from, .steps = r->steps,
            .num_parameters = r->num_parameters, .entropy_floor = r->entropy_floor,
            .config_path = t->cfg->source, .ranks = all};
        st = metrics_write_summary(t->opts->run_dir, &s, err);
    }
    free(all);
    return agree(t, st, err);
}

/* ---- entry -------------------------------------------------------------------------------------- */

static enum rz_status prepare(struct trainer *t, const struct train_opts *opts,
                              struct train_result *r, struct rz_err *err)
{
    memset(t, 0, sizeof *t);
    t->cfg = opts->cfg;
    t->opts = opts;
    t->saved_step = -1;
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
    char path[4096];
    enum rz_status st = choose_checkpoint(t, path, sizeof path, err);
    if (st == RZ_OK) st = plan_resume(t, path, err);
    if (st == RZ_OK) st = agree(t, trainer_init(t, err), err);
    if (st == RZ_OK && path[0] != '\0')
        st = load_checkpoint(t, path, r, err);
    return st;
}

enum rz_status train_run(const struct train_opts *opts, struct train_result *r,
                         struct rz_err *err)
{
    struct trainer t;
    memset(r, 0, sizeof *r);
    enum rz_status st = prepare(&t, opts, r, err);
    if (st == RZ_OK) {
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
