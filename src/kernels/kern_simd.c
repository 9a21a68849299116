/* kern_simd.c: the entry points of our row kernels (kern_impl.h's kern_simd_*): each splits its
 * rows or columns among the OpenMP threads and runs the process's vector level's table
 * (kern_rows.h; the kernels themselves are in kern_rows.c, compiled once per level).
 *
 * Rows go to threads in fixed chunks of ROW_CHUNK and column sums run in row order, so the bits
 * never depend on the thread count; the partial column sums of a chunk are added up in chunk
 * order.  The attention's steps work on one head's tiles and open no parallel region:
 * kern_xsmm.c runs them inside its loop over heads.  Deliberately not here: oneDNN
 * (kern_dnnl.c) and argument validation (kern_common.c). */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "kernels/kern_impl.h"
#include "kernels/kern_rows.h"

const struct kern_rows *kern_rows_for(enum rz_isa isa)
{
    switch (isa) {
    case RZ_ISA_AVX512: return &kern_rows_avx512;
    case RZ_ISA_AVX2: return &kern_rows_avx2;
    default: return &kern_rows_baseline;
    }
}

const struct kern_rows *kern_rows_active(void)
{
    return kern_rows_for(rz_isa_active());
}

void kern_simd_exp(float *y, const float *x, int64_t n)
{
    kern_rows_active()->exp(y, x, n);
}

/* Round to nearest, ties to even, on the bits (as kern_rows.c's lanes do): add 0x7fff plus the
 * lowest kept bit and cut.  A NaN keeps its sign and upper payload and is made quiet. */
kern_bf16 kern_simd_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (kern_bf16)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
}

void kern_add(float *y, const float *a, const float *b, int64_t n)
{
    kern_rows_active()->add(y, a, b, n);
}

void kern_acc(float *y, const float *x, int64_t n)
{
    kern_rows_active()->acc(y, x, n);
}

/* Rows go to threads in fixed chunks; each row is computed the same way by any thread. */
#define ROW_CHUNK 64
#define ROW_PAD 16

static int64_t chunk_end(int64_t c, int64_t rows)
{
    return (c + 1) * ROW_CHUNK < rows ? (c + 1) * ROW_CHUNK : rows;
}

/* The chunked parallel loop over `rows` rows of every entry point of this file; `call` sees
 * its chunk as rows [r0, r1) and the level's table as `k_`. */
#define FOR_ROW_CHUNKS(rows, call)                                                                \
    do {                                                                                          \
        const struct kern_rows *k_ = kern_rows_active();                                          \
        int64_t rows_ = (rows), chunks_ = (rows_ + ROW_CHUNK - 1) / ROW_CHUNK;                    \
        _Pragma("omp parallel for schedule(static)")                                              \
        for (int64_t c_ = 0; c_ < chunks_; c_++) {                                                \
            int64_t r0 = c_ * ROW_CHUNK, r1 = chunk_end(c_, rows_);                               \
            call;                                                                                 \
        }                                                                                         \
    } while (0)

void kern_simd_xent_forward(struct kern_xent *op, float *losses, float *probs,
                            const float *logits, const int32_t *targets)
{
    FOR_ROW_CHUNKS(op->rows, k_->xent_forward(losses, probs, logits, targets, r0, r1, op->vocab));
}

int64_t kern_simd_xent_scratch(const struct kern_xent *op)
{
    return (op->rows + ROW_CHUNK - 1) / ROW_CHUNK * op->vocab;
}

void kern_simd_xent_backward(struct kern_xent *op, float *scratch, void *dlogits, float *dbias,
                             const float *probs, const int32_t *targets, float scale)
{
    const int64_t v = op->vocab;
    FOR_ROW_CHUNKS(op->rows, k_->xent_backward(dlogits, op->bf16_out,
                                               dbias ? scratch + r0 / ROW_CHUNK * v : NULL,
                                               probs, targets, scale, r0, r1, v));
    if (dbias != NULL)
        kern_rows_active()->sum_partials(dbias, scratch, (op->rows + ROW_CHUNK - 1) / ROW_CHUNK,
                                         v);
}

/* ---- attention: the row steps of one head, on the level's table ------------------------------ */

void kern_simd_attn_online(const struct kern_attn_tile *t, float scale, float *m, float *l,
                           float *y, int64_t ldy, int64_t D)
{
    kern_rows_active()->attn_online(t, scale, m, l, y, ldy, D);
}

void kern_simd_attn_finish(float *y, int64_t ldy, int64_t D, float *lse, const float *m,
                           const float *l, int64_t q0, int64_t bq)
{
    kern_rows_active()->attn_finish(y, ldy, D, lse, m, l, q0, bq);
}

void kern_simd_attn_delta(float *delta, const float *dy, const float *y, int64_t ld, int64_t D,
                          int64_t T)
{
    kern_rows_active()->attn_delta(delta, dy, y, ld, D, T);
}

void kern_simd_attn_probs(const struct kern_attn_tile *t, float scale, const float *lse)
{
    kern_rows_active()->attn_probs(t, scale, lse);
}

void kern_simd_attn_dscores(const struct kern_attn_tile *t, const float *p, const float *delta,
                            float scale)
{
    kern_rows_active()->attn_dscores(t, p, delta, scale);
}

/* ---- matrix-vector product ------------------------------------------------------------------ */

bool kern_simd_gemv_takes(const struct kern_matmul_desc *d)
{
    return d->batch == 1 && d->m == 1 && !d->trans_a && d->trans_b && d->alpha == 1.0f &&
           !d->accumulate && !d->bf16;
}

void kern_simd_gemv(const struct kern_matmul_desc *d, float *y, const float *x, const float *w,
                    const float *bias)
{
    const float *b = d->bias ? bias : NULL;
    FOR_ROW_CHUNKS(d->n, k_->gemv(y, w, x, b, d->k, r0, r1));
}

/* ---- layer normalization --------------------------------------------------------------------- */

void kern_simd_layernorm_forward(struct kern_layernorm *op, void *y, float *mean, float *var,
                                 const float *x, const float *gamma, const float *beta)
{
    FOR_ROW_CHUNKS(op->rows, k_->ln_forward(op, y, mean, var, x, gamma, beta, r0, r1));
}

int64_t kern_simd_layernorm_scratch(const struct kern_layernorm *op)
{
    return 2 * ((op->rows + ROW_CHUNK - 1) / ROW_CHUNK) * op->cols;
}

void kern_simd_layernorm_backward(struct kern_layernorm *op, float *scratch, float *dx,
                                  float *dgamma, float *dbeta, const float *dy, const float *x,
                                  const float *mean, const float *var, const float *gamma,
                                  bool accumulate_dx)
{
    const int64_t n = op->cols, chunks = (op->rows + ROW_CHUNK - 1) / ROW_CHUNK;
    float *pg = scratch, *pb = scratch + chunks * n;
    FOR_ROW_CHUNKS(op->rows, k_->ln_backward(op, dx, pg + r0 / ROW_CHUNK * n,
                                             pb + r0 / ROW_CHUNK * n, dy, x, mean, var, gamma,
                                             accumulate_dx, r0, r1));
    kern_rows_active()->sum_partials(dgamma, pg, chunks, n);
    kern_rows_active()->sum_partials(dbeta, pb, chunks, n);
}

/* ---- rounding to bfloat16 ------------------------------------------------------------------ */

/* Elements per parallel block: large enough that the fork costs nothing. */
#define BF16_BLOCK 16384

void kern_simd_round_bf16(kern_bf16 *dst, const float *src, int64_t n)
{
    const struct kern_rows *k = kern_rows_active();
    int64_t blocks = (n + BF16_BLOCK - 1) / BF16_BLOCK;
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t i0 = b * BF16_BLOCK, end = (b + 1) * BF16_BLOCK;
        k->round_bf16(dst + i0, src + i0, (end < n ? end : n) - i0);
    }
}

/* ---- column sums (a bias gradient), with the bf16 rounding in the same pass ------------------ */

/* The parallel loop of the column sums: each thread takes a band of columns (whole vectors)
 * through all rows, so every column is summed in row order whatever the thread count: the bits
 * never depend on it.  `call` sees its band as columns [j0, j1) and the table as `k_`. */
#define FOR_COL_BANDS(rows, cols, call)                                                           \
    do {                                                                                          \
        const struct kern_rows *k_ = kern_rows_active();                                          \
        int64_t rows_ = (rows), cols_ = (cols), bands_ = omp_get_max_threads();                   \
        int64_t width_ = (cols_ + bands_ - 1) / bands_;                                           \
        width_ = (width_ + ROW_PAD - 1) / ROW_PAD * ROW_PAD;                                      \
        bands_ = (cols_ + width_ - 1) / width_;                                                   \
        _Pragma("omp parallel for schedule(static) if (bands_ > 1 && rows_ * cols_ >= BF16_BLOCK)") \
        for (int64_t b_ = 0; b_ < bands_; b_++) {                                                 \
            int64_t j0 = b_ * width_, j1 = (b_ + 1) * width_ < cols_ ? (b_ + 1) * width_ : cols_; \
            call;                                                                                 \
        }                                                                                         \
    } while (0)

void kern_simd_colsum_round(float *sums, kern_bf16 *dst, const float *src, int64_t rows,
                            int64_t cols)
{
    FOR_COL_BANDS(rows, cols, k_->colsum(sums, dst, src, rows, cols, j0, j1));
}

/* ---- GELU ------------------------------------------------------------------------------------
 * Forward: rows in fixed chunks.  Backward: column bands through all rows, so the bias gradient
 * is each column's sum in row order (as kern_colsum_round's). */

void kern_simd_gelu_forward(struct kern_gelu *op, void *y, const float *x)
{
    FOR_ROW_CHUNKS(op->rows, k_->gelu_forward(op, y, x, r0, r1));
}

void kern_simd_gelu_backward(struct kern_gelu *op, void *dx, float *dbias, const float *dy,
                             const float *x)
{
    FOR_COL_BANDS(op->rows, op->cols, k_->gelu_backward(op, dx, dbias, dy, x, j0, j1));
}
