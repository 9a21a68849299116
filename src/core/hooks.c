/* hooks.c: the test-only fault injection of `configure --enable-test-hooks` (see hooks.h).
 * Compiled to nothing in a production build. */
#include "config.h"

#include "core/hooks.h"

#ifdef RZ_TEST_HOOKS
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rz_hooks rz_hooks = {.desync_rank = -1, .stop_at_start_rank = -1, .slow_rank = -1};

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

void rz_hooks_load(void)
{
    copy_env(rz_hooks.crash_at, sizeof rz_hooks.crash_at, "RYZEN_TEST_CRASH_AT");
    rz_hooks.save_delay_s = env_double("RYZEN_TEST_SAVE_DELAY_S", 0.0);
    rz_hooks.startup_delay_s = env_double("RYZEN_TEST_STARTUP_DELAY_S", 0.0);
    rz_hooks.desync_rank = (int)env_double("RYZEN_TEST_DESYNC_RANK", -1.0);
    rz_hooks.stop_at_start_rank = (int)env_double("RYZEN_TEST_STOP_AT_START", -1.0);
    copy_env(rz_hooks.preflight_fail_host, sizeof rz_hooks.preflight_fail_host,
             "RYZEN_TEST_PREFLIGHT_FAIL_HOST");
    rz_hooks.slow_rank = (int)env_double("RYZEN_TEST_SLOW_RANK", -1.0);
    rz_hooks.slow_ms = env_double("RYZEN_TEST_SLOW_MS", 0.0);
    bad_grad(getenv("RYZEN_TEST_BAD_GRAD"));
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
