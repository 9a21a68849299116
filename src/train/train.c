/* train.c: one rank's training run (see train.h).  Set-up translates the config into each
 * module's typed options once; the step is a handful of calls; everything that needs all ranks
 * (stop signals, checkpoint commits, sync checks) happens at a step boundary, where every rank
 * takes the same branch because the decision itself came out of a collective.  The optimizer
 * step with ZeRO, the sync check and validation (train_step.c), the checkpoints (train_ckpt.c),
 * what the trainer prints (train_log.c) and the live metrics (train_live.c) are files of their
 * own; train_internal.h holds what they share. */
#include "config.h"

#include "train/train.h"

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
#include "health/watchdog.h"
#include "kernels/kernels.h"
#include "metrics/live_series.h"
#include "model/model.h"
#include "optim/optim.h"
#include "plan/plan.h"
#include "record/rank_log.h"
#include "record/summary.h"
#include "train/guard.h"
#include "train/train_internal.h"
#include "train/train_net.h"

static void trainer_free(struct trainer *t)
{
    ckpt_writer_destroy(t->writer); /* first: its thread reads the parameters and moments */
    free(t->live.gathered);
    free(t->live.ranks);
    free(t->live.hosts);
    train_net_free(&t->live.net);
    free(t->live.host_names);
    health_watchdog_stop(t->watchdog);
    rank_log_close(t->metrics);
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

enum rz_status train_data_opts(struct data_opts *o, const struct cfg *c, struct rz_err *err)
{
    *o = (struct data_opts){.vocab_size = c->model.vocab_size, .seq_len = c->model.seq_len,
                            .seed = (uint64_t)c->data.seed, .path = c->data.path,
                            .markov_branching = c->data.markov_branching,
                            .token_bytes = data_token_bytes(c->data.token_dtype),
                            .val_fraction = c->data.val_fraction, .val_path = c->data.val_path};
    return data_kind_parse(c->data.kind, &o->kind, err);
}

static enum rz_status trainer_init(struct trainer *t, struct rz_err *err)
{
    const struct cfg *c = t->cfg;
    enum kern_backend backend;
    struct data_opts dopts;
    struct optim_opts oopts;
    enum rz_status st = kern_backend_parse(c->kernels.backend, &backend, err);
    if (st == RZ_OK) st = train_data_opts(&dopts, c, err);
    if (st == RZ_OK) st = optim_opts_from_cfg(&oopts, c, err);
    if (st == RZ_OK) st = kern_ctx_create(&t->kern, backend, err);
    if (st == RZ_OK && t->dims.bf16) st = kern_check_bf16(t->kern, err); /* no silent fallback */
    if (st == RZ_OK) st = model_create(&t->model, &t->dims, t->kern, err);
    if (st == RZ_OK) st = data_create(&t->data, &dopts, err);
    uint64_t rss0 = rz_rss_bytes(); /* the optimizer's memory, measured (pages are zeroed) */
    if (st == RZ_OK) st = tr_zero_init(t, err);
    if (st == RZ_OK) st = optim_create(&t->optim, &oopts, t->shard_hi - t->shard_lo, err);
    t->optim_rss = rz_rss_bytes() - rss0;
    if (st == RZ_OK)
        st = rank_log_open(&t->metrics, t->opts->run_dir, t->opts->run_id, t->rank, err);
    if (st == RZ_OK) st = snapshot_config(t, err);
    if (st == RZ_OK) st = tr_ckpt_writer_init(t, err);
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
    struct rank_step s = {
        .step = t->step, .samples_seen = t->step * t->global_batch,
        .run_step = t->step - r->start_step, .loss = o->loss,
        .lr = t->last_lr, .grad_norm = o->grad_norm, .step_time_s = dt, .comm_time_s = o->comm_s,
        .samples_per_sec = (double)t->global_batch / dt,
        .tokens_per_sec = (double)(t->global_batch * t->dims.seq_len) / dt,
        .mfu = r->peak_gflops > 0 ? flops * (double)t->global_batch / (double)t->world / dt /
                                        (r->peak_gflops * 1e9) : 0.0,
        .rss_bytes = rz_rss_bytes(), .allreduce_s = o->allreduce_s, .world_size = t->world,
        .compute_time_s = o->compute_s, .grad_allreduce_s = o->grad_allreduce_s,
        .time = rz_unix_now(),
        .skipped = o->guard != GUARD_ACCEPT,
        .skip_reason = o->guard_why, .skipped_total = t->guard.skipped};
    metrics_window_add(&t->live.window, dt, o->compute_s, o->comm_s, o->allreduce_s,
                       o->grad_allreduce_s);
    enum rz_status st = tr_sync_check(t, o, &s, err); /* agreed by every rank when it ran */
    if (st == RZ_OK && tr_validation_due(t)) {
        st = tr_validate(t, err);
        s.has_val = 1;
        s.val_loss = t->val_loss;
    }
    if (st != RZ_OK)
        return st;
    st = rank_log_write(t->metrics, &s, err);
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
static double test_hold(struct trainer *t, struct train_result *r, int64_t stop_at)
{
#if RZ_HOOKS_ENABLED
    const struct rz_hook_hold *h = &rz_hooks.hold;
    bool here = false;
    for (int i = 0; i < h->n; i++)
        here |= h->steps[i] == t->step;
    bool computed = r->start_step < t->step || (t->step == 0 && r->start_step == 0);
    if (!here || !computed || t->step >= stop_at)
        return 0.0;
    tr_ckpt_poll(t, r, true); /* "a checkpoint due at STEP committed" (hooks.h) */
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
    tr_ckpt_interval_init(t, r);
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
        st = tr_train_step(t, t->last_lr, &o, err);
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
        if (st == RZ_OK && o.stop)
            st = tr_save_checkpoint(t, r, err);
        else if (st == RZ_OK && tr_checkpoint_due(t))
            st = tr_checkpoint_periodic(t, r, err);
        tr_ckpt_poll(t, r, false); /* a write behind training that ended is said now */
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
        st = tr_validate(t, err); /* the parameters the run ends with */
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
    struct summary_rank mine = {
        .rank = t->rank, .steps = r->steps, .avg_loss = r->avg_loss, .final_loss = r->final_loss,
        .samples_per_sec = r->samples_per_sec / (double)t->world, .comm_share = r->comm_share,
        .duration_sec = r->duration_s, .peak_rss_bytes = r->peak_rss_bytes,
        .predicted_peak_rss_bytes = r->predicted_peak_rss_bytes,
        .optimizer_rss_bytes = t->optim_rss};
    snprintf(mine.host, sizeof mine.host, "%s", comm_host(t->comm));
    struct summary_rank *all = calloc((size_t)t->world, sizeof *all);
    if (all == NULL)
        return rz_fail(err, RZ_ENOMEM, "summary: out of memory");
    enum rz_status st = train_net_summary(&t->live.net, t->comm,
                                          (const char(*)[64])t->live.hosts, &mine, err);
    if (st == RZ_OK)
        st = comm_allgather_bytes(t->comm, &mine, sizeof mine, all, err);
    if (st == RZ_OK && t->rank == 0) {
        struct summary_doc s = {
            .num_processes = t->world, .avg_loss = r->avg_loss, .final_loss = r->final_loss,
            .total_duration_sec = r->duration_s, .samples_per_sec = r->samples_per_sec,
            .tokens_per_sec = r->samples_per_sec * (double)t->dims.seq_len, .mfu = r->mfu,
            .peak_gflops = r->peak_gflops, .comm_share = r->comm_share,
            .allreduce_latency_s = r->allreduce_latency_s, .restarts = t->restarts,
            .resumed_from = r->resumed_from, .steps = r->steps,
            .num_parameters = r->num_parameters, .entropy_floor = r->entropy_floor,
            .unigram_entropy = r->unigram_entropy, .tokenizer_sha256 = r->tokenizer_sha256,
            .config_path = t->cfg->source, .ranks = all, .has_val = r->val_step >= 0,
            .val_step = r->val_step,
            .val_loss = r->val_loss, .val_samples = t->cfg->training.eval_samples,
            .ckpt_mode = t->cfg->checkpoint.mode, .ckpt_count = r->ckpt_count,
            .ckpt_failed = r->ckpt_failed,
            .ckpt_stall_s = r->ckpt_stall_s, .ckpt_stall_max_s = r->ckpt_stall_max_s,
            .ckpt_commit_s = r->ckpt_commit_s, .ckpt_policy = t->cfg->checkpoint.policy,
            .ckpt_interval = r->ckpt_interval, .ckpt_interval_why = r->ckpt_interval_why};
        for (int q = 0; q < t->world; q++) { /* the worst rank, measured and predicted */
            s.peak_rss_bytes = all[q].peak_rss_bytes > s.peak_rss_bytes ? all[q].peak_rss_bytes
                                                                        : s.peak_rss_bytes;
            s.predicted_peak_rss_bytes =
                all[q].predicted_peak_rss_bytes > s.predicted_peak_rss_bytes
                    ? all[q].predicted_peak_rss_bytes : s.predicted_peak_rss_bytes;
        }
        st = summary_write(t->opts->run_dir, &s, err);
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
    t->submitted_step = -1;
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
        r->unigram_entropy = data_unigram_entropy(t.data);
        rz_fmt(r->tokenizer_sha256, sizeof r->tokenizer_sha256, "%s",
               data_tokenizer_sha256(t.data));
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
    tr_ckpt_writer_free(&t, r); /* a write still behind training ends, whatever ended the run */
    r->peak_rss_bytes = rz_peak_rss_bytes();
    if (st == RZ_OK || st == RZ_ESIGNAL) {
        enum rz_status s2 = write_summary(&t, r, err);
        if (st == RZ_OK)
            st = s2;
    }
    trainer_free(&t);
    return st;
}
