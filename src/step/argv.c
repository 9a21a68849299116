/* argv.c: argv arrays for the commands ryzen-step runs (see step_internal.h).  Every argument is
 * its own string handed to the runner: no shell ever sees a config value or a path.  Also which
 * of the job's --set overrides are a phase's (step_select_sets). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "step/step_internal.h"

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

enum rz_status step_argv_addv(struct step_argv *a, const char *const *args, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    for (size_t i = 0; st == RZ_OK && args[i] != NULL; i++)
        st = step_argv_add(a, args[i], err);
    return st;
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
    for (size_t i = 0; i < a->n && used + 1 < len; i++) {
        bool quote = strpbrk(a->argv[i], " \t'\"") != NULL || a->argv[i][0] == '\0';
        int w = snprintf(out + used, len - used, quote ? "%s'%s'" : "%s%s", i ? " " : "",
                         a->argv[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int step_run(const struct step_runner *r, const struct step_argv *a, char *out, size_t len,
             struct rz_err *err)
{
    if (a->n == 0)
        return -1;
    return r->run(r, (const char *const *)a->argv, out, len, err);
}

int step_select_sets(const char *const *sets, int n, const char *phase, const char **out)
{
    int k = 0;
    size_t plen = strlen(phase);
    for (int i = 0; i < n; i++) {
        const char *s = sets[i], *colon = strchr(s, ':'), *eq = strchr(s, '=');
        if (colon == NULL || (eq != NULL && eq < colon))
            out[k++] = s;
        else if ((size_t)(colon - s) == plen && strncmp(s, phase, plen) == 0)
            out[k++] = colon + 1;
    }
    return k;
}
