#include "config.h"

/* gate_baseline.c: the baseline a phase is judged against: the previous phase's newest
 * report.json found by convention (RUNROOT/<phase.previous>/reports/<job>/report.json, newest by
 * mtime) or the one given with --baseline, read for its throughput, world size and loss curve.
 * Deliberately not here: what the criteria do with it (gate_eval.c).  A missing baseline is not
 * an error (the affected criteria become "not judged" with the reason); a malformed one is. */

#include "gate/gate.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "gate/gate_internal.h"
#include "record/layout.h"

/* The curve KEY ([[samples_seen, loss], ...]) into *curve (allocated) and *n. */
static enum rz_status gate_baseline_curve(double **curve, size_t *n, const struct gj_value *lc,
                                          const char *key, const char *path, struct rz_err *err)
{
    if (lc == NULL || lc->type != GJ_ARR)
        return rz_fail(err, RZ_EDATA, "%s: '%s' array missing", path, key);
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

enum rz_status gate_read_baseline(struct gate_baseline *b, const char *path, struct rz_err *err)
{
    struct gj_value *v = NULL;
    enum rz_status st = gj_parse_file(path, &v, err);
    if (st != RZ_OK)
        return st;
    const char *phase = gj_get_str(v, "phase"), *job = gj_get_str(v, "job");
    const struct gj_value *tp = gj_get(v, "throughput");
    if (phase == NULL || job == NULL || !gj_get_int(v, "world_size", &b->world_size) ||
        b->world_size < 1 || tp == NULL || (tp->type != GJ_NUM && tp->type != GJ_NULL)) {
        gj_free(v);
        return rz_fail(err, RZ_EDATA, "%s: not a ryzen-gate report (needs 'phase', 'job', "
                       "'world_size' >= 1 and 'throughput')", path);
    }
    rz_fmt(b->phase, sizeof b->phase, "%s", phase);
    rz_fmt(b->job, sizeof b->job, "%s", job);
    rz_fmt(b->path, sizeof b->path, "%s", path);
    b->throughput = tp->type == GJ_NUM ? tp->num : (double)NAN;
    free(b->curve);
    free(b->val_curve);
    b->curve = b->val_curve = NULL;
    b->n_curve = b->n_val_curve = 0;
    st = gate_baseline_curve(&b->curve, &b->n_curve, gj_get(v, "loss_curve"), "loss_curve",
                             path, err);
    const struct gj_value *vc = gj_get(v, "val_loss_curve"); /* only when it had validation */
    if (st == RZ_OK && vc != NULL)
        st = gate_baseline_curve(&b->val_curve, &b->n_val_curve, vc, "val_loss_curve", path,
                                 err);
    gj_free(v);
    b->present = st == RZ_OK;
    return st;
}

/* Newest DIR/<job>/report.json by mtime into out ("" if none). */
static void gate_newest_report(char *out, size_t len, const char *dir)
{
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    struct timespec best = {0, 0};
    while ((e = readdir(d)) != NULL) {
        char p[8300];
        struct stat sb;
        if (e->d_name[0] == '.')
            continue;
        rz_fmt(p, sizeof p, "%s/%s/report.json", dir, e->d_name);
        if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (out[0] == '\0' || sb.st_mtim.tv_sec > best.tv_sec ||
            (sb.st_mtim.tv_sec == best.tv_sec && sb.st_mtim.tv_nsec > best.tv_nsec)) {
            best = sb.st_mtim;
            rz_fmt(out, len, "%s", p);
        }
    }
    closedir(d);
}

enum rz_status gate_find_baseline(struct gate_input *in, const struct cfg *c, const char *path,
                                  struct rz_err *err)
{
    struct gate_baseline *b = &in->baseline;
    b->wanted = path != NULL || c->phase.previous[0] != '\0';
    if (!b->wanted) {
        rz_fmt(b->reason, sizeof b->reason, "phase.previous is \"\": this phase has no baseline");
        return RZ_OK;
    }
    if (path != NULL)
        return gate_read_baseline(b, path, err);
    char root[4096], dir[8200], found[8300];
    layout_run_root(in->run_dir, root, sizeof root);
    rz_fmt(dir, sizeof dir, "%s/%s/reports", root, c->phase.previous);
    gate_newest_report(found, sizeof found, dir);
    if (found[0] == '\0') {
        rz_fmt(b->reason, sizeof b->reason, "no baseline: no report of phase '%s' found "
                 "(looked for %s/*/report.json; pass --baseline REPORT.json)",
                 c->phase.previous, dir);
        return RZ_OK;
    }
    return gate_read_baseline(b, found, err);
}
