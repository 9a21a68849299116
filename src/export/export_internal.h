/* export_internal.h: what export.c and export_import.c share: a model table with its buffers
 * (parameters and the two Adam moments in one allocation, as ckpt_load and ckpt_save want them)
 * and a file's SHA-256.  Not for other modules: they use export.h.
 * Ownership: exp_model_alloc / exp_model_of allocate, exp_model_free releases (also a half-built
 * or zeroed one). */
#ifndef RZ_EXPORT_EXPORT_INTERNAL_H
#define RZ_EXPORT_EXPORT_INTERNAL_H

#include <stddef.h>

#include "ckpt/ckpt.h"
#include "core/status.h"
#include "model/model.h"

struct exp_model {
    struct model_dims dims;
    struct model_tensor *table;
    size_t count, n_floats;
    float *params;            /* 3 * n_floats: params, then adam_m, then adam_v (zero) */
};

/* The table and zeroed buffers for x->dims. */
enum rz_status exp_model_alloc(struct exp_model *x, struct rz_err *err);
/* The same for a checkpoint's metadata (its dims, and from its stored config tie_embeddings,
 * head_bias and dropout, which the dims attributes do not carry). */
enum rz_status exp_model_of(struct exp_model *x, const struct ckpt_meta *meta, const char *path,
                            struct rz_err *err);
struct ckpt_tensors exp_tensors(const struct exp_model *x);
void exp_model_free(struct exp_model *x);

/* SHA-256 of the file's bytes (what names a tokenizer: tok.h). */
enum rz_status exp_file_sha256(const char *path, char hex[65], struct rz_err *err);

#endif
