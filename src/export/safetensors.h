/* safetensors.h: the safetensors file format (Hugging Face's), float32 tensors only.
 *
 *   bytes 0..8     N, the header's length, unsigned 64-bit little-endian
 *   bytes 8..8+N   the header: one JSON object; each member but "__metadata__" is a tensor,
 *                  {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]},
 *                  "__metadata__" (optional) maps strings to strings
 *   bytes 8+N..    the data buffer: each tensor's raw little-endian values, row-major, at
 *                  [begin, end) of the buffer
 *
 * The writer pads the header with spaces to a multiple of 8 bytes (so the data is aligned, as
 * the reference writer does) and lays the tensors out in the order given, back to back.  The
 * reader checks what the reference reader checks, and says which file and why: a file shorter
 * than its 8-byte length, a header length beyond the file, a header that is not a JSON object,
 * a tensor without a dtype, shape or data_offsets, a dtype it does not know or does not read
 * (only F32), offsets that do not match the shape, that lie outside the data buffer, that
 * overlap, or that leave bytes of the buffer unused.
 * Deliberately not here: tensor names and layouts of any model (export/gpt2_map.h), other dtypes.
 *
 * Ownership: st_read allocates the struct st_file (the whole file is read into memory) and
 * st_file_free releases it (NULL ok); names, metadata and data point into it. */
#ifndef RZ_EXPORT_SAFETENSORS_H
#define RZ_EXPORT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define ST_MAX_DIMS 8

/* One tensor to write: `data` holds the product of shape floats. */
struct st_entry {
    const char *name;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const float *data;
};

/* One "__metadata__" member. */
struct st_meta {
    const char *key, *value;
};

/* Write PATH durably (a temporary file, fsync, rename: core/durable.h).  Names must be unique
 * and not "__metadata__"; RZ_ECONFIG otherwise, RZ_EIO for the file. */
enum rz_status st_write(const char *path, const struct st_entry *entries, size_t n,
                        const struct st_meta *meta, size_t n_meta, struct rz_err *err);

struct st_tensor {
    const char *name;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t begin, end;        /* byte offsets in the data buffer */
};

struct st_file {
    char *path;
    uint8_t *bytes;           /* the whole file */
    size_t size;
    struct gj_value *header;  /* the parsed header */
    struct st_tensor *tensors;/* in header order */
    size_t n;
    const uint8_t *data;      /* the data buffer, bytes + 8 + N */
    size_t data_len;
};

/* Read and check PATH.  A damaged or unsupported file is RZ_EDATA with "safetensors FILE:
 * cause"; a file that cannot be read RZ_EIO. */
enum rz_status st_read(struct st_file **out, const char *path, struct rz_err *err);
void st_file_free(struct st_file *f);

/* The tensor named `name`, or NULL. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* Number of elements of t (the product of its shape; 1 for a scalar). */
size_t st_numel(const struct st_tensor *t);
/* Copy t's values into out (st_numel floats); the buffer need not be aligned. */
void st_copy(const struct st_file *f, const struct st_tensor *t, float *out);
/* The "__metadata__" value of key, or NULL. */
const char *st_meta_get(const struct st_file *f, const char *key);

#endif
