/* ckpt_fixtures.h: what the files of check_ckpt share (ckpt_fixtures.c): the scratch directory
 * and its fixture, tiny model tables built by hand, metadata and saves of them, a moment fetch
 * for ZeRO's form, damage done to a file, and the test cases that check_ckpt.c adds to its suite
 * from check_ckpt_errors.c and check_ckpt_async.c.  Test code only. */
#ifndef RZ_TESTS_CKPT_FIXTURES_H
#define RZ_TESTS_CKPT_FIXTURES_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/ckpt.h"
#include "core/status.h"

/* The test's scratch directory: setup makes it, teardown removes it. */
extern char tmpdir[256];

/* The checked fixture of every test case: a fresh $TMPDIR/check_ckpt.XXXXXX (/tmp without
 * TMPDIR) as tmpdir. */
void setup(void);

/* Remove tmpdir and all it holds. */
void teardown(void);

/* tmpdir/name into buf. */
void path_in(char *buf, size_t len, const char *name);

/* Whether path exists (stat succeeds). */
bool exists(const char *path);

/* A model table shaped like model.c's (wte, wpe, L blocks of 12, ln_f, head) for tiny dims. */
struct tiny {
    struct model_dims dims;
    struct model_tensor table[64];
    struct ckpt_tensors t;
};

/* The table of a tiny model of these dims, in model.c's order; no buffers yet. */
void tiny_table(struct tiny *m, int64_t V, int64_t C, int64_t L, int64_t F, int64_t T);

/* Deterministic values with awkward bit patterns: -0, denormals, NaN payloads, infinities. */
void tiny_fill(struct tiny *m, uint32_t seed);

/* The parameter and moment buffers, zeroed, then filled from seed unless seed is 0. */
void tiny_alloc(struct tiny *m, uint32_t seed);

/* Free what tiny_alloc allocated. */
void tiny_free(struct tiny *m);

/* The tiny model of most tests (vocab 64, d_model 16, 2 layers, d_ff 32, seq_len 8), filled
 * from seed (0: zeros). */
void make_tiny(struct tiny *m, uint32_t seed);

/* The metadata of step for m: every field set, from step, with awkward values (an init seed
 * above INT64_MAX) and a small config text. */
struct ckpt_meta make_meta(const struct tiny *m, int64_t step);

/* Save step of m into tmpdir (the test fails if it does not commit); the path in path. */
void save_step(struct tiny *m, int64_t step, char *path, size_t len);

/* The step a .../step-N.h5 path names; -1 for any other name. */
int64_t step_of(const char *path);

/* Assert that two metadata hold the same fields, the floating-point ones bit for bit. */
void assert_meta_equal(const struct ckpt_meta *a, const struct ckpt_meta *b);

/* How many names in dir end with suffix (0 for a missing directory). */
size_t count_files(const char *dir, const char *suffix);

/* Cut the file at path to half its size. */
void truncate_half(const char *path);

/* ZeRO's form: moments fetched tensor by tensor from another tiny model (fetch_from). */
struct fetch_log {
    const struct tiny *from;
    int calls, fail_at;
    int order_ok;
};

/* A ckpt_tensors fetch callback (user: a fetch_log): copies the tensor's moments from
 * log->from, checks they are asked for in order (m of all, then v), and fails the call
 * numbered fail_at (-1: none). */
enum rz_status fetch_from(void *user, int which, size_t index, float *out,
                          struct rz_err *err);

/* The kinds of damage apply_damage does to a checkpoint (check_ckpt_errors.c's
 * damage_reason names what each is refused for). */
enum damage { FLIP_BYTE, TRUNCATE, EMPTY, NOT_HDF5, MISSING_DATASET, NEWER_VERSION };

/* Damage the checkpoint at path in the way d says (through ckpt/ckpt_debug.h). */
void apply_damage(enum damage d, const char *path);

/* The "errors" test case: damage, shapes and paths (check_ckpt_errors.c). */
TCase *ckpt_errors_tcase(void);

/* The "async" test case: the background writer (check_ckpt_async.c). */
TCase *ckpt_async_tcase(void);

/* The "export" test case: safetensors, the GPT-2 mapping, export and import
 * (check_ckpt_export.c). */
TCase *ckpt_export_tcase(void);

#endif
