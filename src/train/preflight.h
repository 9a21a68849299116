/* preflight.h: `ryzen-train --preflight`: health checks of a launch before any training, run on
 * every rank of the real job step:
 *   launch      MPI world size == SLURM_NTASKS (under Slurm)
 *   ring        each rank sends to the next, receives from the previous
 *   allreduce   an allreduce of known values is exact (allclose)
 *   cpus        each rank's allowed CPUs (recorded); OMP_NUM_THREADS fits in them, and ranks on
 *               one node are not bound to overlapping CPUs
 *   memory      per node: the ranks' predicted peak RSS (the memory planner, plan.h) fits in
 *               the job's own limit (cgroup, SLURM_MEM_PER_NODE / _CPU) and in MemAvailable,
 *               with a margin; if not, the message names the need, the limit and the cheapest
 *               change that would fit (ZeRO stage, recomputation, micro-batch)
 *   checkpoint  the checkpoint directory is writable on every rank with room for a checkpoint
 *               (a warning below two: the commit writes the new file before the old goes)
 *   run_root    the run directory is one filesystem for the job: every rank reads back a token
 *               rank 0 wrote there.  A node-local run root (e.g. under /tmp) is refused before
 *               training: a requeue on other nodes would find none of its checkpoints
 *   isa         oneDNN initializes on every rank; the ISAs in use are recorded
 *   data        text and token data only (random and markov have no files, and no such check):
 *               rank 0 opens the data as the trainer would and verifies a manifest's shards
 *               against it (data_verify); a missing or changed shard is refused by its name
 *               with RZ_EDATA (exit 64), whatever the other checks say: an input to fix, not a
 *               node to exclude
 * Results go to RUN_DIR/health.json (rank 0, written durably), with the hosts that failed for a
 * reason of their own (memory available on the node, the checkpoint directory there, oneDNN
 * there), so the job wrapper can exclude them; a failure the job's settings cause (its memory
 * limit, its CPU binding) would follow it to any node.
 * Ownership: nothing kept. */
#ifndef RZ_TRAIN_PREFLIGHT_H
#define RZ_TRAIN_PREFLIGHT_H

#include <stdio.h>

#include "comm/comm.h"
#include "config/cfg.h"
#include "core/status.h"

/* What the launcher and Slurm said, read from the environment once by main. */
struct preflight_env {
    const struct comm_launch *launch;
    long mem_per_node_mb;    /* SLURM_MEM_PER_NODE (0: not set) */
    long mem_per_cpu_mb;     /* SLURM_MEM_PER_CPU */
    long cpus_on_node;       /* SLURM_CPUS_ON_NODE */
    long omp_threads;        /* OMP_NUM_THREADS (0: not set, 1 assumed) */
};

struct preflight_opts {
    const struct cfg *cfg;
    struct comm *comm;
    const char *run_dir;
    const struct preflight_env *env;
    FILE *log;               /* one line per check (rank 0); NULL = quiet */
};

/* CPU masks as the cpus check sees them: bit c of byte c / 8 is CPU c. */
#define PREFLIGHT_MAX_CPUS 1024

/* The first CPU over which two ranks of one node would compete, or -1.  a and b are their
 * affinity masks (PREFLIGHT_MAX_CPUS / 8 bytes), `online` the node's CPUs, `set_threads` the
 * OMP threads of every rank of the node whose mask is exactly a.  No clash when neither rank is
 * bound (its mask is every CPU of the node), nor when both share one set with a CPU for each of
 * its threads: ranks launched without binding (--cpu-bind=none) inside the job's cpuset, which
 * holds fewer CPUs than the node on a machine with more CPUs than the job asked for. */
int preflight_cpu_clash(const unsigned char *a, const unsigned char *b, int online,
                        int set_threads);

/* RZ_OK when every check passed; the data check's RZ_EDATA (or RZ_ECONFIG) when it failed;
 * RZ_EHEALTH naming the failed checks otherwise. */
enum rz_status preflight_run(const struct preflight_opts *opts, struct rz_err *err);
/* The launch failed before MPI could start (`why`: comm_init's message).  Writes health.json
 * with the launch check failed, the others not run and no ranks; one line per check to log
 * (NULL = quiet).  Call on the launch's rank 0 only. */
enum rz_status preflight_report_launch(const char *run_dir, const char *why, FILE *log,
                                       struct rz_err *err);

#endif
