/* health_json.h: RUN_DIR/health.json, the preflight's verdict: its struct, its writer and its reader,
 * the one place that knows the format.
 *   written by  ryzen-train --preflight (rank 0, durably: core/durable.h)
 *   read by     ryzen-step (the hosts to exclude), ryzen-gate (the report)
 * Fields (keys in this order): ok, time, world_size, slurm_ntasks, checks [{name, ok, detail}],
 * warning, hosts, failed_hosts, ranks [{rank, host, isa, cpus, n_cpus, omp_threads,
 * mem_available_bytes, mem_total_bytes, mem_limit_bytes, mem_limit_source, mem_need_bytes,
 * ckpt_free_bytes, run_root_seen, machine}], links {hosts, probe_bytes, gbps [[...]], latency_us [[...]],
 * ring_hop_us}.
 * Older files may lack checks, warning, the later rank fields, links and ring_hop_us: the reader
 * leaves those empty (ring_hop_us NaN).
 * Ownership: health_read allocates ranks; health_free releases them (a zeroed doc is fine). */
#ifndef RZ_RECORD_HEALTH_JSON_H
#define RZ_RECORD_HEALTH_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define HEALTH_MAX_CHECKS 16
#define HEALTH_MAX_HOSTS 64
#define HEALTH_HOST_LEN 64

struct health_check {
    char name[32];
    bool ok;
    char detail[768];
};

struct health_rank {
    int rank;
    char host[HEALTH_HOST_LEN];
    char isa[48];
    char cpus[96];              /* the affinity list, "0-3,8" */
    int n_cpus, omp_threads;
    double mem_available, mem_total, mem_limit, mem_need, ckpt_free; /* bytes */
    char mem_limit_source[160];
    bool run_root_seen;
    char machine[40];           /* the kernel's boot id ("" unknown, or an older file) */
    double cpu_quota;           /* cores of CPU time its cgroup allows, shared by the node's
                                 * ranks (NaN: no quota, or an older file) */
};

/* The links between the job's nodes: [i][j] from hosts[i] to hosts[j]. */
struct health_links {
    int n_hosts;
    char hosts[HEALTH_MAX_HOSTS][HEALTH_HOST_LEN];
    int64_t probe_bytes;
    double gbps[HEALTH_MAX_HOSTS][HEALTH_MAX_HOSTS];
    double latency_us[HEALTH_MAX_HOSTS][HEALTH_MAX_HOSTS];
    double ring_hop_us;         /* one hop of a ring of every rank, on the job's own placement
                                 * (comm_hop_probe); NaN: one rank, or an older file */
};

struct health_doc {
    bool ok;
    char time[32];
    int world_size;
    char slurm_ntasks[32];
    int n_checks;
    struct health_check checks[HEALTH_MAX_CHECKS];
    char warning[512];
    int n_hosts;
    char hosts[HEALTH_MAX_HOSTS][HEALTH_HOST_LEN];
    int n_failed;
    char failed_hosts[HEALTH_MAX_HOSTS][HEALTH_HOST_LEN];
    int n_ranks;
    struct health_rank *ranks;
    bool has_links;
    struct health_links links;
};

/* Write `h` to `path` durably (RZ_EIO naming the path). */
enum rz_status health_write(const char *path, const struct health_doc *h, struct rz_err *err);
/* Read `path` into `h` (zeroed first).  RZ_EIO when it cannot be read, RZ_EDATA naming the file
 * and the field when it is not a health.json (no 'ranks' array, a rank without rank, host or
 * mem_total_bytes, a links matrix of the wrong shape). */
enum rz_status health_read(const char *path, struct health_doc *h, struct rz_err *err);
void health_free(struct health_doc *h);

/* The links object as health.json and report.json hold it ({hosts, probe_bytes, gbps,
 * latency_us, ring_hop_us}): its fields, written into an object the caller has opened (the report adds its
 * own after them), and read back strictly (hosts name the rows of the two square matrices); the
 * message names the file. */
struct rz_json;
struct gj_value;
void health_links_fields(struct rz_json *j, const struct health_links *l);
enum rz_status health_links_read(const struct gj_value *o, struct health_links *l,
                                 const char *path, struct rz_err *err);

#endif
