/* watchdog.c: stop-signal flags, heartbeat files and the hang watchdog (see watchdog.h).
 * Not here: anything that talks to other ranks (that is comm/); the watchdog only reads the
 * heartbeat files the other ranks write, so it keeps working when MPI is wedged. */
#include "config.h"

#include "health/watchdog.h"
#include "record/exits.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

/* ---- stop signals ------------------------------------------------------------------------------ */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signo)
{
    if (stop_signal == 0)
        stop_signal = signo;
}

enum rz_status health_signal_parse(const char *name, int *signo, struct rz_err *err)
{
    static const struct { const char *name; int signo; } table[] = {
        {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT}};
    const char *n = strncasecmp(name, "SIG", 3) == 0 ? name + 3 : name;
    for (size_t i = 0; i < RZ_ARRAY_LEN(table); i++)
        if (strcasecmp(n, table[i].name) == 0) {
            *signo = table[i].signo;
            return RZ_OK;
        }
    return rz_fail(err, RZ_ECONFIG, "health.stop_signal: unknown signal '%s' (choices: USR1, "
                   "USR2, TERM, INT)", name);
}

enum rz_status health_signals_install(int signo, struct rz_err *err)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* blocking I/O and MPI waits resume; the flag is seen later */
    if (sigaction(signo, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
        return rz_fail(err, RZ_EHEALTH, "install signal handlers: %s", strerror(errno));
    return RZ_OK;
}

int health_stop_signal(void) { return (int)stop_signal; }
void health_request_stop(int signo) { on_stop_signal(signo); }

/* ---- exit records ------------------------------------------------------------------------------ */

const char *health_end_reason(int status)
{
    switch (status) {
    case RZ_EXIT_OK: return "done";
    case RZ_EXIT_REQUEUE: return "signal";
    case RZ_EXIT_WATCHDOG: return "hang";
    case RZ_EXIT_IO: return "io";
    case RZ_EXIT_HEALTH: return "health";
    case RZ_EXIT_USAGE: return "config";
    case RZ_EXIT_NOCKPT: return "nockpt";
    default: return "error";
    }
}

enum rz_status health_exit_record(const char *dir, int rank, const char *host, int status,
                                  const char *end_reason, const char *message, struct rz_err *err)
{
    if (dir == NULL || dir[0] == '\0')
        return RZ_OK;
    struct exit_record r = {.rank = rank, .status = status};
    rz_fmt(r.host, sizeof r.host, "%s", host != NULL ? host : "");
    rz_fmt(r.end_reason, sizeof r.end_reason, "%s", end_reason != NULL && end_reason[0] != '\0'
                                                        ? end_reason : health_end_reason(status));
    rz_fmt(r.message, sizeof r.message, "%s", message != NULL ? message : "");
    return exit_record_write(dir, &r, err);
}

/* ---- heartbeats and watchdog ------------------------------------------------------------------- */

#define HB_RECORD 64     /* fixed-width text record, rewritten in place */
#define HB_STALE_S 2     /* a heartbeat not rewritten for longer: the rank is not responding */
#define MEDIAN_WINDOW 64

struct health_watchdog {
    struct health_watchdog_opts opts;
    char dir[4096];
    int fd;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    bool stop, in_step, paused;
    int64_t step, sync_step;   /* -1 until a step begins */
    double step_start;
    double out_start;          /* out of a step: when the current window began (a step's end, a
                                * commit's start or end, the last progress mark) */
    double times[MEDIAN_WINDOW];
    int n_times, next_time;
};

/* What the watchdog found at one look (watchdog_due). */
struct watchdog_verdict {
    double median, limit, ran, out;
    long long step;
    bool in_commit, out_over;
};

static void write_heartbeat(struct health_watchdog *w)
{
    char rec[HB_RECORD];
    memset(rec, ' ', sizeof rec);
    int n = snprintf(rec, sizeof rec, "step %lld sync %lld pid %ld wall %ld",
                     (long long)w->step, (long long)w->sync_step, (long)getpid(),
                     (long)time(NULL));
    if (n > 0 && n < HB_RECORD)
        rec[n] = ' ';
    rec[HB_RECORD - 1] = '\n';
    if (w->fd >= 0 && pwrite(w->fd, rec, sizeof rec, 0) != (ssize_t)sizeof rec) {
        /* a full disk must not stop training; the watchdog then names this rank as unknown */
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_step(const struct health_watchdog *w)
{
    if (w->n_times == 0)
        return 0.0;
    double t[MEDIAN_WINDOW];
    memcpy(t, w->times, (size_t)w->n_times * sizeof *t);
    qsort(t, (size_t)w->n_times, sizeof *t, cmp_double);
    return t[w->n_times / 2];
}

/* Read another rank's record; returns false when it has none yet. */
static bool read_heartbeat(const char *dir, int rank, long long *step, long long *sync,
                           long *pid, long *wall)
{
    char path[4200], rec[HB_RECORD + 1];
    snprintf(path, sizeof path, "%s/rank-%05d.hb", dir, rank);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t got = read(fd, rec, HB_RECORD);
    close(fd);
    if (got <= 0)
        return false;
    rec[got] = '\0';
    *pid = *wall = 0;
    return sscanf(rec, "step %lld sync %lld pid %ld wall %ld", step, sync, pid, wall) >= 2;
}

/* Which ranks hold the others up.  A rank whose heartbeat has not been rewritten for
 * HB_STALE_S is not responding at all: its watchdog thread, which rewrites it every tick even
 * while the rank waits in a collective, is stopped too (SIGSTOP, a frozen node, a swap storm,
 * a dead process).  Otherwise the ones that have not arrived at the gradient synchronization
 * where the furthest rank has are behind. */
static void diagnose(const struct health_watchdog *w, char *out, size_t len)
{
    long long best = -1, step = 0, sync = 0;
    long pid = 0, wall = 0, now = (long)time(NULL);
    for (int r = 0; r < w->opts.world; r++)
        if (read_heartbeat(w->dir, r, &step, &sync, &pid, &wall) && sync > best)
            best = sync;
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < w->opts.world && used + 96 < len; r++) {
        bool ok = read_heartbeat(w->dir, r, &step, &sync, &pid, &wall);
        if (!ok)
            used += (size_t)snprintf(out + used, len - used, "%srank %d (no heartbeat)",
                                     used ? ", " : "", r);
        else if (r != w->opts.rank && wall > 0 && now - wall > HB_STALE_S)
            used += (size_t)snprintf(out + used, len - used, "%srank %d (pid %ld) not "
                                     "responding for %ld s", used ? ", " : "", r, pid,
                                     now - wall);
        else if (sync < best)
            used += (size_t)snprintf(out + used, len - used, "%srank %d (last at the sync of "
                                     "step %lld)", used ? ", " : "", r, sync);
    }
    if (out[0] == '\0' && best < 0)
        snprintf(out, len, "none (every rank is responding; none has reached a step's sync)");
    else if (out[0] == '\0')
        snprintf(out, len, "none (every rank reached the sync of step %lld and is responding; "
                 "stuck after it)", best);
}

static double watchdog_now(const struct health_watchdog *w)
{
    return w->opts.clock != NULL ? w->opts.clock(w->opts.clock_ctx) : rz_now();
}

/* The message of a limit that ran out: what overran, for how long, and who held it up. */
static void watchdog_message(const struct health_watchdog *w, const struct watchdog_verdict *v,
                             double frozen, char *msg, size_t len)
{
    char behind[1024];
    if (frozen > 0.0)
        rz_fmt(behind, sizeof behind, "this rank itself was frozen (stopped or starved) for "
               "%.1f s", frozen);
    else
        diagnose(w, behind, sizeof behind);
    if (v->out_over) {
        char what[160]; /* the work out of a step that overran */
        if (v->in_commit)
            rz_fmt(what, sizeof what, "the checkpoint commit after step %lld", v->step);
        else if (v->step < 0)
            rz_fmt(what, sizeof what, "the start (choosing and loading the checkpoint, the "
                   "ranks' first agreements, the matmul peak, before step 1)");
        else
            rz_fmt(what, sizeof what, "the work after step %lld (its metrics, the ranks' "
                   "agreement, a validation pass)", v->step);
        rz_fmt(msg, len, "watchdog: rank %d: %s has run %.1f s, over the limit %g s "
               "(health.watchdog_checkpoint_s); held up by: %s", w->opts.rank, what, v->out,
               w->opts.checkpoint_s, behind);
    } else
        rz_fmt(msg, len, "watchdog: rank %d: step %lld has run %.1f s, over the limit "
               "%.1f s = max(%g x median step %.3f s, floor %g s); held up by: %s",
               w->opts.rank, v->step, v->ran, v->limit, w->opts.factor, v->median,
               w->opts.floor_s, behind);
}

/* Whether a limit ran out at `now` (the caller holds w->lock). */
static bool watchdog_due(const struct health_watchdog *w, double now, struct watchdog_verdict *v)
{
    v->median = median_step(w);
    v->limit = w->opts.factor * v->median > w->opts.floor_s ? w->opts.factor * v->median
                                                            : w->opts.floor_s;
    v->ran = now - w->step_start;
    v->out = now - w->out_start;
    v->step = (long long)w->step;
    /* out of a step: the start (step is -1 until the first begins), a commit, or after a step */
    v->in_commit = w->paused;
    v->out_over = (v->in_commit || !w->in_step) && w->opts.checkpoint_s > 0 &&
                  v->out > w->opts.checkpoint_s;
    return v->out_over || (w->in_step && !v->in_commit && v->ran > v->limit);
}

bool health_watchdog_poll(struct health_watchdog *w, char *msg, size_t len)
{
    struct watchdog_verdict v;
    pthread_mutex_lock(&w->lock);
    bool due = watchdog_due(w, watchdog_now(w), &v);
    pthread_mutex_unlock(&w->lock);
    if (due && msg != NULL)
        watchdog_message(w, &v, 0.0, msg, len);
    return due;
}

static void *watchdog_main(void *arg)
{
    struct health_watchdog *w = arg;
    double last_tick = watchdog_now(w);
    for (;;) {
        struct timespec nap = {0, 250 * 1000 * 1000};
        nanosleep(&nap, NULL);
        pthread_mutex_lock(&w->lock);
        if (w->stop) {
            pthread_mutex_unlock(&w->lock);
            return NULL;
        }
        /* A tick that comes seconds late means this whole process was stopped (SIGSTOP, a
         * frozen VM): then it is the one that held the others up, not a victim. */
        double now = watchdog_now(w), frozen = now - last_tick > HB_STALE_S ? now - last_tick
                                                                             : 0.0;
        last_tick = now;
        write_heartbeat(w); /* liveness, even while the main thread waits in a collective */
        struct watchdog_verdict v;
        bool fire = watchdog_due(w, now, &v);
        pthread_mutex_unlock(&w->lock);
        if (!fire)
            continue;
        char msg[1600];
        watchdog_message(w, &v, frozen, msg, sizeof msg);
        fprintf(stderr, "ryzen-train: %s; exiting %d\n", msg, RZ_EXIT_WATCHDOG);
        fflush(stderr);
        health_exit_record(w->opts.attempt_dir, w->opts.rank, w->opts.host, RZ_EXIT_WATCHDOG,
                           "hang", msg, NULL);
        _exit(RZ_EXIT_WATCHDOG);
    }
}

enum rz_status health_watchdog_start(struct health_watchdog **out,
                                     const struct health_watchdog_opts *opts, struct rz_err *err)
{
    *out = NULL;
    struct health_watchdog *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rz_fail(err, RZ_ENOMEM, "watchdog: out of memory");
    w->opts = *opts;
    w->fd = -1;
    pthread_mutex_init(&w->lock, NULL);
    snprintf(w->dir, sizeof w->dir, "%s/health", opts->run_dir);
    enum rz_status st = rz_mkdirs(w->dir, err);
    if (st != RZ_OK) {
        health_watchdog_stop(w);
        return st;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/rank-%05d.hb", w->dir, opts->rank);
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (w->fd < 0) {
        st = rz_fail(err, RZ_EIO, "watchdog: open heartbeat '%s': %s", path, strerror(errno));
        health_watchdog_stop(w);
        return st;
    }
    w->step = w->sync_step = -1;
    w->out_start = watchdog_now(w); /* the start is out of a step too: watched from here */
    write_heartbeat(w);
    if (opts->no_thread) {
        *out = w;
        return RZ_OK;
    }
    if (pthread_create(&w->thread, NULL, watchdog_main, w) != 0) {
        health_watchdog_stop(w);
        return rz_fail(err, RZ_EHEALTH, "watchdog: cannot start its thread");
    }
    w->running = true;
    *out = w;
    return RZ_OK;
}

void health_watchdog_stop(struct health_watchdog *w)
{
    if (w == NULL)
        return;
    if (w->running) {
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
    }
    if (w->fd >= 0)
        close(w->fd);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

void health_step_begin(struct health_watchdog *w, int64_t step)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->in_step = true;
    w->step = step;
    w->step_start = watchdog_now(w);
    pthread_mutex_unlock(&w->lock);
}

void health_sync_arrived(struct health_watchdog *w, int64_t step)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->sync_step = step;
    write_heartbeat(w);
    pthread_mutex_unlock(&w->lock);
}

void health_step_end(struct health_watchdog *w, int64_t step, double seconds)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->in_step = false;
    w->out_start = watchdog_now(w);
    w->step = step;
    w->times[w->next_time] = seconds;
    w->next_time = (w->next_time + 1) % MEDIAN_WINDOW;
    if (w->n_times < MEDIAN_WINDOW)
        w->n_times++;
    pthread_mutex_unlock(&w->lock);
}

void health_progress(struct health_watchdog *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    if (!w->in_step && !w->paused)
        w->out_start = watchdog_now(w);
    pthread_mutex_unlock(&w->lock);
}

void health_watchdog_pause(struct health_watchdog *w, int paused)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->paused = paused != 0;
    w->out_start = watchdog_now(w); /* the commit, and then what follows it, each a window of its own */
    if (!paused)
        w->step_start = w->out_start;
    pthread_mutex_unlock(&w->lock);
}
