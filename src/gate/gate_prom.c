#include "config.h"

/* gate_prom.c: gate.prom in the Prometheus text exposition format (node_exporter's textfile
 * collector), formatted from the report document.  Every family has HELP and TYPE, its unit in
 * its name (_seconds, _ratio, _nats, ...: one family per measured quantity, so no family mixes
 * units) and the labels slurm_job_id and phase (`job` would clash with Prometheus's own scrape
 * label).  ryzen_last_update_timestamp_seconds says when the report was written.
 * The format's own pieces (labels, HELP and TYPE, values) are record/prom_text.h's.
 * Deliberately not here: where the file goes (gate_report.c) and the trainer's live metrics
 * (metrics/live_series.c). */

#include "gate/gate.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "record/prom_text.h"

/* Each criterion's measured value as its own family: name, help, and the factor from the
 * report's unit to the family's base unit (ms -> s, % -> ratio, h -> s). */
static const struct {
    const char *name, *help;
    double scale;
} gate_prom_measured[GATE_N_CRIT] = {
#define RZ_GATE_FAMILY(ID, name, unit, higher, go, no_go, doc, family, help, scale)               \
    [GATE_##ID] = {family, help, scale},
    RZ_GATES(RZ_GATE_FAMILY) /* config/gate_list.h */
#undef RZ_GATE_FAMILY
    [GATE_DURATION] = {"ryzen_gate_training_seconds",
                       "Training time (sum of global step times).", 3600},
};

/* One sample; `key` NULL for none beyond slurm_job_id and phase.  NaN (not measured) is left
 * out. */
static void gate_prom_sample(FILE *f, const char *name, const struct gate_input *in,
                             const char *key, const char *value, double v)
{
    if (isnan(v))
        return;
    fprintf(f, "%s{", name);
    prom_text_label(f, "slurm_job_id", in->job, true);
    prom_text_label(f, "phase", in->phase, false);
    if (key != NULL)
        prom_text_label(f, key, value, false);
    fputc('}', f);
    prom_text_value(f, v);
}

static void gate_prom_one(FILE *f, const struct gate_input *in, const char *name,
                          const char *help, double v)
{
    prom_text_head(f, name, "gauge", help);
    gate_prom_sample(f, name, in, NULL, NULL, v);
}

static void gate_prom_criteria(FILE *f, const struct gate_doc *d)
{
    const struct gate_criterion *k = d->res->crit;
    prom_text_head(f, "ryzen_gate_criterion_status", "gauge",
                      "Criterion status: 0 go, 1 no_go, 2 hold, 3 not judged, 4 n/a.");
    for (int i = 0; i < GATE_N_CRIT; i++)
        gate_prom_sample(f, "ryzen_gate_criterion_status", d->in, "criterion", k[i].name,
                         (double)k[i].status);
    for (int i = 0; i < GATE_N_CRIT; i++)
        gate_prom_one(f, d->in, gate_prom_measured[i].name, gate_prom_measured[i].help,
                      k[i].measured * gate_prom_measured[i].scale);
}

void gate_write_prom(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    const struct gate_result *res = d->res;
    prom_text_head(f, "ryzen_last_update_timestamp_seconds", "gauge",
                      "When this report was written (Unix seconds).");
    fputs("ryzen_last_update_timestamp_seconds{", f);
    prom_text_label(f, "slurm_job_id", in->job, true);
    prom_text_label(f, "phase", in->phase, false);
    fputc('}', f);
    prom_text_value(f, d->time_unix);
    gate_prom_one(f, in, "ryzen_gate_verdict", "Gate verdict: 0 GO, 1 NO-GO, 2 HOLD.",
                  (double)res->verdict);
    prom_text_head(f, "ryzen_gate_ended", "gauge",
                      "1: the phase ended without finishing training, for the reason in the label.");
    if (in->ended != GATE_END_NONE)
        gate_prom_sample(f, "ryzen_gate_ended", in, "reason", gate_end_name(in->ended), 1);
    gate_prom_criteria(f, d);
    gate_prom_one(f, in, "ryzen_gate_throughput_p10_samples_per_second",
                  "Steady-state global throughput, 10th percentile over windows.",
                  res->throughput_p10);
    gate_prom_one(f, in, "ryzen_gate_allreduce_p50_seconds",
                  "Small-collective latency, median over steady steps.",
                  res->allreduce_p50_ms / 1000.0);
    const struct {
        const char *name, *help;
        double ms;
    } grad[] = {
        {"ryzen_gate_grad_allreduce_p50_seconds", "The gradient all-reduce's own time per step, "
         "median over steady steps.", res->grad_p50_ms},
        {"ryzen_gate_grad_allreduce_p99_seconds", "The gradient all-reduce's own time per step, "
         "99th percentile over steady steps.", res->grad_p99_ms},
        {"ryzen_gate_grad_allreduce_exposed_p50_seconds", "The part of the gradient all-reduce a "
         "step waited for after backward, median over steady steps.", res->exposed_p50_ms},
        {"ryzen_gate_grad_allreduce_exposed_p99_seconds", "The part of the gradient all-reduce a "
         "step waited for after backward, 99th percentile over steady steps.",
         res->exposed_p99_ms},
    };
    for (size_t i = 0; i < sizeof grad / sizeof grad[0]; i++)
        gate_prom_one(f, in, grad[i].name, grad[i].help, grad[i].ms / 1000.0);
    prom_text_head(f, "ryzen_gate_requeues", "gauge", "Requeues of the judged job by reason.");
    for (int r = 0; r < EVENT_N_RQ; r++)
        gate_prom_sample(f, "ryzen_gate_requeues", in, "reason",
                         event_requeue_name((enum event_requeue)r), (double)in->requeues[r]);
    prom_text_head(f, "ryzen_gate_time_lost_seconds", "gauge",
                      "Wall time from the last step before a stop to the first step after it, "
                      "summed by kind of restart.");
    for (int i = 0; i < in->n_lost; i++)
        gate_prom_sample(f, "ryzen_gate_time_lost_seconds", in, "kind", in->lost[i].kind,
                         in->lost[i].seconds);
    gate_prom_one(f, in, "ryzen_gate_restarts", "Resumed runs within the judged job's metrics.",
                  (double)res->n_restarts);
    gate_prom_one(f, in, "ryzen_gate_world_size", "Ranks of the judged job.", in->world_size);
    gate_prom_one(f, in, "ryzen_gate_skipped_steps", "Steps the loss guard skipped.",
                  (double)res->skipped_steps);
}
