#include "config.h"

/* gate_baseline.c: the baseline a phase is judged against: the previous phase's newest
 * report.json found by convention (RUNROOT/<phase.previous>/reports/<job>/report.json, newest by
 * mtime) or the one given with --baseline, read for its throughput, world size and loss curve.
 * Deliberately not here: what the criteria do with it (gate_eval.c).  A missing baseline is not
 * an error (the affected criteria become "not judged" with the reason); a malformed one is. */

#include "gate/gate.h"

#include <stdlib.h>

#include "core/util.h"
#include "gate/gate_internal.h"
#include "record/layout.h"
#include "record/report.h"

enum rz_status gate_read_baseline(struct gate_baseline *b, const char *path, struct rz_err *err)
{
    struct report_rec r;
    enum rz_status st = report_read(&r, path, err);
    if (st == RZ_OK && r.world_size < 1)
        st = rz_fail(err, RZ_EDATA, "%s: not a baseline report: that phase ended before training "
                     "(world_size 0%s%s)", path, r.ended[0] ? ", ended: " : "", r.ended);
    if (st == RZ_OK && (!r.has_throughput || !r.has_curve))
        st = rz_fail(err, RZ_EDATA, "%s: not a baseline report (needs 'throughput' and "
                     "'loss_curve')", path);
    free(b->curve);
    free(b->val_curve);
    b->curve = b->val_curve = NULL;
    b->n_curve = b->n_val_curve = 0;
    if (st == RZ_OK) {
        rz_fmt(b->phase, sizeof b->phase, "%s", r.phase);
        rz_fmt(b->job, sizeof b->job, "%s", r.job);
        rz_fmt(b->path, sizeof b->path, "%s", path);
        b->world_size = r.world_size;
        b->throughput = r.throughput;
        b->curve = r.curve;             /* taken over from the record */
        b->n_curve = r.n_curve;
        b->val_curve = r.val_curve;
        b->n_val_curve = r.n_val_curve;
        r.curve = r.val_curve = NULL;
    }
    report_free(&r);
    b->present = st == RZ_OK;
    return st;
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
    rz_fmt(dir, sizeof dir, "%s/%s", root, c->phase.previous);
    report_newest(found, sizeof found, dir);
    if (found[0] == '\0') {
        rz_fmt(b->reason, sizeof b->reason, "no baseline: no report of phase '%s' found "
                 "(looked for %s/reports/*/report.json; pass --baseline REPORT.json)",
                 c->phase.previous, dir);
        return RZ_OK;
    }
    return gate_read_baseline(b, found, err);
}
