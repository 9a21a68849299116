/* export.h: a checkpoint out to Hugging Face GPT-2's files, and such files back into a checkpoint
 * (`ryzen-ckpt export|import --format safetensors`).
 *
 * Export writes OUTDIR/model.safetensors (GPT-2 names and layouts: gpt2_map.h), OUTDIR/config.json
 * (GPT2Config's keys) and, given a tokenizer, OUTDIR/tokenizer.model (a copy) and
 * OUTDIR/tokenizer_config.json ({"tokenizer_type": "sentencepiece", "sha256": ...}).  Every file
 * is written durably (core/durable.h).  A tokenizer whose SHA-256 differs from the one the
 * checkpoint records is refused.
 * Import reads those files back into RUN_DIR/checkpoints/step-00000000.h5 (ckpt_save): the
 * parameters, Adam moments of zero, step 0, and a config built from the defaults, config.json's
 * model keys and the caller's overrides, also written to RUN_DIR/config.yaml for `ryzen-train
 * --config`.  Export then import gives the same params_sha256: the transposes move values only.
 * Deliberately not here: the safetensors format (safetensors.h), the name mapping (gpt2_map.h).
 *
 * Ownership: plain values. */
#ifndef RZ_EXPORT_EXPORT_H
#define RZ_EXPORT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

struct export_opts {
    const char *source;        /* a checkpoint file, a run directory or a checkpoints directory
                                * (its newest checkpoint that verifies; nothing is quarantined) */
    const char *out_dir;
    const char *tokenizer;     /* a SentencePiece .model, or NULL */
    bool allow_head_bias;      /* write a non-zero head bias as lm_head.bias (gpt2_map.h) */
};

struct export_result {
    char checkpoint[4096];     /* the checkpoint exported */
    int64_t step;
    char params_sha256[65];
    size_t tensors;            /* written to model.safetensors */
    bool head_bias;            /* lm_head.bias written */
    char note[512];            /* "" or something the user should know (no tokenizer named) */
};

enum rz_status export_safetensors(const struct export_opts *o, struct export_result *r,
                                  struct rz_err *err);

struct import_opts {
    const char *src_dir;       /* model.safetensors, config.json, tokenizer_config.json (opt.) */
    const char *run_dir;
    const char *const *sets;   /* config overrides "key=value" (training.*, data.*, ...) */
    int n_sets;
};

struct import_result {
    char checkpoint[4096];     /* the checkpoint written */
    char config[4096];         /* RUN_DIR/config.yaml */
    char params_sha256[65];
    char note[512];
};

/* A checkpoints directory that already holds a checkpoint is refused (RZ_ECONFIG): import
 * starts a run, it never replaces one. */
enum rz_status import_safetensors(const struct import_opts *o, struct import_result *r,
                                  struct rz_err *err);

#endif
