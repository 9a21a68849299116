/* preflight.c: the launch health checks (see preflight.h).  Each rank probes what only it can
 * see (its allowed CPUs, its node's memory and the job's memory limit there, its view of the
 * checkpoint directory, its oneDNN ISA); the probes are gathered and judged identically on every
 * rank, so all ranks exit with the same status. */
#define _GNU_SOURCE /* sched_getaffinity, cpu_set_t: Linux's view of a rank's CPUs */
#include "config.h"

#include "train/preflight.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/hooks.h"
#include "core/json.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "plan/plan.h"

#define MEMORY_MARGIN 0.9                  /* use at most 90% of the limit */
#define PROBE_FLOATS ((size_t)1 << 20)
#define MAX_CPUS PREFLIGHT_MAX_CPUS

struct probe {
    int rank;
    char host[64];
    char isa[48];
    double mem_available;    /* bytes, this node */
    double mem_total;        /* bytes, this node */
    double mem_limit;        /* bytes: the job's own limit on this node (0: none found) */
    char limit_source[160];  /* what set it: "--mem=...", "cgroup ..." */
    double need;             /* bytes this rank will use */
    int ckpt_ok;
    double ckpt_free;        /* bytes free under the checkpoint directory */
    char ckpt_err[160];
    int n_cpus;              /* CPUs this rank may run on */
    int online_cpus;         /* CPUs of the node */
    int omp_threads;
    unsigned char cpus[MAX_CPUS / 8]; /* the affinity mask */
    char cpu_list[96];       /* "0-3,8" */
    int fail_hook;           /* test hook: fail this host's memory check */
    int root_seen;           /* read back the token rank 0 wrote in the run directory */
    char root_err[160];      /* why not */
};

enum { CHECK_LAUNCH, CHECK_RING, CHECK_ALLREDUCE, CHECK_CPUS, CHECK_MEMORY, CHECK_CKPT,
       CHECK_RUN_ROOT, CHECK_ISA, N_CHECKS };
static const char *const check_names[N_CHECKS] = {"launch", "ring", "allreduce", "cpus", "memory",
                                                  "checkpoint_dir", "run_root", "isa"};

#define MAX_FAILED 64
struct verdict {
    bool ok[N_CHECKS];
    bool not_run[N_CHECKS]; /* MPI never started, so the check could not run (also !ok) */
    char detail[N_CHECKS][768];
    char warning[512];      /* passed, but worth saying */
    char failed_hosts[MAX_FAILED][64];
    int n_failed;
};

/* One line per check, as the job output shows them. */
static void log_verdict(FILE *log, const struct verdict *v)
{
    for (int k = 0; log != NULL && k < N_CHECKS; k++)
        fprintf(log, "ryzen-train: preflight: %-14s %s  %s\n", check_names[k],
                v->ok[k] ? "ok  " : v->not_run[k] ? "-   " : "FAIL", v->detail[k]);
    if (log != NULL && v->warning[0] != '\0')
        fprintf(log, "ryzen-train: preflight: WARNING: %s\n", v->warning);
}

static void fail_host(struct verdict *v, const char *host)
{
    for (int i = 0; i < v->n_failed; i++)
        if (strcmp(v->failed_hosts[i], host) == 0)
            return;
    if (v->n_failed < MAX_FAILED)
        rz_fmt(v->failed_hosts[v->n_failed++], sizeof v->failed_hosts[0], "%s", host);
}

/* Append to a check's detail. */
static void add_detail(struct verdict *v, int check, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_detail(struct verdict *v, int check, const char *fmt, ...)
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

/* The tightest memory limit on this process's cgroup and its parents (cgroup v1 memory
 * controller, or v2's memory.max); 0 when none. */
static double cgroup_memory_limit(char *where, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024], path[1400];
    double best = 0.0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *ctrl = strchr(line, ':'), *rel = ctrl != NULL ? strchr(ctrl + 1, ':') : NULL;
        if (rel == NULL)
            continue;
        *rel++ = '\0';
        bool v1 = strstr(ctrl + 1, "memory") != NULL, v2 = ctrl[1] == '\0';
        if (!v1 && !v2)
            continue;
        for (char *end = rel + strlen(rel);;) {
            rz_fmt(path, sizeof path, v1 ? "/sys/fs/cgroup/memory%.*s/memory.limit_in_bytes"
                                         : "/sys/fs/cgroup%.*s/memory.max", (int)(end - rel), rel);
            double x = cgroup_number(path);
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

/* The job's own limit on this node: the cgroup's, --mem (SLURM_MEM_PER_NODE) and --mem-per-cpu
 * times the node's CPUs; the tightest wins. */
static void probe_memory_limit(const struct preflight_env *e, struct probe *p)
{
    char where[160] = "";
    double cg = cgroup_memory_limit(where, sizeof where);
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

/* ---- the run root is shared ---- */
#define ROOT_TOKEN ".preflight-shared"
#define ROOT_TOKEN_LEN 64

static void root_token_path(const char *run_dir, char *path, size_t len)
{
    snprintf(path, len, "%s/" ROOT_TOKEN, run_dir);
}

/* Rank 0 writes a token no earlier run wrote (its host, pid and time) to RUN_DIR/.preflight-shared,
 * durably, and broadcasts it; token[0] == '\0' when rank 0 could not write it.  The broadcast
 * also orders every rank's read after the write. */
static enum rz_status root_token_share(const struct preflight_opts *o, char *token,
                                       struct rz_err *err)
{
    memset(token, 0, ROOT_TOKEN_LEN);
    if (comm_rank(o->comm) == 0) {
        char path[4200], stamp[32], text[ROOT_TOKEN_LEN + 1];
        struct rz_err e;
        rz_utc_iso8601(stamp, sizeof stamp);
        snprintf(token, ROOT_TOKEN_LEN, "%s %ld %s", comm_host(o->comm), (long)getpid(), stamp);
        snprintf(text, sizeof text, "%s\n", token);
        root_token_path(o->run_dir, path, sizeof path);
        if (rz_durable_write_text(path, "preflight", text, &e) != RZ_OK)
            memset(token, 0, ROOT_TOKEN_LEN);
    }
    return comm_bcast_bytes(o->comm, token, ROOT_TOKEN_LEN, err);
}

/* Read the token back.  A file that is not there yet is looked for again for up to 2 s: an NFS
 * client may cache the directory's old listing for a moment (a hang guard, not a speed). */
static void probe_run_root(const char *run_dir, const char *token, struct probe *p)
{
    char path[4200], got[ROOT_TOKEN_LEN + 2] = "";
    root_token_path(run_dir, path, sizeof path);
    if (token[0] == '\0') {
        rz_fmt(p->root_err, sizeof p->root_err, "rank 0 could not write %s", path);
        return;
    }
    FILE *f = NULL;
    for (int tries = 0; f == NULL && tries < 20; tries++) {
        f = fopen(path, "r");
        if (f == NULL && errno != ENOENT)
            break;
        if (f == NULL)
            usleep(100000);
    }
    if (f == NULL) {
        rz_fmt(p->root_err, sizeof p->root_err, "%s: %s", path, strerror(errno));
        return;
    }
    if (fgets(got, sizeof got, f) == NULL)
        got[0] = '\0';
    fclose(f);
    got[strcspn(got, "\n")] = '\0';
    p->root_seen = strcmp(got, token) == 0;
    if (!p->root_seen)
        rz_fmt(p->root_err, sizeof p->root_err, "%s holds another run's token ('%.60s')", path,
               got);
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
    probe_ckpt_dir(o->run_dir, p);
    probe_run_root(o->run_dir, root_token, p);
    p->fail_hook = strcmp(RZ_HOOK(preflight_fail_host, ""), p->host) == 0;
}

/* ---- judging ----------------------------------------------------------------------------------------- */

static bool first_on_host(const struct probe *all, int r)
{
    for (int q = 0; q < r; q++)
        if (strcmp(all[q].host, all[r].host) == 0)
            return false;
    return true;
}

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
            add_detail(v, CHECK_CPUS, "rank %d (%s) may run on %d CPU(s) (%s) but OMP_NUM_THREADS "
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
            add_detail(v, CHECK_CPUS, "ranks %d and %d on %s are bound to overlapping CPUs (%s and "
                       "%s share CPU %d): they would compete for one core; ", r, q, p->host,
                       p->cpu_list, all[q].cpu_list, c);
        }
    }
    if (v->ok[CHECK_CPUS])
        for (int r = 0; r < n; r++)
            if (first_on_host(all, r))
                add_detail(v, CHECK_CPUS, "%s%s: rank %d on CPUs %s, %d thread(s)%s", r ? "; " : "",
                           all[r].host, r, all[r].cpu_list, all[r].omp_threads,
                           bound(&all[r]) ? "" : " (not bound)");
}

/* Over the limit: the cheapest change of settings that would fit each of the node's `ranks` ranks
 * in its share of the usable memory (plan_suggest's order: ZeRO, recomputation, micro-batch). */
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
        add_detail(v, CHECK_MEMORY, "; the cheapest change that fits: %s (%.0f MB per rank)",
                   change, (double)p.peak_rank0 / 1e6);
    else
        add_detail(v, CHECK_MEMORY, "; even %s needs %.0f MB per rank: more ranks or nodes",
                   change, (double)p.peak_rank0 / 1e6);
}

static void judge_memory(const struct probe *all, int n, const struct cfg *c, struct verdict *v)
{
    v->ok[CHECK_MEMORY] = true;
    for (int r = 0; r < n; r++) {
        if (!first_on_host(all, r))
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
            fail_host(v, all[r].host);
        add_detail(v, CHECK_MEMORY, "%s%s: %d rank(s) need %.0f MB of %.0f MB %s%s%s%s", r ? "; " : "",
                   all[r].host, ranks, need / 1e6, usable / 1e6,
                   capped ? "(the job's limit: " : "available", capped ? all[r].limit_source : "",
                   capped ? ")" : "", all[r].fail_hook ? " (failed by a test hook)" : "");
        if (need > MEMORY_MARGIN * usable) {
            add_detail(v, CHECK_MEMORY, ": over %.0f%%; %s at least %.0f MB",
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
            fail_host(v, all[r].host);
            add_detail(v, CHECK_CKPT, "rank %d (%s): %s; ", r, all[r].host, all[r].ckpt_err);
            continue;
        }
        if (free_min < 0 || all[r].ckpt_free < free_min)
            free_min = all[r].ckpt_free;
    }
    if (!v->ok[CHECK_CKPT])
        return;
    v->ok[CHECK_CKPT] = free_min >= ckpt_bytes;
    add_detail(v, CHECK_CKPT, "writable on every rank; %.0f MB free, a checkpoint needs %.0f MB",
               free_min / 1e6, ckpt_bytes / 1e6);
    if (!v->ok[CHECK_CKPT])
        for (int r = 0; r < n; r++)
            fail_host(v, all[r].host);
    else if (free_min < 2.0 * ckpt_bytes)
        rz_fmt(v->warning, sizeof v->warning, "the checkpoint directory has %.0f MB free, less "
               "than two checkpoints (%.0f MB): a commit writes the new file before the old one "
               "is removed, so the next one may fail with a full disk", free_min / 1e6,
               2.0 * ckpt_bytes / 1e6);
}

/* Every rank read rank 0's token: the run root is one filesystem for the whole job, as a resume on
 * other nodes needs.  When no rank off rank 0's host saw it, the job's run root is node-local (its
 * setting, which would follow it to any node: no host is blamed); when some did, the hosts that
 * did not lack the shared mount. */
static void judge_run_root(const struct probe *all, int n, const char *run_dir, struct verdict *v)
{
    int blind = 0, remote_seen = 0;
    for (int r = 0; r < n; r++) {
        if (!all[r].root_seen)
            blind++;
        else if (strcmp(all[r].host, all[0].host) != 0)
            remote_seen++;
    }
    v->ok[CHECK_RUN_ROOT] = blind == 0;
    if (blind == 0) {
        add_detail(v, CHECK_RUN_ROOT, "every rank reads what rank 0 wrote in %s", run_dir);
        return;
    }
    add_detail(v, CHECK_RUN_ROOT, "not shared: ");
    for (int r = 0; r < n; r++) {
        if (all[r].root_seen || !first_on_host(all, r))
            continue;
        add_detail(v, CHECK_RUN_ROOT, "rank %d (%s): %s; ", r, all[r].host, all[r].root_err);
        if (remote_seen > 0)
            fail_host(v, all[r].host);
    }
    if (remote_seen == 0)
        add_detail(v, CHECK_RUN_ROOT, "the run root is local to each node: a resume on other "
                   "nodes would find no checkpoint.  Set RYZEN_RUN_ROOT (or submit from) a "
                   "filesystem every node mounts; /tmp is each node's own");
    else
        add_detail(v, CHECK_RUN_ROOT, "these hosts do not mount the run root's filesystem");
}

static void judge_isa(const struct probe *all, int n, struct verdict *v)
{
    v->ok[CHECK_ISA] = true;
    for (int r = 0; r < n; r++) {
        if (all[r].isa[0] == '\0') {
            v->ok[CHECK_ISA] = false;
            fail_host(v, all[r].host);
            add_detail(v, CHECK_ISA, "rank %d (%s): oneDNN did not initialize; ", r, all[r].host);
            continue;
        }
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(all[q].isa, all[r].isa) != 0;
        if (first && v->ok[CHECK_ISA])
            add_detail(v, CHECK_ISA, "%s%s", r ? ", " : "oneDNN ISA: ", all[r].isa);
    }
}

/* ---- health.json ----------------------------------------------------------------------------------- */

static void write_ranks(struct rz_json *j, const struct probe *all, int n)
{
    rz_json_key(j, "ranks");
    rz_json_array_begin(j);
    for (int r = 0; r < n; r++) {
        rz_json_object_begin(j);
        rz_json_kv_int(j, "rank", all[r].rank);
        rz_json_kv_string(j, "host", all[r].host);
        rz_json_kv_string(j, "isa", all[r].isa);
        rz_json_kv_string(j, "cpus", all[r].cpu_list);
        rz_json_kv_int(j, "n_cpus", all[r].n_cpus);
        rz_json_kv_int(j, "omp_threads", all[r].omp_threads);
        rz_json_kv_double(j, "mem_available_bytes", all[r].mem_available);
        rz_json_kv_double(j, "mem_total_bytes", all[r].mem_total);
        rz_json_kv_double(j, "mem_limit_bytes", all[r].mem_limit);
        rz_json_kv_string(j, "mem_limit_source", all[r].limit_source);
        rz_json_kv_double(j, "mem_need_bytes", all[r].need);
        rz_json_kv_double(j, "ckpt_free_bytes", all[r].ckpt_free);
        rz_json_kv_bool(j, "run_root_seen", all[r].root_seen);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

static enum rz_status write_health(const struct preflight_opts *o, int world_size,
                                   const struct probe *all, int n, const struct verdict *v,
                                   bool ok, struct rz_err *err)
{
    char path[4200], stamp[32];
    struct rz_durable d;
    snprintf(path, sizeof path, "%s/health.json", o->run_dir);
    enum rz_status st = rz_durable_open(&d, path, "health", err);
    if (st != RZ_OK)
        return st;
    rz_utc_iso8601(stamp, sizeof stamp);
    struct rz_json j;
    rz_json_init(&j, d.f);
    rz_json_object_begin(&j);
    rz_json_kv_bool(&j, "ok", ok);
    rz_json_kv_string(&j, "time", stamp);
    rz_json_kv_int(&j, "world_size", world_size);
    const struct comm_launch *l = o->env != NULL ? o->env->launch : NULL;
    rz_json_kv_string(&j, "slurm_ntasks", l != NULL ? l->ntasks : "");
    rz_json_key(&j, "checks");
    rz_json_array_begin(&j);
    for (int c = 0; c < N_CHECKS; c++) {
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "name", check_names[c]);
        rz_json_kv_bool(&j, "ok", v->ok[c]);
        rz_json_kv_string(&j, "detail", v->detail[c]);
        rz_json_object_end(&j);
    }
    rz_json_array_end(&j);
    rz_json_kv_string(&j, "warning", v->warning);
    rz_json_key(&j, "hosts");
    rz_json_array_begin(&j);
    for (int r = 0; r < n; r++)
        if (first_on_host(all, r))
            rz_json_string(&j, all[r].host);
    rz_json_array_end(&j);
    rz_json_key(&j, "failed_hosts");
    rz_json_array_begin(&j);
    for (int i = 0; i < v->n_failed; i++)
        rz_json_string(&j, v->failed_hosts[i]);
    rz_json_array_end(&j);
    write_ranks(&j, all, n);
    rz_json_object_end(&j);
    fputc('\n', d.f);
    return rz_durable_commit(&d, err);
}

/* ---- the run --------------------------------------------------------------------------------------- */

/* The collective checks; st is the status of the MPI calls themselves. */
static enum rz_status run_collectives(const struct preflight_opts *o, struct verdict *v,
                                      struct rz_err *err)
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
    return st;
}

enum rz_status preflight_run(const struct preflight_opts *o, struct rz_err *err)
{
    const struct cfg *c = o->cfg;
    struct plan_settings ps = plan_settings_of(c);
    struct model_dims d = plan_model_dims(c, &ps);
    static struct verdict v;
    memset(&v, 0, sizeof v);
    int n = comm_size(o->comm);
    enum rz_status st = rz_mkdirs(o->run_dir, err);
    if (st != RZ_OK)
        return st;
    st = run_collectives(o, &v, err);
    char root_token[ROOT_TOKEN_LEN];
    if (st == RZ_OK)
        st = root_token_share(o, root_token, err);
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
        judge_run_root(all, n, o->run_dir, &v);
        judge_isa(all, n, &v);
    }
    if (comm_rank(o->comm) == 0 && root_token[0] != '\0') {
        char path[4200];
        root_token_path(o->run_dir, path, sizeof path);
        unlink(path); /* every rank has read it: the allgather above came after the reads */
    }
    bool ok = st == RZ_OK;
    char failed[256] = "";
    for (int k = 0; k < N_CHECKS; k++) {
        ok = ok && v.ok[k];
        if (!v.ok[k])
            snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "%s%s",
                     failed[0] ? ", " : "", check_names[k]);
    }
    if (comm_rank(o->comm) == 0)
        log_verdict(o->log, &v);
    if (st == RZ_OK && comm_rank(o->comm) == 0)
        st = write_health(o, n, all, n, &v, ok, err);
    free(all);
    if (st != RZ_OK)
        return st;
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
    log_verdict(log, &v);
    struct preflight_opts o = {.run_dir = run_dir};
    enum rz_status st = rz_mkdirs(run_dir, err);
    if (st == RZ_OK)
        st = write_health(&o, 0, NULL, 0, &v, false, err);
    return st;
}
