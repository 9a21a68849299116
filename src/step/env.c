/* env.c: what ryzen-step reads from its environment, read once by main (see step.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cli.h"
#include "core/util.h"
#include "step/step_internal.h"

static void copy(char *out, size_t len, char *const *envp, const char *name, const char *fallback)
{
    const char *v = rz_env_value(envp, name);
    rz_fmt(out, len, "%s", v != NULL && v[0] != '\0' ? v : fallback);
}

static long number(char *const *envp, const char *name, long fallback)
{
    const char *v = rz_env_value(envp, name);
    if (v == NULL || v[0] == '\0')
        return fallback;
    char *end = NULL;
    long x = strtol(v, &end, 10);
    return end != v && *end == '\0' ? x : fallback;
}

static void self_dir(char *out, size_t len)
{
    char self[STEP_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    out[0] = '\0';
    if (n <= 0)
        return;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL) {
        *slash = '\0';
        rz_fmt(out, len, "%s", self);
    }
}

void step_env_parse(struct step_env *e, char *const *envp)
{
    memset(e, 0, sizeof *e);
    copy(e->job_id, sizeof e->job_id, envp, "SLURM_JOB_ID", "local");
    copy(e->array_job_id, sizeof e->array_job_id, envp, "SLURM_ARRAY_JOB_ID", "");
    copy(e->array_task_id, sizeof e->array_task_id, envp, "SLURM_ARRAY_TASK_ID", "");
    if (e->array_job_id[0] != '\0' && e->array_task_id[0] != '\0')
        rz_fmt(e->display_id, sizeof e->display_id, "%s_%s", e->array_job_id, e->array_task_id);
    else
        rz_fmt(e->display_id, sizeof e->display_id, "%s", e->job_id);
    e->restart_count = number(envp, "SLURM_RESTART_COUNT", 0);
    e->ntasks = number(envp, "SLURM_NTASKS", 1);
    e->nnodes = number(envp, "SLURM_NNODES", 1);
    /* "4", or "4(x2)" in some Slurm versions: the leading number */
    const char *tpn = rz_env_value(envp, "SLURM_NTASKS_PER_NODE");
    e->ntasks_per_node = tpn != NULL ? strtol(tpn, NULL, 10) : 0;
    e->cpus_per_task = number(envp, "SLURM_CPUS_PER_TASK", 0);
    e->omp_threads = number(envp, "OMP_NUM_THREADS", 0);
    e->mem_per_node_mb = number(envp, "SLURM_MEM_PER_NODE", 0);
    e->mem_per_cpu_mb = number(envp, "SLURM_MEM_PER_CPU", 0);
    const char *dir = rz_env_value(envp, "SLURM_SUBMIT_DIR");
    if (dir != NULL && dir[0] != '\0')
        rz_fmt(e->submit_dir, sizeof e->submit_dir, "%s", dir);
    else if (getcwd(e->submit_dir, sizeof e->submit_dir) == NULL)
        rz_fmt(e->submit_dir, sizeof e->submit_dir, ".");
    copy(e->run_root, sizeof e->run_root, envp, "RYZEN_RUN_ROOT", "");
    copy(e->train, sizeof e->train, envp, "RYZEN_TRAIN", "");
    copy(e->gate, sizeof e->gate, envp, "RYZEN_GATE", "");
    copy(e->config_dir, sizeof e->config_dir, envp, "RYZEN_CONFIG_DIR", "");
    copy(e->sbatch_dir, sizeof e->sbatch_dir, envp, "RYZEN_SBATCH_DIR", "");
    copy(e->srun_mpi, sizeof e->srun_mpi, envp, "RYZEN_SRUN_MPI", "");
    copy(e->pmix_fence, sizeof e->pmix_fence, envp, "SLURM_PMIX_FENCE", "");
    copy(e->cpu_bind, sizeof e->cpu_bind, envp, "RYZEN_CPU_BIND", "cores");
    copy(e->sbatch_signal, sizeof e->sbatch_signal, envp, "SBATCH_SIGNAL", "");
    copy(e->slurm_json, sizeof e->slurm_json, envp, "RYZEN_SLURM_JSON", "");
    self_dir(e->self_dir, sizeof e->self_dir);
}

bool step_env_in_slurm(const struct step_env *e) { return strcmp(e->job_id, "local") != 0; }

const char *step_env_pmix_fence(const struct step_env *e, const char *plugin)
{
    if (plugin == NULL || strncmp(plugin, "pmix", 4) != 0 || e->pmix_fence[0] != '\0')
        return NULL;
    return "SLURM_PMIX_FENCE=ring";
}

/* A program of the suite: OVERRIDE (RYZEN_TRAIN, RYZEN_GATE) when set, else NAME beside
 * ryzen-step (SELF_DIR) when it is there, else NAME on PATH. */
void step_find_program(char *out, size_t len, const char *override, const char *self_dir,
                       const char *name)
{
    if (override != NULL && override[0] != '\0') {
        rz_fmt(out, len, "%s", override);
        return;
    }
    if (self_dir != NULL && self_dir[0] != '\0') {
        rz_fmt(out, len, "%s/%s", self_dir, name);
        if (access(out, X_OK) == 0)
            return;
    }
    rz_fmt(out, len, "%s", name);
}
