/* step.h: the pieces of ryzen-step, the batch shell's job-step wrapper (never an MPI process):
 * the Slurm environment, the event log, the restart budget, the exit-status policy, and running
 * srun/scontrol from argv arrays (no shell ever sees a config value).
 *
 *   RUN_DIR/events.jsonl   one JSON object per decision: time, job, restart, phase, event,
 *                          message, and event-specific fields; the same line, readable, goes to
 *                          the job output.
 *
 * Ownership: step_events_open allocates; step_events_close frees (NULL ok).  argv arrays built
 * by struct step_argv are owned by it (step_argv_free). */
#ifndef RZ_STEP_STEP_H
#define RZ_STEP_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/status.h"

/* What the wrapper reads from Slurm's environment. */
struct step_env {
    char job_id[64];          /* SLURM_JOB_ID, or "local" outside Slurm */
    long restart_count;       /* SLURM_RESTART_COUNT (unset on the first run: 0) */
    long ntasks, nnodes;
    char submit_dir[2048];    /* SLURM_SUBMIT_DIR, else the current directory */
};
void step_env_read(struct step_env *e);

/* RUN_DIR = $RYZEN_RUN_ROOT/<phase>, RYZEN_RUN_ROOT defaulting to SUBMIT_DIR/runs; <phase> is
 * the config file's base name without .yaml.  A rollback job (RYZEN_ROLLBACK_OF=<job>) uses
 * RUN_DIR/rollback-<job>.  Returns false if it does not fit. */
bool step_run_dir(char *out, size_t len, const struct step_env *e, const char *config,
                  char *phase, size_t phase_len);

/* ---- events ------------------------------------------------------------------------------------ */

/* An event field: a string, or (str == NULL) a number. */
struct step_kv {
    const char *key;
    const char *str;
    double num;
};

struct step_events;
enum rz_status step_events_open(struct step_events **out, const char *run_dir,
                                const struct step_env *env, const char *phase, FILE *echo,
                                struct rz_err *err);
/* Append one event (fsynced) and echo "ryzen-step: EVENT: MESSAGE" to the job output. */
void step_event(struct step_events *ev, const char *event, const char *message,
                const struct step_kv *kv, size_t n);
void step_events_close(struct step_events *ev);
const char *step_events_path(const struct step_events *ev);

/* Failure requeues already spent by this job: "requeue" events with "reason":"failure" and this
 * job id in events.jsonl (SLURM_RESTART_COUNT also counts signal requeues, and is unset on the
 * first run, so it cannot be the budget). */
long step_count_failures(const char *events_path, const char *job_id);

/* ---- policy ------------------------------------------------------------------------------------ */

enum step_action {
    STEP_DONE,                /* 0: finished; go to the gate */
    STEP_REQUEUE_SIGNAL,      /* 75: checkpointed on a signal */
    STEP_REQUEUE_FAILURE,     /* crash, 76, launcher failure: requeue while the budget lasts */
    STEP_GIVE_UP,             /* a failure with the restart budget spent */
    STEP_NO_REQUEUE,          /* 64, 65, 70: requeueing cannot help */
};
/* status: the trainer step's exit code (0..255, 128+N for death by signal N). */
enum step_action step_decide(int status, long failures_so_far, long max_restarts);
const char *step_action_name(enum step_action a);

/* The preflight's status (ryzen-train --preflight under srun).  The trainer's own answers are
 * final: 0 passed; otherwise a NO-GO that a requeue cannot fix, when the trainer answered (it
 * wrote health.json during this attempt, whatever srun made of the ranks' exits: one rank's 70
 * can reach srun as 137 when --kill-on-bad-exit kills the others) or the status is its 64, 65 or
 * 70.  Without an answer, the launch itself failed (srun could not start the tasks: a job
 * credential refused just after a requeue, a node still coming up), which says nothing about the
 * ranks: it is tried again up to STEP_PREFLIGHT_TRIES times in all, STEP_PREFLIGHT_BACKOFF_S *
 * attempt seconds apart, and then handed to step_decide like a failed training step (a requeue
 * counted in the failure budget).  75 (stopped by a signal) goes to step_decide at once. */
enum step_preflight {
    STEP_PREFLIGHT_PASSED,
    STEP_PREFLIGHT_NO_GO,     /* the trainer's verdict: report NO-GO (health), no requeue */
    STEP_PREFLIGHT_RETRY,     /* launch failure with attempts left */
    STEP_PREFLIGHT_DECIDE,    /* hand the status to step_decide */
};
#define STEP_PREFLIGHT_TRIES 3
#define STEP_PREFLIGHT_BACKOFF_S 5
/* answered: health.json was written during this attempt; attempt: 1 for the first try. */
enum step_preflight step_preflight_classify(int status, bool answered, int attempt);

/* ---- processes ------------------------------------------------------------------------------------ */

struct step_argv {
    char **argv;
    size_t n, cap;
};
enum rz_status step_argv_add(struct step_argv *a, const char *arg, struct rz_err *err);
void step_argv_free(struct step_argv *a);
/* "srun --mpi=pmix ..." for messages (arguments with spaces are quoted). */
void step_argv_format(const struct step_argv *a, char *out, size_t len);

/* Start argv[0] (PATH lookup) with stdout/stderr inherited; *pid on success. */
enum rz_status step_spawn(const struct step_argv *a, pid_t *pid, struct rz_err *err);
/* Wait for pid; each time a forwarded signal arrives (see step_forward_signals) it is sent on to
 * pid as SIGUSR2 (srun passes USR2 to every task).  Returns the exit code, or 128 + signal. */
int step_wait(pid_t pid, FILE *log);
/* Install the handlers that mark USR2/TERM for forwarding; call once the step runs. */
enum rz_status step_forward_signals(struct rz_err *err);
/* Signals received (and forwarded) so far. */
int step_signals_seen(void);

/* Run to completion; the exit code or 128 + signal, -1 if it could not start. */
int step_run(const struct step_argv *a, struct rz_err *err);
/* Same, with the program's standard output captured into out (NUL-terminated, cut at len - 1;
 * stderr stays inherited). */
int step_run_capture(const struct step_argv *a, char *out, size_t len, struct rz_err *err);

#endif
