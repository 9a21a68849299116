/* report.h: RUN_DIR/reports/<job>/report.json as the programs read it back: its path, its struct,
 * its reader, and the newest report of a phase.  The one place that knows which of the report's
 * fields another program relies on.
 *   written by  ryzen-gate: the phase report document (gate/gate_report.c formats it)
 *   read by     ryzen-step's chain (the rollback checkpoint), ryzen-gate's baseline (the
 *               previous phase's throughput, world size and loss curves) and its ladder (every
 *               field below, one attempt per report)
 * The writer stays with the document it formats; a field added here must be one gate_report.c
 * writes, and check_record reads back a report ryzen-gate's own writer made. */
#ifndef RZ_RECORD_REPORT_H
#define RZ_RECORD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "record/health_json.h"

#define REPORT_NAME_MAX 64
#define REPORT_MAX_CRITERIA 48

struct report_criterion {
    char name[REPORT_NAME_MAX];
    double measured;            /* NaN when not measured */
};

#define REPORT_MAX_LOST 8

struct report_rec {
    char path[4096];
    char phase[REPORT_NAME_MAX], job[64];
    char verdict[16], ended[32], time[32];
    char action[16], action_phase[REPORT_NAME_MAX]; /* planned_action */
    char rollback_ckpt[4096];   /* rollback_checkpoint.path ("" none) */
    int64_t world_size, steps, skipped_steps;
    bool has_throughput;        /* the key is there (a number, or null when none was measured) */
    double throughput, throughput_p10, allreduce_p50_ms; /* NaN unknown */
    double global_batch, num_parameters;                 /* environment (NaN unknown) */
    double median_compute_s;    /* median over per_rank[].mean_compute_s (NaN if any lacks it) */
    struct report_criterion criteria[REPORT_MAX_CRITERIA];
    int n_criteria;
    double *curve, *val_curve;  /* n (samples_seen, loss) pairs; NULL when absent */
    size_t n_curve, n_val_curve;
    bool has_curve;             /* loss_curve is there (val_loss_curve only with validation) */
    /* topology (0 / NaN when the report predates it) */
    int nodes, machines;
    double cores_per_rank, machine_cpus;
    double cpu_quota;           /* the tightest of its nodes' CPU quotas, in cores (NaN: none) */
    struct health_links *links; /* the preflight's link matrix; NULL when it had none */
    /* reliability: time_lost_by_kind, nodes_lost, nodes_excluded ("" / 0 when absent) */
    struct report_lost {
        char kind[64];
        double seconds;
        int64_t stops;
    } lost[REPORT_MAX_LOST];
    int n_lost;
    char nodes_lost[256], nodes_excluded[256];
};

/* RUN_DIR/reports/JOB/report.json into out; false when it does not fit. */
bool report_path(char *out, size_t len, const char *run_dir, const char *job);

/* The newest RUN_DIR/reports/<job>/report.json by modification time into out ("" none). */
void report_newest(char *out, size_t len, const char *run_dir);

/* PATH into *r (report_free it, also after an error).  RZ_EIO when it cannot be read; RZ_EDATA,
 * naming the file and the field, when it is not JSON or not a ryzen-gate report (it needs
 * 'phase', 'job' and 'world_size' >= 0; 0 is a phase that ended before any rank wrote a
 * metric, which the ladder lists and a baseline refuses) or a loss curve is not [[samples_seen, loss], ...] with
 * samples_seen never decreasing. */
enum rz_status report_read(struct report_rec *r, const char *path, struct rz_err *err);

/* The measured figure of criterion NAME (NaN when absent or not measured). */
double report_measured(const struct report_rec *r, const char *name);

void report_free(struct report_rec *r);

#endif
