/* comm.h: everything MPI (the only module that includes mpi.h): start-up and launch checks,
 * bucketed gradient allreduce overlapped with backward, agreement on stop flags, the
 * gradient-sync accuracy check, and small collectives the trainer needs.
 *
 * Works under `srun --mpi=pmix` (Open MPI) or `srun --mpi=pmi2` (MPICH), under `mpirun -np N` or
 * MPICH's `mpiexec -n N`, and as a plain process (MPI singleton).
 * Gradients: the model reports ranges whose gradients are final (comm_grads_ready); each range
 * is cut into buckets of at most bucket_bytes and started with MPI_Iallreduce(SUM) in place;
 * comm_grads_finish waits for all of them.  The loss is pre-scaled by 1/world, so the sum is the
 * mean.  The time spent waiting in comm_grads_finish is the *exposed* communication time.
 *
 * Ownership: comm_init allocates the comm; comm_finalize calls MPI_Finalize and frees it (NULL
 * ok).  comm_grads_begin borrows the gradient buffer until comm_grads_finish. */
#ifndef RZ_COMM_COMM_H
#define RZ_COMM_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

struct comm;

/* What the launcher told this process (comm_launch.c), read from the environment once by main.
 * Empty strings for unset variables. */
struct comm_launch {
    char step_id[32];         /* SLURM_STEP_ID: set for a task srun started */
    char mpi_type[32];        /* SLURM_MPI_TYPE: srun's --mpi plugin */
    char procid[32];          /* SLURM_PROCID */
    char ntasks[32];          /* SLURM_NTASKS */
    char nodename[64];        /* SLURMD_NODENAME */
    char job_id[32];          /* SLURM_JOB_ID */
    char restart_count[16];   /* SLURM_RESTART_COUNT: set once Slurm requeued the job */
    bool has_pmix_rank;       /* PMIX_RANK or OMPI_COMM_WORLD_RANK (mpirun) is set */
    bool has_pmi_rank;        /* PMI_RANK is set (srun --mpi=pmi2, MPICH's Hydra mpiexec) */
    int launcher_rank;        /* OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID; 0 if
                               * none */
};
/* Fill l from an environment array (main passes environ). */
void comm_launch_parse(struct comm_launch *l, char *const *envp);

/* The MPI this program was built against: "Open MPI", "MPICH" (or a derivative), else "MPI". */
const char *comm_mpi_name(void);
/* The srun --mpi plugins it starts under, best first, comma-separated: "pmix,pmi2" for Open
 * MPI, "pmi2" for MPICH ("pmix" for an MPICH configured as a PMIx client).  Callable before
 * comm_init (ryzen-step chooses srun's plugin with it: step_mpi_choose). */
const char *comm_srun_plugins(void);
/* The first of them ("pmix", "pmi2"). */
void comm_srun_plugin(char *out, size_t len);

/* Before MPI_Init: a task that srun started (SLURM_STEP_ID set) must carry a rank of the build's
 * plugin: a PMIx rank for Open MPI (PMIX_RANK, or OMPI_COMM_WORLD_RANK under mpirun), a PMI-2
 * one for MPICH (PMI_RANK, set by srun --mpi=pmi2 and by Hydra).  Without one, Open MPI aborts
 * inside MPI_Init with a message about PMI versions that names neither the cause nor the fix,
 * and MPICH starts each task as a world of one; this returns RZ_EHEALTH saying `srun
 * --mpi=PLUGIN` instead.  Call it before comm_init. */
enum rz_status comm_check_launch_env(const struct comm_launch *l, struct rz_err *err);
/* The same for a named plugin ("pmix" or "pmi2"): the unit tests check both builds' rules. */
enum rz_status comm_check_launch_env_as(const struct comm_launch *l, const char *plugin,
                                        struct rz_err *err);
/* MPI_Init (funneled threads: the watchdog thread never calls MPI).  The host name is
 * l->nodename under Slurm (l may be NULL), else MPI_Get_processor_name.  ring: the gradient
 * iallreduce runs as a ring (comm.allreduce), unless the environment already chose. */
enum rz_status comm_init(struct comm **out, int *argc, char ***argv, const struct comm_launch *l,
                         bool ring, struct rz_err *err);
/* A world of one process that never calls MPI (unit tests, tools). */
enum rz_status comm_create_local(struct comm **out, struct rz_err *err);
void comm_finalize(struct comm *c);

/* Abort every rank of the job with `code` (used by the watchdog and fatal paths; no return). */
void comm_abort(struct comm *c, int code);

int comm_rank(const struct comm *c);
int comm_size(const struct comm *c);
/* This rank's node: $SLURMD_NODENAME under Slurm, else MPI_Get_processor_name. */
const char *comm_host(const struct comm *c);

/* Launch check: under Slurm, MPI size must equal SLURM_NTASKS (else RZ_EHEALTH with a message
 * about the likely wrong --mpi plugin); also names the launcher seen. */
enum rz_status comm_check_launch(const struct comm *c, const struct comm_launch *l,
                                 struct rz_err *err);

/* ---- start-up rendezvous (comm_start.c) ----------------------------------------------------
 * Open MPI 4.1.4 under srun --mpi=pmix can let a rank out of MPI_Init while a peer on another
 * node is still in it; the peer then dies on SIGSEGV when the first message reaches it
 * (docs/reliability.md, "Start-up rendezvous").  So, right after comm_init, each rank of a
 * multi-rank srun step leaves a file rank-<r> in RUN_DIR/.startup/<job>.<step>.<restart count>
 * (RUN_DIR on a filesystem every node mounts) and waits for every rank's file before any MPI
 * message; then a barrier, and rank 0 removes the directory. */

#define COMM_START_TIMEOUT_DEFAULT_S 120.0

/* Whether this launch needs it: an srun task (SLURM_STEP_ID set) of a world of more than one
 * rank that is the step's (SLURM_NTASKS == size; another world is the launch checks' to
 * report). */
bool comm_start_needed(const struct comm_launch *l, int size);
/* RUN_DIR/.startup/<job>.<step>.<restart count> into dir; RZ_ECONFIG when it does not fit. */
enum rz_status comm_start_dir(char *dir, size_t len, const char *run_dir,
                              const struct comm_launch *l, struct rz_err *err);
/* The file part, no MPI: create dir and dir/rank-<rank>, then wait until rank-0 .. rank-<size-1>
 * all exist, looking again after 2 ms, doubling to 50 ms.  RZ_EHEALTH after timeout_s naming the
 * ranks that never arrived (the first 16); RZ_EIO when this rank's file cannot be made. */
enum rz_status comm_start_arrive(const char *dir, int rank, int size, double timeout_s,
                                 struct rz_err *err);
/* Remove dir's rank files and dir (RUN_DIR/.startup stays).  Missing files are fine. */
void comm_start_cleanup(const char *dir, int size);
/* The whole rendezvous on c's world: nothing when !comm_start_needed; else comm_start_arrive, a
 * barrier (every rank is out of MPI_Init now), and rank 0's comm_start_cleanup.  Collective.
 * *complete: every file was seen.  !required (the preflight, whose run_root check judges a run
 * directory that is not shared): a timeout is not a failure; its message is left in err, the
 * barrier still runs (a rank that timed out and one that did not call the same collectives), and
 * *complete is false. */
enum rz_status comm_start_rendezvous(struct comm *c, const char *run_dir,
                                     const struct comm_launch *l, double timeout_s,
                                     bool required, bool *complete, struct rz_err *err);

/* ---- gradient allreduce ------------------------------------------------------------------ */

/* Start a new gradient reduction of the buffer g (n floats), buckets of at most bucket_bytes;
 * local_norm: also sum this rank's squares before the reduction (costs a pass over g). */
void comm_grads_begin(struct comm *c, float *g, size_t n, size_t bucket_bytes, bool local_norm);
/* Floats [offset, offset+count) of the gradient layout are final for this step (or micro-step,
 * sharded); they are at `data` (g + offset for comm_grads_begin).  Starts their buckets and
 * accumulates the local (pre-reduction) sum of squares.  A sharded reduction may modify `data`
 * until it is reused (comm_grads_reuse) or the reduction finishes.  count == 0 is a progress
 * point: buckets already started advance (MPI_Testall). */
void comm_grads_ready(struct comm *c, size_t offset, size_t count, float *data);
/* Let every bucket and parameter gather in flight advance (a progress point of forward). */
void comm_progress(struct comm *c);

/* ---- ZeRO (stages 1 and 2) ------------------------------------------------------------------
 * The flat layout of n floats is split over the ranks by rz_shard(n, size, rank, align)
 * (core/util.h): rank r owns floats [lo_r, hi_r).  Gradients are reduce-scattered (each rank
 * receives the sum of its part only), each rank updates its part of the parameters, and the
 * parameters are all-gathered again, in buckets, overlapped with the next forward pass: the model
 * asks for each range before it reads it (comm_params_need). */

/* A reduction that reduce-scatters every reported range into `shard` (hi - lo floats of this
 * rank's part, overwritten).  accumulate: each rank first adds its shard's current values into
 * its own part of the data it sends, so the result is the shard plus the new sum (ZeRO-2's
 * micro-steps, whose gradients live only until they are sent). */
enum rz_status comm_grads_begin_sharded(struct comm *c, float *shard, size_t n, size_t align,
                                        size_t bucket_bytes, bool local_norm, bool accumulate,
                                        struct rz_err *err);
/* The model is about to overwrite `data` (count floats) that it reported: wait for the buckets
 * still sending from it. */
void comm_grads_reuse(struct comm *c, const float *data, size_t count);

/* After this rank updated its part of params (n floats, in place): start all-gathering every
 * rank's part, in buckets of about bucket_bytes.  The buffer is borrowed until finished. */
enum rz_status comm_params_begin(struct comm *c, float *params, size_t n, size_t align,
                                 size_t bucket_bytes, struct rz_err *err);
/* Wait until params [offset, offset+count) are complete (the wait counts as exposed
 * communication, reported by the next comm_grads_finish). */
void comm_params_need(struct comm *c, size_t offset, size_t count);
/* Seconds blocked in comm_params_need since the last comm_grads_finish. */
double comm_params_waited(const struct comm *c);
/* Wait for the whole gather (before a checkpoint, a sync check, a validation). */
enum rz_status comm_params_finish(struct comm *c, struct rz_err *err);

/* Gather floats [a, b) of a sharded layout (n, align) onto rank 0's out (b - a floats); every
 * rank passes its shard.  A collective: every rank calls it with the same a, b. */
enum rz_status comm_gather_range(struct comm *c, const float *shard, size_t n, size_t align,
                                 size_t a, size_t b, float *out, struct rz_err *err);
/* Wait for every bucket; *exposed_s = time blocked here and in comm_params_need since the last
 * finish; *local_sumsq = this rank's sum of squares before reduction (0 unless local_norm).  Any
 * range never reported is reduced here (not sharded: there every float must be reported). */
enum rz_status comm_grads_finish(struct comm *c, double *exposed_s, double *local_sumsq,
                                 struct rz_err *err);
/* The last finished reduction's own time: from its first bucket's post until every bucket was
 * seen complete, at a progress point or in the finish's wait (so at most the gap between two
 * progress points late).  Exposed is the part of it the finish waited; the rest ran hidden by
 * backward.  0 when nothing was posted (one rank, or a model that reported no range). */
double comm_grads_span(const struct comm *c);

/* ---- agreement and reductions ----------------------------------------------------------------- */

/* All ranks learn the maximum of `local` (e.g. a stop flag). */
enum rz_status comm_max_int(struct comm *c, int local, int *out, struct rz_err *err);
/* Sum of doubles in place (n values). */
enum rz_status comm_sum_doubles(struct comm *c, double *v, int n, struct rz_err *err);
/* Gather n doubles per rank on every rank (out has comm_size * n entries, rank order): the
 * trainer's one small collective per step (loss, stop flag, gradient norm, live metrics). */
enum rz_status comm_allgather_doubles(struct comm *c, const double *local, int n, double *out,
                                      struct rz_err *err);
/* Gather one double per rank on every rank (out has comm_size entries). */
enum rz_status comm_allgather_double(struct comm *c, double local, double *out,
                                     struct rz_err *err);
enum rz_status comm_barrier(struct comm *c, struct rz_err *err);
/* Broadcast an int from rank 0 (e.g. the status of a rank-0-only action). */
enum rz_status comm_bcast_int(struct comm *c, int *v, struct rz_err *err);

/* Broadcast len bytes from rank 0. */
enum rz_status comm_bcast_bytes(struct comm *c, void *buf, size_t len, struct rz_err *err);

/* Gather len bytes from every rank into out (comm_size * len bytes, rank order). */
enum rz_status comm_allgather_bytes(struct comm *c, const void *local, size_t len, void *out,
                                    struct rz_err *err);

/* Median latency in seconds of an 8-byte allreduce over `reps` tries. */
enum rz_status comm_allreduce_latency(struct comm *c, int reps, double *median_s,
                                      struct rz_err *err);

/* ---- preflight probes --------------------------------------------------------------------------- */

/* Each rank sends its rank to the next and receives from the previous; *ok on every rank when
 * every rank got what it expected. */
enum rz_status comm_ring_check(struct comm *c, bool *ok, struct rz_err *err);
/* Allreduce n floats of known values; *max_rel_err (same on all ranks) against the exact sum. */
enum rz_status comm_allreduce_check(struct comm *c, size_t n, double *max_rel_err,
                                    struct rz_err *err);

/* ---- link probes: the network between the job's nodes -------------------------------------- */

#define COMM_MAX_HOSTS 64
#define COMM_HOST_LEN 64
#define COMM_LINK_LAT_REPS 21

/* Every pair of the job's nodes, measured by the lowest rank of each: [i][j] is from host i to
 * host j.  Latency: half the least of 21 round trips of 8 bytes (symmetric).  Rate: the median over
 * `reps` one-way sends of `bytes` bytes, each acknowledged by 1 byte, less twice the latency
 * (but never less than half the time).  Cells of a host with itself are 0.  Every rank gets the
 * whole result. */
struct comm_links {
    int n_hosts;
    char hosts[COMM_MAX_HOSTS][COMM_HOST_LEN]; /* in the order of their lowest rank */
    int leader[COMM_MAX_HOSTS];                /* that rank */
    size_t bytes;
    int reps;
    double latency_us[COMM_MAX_HOSTS][COMM_MAX_HOSTS];
    double gbps[COMM_MAX_HOSTS][COMM_MAX_HOSTS];
};

/* Collective.  Pairs are measured one at a time, so each sees an idle network, while every other
 * rank sleeps in a barrier (it would take the CPU from the two that measure); the time it takes
 * grows with the square of the node count (4 nodes: 6 pairs). */
enum rz_status comm_link_probe(struct comm *c, size_t bytes, int reps, struct comm_links *out,
                               struct rz_err *err);

/* The ring's hop on the job's own placement: `reps` blocks (after one untimed) of
 * COMM_HOP_PASSES all-reduces of COMM_HOP_FLOATS_PER_RANK floats a rank, each started as the
 * gradient's buckets are (MPI_Iallreduce over the ring comm_init chose: 2(P-1) rounds) and
 * waited for.  *hop_s (the same on every rank): the mean over ranks of each rank's median block
 * time per round; NaN on one rank.  Where ranks outnumber cores each round waits for the peer's
 * turn on its core (docs/ladder.md: the ladder's hop term); on cores of their own it is the
 * link's or shared memory's latency.  Collective. */
#define COMM_HOP_PASSES 10
#define COMM_HOP_FLOATS_PER_RANK 16
enum rz_status comm_hop_probe(struct comm *c, int reps, double *hop_s, struct rz_err *err);

/* ---- gradient-sync accuracy ------------------------------------------------------------------ */

struct comm_sync {
    bool agree;               /* every rank's parameter hash is identical */
    uint64_t hash;            /* this rank's parameter hash */
    double param_spread;      /* max |p_max - p_min| / max |p| over parameters (0 when agree) */
    /* Per-rank gradient norms: before the allreduce they differ (each rank saw other samples);
     * after it every rank must hold the same averaged gradient, so their spread measures the
     * accuracy of the synchronization. */
    double pre_min, pre_max;  /* pre-allreduce local norms, min and max over ranks */
    double post_spread;       /* (max - min) / mean of the post-allreduce norms */
    char bad_ranks[256];      /* ranks whose hash differs from rank 0's, e.g. "3,5" */
};

/* Compare parameter hashes across ranks and gather the per-rank gradient norms before and after
 * the allreduce. */
enum rz_status comm_sync_check(struct comm *c, const float *params, size_t n, double pre_gnorm,
                               double post_gnorm, struct comm_sync *out, struct rz_err *err);

#endif
