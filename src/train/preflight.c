/* preflight.c: the launch health checks (see preflight.h).  Each rank probes what only it can
 * see (its node's memory, its view of the checkpoint directory, its oneDNN ISA); the probes are
 * gathered and judged identically on every rank, so all ranks exit with the same status. */
#include "config.h"

#include "train/preflight.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/util.h"
#include "kernels/kernels.h"
#include "model/model.h"

#define RUNTIME_BYTES (64.0 * 1024 * 1024) /* libraries, stacks, oneDNN scratch: measured ~40 MB */
#define MEMORY_MARGIN 0.9                  /* use at most 90% of MemAvailable */
#define PROBE_FLOATS ((size_t)1 << 20)

struct probe {
    int rank;
    char host[64];
    char isa[48];
    double mem_available;    /* bytes, this node */
    double mem_total;        /* bytes, this node */
    double need;             /* bytes this rank will use */
    int ckpt_ok;
    double ckpt_free;        /* bytes free under the checkpoint directory */
    char ckpt_err[160];
};

enum { CHECK_LAUNCH, CHECK_RING, CHECK_ALLREDUCE, CHECK_MEMORY, CHECK_CKPT, CHECK_ISA, N_CHECKS };
static const char *const check_names[N_CHECKS] = {"launch", "ring", "allreduce", "memory",
                                                  "checkpoint_dir", "isa"};

struct verdict {
    bool ok[N_CHECKS];
    bool not_run[N_CHECKS]; /* MPI never started, so the check could not run (also !ok) */
    char detail[N_CHECKS][512];
};

/* One line per check, as the job output shows them. */
static void log_verdict(FILE *log, const struct verdict *v)
{
    for (int k = 0; log != NULL && k < N_CHECKS; k++)
        fprintf(log, "ryzen-train: preflight: %-14s %s  %s\n", check_names[k],
                v->ok[k] ? "ok  " : v->not_run[k] ? "-   " : "FAIL", v->detail[k]);
}

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

/* Write, fsync and remove a probe file in the checkpoint directory. */
static void probe_ckpt_dir(const char *run_dir, struct probe *p)
{
    char dir[4096], path[4200];
    struct rz_err e;
    snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
    if (rz_mkdirs(dir, &e) != RZ_OK) {
        rz_fmt(p->ckpt_err, sizeof p->ckpt_err, "%s", e.msg);
        return;
    }
    snprintf(path, sizeof path, "%s/.preflight-rank-%05d", dir, p->rank);
    FILE *f = fopen(path, "w");
    bool ok = f != NULL && fputs("preflight\n", f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (f != NULL && fclose(f) != 0)
        ok = false;
    unlink(path);
    if (!ok) {
        rz_fmt(p->ckpt_err, sizeof p->ckpt_err, "write '%s': %s", path, strerror(saved));
        return;
    }
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0)
        p->ckpt_free = (double)vfs.f_bavail * (double)vfs.f_frsize;
    p->ckpt_ok = 1;
}

static void probe_self(const struct preflight_opts *o, const struct model_dims *d, struct probe *p)
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
    p->need = (double)model_memory_bytes(d) + RUNTIME_BYTES;
    probe_ckpt_dir(o->run_dir, p);
}

static void judge_memory(const struct probe *all, int n, struct verdict *v)
{
    v->ok[CHECK_MEMORY] = true;
    size_t used = 0;
    char *out = v->detail[CHECK_MEMORY];
    for (int r = 0; r < n; r++) {
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(all[q].host, all[r].host) != 0;
        if (!first)
            continue;
        double need = 0, avail = all[r].mem_available;
        int ranks = 0;
        for (int q = r; q < n; q++)
            if (strcmp(all[q].host, all[r].host) == 0) {
                need += all[q].need;
                ranks++;
                avail = all[q].mem_available < avail ? all[q].mem_available : avail;
            }
        bool ok = need <= MEMORY_MARGIN * avail;
        v->ok[CHECK_MEMORY] = v->ok[CHECK_MEMORY] && ok;
        if (used < sizeof v->detail[0])
            used += (size_t)snprintf(out + used, sizeof v->detail[0] - used,
                                     "%s%s: %d rank(s) need %.0f MB of %.0f MB available%s",
                                     used ? "; " : "", all[r].host, ranks, need / 1e6, avail / 1e6,
                                     ok ? "" : " (over 90%)");
    }
}

static void judge_ckpt(const struct probe *all, int n, double ckpt_bytes, struct verdict *v)
{
    v->ok[CHECK_CKPT] = true;
    double free_min = -1;
    for (int r = 0; r < n && v->ok[CHECK_CKPT]; r++) {
        if (!all[r].ckpt_ok) {
            v->ok[CHECK_CKPT] = false;
            snprintf(v->detail[CHECK_CKPT], sizeof v->detail[0], "rank %d (%s): %s", r,
                     all[r].host, all[r].ckpt_err);
            return;
        }
        if (free_min < 0 || all[r].ckpt_free < free_min)
            free_min = all[r].ckpt_free;
    }
    v->ok[CHECK_CKPT] = free_min >= 3.0 * ckpt_bytes;
    snprintf(v->detail[CHECK_CKPT], sizeof v->detail[0], "writable on every rank; %.0f MB free, "
             "3 checkpoints need %.0f MB", free_min / 1e6, 3.0 * ckpt_bytes / 1e6);
}

static void judge_isa(const struct probe *all, int n, struct verdict *v)
{
    v->ok[CHECK_ISA] = true;
    size_t used = 0;
    for (int r = 0; r < n; r++) {
        if (all[r].isa[0] == '\0') {
            v->ok[CHECK_ISA] = false;
            snprintf(v->detail[CHECK_ISA], sizeof v->detail[0], "rank %d (%s): oneDNN did not "
                     "initialize", r, all[r].host);
            return;
        }
        bool first = true;
        for (int q = 0; q < r && first; q++)
            first = strcmp(all[q].isa, all[r].isa) != 0;
        if (first && used < sizeof v->detail[0])
            used += (size_t)snprintf(v->detail[CHECK_ISA] + used, sizeof v->detail[0] - used,
                                     "%s%s", used ? ", " : "oneDNN ISA: ", all[r].isa);
    }
}

static enum rz_status write_health(const char *run_dir, int world_size, const struct probe *all,
                                   int n, const struct verdict *v, bool ok, struct rz_err *err)
{
    char path[4200], stamp[32];
    struct rz_durable d;
    snprintf(path, sizeof path, "%s/health.json", run_dir);
    enum rz_status st = rz_durable_open(&d, path, "health", err);
    if (st != RZ_OK)
        return st;
    FILE *f = d.f;
    rz_utc_iso8601(stamp, sizeof stamp);
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_bool(&j, "ok", ok);
    rz_json_kv_string(&j, "time", stamp);
    rz_json_kv_int(&j, "world_size", world_size);
    const char *ntasks = getenv("SLURM_NTASKS");
    rz_json_kv_string(&j, "slurm_ntasks", ntasks != NULL ? ntasks : "");
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
    rz_json_key(&j, "ranks");
    rz_json_array_begin(&j);
    for (int r = 0; r < n; r++) {
        rz_json_object_begin(&j);
        rz_json_kv_int(&j, "rank", all[r].rank);
        rz_json_kv_string(&j, "host", all[r].host);
        rz_json_kv_string(&j, "isa", all[r].isa);
        rz_json_kv_double(&j, "mem_available_bytes", all[r].mem_available);
        rz_json_kv_double(&j, "mem_total_bytes", all[r].mem_total);
        rz_json_kv_double(&j, "mem_need_bytes", all[r].need);
        rz_json_kv_double(&j, "ckpt_free_bytes", all[r].ckpt_free);
        rz_json_object_end(&j);
    }
    rz_json_array_end(&j);
    rz_json_object_end(&j);
    fputc('\n', f);
    return rz_durable_commit(&d, err);
}

enum rz_status preflight_run(const struct preflight_opts *o, struct rz_err *err)
{
    const struct cfg *c = o->cfg;
    struct model_dims d = {
        .vocab = c->model.vocab_size, .d_model = c->model.d_model, .n_heads = c->model.n_heads,
        .n_layers = c->model.n_layers, .d_ff = c->model.d_ff, .seq_len = c->model.seq_len,
        .batch = c->training.batch_size};
    struct verdict v;
    memset(&v, 0, sizeof v);
    struct rz_err e;
    int n = comm_size(o->comm);
    enum rz_status st = rz_mkdirs(o->run_dir, err);
    if (st != RZ_OK)
        return st;
    v.ok[CHECK_LAUNCH] = comm_check_launch(o->comm, &e) == RZ_OK;
    rz_fmt(v.detail[CHECK_LAUNCH], sizeof v.detail[0], "%s", v.ok[CHECK_LAUNCH] ?
             "MPI world size matches the launch" : e.msg);
    st = comm_ring_check(o->comm, &v.ok[CHECK_RING], err);
    snprintf(v.detail[CHECK_RING], sizeof v.detail[0], "%d rank(s) exchanged with their "
             "neighbours", n);
    double rel = 0;
    if (st == RZ_OK)
        st = comm_allreduce_check(o->comm, PROBE_FLOATS, &rel, err);
    v.ok[CHECK_ALLREDUCE] = st == RZ_OK && rel <= 1e-6;
    snprintf(v.detail[CHECK_ALLREDUCE], sizeof v.detail[0], "%zu floats, max relative error "
             "%.3g", PROBE_FLOATS, rel);
    struct probe mine, *all = calloc((size_t)n, sizeof *all);
    if (all == NULL)
        return rz_fail(err, RZ_ENOMEM, "preflight: out of memory");
    probe_self(o, &d, &mine);
    if (st == RZ_OK)
        st = comm_allgather_bytes(o->comm, &mine, sizeof mine, all, err);
    if (st == RZ_OK) {
        judge_memory(all, n, &v);
        judge_ckpt(all, n, 3.0 * 4.0 * (double)model_count_params(&d) + 1e6, &v);
        judge_isa(all, n, &v);
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
        st = write_health(o->run_dir, n, all, n, &v, ok, err);
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
    struct verdict v;
    memset(&v, 0, sizeof v);
    rz_fmt(v.detail[CHECK_LAUNCH], sizeof v.detail[0], "%s", why);
    for (int k = CHECK_LAUNCH + 1; k < N_CHECKS; k++) {
        v.not_run[k] = true;
        snprintf(v.detail[k], sizeof v.detail[0], "not run: MPI did not start");
    }
    log_verdict(log, &v);
    enum rz_status st = rz_mkdirs(run_dir, err);
    if (st == RZ_OK)
        st = write_health(run_dir, 0, NULL, 0, &v, false, err);
    return st;
}
