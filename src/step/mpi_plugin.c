/* mpi_plugin.c: which srun --mpi plugin the training steps use.  RYZEN_SRUN_MPI when the
 * operator set it; else the first plugin the build's MPI starts under (comm_srun_plugins:
 * pmix then pmi2 for Open MPI, pmi2 for MPICH) that this Slurm lists in `srun --mpi=list`;
 * else that MPI's first, and the trainer's launch check names the fix.
 * Deliberately not here: MpiDefault in slurm.conf (a site's default is for its own MPI, and an
 * MPICH build under pmix starts every task alone), and any probe of the plugin itself (the
 * preflight's launch check is that probe). */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "comm/comm.h"
#include "core/util.h"
#include "step/step_internal.h"

/* Whether a line of `srun --mpi=list` names `plugin`: "\tpmix" (Slurm 22.05), "srun: pmix"
 * (older Slurm); never "specific pmix plugin versions available: pmix_v4". */
static bool line_names(const char *line, size_t n, const char *plugin)
{
    if (n >= 6 && strncmp(line, "srun: ", 6) == 0) {
        line += 6;
        n -= 6;
    }
    while (n > 0 && isspace((unsigned char)line[0])) {
        line++;
        n--;
    }
    while (n > 0 && isspace((unsigned char)line[n - 1]))
        n--;
    return n == strlen(plugin) && strncmp(line, plugin, n) == 0;
}

static bool listed(const char *list, const char *plugin)
{
    for (const char *p = list; p != NULL && *p != '\0';) {
        size_t n = strcspn(p, "\n");
        if (line_names(p, n, plugin))
            return true;
        p += n + (p[n] == '\n');
    }
    return false;
}

void step_mpi_choose(char *out, size_t len, char *why, size_t why_len, const char *override,
                     const char *wanted, const char *list)
{
    if (override != NULL && override[0] != '\0') {
        rz_fmt(out, len, "%s", override);
        rz_fmt(why, why_len, "RYZEN_SRUN_MPI=%s", override);
        return;
    }
    char name[64];
    for (const char *p = wanted; *p != '\0';) {
        size_t n = strcspn(p, ",");
        rz_fmt(name, sizeof name, "%.*s", (int)n, p);
        if (listed(list, name)) {
            rz_fmt(out, len, "%s", name);
            rz_fmt(why, why_len, "the first of %s (%s) that srun --mpi=list offers", wanted,
                   comm_mpi_name());
            return;
        }
        p += n + (p[n] == ',');
    }
    rz_fmt(out, len, "%.*s", (int)strcspn(wanted, ","), wanted);
    rz_fmt(why, why_len, "srun --mpi=list offers none of %s (%s); trying the first", wanted,
           comm_mpi_name());
}

void step_mpi_resolve(struct wrapper *w)
{
    static char list[4096];
    struct rz_err err;
    char why[512], msg[700];
    list[0] = '\0';
    const char *argv[] = {"srun", "--mpi=list", NULL};
    if (w->env->srun_mpi[0] == '\0' && step_env_in_slurm(w->env) &&
        w->r->run(w->r, argv, list, sizeof list, &err) != 0)
        list[0] = '\0';
    step_mpi_choose(w->srun_mpi, sizeof w->srun_mpi, why, sizeof why, w->env->srun_mpi,
                    comm_srun_plugins(), list);
    if (w->env->srun_mpi[0] != '\0')
        return; /* the operator's choice: nothing to report */
    rz_fmt(msg, sizeof msg, "srun --mpi=%s: %s", w->srun_mpi, why);
    struct event_kv kv[] = {{"plugin", w->srun_mpi, 0}, {"mpi", comm_mpi_name(), 0}};
    step_event(&w->ev, "srun_mpi", msg, kv, 2);
}
