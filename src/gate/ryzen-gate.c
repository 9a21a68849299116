#include "config.h"

/* ryzen-gate: judge one phase job against its gates and write its reports.  A thin main over
 * gate/: parse the command line (getopt_long), read the environment once (SLURM_JOB_ID,
 * SLURM_CPUS_PER_TASK), load the config, gate_read, gate_evaluate, gate_doc_build,
 * gate_write_reports, print one line per criterion and the verdict.
 *
 *   ryzen-gate --config FILE [--set k=v]... --run-dir DIR [--baseline REPORT.json] [--job ID]
 *   ryzen-gate --config FILE [--set k=v]... --run-dir DIR --job ID --ended REASON --why TEXT
 *              [--status N]          a phase that ended without finishing training
 *   ryzen-gate --ladder RUN_ROOT     every phase and attempt under RUN_ROOT, the scaling model and
 *                                    its predictions: RUN_ROOT/ladder.{json,md,html}
 *   --csv                            also RUN_DIR/reports/<id>/steps.csv (one row per step), or
 *                                    RUN_ROOT/ladder.csv (one row per attempt)
 *
 * Exit codes (docs/exit-codes.md, docs/gates.md): 0 GO, 1 NO-GO, 2 HOLD, 64 bad usage, config or
 * malformed input, 74 I/O error.  It never submits or cancels jobs: ryzen-step acts on the
 * verdict. */

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "core/cli.h"
#include "core/hooks.h"
#include "core/status.h"
#include "gate/gate.h"
#include "ladder/ladder.h"

#define MAX_SETS 256

struct gate_args {
    const char *config, *run_dir;
    const char *sets[MAX_SETS];
    int n_sets;
    struct gate_opts opts;
    const char *ended;
    const char *ladder;
    bool csv;
};

static void usage(FILE *f)
{
    fputs("usage: ryzen-gate --config FILE [--set key=value]... --run-dir DIR\n"
          "                  [--baseline REPORT.json] [--job ID] [--csv]\n"
          "       ryzen-gate --config FILE [--set key=value]... --run-dir DIR --job ID\n"
          "                  --ended REASON --why TEXT [--status N] [--csv]\n"
          "       ryzen-gate --ladder RUN_ROOT [--csv]\n"
          "       ryzen-gate --help | --version\n"
          "Judges job ID (default $SLURM_JOB_ID, else the newest DIR/metrics/<id>/) against the\n"
          "config's gates and the baseline (default: the newest report of phase.previous beside\n"
          "DIR), and writes DIR/reports/<id>/report.{json,md,html} and gate.prom.\n"
          "--ended reports a phase that ended without finishing training, from whatever it left:\n"
          "REASON is health (preflight failed), give_up (restart budget spent), io (exit 74),\n"
          "no_progress (two attempts without a checkpoint), diverged (the loss guard stopped the\n"
          "run) or nothing_to_train (a rollback already at training.steps); the verdict is NO-GO,\n"
          "HOLD for nothing_to_train.  --status is the last exit status.\n"
          "--ladder reads every phase report and event under RUN_ROOT, fits a scaling model and\n"
          "predicts the rungs not run yet: RUN_ROOT/ladder.{json,md,html} (exit 0).\n"
          "--csv also writes DIR/reports/<id>/steps.csv (one row per step), or with --ladder\n"
          "RUN_ROOT/ladder.csv (one row per phase attempt): docs/gates.md, docs/ladder.md.\n"
          "Exit codes: 0 GO, 1 NO-GO, 2 HOLD, 64 bad usage, config or input, 74 I/O error.\n",
          f);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ryzen-gate: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see --help)\n", stderr);
    va_end(ap);
    return RZ_EXIT_USAGE;
}

static int parse_status(struct gate_args *a, const char *s)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 0 || v > 255)
        return usage_error("--status needs an exit status 0..255, got '%s'", s);
    a->opts.status = (int)v;
    return -1;
}

/* The mode's own requirements, after every option is known. */
static int check_args(struct gate_args *a)
{
    if (a->ladder != NULL)
        return a->config != NULL || a->run_dir != NULL || a->ended != NULL
                   ? usage_error("%s", "--ladder RUN_ROOT stands alone")
                   : -1;
    if (a->config == NULL || a->run_dir == NULL)
        return usage_error("%s", "--config and --run-dir are required");
    if (a->ended == NULL)
        return a->opts.why != NULL || a->opts.status >= 0
                   ? usage_error("%s", "--why and --status go with --ended")
                   : -1;
    if (!gate_end_parse(a->ended, &a->opts.ended))
        return usage_error("--ended '%s': one of health, give_up, io, no_progress, diverged, "
                           "nothing_to_train, config, nockpt", a->ended);
    if (a->opts.job == NULL || a->opts.why == NULL)
        return usage_error("%s", "--ended needs --job ID and --why TEXT");
    return -1;
}

/* -1: go on; otherwise the exit code (0 after --help or --version). */
static int parse_args(struct gate_args *a, int argc, char **argv)
{
    enum { O_CONFIG = 256, O_SET, O_RUN_DIR, O_BASELINE, O_JOB, O_ENDED, O_WHY, O_STATUS,
           O_VERSION, O_LADDER, O_CSV };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, O_CONFIG}, {"set", required_argument, NULL, O_SET},
        {"run-dir", required_argument, NULL, O_RUN_DIR},
        {"baseline", required_argument, NULL, O_BASELINE},
        {"job", required_argument, NULL, O_JOB}, {"ended", required_argument, NULL, O_ENDED},
        {"why", required_argument, NULL, O_WHY}, {"status", required_argument, NULL, O_STATUS},
        {"ladder", required_argument, NULL, O_LADDER}, {"csv", no_argument, NULL, O_CSV},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0}};
    a->opts.status = -1;
    opterr = 0;
    int o, rc = -1;
    while (rc < 0 && (o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (o) {
        case O_CONFIG: a->config = optarg; break;
        case O_RUN_DIR: a->run_dir = optarg; break;
        case O_BASELINE: a->opts.baseline = optarg; break;
        case O_JOB: a->opts.job = optarg; break;
        case O_ENDED: a->ended = optarg; break;
        case O_WHY: a->opts.why = optarg; break;
        case O_LADDER: a->ladder = optarg; break;
        case O_CSV: a->csv = true; break;
        case O_STATUS: rc = parse_status(a, optarg); break;
        case O_SET:
            if (a->n_sets == MAX_SETS)
                return usage_error("too many --set options (at most %d)", MAX_SETS);
            a->sets[a->n_sets++] = optarg;
            break;
        case 'h': usage(stdout); return 0;
        case O_VERSION: rz_cli_version(stdout, "ryzen-gate"); return 0;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    return check_args(a);
}

static void print_result(const struct gate_input *in, const struct gate_result *res,
                         const char *dir)
{
    for (int i = 0; i < GATE_N_CRIT; i++) {
        const struct gate_criterion *k = &res->crit[i];
        char m[32], g[32], n[32];
        printf("ryzen-gate: %-21s %-10s %12s %-9s (go %s %s, no-go %s %s)  %s\n", k->name,
               gate_status_name(k->status), gate_fmt_num(m, sizeof m, k->measured), k->unit,
               k->higher_is_better ? ">=" : "<=", gate_fmt_num(g, sizeof g, k->go),
               isnan(k->no_go) ? "" : k->higher_is_better ? "<" : ">",
               isnan(k->no_go) ? "none" : gate_fmt_num(n, sizeof n, k->no_go), k->note);
    }
    if (in->ended != GATE_END_NONE)
        printf("ryzen-gate: ended without finishing training: %s: %s\n",
               gate_end_name(in->ended), in->why);
    printf("ryzen-gate: verdict %s for %s job %s; planned action: %s%s%s (%s); reports in %s\n",
           gate_verdict_name(res->verdict), in->phase, in->job, res->action,
           res->action_phase[0] ? " " : "", res->action_phase, res->action_note, dir);
}

/* ryzen-gate --ladder RUN_ROOT: 0, or 64/74 with the reason. */
static int run_ladder(const char *root, bool csv)
{
    static struct ladder l;
    struct rz_err err;
    rz_err_clear(&err);
    enum rz_status st = ladder_read(&l, root, &err);
    if (st == RZ_OK)
        st = ladder_write(&l, &err);
    if (st == RZ_OK && csv)
        st = ladder_write_csv_file(&l, &err);
    if (st != RZ_OK) {
        fprintf(stderr, "ryzen-gate: %s\n", err.msg);
        ladder_free(&l);
        return rz_exit_code(st);
    }
    for (size_t i = 0; i < l.n_att; i++) {
        const struct ladder_attempt *a = &l.att[i];
        if (a->world == 0)
            printf("ryzen-gate: ladder: -   rank(s) %-28s job %-10s %-6s ended before training "
                   "(%s)\n", a->lineage, a->job, a->verdict, a->ended[0] ? a->ended : "unknown");
        else
            printf("ryzen-gate: ladder: %-3d rank(s) %-28s job %-10s %-6s %10.6g samples/s, "
                   "efficiency %.3g%s\n", a->world, a->lineage, a->job, a->verdict,
                   a->throughput, a->efficiency,
                   a->efficiency > 1.0 ? " (above 100%: suspect)" : "");
    }
    for (int i = 0; i < l.n_pred; i++)
        printf("ryzen-gate: ladder: %-3d rank(s) predicted %.6g samples/s (%.6g .. %.6g)\n",
               l.pred[i].world, l.pred[i].throughput, l.pred[i].lo, l.pred[i].hi);
    printf("ryzen-gate: ladder: model error %.1f%% over %d attempt(s); %s/ladder.{json,md,html%s}"
           "\n", 100 * l.fit.err_rel, l.fit.points, root, csv ? ",csv" : "");
    ladder_free(&l);
    return 0;
}

int main(int argc, char **argv)
{
    static struct rz_err hook_err;
    if (rz_hooks_load(&hook_err) != RZ_OK) {
        fprintf(stderr, "ryzen-gate: %s\n", hook_err.msg);
        return rz_exit_code(hook_err.status);
    }
    static struct gate_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc >= 0)
        return rc;
    if (a.ladder != NULL)
        return run_ladder(a.ladder, a.csv);
    a.opts.env_job_id = getenv("SLURM_JOB_ID");
    a.opts.cpus_per_rank = getenv("SLURM_CPUS_PER_TASK");
    static struct cfg c;
    static struct gate_input in;
    static struct gate_result res;
    static struct gate_doc doc;
    struct rz_err err;
    char dir[4096] = "", warn[RZ_ERR_MSG_MAX + 64] = "";
    rz_err_clear(&err);
    enum rz_status st = cfg_load_with_overrides(&c, a.config, a.sets, a.n_sets, &err);
    if (st == RZ_OK)
        st = gate_read(&in, &c, a.run_dir, &a.opts, &err);
    if (st == RZ_OK)
        st = gate_evaluate(&res, &in, &c, &err);
    if (st == RZ_OK) {
        gate_doc_build(&doc, &in, &res, &c);
        st = gate_write_reports(&doc, dir, sizeof dir, warn, sizeof warn, &err);
        if (st == RZ_OK && a.csv)
            st = gate_write_csv_file(&doc, &err);
    }
    if (warn[0] != '\0')
        fprintf(stderr, "ryzen-gate: warning: %s\n", warn);
    if (st == RZ_OK) {
        print_result(&in, &res, dir);
        rc = (int)res.verdict;
    } else {
        fprintf(stderr, "ryzen-gate: %s\n", err.msg);
        rc = rz_exit_code(st);
    }
    fflush(stdout);
    gate_result_free(&res);
    gate_input_free(&in);
    return rc;
}
