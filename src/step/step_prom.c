/* step_prom.c: ryzen-step's live textfile, beside the trainer's (docs/monitoring.md).  At each
 * training launch it writes <metrics.prom_dir or RUN_DIR/prom>/ryzen-<job>-step.prom: this
 * job's restarts by reason and the seconds it was down for each reason, from an attempt's end
 * to the next training launch (the report's time lost adds the detection before it and the
 * restore after it).  With ryzen_train_useful_seconds this is the goodput and where the rest
 * goes, while the job runs.  A write that fails is said once in the job output; training goes
 * on. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/durable.h"
#include "core/util.h"
#include "record/prom_text.h"
#include "step/step_internal.h"

struct live_doc {
    const struct wrapper *w;
    double down[EVENT_N_RQ_WRITTEN];
};

static void sample(FILE *f, const struct wrapper *w, const char *name, const char *reason,
                   double v)
{
    fprintf(f, "%s{", name);
    prom_text_label(f, "slurm_job_id", w->env->display_id, true);
    prom_text_label(f, "phase", w->phase, false);
    prom_text_label(f, "reason", reason, false);
    fputc('}', f);
    prom_text_value(f, v);
}

static void live_format(FILE *f, const void *ctx)
{
    const struct live_doc *d = ctx;
    const struct wrapper *w = d->w;
    prom_text_head(f, "ryzen_step_restarts_total", "counter",
                      "Restarts of the job (requeues and relaunches), by reason.");
    for (int r = 0; r < EVENT_N_RQ_WRITTEN; r++)
        sample(f, w, "ryzen_step_restarts_total", event_requeue_name((enum event_requeue)r),
               (double)w->hist.requeues[r]);
    prom_text_head(f, "ryzen_step_down_seconds_total", "counter",
                      "Seconds from an attempt's end to the next training launch, by the reason "
                      "of the restart.");
    for (int r = 0; r < EVENT_N_RQ_WRITTEN; r++)
        sample(f, w, "ryzen_step_down_seconds_total", event_requeue_name((enum event_requeue)r),
               d->down[r]);
}

void step_live_write(const struct wrapper *w)
{
    static bool said;
    char path[STEP_PATH_MAX * 2];
    struct rz_err err;
    struct live_doc d = {.w = w};
    for (int r = 0; r < EVENT_N_RQ_WRITTEN; r++)
        d.down[r] = w->hist.down_s[r];
    double now = w->r->now(w->r);
    const struct step_history *h = &w->hist;
    if (h->pending_reason >= 0 && h->pending_end_t > 0.0 && now >= h->pending_end_t)
        d.down[h->pending_reason] += now - h->pending_end_t; /* the restart launching now */
    const char *dir = w->cfg.metrics.prom_dir;
    if (dir[0] != '\0')
        rz_fmt(path, sizeof path, "%s/ryzen-%s-step.prom", dir, w->env->display_id);
    else
        rz_fmt(path, sizeof path, "%s/prom/ryzen-%s-step.prom", w->run_dir, w->env->display_id);
    char parent[sizeof path];
    rz_fmt(parent, sizeof parent, "%s", path);
    *strrchr(parent, '/') = '\0';
    enum rz_status st = rz_mkdirs(parent, &err);
    if (st == RZ_OK)
        st = rz_durable_write(path, "step-prom", live_format, &d, &err);
    if (st != RZ_OK && !said) {
        fprintf(w->out, "ryzen-step: warning: live metrics not written: %s\n", err.msg);
        said = true;
    }
}
