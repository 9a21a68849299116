/* gate_topo.c: where the ranks ran (struct gate_topology in gate.h), from health.json's ranks:
 * the nodes, the machines behind them (the kernel's boot id: the dev cluster's four nodes are one
 * machine's CPUs), the CPUs each node's ranks may use, whether they are bound, the CPU quota of
 * each node's cgroup, and what each rank really has of a core: the least of its threads, its
 * machine's CPUs over the ranks on that machine, and its node's quota over the node's ranks.
 * Written into every report as a table. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart/chart.h"
#include "core/json.h"
#include "core/util.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"
#include "record/health_json.h"

enum { MAX_CPU = 4096 };

/* Mark the CPUs of a list "0-3,8" in set; the number of CPUs it names. */
static int cpu_list_mark(const char *list, unsigned char *set)
{
    int n = 0;
    for (const char *p = list;; p++) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && c >= 0 && c < MAX_CPU; c++)
            if (!(set[c / 8] & (1u << (c % 8)))) {
                set[c / 8] |= (unsigned char)(1u << (c % 8));
                n++;
            }
        if (*end != ',')
            break;
        p = end;
    }
    return n;
}

static int count_list(const char *list)
{
    unsigned char set[MAX_CPU / 8] = {0};
    return cpu_list_mark(list, set);
}

/* A machine's key: its boot id, else (an older file) its host. */
static const char *machine_of(const struct health_rank *r)
{
    return r->machine[0] != '\0' ? r->machine : r->host;
}

void gate_topology_read(struct gate_input *in, const struct health_doc *h)
{
    struct gate_topology *t = &in->topo;
    static unsigned char sets[GATE_MAX_TOPO_NODES][MAX_CPU / 8];
    memset(t, 0, sizeof *t);
    memset(sets, 0, sizeof sets);
    t->cores_per_rank = NAN;
    for (int i = 0; i < h->n_ranks; i++) {
        const struct health_rank *r = &h->ranks[i];
        int k = 0;
        while (k < t->n_nodes && strcmp(t->node[k].host, r->host) != 0)
            k++;
        if (k == GATE_MAX_TOPO_NODES)
            continue;
        if (k == t->n_nodes) {
            t->n_nodes++;
            rz_fmt(t->node[k].host, sizeof t->node[k].host, "%s", r->host);
            rz_fmt(t->node[k].machine, sizeof t->node[k].machine, "%s", machine_of(r));
            t->node[k].threads = r->omp_threads > 0 ? r->omp_threads : 1;
            t->node[k].cpu_quota = NAN;
        }
        if (r->cpu_quota > 0 && !(r->cpu_quota >= t->node[k].cpu_quota))
            t->node[k].cpu_quota = r->cpu_quota; /* the tightest its ranks saw */
        t->node[k].ranks++;
        cpu_list_mark(r->cpus, sets[k]);
    }
    /* the machines: their nodes' CPUs together, and all the ranks on them */
    for (int k = 0; k < t->n_nodes; k++) {
        unsigned char all[MAX_CPU / 8] = {0};
        int ranks = 0, first = 1;
        for (int m = 0; m < t->n_nodes; m++) {
            if (strcmp(t->node[m].machine, t->node[k].machine) != 0)
                continue;
            first &= m >= k;
            ranks += t->node[m].ranks;
            for (size_t b = 0; b < sizeof all; b++)
                all[b] |= sets[m][b];
        }
        int cpus = 0;
        for (size_t b = 0; b < sizeof all; b++)
            cpus += __builtin_popcount(all[b]);
        t->n_machines += first;
        t->node[k].machine_cpus = cpus;
        t->node[k].machine_ranks = ranks;
        /* the node's CPU list, as its ranks see it */
        for (int i = 0; i < h->n_ranks; i++)
            if (strcmp(h->ranks[i].host, t->node[k].host) == 0) {
                rz_fmt(t->node[k].cpus, sizeof t->node[k].cpus, "%s", h->ranks[i].cpus);
                t->node[k].bound |= count_list(h->ranks[i].cpus) < cpus;
                break;
            }
        t->any_bound |= t->node[k].bound;
        t->node[k].cores_per_rank = NAN;
        if (cpus > 0 && ranks > 0) {
            double have = fmin((double)t->node[k].threads, (double)cpus / ranks);
            if (t->node[k].cpu_quota > 0)
                have = fmin(have, t->node[k].cpu_quota / t->node[k].ranks);
            t->node[k].cores_per_rank = have;
            t->cores_per_rank = isnan(t->cores_per_rank) ? have : fmin(t->cores_per_rank, have);
        }
    }
}

void gate_json_topology(struct rz_json *j, const struct gate_input *in)
{
    const struct gate_topology *t = &in->topo;
    rz_json_key(j, "topology");
    if (t->n_nodes == 0) {
        rz_json_null(j);
        return;
    }
    rz_json_object_begin(j);
    rz_json_kv_int(j, "nodes", t->n_nodes);
    rz_json_kv_int(j, "machines", t->n_machines);
    rz_json_kv_double(j, "cores_per_rank", t->cores_per_rank);
    rz_json_kv_bool(j, "bound", t->any_bound);
    rz_json_key(j, "per_node");
    rz_json_array_begin(j);
    for (int k = 0; k < t->n_nodes; k++) {
        rz_json_object_begin(j);
        rz_json_kv_string(j, "host", t->node[k].host);
        rz_json_kv_string(j, "machine", t->node[k].machine);
        rz_json_kv_int(j, "ranks", t->node[k].ranks);
        rz_json_kv_int(j, "threads_per_rank", t->node[k].threads);
        rz_json_kv_string(j, "cpus", t->node[k].cpus);
        rz_json_kv_bool(j, "bound", t->node[k].bound);
        rz_json_kv_int(j, "machine_cpus", t->node[k].machine_cpus);
        rz_json_kv_int(j, "machine_ranks", t->node[k].machine_ranks);
        rz_json_kv_double(j, "cpu_quota", t->node[k].cpu_quota);
        rz_json_kv_double(j, "cores_per_rank", t->node[k].cores_per_rank);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_object_end(j);
}

/* "0.5" cores of quota, or "none". */
static const char *quota_text(char *buf, size_t len, double q)
{
    if (q > 0)
        rz_fmt(buf, len, "%.3g", q);
    else
        rz_fmt(buf, len, "none");
    return buf;
}

void gate_md_topology(FILE *f, const struct gate_input *in)
{
    const struct gate_topology *t = &in->topo;
    char q[32];
    if (t->n_nodes == 0)
        return;
    fprintf(f, "## Topology\n\n%d node(s) on %d machine(s) (the kernel's boot id); each rank has "
               "%.3g of a core (the least of its threads, its machine's CPUs over the ranks on it, "
               "and its node's CPU quota over the node's ranks); ranks %s.\n\n"
               "| node | machine | ranks | threads per rank | CPUs | machine's CPUs / ranks "
               "| CPU quota (cores) | cores per rank |\n|---|---|---|---|---|---|---|---|\n",
            t->n_nodes, t->n_machines, t->cores_per_rank,
            t->any_bound ? "bound to a part of their machine's CPUs" : "not bound");
    for (int k = 0; k < t->n_nodes; k++)
        fprintf(f, "| %s | %.8s | %d | %d | %s%s | %d / %d | %s | %.3g |\n", t->node[k].host,
                t->node[k].machine, t->node[k].ranks, t->node[k].threads, t->node[k].cpus,
                t->node[k].bound ? " (bound)" : "", t->node[k].machine_cpus,
                t->node[k].machine_ranks, quota_text(q, sizeof q, t->node[k].cpu_quota),
                t->node[k].cores_per_rank);
    fputc('\n', f);
}

void gate_html_topology(FILE *f, const struct gate_input *in)
{
    const struct gate_topology *t = &in->topo;
    char q[32];
    if (t->n_nodes == 0)
        return;
    fprintf(f, "<h2>Topology</h2>\n<p id=\"topology\">%d node(s) on %d machine(s); each rank has "
               "%.3g of a core; ranks %s.</p>\n<table><tr><th>node</th><th>machine</th>"
               "<th>ranks</th><th>threads per rank</th><th>CPUs</th><th>machine's CPUs / ranks"
               "</th><th>CPU quota (cores)</th><th>cores per rank</th></tr>\n", t->n_nodes,
            t->n_machines, t->cores_per_rank, t->any_bound ? "bound" : "not bound");
    for (int k = 0; k < t->n_nodes; k++) {
        fputs("<tr><td>", f);
        chart_html_text(f, t->node[k].host);
        fprintf(f, "</td><td>%.8s</td><td>%d</td><td>%d</td><td>", t->node[k].machine,
                t->node[k].ranks, t->node[k].threads);
        chart_html_text(f, t->node[k].cpus);
        fprintf(f, "%s</td><td>%d / %d</td><td>%s</td><td>%.3g</td></tr>\n",
                t->node[k].bound ? " (bound)" : "", t->node[k].machine_cpus,
                t->node[k].machine_ranks, quota_text(q, sizeof q, t->node[k].cpu_quota),
                t->node[k].cores_per_rank);
    }
    fputs("</table>\n", f);
}
