/* preflight.h: `ryzen-train --preflight`: health checks of a launch before any training, run on
 * every rank of the real job step:
 *   launch      MPI world size == SLURM_NTASKS (under Slurm)
 *   ring        each rank sends to the next, receives from the previous
 *   allreduce   an allreduce of known values is exact (allclose)
 *   memory      per node: ranks x (model bytes + runtime) fits in MemAvailable with a margin
 *   checkpoint  the checkpoint directory is writable on every rank and has room for 3 checkpoints
 *   isa         oneDNN initializes on every rank; the ISAs in use are recorded
 * Results go to RUN_DIR/health.json (rank 0, written atomically).  Ownership: nothing kept. */
#ifndef RZ_TRAIN_PREFLIGHT_H
#define RZ_TRAIN_PREFLIGHT_H

#include <stdio.h>

#include "comm/comm.h"
#include "config/config.h"
#include "core/status.h"

struct preflight_opts {
    const struct cfg *cfg;
    struct comm *comm;
    const char *run_dir;
    FILE *log;               /* one line per check (rank 0); NULL = quiet */
};

/* RZ_OK when every check passed; RZ_EHEALTH naming the failed checks otherwise. */
enum rz_status preflight_run(const struct preflight_opts *opts, struct rz_err *err);
/* The launch failed before MPI could start (`why`: comm_init's message).  Writes health.json
 * with the launch check failed, the others not run and no ranks; one line per check to log
 * (NULL = quiet).  Call on the launch's rank 0 only. */
enum rz_status preflight_report_launch(const char *run_dir, const char *why, FILE *log,
                                       struct rz_err *err);

#endif
