/* ladder_read.c: a run root read as the ladder's document: every phase report (through
 * record/report.h) and wrapper event (record/events.h) under it (the chain's RUN_ROOT), each
 * attempt's start, hand-over and requeues from its lineage's events, and the verdict timeline;
 * then the derived figures (ladder_model.c).
 * Deliberately not here: the model (ladder_model.c), rendering (ladder_write.c,
 * record/ladder_json.c). */
#include "config.h"

#include "ladder/ladder.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/json_read.h"
#include "core/util.h"
#include "record/events.h"
#include "record/layout.h"
#include "record/report.h"

_Static_assert(EVENT_N_RQ <= LADDER_MAX_RQ, "every requeue reason has a count");

/* Every lineage's events.jsonl while the run root is read, each event's lineage beside it. */
struct ladder_events {
    struct event_rec *ev;
    size_t n;
    char (*lineage)[LADDER_NAME_MAX * 2];
};

/* ---- one report.json -------------------------------------------------------------------------- */

/* Where an attempt ran, from its report's topology and links. */
static void ladder_attempt_place(struct ladder_attempt *a, const struct report_rec *r)
{
    a->nodes = r->nodes;
    a->shared_machine = r->nodes > 1 && r->machines == 1;
    a->cores_per_rank = r->cores_per_rank;
    a->machine_cpus = r->machine_cpus;
    a->node_quota = r->cpu_quota;
    a->link_Bps = a->link_lat_s = a->ring_hop_s = NAN;
    if (r->links != NULL)
        ladder_link_figures(r->links, &a->link_Bps, &a->link_lat_s);
    if (r->links != NULL && r->links->ring_hop_us > 0)
        a->ring_hop_s = 1e-6 * r->links->ring_hop_us;
}

static void ladder_attempt_parse(struct ladder_attempt *a, const struct report_rec *r)
{
    a->world = (int)r->world_size;
    rz_fmt(a->phase, sizeof a->phase, "%s", r->phase);
    rz_fmt(a->job, sizeof a->job, "%s", r->job);
    rz_fmt(a->verdict, sizeof a->verdict, "%s", r->verdict);
    rz_fmt(a->ended, sizeof a->ended, "%s", r->ended);
    rz_fmt(a->time, sizeof a->time, "%s", r->time);
    rz_fmt(a->action, sizeof a->action, "%s", r->action);
    rz_fmt(a->action_phase, sizeof a->action_phase, "%s", r->action_phase);
    rz_fmt(a->rollback_ckpt, sizeof a->rollback_ckpt, "%s", r->rollback_ckpt);
    rz_fmt(a->report, sizeof a->report, "%s", r->path);
    a->throughput = r->throughput;
    a->throughput_p10 = r->throughput_p10;
    a->p50_ms = r->allreduce_p50_ms;
    a->steps = r->steps;
    a->skipped = r->skipped_steps;
    a->efficiency_prev = report_measured(r, "efficiency");
    a->comm = report_measured(r, "comm");
    a->p99_ms = report_measured(r, "allreduce_p99_ms");
    a->straggler = report_measured(r, "straggler_ratio");
    a->compute_s = r->median_compute_s;
    a->params = r->num_parameters;
    /* world 0: the phase ended before training; listed, never fitted (ladder_usable). */
    a->per_rank_batch = a->world > 0 ? r->global_batch / a->world : (double)NAN;
    a->efficiency = NAN;
    a->goodput = report_measured(r, "uptime");
    a->n_lost = r->n_lost;
    memcpy(a->lost, r->lost, sizeof a->lost);
    rz_fmt(a->nodes_lost, sizeof a->nodes_lost, "%s", r->nodes_lost);
    rz_fmt(a->nodes_excluded, sizeof a->nodes_excluded, "%s", r->nodes_excluded);
    ladder_attempt_place(a, r);
}

static enum rz_status ladder_add_attempt(struct ladder *l, const char *path,
                                       const char *lineage, struct rz_err *err)
{
    struct report_rec *r = malloc(sizeof *r);
    if (r == NULL)
        return rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    enum rz_status st = report_read(r, path, err);
    struct ladder_attempt *na = st == RZ_OK ? realloc(l->att, (l->n_att + 1) * sizeof *na) : NULL;
    if (st == RZ_OK && na == NULL)
        st = rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    if (st == RZ_OK) {
        l->att = na;
        struct ladder_attempt *a = &na[l->n_att++];
        memset(a, 0, sizeof *a);
        ladder_attempt_parse(a, r);
        rz_fmt(a->lineage, sizeof a->lineage, "%s", lineage);
    }
    report_free(r);
    free(r);
    return st;
}

/* ---- the directory tree ---------------------------------------------------------------------- */

/* Every DIR/reports/<job>/report.json and DIR/events.jsonl of one lineage. */
static enum rz_status ladder_read_lineage(struct ladder *l, struct ladder_events *ev,
                                          const char *dir, const char *lineage,
                                          struct rz_err *err)
{
    char path[8400];
    rz_fmt(path, sizeof path, "%s/events.jsonl", dir);
    size_t first = ev->n;
    enum rz_status st = events_read(path, &ev->ev, &ev->n, err);
    if (st != RZ_OK)
        return st;
    void *nl = realloc(ev->lineage, (ev->n + 1) * sizeof *ev->lineage);
    if (nl == NULL)
        return rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    ev->lineage = nl;
    for (size_t i = first; i < ev->n; i++)
        rz_fmt(ev->lineage[i], sizeof ev->lineage[i], "%s", lineage);
    rz_fmt(path, sizeof path, "%s/reports", dir);
    DIR *d = opendir(path);
    struct dirent *e;
    while (st == RZ_OK && d != NULL && (e = readdir(d)) != NULL) {
        char rep[8700];
        struct stat sb;
        if (e->d_name[0] == '.')
            continue;
        if (report_path(rep, sizeof rep, dir, e->d_name) && stat(rep, &sb) == 0 &&
            S_ISREG(sb.st_mode))
            st = ladder_add_attempt(l, rep, lineage, err);
    }
    if (d != NULL)
        closedir(d);
    return st;
}

/* RUN_ROOT/<phase> and RUN_ROOT/<phase>/rollback-<job>. */
static enum rz_status ladder_read_phase(struct ladder *l, struct ladder_events *ev,
                                        const char *phase, struct rz_err *err)
{
    char dir[4400];
    rz_fmt(dir, sizeof dir, "%s/%s", l->root, phase);
    enum rz_status st = ladder_read_lineage(l, ev, dir, phase, err);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (st == RZ_OK && d != NULL && (e = readdir(d)) != NULL) {
        char sub[8400], lineage[LADDER_NAME_MAX * 2];
        struct stat sb;
        if (!layout_is_rollback(e->d_name))
            continue;
        rz_fmt(sub, sizeof sub, "%s/%s", dir, e->d_name);
        rz_fmt(lineage, sizeof lineage, "%s/%s", phase, e->d_name);
        if (stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = ladder_read_lineage(l, ev, sub, lineage, err);
    }
    if (d != NULL)
        closedir(d);
    return st;
}

static int ladder_attempt_cmp(const void *a, const void *b)
{
    const struct ladder_attempt *x = a, *y = b;
    if (x->world != y->world)
        return (x->world > y->world) - (x->world < y->world);
    return strcmp(x->time, y->time);
}

/* Events by time, keeping each event's lineage beside it (a stable insertion sort: a run root
 * has hundreds of events, not millions). */
static void ladder_sort_events(struct ladder_events *ev)
{
    for (size_t i = 1; i < ev->n; i++) {
        struct event_rec e = ev->ev[i];
        char lin[LADDER_NAME_MAX * 2];
        memcpy(lin, ev->lineage[i], sizeof lin);
        size_t j = i;
        for (; j > 0 && ev->ev[j - 1].t > e.t; j--) {
            ev->ev[j] = ev->ev[j - 1];
            memcpy(ev->lineage[j], ev->lineage[j - 1], sizeof lin);
        }
        ev->ev[j] = e;
        memcpy(ev->lineage[j], lin, sizeof lin);
    }
}

/* What the events say about each attempt: where its run started (rollback_start, else the
 * first resume with a checkpoint), where a rollback handed its checkpoint, its requeues. */
static void ladder_attempt_events(const struct ladder_events *ev, struct ladder_attempt *a)
{
    for (size_t i = 0; i < ev->n; i++) {
        const struct event_rec *e = &ev->ev[i];
        if (strcmp(e->job, a->job) != 0 || strcmp(ev->lineage[i], a->lineage) != 0)
            continue;
        struct gj_value *v = NULL;
        if (gj_parse(&v, e->json, strlen(e->json), "event", 1, NULL) != RZ_OK)
            continue;
        const char *ck = gj_get_str(v, "checkpoint");
        bool start = strcmp(e->event, "rollback_start") == 0 ||
                     (strcmp(e->event, "resume") == 0 && a->from_ckpt[0] == '\0');
        if (start && ck != NULL)
            rz_fmt(a->from_ckpt, sizeof a->from_ckpt, "%s", ck);
        if (strcmp(e->event, "rollback") == 0 && gj_get_str(v, "new_job") != NULL)
            rz_fmt(a->handed_to, sizeof a->handed_to, "job %s (%s)", gj_get_str(v, "new_job"),
                   gj_get_str(v, "to_phase") != NULL ? gj_get_str(v, "to_phase") : "?");
        if (strcmp(e->event, "requeue") == 0 || strcmp(e->event, "relaunch") == 0) {
            a->requeues[event_requeue_of(e->reason)]++;
        }
        gj_free(v);
    }
}

/* The verdict timeline (start, requeue, attempt_end, verdict, promote, rollback, ...), by time. */
static enum rz_status ladder_timeline(struct ladder *l, const struct ladder_events *ev,
                                      struct rz_err *err)
{
    if ((l->timeline = calloc(ev->n + 1, sizeof *l->timeline)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    for (size_t i = 0; i < ev->n; i++) {
        const struct event_rec *e = &ev->ev[i];
        if (!event_is_verdict(e))
            continue;
        struct ladder_event *t = &l->timeline[l->n_timeline++];
        rz_fmt(t->when, sizeof t->when, "%s", e->when);
        t->t = e->t;
        rz_fmt(t->lineage, sizeof t->lineage, "%s", ev->lineage[i]);
        rz_fmt(t->job, sizeof t->job, "%s", e->job);
        rz_fmt(t->event, sizeof t->event, "%s", e->event);
        rz_fmt(t->summary, sizeof t->summary, "%s", e->summary);
    }
    return RZ_OK;
}

/* Every RUN_ROOT/<phase> and its rollbacks: the attempts into l, the events into ev. */
static enum rz_status ladder_read_root(struct ladder *l, struct ladder_events *ev,
                                       const char *root, struct rz_err *err)
{
    DIR *d = opendir(root);
    if (d == NULL)
        return rz_fail(err, RZ_EDATA, "ladder: open '%s': %s", root, strerror(errno));
    enum rz_status st = RZ_OK;
    struct dirent *e;
    while (st == RZ_OK && (e = readdir(d)) != NULL) {
        char dir[8400];
        struct stat sb;
        rz_fmt(dir, sizeof dir, "%s/%s", root, e->d_name);
        if (e->d_name[0] != '.' && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = ladder_read_phase(l, ev, e->d_name, err);
    }
    closedir(d);
    if (st == RZ_OK && l->n_att == 0)
        st = rz_fail(err, RZ_EDATA, "ladder: no phase report under '%s' (looked for "
                     "<phase>/reports/<job>/report.json and <phase>/rollback-<job>/reports/...)",
                     root);
    return st;
}

enum rz_status ladder_read(struct ladder *l, const char *root, struct rz_err *err)
{
    memset(l, 0, sizeof *l);
    rz_fmt(l->root, sizeof l->root, "%s", root);
    rz_utc_iso8601(l->time, sizeof l->time);
    for (int r = 0; r < EVENT_N_RQ; r++)
        l->rq_names[l->n_rq++] = event_requeue_name((enum event_requeue)r);
    struct ladder_events ev = {NULL, 0, NULL};
    enum rz_status st = ladder_read_root(l, &ev, root, err);
    if (st == RZ_OK) {
        qsort(l->att, l->n_att, sizeof *l->att, ladder_attempt_cmp);
        ladder_sort_events(&ev);
        st = ladder_timeline(l, &ev, err);
    }
    for (size_t i = 0; st == RZ_OK && i < l->n_att; i++)
        ladder_attempt_events(&ev, &l->att[i]);
    if (st == RZ_OK)
        st = ladder_derive(l, err);
    events_free(ev.ev, ev.n);
    free(ev.lineage);
    return st;
}

void ladder_fit_root(struct ladder_fit *fit, const char *root, int below_world)
{
    struct ladder l;
    struct rz_err err;
    memset(fit, 0, sizeof *fit);
    if (ladder_read(&l, root, &err) == RZ_OK)
        ladder_fit(&l, below_world, fit);
    else
        rz_fmt(fit->note, sizeof fit->note, "%s", err.msg);
    ladder_free(&l);
}

void ladder_free(struct ladder *l)
{
    if (l == NULL)
        return;
    free(l->att);
    free(l->hindcast);
    free(l->timeline);
    memset(l, 0, sizeof *l);
}
