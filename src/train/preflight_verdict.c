/* preflight_verdict.c: the preflight's verdict: its checks' names, details, failed hosts and
 * the lines the job output shows (see preflight_internal.h). */
#include "config.h"

#include <stdarg.h>
#include <string.h>

#include "core/util.h"
#include "train/preflight_internal.h"

const char *const pf_check_names[N_CHECKS] = {"launch", "ring", "allreduce", "links", "cpus",
                                              "memory", "checkpoint_dir", "run_root", "isa",
                                              "data"};

/* One line per check, as the job output shows them. */
void pf_log_verdict(FILE *log, const struct verdict *v)
{
    for (int k = 0; log != NULL && k < N_CHECKS; k++)
        if (!v->skipped[k])
            fprintf(log, "ryzen-train: preflight: %-14s %s  %s\n", pf_check_names[k],
                    v->ok[k] ? "ok  " : v->not_run[k] ? "-   " : "FAIL", v->detail[k]);
    if (log != NULL && v->warning[0] != '\0')
        fprintf(log, "ryzen-train: preflight: WARNING: %s\n", v->warning);
}

void pf_fail_host(struct verdict *v, const char *host)
{
    for (int i = 0; i < v->n_failed; i++)
        if (strcmp(v->failed_hosts[i], host) == 0)
            return;
    if (v->n_failed < MAX_FAILED)
        rz_fmt(v->failed_hosts[v->n_failed++], sizeof v->failed_hosts[0], "%s", host);
}

void pf_add_detail(struct verdict *v, int check, const char *fmt, ...)
{
    char *out = v->detail[check];
    size_t used = strlen(out);
    if (used + 1 >= sizeof v->detail[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + used, sizeof v->detail[0] - used, fmt, ap);
    va_end(ap);
}

bool pf_first_on_host(const struct probe *all, int r)
{
    for (int q = 0; q < r; q++)
        if (strcmp(all[q].host, all[r].host) == 0)
            return false;
    return true;
}
