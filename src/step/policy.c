/* policy.c: how an attempt ended and what ryzen-step does about it (see step_internal.h).  Pure
 * functions of what the ranks, srun and Slurm said, so every branch is unit-tested
 * (tests/check_step.c) without a cluster. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "step/step_internal.h"

static const char *const class_names[CLASS_N] = {
    "done", "signal", "crash", "hang", "io", "health", "config", "nockpt", "diverged"};

const char *step_class_name(enum step_class c)
{
    return (unsigned)c < CLASS_N ? class_names[c] : "?";
}

const char *step_cause_name(enum step_cause c)
{
    static const char *const names[] = {"none", "cancelled", "preempted", "time limit",
                                        "requeued", "node failure", "stop signal",
                                        "node lost", "network fault"};
    return (unsigned)c < RZ_ARRAY_LEN(names) ? names[c] : "?";
}

bool step_cause_outside(enum step_cause c)
{
    return c == CAUSE_REQUEUED || c == CAUSE_NODE_FAILURE || c == CAUSE_NODE_LOST ||
           c == CAUSE_NETWORK;
}

bool step_cause_name_outside(const char *name)
{
    for (int c = CAUSE_NONE; c <= CAUSE_NETWORK; c++)
        if (strcmp(name, step_cause_name((enum step_cause)c)) == 0)
            return step_cause_outside((enum step_cause)c);
    return false;
}

/* ---- exit records ------------------------------------------------------------------------------- */

/* ---- classification ------------------------------------------------------------------------------- */

/* The classes of a rank's record, strongest first. */
static enum step_class record_class(const struct exit_record *r)
{
    if (strcmp(r->end_reason, "diverged") == 0)
        return CLASS_DIVERGED;
    switch (r->status) {
    case 0: return CLASS_DONE;
    case RZ_EXIT_REQUEUE: return CLASS_SIGNAL;
    case RZ_EXIT_WATCHDOG: return CLASS_HANG;
    case RZ_EXIT_IO: return CLASS_IO;
    case RZ_EXIT_HEALTH: return CLASS_HEALTH;
    case RZ_EXIT_USAGE: return CLASS_CONFIG;
    case RZ_EXIT_NOCKPT: return CLASS_NOCKPT;
    default: return CLASS_CRASH;
    }
}

static int severity(enum step_class c)
{
    static const int rank[CLASS_N] = {
        [CLASS_DONE] = 0, [CLASS_SIGNAL] = 1, [CLASS_CRASH] = 2, [CLASS_NOCKPT] = 3,
        [CLASS_CONFIG] = 4, [CLASS_HEALTH] = 5, [CLASS_DIVERGED] = 6, [CLASS_IO] = 7,
        [CLASS_HANG] = 8};
    return rank[c];
}

static int rank_record(const struct exit_record *r)
{
    bool names = strstr(r->message, "not responding") != NULL ||
                 strstr(r->message, "was frozen") != NULL;
    return 2 * severity(record_class(r)) + names;
}

static enum step_class status_class(int status)
{
    struct exit_record r = {.status = status};
    return record_class(&r);
}

enum step_class step_classify(int status, const struct exit_record *rec, int n_rec,
                              long world, char *who, size_t len)
{
    who[0] = '\0';
    if (n_rec == 0) { /* no records (a trainer that never started): the status is all we have */
        enum step_class c = status_class(status);
        if (c == CLASS_DONE) {
            /* A trainer always leaves one when it ends: a step that returned 0 without any was
             * stopped from outside.  Measured: Slurm's requeue after a node stopped answering
             * (a partition) ended the step so, and calling that "done" finished the phase. */
            rz_fmt(who, len, "no rank left an exit record, though the job step's status was 0: "
                   "it was stopped from outside (a requeue, a lost node)");
            return CLASS_CRASH;
        }
        rz_fmt(who, len, "no rank left an exit record; the job step's status was %d", status);
        return c;
    }
    /* The most severe record speaks for the attempt; among hang records, one that names the
     * culprit (a rank not responding, or one that was frozen itself) before one that cannot,
     * then the lowest rank. */
    const struct exit_record *worst = NULL;
    for (int i = 0; i < n_rec; i++)
        if (worst == NULL || rank_record(&rec[i]) > rank_record(worst) ||
            (rank_record(&rec[i]) == rank_record(worst) && rec[i].rank < worst->rank))
            worst = &rec[i];
    enum step_class c = record_class(worst);
    /* A rank that left no record died without a word (kill -9, OOM, a lost node). */
    char missing[256] = "";
    int n_missing = 0;
    for (long r = 0; r < world; r++) {
        bool seen = false;
        for (int i = 0; i < n_rec && !seen; i++)
            seen = rec[i].rank == r;
        if (!seen && n_missing++ < 16) {
            size_t used = strlen(missing);
            rz_fmt(missing + used, sizeof missing - used, "%s%ld", used ? ", " : "", r);
        }
    }
    if (severity(c) <= severity(CLASS_CRASH) && (n_missing > 0 || c == CLASS_CRASH)) {
        if (n_missing > 0)
            rz_fmt(who, len, "rank(s) %s left no exit record (killed or lost); the job step's "
                   "status was %d", missing, status);
        else
            rz_fmt(who, len, "rank %d (%s) exited %d: %s", worst->rank, worst->host,
                   worst->status, worst->message);
        return CLASS_CRASH;
    }
    if (c == CLASS_DONE && status != 0) {
        rz_fmt(who, len, "every rank finished but the job step's status was %d", status);
        return CLASS_CRASH;
    }
    if (c != CLASS_DONE && c != CLASS_SIGNAL)
        rz_fmt(who, len, "rank %d (%s): %s", worst->rank, worst->host, worst->message);
    return c;
}

/* What Slurm 22.05 shows while it stops a job (measured, docs/devcluster.md):
 *   scancel            COMPLETING, then CANCELLED; Restarts unchanged; PreemptTime None
 *   scontrol requeue   COMPLETING, REQUEUED or PENDING; Restarts + 1 at once
 *   a node goes down   COMPLETING, then NODE_FAIL; Restarts + 1 (Slurm requeues it)
 *   preemption         RUNNING with PreemptTime set, for GraceTime; exiting then ends the job
 *                      for good (PREEMPTED is not requeued), so the wrapper requeues it
 *   time-limit warning RUNNING; EndTime - now <= the --signal lead (Slurm may send it up to a
 *                      minute early)
 *   time limit reached COMPLETING, then TIMEOUT; Reason TimeLimit */
enum step_cause step_stop_cause(const struct slurm_job *j, long restarts_at_start, bool signalled,
                                double now, long lead_s)
{
    const char *s = j->state;
    bool node = strcmp(s, "NODE_FAIL") == 0 || strstr(j->reason, "Node") != NULL;
    if (strcmp(s, "CANCELLED") == 0)
        return CAUSE_CANCELLED;
    if (j->preempt_time[0] != '\0' || strcmp(s, "PREEMPTED") == 0)
        return CAUSE_PREEMPTED;
    if (j->found && j->restarts > restarts_at_start)
        return node ? CAUSE_NODE_FAILURE : CAUSE_REQUEUED; /* Slurm requeues it already */
    if (node)
        return CAUSE_NODE_FAILURE;
    if (strcmp(s, "TIMEOUT") == 0 || strstr(j->reason, "TimeLimit") != NULL)
        return CAUSE_TIME_LIMIT;
    if (strcmp(s, "REQUEUED") == 0 || strcmp(s, "REQUEUE_FED") == 0 ||
        strcmp(s, "REQUEUE_HOLD") == 0 || strcmp(s, "PENDING") == 0)
        return CAUSE_REQUEUED;
    if (strcmp(s, "COMPLETING") == 0)
        return CAUSE_CANCELLED; /* ending while we run, not requeued, not out of time: scancel */
    if (!signalled)
        return CAUSE_NONE;
    if (j->end_epoch > 0.0 && j->end_epoch - now <= (double)lead_s + 90.0)
        return CAUSE_TIME_LIMIT;
    return CAUSE_USER_SIGNAL;
}

/* ---- the decision ------------------------------------------------------------------------------------ */

static void end(struct step_decision *d, const char *ended, int status, const char *why)
{
    d->action = ACT_END;
    d->ended = ended;
    d->exit_status = status;
    rz_fmt(d->why, sizeof d->why, "%s", why);
}

struct step_budget step_budget_of(const struct cfg *c)
{
    struct step_budget b = {c->restart.max_restarts, c->restart.max_signal_requeues,
                            strcmp(c->restart.when_stuck, "hold") == 0,
                            strcmp(c->restart.failures, "relaunch") == 0};
    return b;
}

void step_stuck(struct step_decision *d, const char *ended, const struct step_budget *b)
{
    d->ended = ended;
    if (b->hold_when_stuck) {
        d->action = ACT_HOLD;
        d->exit_status = RZ_EXIT_REQUEUE;
    } else {
        d->action = ACT_END;
        d->exit_status = 1; /* a NO-GO (docs/exit-codes.md): FAILED in sacct, Slurm's mail */
    }
}

/* Requeues after a stop that is nobody's failure (signal, preemption, time limit) have their own
 * cap; a job that keeps stopping without a new checkpoint gives up (see step_decide). */
static void requeue(struct step_decision *d, enum event_requeue reason, bool slurm_does_it,
                    const struct step_history *h, const struct step_budget *b)
{
    long signal_like = h->requeues[EVENT_RQ_SIGNAL] + h->requeues[EVENT_RQ_PREEMPTION] +
                       h->requeues[EVENT_RQ_TIME_LIMIT];
    bool capped = reason == EVENT_RQ_SIGNAL || reason == EVENT_RQ_PREEMPTION ||
                  reason == EVENT_RQ_TIME_LIMIT;
    if (capped && signal_like >= b->max_signal) {
        step_stuck(d, "give_up", b);
        rz_fmt(d->why, sizeof d->why, "%ld requeues after signals, preemptions and time limits "
               "(restart.max_signal_requeues = %ld)%s", signal_like, b->max_signal,
               b->hold_when_stuck ? ": held for a human (restart.when_stuck hold)" : "");
        return;
    }
    d->action = slurm_does_it ? ACT_SLURM_REQUEUES : ACT_REQUEUE;
    d->reason = reason;
    d->exit_status = RZ_EXIT_REQUEUE;
}

/* Two nodes Slurm sees up cannot reach each other, and one end is left out (probe.c): restarted
 * without it, in the allocation when it still holds the phase (ends.c decides; else through the
 * queue).  Not the same again, so not "no progress"; but a fault all the same: these restarts
 * and the failures' share restart.max_restarts.  When it is spent the job ends NO-GO (health),
 * the links named (ends.c). */
static void network(struct step_decision *d, const struct step_history *h,
                    const struct step_budget *b)
{
    long used = h->requeues[EVENT_RQ_FAILURE] + h->requeues[EVENT_RQ_NETWORK];
    if (used >= b->max_failures) {
        end(d, "health", RZ_EXIT_HEALTH, "");
        rz_fmt(d->why, sizeof d->why, "the restart budget is spent (%ld of %ld failure and "
               "network restarts used)", used, b->max_failures);
        return;
    }
    d->action = b->relaunch ? ACT_RELAUNCH : ACT_REQUEUE;
    d->reason = EVENT_RQ_NETWORK;
    d->exit_status = RZ_EXIT_REQUEUE;
}

void step_decide(enum step_class cls, enum step_cause cause, int status, bool progress,
                 const struct step_history *h, const struct step_budget *b,
                 struct step_decision *d)
{
    memset(d, 0, sizeof *d);
    if (cls == CLASS_DONE) {
        d->action = ACT_FINISH;
        return;
    }
    if (cause == CAUSE_CANCELLED) {
        d->action = ACT_CANCELLED;
        d->exit_status = status == RZ_EXIT_REQUEUE ? 0 : status;
        rz_fmt(d->why, sizeof d->why, "the job was cancelled (scancel): not requeued");
        return;
    }
    switch (cls) {
    case CLASS_IO: end(d, "io", RZ_EXIT_IO, "checkpoint or file I/O failed"); return;
    case CLASS_HEALTH: end(d, "health", RZ_EXIT_HEALTH, "a health check failed"); return;
    case CLASS_CONFIG: end(d, "config", RZ_EXIT_USAGE, "bad config or usage"); return;
    case CLASS_NOCKPT: end(d, "nockpt", RZ_EXIT_NOCKPT, "no valid checkpoint"); return;
    case CLASS_DIVERGED: end(d, "diverged", RZ_EXIT_HEALTH, "the loss guard stopped the run");
        return;
    default: break;
    }
    /* Nothing was saved this attempt and nothing the time before: more of the same will not
     * help.  The job fails with its report, or waits for a human (restart.when_stuck).  An
     * attempt that a requeue or a lost node stopped is not "the same": it does not count (a
     * time limit or a preemption without a checkpoint does: with too short a --time that is
     * exactly the same again) (measured: a node that stopped answering
     * during phase2b's preflight, then Open MPI's crash at the start of training, gave up a
     * ladder that a plain restart would have finished). */
    if (!progress && h->no_progress_run >= 1 && !step_cause_outside(cause)) {
        step_stuck(d, "no_progress", b);
        rz_fmt(d->why, sizeof d->why, "two attempts in a row committed no new checkpoint "
               "(this one ended: %s, %s)", step_class_name(cls), step_cause_name(cause));
        return;
    }
    switch (cause) {
    case CAUSE_PREEMPTED: requeue(d, EVENT_RQ_PREEMPTION, false, h, b); return;
    case CAUSE_REQUEUED: requeue(d, EVENT_RQ_SLURM, true, h, b); return;
    case CAUSE_NODE_FAILURE: requeue(d, EVENT_RQ_NODE_FAILURE, true, h, b); return;
    case CAUSE_TIME_LIMIT: requeue(d, EVENT_RQ_TIME_LIMIT, false, h, b); return;
    case CAUSE_USER_SIGNAL: requeue(d, EVENT_RQ_SIGNAL, false, h, b); return;
    case CAUSE_NODE_LOST: /* not a failure of ours: no budget; a node that fails twice is
                           * excluded for the ladder (place.c), so the nodes bound it */
        d->action = b->relaunch ? ACT_RELAUNCH : ACT_REQUEUE;
        d->reason = EVENT_RQ_NODE_FAILURE;
        d->exit_status = RZ_EXIT_REQUEUE;
        return;
    case CAUSE_NETWORK: network(d, h, b); return;
    default: break;
    }
    if (cls == CLASS_SIGNAL) { /* the ranks stopped on a signal the wrapper never saw */
        requeue(d, EVENT_RQ_SIGNAL, false, h, b);
        return;
    }
    /* A crash or a hang: the failure budget, spent by relaunches and requeues alike. */
    if (h->requeues[EVENT_RQ_FAILURE] + h->requeues[EVENT_RQ_NETWORK] < b->max_failures) {
        d->action = b->relaunch ? ACT_RELAUNCH : ACT_REQUEUE;
        d->reason = EVENT_RQ_FAILURE;
        d->exit_status = RZ_EXIT_REQUEUE;
        return;
    }
    end(d, "give_up", RZ_EXIT_WATCHDOG, "");
    rz_fmt(d->why, sizeof d->why, "the restart budget is spent (%ld of %ld failure requeues "
           "used); the last attempt ended: %s, status %d", h->requeues[EVENT_RQ_FAILURE],
           b->max_failures, step_class_name(cls), status);
}
