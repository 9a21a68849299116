/* hooks.c: the test-only fault injection of `configure --enable-test-hooks` (see hooks.h).
 * Compiled to nothing in a production build. */
#include "config.h"

#include "core/hooks.h"

#ifdef RZ_TEST_HOOKS
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rz_hooks rz_hooks = {.desync_rank = -1, .stop_at_start_rank = -1, .slow_rank = -1,
                            .slow_factor = 1.0, .hold = {.max_s = 600.0}};

static void copy_env(char *out, size_t len, const char *name)
{
    const char *v = getenv(name);
    snprintf(out, len, "%s", v != NULL ? v : "");
}

static double env_double(const char *name, double fallback)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? atof(v) : fallback;
}

/* "FIRST[-LAST][:FACTOR][,...]" (RYZEN_TEST_BAD_GRAD); FACTOR defaults to nan. */
static void bad_grad(const char *v)
{
    for (size_t i = 0; v != NULL && *v != '\0' && i < 4; i++) {
        struct rz_hook_bad_grad *b = &rz_hooks.bad_grad[i];
        char *end = NULL;
        b->factor = NAN;
        b->first = b->last = strtoll(v, &end, 10);
        if (*end == '-')
            b->last = strtoll(end + 1, &end, 10);
        if (*end == ':')
            b->factor = strtod(end + 1, &end);
        v = *end == ',' ? end + 1 : "";
    }
}

static const char *env_set(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* A whole-string number, or false. */
static bool strict_double(const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    *out = strtod(v, &end);
    return end != v && *end == '\0' && errno == 0 && isfinite(*out);
}

/* RYZEN_TEST_SLOW_RANK=R RYZEN_TEST_SLOW_FACTOR=F, both or neither. */
static enum rz_status load_slow(struct rz_err *err)
{
    const char *rank = env_set("RYZEN_TEST_SLOW_RANK"), *factor = env_set("RYZEN_TEST_SLOW_FACTOR");
    double r = -1.0, f = 1.0;
    if (env_set("RYZEN_TEST_SLOW_MS") != NULL)
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_SLOW_MS was removed (a fixed slowdown is a "
                       "different straggler on every CPU): set RYZEN_TEST_SLOW_FACTOR");
    if ((rank == NULL) != (factor == NULL))
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_SLOW_RANK and RYZEN_TEST_SLOW_FACTOR go "
                       "together: only %s is set", rank != NULL ? "the rank" : "the factor");
    if (rank == NULL)
        return RZ_OK;
    if (!strict_double(rank, &r) || r < 0.0 || r != floor(r) || r > 1e6)
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_SLOW_RANK=\"%s\": not a rank number", rank);
    if (!strict_double(factor, &f) || f < 1.0 || f > 1e6)
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_SLOW_FACTOR=\"%s\": not a factor >= 1",
                       factor);
    rz_hooks.slow_rank = (int)r;
    rz_hooks.slow_factor = f;
    return RZ_OK;
}

/* RYZEN_TEST_AFTER_INIT_DELAY=RANK:SECONDS */
static enum rz_status load_after_init_delay(struct rz_err *err)
{
    const char *v = env_set("RYZEN_TEST_AFTER_INIT_DELAY");
    rz_hooks.after_init_delay_rank = -1;
    if (v == NULL)
        return RZ_OK;
    char *end = NULL;
    long r = strtol(v, &end, 10);
    double s = -1.0;
    if (end == v || *end != ':' || r < 0 || r > 1000000 || !strict_double(end + 1, &s) ||
        s < 0.0 || s > 3600.0)
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_AFTER_INIT_DELAY=\"%s\": want RANK:SECONDS "
                       "(a rank number, 0 to 3600 s)", v);
    rz_hooks.after_init_delay_rank = (int)r;
    rz_hooks.after_init_delay_s = s;
    return RZ_OK;
}

/* "STEP[,STEP...]" then `stop` (':' or '\0'): up to max ascending steps >= 0 into steps[],
 * their count into *n; *rest: the character after the list.  False when malformed. */
static bool parse_steps(const char *v, char stop, long long *steps, int max, int *n,
                        const char **rest)
{
    const char *p = v;
    char *end = NULL;
    *n = 0;
    for (;;) {
        errno = 0;
        long long step = strtoll(p, &end, 10);
        if (end == p || errno != 0 || step < 0 || *n == max ||
            (*n > 0 && step <= steps[*n - 1]) || (*end != ',' && *end != stop))
            return false;
        steps[(*n)++] = step;
        if (*end == stop) {
            *rest = end + (stop != '\0');
            return true;
        }
        p = end + 1;
    }
}

/* RYZEN_TEST_HOLD=STEP[,STEP...]:FILE, RYZEN_TEST_HOLD_MAX_S=N. */
static enum rz_status load_hold(struct rz_err *err)
{
    struct rz_hook_hold *h = &rz_hooks.hold;
    const char *v = env_set("RYZEN_TEST_HOLD"), *max = env_set("RYZEN_TEST_HOLD_MAX_S");
    h->n = 0;
    h->file[0] = '\0';
    h->max_s = 600.0;
    if (max != NULL && (!strict_double(max, &h->max_s) || h->max_s <= 0.0))
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_HOLD_MAX_S=\"%s\": not a number of seconds "
                       "> 0", max);
    if (v == NULL)
        return RZ_OK;
    const char *file = NULL;
    int n = 0;
    if (!parse_steps(v, ':', h->steps, 4, &n, &file) || file[0] == '\0' ||
        strlen(file) >= sizeof h->file)
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_HOLD=\"%s\": want STEP[,STEP...]:FILE, up to "
                       "4 ascending steps >= 0 and a file name", v);
    h->n = n;
    snprintf(h->file, sizeof h->file, "%s", file);
    return RZ_OK;
}

/* RYZEN_TEST_CKPT_FULL=STEP[,STEP...]. */
static enum rz_status load_ckpt_full(struct rz_err *err)
{
    struct rz_hook_steps *f = &rz_hooks.ckpt_full;
    const char *v = env_set("RYZEN_TEST_CKPT_FULL"), *rest = NULL;
    f->n = 0;
    if (v == NULL)
        return RZ_OK;
    int n = 0;
    if (!parse_steps(v, '\0', f->steps, 8, &n, &rest))
        return rz_fail(err, RZ_ECONFIG, "RYZEN_TEST_CKPT_FULL=\"%s\": want STEP[,STEP...], up "
                       "to 8 ascending steps >= 0", v);
    f->n = n;
    return RZ_OK;
}

bool rz_hook_step_in(const struct rz_hook_steps *s, long long step)
{
    for (int i = 0; i < s->n; i++)
        if (s->steps[i] == step)
            return true;
    return false;
}

enum rz_status rz_hooks_load(struct rz_err *err)
{
    copy_env(rz_hooks.crash_at, sizeof rz_hooks.crash_at, "RYZEN_TEST_CRASH_AT");
    rz_hooks.save_delay_s = env_double("RYZEN_TEST_SAVE_DELAY_S", 0.0);
    rz_hooks.startup_delay_s = env_double("RYZEN_TEST_STARTUP_DELAY_S", 0.0);
    rz_hooks.desync_rank = (int)env_double("RYZEN_TEST_DESYNC_RANK", -1.0);
    rz_hooks.stop_at_start_rank = (int)env_double("RYZEN_TEST_STOP_AT_START", -1.0);
    copy_env(rz_hooks.preflight_fail_host, sizeof rz_hooks.preflight_fail_host,
             "RYZEN_TEST_PREFLIGHT_FAIL_HOST");
    copy_env(rz_hooks.preflight_hang, sizeof rz_hooks.preflight_hang, "RYZEN_TEST_PREFLIGHT_HANG");
    copy_env(rz_hooks.start_hang, sizeof rz_hooks.start_hang, "RYZEN_TEST_START_HANG");
    bad_grad(getenv("RYZEN_TEST_BAD_GRAD"));
    rz_hooks.slow_rank = -1;
    rz_hooks.slow_factor = 1.0;
    enum rz_status st = load_slow(err);
    if (st == RZ_OK)
        st = load_after_init_delay(err);
    if (st == RZ_OK)
        st = load_hold(err);
    return st == RZ_OK ? load_ckpt_full(err) : st;
}

void rz_hook_crash_point(const char *tag, const char *stage)
{
    size_t n = strlen(tag);
    const char *at = rz_hooks.crash_at;
    if (strncmp(at, tag, n) == 0 && at[n] == ':' && strcmp(at + n + 1, stage) == 0)
        _exit(86);
}
#else
/* ISO C forbids an empty translation unit. */
typedef int rz_hooks_compiled_out;
#endif
