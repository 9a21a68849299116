/* train_ckpt.c: the trainer's checkpoints (see train_internal.h): which one to resume from
 * (rank 0 decides, quarantining damaged ones), the resume planned from its metadata before the
 * model is built (elastic resume keeps the global batch), loading it into the built trainer, and
 * committing the state at a step boundary with retention, the ZeRO moments gathered tensor by
 * tensor for rank 0's writer.  The tr_* entry points are collective: all ranks agree on the
 * outcome. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckpt/ckpt.h"
#include "core/hooks.h"
#include "core/util.h"
#include "data/data.h"
#include "health/watchdog.h"
#include "metrics/live_series.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/train_internal.h"

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

/* ---- resume ------------------------------------------------------------------------------------ */

static void report_skip(void *user, const char *path, const char *reason)
{
    const struct trainer *t = user;
    tr_say(t, "resume: skipped damaged checkpoint %s (%s); moved to quarantine/", path, reason);
}

/* Which checkpoint to resume from ("" for a fresh start); rank 0 decides, everyone learns it. */
enum rz_status tr_choose_checkpoint(struct trainer *t, char *path, size_t len,
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
    st = tr_agree(t, st, err);
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
    tr_say(t, "resume: elastic: keeping the global batch %lld on %lld ranks as batch %lld x accum "
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

/* The checkpoint's tokenizer against the data's: token ids of another tokenizer mean other
 * pieces, so the model would go on training on text it cannot read.  Only two named ones can
 * differ: a checkpoint that records none (or was written before the attribute existed) and
 * headerless data say nothing. */
static enum rz_status check_tokenizer(const struct trainer *t, const char *path,
                                      const struct ckpt_meta *meta, struct rz_err *err)
{
    const char *ours = data_tokenizer_sha256(t->data);
    if (!meta->tokenizer_recorded || meta->tokenizer_sha256[0] == '\0' || ours[0] == '\0' ||
        strcmp(meta->tokenizer_sha256, ours) == 0)
        return RZ_OK;
    return rz_fail(err, RZ_ECONFIG, "resume from %s: the checkpoint was trained with tokenizer "
                   "%s, but %s was encoded with tokenizer %s; encode the data with the "
                   "checkpoint's tokenizer, or start without it (--resume never)", path,
                   meta->tokenizer_sha256, t->cfg->data.path, ours);
}

enum rz_status tr_load_checkpoint(struct trainer *t, const char *path, struct train_result *r,
                                  struct rz_err *err)
{
    struct ckpt_meta meta;
    memset(&meta, 0, sizeof meta);
    struct ckpt_tensors x = tensors_of(t);
    enum rz_status st = ckpt_load(path, &meta, &x, err);
    if (st == RZ_EIO)
        st = RZ_ENOCKPT; /* an unreadable checkpoint is no valid checkpoint */
    if (st == RZ_OK)
        st = check_tokenizer(t, path, &meta, err);
    st = tr_agree(t, st, err);
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
        tr_say(t, "resume: loaded %s: step %lld, %lld samples seen, written by %lld rank(s)%s",
            path, (long long)meta.step, (long long)meta.samples_seen, (long long)meta.world_size,
            strcmp(meta.config_sha256, t->config_sha256) != 0 ? "; the config differs from the "
            "checkpoint's (its text is stored in the file)" : "");
    }
    ckpt_meta_free(&meta);
    return st;
}

/* Read the chosen checkpoint's metadata before building the model: the global batch decides
 * the per-rank batch (elastic resume) and the shapes must match the config. */
enum rz_status tr_plan_resume(struct trainer *t, const char *path, struct rz_err *err)
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
    st = tr_agree(t, st, err);
    if (st == RZ_OK)
        st = fit_global_batch(t, meta.global_batch, err);
    ckpt_meta_free(&meta);
    return tr_agree(t, st, err);
}

/* ---- checkpoints -------------------------------------------------------------------------------- */

/* The metadata of the state at this step boundary. */
static struct ckpt_meta meta_now(const struct trainer *t)
{
    struct ckpt_meta meta = {
        .step = t->step, .samples_seen = t->step * t->global_batch,
        .global_batch = t->global_batch, .world_size = t->world, .adam_t = t->optim->t,
        .lr = t->last_lr, .init_seed = (uint64_t)t->cfg->training.seed,
        .data_seed = (uint64_t)t->cfg->data.seed, .loss_sum = t->loss_sum,
        .train_time_s = t->train_time, .restarts = t->restarts, .guard = t->guard,
        .dims = t->dims, .config_yaml = t->config_yaml};
    snprintf(meta.config_sha256, sizeof meta.config_sha256, "%s", t->config_sha256);
    snprintf(meta.tokenizer_sha256, sizeof meta.tokenizer_sha256, "%s",
             data_tokenizer_sha256(t->data));
    return meta;
}

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

static enum rz_status agree_written(struct trainer *t, struct train_result *r,
                                    struct rz_err *err);

/* Every rank, on a checkpoint write's failure the ranks agreed on (err): whether training goes
 * on.  A write that failed leaves what is saved as it was (the commit is atomic: durable.h), so
 * the run goes on from the last good checkpoint, checkpoint.failures_tolerated times in a row:
 * a full disk that someone frees, or a quota raised, costs no restart.  Only I/O failures. */
static bool tolerate_failed_write(struct trainer *t, struct train_result *r, enum rz_status st,
                                  const struct rz_err *err)
{
    int64_t most = t->cfg->checkpoint.failures_tolerated;
    if (st != RZ_EIO || t->ckpt_failed_row >= most)
        return false;
    t->ckpt_failed_row++;
    r->ckpt_failed++;
    char last[32] = "none yet";
    if (t->saved_step >= 0)
        snprintf(last, sizeof last, "step %lld", (long long)t->saved_step);
    tr_say(t, "checkpoint: not written: %s; training goes on, the last good checkpoint stays "
        "(%s): failure %lld in a row of the %lld tolerated (checkpoint.failures_tolerated)",
        err->msg, last, (long long)t->ckpt_failed_row, (long long)most);
    return true;
}

enum rz_status tr_save_checkpoint(struct trainer *t, struct train_result *r,
                                  struct rz_err *err)
{
    enum rz_status st = agree_written(t, r, err); /* a write behind training ends first */
    if (st != RZ_OK || t->saved_step == t->step)
        return st; /* this state is on disk already */
    st = tr_params_complete(t, err);
    double commit_ms = 0.0, prune_ms = 0.0;
    char path[4096] = "";
    struct moment_fetch fetch = {.t = t};
    health_watchdog_pause(t->watchdog, 1);
    if (st == RZ_OK && t->rank != 0 && t->zero > 0)
        st = gather_moments_from(t, 0, err); /* rank 0 writes what they gather */
    if (st == RZ_OK && t->rank == 0) {
        test_save_delay(t);
        struct ckpt_meta meta = meta_now(t);
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
        t->last_commit_s = commit_ms * 1e-3;
        if (st == RZ_OK) {
            struct rz_err perr;
            t0 = rz_now();
            /* Our own fresh commit (its checksums were computed from these buffers) counts as
             * valid without a read-back; the older kept files are verified once each. */
            ckpt_known_add(&t->ckpt_known, path);
            if (ckpt_prune(t->ckpt_dir, t->cfg->checkpoint.keep, &t->ckpt_known, &perr) != RZ_OK)
                tr_say(t, "checkpoint: retention: %s (continuing)", perr.msg);
            prune_ms = (rz_now() - t0) * 1e3;
        }
    }
    st = tr_agree(t, st, err);
    health_watchdog_pause(t->watchdog, 0);
    if (st != RZ_OK)
        return st;
    t->saved_step = t->step;
    t->ckpt_failed_row = 0;
    t->live.last_ckpt_unix = rz_unix_now();
    if (t->rank == 0)
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", path);
    tr_say(t, "checkpoint: step %lld committed to %s in %.0f ms (retention %.0f ms)",
        (long long)t->step, path, commit_ms, prune_ms);
    return RZ_OK;
}

/* ---- checkpoints behind training (checkpoint.mode async, ckpt/ckpt_async.h) ------------------- */

enum rz_status tr_ckpt_writer_init(struct trainer *t, struct rz_err *err)
{
    t->submitted_step = -1;
    t->ckpt_async = strcmp(t->cfg->checkpoint.mode, "async") == 0;
    if (!t->ckpt_async || t->rank != 0)
        return RZ_OK;
    return ckpt_writer_create(&t->writer, model_num_params(t->model), err);
}

/* Rank 0: a finished write's line (and retention's warning). */
static void say_written(struct trainer *t, struct train_result *r,
                        const struct ckpt_write_result *w)
{
    if (w->status != RZ_OK) {
        tr_say(t, "checkpoint: the write of step %lld behind training failed: %s",
            (long long)w->step, w->err.msg);
        return;
    }
    if (w->prune_failed)
        tr_say(t, "checkpoint: retention: %s (continuing)", w->prune_msg);
    t->live.last_ckpt_unix = rz_unix_now();
    snprintf(r->checkpoint, sizeof r->checkpoint, "%s", w->path);
    r->ckpt_commit_s += w->commit_ms * 1e-3;
    tr_say(t, "checkpoint: step %lld committed to %s in %.0f ms behind training (snapshot copy "
        "%.1f ms, retention %.0f ms)", (long long)w->step, w->path, w->commit_ms, w->copy_ms,
        w->prune_ms);
}

/* Rank 0: take the finished write's result (block: wait for it first). */
static void collect(struct trainer *t, struct train_result *r, bool block)
{
    if (t->writer == NULL || t->written_held)
        return;
    if (!block && !ckpt_writer_ready(t->writer))
        return;
    if (ckpt_writer_wait(t->writer, &t->written, NULL)) {
        t->written_held = true;
        say_written(t, r, &t->written);
    }
}

void tr_ckpt_poll(struct trainer *t, struct train_result *r, bool block)
{
    bool waits = block && t->writer != NULL && ckpt_writer_pending(t->writer);
    if (waits) /* a write of gigabytes is no hang: the commit's own limit applies */
        health_watchdog_pause(t->watchdog, 1);
    collect(t, r, block);
    if (waits)
        health_watchdog_pause(t->watchdog, 0);
}

/* Collective: the write behind training, if any, is finished (rank 0 waits for it) and every
 * rank learns its outcome; saved_step follows it.  A failed write within
 * checkpoint.failures_tolerated is RZ_OK: the caller writes the current state next. */
static enum rz_status agree_written(struct trainer *t, struct train_result *r,
                                    struct rz_err *err)
{
    if (t->submitted_step < 0)
        return RZ_OK;
    enum rz_status st = RZ_OK;
    /* every rank: the others wait here while rank 0's write ends, as in an in-line commit */
    health_watchdog_pause(t->watchdog, 1);
    if (t->rank == 0) {
        collect(t, r, true);
        if (t->written_held && t->written.status != RZ_OK)
            st = rz_fail(err, t->written.status, "checkpoint of step %lld (behind training): %s",
                         (long long)t->written.step, t->written.err.msg);
        t->written_held = false;
    }
    st = tr_agree(t, st, err);
    health_watchdog_pause(t->watchdog, 0);
    if (st == RZ_OK) {
        t->saved_step = t->submitted_step;
        t->ckpt_failed_row = 0;
    }
    t->submitted_step = -1;
    return tolerate_failed_write(t, r, st, err) ? RZ_OK : st;
}

/* ZeRO: every tensor's moments, gathered into the writer's buffers on rank 0 (a collective). */
static enum rz_status gather_moments_to_writer(struct trainer *t, struct rz_err *err)
{
    size_t count;
    const struct model_tensor *table = model_tensors(t->model, &count);
    enum rz_status st = RZ_OK;
    for (size_t k = 0; k < 2 * count; k++) {
        float *out = NULL;
        if (t->rank == 0)
            out = ckpt_writer_moment(t->writer, k < count ? 0 : 1) + table[k % count].offset;
        struct rz_err e;
        enum rz_status s2 = gather_moment(t, k, out, &e);
        if (s2 != RZ_OK && st == RZ_OK) /* every gather still runs: no rank is left waiting */
            st = rz_fail(err, s2, "%s", e.msg);
    }
    return st;
}

/* Collective: hand the current state to the writer. */
static enum rz_status save_behind(struct trainer *t, struct train_result *r, struct rz_err *err)
{
    enum rz_status st = agree_written(t, r, err); /* at most one write in flight */
    if (st != RZ_OK || t->saved_step == t->step)
        return st;
    st = tr_params_complete(t, err);
    if (st == RZ_OK && t->zero > 0)
        st = gather_moments_to_writer(t, err);
    if (st == RZ_OK && t->rank == 0) {
        struct ckpt_meta meta = meta_now(t);
        struct ckpt_tensors x = tensors_of(t);
        x.moments_sharded = t->zero > 0; /* gathered into the writer already */
        st = ckpt_writer_submit(t->writer, t->ckpt_dir, &meta, &x, t->cfg->checkpoint.keep,
                                &t->ckpt_known, err);
    }
    st = tr_agree(t, st, err);
    if (st == RZ_OK)
        t->submitted_step = t->step;
    return st;
}

/* The stall of the last periodic checkpoint grows by the optimizer's waits for its snapshot
 * (train_step.c, before each update), added here before the next one and at the end. */
static void fold_fence_waits(struct trainer *t, struct train_result *r)
{
    r->ckpt_stall_s += t->stall_fence_s;
    t->stall_last_s += t->stall_fence_s;
    t->stall_fence_s = 0.0;
    r->ckpt_stall_max_s = t->stall_last_s > r->ckpt_stall_max_s ? t->stall_last_s
                                                                 : r->ckpt_stall_max_s;
}

static enum rz_status young_daly_update(struct trainer *t, struct train_result *r,
                                        double stall_s, struct rz_err *err);

enum rz_status tr_checkpoint_periodic(struct trainer *t, struct train_result *r,
                                      struct rz_err *err)
{
    if (t->saved_step == t->step || t->submitted_step == t->step)
        return RZ_OK;
    fold_fence_waits(t, r);
    double t0 = rz_now();
    t->last_commit_s = 0.0;
    enum rz_status st = t->ckpt_async ? save_behind(t, r, err) : tr_save_checkpoint(t, r, err);
    if (tolerate_failed_write(t, r, st, err)) { /* this one was not written or handed over */
        t->ckpt_from = t->step;                 /* the next try is an interval on */
        return RZ_OK;
    }
    if (st == RZ_OK) {
        r->ckpt_commit_s += t->last_commit_s; /* in line; a write behind adds its own when said */
        r->ckpt_count++;
        t->stall_last_s = rz_now() - t0;
        r->ckpt_stall_s += t->stall_last_s;
        fold_fence_waits(t, r);
        st = young_daly_update(t, r, t->stall_last_s, err);
    }
    return st;
}

void tr_ckpt_writer_free(struct trainer *t, struct train_result *r)
{
    fold_fence_waits(t, r);
    if (t->writer == NULL)
        return;
    tr_ckpt_poll(t, r, true); /* a write still in flight is finished and said, not dropped */
    ckpt_writer_destroy(t->writer);
    t->writer = NULL;
}

/* ---- the interval (checkpoint.policy) -------------------------------------------------------- */

int64_t train_young_daly_steps(double cost_s, double mtbf_s, double step_s, int64_t max_steps)
{
    if (!(cost_s > 0.0) || !(mtbf_s > 0.0) || !(step_s > 0.0) || max_steps < 1)
        return 0;
    double steps = sqrt(2.0 * cost_s * mtbf_s) / step_s + 0.5;
    if (steps < 1.0)
        return 1;
    return steps >= (double)max_steps ? max_steps : (int64_t)steps;
}

void tr_ckpt_interval_init(struct trainer *t, struct train_result *r)
{
    const struct cfg_checkpoint *c = &t->cfg->checkpoint;
    t->ckpt_every = c->interval;
    t->ckpt_from = t->step;
    t->ckpt_young_daly = strcmp(c->policy, "young_daly") == 0;
    r->ckpt_interval = t->ckpt_every;
    if (!t->ckpt_young_daly) {
        rz_fmt(r->ckpt_interval_why, sizeof r->ckpt_interval_why,
               "checkpoint.policy fixed: checkpoint.interval");
        return;
    }
    rz_fmt(r->ckpt_interval_why, sizeof r->ckpt_interval_why,
           "checkpoint.policy young_daly: checkpoint.interval until %s", c->mtbf_s > 0.0
           ? "the first checkpoint has measured its cost" : "an MTBF is configured or observed "
           "(checkpoint.mtbf_s 0 and no failure in this job's history)");
    tr_say(t, "checkpoint: every %lld steps (%s)", (long long)t->ckpt_every, r->ckpt_interval_why);
}

bool tr_checkpoint_due(const struct trainer *t)
{
    if (t->ckpt_every <= 0)
        return false;
    if (t->ckpt_young_daly)
        return t->step - t->ckpt_from >= t->ckpt_every;
    return t->step % t->ckpt_every == 0;
}

/* Collective, after a periodic checkpoint under young_daly: rank 0 folds in what it cost and
 * sets the interval from then on; every rank takes rank 0's (they must checkpoint together). */
static enum rz_status young_daly_update(struct trainer *t, struct train_result *r,
                                        double stall_s, struct rz_err *err)
{
    const struct cfg_checkpoint *c = &t->cfg->checkpoint;
    t->ckpt_from = t->step;
    if (!t->ckpt_young_daly || !(c->mtbf_s > 0.0))
        return RZ_OK;
    int64_t every = t->ckpt_every;
    if (t->rank == 0) {
        t->ckpt_cost_s += stall_s;
        t->ckpt_costs++;
        double cost = t->ckpt_cost_s / (double)t->ckpt_costs;
        double step = t->step > 0 ? t->train_time / (double)t->step : 0.0;
        int64_t yd = train_young_daly_steps(cost, c->mtbf_s, step, t->cfg->training.steps);
        if (yd > 0) {
            every = yd;
            rz_fmt(r->ckpt_interval_why, sizeof r->ckpt_interval_why, "checkpoint.policy "
                   "young_daly: sqrt(2 x %.3f s a checkpoint x %.0f s MTBF) = %.1f s of training, "
                   "%.3f s a step", cost, c->mtbf_s, sqrt(2.0 * cost * c->mtbf_s), step);
        }
    }
    enum rz_status st = comm_bcast_bytes(t->comm, &every, sizeof every, err);
    if (st == RZ_OK && every != t->ckpt_every) {
        tr_say(t, "checkpoint: every %lld steps from step %lld (%s)", (long long)every,
            (long long)t->step, r->ckpt_interval_why);
        t->ckpt_every = every;
    }
    r->ckpt_interval = t->ckpt_every;
    return st;
}
