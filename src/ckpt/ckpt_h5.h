/* ckpt_h5.h: what the files of src/ckpt/ share, defined in ckpt_h5.c (private to the module):
 * the layout tables of format version 1 (ckpt.c documents the layout), hashing helpers and the
 * HDF5 plumbing.  It needs the metadata value (ckpt_meta.h), never the module's API (ckpt.h), so
 * the writer, the reader and the directory code stand on it and not the other way round.
 *
 * Every HDF5 call goes through CKPT_H5: on a negative return it records the call text, file:line
 * and the innermost message of HDF5's error stack (whose own printing is switched off) in one
 * rz_err message and jumps to the function's `cleanup` label.  Functions using it declare
 * `enum rz_status st = RZ_OK;` and take `const struct ckpt_io *io`. */
#ifndef RZ_CKPT_CKPT_H5_H
#define RZ_CKPT_CKPT_H5_H

#include <hdf5.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/ckpt_meta.h"
#include "core/sha256.h"
#include "core/status.h"
#include "model/model.h"

#define CKPT_PATH_MAX 4096

/* ---- layout ---------------------------------------------------------------------------------- */

/* "/params", "/adam_m", "/adam_v": one dataset per model table entry in each. */
extern const char *const ckpt_tensor_groups[3];

/* The numeric attributes of /train and /model, one per struct ckpt_meta field.  An optional
 * one (added after format version 1 was first written) may be missing: it then reads as
 * zeros. */
enum ckpt_field_type { CKPT_I64, CKPT_U64, CKPT_F64, CKPT_F32 };
struct ckpt_field {
    const char *group, *name;
    enum ckpt_field_type type;
    size_t offset; /* in struct ckpt_meta */
    int count;     /* values: 1 is a scalar attribute, more a 1-D array */
    bool optional;
};
extern const struct ckpt_field ckpt_fields[];
extern const size_t ckpt_n_fields;
hid_t ckpt_field_file_type(enum ckpt_field_type t);
hid_t ckpt_field_mem_type(enum ckpt_field_type t);

size_t ckpt_tensor_floats(const struct model_tensor *e);

/* Hash `n` bytes into `s` and, when not NULL, into `also` (in cache-sized pieces). */
void ckpt_hash_bytes(struct rz_sha256 *s, struct rz_sha256 *also, const void *data, size_t n);
/* Finish `s` as 64 hex characters. */
void ckpt_hash_hex(struct rz_sha256 *s, char out[65]);

/* ---- HDF5 plumbing --------------------------------------------------------------------------- */

/* What a failure is about: the operation ("save checkpoint"), the file, the status it maps to
 * (RZ_EIO while writing, RZ_ENOCKPT for a file that opens but is not a valid checkpoint) and
 * where the message goes. */
struct ckpt_io {
    const char *op;
    const char *path;
    enum rz_status fail_as;
    struct rz_err *err;
};

#define CKPT_H5(call)                                                                          \
    do {                                                                                       \
        if ((call) < 0) {                                                                      \
            st = ckpt_h5_fail(io, #call, __FILE__, __LINE__);                                  \
            goto cleanup;                                                                      \
        }                                                                                      \
    } while (0)

/* Record a failed HDF5 call (see CKPT_H5) and clear HDF5's error stack. */
enum rz_status ckpt_h5_fail(const struct ckpt_io *io, const char *call, const char *file, int line);

/* Record a non-HDF5 problem as "OP 'PATH': cause". */
enum rz_status ckpt_io_fail(const struct ckpt_io *io, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The cause part of a message recorded through ckpt_io_fail/ckpt_h5_fail for `path`. */
const char *ckpt_msg_cause(const char *msg, const char *path);

/* Switch off HDF5's printing of its error stack (we report through rz_err instead). */
void ckpt_h5_quiet(void);

/* A file-access property list: latest-but-V110 format (metadata checksums) and no file locking.
 * H5Pclose it. */
hid_t ckpt_h5_fapl(void);

/* Check that `path` is a readable, non-empty regular file starting with the HDF5 signature:
 * RZ_EIO if it cannot be read, RZ_ENOCKPT if it is empty or not HDF5. */
enum rz_status ckpt_precheck(const struct ckpt_io *io);

/* Open a checkpoint read-only (after ckpt_precheck); *file < 0 on failure. */
enum rz_status ckpt_h5_open_ro(const struct ckpt_io *io, hid_t *file);

#endif
