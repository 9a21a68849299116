/* ckpt_meta.h: the metadata a checkpoint carries besides its tensors, as one plain value: the
 * training position, the loss guard's state, the model's shape and the hashes.  Shared by the
 * writer (ckpt.c), the attribute table that maps each field to its HDF5 attribute (ckpt_h5.c),
 * the reader (ckpt_read.c) and the trainer.
 * Deliberately not here: how the fields are stored (ckpt_h5.c's table, ckpt.c's layout) and
 * the functions that fill or free the value (ckpt.h).
 *
 * Ownership: a plain value, except config_yaml, which ckpt_read_meta and ckpt_load allocate and
 * ckpt_meta_free releases (ckpt.h). */
#ifndef RZ_CKPT_CKPT_META_H
#define RZ_CKPT_CKPT_META_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"

#define CKPT_GUARD_RECENT 64  /* most recent skipped steps kept (training.max_skipped_steps max) */

/* The loss guard's state (train/guard.h), carried so a resumed run judges as an uninterrupted
 * one would.  Optional attributes: files written before the guard read as zeros (a fresh
 * guard). */
struct ckpt_guard {
    double loss_mean, loss_var, gnorm_mean, gnorm_var; /* running statistics, accepted steps */
    int64_t seen;             /* accepted steps observed */
    int64_t skipped;          /* steps skipped so far */
    int64_t recent[CKPT_GUARD_RECENT]; /* the latest skipped steps, oldest first; 0 = unused */
};

struct ckpt_meta {
    int64_t step;             /* optimizer steps completed */
    int64_t samples_seen;     /* global samples consumed (the data cursor) */
    int64_t global_batch;     /* samples per optimizer step at save */
    int64_t world_size;       /* ranks at save */
    int64_t adam_t;           /* Adam steps taken */
    double lr;                /* learning rate of the last step */
    uint64_t init_seed, data_seed; /* counter-based RNG state is (seed, counter) */
    /* aggregated metrics to continue across restarts */
    double loss_sum;          /* sum of per-step losses so far */
    double train_time_s;      /* training time so far (excludes restarts) */
    int64_t restarts;         /* resumes so far */
    struct ckpt_guard guard;  /* the loss guard's state */
    /* model shape (refused on mismatch) */
    struct model_dims dims;
    char config_sha256[65];
    char params_sha256[65];   /* SHA-256 of all parameter bytes in table order */
    char adam_sha256[65];     /* SHA-256 of /adam_m then /adam_v bytes in table order; recomputed
                               * by ckpt_load and ckpt_inspect (not stored) */
    char tokenizer_sha256[65]; /* the data's tokenizer (data/data.h); "" when it names none */
    bool tokenizer_recorded;  /* read back: the file has the attribute (files written before it
                               * have none: the tokenizer is "not recorded", whatever it was) */
    char build[64];           /* PACKAGE_STRING of the writer */
    int64_t format_version;
    char *config_yaml;        /* the resolved config text (owned) */
};

#endif
