/* step_internal.h: the pieces of ryzen-step behind step_main (see step.h), each in its own file,
 * each testable on its own:
 *   argv.c     argv arrays (no shell ever sees a value)
 *   history.c  RUN_DIR/events.jsonl (record/events.h): write one decision per line; read back
 *              budgets and lineage
 *   slurm.c    `scontrol show job` parsed; the job's own sbatch flags; --signal; requeue/hold/...
 *   slurm_json.c  squeue/sinfo --json read (the reader used where Slurm has it)
 *   owner.c    RUN_DIR belongs to one live job
 *   policy.c   how an attempt ended and what to do about it (pure functions)
 *   probe.c    which of the job's nodes can reach each other, without MPI (a broken link that
 *              Slurm cannot see)
 *   chain.c    ryzen-gate, promotion, rollback, cancelling this lineage's pending jobs
 *   wrapper.c  the sequence (step_main)
 * Internal to src/step/.  Ownership: struct step_argv owns its strings (step_argv_free); the
 * other structs are plain values. */
#ifndef RZ_STEP_STEP_INTERNAL_H
#define RZ_STEP_STEP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/cfg.h"
#include "record/events.h"
#include "record/exits.h"
#include "step/step.h"

/* ---- argv ------------------------------------------------------------------------------------------ */

struct step_argv {
    char **argv;                /* NULL-terminated */
    size_t n, cap;
};
enum rz_status step_argv_add(struct step_argv *a, const char *arg, struct rz_err *err);
/* Add every string of a NULL-terminated list. */
enum rz_status step_argv_addv(struct step_argv *a, const char *const *args, struct rz_err *err);
void step_argv_free(struct step_argv *a);
/* "srun --mpi=pmix ..." for messages; arguments with spaces or quotes are quoted. */
void step_argv_format(const struct step_argv *a, char *out, size_t len);
/* r->run on a, with the error turned into -1 (see struct step_runner). */
int step_run(const struct step_runner *r, const struct step_argv *a, char *out, size_t len,
             struct rz_err *err);

/* ---- events ------------------------------------------------------------------------------------------- */

/* RUN_DIR/events.jsonl (record/events.h), with each event echoed to the job output as
 * "ryzen-step: EVENT: MESSAGE" and stamped by the runner's clock. */
struct step_events {
    struct events_log log;
    FILE *echo;                 /* the job output */
    const struct step_runner *clock;
};

enum rz_status step_events_open(struct step_events *ev, const char *run_dir, const char *job,
                                const char *lineage, long restart, const char *phase,
                                FILE *echo, const struct step_runner *clock, struct rz_err *err);
/* Append one event (fsynced: the log of decisions must survive the requeue that follows). */
void step_event(struct step_events *ev, const char *event, const char *message,
                const struct event_kv *kv, size_t n);
void step_events_close(struct step_events *ev);

/* What this job's earlier attempts did, read back from events.jsonl. */
struct step_history {
    long requeues[EVENT_N_RQ_WRITTEN]; /* requeue events of this job by reason */
    long attempts;              /* attempt_end events of this job */
    int no_progress_run;        /* attempts in a row, newest last, that committed no checkpoint
                                 * (an attempt that excluded a node its preflight failed ends
                                 * the run: the next one runs without it) */
    int exclusion_run;          /* requeues in a row, newest last, that excluded nodes */
    char excluded[512];         /* nodes excluded after preflight failures ("" none) */
    char prev_nodes[512];       /* node_list of the attempt before this one ("" none) */
    char prev_failed[512];      /* nodes that attempt named in node_failed events */
    char net_ends[512];         /* nodes at an end of a broken link (network_partition) */
    long prev_restart;          /* ... and its restart count */
    long failures;              /* attempts that ended in a crash or a hang, and lost nodes */
    double first_start_t, last_end_t; /* the job's first start and last attempt_end (0: none) */
    double down_s[EVENT_N_RQ_WRITTEN]; /* by restart reason: from the attempt's end to the next
                                 * training launch, summed */
    int pending_reason;         /* a restart whose training has not started yet (-1: none) ... */
    double pending_end_t;       /* ... and when the attempt before it ended */
};
/* The mean time between this job's failures so far (checkpoint.mtbf_s 0, young_daly): the span
 * from its first start to its last attempt's end over the failures in it; 0 with none. */
double step_observed_mtbf(const struct step_history *h);
void step_history_read(const char *events_path, const char *job, struct step_history *h);

/* Failures of each node in the whole run root (node_failed events of every phase and job): a
 * node that fails twice is excluded for the rest of the ladder (place.c). */
#define STEP_MAX_TALLY 64
struct step_node_tally {
    int n;
    struct { char name[64]; int failures; } node[STEP_MAX_TALLY];
};
void step_node_tally(const char *run_root, struct step_node_tally *t);
int step_node_failures(const struct step_node_tally *t, const char *node);

/* Job ids this lineage submitted (promote / rollback events in any events.jsonl under root),
 * comma-separated into out; the number found. */
int step_lineage_jobs(const char *run_root, const char *lineage, char *out, size_t len);

/* ---- Slurm ----------------------------------------------------------------------------------------- */

/* `scontrol show job -o JOB`, the fields ryzen-step uses.  "(null)", "None" and "N/A" read as "". */
struct slurm_job {
    bool found;
    char state[32], reason[128];
    char partition[128], account[128], qos[128], time_limit[32];
    char reservation[128], features[256], exc_nodes[512], mail_user[256], mail_type[128];
    char min_mem_node[32], min_mem_cpu[32];
    long cpus_per_task;
    char command[STEP_PATH_MAX];
    char node_list[512], batch_host[128];
    char comment[256];
    char preempt_time[32], end_time[32], start_time[32];
    long restarts;
    long time_limit_s;          /* -1: unlimited or unknown */
    double end_epoch;           /* EndTime as Unix seconds (0: unknown) */
    bool partial;               /* read from squeue --json, which lacks mail_user, mail_type and
                                 * cpus_per_task (Slurm 22.05): slurm_job_query_whole fills them */
};
void slurm_job_parse(const char *text, struct slurm_job *j);
/* The job as the run's reader sees it (slurm_json.c: squeue --json, else scontrol show job -o):
 * RZ_EHEALTH when Slurm does not know it or cannot be asked. */
enum rz_status slurm_job_query(const struct step_runner *r, const char *job, struct slurm_job *j,
                               struct rz_err *err);
/* The same, with the fields --json lacks read from scontrol (the job's flags for the next job). */
enum rz_status slurm_job_query_whole(const struct step_runner *r, const char *job,
                                     struct slurm_job *j, struct rz_err *err);
/* Whether job is pending and this user's (squeue --me: never another user's job); a job Slurm
 * has forgotten is not pending. */
bool slurm_job_pending_ours(const struct step_runner *r, const char *job);
/* "(null)", "None", "N/A", "Unknown": what scontrol prints for no value (slurm_values.c). */
bool slurm_empty_value(const char *v);
/* `scontrol show node -o NAMES`: each node's name, state ("DOWN+NOT_RESPONDING", "IDLE", ...),
 * reason ("Not responding [slurm@...]"), address (NodeAddr; the name when absent) and slurmd's
 * port (Port; 0 when absent: the site's SlurmdPort). */
struct slurm_node {
    char name[64], state[96], reason[192];
    char addr[128];
    long port;
};
/* The nodes of that output (one per line), at most max. */
int slurm_node_parse(const char *text, struct slurm_node *out, int max);
enum rz_status slurm_nodes_query(const struct step_runner *r, const char *names,
                                 struct slurm_node *out, int max, int *n, struct rz_err *err);
/* Slurm has lost contact with it: NOT_RESPONDING, or DOWN. */
bool slurm_node_unreachable(const struct slurm_node *n);
/* The nodes of a partition that can take a job, not counting `excluded` (a list): `sinfo -h -N
 * -p PARTITION -o "%N %t"` read (not down, drained or failed; a node draining its jobs counts). */
long slurm_usable_parse(const char *text, const char *excluded);
enum rz_status slurm_partition_usable(const struct step_runner *r, const char *partition,
                                      const char *excluded, long *usable, struct rz_err *err);

/* ---- Slurm read as data (slurm_json.c) ---------------------------------------------------------
 * squeue --json and sinfo --json, in the shape of Slurm 22.05 (meta.plugin.type
 * openapi/v0.0.38), mapped onto the same structs with the same meaning as the text: times as
 * scontrol prints them (local time), TimeLimit "D-HH:MM:SS" or "UNLIMITED", memory "1G" /
 * "300M", node state "IDLE+DRAIN", reason "why [user@time]", empty values "".  Slurm 22.05
 * ignores -j and -n with --json (it prints every job, every node): the job and the nodes are
 * picked out here.  Which reader a run uses is decided once per process: */
enum slurm_reader { SLURM_READER_UNKNOWN, SLURM_READER_JSON, SLURM_READER_TEXT };
/* The first call asks `squeue --version`: --json from Slurm 22.05 on (tentative until the first
 * --json answer reads; a first one that fails, or any that does not read, means text from then
 * on). */
enum slurm_reader slurm_reader_mode(const struct step_runner *r);
/* Set the reader and why (RYZEN_SLURM_JSON=0, a --json answer that does not read, tests);
 * SLURM_READER_UNKNOWN probes again. */
void slurm_reader_set(enum slurm_reader m, const char *why);
/* "squeue/sinfo --json (Slurm 22.05.8)" or "scontrol/squeue text (WHY)", for the job output. */
const char *slurm_reader_describe(void);

/* Job `id` ("N", or "N_T" an array task) of squeue --json output into j (j->found false when it
 * is not there; `now` decides EndTime "Unknown" of a job without a time limit, as scontrol
 * does).  RZ_EDATA naming the cause when the text is not JSON of that shape. */
enum rz_status slurm_job_parse_json(const char *text, const char *id, double now,
                                    struct slurm_job *j, struct rz_err *err);
/* The nodes of `names` (a hostlist: "n[1-3],gpu07") in sinfo --json output, at most max. */
enum rz_status slurm_node_parse_json(const char *text, const char *names, struct slurm_node *out,
                                     int max, int *n, struct rz_err *err);
/* slurm_usable_parse's count from sinfo --json output (the nodes listing `partition`). */
enum rz_status slurm_usable_parse_json(const char *text, const char *partition,
                                       const char *excluded, long *usable, struct rz_err *err);
/* Whether job `id` is PENDING and user `uid`'s in squeue --json output. */
enum rz_status slurm_pending_parse_json(const char *text, const char *id, long uid,
                                        bool *pending, struct rz_err *err);
/* A hostlist expanded, comma-separated ("n[1-2,4]" -> "n1,n2,n4"; zero padding kept); false when
 * it is not one this reads (two bracket groups in a name, a bad range) or out is too short. */
bool slurm_hostlist_expand(const char *list, char *out, size_t len);
/* The queries of the JSON reader: RZ_OK, RZ_EHEALTH (Slurm said no: as the text path), or
 * RZ_EDATA when the answer did not read (the reader turned to text; ask the text path). */
enum rz_status slurm_job_query_json(const struct step_runner *r, const char *job,
                                    struct slurm_job *j, struct rz_err *err);
enum rz_status slurm_nodes_query_json(const struct step_runner *r, const char *names,
                                      struct slurm_node *out, int max, int *n, struct rz_err *err);
enum rz_status slurm_pending_query_json(const struct step_runner *r, const char *job,
                                        bool *pending, struct rz_err *err);
enum rz_status slurm_partition_usable_json(const struct step_runner *r, const char *partition,
                                           const char *excluded, long *usable,
                                           struct rz_err *err);

/* The nodes a batch script asks for (#SBATCH --nodes=N, -N N, -NN; "N-M" gives N), read as
 * sbatch does, up to its first command; 0 when it does not say. */
long slurm_script_nodes(const char *text);
/* The same of a template file (0: unreadable, or not said). */
long slurm_template_nodes(const char *path);

/* "1-02:03:04", "02:03:04", "03:04", "UNLIMITED" -> seconds (-1 unlimited or bad;
 * slurm_values.c). */
long slurm_parse_duration(const char *s);

/* The submitting job's own flags for the next job: partition, account, QOS, time limit, memory,
 * CPUs per task, reservation, constraint, exclusions, mail settings (and --signal when
 * `signal_flag` is not NULL). */
enum rz_status slurm_job_flags(const struct slurm_job *j, const char *signal_flag,
                               struct step_argv *v, struct rz_err *err);

/* A --signal specification: [B:|R:]SIG[@LEAD]. */
struct slurm_signal {
    bool found;
    bool batch;                 /* B: the batch shell only */
    int signo;
    long lead_s;                /* Slurm's default is 60 */
    char text[64];              /* as given */
    char source[32];            /* "command line", "SBATCH_SIGNAL", "batch script" */
};
bool slurm_signal_parse(const char *text, struct slurm_signal *s);
/* "USR2" for SIGUSR2 ("?" for a signal the templates never use). */
const char *slurm_signal_name(int signo);
/* Find the job's --signal: sbatch's command line (sacct SubmitLine, where accounting keeps it),
 * then SBATCH_SIGNAL, then the batch script's #SBATCH lines. */
void slurm_job_signal(const struct step_runner *r, const char *job, const struct slurm_job *j,
                      const char *sbatch_env, struct slurm_signal *s);

/* scontrol requeue | requeuehold | release | update JobId=JOB ARG: the status. */
int slurm_control(const struct step_runner *r, const char *verb, const char *job, const char *arg,
                  struct rz_err *err);

/* ---- the run directory's owner ----------------------------------------------------------------------- */

enum step_owner { OWNER_TAKEN, OWNER_REENTERED, OWNER_TAKEN_OVER, OWNER_BUSY };
/* Claim RUN_DIR/owner for job (host and pid describe a job outside Slurm).  On OWNER_BUSY,
 * `other` names the live owner; on OWNER_TAKEN_OVER, the dead one. */
enum rz_status step_owner_claim(const struct step_runner *r, const char *run_dir, const char *job,
                                enum step_owner *how, char *other, size_t len, struct rz_err *err);
/* Remove RUN_DIR/owner if it is this job's. */
void step_owner_release(const char *run_dir, const char *job);
/* Whether Slurm still knows job as pending or running ("local:HOST:PID": that process). */
bool step_job_alive(const struct step_runner *r, const char *job);

/* ---- policy ---------------------------------------------------------------------------------------------- */

/* How an attempt of the job step ended, from the ranks' exit records and the step's status. */
enum step_class {
    CLASS_DONE,                 /* 0 on every rank */
    CLASS_SIGNAL,               /* 75: checkpointed on the stop signal */
    CLASS_CRASH,                /* a rank died (no record) or an unknown status */
    CLASS_HANG,                 /* 76: the watchdog or the sync check */
    CLASS_IO,                   /* 74: checkpoint or file I/O (disk full) */
    CLASS_HEALTH,               /* 70 */
    CLASS_CONFIG,               /* 64 */
    CLASS_NOCKPT,               /* 65 */
    CLASS_DIVERGED,             /* the loss guard stopped the run */
    CLASS_N
};
const char *step_class_name(enum step_class c);

/* Classify from the attempt's exit records (record/exits.h: RUN_DIR/health/exits/ATTEMPT/) and
 * the step's status; `who` names the rank(s) and host(s) to blame and what they said. */
enum step_class step_classify(int status, const struct exit_record *rec, int n_rec,
                              long world, char *who, size_t len);

/* Why the job is being stopped, from Slurm's view of it (state, reason, preemption, time left). */
enum step_cause {
    CAUSE_NONE,                 /* not stopped by anyone */
    CAUSE_CANCELLED,            /* scancel: never requeue */
    CAUSE_PREEMPTED,            /* checkpoint within GraceTime, then requeue (ours to do) */
    CAUSE_TIME_LIMIT,           /* the warning before the time limit: requeue */
    CAUSE_REQUEUED,             /* scontrol requeue by someone: Slurm requeues */
    CAUSE_NODE_FAILURE,         /* a node went down: Slurm requeues */
    CAUSE_USER_SIGNAL,          /* a stop signal by hand: requeue */
    CAUSE_NODE_LOST,            /* a node left the allocation (--no-kill): ours to restart */
    CAUSE_NETWORK,              /* two nodes Slurm sees up cannot reach each other (probe.c) */
};
const char *step_cause_name(enum step_cause c);
/* Stopped from outside the job by a requeue (Slurm's, an operator's) or a node failure or
 * loss: such an attempt does not count as one without progress. */
bool step_cause_outside(enum step_cause c);
bool step_cause_name_outside(const char *name);
/* restarts_at_start: SLURM_RESTART_COUNT of this attempt (a higher Restarts means Slurm is
 * requeueing the job already). */
enum step_cause step_stop_cause(const struct slurm_job *j, long restarts_at_start, bool signalled,
                                double now, long lead_s);

enum step_action {
    ACT_FINISH,                 /* run the gate and the chain */
    ACT_REQUEUE,                /* scontrol requeue (ours to do) */
    ACT_RELAUNCH,               /* a new job step in this allocation (restart.failures) */
    ACT_SLURM_REQUEUES,         /* Slurm requeues the job: record it, do nothing */
    ACT_HOLD,                   /* scontrol requeuehold + NO-GO report (no progress) */
    ACT_END,                    /* no requeue; a NO-GO report says why */
    ACT_CANCELLED,              /* cancelled: no requeue, no report */
};
struct step_decision {
    enum step_action action;
    enum event_requeue reason;  /* for ACT_REQUEUE / ACT_SLURM_REQUEUES */
    const char *ended;          /* for ACT_END / ACT_HOLD: ryzen-gate --ended REASON */
    int exit_status;            /* the job's exit status */
    char why[512];
};
struct step_budget {
    long max_failures;          /* restart.max_restarts */
    long max_signal;            /* restart.max_signal_requeues: signal, preemption, time limit */
    bool hold_when_stuck;       /* restart.when_stuck: hold (else fail) */
    bool relaunch;              /* restart.failures: relaunch (else requeue) */
};
/* The budget the config sets. */
struct step_budget step_budget_of(const struct cfg *c);
/* Restarts ran out without progress: hold the job or end it FAILED (exit 1, a NO-GO), as the
 * budget says; `ended` names it for the report, the caller writes d->why. */
void step_stuck(struct step_decision *d, const char *ended, const struct step_budget *b);
void step_decide(enum step_class cls, enum step_cause cause, int status, bool progress,
                 const struct step_history *h, const struct step_budget *b,
                 struct step_decision *d);

/* ---- the wrapper's state ---------------------------------------------------------------------------------- */

/* Where an attempt's job steps run (place.c). */
struct step_place {
    long needed;                /* nodes the phase needs: its template's --nodes */
    long ranks;                 /* its ranks: SLURM_NTASKS, less the spare nodes' share */
    long spare;                 /* nodes the job has beyond those (sbatch -N) */
    int usable;                 /* nodes of the allocation that can run it */
    bool shaped;                /* srun gets --nodes/--ntasks (and --exclude): the allocation
                                 * was read */
    char nodes[512];            /* the allocation at launch (Slurm's NodeList) */
    char lost[512];             /* ... that Slurm cannot reach */
    char exclude[512];          /* ... left out: lost, or excluded for the ladder */
};

struct wrapper {
    const struct step_args *args;
    const struct step_env *env;
    const struct step_runner *r;
    FILE *out;
    const char *sets[STEP_MAX_SETS];     /* the overrides for this phase, "PHASE:" removed */
    int n_sets;
    struct cfg cfg;
    char config[STEP_PATH_MAX];          /* the config file found */
    char run_root[STEP_PATH_MAX], run_dir[STEP_PATH_MAX + 300], phase[256];
    char lineage[64];
    char train[STEP_PATH_MAX], gate[STEP_PATH_MAX];
    char sbatch_dir[STEP_PATH_MAX];
    struct slurm_job job;                /* as Slurm saw it at start */
    struct slurm_signal signal;          /* the job's --signal */
    int stop_signo;                      /* health.stop_signal */
    char signal_flag[96];                /* "--signal=..." to carry along the chain ("" none) */
    struct step_events ev;
    struct step_history hist;
    char owner_id[160];                  /* RUN_DIR/owner as we claimed it ("" not ours) */
    struct step_place place;             /* where this attempt's steps run (place.c) */
    char attempt_lost[512];              /* nodes this attempt lost ("" none) */
    char job_lost[512];                  /* ... and every attempt of this job so far */
    char ladder_bad[512];                /* nodes excluded for the rest of the ladder */
    char net_out[512];                   /* nodes left out for a broken link (probe.c) */
    char net_fault[512];                 /* this attempt's: "n1 and n2 cannot reach each other
                                          * (Slurm sees both up)" ("" none) */
    bool net_fits;                       /* ... and the allocation holds the phase without
                                          * net_out, the batch host kept: relaunch in it */
    char srun_mpi[64];                   /* srun's --mpi for the training steps (mpi_plugin.c) */
};

/* mpi_plugin.c: srun's --mpi plugin.  step_mpi_choose: OVERRIDE when set; else the first of
 * WANTED (comma-separated, best first) that LIST (`srun --mpi=list`'s output; "" when unknown)
 * names; else WANTED's first.  `why` says which rule chose.  step_mpi_resolve runs `srun
 * --mpi=list` (in Slurm, without RYZEN_SRUN_MPI), chooses for the build's MPI
 * (comm_srun_plugins) into w->srun_mpi, and records an srun_mpi event unless the operator chose. */
void step_mpi_choose(char *out, size_t len, char *why, size_t why_len, const char *override,
                     const char *wanted, const char *list);
void step_mpi_resolve(struct wrapper *w);

/* ends.c: how an attempt ends. */
/* step_apply's answer for ACT_RELAUNCH: not an exit status (those are 0..255); the attempt
 * loop runs again */
#define STEP_RELAUNCH (-2)
void step_attempt_end(struct wrapper *w, enum step_class cls, enum step_cause cause, int status,
                      bool progress, const char *who);
/* Record how the attempt ended, decide what to do (policy.c) and do it; the exit status. */
int step_conclude(struct wrapper *w, enum step_class cls, enum step_cause cause, int status,
                  bool progress, const char *who);
int step_apply(struct wrapper *w, const struct step_decision *d, int status);
/* A NO-GO (or HOLD) report for an end without a finished training. */
int step_end_with_report(struct wrapper *w, const struct step_decision *d, int status);
/* Requeue with the nodes added to the job's ExcNodeList (requeuehold, update, release). */
int step_requeue_excluding(struct wrapper *w, enum event_requeue reason, const char *nodes,
                           const char *why);
/* The allocation cannot hold the phase any more (step_place false): requeued without the nodes
 * it left out. */
int step_cannot_place(struct wrapper *w);

/* place.c: where the steps run; lost nodes; nodes excluded for the rest of the ladder. */
/* The nodes and ranks the phase needs in this allocation, from its template's --nodes
 * (template_nodes; 0 unknown: all of the allocation) into p->needed, p->ranks, p->spare. */
void step_place_size(const struct step_env *e, long template_nodes, struct step_place *p);
/* Before a launch: the allocation now, without unreachable and ladder-excluded nodes, into
 * w->place; false when fewer usable nodes are left than the phase needs. */
bool step_place(struct wrapper *w);
/* srun's --nodes, --ntasks and --exclude for that placement (nothing when Slurm's own fits). */
enum rz_status step_place_args(const struct wrapper *w, struct step_argv *v, struct rz_err *err);

/* A job with spare nodes requeued with these exclusions: the nodes to ask for when its
 * partition (sinfo) has fewer usable ones outside them than the job asks (at least the phase's
 * own; the spare given up), else 0 (as it is). */
long step_spare_ask(struct wrapper *w, const char *excluded);
/* After a failed attempt: the nodes it ran on that Slurm cannot reach now or took out of the
 * allocation, into w->attempt_lost and a node_failed event. */
void step_nodes_check(struct wrapper *w);
/* A node_failed event (cause: unreachable, preflight); nodes at their second failure in the run
 * root are excluded for the rest of the ladder (node_excluded). */
void step_node_failed(struct wrapper *w, const char *nodes, const char *cause, const char *why);

/* probe.c: the links between the job's nodes, probed without MPI (a non-blocking TCP connect,
 * bounded, to each other node's slurmd).  ryzen-step --probe-peers TIMEOUT_S NAME=ADDR:PORT...
 * prints one line per peer: "link FROM TO ok|fail DETAIL" (FROM: `from`, this node). */
int step_probe_peers(const char *from, double timeout_s, const char *const *peers, int n,
                     FILE *out);

#define STEP_LINK_NODES 64
/* Reachability between nodes: reach[i][j] 1 (i reached j), 0 (it did not), -1 (not probed). */
struct step_links {
    int n;
    char node[STEP_LINK_NODES][64];
    signed char reach[STEP_LINK_NODES][STEP_LINK_NODES];
    char detail[STEP_LINK_NODES][STEP_LINK_NODES][96];
};
/* The nodes of a comma-separated list, nothing probed. */
void step_links_init(struct step_links *l, const char *nodes);
/* Read the probe's "link FROM TO ok|fail DETAIL" lines (others, and unknown nodes, skipped). */
void step_links_parse(struct step_links *l, const char *text);
/* A pair is broken when either end failed to reach the other: "A-B" comma-separated into out
 * (both ends into ends when not NULL); the number of broken pairs. */
int step_links_broken(const struct step_links *l, char *out, size_t len, char *ends,
                      size_t ends_len);
/* The nodes to leave out so that no broken pair is left: the node at an end of the most broken
 * links first (as the preflight's slow-link rule blames the node at an end of every slow link);
 * on a tie, not the batch host unless it is `suspect` (an end of a broken link before, in
 * another pairing), then the later node.  With two nodes: the other node, or the suspect batch
 * host. */
void step_links_cover(const struct step_links *l, const char *batch_host, bool suspect,
                      char *out, size_t len);
/* After a failed attempt on two or more nodes that Slurm sees up: probe the links between them;
 * on broken ones a network_partition event, w->net_fault, w->net_out and w->net_fits set; true
 * then. */
bool step_links_check(struct wrapper *w);

/* startup.c: the training step's start-up, bounded by health.start_timeout_s until every rank's
 * watchdog has written its heartbeat file (RUN_DIR/health/rank-R.hb). */
struct step_start_watch {
    char dir[STEP_PATH_MAX + 400]; /* RUN_DIR/health */
    long ranks;
    long next; /* ranks below this one are up: a poll costs one stat until the next appears */
};
/* Before the launch: remove the heartbeat files that earlier steps left; watch w->place.ranks. */
void step_start_watch_init(struct wrapper *w, struct step_start_watch *s);
/* The bound's `started` (ctx: a struct step_start_watch): every rank's file is there. */
bool step_ranks_started(void *ctx);
/* The step was ended at the limit: a start_timeout event naming the ranks not up (the first 8)
 * into who; the status it counts as (the watchdog's). */
int step_start_overdue(struct wrapper *w, const struct step_start_watch *s, char *who,
                       size_t len);

/* step_prom.c: RUN_DIR/prom/ryzen-<job>-step.prom (metrics.prom_dir), written at each training
 * launch: this job's restarts and down time by reason, live (docs/monitoring.md). */
void step_live_write(const struct wrapper *w);

/* On a restarted attempt, the nodes of the attempt before that Slurm cannot reach now,
 * named in a nodes_lost event (a network fault: a cut link or a dead host). */
void step_lost_nodes(struct wrapper *w);

/* Path of a sibling program: the override, else NAME next to ryzen-step, else NAME (PATH). */
void step_find_program(char *out, size_t len, const char *override, const char *self_dir,
                       const char *name);
/* The config file for --config NAME (see docs/operations.md, "Where files are found"). */
bool step_find_config(char *out, size_t len, const char *name, const struct step_env *e,
                      const char *template_dir);
/* The overrides that apply to `phase`: unqualified ones, and "PHASE:key=value" for this phase. */
int step_select_sets(const char *const *sets, int n, const char *phase, const char **out);

/* ryzen-gate for this job (ended == NULL: a finished run); returns its status. */
int chain_run_gate(struct wrapper *w, const char *ended, const char *why, int status);
/* After a finished training: gate, then promote / roll back / stop per the verdict; the job's
 * exit status. */
int chain_finish_phase(struct wrapper *w);
/* The phase's NO-GO action (phase.on_no_go) after a report that ended the phase. */
void chain_no_go(struct wrapper *w, const char *why);
/* Cancel the pending jobs this lineage submitted (never by name, never another user's). */
void chain_cancel_lineage(struct wrapper *w);
/* Set the job's Comment ("PHASE: VERDICT ..."), so sacct shows what happened. */
void chain_comment(struct wrapper *w, const char *text);

#endif
