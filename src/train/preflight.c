/* preflight.c: the launch health checks (see preflight.h).  Each rank probes what only it can
 * see (its allowed CPUs, its node's memory and the job's memory limit there, its view of the
 * checkpoint directory, its oneDNN ISA); the probes are gathered and judged identically on every
 * rank, so all ranks exit with the same status. */
#define _GNU_SOURCE /* sched_getaffinity, cpu_set_t: Linux's view of a rank's CPUs */
#include "config.h"

#include "train/preflight.h"
#include "train/preflight_internal.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/hooks.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "plan/plan.h"
#include "record/health_json.h"

#define MEMORY_MARGIN 0.9                  /* use at most 90% of the limit */
#define PROBE_FLOATS ((size_t)1 << 20)
#define MAX_CPUS PREFLIGHT_MAX_CPUS
#define LINK_PROBE_REPS 5                  /* timed sends each way per pair of nodes */
#define HOP_PROBE_REPS 9                   /* timed blocks of the ring's all-reduce */

/* ---- probes --------------------------------------------------------------------------------------- */

/* A "Name:  N kB" field of /proc/meminfo, in bytes (0 if absent). */
static double meminfo(const char *field)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    size_t n = strlen(field);
    double kb = 0.0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%lf", &kb) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kb * 1024.0;
}

/* A number in a cgroup file; 0 for "max", absurdly large values (no limit) or a missing file. */
static double cgroup_number(const char *path)
{
    FILE *f = fopen(path, "r");
    char text[64] = "";
    if (f == NULL)
        return 0.0;
    if (fgets(text, sizeof text, f) == NULL)
        text[0] = '\0';
    fclose(f);
    double x = strtod(text, NULL);
    return strncmp(text, "max", 3) == 0 || x <= 0.0 || x >= 1e18 ? 0.0 : x;
}

/* One cgroup directory's limit: memory bytes, or CPU cores of time; 0 when it sets none. */
typedef double (*cgroup_limit_fn)(const char *dir, bool v1);

static double cgroup_memory_at(const char *dir, bool v1)
{
    char path[1500];
    rz_fmt(path, sizeof path, "%s/%s", dir, v1 ? "memory.limit_in_bytes" : "memory.max");
    return cgroup_number(path);
}

/* cgroup v1's cpu.cfs_quota_us / cpu.cfs_period_us (-1: none), v2's cpu.max ("max 100000" or
 * "QUOTA PERIOD"). */
static double cgroup_cpu_at(const char *dir, bool v1)
{
    char path[1500], text[64] = "";
    double quota = 0.0, period = 0.0;
    if (v1) {
        rz_fmt(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
        quota = cgroup_number(path);
        rz_fmt(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        period = cgroup_number(path);
    } else {
        rz_fmt(path, sizeof path, "%s/cpu.max", dir);
        FILE *f = fopen(path, "r");
        if (f != NULL && fgets(text, sizeof text, f) != NULL && strncmp(text, "max", 3) != 0 &&
            sscanf(text, "%lf %lf", &quota, &period) != 2)
            quota = 0.0;
        if (f != NULL)
            fclose(f);
    }
    return quota > 0.0 && period > 0.0 ? quota / period : 0.0;
}

/* Controller list "cpu,cpuacct" names the controller exactly ("cpuset" is not "cpu"). */
static bool cgroup_has(const char *list, const char *controller)
{
    size_t n = strlen(controller);
    for (const char *p = list; *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
        if (strncmp(p, controller, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

/* The tightest limit of CONTROLLER on this process's cgroup and its parents (cgroup v1's
 * hierarchy of that controller, or v2's unified one); 0 when none.  *where names the cgroup. */
static double cgroup_tightest(const char *controller, cgroup_limit_fn at, char *where, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024], dir[1400];
    double best = 0.0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *ctrl = strchr(line, ':'), *rel = ctrl != NULL ? strchr(ctrl + 1, ':') : NULL;
        if (rel == NULL)
            continue;
        *rel++ = '\0';
        bool v1 = cgroup_has(ctrl + 1, controller), v2 = ctrl[1] == '\0';
        if (!v1 && !v2)
            continue;
        for (char *end = rel + strlen(rel);;) {
            if (v1)
                rz_fmt(dir, sizeof dir, "/sys/fs/cgroup/%s%.*s", controller, (int)(end - rel), rel);
            else
                rz_fmt(dir, sizeof dir, "/sys/fs/cgroup%.*s", (int)(end - rel), rel);
            double x = at(dir, v1);
            if (x > 0.0 && (best == 0.0 || x < best)) {
                best = x;
                rz_fmt(where, len, "cgroup %.*s", (int)(end - rel), rel);
            }
            char *slash = end;
            while (slash > rel && *--slash != '/') {
            }
            if (slash <= rel)
                break;
            end = slash;
        }
    }
    if (f != NULL)
        fclose(f);
    return best;
}

/* The CPU time this rank's cgroup (and its parents) may use, in cores: a node held to a share
 * of a machine (a container's or the dev cluster's quota).  Every rank of the node shares it. */
static void probe_cpu_quota(struct probe *p)
{
    char where[160]; /* the cgroup that sets it: not reported (health.json has the share) */
    p->cpu_quota = cgroup_tightest("cpu", cgroup_cpu_at, where, sizeof where);
}

/* The job's own limit on this node: the cgroup's, --mem (SLURM_MEM_PER_NODE) and --mem-per-cpu
 * times the node's CPUs; the tightest wins. */
static void probe_memory_limit(const struct preflight_env *e, struct probe *p)
{
    char where[160] = "";
    double cg = cgroup_tightest("memory", cgroup_memory_at, where, sizeof where);
    double node = e != NULL && e->mem_per_node_mb > 0 ? (double)e->mem_per_node_mb * 1048576.0
                                                      : 0.0;
    double cpu = e != NULL && e->mem_per_cpu_mb > 0 && e->cpus_on_node > 0
                     ? (double)e->mem_per_cpu_mb * (double)e->cpus_on_node * 1048576.0 : 0.0;
    if (cg > 0.0) {
        p->mem_limit = cg;
        rz_fmt(p->limit_source, sizeof p->limit_source, "%s", where);
    }
    if (node > 0.0 && (p->mem_limit == 0.0 || node < p->mem_limit)) {
        p->mem_limit = node;
        rz_fmt(p->limit_source, sizeof p->limit_source, "--mem=%ldM", e->mem_per_node_mb);
    }
    if (cpu > 0.0 && (p->mem_limit == 0.0 || cpu < p->mem_limit)) {
        p->mem_limit = cpu;
        rz_fmt(p->limit_source, sizeof p->limit_source, "--mem-per-cpu=%ldM x %ld CPUs",
               e->mem_per_cpu_mb, e->cpus_on_node);
    }
}

/* The running kernel's boot id (/proc/sys/kernel/random/boot_id): one per machine and boot,
 * the same in every network or UTS namespace.  Two hosts of the job with one boot id are one
 * machine's CPUs (the dev cluster's nodes are). */
static void probe_machine(struct probe *p)
{
    char *text = NULL;
    size_t len = 0;
    struct rz_err e;
    p->machine[0] = '\0';
    if (rz_read_file("/proc/sys/kernel/random/boot_id", &text, &len, &e) == RZ_OK)
        rz_fmt(p->machine, sizeof p->machine, "%.*s", (int)strcspn(text, "\n"), text);
    free(text);
}

static void probe_cpus(const struct preflight_env *e, struct probe *p)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    p->online_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    p->omp_threads = e != NULL && e->omp_threads > 0 ? (int)e->omp_threads : 1;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        rz_fmt(p->cpu_list, sizeof p->cpu_list, "unknown (%s)", strerror(errno));
        return;
    }
    size_t used = 0;
    for (int c = 0; c < MAX_CPUS && c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        p->cpus[c / 8] |= (unsigned char)(1u << (c % 8));
        p->n_cpus++;
        int last = c;
        while (last + 1 < MAX_CPUS && last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            last++;
        if (used < sizeof p->cpu_list)
            used += (size_t)snprintf(p->cpu_list + used, sizeof p->cpu_list - used,
                                     last > c ? "%s%d-%d" : "%s%d", used ? "," : "", c, last);
        for (int k = c + 1; k <= last; k++) {
            p->cpus[k / 8] |= (unsigned char)(1u << (k % 8));
            p->n_cpus++;
        }
        c = last;
    }
}

/* Write, fsync and remove a probe file in the checkpoint directory. */
static void probe_ckpt_dir(const char *run_dir, struct probe *p)
{
    char dir[4096], path[4200];
    struct rz_err e;
    snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
    snprintf(path, sizeof path, "%s/.preflight-rank-%05d", dir, p->rank);
    if (rz_mkdirs(dir, &e) != RZ_OK || rz_durable_write_text(path, "preflight", "preflight\n",
                                                           &e) != RZ_OK) {
        rz_fmt(p->ckpt_err, sizeof p->ckpt_err, "%s", e.msg);
        return;
    }
    unlink(path);
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0)
        p->ckpt_free = (double)vfs.f_bavail * (double)vfs.f_frsize;
    p->ckpt_ok = 1;
}

/* The memory planner's peak RSS for this rank (plan.h): rank 0 also stages a tensor's moments
 * when it writes a ZeRO checkpoint. */
static double plan_need(const struct cfg *c, int world, int rank)
{
    struct plan p;
    if (plan_compute(&p, c, world, NULL, NULL) != RZ_OK)
        return 0.0;
    return (double)(rank == 0 ? p.peak_rank0 : p.peak);
}

static void probe_self(const struct preflight_opts *o, const char *root_token, struct probe *p)
{
    memset(p, 0, sizeof *p);
    p->rank = comm_rank(o->comm);
    snprintf(p->host, sizeof p->host, "%s", comm_host(o->comm));
    struct kern_ctx *k = NULL;
    if (kern_ctx_create(&k, KERN_DNNL, NULL) == RZ_OK)
        snprintf(p->isa, sizeof p->isa, "%s", kern_ctx_isa(k));
    kern_ctx_destroy(k);
    p->mem_available = meminfo("MemAvailable");
    p->mem_total = meminfo("MemTotal");
    probe_memory_limit(o->env, p);
    p->need = plan_need(o->cfg, comm_size(o->comm), p->rank);
    probe_cpus(o->env, p);
    probe_machine(p);
    probe_cpu_quota(p);
    probe_ckpt_dir(o->run_dir, p);
    pf_probe_run_root(o->run_dir, root_token, p);
    p->fail_hook = strcmp(RZ_HOOK(preflight_fail_host, ""), p->host) == 0;
}

/* ---- judging ----------------------------------------------------------------------------------------- */

static bool bound(const struct probe *p) { return p->n_cpus < p->online_cpus; }

static int mask_cpus(const unsigned char *m)
{
    int n = 0;
    for (int c = 0; c < MAX_CPUS; c++)
        n += (m[c / 8] >> (c % 8)) & 1;
    return n;
}

int preflight_cpu_clash(const unsigned char *a, const unsigned char *b, int online,
                        int set_threads)
{
    int na = mask_cpus(a), nb = mask_cpus(b);
    if (na >= online && nb >= online)
        return -1; /* neither is bound: the launch left placement to the kernel */
    if (memcmp(a, b, MAX_CPUS / 8) == 0 && na >= set_threads)
        return -1; /* one shared set (the job's cpuset, --cpu-bind=none) with room for all */
    for (int c = 0; c < MAX_CPUS; c++)
        if (a[c / 8] & b[c / 8] & (1u << (c % 8)))
            return c;
    return -1;
}

/* The OMP threads of every rank on r's node whose mask is exactly r's. */
static int set_threads(const struct probe *all, int n, int r)
{
    int t = 0;
    for (int q = 0; q < n; q++)
        if (strcmp(all[q].host, all[r].host) == 0 &&
            memcmp(all[q].cpus, all[r].cpus, sizeof all[r].cpus) == 0)
            t += all[q].omp_threads > 0 ? all[q].omp_threads : 1;
    return t;
}

static void judge_cpus(const struct probe *all, int n, struct verdict *v)
{
    v->ok[CHECK_CPUS] = true;
    for (int r = 0; r < n; r++) {
        const struct probe *p = &all[r];
        if (p->n_cpus > 0 && p->omp_threads > p->n_cpus) {
            v->ok[CHECK_CPUS] = false; /* the launch's settings: another node would not help */
            pf_add_detail(v, CHECK_CPUS, "rank %d (%s) may run on %d CPU(s) (%s) but OMP_NUM_THREADS "
                       "is %d: give srun --cpus-per-task=%d; ", r, p->host, p->n_cpus,
                       p->cpu_list, p->omp_threads, p->omp_threads);
        }
        for (int q = r + 1; q < n && v->ok[CHECK_CPUS]; q++) {
            int c = strcmp(all[q].host, p->host) == 0
                        ? preflight_cpu_clash(p->cpus, all[q].cpus, p->online_cpus,
                                              set_threads(all, n, r))
                        : -1;
            if (c < 0)
                continue;
            v->ok[CHECK_CPUS] = false;
            pf_add_detail(v, CHECK_CPUS, "ranks %d and %d on %s are bound to overlapping CPUs (%s and "
                       "%s share CPU %d): they would compete for one core; ", r, q, p->host,
                       p->cpu_list, all[q].cpu_list, c);
        }
    }
    if (v->ok[CHECK_CPUS])
        for (int r = 0; r < n; r++)
            if (pf_first_on_host(all, r))
                pf_add_detail(v, CHECK_CPUS, "%s%s: rank %d on CPUs %s, %d thread(s)%s", r ? "; " : "",
                           all[r].host, r, all[r].cpu_list, all[r].omp_threads,
                           bound(&all[r]) ? "" : " (not bound)");
}

/* Over the limit: the cheapest change of settings that would fit each of the node's `ranks` ranks
 * in its share of the usable memory (plan_suggest's order: ZeRO, synchronous checkpoints, recomputation, micro-batch). */
static void suggest_fit(struct verdict *v, const struct cfg *c, int world, int ranks,
                        double usable)
{
    struct plan_settings s;
    struct plan p;
    char change[400];
    uint64_t share = (uint64_t)(MEMORY_MARGIN * usable / (double)ranks);
    bool fits = plan_suggest(&s, &p, c, world, share);
    plan_describe_change(change, sizeof change, c, &s);
    if (fits)
        pf_add_detail(v, CHECK_MEMORY, "; the cheapest change that fits: %s (%.0f MB per rank)",
                   change, (double)p.peak_rank0 / 1e6);
    else
        pf_add_detail(v, CHECK_MEMORY, "; even %s needs %.0f MB per rank: more ranks or nodes",
                   change, (double)p.peak_rank0 / 1e6);
}

static void judge_memory(const struct probe *all, int n, const struct cfg *c, struct verdict *v)
{
    v->ok[CHECK_MEMORY] = true;
    for (int r = 0; r < n; r++) {
        if (!pf_first_on_host(all, r))
            continue;
        double need = 0, avail = all[r].mem_available, limit = all[r].mem_limit;
        int ranks = 0;
        for (int q = r; q < n; q++)
            if (strcmp(all[q].host, all[r].host) == 0) {
                need += all[q].need;
                ranks++;
                avail = all[q].mem_available < avail ? all[q].mem_available : avail;
            }
        bool capped = limit > 0.0 && limit < avail;
        double usable = capped ? limit : avail;
        bool ok = need <= MEMORY_MARGIN * usable && !all[r].fail_hook;
        v->ok[CHECK_MEMORY] = v->ok[CHECK_MEMORY] && ok;
        /* Too little under the job's own limit is the job's setting (every node has it); too
         * little available on this node is the node's: only then may another node help. */
        if (!ok && (!capped || all[r].fail_hook))
            pf_fail_host(v, all[r].host);
        pf_add_detail(v, CHECK_MEMORY, "%s%s: %d rank(s) need %.0f MB of %.0f MB %s%s%s%s", r ? "; " : "",
                   all[r].host, ranks, need / 1e6, usable / 1e6,
                   capped ? "(the job's limit: " : "available", capped ? all[r].limit_source : "",
                   capped ? ")" : "", all[r].fail_hook ? " (failed by a test hook)" : "");
        if (need > MEMORY_MARGIN * usable) {
            pf_add_detail(v, CHECK_MEMORY, ": over %.0f%%; %s at least %.0f MB",
                       100.0 * MEMORY_MARGIN, capped ? "raise --mem to" : "the node needs",
                       need / MEMORY_MARGIN / 1e6 + 1.0);
            suggest_fit(v, c, n, ranks, usable);
        }
    }
}

static void judge_ckpt(const struct probe *all, int n, double ckpt_bytes, struct verdict *v)
{
    v->ok[CHECK_CKPT] = true;
    double free_min = -1;
    for (int r = 0; r < n; r++) {
        if (!all[r].ckpt_ok) {
            v->ok[CHECK_CKPT] = false;
            pf_fail_host(v, all[r].host);
            pf_add_detail(v, CHECK_CKPT, "rank %d (%s): %s; ", r, all[r].host, all[r].ckpt_err);
            continue;
        }
        if (free_min < 0 || all[r].ckpt_free < free_min)
            free_min = all[r].ckpt_free;
    }
    if (!v->ok[CHECK_CKPT])
        return;
    v->ok[CHECK_CKPT] = free_min >= ckpt_bytes;
    pf_add_detail(v, CHECK_CKPT, "writable on every rank; %.0f MB free, a checkpoint needs %.0f MB",
               free_min / 1e6, ckpt_bytes / 1e6);
    if (!v->ok[CHECK_CKPT])
        for (int r = 0; r < n; r++)
            pf_fail_host(v, all[r].host);
    else if (free_min < 2.0 * ckpt_bytes)
        rz_fmt(v->warning, sizeof v->warning, "the checkpoint directory has %.0f MB free, less "
               "than two checkpoints (%.0f MB): a commit writes the new file before the old one "
               "is removed, so the next one may fail with a full disk", free_min / 1e6,
               2.0 * ckpt_bytes / 1e6);
}

static void judge_isa(const struct probe *all, int n, struct verdict *v)
{
    v->ok[CHECK_ISA] = true;
    for (int r = 0; r < n; r++) {
        if (all[r].isa[0] == '\0') {
            v->ok[CHECK_ISA] = false;
            pf_fail_host(v, all[r].host);
            pf_add_detail(v, CHECK_ISA, "rank %d (%s): oneDNN did not initialize; ", r, all[r].host);
            continue;
        }
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(all[q].isa, all[r].isa) != 0;
        if (first && v->ok[CHECK_ISA])
            pf_add_detail(v, CHECK_ISA, "%s%s", r ? ", " : "oneDNN ISA: ", all[r].isa);
    }
}

/* ---- health.json (record/health_json.h) --------------------------------------------------------------- */

static void fill_rank(struct health_rank *h, const struct probe *p)
{
    h->rank = p->rank;
    rz_fmt(h->host, sizeof h->host, "%s", p->host);
    rz_fmt(h->isa, sizeof h->isa, "%s", p->isa);
    rz_fmt(h->cpus, sizeof h->cpus, "%s", p->cpu_list);
    h->n_cpus = p->n_cpus;
    h->omp_threads = p->omp_threads;
    h->mem_available = p->mem_available;
    h->mem_total = p->mem_total;
    h->mem_limit = p->mem_limit;
    rz_fmt(h->mem_limit_source, sizeof h->mem_limit_source, "%s", p->limit_source);
    h->mem_need = p->need;
    h->ckpt_free = p->ckpt_free;
    h->run_root_seen = p->root_seen;
    rz_fmt(h->machine, sizeof h->machine, "%s", p->machine);
    h->cpu_quota = p->cpu_quota > 0.0 ? p->cpu_quota : (double)NAN;
}

static void fill_links(struct health_links *h, const struct comm_links *l, double hop_s)
{
    h->n_hosts = l->n_hosts < HEALTH_MAX_HOSTS ? l->n_hosts : HEALTH_MAX_HOSTS;
    h->probe_bytes = (int64_t)l->bytes;
    h->ring_hop_us = 1e6 * hop_s;
    for (int i = 0; i < h->n_hosts; i++) {
        rz_fmt(h->hosts[i], sizeof h->hosts[i], "%s", l->hosts[i]);
        for (int j = 0; j < h->n_hosts; j++) {
            h->gbps[i][j] = l->gbps[i][j];
            h->latency_us[i][j] = l->latency_us[i][j];
        }
    }
}

static enum rz_status write_health(const struct preflight_opts *o, int world_size,
                                   const struct probe *all, int n, const struct comm_links *links,
                                   double hop_s, const struct verdict *v, bool ok,
                                   struct rz_err *err)
{
    char path[4200];
    static struct health_doc h;
    memset(&h, 0, sizeof h);
    snprintf(path, sizeof path, "%s/health.json", o->run_dir);
    h.ok = ok;
    rz_utc_iso8601(h.time, sizeof h.time);
    h.world_size = world_size;
    const struct comm_launch *l = o->env != NULL ? o->env->launch : NULL;
    rz_fmt(h.slurm_ntasks, sizeof h.slurm_ntasks, "%s", l != NULL ? l->ntasks : "");
    for (int c = 0; c < N_CHECKS && h.n_checks < HEALTH_MAX_CHECKS; c++) {
        if (v->skipped[c])
            continue;
        struct health_check *k = &h.checks[h.n_checks++];
        rz_fmt(k->name, sizeof k->name, "%s", pf_check_names[c]);
        k->ok = v->ok[c];
        rz_fmt(k->detail, sizeof k->detail, "%s", v->detail[c]);
    }
    rz_fmt(h.warning, sizeof h.warning, "%s", v->warning);
    for (int r = 0; r < n && h.n_hosts < HEALTH_MAX_HOSTS; r++)
        if (pf_first_on_host(all, r))
            rz_fmt(h.hosts[h.n_hosts++], HEALTH_HOST_LEN, "%s", all[r].host);
    for (int i = 0; i < v->n_failed && h.n_failed < HEALTH_MAX_HOSTS; i++)
        rz_fmt(h.failed_hosts[h.n_failed++], HEALTH_HOST_LEN, "%s", v->failed_hosts[i]);
    struct health_rank *ranks = calloc((size_t)n + 1, sizeof *ranks);
    if (ranks == NULL)
        return rz_fail(err, RZ_ENOMEM, "preflight: out of memory for health.json");
    for (int r = 0; r < n; r++)
        fill_rank(&ranks[r], &all[r]);
    h.ranks = ranks;
    h.n_ranks = n;
    h.has_links = links != NULL;
    if (links != NULL)
        fill_links(&h.links, links, hop_s);
    enum rz_status st = health_write(path, &h, err);
    free(ranks);
    return st;
}

/* ---- the run --------------------------------------------------------------------------------------- */

/* The collective checks; st is the status of the MPI calls themselves.  The links are measured
 * into `links`, and the ring's hop on this placement into *hop_s (no verdict: the ladder's
 * model reads it, docs/ladder.md). */
static enum rz_status run_collectives(const struct preflight_opts *o, struct verdict *v,
                                      struct comm_links *links, double *hop_s, struct rz_err *err)
{
    struct rz_err e;
    int n = comm_size(o->comm);
    v->ok[CHECK_LAUNCH] = comm_check_launch(o->comm, o->env != NULL ? o->env->launch : NULL,
                                            &e) == RZ_OK;
    rz_fmt(v->detail[CHECK_LAUNCH], sizeof v->detail[0], "%s", v->ok[CHECK_LAUNCH] ?
           "MPI world size matches the launch" : e.msg);
    enum rz_status st = comm_ring_check(o->comm, &v->ok[CHECK_RING], err);
    snprintf(v->detail[CHECK_RING], sizeof v->detail[0], "%d rank(s) exchanged with their "
             "neighbours", n);
    double rel = 0;
    if (st == RZ_OK)
        st = comm_allreduce_check(o->comm, PROBE_FLOATS, &rel, err);
    v->ok[CHECK_ALLREDUCE] = st == RZ_OK && rel <= 1e-6;
    snprintf(v->detail[CHECK_ALLREDUCE], sizeof v->detail[0], "%zu floats, max relative error "
             "%.3g", PROBE_FLOATS, rel);
    bool again = false;
    if (st == RZ_OK)
        st = pf_probe_links(o->comm, &o->cfg->network,
                            (size_t)(o->cfg->network.probe_mb * 1048576.0), LINK_PROBE_REPS,
                            links, &again, err);
    if (st == RZ_OK)
        pf_judge_links(links, &o->cfg->network, v);
    if (st == RZ_OK && again)
        pf_add_detail(v, CHECK_LINKS, " (measured twice: each link's better figure)");
    if (st == RZ_OK)
        st = comm_hop_probe(o->comm, HOP_PROBE_REPS, hop_s, err);
    return st;
}

enum rz_status preflight_run(const struct preflight_opts *o, struct rz_err *err)
{
    const struct cfg *c = o->cfg;
    struct plan_settings ps = plan_settings_of(c);
    struct model_dims d = plan_model_dims(c, &ps);
    static struct verdict v;
    static struct comm_links links;
    double hop_s = NAN;
    memset(&v, 0, sizeof v);
    memset(&links, 0, sizeof links);
    int n = comm_size(o->comm);
    enum rz_status st = rz_mkdirs(o->run_dir, err);
    if (st != RZ_OK)
        return st;
    st = run_collectives(o, &v, &links, &hop_s, err);
    char root_token[PF_ROOT_TOKEN_LEN];
    if (st == RZ_OK)
        st = pf_root_token_share(o, root_token, err);
    else
        memset(root_token, 0, sizeof root_token);
    struct probe mine, *all = calloc((size_t)n, sizeof *all);
    if (all == NULL)
        return rz_fail(err, RZ_ENOMEM, "preflight: out of memory");
    probe_self(o, root_token, &mine);
    if (st == RZ_OK)
        st = comm_allgather_bytes(o->comm, &mine, sizeof mine, all, err);
    if (st == RZ_OK) {
        judge_cpus(all, n, &v);
        judge_memory(all, n, c, &v);
        judge_ckpt(all, n, 3.0 * 4.0 * (double)model_count_params(&d) + 1e6, &v);
        pf_judge_run_root(all, n, o->run_dir, &v);
        judge_isa(all, n, &v);
    }
    enum rz_status data_st = RZ_OK;
    if (st == RZ_OK)
        st = pf_check_data(c, o->comm, &v, &data_st, err);
    else if ((v.not_run[CHECK_DATA] = pf_data_applies(c)))
        rz_fmt(v.detail[CHECK_DATA], sizeof v.detail[0], "not run: MPI failed above");
    else
        v.skipped[CHECK_DATA] = v.ok[CHECK_DATA] = true;
    if (comm_rank(o->comm) == 0)
        pf_root_token_remove(o->run_dir, root_token); /* after the allgather: all have read it */
    bool ok = st == RZ_OK;
    char failed[256] = "";
    for (int k = 0; k < N_CHECKS; k++) {
        ok = ok && v.ok[k];
        if (!v.ok[k])
            snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "%s%s",
                     failed[0] ? ", " : "", pf_check_names[k]);
    }
    if (comm_rank(o->comm) == 0) {
        pf_log_verdict(o->log, &v);
        pf_log_links(o->log, &links);
        if (hop_s > 0 && o->log != NULL)
            fprintf(o->log, "ryzen-train: preflight: the ring's hop on this placement: %.1f us "
                    "(%d ranks)\n", 1e6 * hop_s, n);
    }
    if (st == RZ_OK && comm_rank(o->comm) == 0)
        st = write_health(o, n, all, n, &links, hop_s, &v, ok, err);
    free(all);
    if (st != RZ_OK)
        return st;
    if (data_st != RZ_OK) /* an input to fix first: no other node would read other files */
        return rz_fail(err, data_st, "preflight failed: %s (details in %s/health.json): %s",
                       failed, o->run_dir, v.detail[CHECK_DATA]);
    if (!ok)
        return rz_fail(err, RZ_EHEALTH, "preflight failed: %s (details in %s/health.json)",
                       failed, o->run_dir);
    return RZ_OK;
}

enum rz_status preflight_report_launch(const char *run_dir, const char *why, FILE *log,
                                       struct rz_err *err)
{
    static struct verdict v;
    memset(&v, 0, sizeof v);
    rz_fmt(v.detail[CHECK_LAUNCH], sizeof v.detail[0], "%s", why);
    for (int k = CHECK_LAUNCH + 1; k < N_CHECKS; k++) {
        v.not_run[k] = true;
        snprintf(v.detail[k], sizeof v.detail[0], "not run: MPI did not start");
    }
    v.skipped[CHECK_DATA] = true; /* not known here (no config): the next launch checks it */
    pf_log_verdict(log, &v);
    struct preflight_opts o = {.run_dir = run_dir};
    enum rz_status st = rz_mkdirs(run_dir, err);
    if (st == RZ_OK)
        st = write_health(&o, 0, NULL, 0, NULL, NAN, &v, false, err);
    return st;
}
