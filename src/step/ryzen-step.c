/* ryzen-step: the job-step wrapper every sbatch template execs.  A thin main: install the signal
 * flags first (no signal at any moment may kill the job by its default action), read the
 * arguments and the environment once, and hand over to step_main (src/step/). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/hooks.h"
#include "core/status.h"
#include "step/step.h"

extern char **environ;

static void usage(FILE *f)
{
    fputs("usage: ryzen-step --config PHASE|FILE [--set [PHASE:]key=value]...\n"
          "                  [--lineage JOB] [--rollback-of JOB --resume-from CHECKPOINT]\n"
          "The job-step wrapper run by the sbatch templates (sbatch/*.sh).  It validates the\n"
          "config and its inputs, claims the run directory, runs the preflight on every rank,\n"
          "launches ryzen-train with srun, forwards the stop signal, classifies how the attempt\n"
          "ended, and requeues, lets Slurm requeue, holds, or ends it with a report.  After a\n"
          "finished training it runs ryzen-gate and promotes (GO) or rolls back (NO-GO), giving\n"
          "the next job this job's own sbatch flags.\n"
          "  --config NAME    the phase's config: a file, or a name looked up in\n"
          "                   RYZEN_CONFIG_DIR, the template's ../configs, SUBMIT_DIR/configs,\n"
          "                   and the installed configs\n"
          "  --set k=v        config override; PHASE:k=v applies to that phase only; every\n"
          "                   override travels along the chain\n"
          "  --lineage JOB    the chain's first job (set by promotion and rollback)\n"
          "  --rollback-of JOB, --resume-from PATH   set by a rollback\n"
          "Environment: RYZEN_RUN_ROOT (default $SLURM_SUBMIT_DIR/runs), RYZEN_TRAIN,\n"
          "RYZEN_GATE (default: next to ryzen-step, else PATH), RYZEN_SRUN_MPI (default: of\n"
          "the plugins the build's MPI starts under, pmix before pmi2, the first that\n"
          "`srun --mpi=list` offers), RYZEN_CONFIG_DIR, RYZEN_SBATCH_DIR (default: the\n"
          "running template's directory).\n"
          "Its sruns with --mpi=pmix get SLURM_PMIX_FENCE=ring unless the job sets it.\n"
          "RYZEN_SLURM_JSON=0 reads Slurm's text only (default: squeue/sinfo --json where\n"
          "Slurm 22.05 or later has it; the job output says which).\n"
          "Exit: 0 GO or promoted, 1 NO-GO, 2 HOLD, 64 bad config or input, 65 bad checkpoint,\n"
          "70 health, 74 I/O, 75 requeued, 76 gave up after crashes or hangs\n"
          "(docs/exit-codes.md).\n", f);
}

/* 0, -1 for --help/--version (done), or RZ_EXIT_USAGE. */
static int parse_args(struct step_args *a, int argc, char **argv)
{
    enum { O_SET = 1, O_LINEAGE, O_ROLLBACK_OF, O_RESUME_FROM, O_VERSION };
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, O_SET},
        {"lineage", required_argument, NULL, O_LINEAGE},
        {"rollback-of", required_argument, NULL, O_ROLLBACK_OF},
        {"resume-from", required_argument, NULL, O_RESUME_FROM},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1;) {
        switch (c) {
        case 'c': a->config = optarg; break;
        case O_SET:
            if (a->n_sets == STEP_MAX_SETS) {
                fprintf(stderr, "ryzen-step: too many --set (at most %d)\n", STEP_MAX_SETS);
                return RZ_EXIT_USAGE;
            }
            a->sets[a->n_sets++] = optarg;
            break;
        case O_LINEAGE: a->lineage = optarg; break;
        case O_ROLLBACK_OF: a->rollback_of = optarg; break;
        case O_RESUME_FROM: a->resume_from = optarg; break;
        case 'h': usage(stdout); return -1;
        case O_VERSION: rz_cli_version(stdout, "ryzen-step"); return -1;
        default:
            fprintf(stderr, "ryzen-step: %s '%s' (template arguments must be --set key=value "
                    "overrides; see --help)\n", optopt ? "this option needs a value:"
                    : "unknown option", argv[optind - 1]);
            return RZ_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ryzen-step: unexpected argument '%s' (template arguments must be --set "
                "key=value overrides)\n", argv[optind]);
        return RZ_EXIT_USAGE;
    }
    if (a->config == NULL) {
        fprintf(stderr, "ryzen-step: --config is required (see --help)\n");
        return RZ_EXIT_USAGE;
    }
    if ((a->rollback_of == NULL) != (a->resume_from == NULL)) {
        fprintf(stderr, "ryzen-step: --rollback-of and --resume-from go together\n");
        return RZ_EXIT_USAGE;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct rz_err err;
    if (step_signals_install(&err) != RZ_OK) /* first: nothing may die of a stop signal */
        fprintf(stderr, "ryzen-step: %s\n", err.msg);
    if (rz_hooks_load(&err) != RZ_OK) {
        fprintf(stderr, "ryzen-step: %s\n", err.msg);
        return rz_exit_code(err.status);
    }
    if (argc > 1 && strcmp(argv[1], "--probe-peers") == 0) /* one node's row (probe.c) */
        return step_probe_main(argc - 2, (const char *const *)(argv + 2),
                               getenv("SLURMD_NODENAME"), stdout, stderr);
    static struct step_args args;
    int rc = parse_args(&args, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    static struct step_env env;
    step_env_parse(&env, environ);
    return step_main(&args, &env, step_runner_posix(), stdout);
}
