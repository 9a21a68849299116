/* proc.c: the real command runner (posix_spawnp, waitpid) and the wrapper's signal flags (see
 * step.h).  Nothing here decides anything. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "step/step_internal.h"

extern char **environ;

/* ---- signals ----------------------------------------------------------------------------------- */

static volatile sig_atomic_t signals_count, signals_last;

static void on_signal(int signo)
{
    signals_count++;
    signals_last = signo;
}

enum rz_status step_signals_install(struct rz_err *err)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: waitpid returns EINTR, so a signal is forwarded at once */
    const int sigs[] = {SIGUSR1, SIGUSR2, SIGTERM};
    for (size_t i = 0; i < RZ_ARRAY_LEN(sigs); i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return rz_fail(err, RZ_EHEALTH, "install signal handlers: %s", strerror(errno));
    return RZ_OK;
}

int step_signals_count(void) { return (int)signals_count; }
int step_signals_last(void) { return (int)signals_last; }
void step_signals_note(int signo) { on_signal(signo); }

/* ---- the posix runner ----------------------------------------------------------------------------- */

static int exit_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

static int reap(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return exit_status(status);
}

static void read_all(int fd, char *out, size_t len)
{
    size_t used = 0;
    for (;;) {
        char buf[512];
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size_t room = len - 1 - used, keep = (size_t)got < room ? (size_t)got : room;
        memcpy(out + used, buf, keep);
        used += keep;
    }
    out[used] = '\0';
}

static int posix_run(const struct step_runner *r, const char *const *argv, char *out, size_t len,
                     struct rz_err *err)
{
    (void)r;
    int fds[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out != NULL) {
        out[0] = '\0';
        if (pipe(fds) != 0) {
            posix_spawn_file_actions_destroy(&fa);
            rz_fail(err, RZ_EIO, "pipe for '%s': %s", argv[0], strerror(errno));
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (out != NULL)
        close(fds[1]);
    if (rc != 0) {
        if (out != NULL)
            close(fds[0]);
        rz_fail(err, RZ_EHEALTH, "start '%s': %s", argv[0], strerror(rc));
        return -1;
    }
    if (out != NULL) {
        read_all(fds[0], out, len);
        close(fds[0]);
    }
    return reap(pid);
}

/* environ plus `extra` ("NAME=value" entries replace the same NAME). */
static char **merged_env(const char *const *extra)
{
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    while (extra != NULL && extra[k] != NULL)
        k++;
    char **env = calloc(n + k + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < k && !replaced; j++) {
            size_t name = strcspn(extra[j], "=");
            replaced = strncmp(environ[i], extra[j], name + 1) == 0;
        }
        if (!replaced)
            env[m++] = environ[i];
    }
    for (size_t j = 0; j < k; j++)
        env[m++] = (char *)extra[j];
    return env;
}

static enum rz_status posix_start(const struct step_runner *r, const char *const *argv,
                                  const char *const *extra, long *handle, struct rz_err *err)
{
    (void)r;
    char **env = merged_env(extra);
    if (env == NULL)
        return rz_fail(err, RZ_ENOMEM, "start '%s': out of memory", argv[0]);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, (char *const *)argv, env);
    free(env);
    if (rc != 0)
        return rz_fail(err, RZ_EHEALTH, "start '%s': %s", argv[0], strerror(rc));
    *handle = (long)pid;
    return RZ_OK;
}

/* Send on each stop signal recorded since the last call, once, as forward_signo. */
static void forward_signals(pid_t pid, int forward_signo, int *forwarded, FILE *log)
{
    for (int seen = step_signals_count(); *forwarded < seen; (*forwarded)++) {
        /* Never TERM to srun: it would SIGKILL the tasks and lose the work since the last
         * checkpoint.  The stop signal makes every rank checkpoint at a step boundary. */
        kill(pid, forward_signo);
        if (log != NULL) {
            fprintf(log, "ryzen-step: signal: got %s, forwarded %s to the job step\n",
                    strsignal(step_signals_last()), strsignal(forward_signo));
            fflush(log);
        }
    }
}

/* The step ran past its time: two SIGINTs 0.2 s apart, srun's own way to end a step at once
 * (within a second, srun has Slurm kill every task, ranks stuck in MPI's start-up, whose stop
 * signals only take a note, included); KILL after the bound's grace; then reap it. */
static void end_overdue(pid_t pid, FILE *log, double timeout_s, double grace_s)
{
    if (log != NULL) {
        fprintf(log, "ryzen-step: the job step ran past its %.0f s limit: ending it\n", timeout_s);
        fflush(log);
    }
    kill(pid, SIGINT);
    rz_sleep(0.2);
    kill(pid, SIGINT); /* a child already gone is a zombie until reaped: no other process */
    double until = rz_now() + grace_s;
    int status;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (rz_now() >= until) {
            if (log != NULL) {
                fprintf(log, "ryzen-step: the job step did not end %.1f s after its abort: "
                        "killing it\n", grace_s);
                fflush(log);
            }
            kill(pid, SIGKILL);
            (void)reap(pid);
            return;
        }
        rz_sleep(0.1);
    }
}

/* While a limit holds the child is polled (every 0.1 s, which also bounds how late a stop
 * signal is sent on); without one, or once the bound's `started` says the step is up, waitpid
 * blocks and a signal interrupts it (no SA_RESTART). */
static int posix_wait(const struct step_runner *r, long handle, int forward_signo,
                      const struct step_bound *bound, FILE *log)
{
    (void)r;
    pid_t pid = (pid_t)handle;
    int forwarded = 0, status = 0;
    double limit = bound != NULL ? bound->timeout_s : 0.0;
    double deadline = limit > 0.0 ? rz_now() + limit : 0.0;
    for (;;) {
        pid_t got = waitpid(pid, &status, deadline > 0.0 ? WNOHANG : 0);
        forward_signals(pid, forward_signo, &forwarded, log);
        if (got == pid)
            return exit_status(status);
        if (got < 0 && errno != EINTR)
            return -1;
        if (got == 0 && bound->started != NULL && bound->started(bound->ctx)) {
            deadline = 0.0; /* up: from here the step has its own watchdog */
            continue;
        }
        if (got == 0 && rz_now() >= deadline) {
            end_overdue(pid, log, limit,
                        bound->kill_grace_s > 0.0 ? bound->kill_grace_s : STEP_KILL_GRACE_S);
            return STEP_WAIT_TIMED_OUT;
        }
        if (got == 0)
            rz_sleep(0.1);
    }
}

static void posix_sleep(const struct step_runner *r, double seconds)
{
    (void)r;
    rz_sleep(seconds);
}

static double posix_now(const struct step_runner *r)
{
    (void)r;
    return rz_unix_now();
}

const struct step_runner *step_runner_posix(void)
{
    static const struct step_runner posix = {posix_run, posix_start, posix_wait, posix_sleep,
                                             posix_now, NULL};
    return &posix;
}
