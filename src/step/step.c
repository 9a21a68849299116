/* step.c: environment, events, restart budget, exit-status policy and process handling of
 * ryzen-step (see step.h).  No shell is ever involved: processes start from argv arrays with
 * posix_spawnp.  Not here: the sequence of the job step itself (ryzen-step.c). */
#include "config.h"

#include "step/step.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "core/json.h"
#include "core/util.h"

extern char **environ;

/* ---- environment ----------------------------------------------------------------------------- */

static long env_long(const char *name, long fallback)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        return fallback;
    char *end = NULL;
    long x = strtol(v, &end, 10);
    return end != v && *end == '\0' ? x : fallback;
}

void step_env_read(struct step_env *e)
{
    memset(e, 0, sizeof *e);
    const char *job = getenv("SLURM_JOB_ID");
    snprintf(e->job_id, sizeof e->job_id, "%s", job != NULL && job[0] ? job : "local");
    e->restart_count = env_long("SLURM_RESTART_COUNT", 0);
    e->ntasks = env_long("SLURM_NTASKS", 1);
    e->nnodes = env_long("SLURM_NNODES", 1);
    const char *dir = getenv("SLURM_SUBMIT_DIR");
    if (dir != NULL && dir[0] != '\0')
        snprintf(e->submit_dir, sizeof e->submit_dir, "%s", dir);
    else if (getcwd(e->submit_dir, sizeof e->submit_dir) == NULL)
        snprintf(e->submit_dir, sizeof e->submit_dir, ".");
}

bool step_run_dir(char *out, size_t len, const struct step_env *e, const char *config,
                  char *phase, size_t phase_len)
{
    if (!cfg_phase_name(config, phase, phase_len))
        return false;
    const char *root = getenv("RYZEN_RUN_ROOT");
    int w = root != NULL && root[0] ? snprintf(out, len, "%s/%s", root, phase)
                                    : snprintf(out, len, "%s/runs/%s", e->submit_dir, phase);
    if (w <= 0 || (size_t)w >= len)
        return false;
    /* A rollback starts a new lineage of this phase from another phase's checkpoint: it gets
     * a directory of its own, so its checkpoints never replace the first run's. */
    const char *rollback_of = getenv("RYZEN_ROLLBACK_OF");
    if (rollback_of != NULL && rollback_of[0] != '\0')
        w += snprintf(out + w, len - (size_t)w, "/rollback-%s", rollback_of);
    return (size_t)w < len;
}

/* ---- events ---------------------------------------------------------------------------------- */

struct step_events {
    FILE *f;
    FILE *echo;
    char path[4200];
    struct step_env env;
    char phase[256];
};

enum rz_status step_events_open(struct step_events **out, const char *run_dir,
                                const struct step_env *env, const char *phase, FILE *echo,
                                struct rz_err *err)
{
    *out = NULL;
    enum rz_status st = rz_mkdirs(run_dir, err);
    if (st != RZ_OK)
        return st;
    struct step_events *ev = calloc(1, sizeof *ev);
    if (ev == NULL)
        return rz_fail(err, RZ_ENOMEM, "events: out of memory");
    snprintf(ev->path, sizeof ev->path, "%s/events.jsonl", run_dir);
    ev->f = fopen(ev->path, "a");
    if (ev->f == NULL) {
        st = rz_fail(err, RZ_EIO, "events: open '%s': %s", ev->path, strerror(errno));
        free(ev);
        return st;
    }
    ev->echo = echo;
    ev->env = *env;
    snprintf(ev->phase, sizeof ev->phase, "%s", phase);
    *out = ev;
    return RZ_OK;
}

const char *step_events_path(const struct step_events *ev) { return ev->path; }

void step_event(struct step_events *ev, const char *event, const char *message,
                const struct step_kv *kv, size_t n)
{
    char stamp[32];
    rz_utc_iso8601(stamp, sizeof stamp);
    if (ev->echo != NULL) {
        fprintf(ev->echo, "ryzen-step: %s: %s\n", event, message);
        fflush(ev->echo);
    }
    struct rz_json j;
    rz_json_init(&j, ev->f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "time", stamp);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    rz_json_kv_fixed(&j, "t", (double)now.tv_sec + 1e-9 * (double)now.tv_nsec, 3);
    rz_json_kv_string(&j, "job", ev->env.job_id);
    rz_json_kv_int(&j, "restart", ev->env.restart_count);
    rz_json_kv_string(&j, "phase", ev->phase);
    rz_json_kv_string(&j, "event", event);
    rz_json_kv_string(&j, "message", message);
    for (size_t i = 0; i < n; i++) {
        if (kv[i].str != NULL)
            rz_json_kv_string(&j, kv[i].key, kv[i].str);
        else
            rz_json_kv_double(&j, kv[i].key, kv[i].num);
    }
    rz_json_object_end(&j);
    fputc('\n', ev->f);
    fflush(ev->f);
    fsync(fileno(ev->f)); /* the log of decisions must survive the requeue that follows */
}

void step_events_close(struct step_events *ev)
{
    if (ev == NULL)
        return;
    if (ev->f != NULL)
        fclose(ev->f);
    free(ev);
}

long step_count_failures(const char *events_path, const char *job_id)
{
    FILE *f = fopen(events_path, "r");
    if (f == NULL)
        return 0;
    char line[8192], job[128];
    snprintf(job, sizeof job, "\"job\":\"%s\"", job_id);
    long n = 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (strstr(line, job) != NULL && strstr(line, "\"event\":\"requeue\"") != NULL &&
            strstr(line, "\"reason\":\"failure\"") != NULL)
            n++;
    fclose(f);
    return n;
}

/* ---- policy ---------------------------------------------------------------------------------- */

enum step_action step_decide(int status, long failures_so_far, long max_restarts)
{
    switch (status) {
    case RZ_EXIT_OK: return STEP_DONE;
    case RZ_EXIT_REQUEUE: return STEP_REQUEUE_SIGNAL;
    case RZ_EXIT_USAGE:
    case RZ_EXIT_NOCKPT:
    case RZ_EXIT_HEALTH: return STEP_NO_REQUEUE;
    default:
        return failures_so_far < max_restarts ? STEP_REQUEUE_FAILURE : STEP_GIVE_UP;
    }
}

enum step_preflight step_preflight_classify(int status, bool answered, int attempt)
{
    switch (status) {
    case RZ_EXIT_OK: return STEP_PREFLIGHT_PASSED;
    case RZ_EXIT_USAGE:
    case RZ_EXIT_NOCKPT:
    case RZ_EXIT_HEALTH: return STEP_PREFLIGHT_NO_GO;
    case RZ_EXIT_REQUEUE: return STEP_PREFLIGHT_DECIDE;
    default:
        if (answered)
            return STEP_PREFLIGHT_NO_GO;
        return attempt < STEP_PREFLIGHT_TRIES ? STEP_PREFLIGHT_RETRY : STEP_PREFLIGHT_DECIDE;
    }
}

const char *step_action_name(enum step_action a)
{
    switch (a) {
    case STEP_DONE: return "done";
    case STEP_REQUEUE_SIGNAL: return "requeue (signal)";
    case STEP_REQUEUE_FAILURE: return "requeue (failure)";
    case STEP_GIVE_UP: return "give up";
    case STEP_NO_REQUEUE: return "no requeue";
    }
    return "?";
}

/* ---- argv ------------------------------------------------------------------------------------ */

enum rz_status step_argv_add(struct step_argv *a, const char *arg, struct rz_err *err)
{
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        char **nv = realloc(a->argv, cap * sizeof *nv);
        if (nv == NULL)
            return rz_fail(err, RZ_ENOMEM, "argv: out of memory");
        a->argv = nv;
        a->cap = cap;
    }
    a->argv[a->n] = strdup(arg);
    if (a->argv[a->n] == NULL)
        return rz_fail(err, RZ_ENOMEM, "argv: out of memory");
    a->argv[++a->n] = NULL;
    return RZ_OK;
}

void step_argv_free(struct step_argv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->argv[i]);
    free(a->argv);
    memset(a, 0, sizeof *a);
}

void step_argv_format(const struct step_argv *a, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < a->n && used < len; i++) {
        bool quote = strpbrk(a->argv[i], " \t'\"") != NULL || a->argv[i][0] == '\0';
        used += (size_t)snprintf(out + used, len - used, quote ? "%s'%s'" : "%s%s",
                                 i ? " " : "", a->argv[i]);
    }
}

/* ---- processes --------------------------------------------------------------------------------- */

static volatile sig_atomic_t signals_seen;

static void on_forward_signal(int signo)
{
    (void)signo;
    signals_seen++;
}

enum rz_status step_forward_signals(struct rz_err *err)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: waitpid returns EINTR so the signal is forwarded at once */
    if (sigaction(SIGUSR2, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
        return rz_fail(err, RZ_EHEALTH, "install signal handlers: %s", strerror(errno));
    return RZ_OK;
}

int step_signals_seen(void) { return (int)signals_seen; }

enum rz_status step_spawn(const struct step_argv *a, pid_t *pid, struct rz_err *err)
{
    int rc = posix_spawnp(pid, a->argv[0], NULL, NULL, a->argv, environ);
    if (rc != 0)
        return rz_fail(err, RZ_EHEALTH, "start '%s': %s", a->argv[0], strerror(rc));
    return RZ_OK;
}

int step_wait(pid_t pid, FILE *log)
{
    int forwarded = 0, status = 0;
    for (;;) {
        pid_t got = waitpid(pid, &status, 0);
        int seen = (int)signals_seen;
        while (forwarded < seen) {
            /* USR2, never TERM: srun turns TERM into SIGKILL of the tasks, which would lose
             * the work since the last checkpoint. */
            kill(pid, SIGUSR2);
            forwarded++;
            if (log != NULL) {
                fprintf(log, "ryzen-step: signal: forwarded SIGUSR2 to the job step (pid %ld)\n",
                        (long)pid);
                fflush(log);
            }
        }
        if (got == pid)
            break;
        if (got < 0 && errno != EINTR)
            return -1;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

int step_run(const struct step_argv *a, struct rz_err *err)
{
    pid_t pid;
    if (step_spawn(a, &pid, err) != RZ_OK)
        return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int step_run_capture(const struct step_argv *a, char *out, size_t len, struct rz_err *err)
{
    int fds[2];
    out[0] = '\0';
    if (pipe(fds) != 0) {
        rz_fail(err, RZ_EIO, "pipe for '%s': %s", a->argv[0], strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    int rc = posix_spawnp(&pid, a->argv[0], &fa, NULL, a->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        rz_fail(err, RZ_EHEALTH, "start '%s': %s", a->argv[0], strerror(rc));
        return -1;
    }
    size_t used = 0;
    for (;;) {
        char buf[512];
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size_t keep = (size_t)got < len - 1 - used ? (size_t)got : len - 1 - used;
        memcpy(out + used, buf, keep);
        used += keep;
    }
    out[used] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
