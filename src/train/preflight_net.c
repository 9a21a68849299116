/* preflight_net.c: the links check of the preflight (see preflight_internal.h): every pair of the
 * job's nodes measured over MPI (comm_link_probe), judged against the network.* keys, shown as
 * a table in the job output (health.json's copy: record/health_json.h).  A link fails only when a
 * second probe agrees: a rank that the CPU held up once (a burst of another job, a stolen vCPU)
 * must not cost a healthy node its place in the job. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "train/preflight_internal.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median rate over every directed link. */
static double median_rate(const struct comm_links *l)
{
    int n = l->n_hosts, k = 0;
    double *v = malloc((size_t)(n * n) * sizeof *v);
    if (v == NULL)
        return 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                v[k++] = l->gbps[i][j];
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    double m = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    free(v);
    return m;
}

/* Blame: with three or more hosts, a host that is an end of every failed link (a slow port or
 * cable of its own); with two, the link cannot tell which end, and none is blamed. */
static void blame(const struct comm_links *l, const bool bad[COMM_MAX_HOSTS][COMM_MAX_HOSTS],
                  int n_bad, struct verdict *v)
{
    if (l->n_hosts < 3 || n_bad == 0)
        return;
    for (int h = 0; h < l->n_hosts; h++) {
        int mine = 0;
        for (int i = 0; i < l->n_hosts; i++)
            for (int j = 0; j < l->n_hosts; j++)
                mine += bad[i][j] && (i == h || j == h);
        if (mine == n_bad) {
            pf_fail_host(v, l->hosts[h]);
            pf_add_detail(v, CHECK_LINKS, "; every failed link is %s's", l->hosts[h]);
        }
    }
}

static bool link_bad(const struct comm_links *l, const struct cfg_network *net, int i, int j)
{
    return l->gbps[i][j] < net->min_link_gbps || l->latency_us[i][j] > net->max_link_latency_us;
}

static bool any_bad(const struct comm_links *l, const struct cfg_network *net)
{
    for (int i = 0; i < l->n_hosts; i++)
        for (int j = 0; j < l->n_hosts; j++)
            if (i != j && link_bad(l, net, i, j))
                return true;
    return false;
}

enum rz_status pf_probe_links(struct comm *c, const struct cfg_network *net, size_t bytes,
                              int reps, struct comm_links *l, bool *again, struct rz_err *err)
{
    *again = false;
    enum rz_status st = comm_link_probe(c, bytes, reps, l, err);
    /* every rank holds the whole matrix, so every rank takes the same branch */
    if (st != RZ_OK || !any_bad(l, net))
        return st;
    struct comm_links *second = malloc(sizeof *second);
    if (second == NULL)
        return rz_fail(err, RZ_ENOMEM, "preflight: out of memory for a second link probe");
    st = comm_link_probe(c, bytes, reps, second, err);
    for (int i = 0; st == RZ_OK && i < l->n_hosts; i++)
        for (int j = 0; j < l->n_hosts; j++) {
            l->gbps[i][j] = fmax(l->gbps[i][j], second->gbps[i][j]);
            l->latency_us[i][j] = fmin(l->latency_us[i][j], second->latency_us[i][j]);
        }
    free(second);
    *again = st == RZ_OK;
    return st;
}

void pf_judge_links(const struct comm_links *l, const struct cfg_network *net, struct verdict *v)
{
    v->ok[CHECK_LINKS] = true;
    if (l->n_hosts < 2) {
        pf_add_detail(v, CHECK_LINKS, "one node: no link between nodes to measure");
        return;
    }
    static bool bad[COMM_MAX_HOSTS][COMM_MAX_HOSTS];
    memset(bad, 0, sizeof bad);
    int n = l->n_hosts, n_bad = 0, si = 0, sj = 1, li = 0, lj = 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            if (l->gbps[i][j] < l->gbps[si][sj])
                si = i, sj = j;
            if (l->latency_us[i][j] > l->latency_us[li][lj])
                li = i, lj = j;
            bad[i][j] = link_bad(l, net, i, j);
            n_bad += bad[i][j];
        }
    v->ok[CHECK_LINKS] = n_bad == 0;
    pf_add_detail(v, CHECK_LINKS, "%d nodes, %d links each way: slowest %s -> %s %.3g Gbit/s "
                  "(floor %.3g), highest latency %s - %s %.0f us (ceiling %.0f)", n,
                  n * (n - 1) / 2, l->hosts[si], l->hosts[sj], l->gbps[si][sj],
                  net->min_link_gbps, l->hosts[li], l->hosts[lj], l->latency_us[li][lj],
                  net->max_link_latency_us);
    if (n_bad > 0) {
        pf_add_detail(v, CHECK_LINKS, "; failed:");
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (bad[i][j])
                    pf_add_detail(v, CHECK_LINKS, " %s -> %s (%.3g Gbit/s, %.0f us)",
                                  l->hosts[i], l->hosts[j], l->gbps[i][j], l->latency_us[i][j]);
        blame(l, (const bool(*)[COMM_MAX_HOSTS])bad, n_bad, v);
        return;
    }
    double med = median_rate(l);
    if (l->gbps[si][sj] < 0.5 * med && v->warning[0] == '\0')
        rz_fmt(v->warning, sizeof v->warning, "the link %s -> %s carries %.3g Gbit/s, under half "
               "the median link (%.3g Gbit/s): a slow link holds back every all-reduce that "
               "crosses it", l->hosts[si], l->hosts[sj], l->gbps[si][sj], med);
}

void pf_log_links(FILE *log, const struct comm_links *l)
{
    if (log == NULL || l->n_hosts < 2)
        return;
    fprintf(log, "ryzen-train: preflight: links (Gbit/s from row to column; latency in us; "
            "%zu-byte sends):\n", l->bytes);
    fprintf(log, "ryzen-train: preflight:   %-10s", "");
    for (int j = 0; j < l->n_hosts; j++)
        fprintf(log, " %14.14s", l->hosts[j]);
    fputc('\n', log);
    for (int i = 0; i < l->n_hosts; i++) {
        fprintf(log, "ryzen-train: preflight:   %-10.10s", l->hosts[i]);
        for (int j = 0; j < l->n_hosts; j++) {
            if (i == j)
                fprintf(log, " %14s", "-");
            else
                fprintf(log, " %7.3f/%-6.0f", l->gbps[i][j], l->latency_us[i][j]);
        }
        fputc('\n', log);
    }
}
