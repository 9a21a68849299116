#include "config.h"

/* ryzen-gate: judge one phase job against its gates and write its reports.  A thin main over
 * gate/: parse the command line, load the config, gate_read, gate_evaluate, gate_write_reports,
 * print one line per criterion and the verdict.  Exit codes (docs/exit-codes.md, docs/gates.md):
 * 0 GO, 1 NO-GO, 2 HOLD, 64 bad usage, config or malformed input, 74 I/O error.  It never submits
 * or cancels jobs: ryzen-step acts on the verdict. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "core/cli.h"
#include "core/hooks.h"
#include "core/status.h"
#include "gate/gate.h"

#define MAX_SETS 256

struct gate_args {
    const char *config, *run_dir, *baseline, *job;
    const char *sets[MAX_SETS];
    int n_sets;
};

static void usage(FILE *f)
{
    fputs("usage: ryzen-gate --config FILE [--set key=value]... --run-dir DIR\n"
          "                  [--baseline REPORT.json] [--job ID]\n"
          "Judges job ID (default $SLURM_JOB_ID, else the newest DIR/metrics/<id>/) against the\n"
          "config's gates and the baseline (default: the newest report of phase.previous beside\n"
          "DIR), and writes DIR/reports/<id>/report.{json,md,html} and gate.prom.\n"
          "Exit codes: 0 GO, 1 NO-GO, 2 HOLD, 64 bad usage, config or input, 74 I/O error.\n",
          f);
}

static int parse_args(struct gate_args *a, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        bool val = i + 1 < argc;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (val && strcmp(o, "--config") == 0) {
            a->config = argv[++i];
        } else if (val && strcmp(o, "--run-dir") == 0) {
            a->run_dir = argv[++i];
        } else if (val && strcmp(o, "--baseline") == 0) {
            a->baseline = argv[++i];
        } else if (val && strcmp(o, "--job") == 0) {
            a->job = argv[++i];
        } else if (val && strcmp(o, "--set") == 0 && a->n_sets < MAX_SETS) {
            a->sets[a->n_sets++] = argv[++i];
        } else {
            fprintf(stderr, "ryzen-gate: unexpected argument '%s'\n", o);
            usage(stderr);
            return RZ_EXIT_USAGE;
        }
    }
    if (a->config == NULL || a->run_dir == NULL) {
        fprintf(stderr, "ryzen-gate: --config and --run-dir are required\n");
        usage(stderr);
        return RZ_EXIT_USAGE;
    }
    return -1;
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
    printf("ryzen-gate: verdict %s for %s job %s; planned action: %s%s%s (%s); reports in %s\n",
           gate_verdict_name(res->verdict), in->phase, in->job, res->action,
           res->action_phase[0] ? " " : "", res->action_phase, res->action_note, dir);
}

int main(int argc, char **argv)
{
    rz_hooks_load();
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        rz_cli_version(stdout, "ryzen-gate");
        return 0;
    }
    struct gate_args a = {0};
    int rc = parse_args(&a, argc, argv);
    if (rc >= 0)
        return rc;
    static struct cfg c;
    static struct gate_input in;
    static struct gate_result res;
    struct rz_err err;
    char dir[4096] = "", warn[RZ_ERR_MSG_MAX + 64] = "";
    rz_err_clear(&err);
    enum rz_status st = cfg_load_with_overrides(&c, a.config, a.sets, a.n_sets, &err);
    if (st == RZ_OK)
        st = gate_read(&in, &c, a.run_dir, a.job, a.baseline, &err);
    if (st == RZ_OK)
        st = gate_evaluate(&res, &in, &c, &err);
    if (st == RZ_OK)
        st = gate_write_reports(&in, &res, &c, dir, sizeof dir, warn, sizeof warn, &err);
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
