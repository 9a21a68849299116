/* ckpt_async.h: a checkpoint written behind training (checkpoint.mode: async).
 *
 * At a step boundary the trainer hands the writer its state; the writer's thread first copies
 * the parameters and Adam's moments into the writer's own snapshot, then writes, fsyncs and
 * commits the HDF5 file (ckpt_save: the same commit protocol, so a crash during the write
 * leaves at most a *.tmp that no reader takes) and applies retention (ckpt_prune).  Training
 * goes on meanwhile: the forward and backward of the next step only read the parameters, and
 * the trainer calls ckpt_writer_fence before the optimizer changes them.  At most one write is
 * in flight: a second submit waits for the first.
 *
 * Memory: the snapshot is three buffers of n floats (params, m, v), held for the writer's life
 * (plan.h: ckpt_snapshot).  With ZeRO the moments are sharded: the trainer gathers them into
 * ckpt_writer_moment's buffers (a collective, on its own thread) before it submits.
 *
 * Threads: HDF5 is built without thread safety, so while a write is in flight no other thread
 * may call the ckpt module (every ckpt_* function but these); ckpt_writer_wait ends that.  The
 * `known` list given to a submit belongs to the writer until its result is collected.
 * Ownership: ckpt_writer_create allocates, ckpt_writer_destroy waits and frees. */
#ifndef RZ_CKPT_CKPT_ASYNC_H
#define RZ_CKPT_CKPT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>

#include "ckpt/ckpt.h"
#include "core/status.h"

struct ckpt_writer;

/* What one background write did. */
struct ckpt_write_result {
    enum rz_status status;      /* of the save; retention failing is only a warning */
    struct rz_err err;          /* the save's error */
    int64_t step;
    char path[4096];            /* the committed file */
    double copy_ms;             /* the snapshot copy, on the writer's thread */
    double commit_ms;           /* write, fsync, rename (ckpt_save) */
    double prune_ms;            /* retention */
    bool prune_failed;
    char prune_msg[RZ_ERR_MSG_MAX];
};

/* A writer with a snapshot for n_floats parameters; its thread starts here. */
enum rz_status ckpt_writer_create(struct ckpt_writer **out, size_t n_floats, struct rz_err *err);

/* The writer's buffer for moment `which` (0: m, 1: v) of the whole layout, for ZeRO's gathers;
 * valid only while no write is in flight. */
float *ckpt_writer_moment(struct ckpt_writer *w, int which);

/* Hand over a checkpoint of `src` for DIR, keeping `keep` files (known: ckpt_prune's list).
 * meta is copied (its config_yaml too).  src->moments_sharded: the moments are already in
 * ckpt_writer_moment's buffers and only the parameters are copied.  A write still in flight
 * is waited for first (its result stays to be collected: RZ_ECONFIG if it was not). */
enum rz_status ckpt_writer_submit(struct ckpt_writer *w, const char *dir,
                                  const struct ckpt_meta *meta, const struct ckpt_tensors *src,
                                  int64_t keep, struct ckpt_known *known, struct rz_err *err);

/* Wait until the state last submitted has been copied; the caller may then change its buffers.
 * Returns the seconds waited (0 when the copy was done or nothing was submitted). */
double ckpt_writer_fence(struct ckpt_writer *w);

/* A result is waiting to be collected (the write ended); never blocks. */
bool ckpt_writer_ready(struct ckpt_writer *w);

/* A write was submitted and its result not yet collected. */
bool ckpt_writer_pending(struct ckpt_writer *w);

/* Wait for the write in flight to end and collect its result: false when none was pending.
 * *waited_s (may be NULL) gets the seconds this call blocked. */
bool ckpt_writer_wait(struct ckpt_writer *w, struct ckpt_write_result *res, double *waited_s);

/* Wait for a write in flight (its result is dropped), stop the thread, free. */
void ckpt_writer_destroy(struct ckpt_writer *w);

#endif
