/* ckpt.h: HDF5 checkpoints: layout, atomic commit, per-dataset checksums, discovery,
 * quarantine and retention.  The only module that includes hdf5.h.
 *
 * A checkpoint is RUN_DIR/checkpoints/step-NNNNNNNN.h5 (8-digit zero-padded step).  Commit
 * protocol: write step-NNNNNNNN.h5.tmp, fsync it, rename it to the final name, fsync the
 * directory; nothing else ever sees a partial file.  Files are written with libver bounds V110
 * (metadata checksums) and every dataset carries a SHA-256 attribute of its bytes, verified on
 * load.  A file that fails verification during discovery is moved to checkpoints/quarantine/
 * with a .reason note and is never loaded.  Layout and versioning: docs/checkpoint-format.md.
 *
 * Ownership: struct ckpt_meta (ckpt_meta.h) is a plain value, except config_yaml, which
 * ckpt_read_meta and ckpt_load allocate and ckpt_meta_free releases.  Tensor data lives in caller
 * buffers. */
#ifndef RZ_CKPT_CKPT_H
#define RZ_CKPT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/ckpt_meta.h"
#include "core/status.h"
#include "model/model.h"

#define CKPT_FORMAT_VERSION 1

/* ZeRO's moment source for ckpt_save: fill out (the tensor's rows * cols floats) with moment
 * `which` (0: m, 1: v) of table entry `index`. */
typedef enum rz_status (*ckpt_fetch_fn)(void *user, int which, size_t index, float *out,
                                        struct rz_err *err);

/* The tensors a checkpoint holds: the model table, parameters and the two Adam moments (each a
 * buffer laid out by the table).
 * ZeRO (moments_sharded): adam_m and adam_v hold only floats [moment_lo, moment_hi) of the
 * layout.  ckpt_load fills just that range (each moment dataset is still read whole and
 * verified, one at a time); ckpt_save gets each tensor's whole moments from `fetch`, for m of
 * every tensor in table order and then for v, one call each, in that order, until it stops.
 * The file is the same at any world size. */
struct ckpt_tensors {
    const struct model_tensor *table;
    size_t count;
    size_t n_floats;
    float *params, *adam_m, *adam_v;
    int moments_sharded;
    size_t moment_lo, moment_hi;
    ckpt_fetch_fn fetch;
    void *fetch_user;
};

void ckpt_meta_free(struct ckpt_meta *meta);

/* SHA-256 of the parameter bytes in table order (= ckpt_meta.params_sha256). */
void ckpt_params_sha256(const struct ckpt_tensors *t, char out[65]);

/* Write DIR/step-NNNNNNNN.h5 atomically (creating DIR); the final path goes to path_out. */
enum rz_status ckpt_save(const char *dir, const struct ckpt_meta *meta,
                         const struct ckpt_tensors *t, char *path_out, size_t path_len,
                         struct rz_err *err);

/* Load a checkpoint into meta and the tensor buffers after verifying every checksum and that
 * the model shape in the file equals t's table.  Damage or mismatch -> RZ_ENOCKPT; I/O -> RZ_EIO. */
enum rz_status ckpt_load(const char *path, struct ckpt_meta *meta, const struct ckpt_tensors *t,
                         struct rz_err *err);

/* Read only the metadata (and check the file opens); config_yaml allocated. */
enum rz_status ckpt_read_meta(const char *path, struct ckpt_meta *meta, struct rz_err *err);

/* Full integrity check: opens with HDF5, verifies every dataset's SHA-256 and the metadata.
 * RZ_OK if intact; RZ_ENOCKPT with the reason otherwise. */
enum rz_status ckpt_verify(const char *path, struct rz_err *err);

/* ckpt_verify that also returns the metadata (config_yaml allocated) with adam_sha256. */
enum rz_status ckpt_inspect(const char *path, struct ckpt_meta *meta, struct rz_err *err);

/* The newest checkpoint in DIR that verifies.  Damaged files met on the way are quarantined
 * (moved to DIR/quarantine/ with a NAME.reason note) and reported through `on_skip` (may be NULL).
 * RZ_OK with path_out[0] == '\0' when there is none. */
typedef void (*ckpt_skip_fn)(void *user, const char *path, const char *reason);
enum rz_status ckpt_find_latest(const char *dir, char *path_out, size_t path_len,
                                ckpt_skip_fn on_skip, void *user, struct rz_err *err);

/* The step of the newest committed checkpoint name in DIR (step-N.h5; the commit renames a
 * complete file into place, so the name alone says it was committed), without reading any file;
 * -1 when there is none.  For "did this attempt save anything"; resuming still verifies. */
int64_t ckpt_newest_committed(const char *dir);

/* Checkpoints already known to be valid in this process, so that retention does not read every
 * kept file again at each save.  A file is known by its device, inode, size and modification
 * time: rewriting, truncating or replacing it makes it unknown again.  Damage that changes none
 * of those (a bit flipped on the disk) is still caught when the file is loaded, as ever.  A
 * plain value: zero it to start; the oldest entry makes room when it is full.  It holds every
 * file checkpoint.keep allows (at most 1000): with 16 (before) a soak that kept 1000 verified
 * each of the kept files again at every save, 3.7 s a save at 329 files, measured. */
#define CKPT_KNOWN_MAX 1024
struct ckpt_known {
    struct ckpt_known_file {
        uint64_t dev, ino;
        int64_t size, mtime_ns;
    } f[CKPT_KNOWN_MAX];
    unsigned n, next;
};
/* Record PATH as valid (the writer's own fresh commit, or a file that just verified). */
void ckpt_known_add(struct ckpt_known *known, const char *path);

/* Keep the newest `keep` valid checkpoints in DIR, deleting older ones; never deletes the newest
 * valid one.  Leftover *.tmp files from crashed commits are removed.  Validity is ckpt_verify,
 * except for files in `known` (NULL: verify all); files that verify are added to it. */
enum rz_status ckpt_prune(const char *dir, int64_t keep, struct ckpt_known *known,
                          struct rz_err *err);

/* One entry of DIR, for `ryzen-ckpt list`. */
struct ckpt_entry {
    char path[4096];
    int64_t step;
    int64_t mtime;            /* seconds since the epoch */
    int64_t size_bytes;
    int valid;
    char reason[256];         /* why invalid */
};

/* List DIR's step-*.h5 files (ascending step); *out allocated, free() it. Verifies each. */
enum rz_status ckpt_list(const char *dir, struct ckpt_entry **out, size_t *count,
                         struct rz_err *err);

#endif
