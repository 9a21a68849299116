#include "config.h"

/* gate_prom.c: gate.prom in the Prometheus text exposition format (node_exporter's textfile
 * collector): HELP and TYPE lines, then one sample per line, every ryzen_* metric labelled with
 * phase and job.  Deliberately not here: where the file goes (gate_report.c) and the trainer's
 * own per-step metrics. */

#include "gate/gate.h"

#include <math.h>
#include <string.h>

/* A label value with \, " and newline escaped as the format requires. */
static void gate_prom_label(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void gate_prom_head(FILE *f, const char *name, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* One sample; `criterion` NULL for run-level metrics.  NaN (not measured) is left out. */
static void gate_prom_sample(FILE *f, const char *name, const struct gate_input *in,
                             const char *criterion, double v)
{
    if (isnan(v))
        return;
    fprintf(f, "%s{phase=\"", name);
    gate_prom_label(f, in->phase);
    fputs("\",job=\"", f);
    gate_prom_label(f, in->job);
    if (criterion != NULL)
        fprintf(f, "\",criterion=\"%s", criterion);
    fprintf(f, "\"} %.9g\n", v);
}

static void gate_prom_one(FILE *f, const struct gate_input *in, const char *name,
                          const char *help, double v)
{
    gate_prom_head(f, name, help);
    gate_prom_sample(f, name, in, NULL, v);
}

void gate_write_prom(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    const struct gate_result *res = d->res;
    const struct gate_criterion *k = res->crit;
    gate_prom_one(f, in, "ryzen_gate_verdict", "Gate verdict: 0 GO, 1 NO-GO, 2 HOLD.",
                  (double)res->verdict);
    gate_prom_head(f, "ryzen_gate_criterion_status",
                   "Criterion status: 0 go, 1 no_go, 2 hold, 3 not judged, 4 n/a.");
    for (int i = 0; i < GATE_N_CRIT; i++)
        gate_prom_sample(f, "ryzen_gate_criterion_status", in, k[i].name, (double)k[i].status);
    gate_prom_head(f, "ryzen_gate_measured", "Measured value of each gate criterion (its unit "
                                             "is in report.json).");
    for (int i = 0; i < GATE_N_CRIT; i++)
        gate_prom_sample(f, "ryzen_gate_measured", in, k[i].name, k[i].measured);
    gate_prom_one(f, in, "ryzen_throughput_samples_per_second",
                  "Steady-state global throughput, median over windows.",
                  k[GATE_THROUGHPUT].measured);
    gate_prom_one(f, in, "ryzen_throughput_p10_samples_per_second",
                  "Steady-state global throughput, 10th percentile over windows.",
                  res->throughput_p10);
    gate_prom_one(f, in, "ryzen_efficiency", "Weak-scaling efficiency against the baseline.",
                  k[GATE_EFFICIENCY].measured);
    gate_prom_one(f, in, "ryzen_comm_share", "Exposed communication / step time, worst rank.",
                  k[GATE_COMM].measured);
    gate_prom_one(f, in, "ryzen_allreduce_p50_seconds", "Allreduce latency, median.",
                  res->allreduce_p50_ms / 1000.0);
    gate_prom_one(f, in, "ryzen_allreduce_p99_seconds", "Allreduce latency, 99th percentile.",
                  k[GATE_ALLREDUCE_P99_MS].measured / 1000.0);
    gate_prom_one(f, in, "ryzen_memory_share", "Peak RSS / node memory, worst node.",
                  k[GATE_MEMORY].measured);
    gate_prom_one(f, in, "ryzen_uptime_ratio", "Training time / wall time including restarts.",
                  k[GATE_UPTIME].measured);
    gate_prom_one(f, in, "ryzen_failures", "Requeues after a failure, plus give-ups.",
                  k[GATE_FAILURES].measured);
    gate_prom_one(f, in, "ryzen_restarts", "Restarts of this job (resumed runs).",
                  (double)res->n_restarts);
    gate_prom_one(f, in, "ryzen_world_size", "Ranks of the judged job.", in->world_size);
}
