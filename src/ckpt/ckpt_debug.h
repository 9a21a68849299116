/* ckpt_debug.h: damage a checkpoint on purpose, for the tests of checkpoint integrity (in the
 * spirit of jq's inject_errors) and for forensics.  These functions change a file in place
 * WITHOUT updating its checksums; nothing in the trainer calls them.  They live in ckpt/ because
 * only this module may include hdf5.h.  Ownership: nothing is allocated. */
#ifndef RZ_CKPT_CKPT_DEBUG_H
#define RZ_CKPT_CKPT_DEBUG_H

#include <stdint.h>

#include "core/status.h"

/* File offset and size in bytes of the raw data of a contiguous dataset ("/params/wte"). */
enum rz_status ckpt_debug_data_extent(const char *path, const char *dataset, int64_t *offset,
                                      int64_t *size, struct rz_err *err);

/* Remove the link `object` ("/adam_v/wte") from the file. */
enum rz_status ckpt_debug_unlink(const char *path, const char *object, struct rz_err *err);

/* Delete the attribute `attr` of `object` ("/", "tokenizer_sha256"): a file as an older
 * writer, without that attribute, left it. */
enum rz_status ckpt_debug_delete_attr(const char *path, const char *object, const char *attr,
                                      struct rz_err *err);

/* Overwrite the existing integer attribute `attr` of `object` ("/", "format_version"). */
enum rz_status ckpt_debug_set_attr_i64(const char *path, const char *object, const char *attr,
                                       int64_t value, struct rz_err *err);

#endif
