/* events.c: events.jsonl's writer, its reader and the requeue reasons (see events.h).
 * Not here: what ryzen-step concludes from the lines (step/history.c) or how ryzen-gate sorts
 * them into timelines (gate/gate_read.c). */
#include "config.h"

#include "record/events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"
#include "core/json_read.h"
#include "core/util.h"

/* ---- the requeue reasons --------------------------------------------------------------------- */

static const char *const requeue_names[EVENT_N_RQ] = {
    "failure", "signal", "preemption", "time_limit", "node_failure", "slurm", "preflight_node",
    "network", "other"};

const char *event_requeue_name(enum event_requeue r)
{
    return (unsigned)r < EVENT_N_RQ ? requeue_names[r] : requeue_names[EVENT_RQ_OTHER];
}

enum event_requeue event_requeue_of(const char *name)
{
    for (int r = 0; name != NULL && r < EVENT_N_RQ_WRITTEN; r++)
        if (strcmp(name, requeue_names[r]) == 0)
            return (enum event_requeue)r;
    return EVENT_RQ_OTHER;
}

/* ---- the writer ------------------------------------------------------------------------------ */

enum rz_status events_open(struct events_log *log, const char *run_dir, const char *job,
                           const char *lineage, long restart, const char *phase,
                           struct rz_err *err)
{
    memset(log, 0, sizeof *log);
    enum rz_status st = rz_mkdirs(run_dir, err);
    if (st != RZ_OK)
        return st;
    rz_fmt(log->path, sizeof log->path, "%s/events.jsonl", run_dir);
    log->f = fopen(log->path, "a");
    if (log->f == NULL)
        return rz_fail(err, RZ_EIO, "events: open '%s': %s", log->path, strerror(errno));
    log->restart = restart;
    rz_fmt(log->job, sizeof log->job, "%s", job);
    rz_fmt(log->lineage, sizeof log->lineage, "%s", lineage);
    rz_fmt(log->phase, sizeof log->phase, "%s", phase);
    return RZ_OK;
}

void event_append(struct events_log *log, double t, const char *event, const char *message,
                  const struct event_kv *kv, size_t n)
{
    if (log->f == NULL)
        return;
    char stamp[32];
    rz_utc_iso8601(stamp, sizeof stamp);
    struct rz_json j;
    rz_json_init(&j, log->f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "time", stamp);
    rz_json_kv_fixed(&j, "t", t, 3);
    rz_json_kv_string(&j, "job", log->job);
    rz_json_kv_string(&j, "lineage", log->lineage);
    rz_json_kv_int(&j, "restart", log->restart);
    rz_json_kv_string(&j, "phase", log->phase);
    rz_json_kv_string(&j, "event", event);
    rz_json_kv_string(&j, "message", message);
    for (size_t i = 0; i < n; i++) {
        if (kv[i].str != NULL)
            rz_json_kv_string(&j, kv[i].key, kv[i].str);
        else
            rz_json_kv_double(&j, kv[i].key, kv[i].num);
    }
    rz_json_object_end(&j);
    fputc('\n', log->f);
    fflush(log->f);
    fsync(fileno(log->f));
}

void events_close(struct events_log *log)
{
    if (log->f != NULL)
        fclose(log->f);
    log->f = NULL;
}

/* ---- the reader ------------------------------------------------------------------------------ */

enum rz_status events_each(const char *path, enum jsonl_policy policy, jsonl_line_fn fn,
                           void *ctx, struct rz_err *err)
{
    return jsonl_read(path, policy, fn, ctx, err);
}

/* "message (reason failure, status 75, ...)": the message and whichever key fields the event
 * carries, so the timelines need not know every event's shape (unknown events read the same). */
static void event_summary(struct event_rec *e, const struct gj_value *v)
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

struct events_array {
    struct event_rec **ev;
    size_t *n;
};

static enum rz_status event_line(void *ctx, const struct gj_value *v, const char *path,
                                 long line, const char *text, struct rz_err *err)
{
    struct events_array *a = ctx;
    const char *job = gj_get_str(v, "job"), *event = gj_get_str(v, "event");
    double t;
    if (job == NULL || event == NULL || !gj_get_num(v, "t", &t))
        return rz_fail(err, RZ_EDATA, "%s:%ld: an event needs string 'job', string 'event' and "
                       "number 't'", path, line);
    struct event_rec *ne = realloc(*a->ev, (*a->n + 1) * sizeof *ne);
    if (ne == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", path);
    *a->ev = ne;
    struct event_rec *e = &ne[*a->n];
    memset(e, 0, sizeof *e);
    if ((e->json = strdup(text)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", path);
    (*a->n)++;
    e->t = t;
    const char *phase = gj_get_str(v, "phase"), *reason = gj_get_str(v, "reason");
    const char *nodes = gj_get_str(v, "nodes");
    rz_fmt(e->nodes, sizeof e->nodes, "%s", nodes != NULL ? nodes : "");
    rz_fmt(e->job, sizeof e->job, "%s", job);
    rz_fmt(e->event, sizeof e->event, "%s", event);
    rz_fmt(e->phase, sizeof e->phase, "%s", phase != NULL ? phase : "");
    rz_fmt(e->reason, sizeof e->reason, "%s", reason != NULL ? reason : "");
    event_summary(e, v);
    rz_utc_format(e->when, sizeof e->when, t, RZ_UTC_SPACED);
    return RZ_OK;
}

enum rz_status events_read(const char *path, struct event_rec **ev, size_t *n,
                           struct rz_err *err)
{
    struct stat sb;
    struct events_array a = {ev, n};
    if (stat(path, &sb) != 0)
        return RZ_OK;
    return jsonl_read(path, JSONL_STRICT, event_line, &a, err);
}

bool event_is_chain(const struct event_rec *e)
{
    return strcmp(e->event, "promote") == 0 || strcmp(e->event, "rollback") == 0 ||
           strcmp(e->event, "rollback_start") == 0;
}

bool event_is_verdict(const struct event_rec *e)
{
    static const char *const names[] = {
        "start", "preflight_failed", "resume", "rollback_start", "attempt_end", "requeue",
        "relaunch", "give_up", "no_progress", "owner_takeover", "finished", "verdict", "promote",
        "rollback", "gate_failed"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(names); i++)
        if (strcmp(e->event, names[i]) == 0)
            return true;
    return false;
}

void events_free(struct event_rec *ev, size_t n)
{
    for (size_t i = 0; ev != NULL && i < n; i++)
        free(ev[i].json);
    free(ev);
}
