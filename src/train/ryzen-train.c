/* ryzen-train: the trainer's command line.  A thin main: parse arguments, load and validate the
 * config, run train_run, map the status to the documented exit code (docs/exit-codes.md). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "config/config.h"
#include "core/status.h"
#include "core/util.h"
#include "health/health.h"
#include "train/preflight.h"
#include "train/train.h"

#define MAX_SETS 256

struct args {
    const char *config;
    const char *sets[MAX_SETS];
    int n_sets;
    const char *run_dir;
    const char *resume;
    long long stop_at_step;
    int quiet;
    int profile;
    int reference;
    int preflight;
};

static void usage(FILE *f)
{
    fputs("usage: ryzen-train --config FILE [--set key=value]... [--run-dir DIR]\n"
          "                   [--resume auto|never|PATH] [--stop-at-step N] [--quiet] [--profile]\n"
          "       ryzen-train --config FILE [--set key=value]... [--run-dir DIR] --preflight\n"
          "       ryzen-train --config-reference     (print docs/config.md)\n"
          "\n"
          "Trains the transformer language model described by FILE (YAML; keys in docs/config.md).\n"
          "  --config FILE     run configuration (required)\n"
          "  --set key=value   override one dotted key, e.g. --set training.steps=50 (repeatable)\n"
          "  --run-dir DIR     where metrics/ and summary.json go (default:\n"
          "                    $RYZEN_RUN_ROOT/<config name>, RYZEN_RUN_ROOT defaulting to\n"
          "                    $SLURM_SUBMIT_DIR/runs or ./runs)\n"
          "  --resume MODE     auto (default): newest valid checkpoint in RUN_DIR/checkpoints,\n"
          "                    else a fresh start; never: ignore checkpoints; PATH: exactly that\n"
          "                    file, or exit 65\n"
          "  --stop-at-step N  checkpoint after step N and exit 0 (a run segment; the schedule\n"
          "                    still spans training.steps)\n"
          "  --quiet           no progress lines\n"
          "  --profile         time per op class (matmul, attention, norm, loss, optimizer,\n"
          "                    communication, other) over the steady steps, and the share of the\n"
          "                    GEMM-only bound reached (rank 0; printed even with --quiet)\n"
          "  --preflight       only check the launch on every rank (world size, ring, allreduce,\n"
          "                    memory, checkpoint directory, oneDNN); RUN_DIR/health.json; 0 or 70\n"
          "Metrics go to RUN_DIR/metrics/<run-id>/: RYZEN_RUN_ID, else SLURM_JOB_ID, else\n"
          "local-<UTC time>-<pid>.\n"
          "Runs alone (1 rank), under `mpirun -np N`, or under `srun --mpi=pmix`.\n"
          "SIGUSR2 (health.stop_signal) or SIGTERM: checkpoint at the next step and exit 75.\n"
          "Exit codes: 0 done, 64 bad config or usage, 65 no valid checkpoint, 70 health check\n"
          "failed, 74 checkpoint I/O error, 75 checkpointed on signal, 76 watchdog.\n", f);
}

/* Returns 0 on success, RZ_EXIT_USAGE on a usage error, -1 for --help. */
static int parse_args(struct args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            return -1;
        } else if (strcmp(s, "--config") == 0 && has_value) {
            a->config = argv[++i];
        } else if (strcmp(s, "--set") == 0 && has_value) {
            if (a->n_sets == MAX_SETS) {
                fprintf(stderr, "ryzen-train: too many --set options (at most %d)\n", MAX_SETS);
                return RZ_EXIT_USAGE;
            }
            a->sets[a->n_sets++] = argv[++i];
        } else if (strcmp(s, "--run-dir") == 0 && has_value) {
            a->run_dir = argv[++i];
        } else if (strcmp(s, "--resume") == 0 && has_value) {
            a->resume = argv[++i];
        } else if (strcmp(s, "--stop-at-step") == 0 && has_value) {
            char *end = NULL;
            a->stop_at_step = strtoll(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || a->stop_at_step < 1) {
                fprintf(stderr, "ryzen-train: --stop-at-step needs a positive integer, got '%s'\n",
                        argv[i]);
                return RZ_EXIT_USAGE;
            }
        } else if (strcmp(s, "--preflight") == 0) {
            a->preflight = 1;
        } else if (strcmp(s, "--quiet") == 0) {
            a->quiet = 1;
        } else if (strcmp(s, "--profile") == 0) {
            a->profile = 1;
        } else if (strcmp(s, "--config-reference") == 0) {
            a->reference = 1;
        } else if (!has_value && (strcmp(s, "--config") == 0 || strcmp(s, "--set") == 0 ||
                                  strcmp(s, "--run-dir") == 0 || strcmp(s, "--resume") == 0 ||
                                  strcmp(s, "--stop-at-step") == 0)) {
            fprintf(stderr, "ryzen-train: option '%s' needs a value (see --help)\n", s);
            return RZ_EXIT_USAGE;
        } else {
            fprintf(stderr, "ryzen-train: unknown %s '%s' (see --help)\n",
                    strncmp(s, "-", 1) == 0 ? "option" : "argument", s);
            return RZ_EXIT_USAGE;
        }
    }
    if (a->config == NULL && !a->reference) {
        fprintf(stderr, "ryzen-train: --config FILE is required (see --help)\n");
        return RZ_EXIT_USAGE;
    }
    return 0;
}

/* runs/<config base name without .yaml>, under RYZEN_RUN_ROOT or SLURM_SUBMIT_DIR/runs. */
static int default_run_dir(char *buf, size_t len, const char *config)
{
    const char *root = getenv("RYZEN_RUN_ROOT");
    const char *submit = getenv("SLURM_SUBMIT_DIR");
    char rootbuf[2048];
    if (root == NULL || root[0] == '\0') {
        snprintf(rootbuf, sizeof rootbuf, "%s/runs", submit != NULL && submit[0] ? submit : ".");
        root = rootbuf;
    }
    char phase[256];
    if (!cfg_phase_name(config, phase, sizeof phase))
        return -1;
    int w = snprintf(buf, len, "%s/%s", root, phase);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* RYZEN_RUN_ID, else the Slurm job id, else local-<UTC time>-<pid>; rank 0's choice is
 * broadcast so all ranks write under one metrics/<run-id>/. */
static void make_run_id(char *buf, size_t len)
{
    const char *ids[] = {getenv("RYZEN_RUN_ID"), getenv("SLURM_JOB_ID")};
    for (size_t i = 0; i < RZ_ARRAY_LEN(ids); i++)
        if (ids[i] != NULL && ids[i][0] != '\0') {
            snprintf(buf, len, "%s", ids[i]);
            return;
        }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(buf, len, "local-%s-%ld", stamp, (long)getpid());
}

/* Rank as the launcher announces it, before MPI is up: only rank 0 prints config errors. */
static int launcher_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(vars); i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0')
            return atoi(v);
    }
    return 0;
}

/* Test-only (RYZEN_TEST_STARTUP_DELAY_S): widen the start-up window so a test can deliver a
 * stop signal before the first step.  Documented in docs/operations.md. */
static void test_startup_delay(void)
{
    const char *v = getenv("RYZEN_TEST_STARTUP_DELAY_S");
    if (v != NULL)
        sleep((unsigned)atoi(v));
}

/* --run-dir, or the default; returns 0 or RZ_EXIT_USAGE after saying why. */
static int resolve_run_dir(const struct args *a, char *run_dir, size_t len)
{
    int w = a->run_dir != NULL ? snprintf(run_dir, len, "%s", a->run_dir)
                               : default_run_dir(run_dir, len, a->config);
    if (w < 0 || (size_t)w >= len) {
        fprintf(stderr, "ryzen-train: run directory path is too long (at most %zu bytes)\n",
                len - 1);
        return RZ_EXIT_USAGE;
    }
    return 0;
}

static int preflight(const struct args *a, const struct cfg *c, struct comm *comm)
{
    static struct rz_err err;
    char run_dir[2048];
    int rc = resolve_run_dir(a, run_dir, sizeof run_dir);
    if (rc != 0)
        return rc;
    struct preflight_opts o = {.cfg = c, .comm = comm, .run_dir = run_dir,
                               .log = a->quiet ? NULL : stdout};
    enum rz_status st = preflight_run(&o, &err);
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-train: rank %d: %s\n", comm_rank(comm), err.msg);
        return st == RZ_EHEALTH ? RZ_EXIT_HEALTH : rz_exit_code(st);
    }
    return 0;
}

/* The preflight of a launch that MPI could not start: health.json still says why. */
static void preflight_launch_failed(const struct args *a, const char *why)
{
    static struct rz_err err;
    char run_dir[2048];
    if (resolve_run_dir(a, run_dir, sizeof run_dir) != 0)
        return;
    if (preflight_report_launch(run_dir, why, a->quiet ? NULL : stdout, &err) != RZ_OK)
        fprintf(stderr, "ryzen-train: %s\n", err.msg);
}

static int run(const struct args *a, const struct cfg *c, struct comm *comm)
{
    static struct rz_err err;
    char run_dir[2048], run_id[128];
    int rc = resolve_run_dir(a, run_dir, sizeof run_dir);
    if (rc != 0)
        return rc;
    make_run_id(run_id, sizeof run_id);
    enum rz_status st = comm_bcast_bytes(comm, run_id, sizeof run_id, &err);
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-train: %s\n", err.msg);
        return rz_exit_code(st);
    }
    int rank = comm_rank(comm);
    struct train_opts opts = {.cfg = c, .comm = comm, .run_dir = run_dir, .run_id = run_id,
                              .log = a->quiet || rank != 0 ? NULL : stdout,
                              .events = rank != 0 ? NULL : stdout, .peak_seconds = 0.5,
                              .resume = a->resume, .stop_at_step = a->stop_at_step,
                              .profile = a->profile};
    struct train_result res;
    st = train_run(&opts, &res, &err);
    if (st != RZ_OK && st != RZ_ESIGNAL) {
        fprintf(stderr, "ryzen-train: rank %d: %s: %s\n", rank, rz_status_name(st), err.msg);
        return rz_exit_code(st);
    }
    if (!a->quiet && rank == 0)
        printf("ryzen-train: %s: %lld steps, loss %.4f -> %.4f, %.1f samples/s (steady), "
               "peak RSS %.1f MB\nryzen-train: summary -> %s/summary.json\n",
               st == RZ_ESIGNAL ? "stopped by signal" : "done", (long long)res.steps,
               res.first_loss, res.final_loss, res.samples_per_sec,
               (double)res.peak_rss_bytes / 1e6, run_dir);
    return rz_exit_code(st);
}

int main(int argc, char **argv)
{
    struct args a;
    int rc = parse_args(&a, argc, argv);
    if (rc != 0) {
        if (launcher_rank() == 0)
            usage(rc < 0 ? stdout : stderr);
        return rc < 0 ? 0 : rc;
    }
    if (a.reference) {
        cfg_write_reference(stdout);
        return 0;
    }
    static struct cfg c;
    static struct rz_err err;
    enum rz_status st = cfg_load_with_overrides(&c, a.config, a.sets, a.n_sets, &err);
    int signo = 0;
    if (st == RZ_OK)
        st = health_signal_parse(c.health.stop_signal, &signo, &err);
    if (st != RZ_OK) {
        if (launcher_rank() == 0)
            fprintf(stderr, "ryzen-train: invalid configuration:\n%s\n", err.msg);
        return rz_exit_code(st);
    }
    /* Before MPI_Init, so the stop signals are ours whatever the MPI library installs. */
    st = health_signals_install(signo, &err);
    /* Also before MPI_Init, which would abort without saying why: a task srun started without
     * a PMIx rank.  The same on every task, so rank 0 speaks (and, for --preflight, writes
     * health.json). */
    if (st == RZ_OK && (st = comm_check_launch_env(&err)) != RZ_OK) {
        if (launcher_rank() == 0) {
            fprintf(stderr, "ryzen-train: %s: %s\n", rz_status_name(st), err.msg);
            if (a.preflight)
                preflight_launch_failed(&a, err.msg);
        }
        return rz_exit_code(st);
    }
    struct comm *comm = NULL;
    if (st == RZ_OK)
        st = comm_init(&comm, &argc, &argv, &err);
    if (st == RZ_OK && a.preflight) {
        rc = preflight(&a, &c, comm); /* reports a wrong launch itself, in health.json */
        comm_finalize(comm);
        return rc;
    }
    if (st == RZ_OK)
        st = comm_check_launch(comm, &err);
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-train: %s: %s\n", rz_status_name(st), err.msg);
        comm_finalize(comm);
        return rz_exit_code(st);
    }
    test_startup_delay();
    rc = run(&a, &c, comm);
    if (rc == RZ_EXIT_WATCHDOG)
        comm_abort(comm, rc); /* a peer may be wedged in a collective: do not wait for it */
    comm_finalize(comm);
    return rc;
}
