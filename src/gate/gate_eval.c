#include "config.h"

/* gate_eval.c: the gate criteria of docs/gates.md, the verdict, the rollback checkpoint and the
 * planned action, computed from a struct gate_input.
 * Deliberately not here: the loss criteria (gate_loss.c), packet loss (gate_net.c), reading
 * files (gate_read.c, gate_baseline.c), rendering (gate_report.c,
 * gate_html.c, gate_prom.c) and acting on the verdict (ryzen-step submits and rolls back). */

#include "gate/gate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gate/gate_internal.h"
#include "record/health_json.h"

#define GATE_SUSPECT_EFFICIENCY 1.02


static void gate_crit_init(struct gate_result *res, const struct cfg *c)
{
    const struct cfg_gates *g = &c->gates;
    const struct {
        const char *name, *unit;
        bool hi;
        double go, no_go;
    } t[GATE_N_CRIT] = {
#define RZ_GATE_ROW(ID, name, unit, higher, go, no_go, doc, family, help, scale)                  \
    [GATE_##ID] = {#name, unit, higher, g->name##_go, g->name##_no_go},
        RZ_GATES(RZ_GATE_ROW) /* config/gate_list.h */
#undef RZ_GATE_ROW
        [GATE_DURATION] = {"duration", "h", true, g->min_duration_h, NAN},
    };
    for (int i = 0; i < GATE_N_CRIT; i++) {
        struct gate_criterion *k = &res->crit[i];
        memset(k, 0, sizeof *k);
        k->name = t[i].name;
        k->unit = t[i].unit;
        k->higher_is_better = t[i].hi;
        k->go = t[i].go;
        k->no_go = t[i].no_go;
        gate_set(k, GATE_NOT_JUDGED);
    }
}

static bool gate_steady(const struct cfg *c, int64_t run_step)
{
    return run_step > c->training.warmup_bench;
}

/* ---- performance ----------------------------------------------------------------------------- */

static enum rz_status gate_throughput(struct gate_result *res, const struct gate_input *in,
                                      const struct cfg *c, struct rz_err *err)
{
    struct gate_criterion *k = &res->crit[GATE_THROUGHPUT];
    size_t n = 0;
    for (size_t i = 0; i < in->n_steps; i++)
        n += gate_steady(c, in->steps[i].run_step);
    if (n == 0) {
        gate_note(k, "no steady-state steps: all %zu steps are within the first %lld of a run "
                  "(training.warmup_bench)", in->n_steps, (long long)c->training.warmup_bench);
        return RZ_OK;
    }
    size_t w = n / 10 > 5 ? n / 10 : 5, nw = n / w > 0 ? n / w : 1;
    res->windows = calloc(nw, sizeof *res->windows);
    double *rates = calloc(nw, sizeof *rates);
    if (res->windows == NULL || rates == NULL) {
        free(rates);
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    }
    size_t seen = 0;
    double samples = 0, secs = 0;
    for (size_t i = 0; i < in->n_steps; i++) {
        const struct gate_step *s = &in->steps[i];
        if (!gate_steady(c, s->run_step))
            continue;
        struct gate_window *win = &res->windows[res->n_windows];
        if (samples == 0 && secs == 0)
            win->first_step = s->step;
        samples += s->global_batch;
        secs += s->step_time_s;
        seen++;
        if ((seen % w == 0 && res->n_windows + 1 < nw) || seen == n) {
            win->last_step = s->step;
            win->samples_per_sec = samples / secs;
            rates[res->n_windows++] = win->samples_per_sec;
            samples = secs = 0;
        }
    }
    gate_measure(k, rz_quantile(rates, res->n_windows, 0.5), (int64_t)n);
    res->throughput_p10 = rz_quantile(rates, res->n_windows, 0.1);
    gate_note(k, "median of %zu window(s) of %zu steady steps; p10 %.6g samples/s", nw, w,
              res->throughput_p10);
    free(rates);
    return RZ_OK;
}

static void gate_efficiency(struct gate_result *res, const struct gate_input *in)
{
    struct gate_criterion *k = &res->crit[GATE_EFFICIENCY];
    const struct gate_baseline *b = &in->baseline;
    double tp = res->crit[GATE_THROUGHPUT].measured;
    if (!b->wanted) {
        gate_set(k, GATE_NA);
        gate_note(k, "%s", b->reason);
    } else if (!b->present) {
        gate_note(k, "%s", b->reason);
    } else if (isnan(tp) || !(b->throughput > 0)) {
        gate_note(k, "no throughput measured %s", isnan(tp) ? "in this run" : "in the baseline");
    } else {
        double eff = (tp / in->world_size) / (b->throughput / (double)b->world_size);
        gate_measure(k, eff, res->crit[GATE_THROUGHPUT].samples);
        gate_note(k, "weak scaling: (%.6g/%d) / (%.6g/%lld) vs %s job %s", tp, in->world_size,
                  b->throughput, (long long)b->world_size, b->phase, b->job);
        if (eff > GATE_SUSPECT_EFFICIENCY) {
            rz_fmt(res->suspect, sizeof res->suspect,
                     "efficiency %.4g > %.2f is suspect under weak scaling; likely causes: the "
                     "baseline was measured under heavier contention, a different global or "
                     "per-rank batch, too few windows, or a different machine or ISA",
                     eff, GATE_SUSPECT_EFFICIENCY);
            gate_note(k, "SUSPECT: %s", res->suspect);
        }
    }
}

/* Per-rank table and the comm criterion (worst rank's exposed-communication share). */
static enum rz_status gate_ranks(struct gate_result *res, const struct gate_input *in,
                                 const struct cfg *c, struct rz_err *err)
{
    res->rank_stats = calloc((size_t)in->world_size + 1, sizeof *res->rank_stats);
    if (res->rank_stats == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    struct gate_criterion *k = &res->crit[GATE_COMM];
    double worst = NAN;
    int worst_rank = -1;
    int64_t samples = 0;
    for (int r = 0; r < in->world_size; r++) {
        const struct gate_rank *rk = &in->ranks[r];
        struct gate_rank_stat *rs = &res->rank_stats[r];
        double *t = calloc(rk->n_rows + 1, sizeof *t), comm = 0, step = 0, compute = 0;
        if (t == NULL)
            return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
        size_t m = 0;
        for (size_t i = 0; i < rk->n_rows; i++) {
            const struct rank_row *row = &rk->rows[i];
            rs->peak_rss_bytes = row->rss_bytes > rs->peak_rss_bytes ? row->rss_bytes
                                                                     : rs->peak_rss_bytes;
            if (!gate_steady(c, row->run_step))
                continue;
            comm += row->comm_time_s;
            step += row->step_time_s;
            compute += row->compute_time_s; /* NaN when a line lacks it: then unknown */
            t[m++] = row->step_time_s;
        }
        rs->steps = (int64_t)rk->n_rows;
        rs->mean_step_s = m ? step / (double)m : (double)NAN;
        rs->mean_compute_s = m ? compute / (double)m : (double)NAN;
        rs->comm_share = m ? comm / step : (double)NAN;
        for (int q = 0; q < 5; q++)
            rs->q[q] = rz_quantile(t, m, q / 4.0);
        free(t);
        samples += (int64_t)m;
        if (m > 0 && (isnan(worst) || rs->comm_share > worst)) {
            worst = rs->comm_share;
            worst_rank = r;
        }
    }
    if (worst_rank < 0) {
        gate_note(k, "no steady-state steps");
        return RZ_OK;
    }
    gate_measure(k, worst, samples);
    gate_note(k, "worst rank %d (%s): sum comm_time_s / sum step_time_s over steady steps",
              worst_rank, in->ranks[worst_rank].host);
    return RZ_OK;
}

static enum rz_status gate_allreduce(struct gate_result *res, const struct gate_input *in,
                                     const struct cfg *c, struct rz_err *err)
{
    struct gate_criterion *k = &res->crit[GATE_ALLREDUCE_P99_MS];
    size_t total = 0, m = 0;
    for (int r = 0; r < in->world_size; r++)
        total += in->ranks[r].n_rows;
    double *v = calloc(total + 1, sizeof *v);
    if (v == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    for (int r = 0; r < in->world_size; r++)
        for (size_t i = 0; i < in->ranks[r].n_rows; i++)
            if (gate_steady(c, in->ranks[r].rows[i].run_step))
                v[m++] = in->ranks[r].rows[i].allreduce_s * 1000.0;
    if (m == 0) {
        gate_note(k, "no steady-state steps");
    } else {
        res->allreduce_p50_ms = rz_quantile(v, m, 0.5);
        gate_measure(k, rz_quantile(v, m, 0.99), (int64_t)m);
        gate_note(k, "the small collective (loss, stop flag, norms): p50 %.4g ms, p99 %.4g ms "
                  "over steady steps of all ranks", res->allreduce_p50_ms, k->measured);
    }
    /* the gradient all-reduce: its own time and the exposed part, where the metrics have it */
    for (int part = 0; part < 2; part++) {
        m = 0;
        for (int r = 0; r < in->world_size; r++)
            for (size_t i = 0; i < in->ranks[r].n_rows; i++) {
                const struct rank_row *row = &in->ranks[r].rows[i];
                if (gate_steady(c, row->run_step) && !isnan(row->grad_allreduce_s))
                    v[m++] = 1000.0 * (part == 0 ? row->grad_allreduce_s : row->comm_time_s);
            }
        double *p50 = part == 0 ? &res->grad_p50_ms : &res->exposed_p50_ms;
        double *p99 = part == 0 ? &res->grad_p99_ms : &res->exposed_p99_ms;
        *p50 = m > 0 ? rz_quantile(v, m, 0.5) : (double)NAN;
        *p99 = m > 0 ? rz_quantile(v, m, 0.99) : (double)NAN;
    }
    if (!isnan(res->grad_p50_ms))
        gate_note(k, "the gradient all-reduce: p50 %.4g ms, p99 %.4g ms, of which exposed p50 "
                  "%.4g ms, p99 %.4g ms", res->grad_p50_ms, res->grad_p99_ms,
                  res->exposed_p50_ms, res->exposed_p99_ms);
    free(v);
    return RZ_OK;
}

/* Straggler: each rank's mean compute time (forward and backward, not blocked in communication)
 * over its steady steps, against the median rank's.  A slow rank makes every other rank wait in
 * the allreduce, so its compute time, not its step time, tells it apart. */
static enum rz_status gate_straggler(struct gate_result *res, const struct gate_input *in,
                                     struct rz_err *err)
{
    struct gate_criterion *k = &res->crit[GATE_STRAGGLER_RATIO];
    res->straggler_rank = -1;
    if (in->world_size == 1) {
        gate_set(k, GATE_NA);
        gate_note(k, "one rank: nobody to wait for");
        return RZ_OK;
    }
    double *v = calloc((size_t)in->world_size + 1, sizeof *v), slowest = NAN;
    if (v == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    int n = 0;
    for (int r = 0; r < in->world_size; r++) {
        double c = res->rank_stats[r].mean_compute_s;
        if (isnan(c))
            continue;
        v[n++] = c;
        if (isnan(slowest) || c > slowest) {
            slowest = c;
            res->straggler_rank = r;
        }
    }
    if (n < in->world_size || n == 0) {
        gate_note(k, "no compute_time_s in the metrics of %d rank(s) (written before it "
                  "existed, or no steady steps)", in->world_size - n);
        res->straggler_rank = -1;
        free(v);
        return RZ_OK;
    }
    res->straggler_median_s = rz_quantile(v, (size_t)n, 0.5);
    free(v);
    const int s = res->straggler_rank;
    gate_measure(k, slowest / res->straggler_median_s, res->crit[GATE_THROUGHPUT].samples);
    gate_note(k, "slowest rank %d (%s): %.4g ms of compute per step, %.3gx the median rank's "
              "%.4g ms", s, in->ranks[s].host, 1e3 * slowest, k->measured,
              1e3 * res->straggler_median_s);
    return RZ_OK;
}

/* ---- correctness ----------------------------------------------------------------------------- */

static void gate_sync(struct gate_result *res, const struct gate_input *in)
{
    struct gate_criterion *ks = &res->crit[GATE_SYNC_AGREEMENT];
    struct gate_criterion *kg = &res->crit[GATE_GRAD_NORM_SPREAD];
    int64_t checks = 0, agree = 0, first_bad = -1;
    double spread = 0;
    res->last_good_sync_step = -1;
    if (in->world_size == 1) {
        /* one rank has nobody to disagree with; its checkpoints are all "in sync" */
        gate_set(ks, GATE_NA);
        gate_set(kg, GATE_NA);
        gate_note(ks, "one rank: nothing to synchronize");
        gate_note(kg, "one rank: nothing to synchronize");
        res->last_good_sync_step = in->n_steps > 0 ? in->steps[in->n_steps - 1].step : -1;
        return;
    }
    for (size_t i = 0; i < in->n_steps; i++) {
        const struct gate_step *s = &in->steps[i];
        if (s->sync_ranks == 0)
            continue;
        checks++;
        spread = fmax(spread, s->gnorm_post_spread);
        if (s->sync_ok_ranks == in->world_size) {
            agree++;
            res->last_good_sync_step = s->step;
        } else if (first_bad < 0) {
            first_bad = s->step;
        }
    }
    if (checks == 0) {
        gate_note(ks, "no sync checks in the metrics (health.sync_check_interval = 0, or the run "
                  "was shorter than one interval)");
        gate_note(kg, "no sync checks in the metrics");
        return;
    }
    gate_measure(ks, (double)agree / (double)checks, checks);
    gate_note(ks, "%lld of %lld sync checks agreed on every rank", (long long)agree,
              (long long)checks);
    if (first_bad >= 0)
        gate_note(ks, "first disagreement at step %lld", (long long)first_bad);
    gate_measure(kg, spread, checks);
    gate_note(kg, "max relative spread of post-allreduce gradient norms over sync checks");
}

/* ---- operations ------------------------------------------------------------------------------ */

/* Only a failure requeue (and a give-up) counts against the gate: a signal, a preemption or a
 * time limit is the site's doing, not the run's. */
static void gate_failures_uptime(struct gate_result *res, const struct gate_input *in)
{
    struct gate_criterion *kf = &res->crit[GATE_FAILURES], *ku = &res->crit[GATE_UPTIME];
    int64_t fail = in->requeues[EVENT_RQ_FAILURE] + in->give_ups, other = 0;
    double first = in->first_start_t, last = in->last_event_t;
    for (int r = 0; r < EVENT_N_RQ; r++)
        other += r == EVENT_RQ_FAILURE ? 0 : in->requeues[r];
    if (in->n_job_events == 0) {
        gate_note(kf, "no events of job %s in events.jsonl (not run by ryzen-step?)", in->job);
        gate_note(ku, "no events of job %s in events.jsonl", in->job);
        return;
    }
    gate_measure(kf, (double)fail, (int64_t)in->n_job_events);
    gate_note(kf, "restarts: %lld requeue(s) after a failure or give-up, %lld for other reasons "
              "(signal %lld, preemption %lld, time limit %lld, node failure %lld, slurm %lld, "
              "node excluded after the preflight %lld, network fault %lld, other %lld), %lld "
              "resume(s) from a "
              "checkpoint", (long long)fail,
              (long long)other, (long long)in->requeues[EVENT_RQ_SIGNAL],
              (long long)in->requeues[EVENT_RQ_PREEMPTION],
              (long long)in->requeues[EVENT_RQ_TIME_LIMIT],
              (long long)in->requeues[EVENT_RQ_NODE_FAILURE],
              (long long)in->requeues[EVENT_RQ_SLURM],
              (long long)in->requeues[EVENT_RQ_PREFLIGHT_NODE],
              (long long)in->requeues[EVENT_RQ_NETWORK],
              (long long)in->requeues[EVENT_RQ_OTHER],
              (long long)in->resumes);
    double train = 0;
    for (size_t i = 0; i < in->n_steps; i++)
        train += in->steps[i].step_time_s;
    if (isnan(first) || !(last > first)) {
        gate_note(ku, isnan(first) ? "no start event of job %s" : "job %s: wall time is 0 s",
                  in->job);
        return;
    }
    double up = train / (last - first);
    gate_measure(ku, fmin(up, 1.0), (int64_t)in->n_steps);
    gate_note(ku, "goodput: %.6g s of steps (each step once, however often it was trained) / "
              "%.6g s from the first start to the last event", train, last - first);
    if (up > 1.0)
        gate_note(ku, "capped at 1 (event times have 1 s resolution)");
}

/* The memory planner's prediction (summary.json) against the measured peak, for the rank that
 * measured the most. */
static void gate_memory_plan(struct gate_criterion *k, const struct gate_result *res,
                             const struct gate_input *in)
{
    int top = 0;
    for (int r = 1; r < in->world_size; r++)
        if (res->rank_stats[r].peak_rss_bytes > res->rank_stats[top].peak_rss_bytes)
            top = r;
    double predicted = in->ranks[top].predicted_peak_rss;
    double measured = (double)res->rank_stats[top].peak_rss_bytes;
    if (predicted > 0 && measured > 0)
        gate_note(k, "rank %d: peak RSS %.0f MB measured, %.0f MB predicted by the memory plan "
                  "(%+.1f%%)", top, measured / 1e6, predicted / 1e6,
                  100.0 * (measured - predicted) / predicted);
}

static void gate_memory(struct gate_result *res, const struct gate_input *in)
{
    struct gate_criterion *k = &res->crit[GATE_MEMORY];
    if (!in->has_health) {
        gate_note(k, "no health.json (written by ryzen-train --preflight): node memory unknown");
        return;
    }
    if (in->world_size == 0) {
        gate_note(k, "no metrics: peak memory unknown");
        return;
    }
    double worst = -1;
    bool limited = false;
    const char *worst_host = "";
    for (int r = 0; r < in->world_size; r++) {
        if (!(in->ranks[r].mem_total_bytes > 0)) {
            gate_note(k, "rank %d is not in health.json", r);
            return;
        }
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(in->ranks[q].host, in->ranks[r].host) != 0;
        if (!first)
            continue;
        double used = 0, total = in->ranks[r].mem_total_bytes, limit = in->ranks[r].mem_limit_bytes;
        double room = limit > 0 && limit < total ? limit : total; /* the job's own limit first */
        for (int q = r; q < in->world_size; q++)
            if (strcmp(in->ranks[q].host, in->ranks[r].host) == 0)
                used += (double)res->rank_stats[q].peak_rss_bytes;
        if (used / room > worst) {
            worst = used / room;
            worst_host = in->ranks[r].host;
            limited = room < total;
        }
    }
    gate_measure(k, worst, in->world_size);
    gate_note(k, "worst node %s: sum of its ranks' peak RSS / %s", worst_host,
              limited ? "the job's memory limit there (cgroup or --mem)" : "its memory");
    gate_memory_plan(k, res, in);
}

static void gate_duration(struct gate_result *res, const struct gate_input *in,
                          const struct cfg *c)
{
    struct gate_criterion *k = &res->crit[GATE_DURATION];
    double secs = 0;
    for (size_t i = 0; i < in->n_steps; i++)
        secs += in->steps[i].step_time_s;
    k->measured = secs / 3600.0;
    k->samples = (int64_t)in->n_steps;
    bool ok = k->measured >= c->gates.min_duration_h &&
              (int64_t)in->n_steps >= c->gates.min_steps;
    k->status = ok ? GATE_GO : GATE_HOLD;
    gate_note(k, "%.4g h of training (gates.min_duration_h %.6g), %zu steps (gates.min_steps "
              "%lld); too short is HOLD, never NO-GO", k->measured, c->gates.min_duration_h,
              in->n_steps, (long long)c->gates.min_steps);
}

/* ---- curves, rollback and the plan ----------------------------------------------------------- */

/* The validation points (at most GATE_MAX_POINTS, evenly picked) for the report. */
static enum rz_status gate_val_curve(struct gate_result *res, const struct gate_input *in,
                                     struct rz_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n_steps; i++)
        n += !isnan(in->steps[i].val_loss);
    size_t m = n < GATE_MAX_POINTS ? n : GATE_MAX_POINTS, k = 0, j = 0;
    res->val_curve = calloc(2 * m + 1, sizeof *res->val_curve);
    if (res->val_curve == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    for (size_t i = 0; i < in->n_steps && k < m; i++) {
        if (isnan(in->steps[i].val_loss))
            continue;
        if (j++ == (m > 1 ? (size_t)llround((double)k * (double)(n - 1) / (double)(m - 1)) : 0)) {
            res->val_curve[2 * k] = (double)in->steps[i].samples_seen;
            res->val_curve[2 * k + 1] = in->steps[i].val_loss;
            k++;
        }
    }
    res->n_val = k;
    return RZ_OK;
}

static enum rz_status gate_curves(struct gate_result *res, const struct gate_input *in,
                                  struct rz_err *err)
{
    size_t n = in->n_steps, m = n < GATE_MAX_POINTS ? n : GATE_MAX_POINTS;
    res->loss_curve = calloc(2 * m + 1, sizeof *res->loss_curve);
    res->loss_steps = calloc(m + 1, sizeof *res->loss_steps);
    res->restart_steps = calloc(n + 1, sizeof *res->restart_steps);
    if (res->loss_curve == NULL || res->loss_steps == NULL || res->restart_steps == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    for (size_t i = 0; i < m; i++) {
        size_t j = m > 1 ? (size_t)llround((double)i * (double)(n - 1) / (double)(m - 1)) : 0;
        if (isnan(in->steps[j].loss))
            continue; /* skipped for a non-finite loss: no point */
        res->loss_curve[2 * res->n_loss] = (double)in->steps[j].samples_seen;
        res->loss_curve[2 * res->n_loss + 1] = in->steps[j].loss;
        res->loss_steps[res->n_loss++] = in->steps[j].step;
    }
    for (size_t i = 1; i < n; i++)
        if (in->steps[i].run_step == 1)
            res->restart_steps[res->n_restarts++] = in->steps[i].step;
    for (size_t i = 0; i < n; i++)
        res->skipped_steps += in->steps[i].skipped;
    return gate_val_curve(res, in, err);
}

/* The newest checkpoint that verifies and the one before it. */
static void gate_last_good(struct gate_result *res, const struct gate_input *in)
{
    res->last_good = res->prev_good = NULL;
    for (size_t i = in->n_ckpts; i-- > 0 && res->prev_good == NULL;) {
        if (!in->ckpts[i].valid)
            continue;
        if (res->last_good == NULL)
            res->last_good = &in->ckpts[i];
        else
            res->prev_good = &in->ckpts[i];
    }
}

/* The newest valid checkpoint at or before the last step whose sync check passed on every rank.
 * An ended phase with no metrics at all (it failed before its first step) has no sync evidence
 * either way: its newest valid checkpoint, which an earlier attempt committed. */
static void gate_rollback(struct gate_result *res, const struct gate_input *in)
{
    res->has_rollback = false;
    int64_t limit = res->last_good_sync_step;
    if (in->ended != GATE_END_NONE && in->n_steps == 0 && res->last_good != NULL)
        limit = res->last_good->step;
    for (size_t i = in->n_ckpts; limit >= 0 && i-- > 0;) {
        if (in->ckpts[i].valid && in->ckpts[i].step <= limit) {
            res->has_rollback = true;
            res->rollback_step = in->ckpts[i].step;
            rz_fmt(res->rollback_path, sizeof res->rollback_path, "%s", in->ckpts[i].path);
            return;
        }
    }
}

/* The ladder model's throughput for this phase's world and per-rank batch on its own layout
 * (its topology and its preflight's links, known before it trained), +- the model's band. */
static void gate_prediction(struct gate_result *res, const struct gate_input *in,
                            const struct cfg *c)
{
    double b = (double)(c->training.batch_size * c->training.grad_accum);
    struct ladder_layout lay;
    ladder_rung_layout(&in->ladder_fit, in->world_size, &lay);
    if (in->topo.n_nodes > 0) {
        lay.nodes = in->topo.n_nodes;
        if (in->topo.cores_per_rank > 0)
            lay.cores = in->topo.cores_per_rank;
    }
    double bps, lat;
    ladder_link_figures(in->links, &bps, &lat);
    if (!isnan(bps)) {
        lay.link_Bps = bps;
        lay.link_lat_s = lat;
    }
    res->predicted = ladder_predict(&in->ladder_fit, &lay, b);
    res->predicted_lo = res->predicted * (1.0 - in->ladder_fit.err_rel);
    res->predicted_hi = res->predicted * (1.0 + in->ladder_fit.err_rel);
}

const char *gate_end_name(enum gate_end e)
{
    static const char *const names[GATE_N_END] = {NULL, "health", "give_up", "io",
                                                  "no_progress", "diverged", "nothing_to_train",
                                                  "config", "nockpt"};
    return (unsigned)e < GATE_N_END ? names[e] : NULL;
}

bool gate_end_parse(const char *name, enum gate_end *out)
{
    for (int e = 1; e < GATE_N_END; e++)
        if (strcmp(name, gate_end_name((enum gate_end)e)) == 0) {
            *out = (enum gate_end)e;
            return true;
        }
    return false;
}

/* A phase that ended without finishing training is NO-GO whatever its partial metrics say;
 * nothing_to_train (a rollback that found its checkpoint at training.steps already) is HOLD:
 * nothing failed, and a human decides what comes next. */
static enum gate_verdict gate_ended_verdict(const struct gate_input *in, enum gate_verdict v)
{
    if (in->ended == GATE_END_NONE)
        return v;
    return in->ended == GATE_END_NOTHING_TO_TRAIN ? GATE_VERDICT_HOLD : GATE_VERDICT_NO_GO;
}

static void gate_plan(struct gate_result *res, const struct cfg *c)
{
    const struct cfg_phase *p = &c->phase;
    const char *policy = res->verdict == GATE_VERDICT_GO      ? p->on_go
                         : res->verdict == GATE_VERDICT_NO_GO ? p->on_no_go
                                                              : p->on_hold;
    rz_fmt(res->action, sizeof res->action, "stop");
    res->action_phase[0] = '\0';
    if (strcmp(policy, "promote") == 0 && p->next[0] != '\0') {
        rz_fmt(res->action, sizeof res->action, "promote");
        rz_fmt(res->action_phase, sizeof res->action_phase, "%s", p->next);
        rz_fmt(res->action_note, sizeof res->action_note, "submit %s", p->next);
    } else if (strcmp(policy, "rollback") == 0 && p->previous[0] != '\0' && res->has_rollback) {
        rz_fmt(res->action, sizeof res->action, "rollback");
        rz_fmt(res->action_phase, sizeof res->action_phase, "%s", p->previous);
        rz_fmt(res->action_note, sizeof res->action_note, "submit %s resuming from %s",
               p->previous, res->rollback_path);
    } else if (strcmp(policy, "stop") == 0) {
        rz_fmt(res->action_note, sizeof res->action_note, "policy is stop");
    } else {
        rz_fmt(res->action_note, sizeof res->action_note, "policy %s is impossible: %s", policy,
               strcmp(policy, "promote") == 0 ? "phase.next is empty"
               : p->previous[0] == '\0'       ? "phase.previous is empty"
                                              : "no checkpoint at or before a passed sync check");
    }
}

enum rz_status gate_evaluate(struct gate_result *res, const struct gate_input *in,
                             const struct cfg *c, struct rz_err *err)
{
    memset(res, 0, sizeof *res);
    res->throughput_p10 = res->allreduce_p50_ms = res->straggler_median_s = NAN;
    res->grad_p50_ms = res->grad_p99_ms = res->exposed_p50_ms = res->exposed_p99_ms = NAN;
    gate_crit_init(res, c);
    enum rz_status st = gate_throughput(res, in, c, err);
    if (st == RZ_OK)
        st = gate_ranks(res, in, c, err);
    if (st == RZ_OK)
        st = gate_allreduce(res, in, c, err);
    if (st == RZ_OK)
        st = gate_straggler(res, in, err);
    if (st == RZ_OK)
        st = gate_curves(res, in, err);
    if (st != RZ_OK)
        return st;
    gate_efficiency(res, in);
    gate_sync(res, in);
    st = gate_loss_criteria(res, in, c, err); /* gate_loss.c */
    if (st != RZ_OK)
        return st;
    gate_failures_uptime(res, in);
    gate_memory(res, in);
    gate_duration(res, in, c);
    gate_packet_loss(res, in);
    gate_prediction(res, in, c);
    res->verdict = gate_ended_verdict(in, gate_verdict_of(res->crit, GATE_N_CRIT));
    gate_last_good(res, in);
    gate_rollback(res, in);
    gate_plan(res, c);
    return RZ_OK;
}

void gate_result_free(struct gate_result *res)
{
    if (res == NULL)
        return;
    free(res->windows);
    free(res->restart_steps);
    free(res->loss_curve);
    free(res->loss_steps);
    free(res->val_curve);
    free(res->rank_stats);
    memset(res, 0, sizeof *res);
}

const char *gate_fmt_num(char *buf, size_t len, double v)
{
    if (isnan(v))
        rz_fmt(buf, len, "n/a");
    else
        rz_fmt(buf, len, "%.6g", v);
    return buf;
}
