/* gate.h: go/no-go gate evaluation of one phase job and its reports (docs/gates.md).
 *
 *   gate_read      RUN_DIR/metrics/<job>/rank-*.jsonl, events.jsonl, summary.json, health.json,
 *                  checkpoints/ and the baseline report -> struct gate_input (the files' formats
 *                  and readers are record/'s: rank_log.h, events.h, summary.h, health_json.h,
 *                  report.h; events are
 *                  classified here, once: this job's, the chain, the verdict timeline, requeues
 *                  by reason)
 *   gate_evaluate  criteria, verdict, rollback checkpoint, planned action -> struct gate_result
 *   gate_doc_build the report as one document (struct gate_doc): everything the writers print
 *   gate_write_*   report.json, report.md, report.html, gate.prom: they only format the document
 *                  (no getenv, no event filtering, no judgement)
 *   gate_write_reports  all of them into RUN_DIR/reports/<job>/ (core/durable.h) and the
 *                  optional copy of gate.prom into gates.prom_dir
 *   gate_write_csv steps.csv (ryzen-gate --csv): one row per step (gate_csv.c)
 *
 * A phase that ended without finishing training (opts.ended: the preflight failed, the restart
 * budget was spent, ...) is reported from whatever exists: missing or partial metrics are no
 * error then (what could not be read is listed as a warning), and the verdict is NO-GO (HOLD
 * for nothing_to_train).
 *
 * Malformed input is RZ_EDATA with "FILE:LINE[:COLUMN]: cause"; a missing rank file names the
 * rank.  Ownership: gate_read/gate_evaluate/gate_doc_build fill caller-owned structs whose arrays
 * they allocate; gate_input_free/gate_result_free/gate_doc_free release them (safe on zeroed or
 * half-filled structs).  A gate_doc borrows the input and the result it was built from. */
#ifndef RZ_GATE_GATE_H
#define RZ_GATE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/cfg.h"

struct health_links; /* record/health_json.h */
#include "core/status.h"
#include "ladder/ladder.h"
#include "record/events.h"
#include "record/rank_log.h"
#include "record/report.h"
#include "record/summary.h"

/* Criterion status; the values are the ryzen_gate_criterion_status codes in gate.prom. */
enum gate_status { GATE_GO = 0, GATE_NO_GO = 1, GATE_HOLD = 2, GATE_NOT_JUDGED = 3, GATE_NA = 4 };

/* Verdict; the values are ryzen-gate's exit codes and ryzen_gate_verdict in gate.prom. */
enum gate_verdict { GATE_VERDICT_GO = 0, GATE_VERDICT_NO_GO = 1, GATE_VERDICT_HOLD = 2 };

/* The criteria of config/gate_list.h in its order, then the duration (gates.min_duration_h). */
enum gate_crit {
#define RZ_GATE_ENUM(ID, name, unit, higher, go, no_go, doc, family, help, scale) GATE_##ID,
    RZ_GATES(RZ_GATE_ENUM)
#undef RZ_GATE_ENUM
    GATE_DURATION, GATE_N_CRIT
};

#define GATE_NOTE_MAX 512
#define GATE_NAME_MAX 128
#define GATE_MAX_POINTS 200     /* loss curve points kept in a report */

/* Why a phase ended without finishing training (ryzen-gate --ended REASON). */
enum gate_end {
    GATE_END_NONE,              /* training finished: an ordinary report */
    GATE_END_HEALTH,            /* the preflight failed */
    GATE_END_GIVE_UP,           /* the restart budget was spent */
    GATE_END_IO,                /* exit 74: checkpoint I/O (e.g. disk full) */
    GATE_END_NO_PROGRESS,       /* two attempts in a row committed no checkpoint */
    GATE_END_DIVERGED,          /* the loss guard stopped the run */
    GATE_END_NOTHING_TO_TRAIN,  /* a rollback whose checkpoint is already at training.steps */
    GATE_END_CONFIG,            /* exit 64 from the ranks: an input the wrapper could not check */
    GATE_END_NOCKPT,            /* exit 65: the checkpoint to resume from is not valid */
    GATE_N_END
};

/* "health", ...; NULL for GATE_END_NONE.  gate_end_parse: false for an unknown name. */
const char *gate_end_name(enum gate_end e);
bool gate_end_parse(const char *name, enum gate_end *out);

/* The requeue reasons are record/events.h's (enum event_requeue).  Only a failure counts
 * against the failures gate: a preemption or a time limit is the site's doing, not the run's. */

/* What the caller knows besides the run directory.  main fills it from the command line and the
 * environment; nothing below main reads the environment. */
struct gate_opts {
    const char *job;            /* --job; NULL: env_job_id, else the newest metrics/<id>/ */
    const char *env_job_id;     /* $SLURM_JOB_ID as main read it (NULL or "": unset) */
    const char *baseline;       /* --baseline REPORT.json; NULL: by convention */
    const char *cpus_per_rank;  /* $SLURM_CPUS_PER_TASK (NULL: unknown) */
    enum gate_end ended;        /* GATE_END_NONE for an ordinary report */
    const char *why;            /* --why TEXT (ended reports) */
    int status;                 /* --status N: the last exit status; -1 when not given */
};

struct gate_rank {
    int rank;
    char host[GATE_NAME_MAX];   /* health.json, else summary.json, else "unknown" */
    double mem_total_bytes;     /* health.json; 0 when unknown */
    double predicted_peak_rss;  /* summary.json: the memory planner's peak RSS; 0 when unknown */
    double mem_limit_bytes;     /* health.json: the job\'s own limit on the node; 0 = none */
    struct rank_row *rows;      /* record/rank_log.h; ascending step, one per step (the last
                                 * occurrence wins) */
    size_t n_rows;
};

/* A stop and the run after it, from rank 0's metrics in the order they were written: the last
 * step the stopped run completed, the first the next run completed, the wall time between (the
 * detection, teardown, queue wait, start-up, restore and the first step again: the time from
 * the fault to training again, less at most one step), the steps trained twice, and what the
 * job's events say stopped it. */
#define GATE_MAX_RECOVERIES 64
struct gate_recovery {
    int64_t last_step, first_step, redone;
    double last_t, first_t, seconds;  /* NaN when the metrics have no time */
    char cause[GATE_NOTE_MAX];
    char lost[128];             /* nodes an attempt found unreachable (nodes_lost), "" none */
    char kind[64];              /* how it restarted: "lost node", "relaunch (failure)", "requeue
                                 * (REASON)", "other": the report sums the time lost by kind */
};

/* Where the ranks ran (health.json's ranks): per node, its machine (the kernel's boot id: nodes
 * that share one share its CPUs), its ranks, the CPUs they may use and whether each rank is
 * bound to a part of them; and what each rank really has of a core.  A rank of T threads on a
 * machine of C CPUs shared by R ranks has min(T, C / R) cores. */
#define GATE_MAX_TOPO_NODES 64
struct gate_topology {
    int n_nodes, n_machines;
    double cores_per_rank;      /* the least any rank has; NaN when unknown */
    bool any_bound;             /* some rank's CPUs are a part of its machine's */
    struct {
        char host[GATE_NAME_MAX], machine[40], cpus[96];
        int ranks, threads, machine_cpus, machine_ranks;
        bool bound;
        double cpu_quota;       /* cores of CPU time the node's cgroup allows (NaN: none) */
        double cores_per_rank;  /* what each of its ranks has of a core */
    } node[GATE_MAX_TOPO_NODES];
};

/* One optimizer step present on every rank. */
struct gate_step {
    int64_t step, run_step, samples_seen;
    double global_batch;        /* samples of this step (all ranks) */
    double loss;                /* rank 0's (the global mean); NaN for a skipped non-finite one */
    bool skipped;               /* the loss guard skipped it (no update) */
    double val_loss;            /* rank 0's validation loss; NaN on steps without one */
    double step_time_s;         /* slowest rank */
    int sync_ranks, sync_ok_ranks; /* ranks that ran / passed a sync check at this step */
    double gnorm_post_spread;   /* max over ranks */
};

/* One check of health.json (the preflight). */
struct gate_check {
    char name[64];
    bool ok;
    char detail[GATE_NOTE_MAX];
};

struct gate_baseline {
    bool wanted;                /* phase.previous set or --baseline given */
    bool present;
    char path[4096];
    char reason[GATE_NOTE_MAX]; /* why it is absent */
    char phase[GATE_NAME_MAX], job[64];
    double throughput;          /* NaN when the baseline had none */
    int64_t world_size;
    double *curve;              /* n_curve (samples_seen, loss) pairs */
    size_t n_curve;
    double *val_curve;          /* n_val_curve (samples_seen, validation loss) pairs, or none */
    size_t n_val_curve;
};

struct gate_ckpt {
    int64_t step;
    bool valid;
    char path[4096];
};

struct gate_input {
    char run_dir[4096], job[64], phase[GATE_NAME_MAX];
    char metrics_dir[4096];
    int world_size;
    struct gate_rank *ranks;    /* world_size */
    struct gate_step *steps;
    size_t n_steps;
    struct event_rec *events;   /* every line of events.jsonl (all jobs; record/events.h) */
    size_t n_events;
    /* the events, classified once (indexes into events[]) */
    size_t *job_events, n_job_events;         /* this job's, in file order */
    size_t *chain_events, n_chain_events;     /* promote, rollback, rollback_start (any job) */
    size_t *verdict_events, n_verdict_events; /* the verdict timeline (any job, see gate_read.c) */
    int64_t requeues[EVENT_N_RQ];             /* this job's requeue events by reason */
    int64_t give_ups, resumes;                /* this job's give_up and resume events */
    double first_start_t, last_event_t;       /* this job's first `start`, last event (NaN) */
    /* how the phase ended (opts.ended) and what the caller passed along */
    enum gate_end ended;
    char why[GATE_NOTE_MAX];
    int status;                 /* -1: unknown */
    char cpus_per_rank[32];     /* "unknown" when not given */
    char warnings[4 * GATE_NOTE_MAX]; /* inputs an ended report could not read ("" if none) */
    bool has_summary;
    double num_parameters;      /* summary.json's; NaN when unknown (the ladder's message size) */
    double entropy_floor;       /* NaN when unknown */
    double unigram_entropy;     /* summary.json's (text, tokens); NaN when unknown */
    char tokenizer_sha256[65];  /* summary.json's; "" when the data named none */
    int64_t summary_restarts;
    struct summary_net net[SUMMARY_MAX_NET_NODES]; /* summary.json's nodes, in rank order */
    int n_net;
    struct gate_topology topo;  /* health.json's ranks (n_nodes 0: none) */
    struct gate_recovery recov[GATE_MAX_RECOVERIES]; /* rank 0's runs, in order */
    int n_recov;
    struct gate_lost_kind {     /* the recoveries' time summed by kind, in order of first sight */
        char kind[64];
        double seconds;
        int count;
        int64_t redone;
    } lost[GATE_MAX_RECOVERIES];
    int n_lost;
    /* the job's nodes lost (node_failed, nodes_lost events) and excluded for the rest of the
     * ladder (node_excluded), comma-separated ("" none) */
    char nodes_failed[256], nodes_excluded[256];
    struct summary_ckpts ckpt_policy; /* summary.json's checkpoints (known false: not there) */
    bool has_health;
    bool health_ok;
    struct gate_check *checks;  /* health.json's checks */
    size_t n_checks;
    struct health_links *links; /* health.json's links between the nodes (NULL: none) */
    char isa[64];
    struct gate_ckpt *ckpts;    /* ascending step */
    size_t n_ckpts;
    struct gate_baseline baseline;
    char config_sha256[65];
    struct ladder_fit ladder_fit; /* the model fitted to the phases with fewer ranks under
                                   * RUNROOT (not ok when there are none): this phase's
                                   * prediction (ladder/ladder.h) */
};

struct gate_criterion {
    const char *name;           /* static: "throughput", ... */
    const char *unit;
    bool higher_is_better;
    double measured;            /* NaN when not judged / n/a */
    double go, no_go;           /* NaN when the criterion has no such threshold */
    enum gate_status status;
    int64_t samples;            /* data points the measurement rests on */
    char note[GATE_NOTE_MAX];
};

/* Throughput of one window of steady-state steps. */
struct gate_window {
    int64_t first_step, last_step;
    double samples_per_sec;
};

struct gate_rank_stat {
    int64_t steps;
    double mean_step_s, comm_share;
    double mean_compute_s;      /* steady steps; NaN without compute_time_s */
    uint64_t peak_rss_bytes;
    double q[5];                /* steady step time min, p25, median, p75, max */
};

struct gate_result {
    struct gate_criterion crit[GATE_N_CRIT];
    enum gate_verdict verdict;
    double throughput_p10, allreduce_p50_ms;
    /* the gradient all-reduce over steady steps of all ranks, in ms: its own time (from the
     * first bucket's post to the last's completion) and the exposed part (waited for after
     * backward); NaN when the metrics lack grad_allreduce_s */
    double grad_p50_ms, grad_p99_ms, exposed_p50_ms, exposed_p99_ms;
    char lossy_host[GATE_NAME_MAX]; /* packet_loss: the node at an end of every lossy link
                                     * ("" when none, or none can be told) */
    int straggler_rank;         /* the slowest rank by mean compute time (-1: none) */
    double straggler_median_s;  /* the median rank's mean compute time */
    struct gate_window *windows;
    size_t n_windows;
    int64_t *restart_steps;     /* steps at which a resumed run started */
    size_t n_restarts;
    int64_t skipped_steps;      /* steps the loss guard skipped (of the merged steps) */
    double *loss_curve;         /* n_loss (samples_seen, loss) pairs, <= GATE_MAX_POINTS */
    int64_t *loss_steps;        /* the step of each loss point */
    size_t n_loss;
    double *val_curve;          /* n_val (samples_seen, validation loss) pairs, <= GATE_MAX_POINTS */
    size_t n_val;
    struct gate_rank_stat *rank_stats; /* world_size */
    bool has_rollback;
    int64_t rollback_step, last_good_sync_step;
    char rollback_path[4096];
    char action[16];            /* "promote" | "rollback" | "stop" */
    char action_phase[GATE_NAME_MAX];
    char action_note[GATE_NOTE_MAX];
    char suspect[GATE_NOTE_MAX]; /* "" or why the efficiency is suspect */
    /* the newest checkpoint that verifies and the one before it (NULL when none): an ended
     * phase's last good state; they point into the input's ckpts */
    const struct gate_ckpt *last_good, *prev_good;
    /* the ladder model's throughput for this phase (NaN when no predecessor was measured) and
     * its band (+- the fit's error) */
    double predicted, predicted_lo, predicted_hi;
};

/* The report as one document: what every writer prints, computed once. */
struct gate_doc {
    const struct gate_input *in;
    const struct gate_result *res;
    char time[32];              /* UTC, when the document was built */
    double time_unix;           /* the same in Unix seconds */
    int nodes;                  /* distinct hosts of the ranks */
    char config_source[1024], data_kind[256];
    int64_t global_batch;
    double comm_go, comm_no_go; /* the comm chart's threshold lines */
    char prom_dir[1024];        /* gates.prom_dir: where gate.prom is also copied ("" = off) */
};

/* Read every input of the job that opts names (see struct gate_opts).  The baseline: opts
 * ->baseline, else RUNROOT/<phase.previous>/reports/newest/report.json. */
enum rz_status gate_read(struct gate_input *in, const struct cfg *c, const char *run_dir,
                         const struct gate_opts *opts, struct rz_err *err);
void gate_input_free(struct gate_input *in);

/* Read a report.json written by gate_write_json as a baseline (fills b->present and data). */
enum rz_status gate_read_baseline(struct gate_baseline *b, const char *path, struct rz_err *err);

enum rz_status gate_evaluate(struct gate_result *res, const struct gate_input *in,
                             const struct cfg *c, struct rz_err *err);
void gate_result_free(struct gate_result *res);

/* GO/HOLD/NO-GO of one value against thresholds (NO-GO is checked first). */
enum gate_status gate_judge(double value, double go, double no_go, bool higher_is_better);
enum gate_verdict gate_verdict_of(const struct gate_criterion *crit, size_t n);

const char *gate_status_name(enum gate_status s);      /* "go", "no_go", "hold", ... */
const char *gate_verdict_name(enum gate_verdict v);    /* "GO", "NO-GO", "HOLD" */

/* The document of one evaluated job (borrows in and res; copies what it needs of c). */
void gate_doc_build(struct gate_doc *d, const struct gate_input *in,
                    const struct gate_result *res, const struct cfg *c);

void gate_write_json(FILE *f, const struct gate_doc *d);
void gate_write_md(FILE *f, const struct gate_doc *d);
void gate_write_html(FILE *f, const struct gate_doc *d);
void gate_write_prom(FILE *f, const struct gate_doc *d);

/* Write the four files into RUN_DIR/reports/<job>/ (dir_out receives that path) and copy
 * gate.prom to <prom_dir>/ryzen_<phase>.prom when d->prom_dir is set.  A failed copy is
 * not an error: its message goes to warn ("" when none). */
enum rz_status gate_write_reports(const struct gate_doc *d, char *dir_out, size_t dir_len,
                                  char *warn, size_t warn_len, struct rz_err *err);

/* steps.csv (gate_csv.c, docs/gates.md): a header, then one row per merged step with rank 0's
 * figures of it; RFC 4180 (record/csv.h).  gate_write_csv_file: RUN_DIR/reports/<job>/steps.csv,
 * durably, into the directory gate_write_reports made. */
void gate_write_csv(FILE *f, const struct gate_doc *d);
enum rz_status gate_write_csv_file(const struct gate_doc *d, struct rz_err *err);

/* Shared formatting helper: "%.6g" or "n/a" for NaN, into buf. */
const char *gate_fmt_num(char *buf, size_t len, double v);

#endif
