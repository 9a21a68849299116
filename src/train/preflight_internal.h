/* preflight_internal.h: what the preflight's files share: preflight.c (the probes, the judges of
 * CPUs, memory, checkpoint directory and ISA, health.json, the run), preflight_verdict.c (the
 * verdict and its lines), preflight_root.c (run_root), preflight_net.c (links),
 * preflight_data.c (data). */
#ifndef RZ_TRAIN_PREFLIGHT_INTERNAL_H
#define RZ_TRAIN_PREFLIGHT_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "comm/comm.h"
#include "config/cfg.h"
#include "train/preflight.h"

enum { CHECK_LAUNCH, CHECK_RING, CHECK_ALLREDUCE, CHECK_LINKS, CHECK_CPUS, CHECK_MEMORY,
       CHECK_CKPT, CHECK_RUN_ROOT, CHECK_ISA, CHECK_DATA, N_CHECKS };

#define MAX_FAILED 64
struct verdict {
    bool ok[N_CHECKS];
    bool not_run[N_CHECKS]; /* MPI never started, so the check could not run (also !ok) */
    bool skipped[N_CHECKS]; /* does not apply to this run (data of random or markov): ok, and
                             * neither shown nor in health.json */
    char detail[N_CHECKS][768];
    char warning[512];      /* passed, but worth saying */
    char failed_hosts[MAX_FAILED][64];
    int n_failed;
};

/* What one rank saw; gathered from every rank and judged alike on all of them. */
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
    unsigned char cpus[PREFLIGHT_MAX_CPUS / 8]; /* the affinity mask */
    char cpu_list[96];       /* "0-3,8" */
    int fail_hook;           /* test hook: fail this host's memory check */
    int root_seen;           /* read back the token rank 0 wrote in the run directory */
    char machine[40];        /* the kernel's boot id: ranks that share it share the CPUs, whatever
                              * their hosts are called ("" unknown) */
    char root_err[160];      /* why not */
    double cpu_quota;        /* cores of CPU time its cgroup allows (0: no quota) */
};

extern const char *const pf_check_names[N_CHECKS];

/* One line per check, as the job output shows them (log NULL: quiet). */
void pf_log_verdict(FILE *log, const struct verdict *v);
/* Rank r is the lowest of its host in all[]. */
bool pf_first_on_host(const struct probe *all, int r);
/* A host to exclude (once). */
void pf_fail_host(struct verdict *v, const char *host);
/* Append to a check's detail. */
void pf_add_detail(struct verdict *v, int check, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- preflight_root.c: the run root is shared ---- */

#define PF_ROOT_TOKEN_LEN 64
/* Collective: rank 0 writes a token no other run wrote to RUN_DIR/.preflight-shared, durably, and
 * broadcasts it (token[0] == '\0' when it could not); the broadcast orders every read after it. */
enum rz_status pf_root_token_share(const struct preflight_opts *o, char *token, struct rz_err *err);
/* This rank reads the token back: p->root_seen, or p->root_err saying why not. */
void pf_probe_run_root(const char *run_dir, const char *token, struct probe *p);
/* Every rank saw it, or the check fails naming them; hosts are blamed only when some node off
 * rank 0's did see it (otherwise the run root is node-local: the job's setting). */
void pf_judge_run_root(const struct probe *all, int n, const char *run_dir, struct verdict *v);
/* Rank 0, after every rank has read it. */
void pf_root_token_remove(const char *run_dir, const char *token);

/* ---- preflight_data.c: the training data ---- */

/* Whether the data check applies: data with files (text, tokens); random and markov have none. */
bool pf_data_applies(const struct cfg *c);
/* Collective: rank 0 opens the data as the trainer would and verifies a manifest's shards
 * (data_verify); the verdict is broadcast into v's data row.  *data_st: the status the run ends
 * with when the data failed (RZ_EDATA naming the shard, exit 64), else RZ_OK; the return is
 * the broadcast's own. */
enum rz_status pf_check_data(const struct cfg *c, struct comm *comm, struct verdict *v,
                             enum rz_status *data_st, struct rz_err *err);

/* ---- preflight_net.c: the links between the job's nodes ---- */

/* Collective: comm_link_probe; when some link is outside the network.* gates, a second probe,
 * and each link keeps the better of its two figures (*again set).  A persistent slow link stays
 * slow; one that a busy CPU slowed once does not fail. */
enum rz_status pf_probe_links(struct comm *c, const struct cfg_network *net, size_t bytes,
                              int reps, struct comm_links *l, bool *again, struct rz_err *err);

/* Judge the measured links against network.min_link_gbps and network.max_link_latency_us:
 * the slowest and the slowest-to-answer link named; a host in every failed link (of three or
 * more hosts) is blamed; a link under half the median rate is a warning even when it passes. */
void pf_judge_links(const struct comm_links *l, const struct cfg_network *net, struct verdict *v);
/* The link matrix as a table, one row per sending host (rank 0's job output). */
void pf_log_links(FILE *log, const struct comm_links *l);

#endif
