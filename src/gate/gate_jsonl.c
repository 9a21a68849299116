/* gate_jsonl.c: the JSON Lines files the gate reads: the reader (one JSON object per line, a
 * truncated last line refused), and events.jsonl's lines as gate events, with the lists they are
 * sorted into (the chain, the verdict timeline) and the requeue reasons.  Used by gate_read.c
 * (a phase's inputs) and gate_ladder.c (every phase of a run root). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/json_read.h"
#include "core/util.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

/* ---- JSON Lines ------------------------------------------------------------------------------ */

enum rz_status gate_read_jsonl(const char *path, gate_line_fn fn, void *ctx, struct rz_err *err)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return rz_fail(err, errno == ENOENT ? RZ_EDATA : RZ_EIO, "open '%s': %s", path,
                       strerror(errno));
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    long line = 0;
    enum rz_status st = RZ_OK;
    while (st == RZ_OK && (n = getline(&buf, &cap, f)) >= 0) {
        line++;
        if (n == 0 || buf[n - 1] != '\n') {
            st = rz_fail(err, RZ_EDATA, "%s:%ld: truncated line (no newline at end of file): "
                         "a writer died mid-line", path, line);
            break;
        }
        size_t len = (size_t)n;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        if (strspn(buf, " \t") == len)
            continue;
        struct gj_value *v = NULL;
        st = gj_parse(&v, buf, len, path, line, err);
        if (st == RZ_OK && v->type != GJ_OBJ)
            st = rz_fail(err, RZ_EDATA, "%s:%ld: a JSON object expected", path, line);
        if (st == RZ_OK)
            st = fn(ctx, v, path, line, buf, err);
        gj_free(v);
    }
    if (st == RZ_OK && ferror(f))
        st = rz_fail(err, RZ_EIO, "read '%s': %s", path, strerror(errno));
    free(buf);
    fclose(f);
    return st;
}

/* ---- events ---------------------------------------------------------------------------------- */

/* "message (reason failure, status 75, ...)": the message and whichever key fields the event
 * carries, so the timelines need not know every event's shape (unknown events read the same). */
static void gate_event_summary(struct gate_event *e, const struct gj_value *v)
{
    static const char *const keys[] = {"reason", "class", "status", "verdict", "rank", "host",
                                       "excluded_nodes", "next_job", "new_job", "to_phase",
                                       "checkpoint", "failures"};
    const char *msg = gj_get_str(v, "message");
    size_t used = 0;
    e->summary[0] = '\0';
    if (msg != NULL && msg[0] != '\0')
        used = (size_t)snprintf(e->summary, sizeof e->summary, "%s", msg);
    bool first = true;
    for (size_t i = 0; i < RZ_ARRAY_LEN(keys) && used < sizeof e->summary; i++) {
        const struct gj_value *f = gj_get(v, keys[i]);
        char val[300];
        if (f == NULL || (f->type != GJ_STR && f->type != GJ_NUM))
            continue;
        if (f->type == GJ_STR)
            rz_fmt(val, sizeof val, "%s", f->str);
        else
            rz_fmt(val, sizeof val, "%.15g", f->num);
        used += (size_t)snprintf(e->summary + used, sizeof e->summary - used, "%s%s %s",
                                 first ? (used ? " (" : "(") : ", ", keys[i], val);
        first = false;
    }
    if (!first && used + 1 < sizeof e->summary)
        strcat(e->summary, ")");
}

static enum rz_status gate_event_line(struct gate_event **events, size_t *n_events,
                                      const struct gj_value *v, const char *path, long line,
                                      const char *text, struct rz_err *err)
{
    const char *job = gj_get_str(v, "job"), *event = gj_get_str(v, "event");
    double t;
    if (job == NULL || event == NULL || !gj_get_num(v, "t", &t))
        return rz_fail(err, RZ_EDATA, "%s:%ld: an event needs string 'job', string 'event' and "
                       "number 't'", path, line);
    struct gate_event *ne = realloc(*events, (*n_events + 1) * sizeof *ne);
    if (ne == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", path);
    *events = ne;
    struct gate_event *e = &ne[*n_events];
    memset(e, 0, sizeof *e);
    if ((e->json = strdup(text)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", path);
    (*n_events)++;
    e->t = t;
    const char *phase = gj_get_str(v, "phase"), *reason = gj_get_str(v, "reason");
    const char *nodes = gj_get_str(v, "nodes");
    rz_fmt(e->nodes, sizeof e->nodes, "%s", nodes != NULL ? nodes : "");
    rz_fmt(e->job, sizeof e->job, "%s", job);
    rz_fmt(e->event, sizeof e->event, "%s", event);
    rz_fmt(e->phase, sizeof e->phase, "%s", phase != NULL ? phase : "");
    rz_fmt(e->reason, sizeof e->reason, "%s", reason != NULL ? reason : "");
    gate_event_summary(e, v);
    time_t secs = (time_t)t;
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(e->when, sizeof e->when, "%Y-%m-%d %H:%M:%SZ", &tm);
    return RZ_OK;
}

const char *gate_requeue_name(enum gate_requeue r)
{
    static const char *const names[GATE_N_RQ] = {"failure", "signal", "preemption", "time_limit",
                                                 "node_failure", "slurm", "preflight_node",
                                                 "network", "other"};
    return (unsigned)r < GATE_N_RQ ? names[r] : "other";
}

enum gate_requeue gate_requeue_of(const char *reason)
{
    for (int r = 0; r < GATE_RQ_OTHER; r++)
        if (strcmp(reason, gate_requeue_name((enum gate_requeue)r)) == 0)
            return (enum gate_requeue)r;
    return GATE_RQ_OTHER;
}

bool gate_is_chain_event(const struct gate_event *e)
{
    return strcmp(e->event, "promote") == 0 || strcmp(e->event, "rollback") == 0 ||
           strcmp(e->event, "rollback_start") == 0;
}

/* The verdict timeline: how each attempt of every job of this run directory started, ended and
 * was decided.  Other events (and unknown ones) stay in the job's own timeline only. */
bool gate_is_verdict_event(const struct gate_event *e)
{
    static const char *const names[] = {
        "start", "preflight_failed", "resume", "rollback_start", "attempt_end", "requeue",
        "relaunch", "give_up", "no_progress", "owner_takeover", "finished", "verdict", "promote", "rollback",
        "gate_failed"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(names); i++)
        if (strcmp(e->event, names[i]) == 0)
            return true;
    return false;
}

struct gate_events {
    struct gate_event **ev;
    size_t *n;
};

static enum rz_status gate_event_cb(void *ctx, const struct gj_value *v, const char *path,
                                    long line, const char *text, struct rz_err *err)
{
    struct gate_events *e = ctx;
    return gate_event_line(e->ev, e->n, v, path, line, text, err);
}

enum rz_status gate_read_events_file(const char *path, struct gate_event **ev, size_t *n,
                                     struct rz_err *err)
{
    struct stat sb;
    struct gate_events ctx = {ev, n};
    if (stat(path, &sb) != 0)
        return RZ_OK; /* a hand-run trainer has no wrapper events: the criteria say so */
    return gate_read_jsonl(path, gate_event_cb, &ctx, err);
}

