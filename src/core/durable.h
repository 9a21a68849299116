/* durable.h: the one way ryzen-llm writes a file that must survive a crash or a requeue
 * (checkpoints, reports, summary.json, health.json, the run directory's owner file, hand-over
 * files, Prometheus textfiles): a temporary file in the same directory, fsync, rename over the
 * final name, fsync of the directory (as redis's rdbSave).  A reader sees the old file or the new
 * one, never half of one, and a crash leaves at most a "NAME.tmp.PID" behind, never a damaged NAME.
 *
 * Errors name the file and the cause; ENOSPC and EDQUOT say "disk full" / "disk quota exceeded"
 * in words, so an operator reading the job output knows what to free.  The test-hook build
 * (configure --enable-test-hooks) can stop the process at each stage of the commit
 * (RYZEN_TEST_CRASH_AT=TAG:before_fsync|before_rename|before_dirsync, core/hooks.h).
 *
 * Not here: append-only logs (events.jsonl, per-rank metrics), which are written line by line.
 * Ownership: struct rz_durable is caller-owned; rz_durable_commit and rz_durable_abort release
 * everything it holds, and abort is safe after a failed open or a commit. */
#ifndef RZ_CORE_DURABLE_H
#define RZ_CORE_DURABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "core/status.h"

#define RZ_DURABLE_PATH_MAX 4096

struct rz_durable {
    FILE *f;                            /* write the content here */
    char path[RZ_DURABLE_PATH_MAX];     /* final name */
    char tmp[RZ_DURABLE_PATH_MAX + 32]; /* path.tmp.PID */
    const char *tag;                    /* crash-point tag ("ckpt", "report", ...) */
};

/* Open `path`.tmp.PID for writing.  `tag` names the writer in crash points and may be NULL. */
enum rz_status rz_durable_open(struct rz_durable *d, const char *path, const char *tag,
                               struct rz_err *err);
/* Flush, fsync, close, rename over path, fsync the directory.  On failure the temporary file is
 * removed and the old `path` (if any) is untouched. */
enum rz_status rz_durable_commit(struct rz_durable *d, struct rz_err *err);
/* Close and remove the temporary file (nothing is committed). */
void rz_durable_abort(struct rz_durable *d);

/* Write `path` durably with fn(f, ctx) as its content (open + fn + commit). */
typedef void (*rz_durable_fn)(FILE *f, const void *ctx);
enum rz_status rz_durable_write(const char *path, const char *tag, rz_durable_fn fn,
                                const void *ctx, struct rz_err *err);
/* The same for a text held in memory. */
enum rz_status rz_durable_write_text(const char *path, const char *tag, const char *text,
                                     struct rz_err *err);

/* For files another library wrote and closed (HDF5): fsync `tmp`, rename it to `path`, fsync the
 * directory.  `tmp` must be in the same directory as `path`; it is removed on failure. */
enum rz_status rz_durable_commit_file(const char *tmp, const char *path, const char *tag,
                                      struct rz_err *err);

/* Create `path` exclusively (O_CREAT|O_EXCL) with `text` as its content, durably: the lock
 * primitive that also works on NFS and Lustre without flock.  *existed is set (and RZ_OK
 * returned) when the file was already there; nothing is written then. */
enum rz_status rz_durable_create_excl(const char *path, const char *text, bool *existed,
                                      struct rz_err *err);

/* The cause of errno `e` for messages: "disk full (ENOSPC)" etc., else strerror. */
const char *rz_io_cause(int e);

#endif
