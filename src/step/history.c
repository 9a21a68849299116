/* history.c: what ryzen-step reads back from events.jsonl (record/events.h owns the format, its
 * writer and its reader): this job's requeues by reason, whether its last attempts made
 * progress, the nodes it excluded, the jobs its lineage submitted and the run root's node
 * failures (see step_internal.h); and step_event, the writer with the job output's echo and the
 * runner's clock.  Lines that do not parse are skipped: a line cut by a crash must not stop the
 * job. */
#include "config.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "core/json_read.h"
#include "record/events.h"
#include "step/step_internal.h"

enum rz_status step_events_open(struct step_events *ev, const char *run_dir, const char *job,
                                const char *lineage, long restart, const char *phase,
                                FILE *echo, const struct step_runner *clock, struct rz_err *err)
{
    enum rz_status st = events_open(&ev->log, run_dir, job, lineage, restart, phase, err);
    ev->echo = st == RZ_OK ? echo : NULL;
    ev->clock = clock;
    return st;
}

void step_event(struct step_events *ev, const char *event, const char *message,
                const struct event_kv *kv, size_t n)
{
    if (ev->echo != NULL) {
        fprintf(ev->echo, "ryzen-step: %s: %s\n", event, message);
        fflush(ev->echo);
    }
    if (ev->log.f != NULL)
        event_append(&ev->log, ev->clock->now(ev->clock), event, message, kv, n);
}

void step_events_close(struct step_events *ev) { events_close(&ev->log); }

/* ---- reading back ---------------------------------------------------------------------------- */

typedef void (*line_fn)(const struct gj_value *obj, void *user);

struct each_ctx {
    line_fn fn;
    void *user;
};

static enum rz_status each_line(void *ctx, const struct gj_value *v, const char *path, long line,
                                const char *text, struct rz_err *err)
{
    (void)path, (void)line, (void)text, (void)err;
    const struct each_ctx *c = ctx;
    c->fn(v, c->user);
    return RZ_OK;
}

/* Call fn for every line of path that parses as a JSON object (record/events.h, tolerant). */
static void each_event(const char *path, line_fn fn, void *user)
{
    struct each_ctx c = {fn, user};
    struct rz_err err;
    (void)events_each(path, JSONL_TOLERANT, each_line, &c, &err);
}

static bool is_event(const struct gj_value *o, const char *name)
{
    const char *e = gj_get_str(o, "event");
    return e != NULL && strcmp(e, name) == 0;
}

struct history_scan {
    const char *job;
    struct step_history *h;
    char last_nodes[512];       /* the newest start's node_list so far */
    char cur_failed[512];       /* node_failed nodes since the newest start so far */
    long last_restart;
};

static void history_line(const struct gj_value *o, void *user)
{
    struct history_scan *s = user;
    const char *job = gj_get_str(o, "job");
    if (job == NULL || strcmp(job, s->job) != 0)
        return;
    if (is_event(o, "requeue") || is_event(o, "relaunch")) { /* a relaunch is a restart too */
        const char *reason = gj_get_str(o, "reason");
        enum event_requeue r = event_requeue_of(reason);
        if (r != EVENT_RQ_OTHER) {
            s->h->requeues[r]++;
            s->h->pending_reason = (int)r; /* down until the next training starts */
        }
        /* An attempt that excluded a node its preflight failed did what it could: the next one
         * runs without that node, not "more of the same" (the no-progress hold is for that).
         * Two exclusions in a row are counted apart (exclusion_run). */
        bool excluded = r == EVENT_RQ_PREFLIGHT_NODE;
        if (excluded)
            s->h->no_progress_run = 0;
        s->h->exclusion_run = excluded ? s->h->exclusion_run + 1 : 0;
    } else if (is_event(o, "attempt_end")) {
        double progress = 0.0, t = 0.0;
        gj_get_num(o, "progress", &progress);
        gj_get_num(o, "t", &t);
        const char *cls = gj_get_str(o, "class");
        s->h->failures += cls != NULL && (strcmp(cls, "crash") == 0 || strcmp(cls, "hang") == 0);
        s->h->last_end_t = t > s->h->last_end_t ? t : s->h->last_end_t;
        s->h->pending_end_t = t;
        s->h->attempts++;
        const char *cause = gj_get_str(o, "cause");
        if (progress != 0.0)
            s->h->no_progress_run = 0;
        else if (cause == NULL || !step_cause_name_outside(cause))
            s->h->no_progress_run++; /* a stop from outside leaves the count as it was */
    } else if (is_event(o, "train_start")) {
        double t = 0.0;
        if (s->h->pending_reason >= 0 && s->h->pending_end_t > 0.0 && gj_get_num(o, "t", &t) &&
            t >= s->h->pending_end_t)
            s->h->down_s[s->h->pending_reason] += t - s->h->pending_end_t;
        s->h->pending_reason = -1;
    } else if (is_event(o, "start")) {
        double t = 0.0;
        if (gj_get_num(o, "t", &t) && (s->h->first_start_t == 0.0 || t < s->h->first_start_t))
            s->h->first_start_t = t;
        /* the newest start is this attempt's: keep the one before it */
        const char *nodes = gj_get_str(o, "node_list");
        double restart = -1;
        gj_get_num(o, "restart", &restart);
        rz_fmt(s->h->prev_nodes, sizeof s->h->prev_nodes, "%s", s->last_nodes);
        rz_fmt(s->h->prev_failed, sizeof s->h->prev_failed, "%s", s->cur_failed);
        s->cur_failed[0] = '\0';
        s->h->prev_restart = s->last_restart;
        rz_fmt(s->last_nodes, sizeof s->last_nodes, "%s", nodes != NULL ? nodes : "");
        s->last_restart = (long)restart;
    } else if (is_event(o, "node_failed")) {
        const char *nodes = gj_get_str(o, "nodes");
        if (nodes != NULL)
            rz_list_add(s->cur_failed, sizeof s->cur_failed, nodes);
    } else if (is_event(o, "network_partition")) {
        const char *nodes = gj_get_str(o, "nodes");
        if (nodes != NULL)
            rz_list_add(s->h->net_ends, sizeof s->h->net_ends, nodes);
    } else if (is_event(o, "preflight_failed") || is_event(o, "nodes_lost")) {
        s->h->failures += is_event(o, "nodes_lost"); /* a node the job lost: its attempt failed */
        const char *nodes = gj_get_str(o, "excluded_nodes");
        if (nodes != NULL)
            rz_list_add(s->h->excluded, sizeof s->h->excluded, nodes);
    }
}

double step_observed_mtbf(const struct step_history *h)
{
    if (h->failures <= 0 || h->first_start_t <= 0.0 || h->last_end_t <= h->first_start_t)
        return 0.0;
    return (h->last_end_t - h->first_start_t) / (double)h->failures;
}

void step_history_read(const char *events_path, const char *job, struct step_history *h)
{
    memset(h, 0, sizeof *h);
    struct history_scan s = {.job = job, .h = h, .last_restart = -1};
    h->prev_restart = -1;
    h->pending_reason = -1;
    each_event(events_path, history_line, &s);
}

/* Call fn for every line of every events.jsonl at most `depth` directories below dir
 * (PHASE/rollback-JOB/task-N): the whole run root's history. */
static void scan_tree(const char *dir, int depth, line_fn fn, void *user)
{
    char path[STEP_PATH_MAX + 512];
    rz_fmt(path, sizeof path, "%s/events.jsonl", dir);
    each_event(path, fn, user);
    DIR *d = depth > 0 ? opendir(dir) : NULL;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        struct stat sb;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "checkpoints") == 0 ||
            strcmp(e->d_name, "metrics") == 0 || strcmp(e->d_name, "reports") == 0)
            continue;
        rz_fmt(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            scan_tree(path, depth - 1, fn, user);
    }
    if (d != NULL)
        closedir(d);
}

struct lineage_scan {
    const char *lineage;
    char *out;
    size_t len;
    int n;
};

static void lineage_line(const struct gj_value *o, void *user)
{
    struct lineage_scan *s = user;
    const char *lineage = gj_get_str(o, "lineage");
    if (lineage == NULL || strcmp(lineage, s->lineage) != 0)
        return;
    const char *id = is_event(o, "promote") ? gj_get_str(o, "next_job")
                     : is_event(o, "rollback") ? gj_get_str(o, "new_job") : NULL;
    if (id == NULL || id[0] == '\0')
        return;
    size_t before = strlen(s->out);
    rz_list_add(s->out, s->len, id);
    s->n += strlen(s->out) != before;
}

int step_lineage_jobs(const char *run_root, const char *lineage, char *out, size_t len)
{
    out[0] = '\0';
    struct lineage_scan s = {lineage, out, len, 0};
    scan_tree(run_root, 3, lineage_line, &s);
    return s.n;
}

static void tally_line(const struct gj_value *o, void *user)
{
    struct step_node_tally *t = user;
    const char *nodes = is_event(o, "node_failed") ? gj_get_str(o, "nodes") : NULL;
    char buf[512];
    rz_fmt(buf, sizeof buf, "%s", nodes != NULL ? nodes : "");
    for (char *save = NULL, *name = strtok_r(buf, ",", &save); name != NULL;
         name = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < t->n && strcmp(t->node[i].name, name) != 0)
            i++;
        if (i == t->n) {
            if (t->n == STEP_MAX_TALLY)
                continue;
            rz_fmt(t->node[t->n].name, sizeof t->node[t->n].name, "%s", name);
            t->node[t->n++].failures = 0;
        }
        t->node[i].failures++;
    }
}

void step_node_tally(const char *run_root, struct step_node_tally *t)
{
    memset(t, 0, sizeof *t);
    scan_tree(run_root, 3, tally_line, t);
}

int step_node_failures(const struct step_node_tally *t, const char *node)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->node[i].name, node) == 0)
            return t->node[i].failures;
    return 0;
}
