/* kern_rows.h: our row kernels, one ops table per vector level (core/isa.h).
 *
 * kern_rows.c is compiled once per level (Makefile.am: librows_avx512.a, librows_avx2.a,
 * librows_baseline.a) and each build defines its table; kern_simd.c runs the table of the
 * process's level (kern_rows_active) and splits the rows among the OpenMP threads.  Every entry
 * works on a range of rows or columns and opens no parallel region.  All levels give the same
 * bits.  Not a public header: the kernels module, its tests and tools/bench-rows include it. */
#ifndef RZ_KERNELS_KERN_ROWS_H
#define RZ_KERNELS_KERN_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/isa.h"
#include "kernels/kern_impl.h"

struct kern_rows {
    enum rz_isa isa;

    /* y (n) = exp(x), relative error < 1e-6 for normal results; below FLT_MIN flushed to 0 */
    void (*exp)(float *y, const float *x, int64_t n);
    /* dst (n) = src rounded to bf16 (kern_round_bf16) */
    void (*round_bf16)(kern_bf16 *dst, const float *src, int64_t n);
    /* columns [j0, j1) of src (rows, cols): sums[j] += src[r][j] in row order; dst, if not NULL,
     * gets src rounded to bf16 as it streams by */
    void (*colsum)(float *sums, kern_bf16 *dst, const float *src, int64_t rows, int64_t cols,
                   int64_t j0, int64_t j1);
    /* acc (n) += the count partial rows of parts (count, n), in order */
    void (*sum_partials)(float *acc, const float *parts, int64_t count, int64_t n);
    /* y = a + b and y += x (n) */
    void (*add)(float *y, const float *a, const float *b, int64_t n);
    void (*acc)(float *y, const float *x, int64_t n);

    /* Cross-entropy over rows [r0, r1) (kern_simd_xent_forward / _backward); psum, if not
     * NULL, is this chunk's partial bias gradient (v floats, overwritten). */
    void (*xent_forward)(float *losses, float *probs, const float *logits,
                         const int32_t *targets, int64_t r0, int64_t r1, int64_t v);
    void (*xent_backward)(void *dlogits, bool bf16, float *psum, const float *probs,
                          const int32_t *targets, float scale, int64_t r0, int64_t r1,
                          int64_t v);

    /* Layer normalization over rows [r0, r1); the backward's partial column sums (cols floats
     * each) are overwritten. */
    void (*ln_forward)(const struct kern_layernorm *op, void *y, float *mean, float *var,
                       const float *x, const float *gamma, const float *beta, int64_t r0,
                       int64_t r1);
    void (*ln_backward)(const struct kern_layernorm *op, float *dx, float *pgamma, float *pbeta,
                        const float *dy, const float *x, const float *mean, const float *var,
                        const float *gamma, bool accumulate_dx, int64_t r0, int64_t r1);

    /* GELU: the forward over rows [r0, r1), the backward over columns [j0, j1) of every row
     * (sums, if not NULL, gets each column's bias gradient in row order). */
    void (*gelu_forward)(const struct kern_gelu *op, void *y, const float *x, int64_t r0,
                         int64_t r1);
    void (*gelu_backward)(const struct kern_gelu *op, void *dx, float *sums, const float *dy,
                          const float *x, int64_t j0, int64_t j1);

    /* The attention's row steps, with the signatures of kern_impl.h's kern_simd_attn_*. */
    void (*attn_online)(const struct kern_attn_tile *t, float scale, float *m, float *l,
                        float *y, int64_t ldy, int64_t D);
    void (*attn_finish)(float *y, int64_t ldy, int64_t D, float *lse, const float *m,
                        const float *l, int64_t q0, int64_t bq);
    void (*attn_delta)(float *delta, const float *dy, const float *y, int64_t ld, int64_t D,
                       int64_t T);
    void (*attn_probs)(const struct kern_attn_tile *t, float scale, const float *lse);
    void (*attn_dscores)(const struct kern_attn_tile *t, const float *p, const float *delta,
                         float scale);

    /* Rows [r0, r1) of y = w x [+ b]: w (rows, n) row-major, x (n), b (rows) or NULL
     * (kern_simd_gemv). */
    void (*gemv)(float *y, const float *w, const float *x, const float *b, int64_t n, int64_t r0,
                 int64_t r1);
};

extern const struct kern_rows kern_rows_avx512, kern_rows_avx2, kern_rows_baseline;

/* The table of a level, and of the process's level. */
const struct kern_rows *kern_rows_for(enum rz_isa isa);
const struct kern_rows *kern_rows_active(void);

#endif
