/* ends.c: how an attempt of a phase job ends (wrapper.c runs it): the attempt_end event, the
 * policy's decision (policy.c) and what carries it out: finish, requeue (excluding nodes),
 * relaunch in the allocation, hold, or end with the NO-GO report. */
#include "config.h"

#include <string.h>

#include "core/util.h"
#include "step/step_internal.h"

static int requeue_self(struct wrapper *w, enum event_requeue reason, const char *why)
{
    char msg[1400];
    struct rz_err err;
    long used = w->hist.requeues[reason] + 1;
    rz_fmt(msg, sizeof msg, "%s: scontrol requeue %s (%s requeue %ld)", why, w->env->display_id,
           event_requeue_name(reason), used);
    struct event_kv kv[] = {{"reason", event_requeue_name(reason), 0},
                            {"count", NULL, (double)used}};
    step_event(&w->ev, "requeue", msg, kv, 2);
    if (!step_env_in_slurm(w->env)) {
        step_event(&w->ev, "requeue_skipped", "not a Slurm job: nothing to requeue", NULL, 0);
        return RZ_EXIT_REQUEUE;
    }
    int rc = slurm_control(w->r, "requeue", w->env->display_id, NULL, &err);
    if (rc == 0)
        return RZ_EXIT_REQUEUE;
    struct slurm_job now;
    if (slurm_job_query(w->r, w->env->display_id, &now, &err) == RZ_OK &&
        now.restarts > w->env->restart_count)
        return RZ_EXIT_REQUEUE; /* requeued already, by Slurm or by someone */
    rz_fmt(msg, sizeof msg, "scontrol requeue %s failed (status %d): the job ends here; the last "
           "checkpoint stays, and a new submission resumes from it", w->env->display_id, rc);
    step_event(&w->ev, "requeue_failed", msg, NULL, 0);
    return RZ_EXIT_REQUEUE;
}

/* requeuehold, add the nodes to the job's ExcNodeList, release: nothing runs in between. */
int step_requeue_excluding(struct wrapper *w, enum event_requeue reason, const char *nodes,
                           const char *why)
{
    char arg[1024], msg[2000];
    struct rz_err err;
    char all[600];
    rz_fmt(all, sizeof all, "%s", w->job.exc_nodes);
    rz_list_add(all, sizeof all, nodes);
    rz_fmt(msg, sizeof msg, "%s: requeued without node(s) %s", why, nodes);
    struct event_kv kv[] = {{"reason", event_requeue_name(reason), 0}, {"excluded_nodes", all, 0},
                           {"count", NULL, (double)(w->hist.requeues[reason] + 1)}};
    step_event(&w->ev, "requeue", msg, kv, 3);
    if (!step_env_in_slurm(w->env))
        return reason == EVENT_RQ_PREFLIGHT_NODE ? RZ_EXIT_HEALTH : RZ_EXIT_REQUEUE;
    rz_fmt(arg, sizeof arg, "ExcNodeList=%s", all);
    long ask = step_spare_ask(w, all);
    int rc = slurm_control(w->r, "requeuehold", w->env->display_id, NULL, &err);
    if (rc == 0)
        rc = slurm_control(w->r, "update", w->env->display_id, arg, &err);
    if (rc == 0 && ask > 0) { /* else it would wait for nodes its partition no longer has */
        char count[64], tasks[64];
        rz_fmt(count, sizeof count, "NumNodes=%ld", ask);
        rz_fmt(tasks, sizeof tasks, "NumTasks=%ld", w->env->ntasks_per_node > 0
               ? ask * w->env->ntasks_per_node : w->place.ranks);
        rc = slurm_control(w->r, "update", w->env->display_id, count, &err);
        if (rc == 0)
            rc = slurm_control(w->r, "update", w->env->display_id, tasks, &err);
        rz_fmt(msg, sizeof msg, "partition %s has fewer usable nodes outside the exclusions (%s) "
               "than the %ld the job asked for: it asks for %s, %s", w->job.partition, all,
               w->env->nnodes, count, ask > w->place.needed ? "a smaller spare" : "the spare "
               "given up");
        step_event(&w->ev, "spare_shrunk", msg, NULL, 0);
    }
    int rel = slurm_control(w->r, "release", w->env->display_id, NULL, &err);
    if (rc != 0 || rel != 0) {
        rz_fmt(msg, sizeof msg, "excluding %s failed (scontrol status %d, release %d): "
               "scontrol release %s by hand", all, rc, rel, w->env->display_id);
        step_event(&w->ev, "requeue_failed", msg, NULL, 0);
    }
    return RZ_EXIT_REQUEUE;
}

/* The nodes a requeue leaves out: those this job lost (out of the allocation by now, or
 * unreachable at the last placement), then those the placement excluded (lost, or out for the
 * ladder).  The lost ones alone go to `lost`. */
static void nodes_out(const struct wrapper *w, char *nodes, size_t len, char *lost,
                      size_t lost_len)
{
    lost[0] = '\0';
    rz_list_add(lost, lost_len, w->job_lost);
    rz_list_add(lost, lost_len, w->place.lost);
    nodes[0] = '\0';
    rz_list_add(nodes, len, lost);
    rz_list_add(nodes, len, w->place.exclude);
    rz_list_add(nodes, len, w->net_out);
}

/* The allocation cannot hold the phase any more (place.c): requeued without the nodes it left
 * out. */
int step_cannot_place(struct wrapper *w)
{
    const struct step_place *p = &w->place;
    char why[1600], nodes[1100], lost[1100];
    nodes_out(w, nodes, sizeof nodes, lost, sizeof lost);
    rz_fmt(why, sizeof why, "the allocation (%s) has %d usable node(s), the phase needs %ld "
           "(lost: %s; excluded for the ladder: %s)", p->nodes, p->usable, p->needed,
           lost[0] ? lost : "none", w->ladder_bad[0] ? w->ladder_bad : "none");
    return step_requeue_excluding(w, EVENT_RQ_NODE_FAILURE, nodes, why);
}

/* restart.failures relaunch: the attempt ends here and the next runs as new job steps of this
 * allocation (step_main's loop): no trip through the queue.  Counted as a restart of its
 * reason: a failure (the restart budget), or a lost node. */
static int relaunch_self(struct wrapper *w, enum event_requeue reason, const char *why)
{
    char msg[1400];
    long used = w->hist.requeues[reason] + 1;
    if (reason == EVENT_RQ_FAILURE)
        rz_fmt(msg, sizeof msg, "%s: the preflight and the training run again in this "
               "allocation (failure restart %ld of %ld, restart.failures relaunch)", why, used,
               (long)w->cfg.restart.max_restarts);
    else
        rz_fmt(msg, sizeof msg, "%s: the preflight and the training run again in this "
               "allocation, without %s (%s restart %ld, restart.failures relaunch)", why,
               reason == EVENT_RQ_NETWORK ? w->net_out : w->attempt_lost,
               event_requeue_name(reason), used);
    struct event_kv kv[] = {{"reason", event_requeue_name(reason), 0},
                           {"count", NULL, (double)used}};
    step_event(&w->ev, "relaunch", msg, kv, 2);
    return STEP_RELAUNCH;
}

/* A NO-GO (or HOLD) report for an end without a finished training; with the diverged guard the
 * NO-GO policy (rollback) applies too. */
int step_end_with_report(struct wrapper *w, const struct step_decision *d, int status)
{
    char msg[1200];
    rz_fmt(msg, sizeof msg, "%s: %s; not requeued", d->ended, d->why);
    struct event_kv kv[] = {{"ended", d->ended, 0}, {"status", NULL, status}};
    bool named = strcmp(d->ended, "give_up") == 0 || strcmp(d->ended, "no_progress") == 0;
    step_event(&w->ev, named ? d->ended : "ended", msg, kv, 2); /* as a hold names them */
    chain_run_gate(w, d->ended, d->why, status);
    rz_fmt(msg, sizeof msg, "%s: NO-GO (%s)", w->phase, d->ended);
    chain_comment(w, msg);
    return d->exit_status;
}

int step_apply(struct wrapper *w, const struct step_decision *d, int status)
{
    char msg[1200];
    struct rz_err err;
    switch (d->action) {
    case ACT_FINISH:
        step_event(&w->ev, "finished", "training finished", NULL, 0);
        return chain_finish_phase(w);
    case ACT_REQUEUE: {
        char nodes[1100], lost[1100];
        nodes_out(w, nodes, sizeof nodes, lost, sizeof lost);
        if (nodes[0] != '\0') /* lost, or out */
            return step_requeue_excluding(w, d->reason, nodes, d->reason == EVENT_RQ_NETWORK
                                          ? "the attempt ended on a network fault"
                                          : "the attempt ended");
        return requeue_self(w, d->reason, "the attempt ended");
    }
    case ACT_RELAUNCH:
        return relaunch_self(w, d->reason, "the attempt ended");
    case ACT_SLURM_REQUEUES: {
        rz_fmt(msg, sizeof msg, "Slurm requeues the job itself (%s)",
               event_requeue_name(d->reason));
        struct event_kv kv[] = {{"reason", event_requeue_name(d->reason), 0},
                               {"count", NULL, (double)(w->hist.requeues[d->reason] + 1)}};
        step_event(&w->ev, "requeue", msg, kv, 2);
        return RZ_EXIT_REQUEUE;
    }
    case ACT_HOLD:
        rz_fmt(msg, sizeof msg, "%s: scontrol requeuehold %s; `scontrol release %s` lets it run "
               "again", d->why, w->env->display_id, w->env->display_id);
        step_event(&w->ev, d->ended, msg, NULL, 0);
        chain_run_gate(w, d->ended, d->why, status);
        rz_fmt(msg, sizeof msg, "%s: NO-GO (%s), held", w->phase, d->ended);
        chain_comment(w, msg);
        if (step_env_in_slurm(w->env) &&
            slurm_control(w->r, "requeuehold", w->env->display_id, NULL, &err) != 0)
            step_event(&w->ev, "requeue_failed", "scontrol requeuehold failed: the job ends",
                       NULL, 0);
        return d->exit_status;
    case ACT_END: {
        int rc = step_end_with_report(w, d, status);
        if (strcmp(d->ended, "diverged") == 0) /* a NO-GO: the phase's policy applies */
            chain_no_go(w, "diverged");
        return rc;
    }
    case ACT_CANCELLED:
        step_event(&w->ev, "cancelled", d->why, NULL, 0);
        rz_fmt(msg, sizeof msg, "%s: cancelled", w->phase);
        chain_comment(w, msg);
        return d->exit_status;
    }
    return 1;
}

void step_attempt_end(struct wrapper *w, enum step_class cls, enum step_cause cause, int status,
                        bool progress, const char *who)
{
    char msg[1400];
    rz_fmt(msg, sizeof msg, "status %d: %s%s%s%s; %s", status, step_class_name(cls),
           cause != CAUSE_NONE ? " (" : "", cause != CAUSE_NONE ? step_cause_name(cause) : "",
           cause != CAUSE_NONE ? ")" : "", progress ? "a new checkpoint was committed"
                                                     : "no new checkpoint");
    if (who[0] != '\0') {
        size_t used = strlen(msg);
        rz_fmt(msg + used, sizeof msg - used, "; %s", who);
    }
    struct event_kv kv[] = {{"status", NULL, status}, {"class", step_class_name(cls), 0},
                           {"cause", step_cause_name(cause), 0},
                           {"progress", NULL, progress ? 1 : 0}, {"who", who, 0}};
    step_event(&w->ev, "attempt_end", msg, kv, 5);
}

/* Record how the attempt ended, decide what to do (policy.c) and do it; the exit status. */
int step_conclude(struct wrapper *w, enum step_class cls, enum step_cause cause, int status,
                  bool progress, const char *who)
{
    struct step_decision d;
    struct step_budget b = step_budget_of(&w->cfg);
    if (status != 0)
        step_nodes_check(w); /* a lost node: named, and left out of what follows */
    if (w->attempt_lost[0] != '\0' && cause == CAUSE_NONE && cls != CLASS_DONE)
        cause = CAUSE_NODE_LOST; /* the job runs on (--no-kill): ours to restart */
    /* a crash or a hang on nodes Slurm sees up: are they still talking to each other? */
    if (status != 0 && cause == CAUSE_NONE && (cls == CLASS_CRASH || cls == CLASS_HANG) &&
        step_links_check(w))
        cause = CAUSE_NETWORK;
    step_attempt_end(w, cls, cause, status, progress, who);
    step_decide(cls, cause, status, progress, &w->hist, &b, &d);
    if (cause == CAUSE_NETWORK && d.action == ACT_RELAUNCH && !w->net_fits)
        d.action = ACT_REQUEUE; /* the batch host left out, or no node to spare */
    if (cause == CAUSE_NETWORK && d.action == ACT_END) { /* the links named, not "a crash" */
        char why[sizeof d.why];
        rz_fmt(why, sizeof why, "network fault: %s; %s", w->net_fault, d.why);
        rz_fmt(d.why, sizeof d.why, "%s", why);
    }
    return step_apply(w, &d, status);
}

