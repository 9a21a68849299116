/* kernels_fixtures.h: what the files of check_kernels share (kernels_fixtures.c): the
 * tolerances, the two backends' contexts and their fixture, vectors of deterministic values, the
 * closeness and gradient checks, the model's matmul shapes, the creation of a matmul, a layer
 * norm and a GELU, random targets, and what check_kernels.c adds to its suite from
 * check_kernels_norm.c, check_kernels_attention.c, check_kernels_xent.c, check_kernels_levels.c
 * and check_kernels_errors.c, and the timings of check_kernels_timings.c.  Test code only. */
#ifndef RZ_TESTS_KERNELS_FIXTURES_H
#define RZ_TESTS_KERNELS_FIXTURES_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* The tolerances and the finite-difference step (check_kernels.c's top comment says how each
 * is used). */
#define TOL_DNNL 1e-4
#define TOL_FD 2e-3
#define FD_H 1e-2f

/* The reference and the oneDNN backend's contexts: setup creates them, teardown destroys them
 * (the checked fixture of every test case but "levels"). */
extern struct kern_ctx *g_ref, *g_dnnl;
void setup(void);
void teardown(void);

/* n floats, aligned, uninitialized (the test fails if they cannot be allocated). */
float *vec(size_t n);

/* A copy of x's n floats in a new vec. */
float *copy_of(const float *x, size_t n);

/* Deterministic uniform values in [lo, hi). */
void fill(float *x, size_t n, uint32_t seed, float lo, float hi);

/* A new vec of n deterministic values in [-1, 1) from seed. */
float *random_vec(size_t n, uint32_t seed);

/* max |got - ref| <= tol * (1 + max |ref|), NaN fails. */
void assert_close(const float *got, const float *ref, size_t n, double tol,
                  const char *what);

/* The finite difference fd agrees with the analytic gradient an, element i of what, within
 * TOL_FD. */
void assert_grad(double fd, double an, const char *what, size_t i);

/* The dot product of w and y's n floats, in double. */
double dot_d(const float *w, const float *y, size_t n);

/* A matmul of desc d on ctx (the test fails with the error's message if it cannot be created). */
struct kern_matmul *mm_new(struct kern_ctx *ctx, const struct kern_matmul_desc *d);

/* The model's matmuls: weights (out, in); BT = 2048 rows; attention batched over B*H = 64.
 * The length is the definition's: a shape added there is counted here too, or the two
 * declarations conflict. */
extern const struct kern_matmul_desc seed_mm[18];

/* A layer norm of rows x cols on ctx, fp32 outputs (the test fails if it cannot be created). */
struct kern_layernorm *ln_new(struct kern_ctx *ctx, int64_t rows, int64_t cols, float eps);

/* A GELU of rows x cols on ctx, fp32 outputs (the test fails if it cannot be created). */
struct kern_gelu *gelu_new(struct kern_ctx *ctx, int64_t rows, int64_t cols);

/* rows deterministic target ids below vocab, from seed (malloc'd: the caller frees them). */
int32_t *random_targets(int64_t rows, int64_t vocab, uint32_t seed);

/* Add the layer norm's and GELU's tests that run once, in "core" (hand-computed values), to tc;
 * and those of their row kernels, run at every level, to tc (check_kernels_norm.c). */
void kernels_norm_core_tests(TCase *tc);
void kernels_norm_row_tests(TCase *tc);

/* The same for the attention (hand-computed values, deterministic reruns, a backward in place;
 * against the reference, gradients, causality, the vectorized exp) (check_kernels_attention.c). */
void kernels_attention_core_tests(TCase *tc);
void kernels_attention_row_tests(TCase *tc);

/* The same for the cross-entropy (hand-computed values, the deterministic reruns of layer norm,
 * GELU and cross-entropy; against the reference, gradients, extreme logits)
 * (check_kernels_xent.c). */
void kernels_xent_core_tests(TCase *tc);
void kernels_xent_row_tests(TCase *tc);

/* The "levels" test case: every vector level of the row kernels against the baseline's bits
 * (check_kernels_levels.c). */
TCase *kernels_levels_tcase(void);

/* The "errors" test case: bad backend names and bad shapes (check_kernels_errors.c). */
TCase *kernels_errors_tcase(void);

/* Print ms per call of every seed-shape op on both backends, for RZ_KERNEL_TIMINGS=1
 * (check_kernels_timings.c; no assertion, outside the test runner). */
void print_timings(void);

#endif
