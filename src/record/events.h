/* events.h: RUN_DIR/events.jsonl, the wrapper's log of decisions: its record, its one writer,
 * its one reader, and the requeue-reason vocabulary.  The one place that knows the format.
 *   written by  ryzen-step, one line per decision (step/ wraps event_append with the job
 *               output's echo and its clock)
 *   read by     ryzen-step (step/history.c: this job's budgets, its lineage's jobs, the run
 *               root's node failures; tolerant) and ryzen-gate (the timelines, requeues by
 *               reason, the causes of restarts; strict, every line kept)
 * Every line is one JSON object: time (UTC ISO 8601), t (Unix seconds, 3 decimals), job,
 * lineage, restart, phase, event, message, then the event's own fields (strings or numbers:
 * reason, class, status, nodes, node_list, excluded_nodes, next_job, new_job, ...).
 * Ownership: struct events_log owns its FILE (events_close); events_read allocates the array and
 * each record's json (events_free). */
#ifndef RZ_RECORD_EVENTS_H
#define RZ_RECORD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/status.h"
#include "record/jsonl.h"

/* ---- the requeue reasons: the "reason" of a requeue or relaunch event ------------------------ */

enum event_requeue {
    EVENT_RQ_FAILURE,           /* crash, hang, a failed launch: restart.max_restarts; the only
                                 * reason the failures gate counts */
    EVENT_RQ_SIGNAL,            /* a stop signal sent by hand (scancel --signal) */
    EVENT_RQ_PREEMPTION,        /* preempted; Slurm requeues the job itself */
    EVENT_RQ_TIME_LIMIT,        /* the --signal warning before the time limit */
    EVENT_RQ_NODE_FAILURE,      /* a node of the job went down; Slurm requeues */
    EVENT_RQ_SLURM,             /* requeued by an operator (scontrol requeue) */
    EVENT_RQ_PREFLIGHT_NODE,    /* a node failed the preflight: excluded, requeued */
    EVENT_RQ_NETWORK,           /* two nodes Slurm sees up cannot reach each other: one end
                                 * left out; counted with failures in the budget */
    EVENT_RQ_OTHER,             /* a reader's: a reason not listed above (never written) */
    EVENT_N_RQ
};
/* The reasons a writer gives: all but EVENT_RQ_OTHER. */
#define EVENT_N_RQ_WRITTEN EVENT_RQ_OTHER

/* "failure", ..., "network", "other" ("other" for a value out of range). */
const char *event_requeue_name(enum event_requeue r);
/* The reason of that name; EVENT_RQ_OTHER for any other (NULL included). */
enum event_requeue event_requeue_of(const char *name);

/* ---- the writer ------------------------------------------------------------------------------ */

/* An event's own field: a string, or (str == NULL) a number. */
struct event_kv {
    const char *key;
    const char *str;
    double num;
};

struct events_log {
    FILE *f;
    char path[4400];
    char job[128], lineage[64], phase[256];
    long restart;
};

/* Open RUN_DIR/events.jsonl for appending (RUN_DIR made if missing); RZ_EIO naming the path. */
enum rz_status events_open(struct events_log *log, const char *run_dir, const char *job,
                           const char *lineage, long restart, const char *phase,
                           struct rz_err *err);
/* Append one line at time t (Unix seconds), flushed and fsynced: the log of decisions must
 * survive the requeue that follows.  Nothing when the log is not open. */
void event_append(struct events_log *log, double t, const char *event, const char *message,
                  const struct event_kv *kv, size_t n);
void events_close(struct events_log *log);

/* ---- the reader ------------------------------------------------------------------------------ */

/* Every line of PATH under the policy of record/jsonl.h (tolerant: a missing file or a cut line
 * is no error). */
enum rz_status events_each(const char *path, enum jsonl_policy policy, jsonl_line_fn fn,
                           void *ctx, struct rz_err *err);

/* One line as ryzen-gate keeps it. */
struct event_rec {
    char job[64], event[64], phase[128], reason[64];
    char nodes[128];            /* its "nodes" field (node_failed, nodes_lost), "" if none */
    char summary[512];          /* message and the event's key fields, for the timelines */
    char when[32];              /* t as "YYYY-MM-DD HH:MM:SSZ" */
    double t;                   /* seconds since the epoch */
    char *json;                 /* the line as read (a valid JSON object) */
};

/* Append every line of PATH to *ev (n records), strictly: a line without string 'job', string
 * 'event' and number 't' is RZ_EDATA "PATH:LINE: ...", as is any line record/jsonl.h refuses.
 * A missing file adds nothing (a hand-run trainer has no wrapper events).  On an error the
 * records read so far stay in *ev. */
enum rz_status events_read(const char *path, struct event_rec **ev, size_t *n,
                           struct rz_err *err);
/* The events that form the phase chain: promote, rollback, rollback_start (any job). */
bool event_is_chain(const struct event_rec *e);
/* The events that form the verdict timeline: how each attempt of every job started, ended and
 * was decided (start, preflight_failed, resume, rollback_start, attempt_end, requeue, relaunch,
 * give_up, no_progress, owner_takeover, finished, verdict, promote, rollback, gate_failed).
 * Other events, unknown ones included, belong to their job's own timeline only. */
bool event_is_verdict(const struct event_rec *e);

/* Free the array and each record's json (NULL ok). */
void events_free(struct event_rec *ev, size_t n);

#endif
