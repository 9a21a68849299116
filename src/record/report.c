/* report.c: report.json read back (see report.h). */
#include "config.h"

#include "record/report.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/json_read.h"
#include "core/util.h"

bool report_path(char *out, size_t len, const char *run_dir, const char *job)
{
    int w = snprintf(out, len, "%s/reports/%s/report.json", run_dir, job);
    return w > 0 && (size_t)w < len;
}

void report_newest(char *out, size_t len, const char *run_dir)
{
    char dir[4200];
    struct timespec best = {0, 0};
    out[0] = '\0';
    rz_fmt(dir, sizeof dir, "%s/reports", run_dir);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char p[8400];
        struct stat sb;
        if (e->d_name[0] == '.' || !report_path(p, sizeof p, run_dir, e->d_name) ||
            stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (out[0] == '\0' || sb.st_mtim.tv_sec > best.tv_sec ||
            (sb.st_mtim.tv_sec == best.tv_sec && sb.st_mtim.tv_nsec > best.tv_nsec)) {
            best = sb.st_mtim;
            rz_fmt(out, len, "%s", p);
        }
    }
    if (d != NULL)
        closedir(d);
}

static void report_str(char *out, size_t len, const struct gj_value *o, const char *key)
{
    const char *s = gj_get_str(o, key);
    rz_fmt(out, len, "%s", s != NULL ? s : "");
}

/* The curve KEY ([[samples_seen, loss], ...]) into *curve (allocated) and *n. */
static enum rz_status report_curve(double **curve, size_t *n, const struct gj_value *lc,
                                   const char *key, const char *path, struct rz_err *err)
{
    if (lc->type != GJ_ARR)
        return rz_fail(err, RZ_EDATA, "%s: '%s' is not an array", path, key);
    double *xy = calloc(lc->n ? 2 * lc->n : 1, sizeof *xy);
    if (xy == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", path);
    *curve = xy;
    for (size_t i = 0; i < lc->n; i++) {
        const struct gj_value *p = &lc->items[i];
        if (p->type != GJ_ARR || p->n != 2 || p->items[0].type != GJ_NUM ||
            p->items[1].type != GJ_NUM)
            return rz_fail(err, RZ_EDATA, "%s: %s[%zu] is not [samples_seen, loss]", path, key,
                           i);
        if (i > 0 && p->items[0].num < xy[2 * (i - 1)])
            return rz_fail(err, RZ_EDATA, "%s: %s[%zu]: samples_seen decreases", path, key, i);
        xy[2 * i] = p->items[0].num;
        xy[2 * i + 1] = p->items[1].num;
    }
    *n = lc->n;
    return RZ_OK;
}

static int report_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over ranks of per_rank[].mean_compute_s (NaN if any rank lacks it). */
static double report_median_compute(const struct gj_value *v)
{
    const struct gj_value *pr = gj_get(v, "per_rank");
    if (pr == NULL || pr->type != GJ_ARR || pr->n == 0)
        return NAN;
    double *x = calloc(pr->n, sizeof *x), m = NAN;
    size_t n = 0;
    for (size_t i = 0; x != NULL && i < pr->n; i++)
        if (gj_get_num(&pr->items[i], "mean_compute_s", &x[n]))
            n++;
    if (x != NULL && n == pr->n) {
        qsort(x, n, sizeof *x, report_dbl_cmp);
        m = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    }
    free(x);
    return m;
}

static void report_criteria(struct report_rec *r, const struct gj_value *v)
{
    const struct gj_value *c = gj_get(v, "criteria");
    for (size_t i = 0; c != NULL && c->type == GJ_ARR && i < c->n &&
                       r->n_criteria < REPORT_MAX_CRITERIA; i++) {
        const char *name = gj_get_str(&c->items[i], "name");
        if (name == NULL)
            continue;
        struct report_criterion *k = &r->criteria[r->n_criteria++];
        rz_fmt(k->name, sizeof k->name, "%s", name);
        k->measured = NAN;
        (void)gj_get_num(&c->items[i], "measured", &k->measured);
    }
}

static void report_reliability(struct report_rec *r, const struct gj_value *v)
{
    const struct gj_value *l = gj_get(v, "time_lost_by_kind");
    for (size_t i = 0; l != NULL && l->type == GJ_ARR && i < l->n && r->n_lost < REPORT_MAX_LOST;
         i++) {
        const char *kind = gj_get_str(&l->items[i], "kind");
        struct report_lost *x = &r->lost[r->n_lost];
        if (kind == NULL || !gj_get_num(&l->items[i], "seconds", &x->seconds))
            continue;
        rz_fmt(x->kind, sizeof x->kind, "%s", kind);
        (void)gj_get_int(&l->items[i], "stops", &x->stops);
        r->n_lost++;
    }
    const char *lost = gj_get_str(v, "nodes_lost"), *excl = gj_get_str(v, "nodes_excluded");
    rz_fmt(r->nodes_lost, sizeof r->nodes_lost, "%s", lost != NULL ? lost : "");
    rz_fmt(r->nodes_excluded, sizeof r->nodes_excluded, "%s", excl != NULL ? excl : "");
}

static void report_topology(struct report_rec *r, const struct gj_value *v)
{
    const struct gj_value *t = gj_get(v, "topology");
    int64_t nodes = 0, machines = 0;
    r->cores_per_rank = r->machine_cpus = r->cpu_quota = NAN;
    if (t != NULL && t->type == GJ_OBJ) {
        (void)gj_get_int(t, "nodes", &nodes);
        (void)gj_get_int(t, "machines", &machines);
        (void)gj_get_num(t, "cores_per_rank", &r->cores_per_rank);
        const struct gj_value *pn = gj_get(t, "per_node");
        if (pn != NULL && pn->type == GJ_ARR && pn->n > 0)
            (void)gj_get_num(&pn->items[0], "machine_cpus", &r->machine_cpus);
        for (size_t i = 0; pn != NULL && pn->type == GJ_ARR && i < pn->n; i++) {
            double q = NAN; /* null: no quota on that node */
            if (gj_get_num(&pn->items[i], "cpu_quota", &q) && q > 0 && !(q >= r->cpu_quota))
                r->cpu_quota = q;
        }
    }
    r->nodes = (int)nodes;
    r->machines = (int)machines;
}

/* links: the format health.json's reader knows (a report without links has none). */
static enum rz_status report_links(struct report_rec *r, const struct gj_value *v,
                                   struct rz_err *err)
{
    const struct gj_value *l = gj_get(v, "links");
    if (l == NULL || l->type != GJ_OBJ)
        return RZ_OK;
    struct health_links *m = calloc(1, sizeof *m);
    if (m == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", r->path);
    r->links = m;
    return health_links_read(l, m, r->path, err);
}

static enum rz_status report_fields(struct report_rec *r, const struct gj_value *v,
                                    struct rz_err *err)
{
    const char *path = r->path;
    if (v->type != GJ_OBJ || gj_get_str(v, "phase") == NULL || gj_get_str(v, "job") == NULL ||
        !gj_get_int(v, "world_size", &r->world_size) || r->world_size < 0)
        return rz_fail(err, RZ_EDATA, "%s: not a ryzen-gate report (needs 'phase', 'job' and "
                       "'world_size' >= 0)", path);
    report_str(r->phase, sizeof r->phase, v, "phase");
    report_str(r->job, sizeof r->job, v, "job");
    report_str(r->verdict, sizeof r->verdict, v, "verdict");
    report_str(r->ended, sizeof r->ended, v, "ended");
    report_str(r->time, sizeof r->time, v, "time");
    report_str(r->action, sizeof r->action, gj_get(v, "planned_action"), "action");
    report_str(r->action_phase, sizeof r->action_phase, gj_get(v, "planned_action"), "phase");
    report_str(r->rollback_ckpt, sizeof r->rollback_ckpt, gj_get(v, "rollback_checkpoint"),
               "path");
    const struct gj_value *tp = gj_get(v, "throughput");
    r->has_throughput = tp != NULL && (tp->type == GJ_NUM || tp->type == GJ_NULL);
    (void)gj_get_num(v, "throughput", &r->throughput);
    (void)gj_get_num(v, "throughput_p10", &r->throughput_p10);
    (void)gj_get_num(v, "allreduce_p50_ms", &r->allreduce_p50_ms);
    (void)gj_get_int(v, "steps", &r->steps);
    (void)gj_get_int(v, "skipped_steps", &r->skipped_steps);
    (void)gj_get_num(gj_get(v, "environment"), "global_batch", &r->global_batch);
    (void)gj_get_num(gj_get(v, "environment"), "num_parameters", &r->num_parameters);
    r->median_compute_s = report_median_compute(v);
    report_criteria(r, v);
    report_topology(r, v);
    report_reliability(r, v);
    const struct gj_value *lc = gj_get(v, "loss_curve"), *vc = gj_get(v, "val_loss_curve");
    r->has_curve = lc != NULL;
    enum rz_status st = RZ_OK;
    if (lc != NULL)
        st = report_curve(&r->curve, &r->n_curve, lc, "loss_curve", path, err);
    if (st == RZ_OK && vc != NULL)
        st = report_curve(&r->val_curve, &r->n_val_curve, vc, "val_loss_curve", path, err);
    return st == RZ_OK ? report_links(r, v, err) : st;
}

enum rz_status report_read(struct report_rec *r, const char *path, struct rz_err *err)
{
    struct gj_value *v = NULL;
    memset(r, 0, sizeof *r);
    r->throughput = r->throughput_p10 = r->allreduce_p50_ms = NAN;
    r->global_batch = r->num_parameters = r->median_compute_s = NAN;
    r->cores_per_rank = r->machine_cpus = r->cpu_quota = NAN;
    if (strlen(path) >= sizeof r->path)
        return rz_fail(err, RZ_EIO, "report path too long: %.200s...", path);
    rz_fmt(r->path, sizeof r->path, "%s", path);
    enum rz_status st = gj_parse_file(path, &v, err);
    if (st == RZ_OK)
        st = report_fields(r, v, err);
    gj_free(v);
    return st;
}

double report_measured(const struct report_rec *r, const char *name)
{
    for (int i = 0; i < r->n_criteria; i++)
        if (strcmp(r->criteria[i].name, name) == 0)
            return r->criteria[i].measured;
    return NAN;
}

void report_free(struct report_rec *r)
{
    free(r->curve);
    free(r->val_curve);
    free(r->links);
    r->curve = r->val_curve = NULL;
    r->links = NULL;
    r->n_curve = r->n_val_curve = 0;
}
