/* comm_launch.c: what the launcher told this process, and whether MPI can start from it (see
 * comm.h): the environment read once (comm_launch_parse), the checks before and after MPI_Init,
 * and which MPI this build is and which srun --mpi plugins it starts under.
 * Deliberately not here: starting MPI (comm.c) and the start-up rendezvous (comm_start.c). */
#include "config.h"

#include "comm/comm.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/util.h"

/* What both launch checks tell the operator to do ("%s": the build's plugin, comm_srun_plugin). */
#define LAUNCH_FIX "Launch with `srun --mpi=%s` (check `srun --mpi=list` and MpiDefault in " \
                   "slurm.conf)"

/* ---- which MPI this is ---------------------------------------------------------------------
 * Read from the mpi.h this file was compiled against, so it is the library the program links
 * (configure --with-mpi), never a guess from the environment. */

const char *comm_mpi_name(void)
{
#if defined(OMPI_MAJOR_VERSION)
    return "Open MPI";
#elif defined(MPICH_VERSION)
    return "MPICH"; /* and its derivatives: Cray MPICH, Intel MPI, MVAPICH */
#else
    return "MPI";
#endif
}

const char *comm_srun_plugins(void)
{
#if defined(MPICH_VERSION)
    /* MPICH speaks PMI-1/PMI-2 unless it was configured as a PMIx client (--with-pmi=pmix, or
     * --with-pmix), which its version string (MPI-3: callable before MPI_Init) records.  Under
     * srun --mpi=pmix a PMI-2 MPICH starts every task as a world of one (seen here: 2 tasks,
     * each "rank 0 of 1"). */
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(v, &len) == MPI_SUCCESS &&
        (strstr(v, "--with-pmi=pmix") != NULL || strstr(v, "--with-pmix") != NULL))
        return "pmix";
    return "pmi2";
#else
    /* Open MPI 4 is a PMIx client; one built with Slurm's PMI-2 (--with-pmi) starts under pmi2 */
    return "pmix,pmi2";
#endif
}

void comm_srun_plugin(char *out, size_t len)
{
    const char *all = comm_srun_plugins();
    size_t n = strcspn(all, ",");
    snprintf(out, len, "%.*s", (int)n, all);
}

static void env_copy(char *out, size_t len, char *const *envp, const char *name)
{
    const char *v = rz_env_value(envp, name);
    snprintf(out, len, "%s", v != NULL ? v : "");
}

void comm_launch_parse(struct comm_launch *l, char *const *envp)
{
    memset(l, 0, sizeof *l);
    env_copy(l->step_id, sizeof l->step_id, envp, "SLURM_STEP_ID");
    env_copy(l->mpi_type, sizeof l->mpi_type, envp, "SLURM_MPI_TYPE");
    env_copy(l->procid, sizeof l->procid, envp, "SLURM_PROCID");
    env_copy(l->ntasks, sizeof l->ntasks, envp, "SLURM_NTASKS");
    env_copy(l->nodename, sizeof l->nodename, envp, "SLURMD_NODENAME");
    env_copy(l->job_id, sizeof l->job_id, envp, "SLURM_JOB_ID");
    env_copy(l->restart_count, sizeof l->restart_count, envp, "SLURM_RESTART_COUNT");
    const char *ompi = rz_env_value(envp, "OMPI_COMM_WORLD_RANK");
    const char *pmix = rz_env_value(envp, "PMIX_RANK");
    const char *pmi = rz_env_value(envp, "PMI_RANK"); /* srun --mpi=pmi2, MPICH's Hydra */
    l->has_pmix_rank = ompi != NULL || pmix != NULL;
    l->has_pmi_rank = pmi != NULL;
    const char *rank = ompi != NULL ? ompi : pmix != NULL ? pmix : pmi != NULL ? pmi : l->procid;
    l->launcher_rank = rank != NULL && rank[0] != '\0' ? atoi(rank) : 0;
}

enum rz_status comm_check_launch_env_as(const struct comm_launch *l, const char *plugin,
                                        struct rz_err *err)
{
    if (l->step_id[0] == '\0')
        return RZ_OK; /* not an srun task: mpirun's ranks, a batch script, a plain process */
    bool pmi2 = strcmp(plugin, "pmi2") == 0;
    if (pmi2 ? l->has_pmi_rank : l->has_pmix_rank)
        return RZ_OK;
    return rz_fail(err, RZ_EHEALTH,
                   "launch check on task %s of step %s: srun started it with --mpi=%s, so it "
                   "has no %s rank (%s is unset) and %s cannot start%s. " LAUNCH_FIX,
                   l->procid[0] ? l->procid : "?", l->step_id,
                   l->mpi_type[0] ? l->mpi_type : "none", pmi2 ? "PMI-2" : "PMIx",
                   pmi2 ? "PMI_RANK" : "PMIX_RANK", pmi2 ? comm_mpi_name() : "MPI",
                   pmi2 ? " as one job (each task would be a world of its own)" : "", plugin);
}

enum rz_status comm_check_launch_env(const struct comm_launch *l, struct rz_err *err)
{
    char plugin[16];
    comm_srun_plugin(plugin, sizeof plugin);
    return comm_check_launch_env_as(l, plugin, err);
}

enum rz_status comm_check_launch(const struct comm *c, const struct comm_launch *l,
                                 struct rz_err *err)
{
    if (l == NULL || l->ntasks[0] == '\0' || l->step_id[0] == '\0')
        return RZ_OK; /* not a Slurm job step: mpirun or a plain process */
    long want = strtol(l->ntasks, NULL, 10);
    if (want == comm_size(c))
        return RZ_OK;
    char plugin[16];
    comm_srun_plugin(plugin, sizeof plugin);
    return rz_fail(err, RZ_EHEALTH,
                   "launch check on rank %d (%s): MPI world size is %d but SLURM_NTASKS is %ld; "
                   "the ranks did not join one MPI job, so each would train alone. " LAUNCH_FIX,
                   comm_rank(c), comm_host(c), comm_size(c), want, plugin);
}
