/* step.h: ryzen-step, the batch shell's job-step wrapper, as library code (ryzen-step.c is a thin
 * main).  It is never an MPI process.  One job attempt (docs/operations.md):
 *
 *   config    load + validate the phase's config and overrides            bad: 64, no requeue
 *   inputs    data files, --resume-from, the run root, before any srun      bad: 64/65, no requeue
 *   owner     RUN_DIR belongs to one live job (O_EXCL owner file, checked against Slurm)
 *   signal    what Slurm says about the job: --signal vs health.stop_signal, --time vs the lead,
 *             a stop that came before we could act
 *   preflight srun ryzen-train --preflight on every rank (cpus, binding, memory limit, disk)
 *   train     srun ryzen-train; the stop signal is forwarded; each rank leaves an exit record
 *   decide    classify the attempt (exit records, status, Slurm's state and reason), then
 *             finish, requeue, let Slurm requeue, hold, or end with a report
 *   chain     ryzen-gate; GO promotes, NO-GO rolls back, carrying the job's own sbatch flags
 *
 * Everything that talks to Slurm or starts a process goes through a struct step_runner, so the
 * policy (requeue, budgets, promotion, rollback, flag propagation, cancellation) is unit-tested
 * without Slurm (tests/check_step.c); tests/slurm.sh and tests/chain.sh run the real thing.
 * The environment is read once, by main (step_env_parse), and passed down.
 *
 * Ownership: the structs here are caller-owned values; nothing is retained across calls. */
#ifndef RZ_STEP_STEP_H
#define RZ_STEP_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/status.h"

#define STEP_PATH_MAX 2048
#define STEP_MAX_SETS 256

/* ---- environment (read once by main) ---------------------------------------------------------- */

struct step_env {
    char job_id[64];            /* SLURM_JOB_ID, "local" outside Slurm */
    char array_job_id[64];      /* SLURM_ARRAY_JOB_ID ("" unless an array task) */
    char array_task_id[32];     /* SLURM_ARRAY_TASK_ID */
    char display_id[128];       /* "ARRAY_TASK" for an array task, else job_id */
    long restart_count;         /* SLURM_RESTART_COUNT (0 when unset) */
    long ntasks, nnodes;        /* SLURM_NTASKS, SLURM_NNODES */
    long ntasks_per_node;       /* SLURM_NTASKS_PER_NODE (0: not given) */
    long cpus_per_task;         /* SLURM_CPUS_PER_TASK (0: not given) */
    long omp_threads;           /* OMP_NUM_THREADS (0: not set) */
    long mem_per_node_mb;       /* SLURM_MEM_PER_NODE (0: not set) */
    long mem_per_cpu_mb;        /* SLURM_MEM_PER_CPU */
    char submit_dir[STEP_PATH_MAX]; /* SLURM_SUBMIT_DIR, else the working directory */
    char run_root[STEP_PATH_MAX];   /* RYZEN_RUN_ROOT ("" = SUBMIT_DIR/runs) */
    char train[STEP_PATH_MAX];      /* RYZEN_TRAIN ("" = next to ryzen-step, else PATH) */
    char gate[STEP_PATH_MAX];       /* RYZEN_GATE */
    char config_dir[STEP_PATH_MAX]; /* RYZEN_CONFIG_DIR ("" = search, see step_find_config) */
    char sbatch_dir[STEP_PATH_MAX]; /* RYZEN_SBATCH_DIR ("" = the running template's dir) */
    char srun_mpi[64];              /* RYZEN_SRUN_MPI ("" = chosen: step_mpi_choose) */
    char pmix_fence[32];            /* SLURM_PMIX_FENCE as the job has it ("" = unset) */
    char cpu_bind[64];              /* RYZEN_CPU_BIND: srun --cpu-bind (default "cores") */
    char sbatch_signal[64];         /* SBATCH_SIGNAL as exported into the job ("" = unset) */
    char slurm_json[8];             /* RYZEN_SLURM_JSON: "0" reads Slurm's text only ("" = auto) */
    char self_dir[STEP_PATH_MAX];   /* directory of the ryzen-step executable */
};

/* Fill e from an environment array (main passes environ) and the process itself. */
void step_env_parse(struct step_env *e, char *const *envp);
/* Whether it runs as a Slurm job (SLURM_JOB_ID set). */
bool step_env_in_slurm(const struct step_env *e);
/* The entry ryzen-step adds to the environment of its sruns so that Slurm's PMIx plugin runs
 * every fence as a ring: "SLURM_PMIX_FENCE=ring" when srun's plugin (the one chosen, e.g.
 * "pmix" or "pmix_v4") is PMIx and the job has not set SLURM_PMIX_FENCE itself, else NULL (the
 * job's own choice, or a plugin without it such as pmi2).
 * Slurm 22.05's tree algorithm, the plugin's choice for a fence without data such as
 * MPI_Init's closing one, let a node out before another node had entered it (tools/pmix-fences;
 * docs/devcluster.md, "A rank that dies on SIGSEGV as training starts"). */
const char *step_env_pmix_fence(const struct step_env *e, const char *plugin);

/* ---- arguments ----------------------------------------------------------------------------------- */

struct step_args {
    const char *config;                  /* --config FILE or phase name */
    const char *sets[STEP_MAX_SETS];     /* every --set as given (passed on along the chain) */
    int n_sets;
    const char *lineage;                 /* --lineage JOB: the chain's first job (NULL: this one) */
    const char *rollback_of;             /* --rollback-of JOB: this job rolls that one back */
    const char *resume_from;             /* --resume-from PATH: the rollback's checkpoint */
};

/* ---- running commands ----------------------------------------------------------------------------
 * The one door to the outside world.  argv is NULL-terminated; no shell ever sees a value. */
#define STEP_WAIT_TIMED_OUT (-2) /* wait: the step ran past its limit and was ended */
#define STEP_KILL_GRACE_S 30.0   /* wait: from the abort to KILL, a step past its limit */

/* wait's limit on a step: ended when timeout_s (0: no limit) has passed and `started` has not
 * said yet that the step is up (checked at each poll; once it says so, no limit is left).  With
 * started NULL the limit covers the whole step.  A step that the abort has not ended
 * kill_grace_s later (0: STEP_KILL_GRACE_S) is sent KILL. */
struct step_bound {
    double timeout_s;
    bool (*started)(void *ctx);
    void *ctx;
    double kill_grace_s;
};

struct step_runner {
    /* Run to completion.  With out != NULL standard output is captured there (NUL-terminated,
     * cut at len - 1), else inherited.  Returns the exit status, 128 + N for death by signal N,
     * or -1 when it could not start (err says why). */
    int (*run)(const struct step_runner *r, const char *const *argv, char *out, size_t len,
               struct rz_err *err);
    /* Start the job step in the background with these extra "NAME=value" environment entries
     * (NULL-terminated, may be NULL); *handle identifies it for wait. */
    enum rz_status (*start)(const struct step_runner *r, const char *const *argv,
                            const char *const *env, long *handle, struct rz_err *err);
    /* Wait for the started step.  Each stop signal recorded meanwhile (step_signals_*) is sent
     * on to it as `forward_signo`, once.  Returns the status as for run; a step past its bound
     * (NULL: none) is ended (two SIGINTs, srun's abort; KILL after the bound's kill_grace_s)
     * and STEP_WAIT_TIMED_OUT is returned. */
    int (*wait)(const struct step_runner *r, long handle, int forward_signo,
                const struct step_bound *bound, FILE *log);
    void (*sleep)(const struct step_runner *r, double seconds);
    /* Wall-clock seconds since the epoch. */
    double (*now)(const struct step_runner *r);
    void *self;
};

/* posix_spawnp, waitpid, nanosleep, clock_gettime. */
const struct step_runner *step_runner_posix(void);

/* ---- signals ----------------------------------------------------------------------------------------
 * Installed by main before anything else: USR1, USR2 and TERM only record that they came, so no
 * signal at any moment of the job kills the wrapper by its default action. */
enum rz_status step_signals_install(struct rz_err *err);
/* How many stop signals arrived so far, and the last one (0 if none). */
int step_signals_count(void);
int step_signals_last(void);
/* Record a signal as if it had arrived (tests, and the early-stop check). */
void step_signals_note(int signo);

/* ---- the link probe (probe.c) -------------------------------------------------------------------------
 * `ryzen-step --probe-peers TIMEOUT_S NAME=ADDR[:PORT]...`: a bounded TCP connect from this node
 * (`from`: SLURMD_NODENAME, else the host name) to each peer, one line each on out ("link FROM
 * TO ok|fail DETAIL").  Arguments after --probe-peers; 0, or RZ_EXIT_USAGE after saying why. */
int step_probe_main(int argc, const char *const *argv, const char *from, FILE *out,
                    FILE *err);

/* ---- the whole job ---------------------------------------------------------------------------------- */

/* Run one attempt of the phase; `out` gets the readable event lines (the job output).  Returns
 * the process exit status (docs/exit-codes.md). */
int step_main(const struct step_args *args, const struct step_env *env,
              const struct step_runner *runner, FILE *out);

#endif
