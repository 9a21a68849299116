/* ryzen-train: the trainer's command line.  A thin main: parse arguments (getopt_long), read the
 * environment once into the structs the library takes, load and validate the config, run the
 * preflight or train_run, leave this rank's exit record for ryzen-step, and map the status to the
 * documented exit code (docs/exit-codes.md). */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "config/cfg.h"
#include "core/cli.h"
#include "core/hooks.h"
#include "core/isa.h"
#include "core/status.h"
#include "core/util.h"
#include "health/watchdog.h"
#include "kernels/kernels.h"
#include "plan/plan.h"
#include "train/preflight.h"
#include "train/train.h"

extern char **environ;

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
    int plan;                 /* --plan: print the memory plan, no MPI */
    long world;               /* --world N for --plan (default 1) */
    uint64_t mem_limit;       /* --mem-limit SIZE for --plan (0: none) */
};

/* What ryzen-train reads from its environment, read once here. */
struct env {
    struct comm_launch launch;
    struct preflight_env preflight;
    char run_root[2048];      /* RYZEN_RUN_ROOT */
    char submit_dir[2048];    /* SLURM_SUBMIT_DIR */
    char run_id[128];         /* RYZEN_RUN_ID, else SLURM_JOB_ID */
    char attempt_dir[2048];   /* RYZEN_ATTEMPT_DIR: where this rank leaves its exit record */
    char isa[32];             /* RYZEN_ISA: the vector level cap (kern_isa_cap), "" native */
};

static const char *env_get(const char *name)
{
    const char *v = getenv(name);
    return v != NULL ? v : "";
}

static long env_long(const char *name)
{
    return atol(env_get(name));
}

static void env_read(struct env *e)
{
    memset(e, 0, sizeof *e);
    comm_launch_parse(&e->launch, environ);
    e->preflight = (struct preflight_env){
        .launch = &e->launch, .mem_per_node_mb = env_long("SLURM_MEM_PER_NODE"),
        .mem_per_cpu_mb = env_long("SLURM_MEM_PER_CPU"),
        .cpus_on_node = env_long("SLURM_CPUS_ON_NODE"), .omp_threads = env_long("OMP_NUM_THREADS")};
    rz_fmt(e->run_root, sizeof e->run_root, "%s", env_get("RYZEN_RUN_ROOT"));
    rz_fmt(e->submit_dir, sizeof e->submit_dir, "%s", env_get("SLURM_SUBMIT_DIR"));
    const char *id = env_get("RYZEN_RUN_ID");
    rz_fmt(e->run_id, sizeof e->run_id, "%s", id[0] ? id : env_get("SLURM_JOB_ID"));
    rz_fmt(e->attempt_dir, sizeof e->attempt_dir, "%s", env_get("RYZEN_ATTEMPT_DIR"));
    rz_fmt(e->isa, sizeof e->isa, "%s", env_get("RYZEN_ISA"));
}

/* RYZEN_ISA: every kernel's vector level, capped before the first one runs. */
static enum rz_status isa_cap(const struct env *e, struct rz_err *err)
{
    enum rz_isa cap;
    enum rz_status st = rz_isa_parse(e->isa[0] ? e->isa : "native", "RYZEN_ISA", &cap, err);
    return st == RZ_OK ? kern_isa_cap(cap, err) : st;
}

static void usage(FILE *f)
{
    fputs("usage: ryzen-train --config FILE [--set key=value]... [--run-dir DIR]\n"
          "                   [--resume auto|never|PATH] [--stop-at-step N] [--quiet] [--profile]\n"
          "       ryzen-train --config FILE [--set key=value]... [--run-dir DIR] --preflight\n"
          "       ryzen-train --config FILE [--set key=value]... --plan [--world N]\n"
          "                   [--mem-limit SIZE]\n"
          "       ryzen-train --config-reference     (print docs/config.md)\n"
          "       ryzen-train --help | --version\n"
          "\n"
          "Trains the transformer language model described by FILE (YAML; keys in docs/config.md).\n"
          "  --config FILE     run configuration (required); --config=FILE works too\n"
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
          "                    communication, other) over the steady steps, each matmul shape's\n"
          "                    in-context GFLOP/s, and the share of the GEMM-only bound reached\n"
          "                    (rank 0; printed even with --quiet)\n"
          "  --preflight       only check the launch on every rank (world size, ring, allreduce,\n"
          "                    CPUs, memory against the job's limit, checkpoint directory,\n"
          "                    oneDNN); RUN_DIR/health.json; 0 or 70\n"
          "  --plan            only print the memory each rank needs (parameters, gradients,\n"
          "                    optimizer state, activations with and without recomputation,\n"
          "                    workspace, predicted peak RSS); runs without MPI; exit 0\n"
          "  --world N         --plan for N ranks (default 1)\n"
          "  --mem-limit SIZE  --plan: also say whether it fits SIZE per rank (K, M, G, T: binary,\n"
          "                    as Slurm's --mem) and the cheapest change that would\n"
          "Metrics go to RUN_DIR/metrics/<run-id>/: RYZEN_RUN_ID, else SLURM_JOB_ID, else\n"
          "local-<UTC time>-<pid>.  With RYZEN_ATTEMPT_DIR set (ryzen-step sets it), each rank\n"
          "leaves its exit status and reason in RYZEN_ATTEMPT_DIR/rank-NNNNN.json.\n"
          "RYZEN_ISA=native|avx512|avx2|baseline caps every kernel's vector instruction set\n"
          "(oneDNN, libxsmm, BLIS and our own; default native; docs/performance.md).\n"
          "Runs alone (1 rank), under `mpirun -np N`, or under `srun --mpi=pmix` (an MPICH\n"
          "build: `mpiexec -n N`, `srun --mpi=pmi2`; docs/mpi.md).\n"
          "health.stop_signal (default SIGUSR2) or SIGTERM: checkpoint at the next step, exit 75.\n"
          "Exit codes: 0 done, 64 bad config or usage, 65 no valid checkpoint, 70 health check\n"
          "failed, 74 checkpoint I/O error, 75 checkpointed on signal, 76 watchdog.\n", f);
}

static int usage_error(int launcher_rank, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int usage_error(int launcher_rank, const char *fmt, ...)
{
    if (launcher_rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "ryzen-train: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, " (see --help)\n");
        va_end(ap);
    }
    return RZ_EXIT_USAGE;
}

/* Returns 0, RZ_EXIT_USAGE on a usage error, or -1 when --help/--version answered. */
static int parse_args(struct args *a, int argc, char **argv, int launcher_rank)
{
    enum { O_SET = 1, O_RUN_DIR, O_RESUME, O_STOP_AT, O_PREFLIGHT, O_QUIET, O_REFERENCE,
           O_VERSION, O_PLAN, O_WORLD, O_MEM_LIMIT, O_PROFILE };
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, O_SET},
        {"run-dir", required_argument, NULL, O_RUN_DIR},
        {"resume", required_argument, NULL, O_RESUME},
        {"stop-at-step", required_argument, NULL, O_STOP_AT},
        {"preflight", no_argument, NULL, O_PREFLIGHT}, {"quiet", no_argument, NULL, O_QUIET},
        {"config-reference", no_argument, NULL, O_REFERENCE},
        {"profile", no_argument, NULL, O_PROFILE},
        {"plan", no_argument, NULL, O_PLAN}, {"world", required_argument, NULL, O_WORLD},
        {"mem-limit", required_argument, NULL, O_MEM_LIMIT},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    opterr = 0;
    char *end = NULL;
    for (int c; (c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1;) {
        switch (c) {
        case 'c': a->config = optarg; break;
        case O_SET:
            if (a->n_sets == MAX_SETS)
                return usage_error(launcher_rank, "too many --set options (at most %d)", MAX_SETS);
            a->sets[a->n_sets++] = optarg;
            break;
        case O_RUN_DIR: a->run_dir = optarg; break;
        case O_RESUME: a->resume = optarg; break;
        case O_STOP_AT:
            a->stop_at_step = strtoll(optarg, &end, 10);
            if (end == optarg || *end != '\0' || a->stop_at_step < 1)
                return usage_error(launcher_rank, "--stop-at-step needs a positive integer, got "
                                   "'%s'", optarg);
            break;
        case O_PREFLIGHT: a->preflight = 1; break;
        case O_PROFILE: a->profile = 1; break;
        case O_PLAN: a->plan = 1; break;
        case O_WORLD:
            a->world = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || a->world < 1 || a->world > 1000000)
                return usage_error(launcher_rank, "--world needs a positive number of ranks, got "
                                   "'%s'", optarg);
            break;
        case O_MEM_LIMIT: {
            struct rz_err e;
            if (plan_parse_size(optarg, &a->mem_limit, &e) != RZ_OK)
                return usage_error(launcher_rank, "--mem-limit: %s", e.msg);
            break;
        }
        case O_QUIET: a->quiet = 1; break;
        case O_REFERENCE: a->reference = 1; break;
        case 'h':
            if (launcher_rank == 0)
                usage(stdout);
            return -1;
        case O_VERSION:
            if (launcher_rank == 0)
                rz_cli_version(stdout, "ryzen-train");
            return -1;
        default:
            /* getopt_long: optopt is the option's value when its argument is missing, 0 for an
             * option it does not know */
            return usage_error(launcher_rank, optopt != 0 ? "option '%s' needs a value"
                               : "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error(launcher_rank, "unexpected argument '%s'", argv[optind]);
    if (a->config == NULL && !a->reference)
        return usage_error(launcher_rank, "%s", "--config FILE is required");
    if ((a->world > 0 || a->mem_limit > 0) && !a->plan)
        return usage_error(launcher_rank, "%s", "--world and --mem-limit go with --plan");
    return 0;
}

/* runs/<config base name without .yaml>, under RYZEN_RUN_ROOT or SLURM_SUBMIT_DIR/runs. */
static int default_run_dir(char *buf, size_t len, const char *config, const struct env *e)
{
    char root[2100], phase[256];
    if (e->run_root[0] != '\0')
        rz_fmt(root, sizeof root, "%s", e->run_root);
    else
        rz_fmt(root, sizeof root, "%s/runs", e->submit_dir[0] ? e->submit_dir : ".");
    if (!cfg_phase_name(config, phase, sizeof phase))
        return -1;
    int w = snprintf(buf, len, "%s/%s", root, phase);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* RYZEN_RUN_ID, else the Slurm job id, else local-<UTC time>-<pid>; rank 0's choice is
 * broadcast so all ranks write under one metrics/<run-id>/. */
static void make_run_id(char *buf, size_t len, const struct env *e)
{
    if (e->run_id[0] != '\0') {
        rz_fmt(buf, len, "%s", e->run_id);
        return;
    }
    char stamp[32];
    rz_utc_format(stamp, sizeof stamp, (double)time(NULL), RZ_UTC_COMPACT);
    snprintf(buf, len, "local-%s-%ld", stamp, (long)getpid());
}

/* Test-hook build only (RYZEN_TEST_STARTUP_DELAY_S, core/hooks.h): widen the start-up window so a
 * test can deliver a stop signal before the first step. */
static void test_startup_delay(void)
{
    if (RZ_HOOK(startup_delay_s, 0.0) > 0.0)
        sleep((unsigned)RZ_HOOK(startup_delay_s, 0.0));
}

/* RYZEN_TEST_PREFLIGHT_HANG and RYZEN_TEST_START_HANG (core/hooks.h): rank 0's first preflight,
 * or first training launch, hangs before MPI_Init.  The stop signals are only recorded by then,
 * as in a real hang: what ends it is the launcher's kill, or ryzen-step's bound. */
static void test_launch_hang(const struct args *a, int me)
{
    const char *file = a->preflight ? RZ_HOOK(preflight_hang, "") : RZ_HOOK(start_hang, "");
    if (me != 0 || file[0] == '\0' || access(file, F_OK) == 0)
        return;
    FILE *f = fopen(file, "w");
    if (f != NULL)
        fclose(f);
    fprintf(stderr, "ryzen-train: test hook: this %s hangs before MPI_Init\n",
            a->preflight ? "preflight" : "training launch");
    for (int s = 0; s < 600; s++)
        sleep(1);
}

/* --run-dir, or the default; returns 0 or RZ_EXIT_USAGE after saying why. */
static int resolve_run_dir(const struct args *a, const struct env *e, char *run_dir, size_t len)
{
    int w = a->run_dir != NULL ? snprintf(run_dir, len, "%s", a->run_dir)
                               : default_run_dir(run_dir, len, a->config, e);
    if (w < 0 || (size_t)w >= len) {
        fprintf(stderr, "ryzen-train: run directory path is too long (at most %zu bytes)\n",
                len - 1);
        return RZ_EXIT_USAGE;
    }
    return 0;
}

/* RYZEN_TEST_AFTER_INIT_DELAY (core/hooks.h): one rank arrives late at the start-up rendezvous.
 * Both lines carry the wall clock, so a test compares them across ranks (tests/mpi.sh). */
static void test_after_init_delay(int rank)
{
    if (RZ_HOOK(after_init_delay_rank, -1) != rank)
        return;
    double s = RZ_HOOK(after_init_delay_s, 0.0);
    rz_sleep(s);
    fprintf(stderr, "ryzen-train: test hook: rank %d slept %.1f s after MPI_Init, arrives at "
            "%.6f\n", rank, s, rz_unix_now());
}

static void test_past_rendezvous(int rank)
{
    if (RZ_HOOK(after_init_delay_rank, -1) >= 0)
        fprintf(stderr, "ryzen-train: test hook: rank %d past the start-up rendezvous at %.6f\n",
                rank, rz_unix_now());
}

/* The preflight's bound on the start-up rendezvous, after which it goes on without it: on a run
 * directory that is not shared the files never meet, and the preflight's run_root check, not a
 * timeout, must say so (well inside health.preflight_timeout_s).  By then every rank has long
 * left MPI_Init, or the preflight's first collective hangs as it did before the rendezvous. */
#define PREFLIGHT_RENDEZVOUS_S 10.0

/* Before this rank's first MPI message: every rank of a multi-rank srun step is out of MPI_Init
 * (comm_start_rendezvous, health.start_rendezvous).  Bounded by health.start_timeout_s, or the
 * default when that is 0 (no limit would let a rank that never comes hold the others forever);
 * the preflight by PREFLIGHT_RENDEZVOUS_S at most, and a timeout only warns there. */
static enum rz_status start_rendezvous(const struct args *a, const struct cfg *c, struct comm *comm,
                                       const struct env *e, struct rz_err *err)
{
    char run_dir[2048];
    enum rz_status st = RZ_OK;
    test_after_init_delay(comm_rank(comm));
    if (strcmp(c->health.start_rendezvous, "true") == 0) {
        if (resolve_run_dir(a, e, run_dir, sizeof run_dir) != 0)
            return rz_fail(err, RZ_ECONFIG, "start-up rendezvous: no run directory");
        double limit = c->health.start_timeout_s > 0 ? c->health.start_timeout_s
                                                     : COMM_START_TIMEOUT_DEFAULT_S;
        if (a->preflight && limit > PREFLIGHT_RENDEZVOUS_S)
            limit = PREFLIGHT_RENDEZVOUS_S;
        bool complete = true;
        st = comm_start_rendezvous(comm, run_dir, &e->launch, limit, !a->preflight, &complete,
                                   err);
        if (st == RZ_OK && !complete)
            fprintf(stderr, "ryzen-train: warning: %s; the preflight goes on without it\n",
                    err->msg);
    }
    if (st == RZ_OK)
        test_past_rendezvous(comm_rank(comm));
    return st;
}

/* The outcome of this rank, for its exit record. */
struct outcome {
    int status;
    const char *end_reason;   /* NULL: from the status */
    char message[RZ_ERR_MSG_MAX];
};

static void fail(struct outcome *o, int status, const char *msg)
{
    o->status = status;
    rz_fmt(o->message, sizeof o->message, "%s", msg);
}

static void preflight(const struct args *a, const struct cfg *c, struct comm *comm,
                      const struct env *e, struct outcome *out)
{
    static struct rz_err err;
    char run_dir[2048];
    out->status = resolve_run_dir(a, e, run_dir, sizeof run_dir);
    if (out->status != 0)
        return;
    struct preflight_opts o = {.cfg = c, .comm = comm, .run_dir = run_dir, .env = &e->preflight,
                               .log = a->quiet ? NULL : stdout};
    enum rz_status st = preflight_run(&o, &err);
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-train: rank %d: %s\n", comm_rank(comm), err.msg);
        fail(out, st == RZ_EHEALTH ? RZ_EXIT_HEALTH : rz_exit_code(st), err.msg);
    }
}

/* The preflight of a launch that MPI could not start: health.json still says why. */
static void preflight_launch_failed(const struct args *a, const struct env *e, const char *why)
{
    static struct rz_err err;
    char run_dir[2048];
    if (resolve_run_dir(a, e, run_dir, sizeof run_dir) != 0)
        return;
    if (preflight_report_launch(run_dir, why, a->quiet ? NULL : stdout, &err) != RZ_OK)
        fprintf(stderr, "ryzen-train: %s\n", err.msg);
}

static void run(const struct args *a, const struct cfg *c, struct comm *comm, const struct env *e,
                struct outcome *out)
{
    static struct rz_err err;
    static struct train_result res;
    char run_dir[2048], run_id[128];
    out->status = resolve_run_dir(a, e, run_dir, sizeof run_dir);
    if (out->status != 0)
        return;
    make_run_id(run_id, sizeof run_id, e);
    enum rz_status st = comm_bcast_bytes(comm, run_id, sizeof run_id, &err);
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-train: %s\n", err.msg);
        fail(out, rz_exit_code(st), err.msg);
        return;
    }
    int rank = comm_rank(comm);
    struct train_opts opts = {.cfg = c, .comm = comm, .run_dir = run_dir, .run_id = run_id,
                              .log = a->quiet || rank != 0 ? NULL : stdout,
                              .events = rank != 0 ? NULL : stdout, .peak_seconds = 0.5,
                              .resume = a->resume, .stop_at_step = a->stop_at_step,
                              .attempt_dir = e->attempt_dir, .profile = a->profile};
    st = train_run(&opts, &res, &err);
    if (res.end_reason[0] != '\0')
        out->end_reason = res.end_reason;
    if (st != RZ_OK && st != RZ_ESIGNAL) {
        fprintf(stderr, "ryzen-train: rank %d: %s: %s\n", rank, rz_status_name(st), err.msg);
        fail(out, rz_exit_code(st), err.msg);
        return;
    }
    if (!a->quiet && rank == 0)
        printf("ryzen-train: %s: %lld steps, loss %.4f -> %.4f, %.1f samples/s (steady), "
               "peak RSS %.1f MB\nryzen-train: summary -> %s/summary.json\n",
               st == RZ_ESIGNAL ? "stopped by signal" : "done", (long long)res.steps,
               res.first_loss, res.final_loss, res.samples_per_sec,
               (double)res.peak_rss_bytes / 1e6, run_dir);
    out->status = rz_exit_code(st);
}

/* --plan: the memory plan, without MPI. */
static int print_plan(const struct args *a, const struct cfg *c)
{
    static struct rz_err err;
    struct plan p;
    enum rz_status st = plan_compute(&p, c, a->world > 0 ? (int)a->world : 1, NULL, &err);
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-train: %s\n", err.msg);
        return rz_exit_code(st);
    }
    plan_print(stdout, &p, c, a->mem_limit);
    return 0;
}

/* This rank's exit record (ryzen-step reads them), then the status. */
static int leave(const struct env *e, int rank, const char *host, const struct outcome *o)
{
    struct rz_err err;
    if (health_exit_record(e->attempt_dir, rank, host, o->status, o->end_reason, o->message,
                           &err) != RZ_OK)
        fprintf(stderr, "ryzen-train: rank %d: exit record: %s\n", rank, err.msg);
    return o->status;
}

int main(int argc, char **argv)
{
    static struct env e;
    static struct args a;
    static struct outcome out;
    static struct cfg c;
    static struct rz_err err;
    env_read(&e);
    if (rz_hooks_load(&err) != RZ_OK) {
        fprintf(stderr, "ryzen-train: %s\n", err.msg);
        return rz_exit_code(err.status);
    }
    int me = e.launch.launcher_rank;
    const char *host = e.launch.nodename;
    int rc = parse_args(&a, argc, argv, me);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (isa_cap(&e, &err) != RZ_OK) {
        fprintf(stderr, "ryzen-train: %s\n", err.msg);
        return rz_exit_code(err.status);
    }
    if (a.reference) {
        cfg_write_reference(stdout);
        return 0;
    }
    enum rz_status st = cfg_load_with_overrides(&c, a.config, a.sets, a.n_sets, &err);
    int signo = 0;
    if (st == RZ_OK)
        st = health_signal_parse(c.health.stop_signal, &signo, &err);
    if (st != RZ_OK) {
        if (me == 0)
            fprintf(stderr, "ryzen-train: invalid configuration:\n%s\n", err.msg);
        fail(&out, rz_exit_code(st), err.msg);
        return leave(&e, me, host, &out);
    }
    if (a.plan)
        return print_plan(&a, &c);
    /* Before MPI_Init, so the stop signals are ours whatever the MPI library installs. */
    st = health_signals_install(signo, &err);
    /* Also before MPI_Init, which would abort without saying why: a task srun started without
     * a PMIx rank.  The same on every task, so rank 0 speaks (and, for --preflight, writes
     * health.json). */
    if (st == RZ_OK && (st = comm_check_launch_env(&e.launch, &err)) != RZ_OK) {
        if (me == 0) {
            fprintf(stderr, "ryzen-train: %s: %s\n", rz_status_name(st), err.msg);
            if (a.preflight)
                preflight_launch_failed(&a, &e, err.msg);
        }
        fail(&out, rz_exit_code(st), err.msg);
        return leave(&e, me, host, &out);
    }
    struct comm *comm = NULL;
    test_launch_hang(&a, me);
    if (st == RZ_OK)
        st = comm_init(&comm, &argc, &argv, &e.launch, strcmp(c.comm.allreduce, "ring") == 0,
                       &err);
    if (st == RZ_OK) /* a tuning only: on refusal, glibc's defaults */
        (void)rz_malloc_tune(comm_size(comm) > 1 ? (size_t)(c.comm.bucket_mb * 1048576.0) : 0);
    if (st == RZ_OK && !a.preflight)
        st = comm_check_launch(comm, &e.launch, &err);
    /* MPI is up: a failure from here is the rendezvous', whose missing peers may never leave
     * MPI_Init (MPI_Finalize would wait for them): the job is aborted below. */
    bool started = st == RZ_OK, unmet = false;
    if (st == RZ_OK)
        unmet = (st = start_rendezvous(&a, &c, comm, &e, &err)) != RZ_OK;
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-train: %s: %s\n", rz_status_name(st), err.msg);
        fail(&out, rz_exit_code(st), err.msg);
        if (started && a.preflight && comm_rank(comm) == 0)
            preflight_launch_failed(&a, &e, err.msg); /* health.json says why */
    } else if (a.preflight) {
        preflight(&a, &c, comm, &e, &out); /* reports a wrong launch itself, in health.json */
    } else {
        test_startup_delay();
        run(&a, &c, comm, &e, &out);
    }
    if (comm != NULL) {
        me = comm_rank(comm);
        host = comm_host(comm);
    }
    rc = leave(&e, me, host, &out);
    if (rc == RZ_EXIT_WATCHDOG || unmet)
        comm_abort(comm, rc); /* a peer may be wedged in a collective: do not wait for it */
    comm_finalize(comm);
    return rc;
}
