/* kern_simd.c: the oneDNN backend's own row kernels, for what oneDNN has no primitive for (or
 * none that fits), on a vectorized exp: the softmax cross-entropy, and the row steps of the
 * blocked causal attention (online softmax, normalization, recomputed probabilities, score
 * gradients) that kern_dnnl.c runs between its tile matmuls.
 *
 * The cross-entropy computes the loss as logsumexp - z[t] (-log p is inf once p underflows);
 * measured on 1 thread (Xeon, AVX-512), 2048x2048 fwd ~2.7 ms vs oneDNN's softmax alone ~2.4 ms
 * without the loss.  Masked attention scores come out as exact zeros.
 *
 * Each row kernel is compiled for AVX-512, AVX2 and the baseline (target_clones); the loader
 * picks one per machine, so results are bit-identical run to run, and independent of the thread
 * count (rows are independent and go to threads in fixed chunks).  Across machines they may
 * differ in the last bits: the clones sum a row in vector-width lanes, and oneDNN's kernels
 * differ per ISA anyway.  Deliberately not here: oneDNN (kern_dnnl.c) and argument validation
 * (kern_common.c). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kern_impl.h"

/* Each row kernel is compiled for AVX-512, AVX2 and the baseline; the loader picks one per
 * machine, so results are bit-identical run to run (and independent of the thread count: rows
 * are independent).  A row kernel sees the visible prefix [0, len) of a row through a window
 * [0, n) padded to whole vectors, with the columns past len masked, so there is no scalar
 * remainder loop (a causal row has any length 1..cols).  The helpers are inlined into one clone
 * per row range, so constants stay in registers across rows. */
#define KERN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define ROW_PAD 16

/* exp(x) for x <= 88 (larger x is clamped): Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2,
 * and the Cephes expf polynomial (~1 ulp); 2^n is built in the exponent bits.  Results below
 * FLT_MIN (x < -87.33654) are flushed to exactly 0, so exp(-inf) = 0; NaN propagates.  The
 * clamps come first so the float-to-int conversion is always defined. */
static inline float exp_approx(float x)
{
    const float lo = -87.33654f, hi = 88.0f;
    float xc = x > lo ? x : lo; /* NaN -> lo */
    xc = xc < hi ? xc : hi;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float e = p * scale;
    return x < lo ? 0.0f : (x == x ? e : x);
}

/* Round to nearest, ties to even, on the bits: add 0x7fff plus the lowest kept bit and cut.  A
 * NaN keeps its sign and upper payload and is made quiet (the cut could leave an infinity). */
static inline kern_bf16 bf16_rne(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (kern_bf16)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
}

/* dst (n) = src rounded to bf16 */
static inline void round_row(kern_bf16 *dst, const float *src, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        dst[i] = bf16_rne(src[i]);
}

KERN_CLONES static void exp_row(float *y, const float *x, int64_t n)
{
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        y[j] = exp_approx(x[j]);
}

void kern_simd_exp(float *y, const float *x, int64_t n)
{
    exp_row(y, x, n);
}

/* max of x[0, len), reading the window x[0, n) */
static inline float row_max(const float *x, int64_t len, int64_t n)
{
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < n; j++) {
        float v = j < len ? x[j] : -INFINITY;
        m = v > m ? v : m;
    }
    return m;
}

/* y = exp(x - shift) on [0, len) and 0 on [len, n); returns sum(y).  y may alias x. */
static inline float exp_shift_sum(float *y, const float *x, int64_t len, int64_t n, float shift)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; j++) {
        float e = exp_approx((j < len ? x[j] : -INFINITY) - shift);
        y[j] = e;
        s += e;
    }
    return s;
}

static inline void scale_row(float *y, const float *x, int64_t n, float a)
{
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        y[j] = a * x[j];
}

/* sum of x * y over [0, n) */
static inline float dot_row(const float *x, const float *y, int64_t n)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; j++)
        s += x[j] * y[j];
    return s;
}

/* The padded window of a causal row of visible length len. */
static inline int64_t window(int64_t len, int64_t cols)
{
    int64_t n = (len + ROW_PAD - 1) / ROW_PAD * ROW_PAD;
    return n < cols ? n : cols;
}

/* Rows [r0, r1): losses[r] = logsumexp(z_r) - z_r[t]; probs_r = softmax(z_r), probs may alias
 * logits (the target logit is read first). */
KERN_CLONES static void xent_forward_rows(float *losses, float *probs, const float *logits,
                                          const int32_t *targets, int64_t r0, int64_t r1,
                                          int64_t v)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *z = logits + r * v;
        float *p = probs + r * v;
        float zt = z[targets[r]], m = row_max(z, v, v);
        float s = exp_shift_sum(p, z, v, v, m);
        losses[r] = (float)(log((double)s) + (double)m - (double)zt);
        scale_row(p, p, v, 1.0f / s);
    }
}

/* Row piece [j0, j0 + n) of dlogits = scale * (p - onehot(t)) into d, added into psum when
 * `sum`.  Inlined with constant flags: one branch-free loop per case; the index is 32-bit (the
 * vocab fits int32_t) so the compare has the float lanes' width. */
static inline __attribute__((always_inline)) void xent_grad(float *d, float *psum, const float *p,
                                                            int32_t t, float scale, int32_t j0,
                                                            int32_t n, const bool sum)
{
#pragma omp simd
    for (int32_t j = 0; j < n; j++) {
        float g = scale * (p[j] - (j0 + j == t ? 1.0f : 0.0f)); /* p - 0 is p: exact */
        if (sum)
            psum[j] += g;
        d[j] = g;
    }
}

/* The bf16 rows go through this many floats on the stack, then are rounded. */
#define XENT_PIECE 1024

KERN_CLONES static void xent_backward_rows(void *dlogits, bool bf16, float *psum,
                                           const float *probs, const int32_t *targets,
                                           float scale, int64_t r0, int64_t r1, int64_t v)
{
    if (psum != NULL)
        memset(psum, 0, (size_t)v * sizeof *psum);
    float piece[XENT_PIECE];
    for (int64_t r = r0; r < r1; r++) {
        const float *p = probs + r * v;
        int32_t t = targets[r];
        for (int32_t j0 = 0; j0 < (int32_t)v; j0 += XENT_PIECE) {
            int32_t n = (int32_t)v - j0 < XENT_PIECE ? (int32_t)v - j0 : XENT_PIECE;
            float *d = bf16 ? piece : (float *)dlogits + r * v + j0;
            if (psum != NULL)
                xent_grad(d, psum + j0, p + j0, t, scale, j0, n, true);
            else
                xent_grad(d, NULL, p + j0, t, scale, j0, n, false);
            if (bf16)
                round_row((kern_bf16 *)dlogits + r * v + j0, piece, n);
        }
    }
}

/* Rows go to threads in fixed chunks; each row is computed the same way by any thread. */
#define ROW_CHUNK 64

static int64_t chunk_end(int64_t c, int64_t rows)
{
    return (c + 1) * ROW_CHUNK < rows ? (c + 1) * ROW_CHUNK : rows;
}

/* acc (n) += the count partial rows of parts (count, n), in order. */
KERN_CLONES static void sum_partials(float *acc, const float *parts, int64_t count, int64_t n)
{
    for (int64_t c = 0; c < count; c++) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            acc[j] += parts[c * n + j];
    }
}

/* The chunked parallel loop over `rows` rows of every entry point of this file; `call` sees
 * its chunk as rows [r0, r1). */
#define FOR_ROW_CHUNKS(rows, call)                                                                \
    do {                                                                                          \
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
    FOR_ROW_CHUNKS(op->rows, xent_forward_rows(losses, probs, logits, targets, r0, r1, op->vocab));
}

int64_t kern_simd_xent_scratch(const struct kern_xent *op)
{
    return (op->rows + ROW_CHUNK - 1) / ROW_CHUNK * op->vocab;
}

void kern_simd_xent_backward(struct kern_xent *op, float *scratch, void *dlogits, float *dbias,
                             const float *probs, const int32_t *targets, float scale)
{
    const int64_t v = op->vocab;
    FOR_ROW_CHUNKS(op->rows, xent_backward_rows(dlogits, op->bf16_out,
                                                dbias ? scratch + r0 / ROW_CHUNK * v : NULL,
                                                probs, targets, scale, r0, r1, v));
    if (dbias != NULL)
        sum_partials(dbias, scratch, (op->rows + ROW_CHUNK - 1) / ROW_CHUNK, v);
}

/* ---- attention: the row steps between the tile matmuls (kern_impl.h) ----------------------- */

/* Row rr of a (B, H, bq, bk) score tile of queries [q0, q0 + bq) and keys [k0, k0 + bk). */
struct tile_row {
    int64_t score;            /* offset of its scores in the tile buffer */
    int64_t stat;             /* index in the (B, H, tile) statistics of the query tile */
    int64_t seq;              /* index in the (B, H, T) statistics */
    int64_t out;              /* offset of its head's slice in a (B, T, C) row */
    int64_t len;              /* visible keys: all bk, or up to the query on the diagonal */
};

static inline struct tile_row tile_row(const struct kern_attention *op, int64_t rr, int64_t q0,
                                       int64_t bq, int64_t k0, int64_t bk)
{
    int64_t bh = rr / bq, r = rr % bq, b = bh / op->H, h = bh % op->H;
    struct tile_row g = {.score = (bh * op->tile + r) * op->tile, .stat = bh * op->tile + r,
                         .seq = bh * op->T + q0 + r,
                         .out = (b * op->T + q0 + r) * op->H * op->D + h * op->D,
                         .len = k0 == q0 ? r + 1 : bk};
    return g;
}

/* p = exp(s - shift) on the visible keys, exactly 0 on the rest of [0, bk); returns sum(p). */
static inline float tile_exp(float *s, const struct tile_row *g, int64_t bk, float shift)
{
    int64_t n = window(g->len, bk);
    float sum = exp_shift_sum(s, s, g->len, n, shift);
    memset(s + n, 0, (size_t)(bk - n) * sizeof *s);
    return sum;
}

KERN_CLONES static void online_rows(const struct kern_attention *op, float *s, float *m,
                                    float *l, float *y, int64_t q0, int64_t bq, int64_t k0,
                                    int64_t bk, int64_t r0, int64_t r1)
{
    for (int64_t rr = r0; rr < r1; rr++) {
        struct tile_row g = tile_row(op, rr, q0, bq, k0, bk);
        float *sr = s + g.score;
        float mx = row_max(sr, g.len, window(g.len, bk));
        if (k0 == 0) { /* the first key tile: no earlier sums to rescale */
            l[g.stat] = tile_exp(sr, &g, bk, mx);
            m[g.stat] = mx;
            continue;
        }
        float m_new = mx > m[g.stat] ? mx : m[g.stat];
        float alpha = exp_approx(m[g.stat] - m_new);
        l[g.stat] = l[g.stat] * alpha + tile_exp(sr, &g, bk, m_new);
        m[g.stat] = m_new;
        scale_row(y + g.out, y + g.out, op->D, alpha);
    }
}

KERN_CLONES static void finish_rows(const struct kern_attention *op, float *y, float *lse,
                                    const float *m, const float *l, int64_t q0, int64_t bq,
                                    int64_t r0, int64_t r1)
{
    for (int64_t rr = r0; rr < r1; rr++) {
        struct tile_row g = tile_row(op, rr, q0, bq, q0, bq);
        scale_row(y + g.out, y + g.out, op->D, 1.0f / l[g.stat]);
        lse[g.seq] = (float)((double)m[g.stat] + log((double)l[g.stat]));
    }
}

KERN_CLONES static void delta_rows(const struct kern_attention *op, float *delta,
                                   const float *dy, const float *y, int64_t r0, int64_t r1)
{
    for (int64_t rr = r0; rr < r1; rr++) {
        struct tile_row g = tile_row(op, rr, 0, op->T, 0, op->T);
        delta[g.seq] = dot_row(dy + g.out, y + g.out, op->D);
    }
}

KERN_CLONES static void probs_rows(const struct kern_attention *op, float *s, const float *lse,
                                   int64_t q0, int64_t bq, int64_t k0, int64_t bk, int64_t r0,
                                   int64_t r1)
{
    for (int64_t rr = r0; rr < r1; rr++) {
        struct tile_row g = tile_row(op, rr, q0, bq, k0, bk);
        tile_exp(s + g.score, &g, bk, lse[g.seq]);
    }
}

KERN_CLONES static void dscores_rows(const struct kern_attention *op, float *dp, const float *p,
                                     const float *delta, int64_t q0, int64_t bq, int64_t k0,
                                     int64_t bk, int64_t r0, int64_t r1)
{
    for (int64_t rr = r0; rr < r1; rr++) {
        struct tile_row g = tile_row(op, rr, q0, bq, k0, bk);
        float *ds = dp + g.score, d = delta[g.seq];
        const float *pr = p + g.score;
#pragma omp simd
        for (int64_t c = 0; c < bk; c++)
            ds[c] = pr[c] * (ds[c] - d); /* 0 where masked: p is exactly 0 there */
    }
}

void kern_simd_attn_online(const struct kern_attention *op, float *s, float *m, float *l,
                           float *y, int64_t q0, int64_t bq, int64_t k0, int64_t bk)
{
    FOR_ROW_CHUNKS(op->B * op->H * bq, online_rows(op, s, m, l, y, q0, bq, k0, bk, r0, r1));
}

void kern_simd_attn_finish(const struct kern_attention *op, float *y, float *lse,
                           const float *m, const float *l, int64_t q0, int64_t bq)
{
    FOR_ROW_CHUNKS(op->B * op->H * bq, finish_rows(op, y, lse, m, l, q0, bq, r0, r1));
}

void kern_simd_attn_delta(const struct kern_attention *op, float *delta, const float *dy,
                          const float *y)
{
    FOR_ROW_CHUNKS(op->B * op->H * op->T, delta_rows(op, delta, dy, y, r0, r1));
}

void kern_simd_attn_probs(const struct kern_attention *op, float *s, const float *lse,
                          int64_t q0, int64_t bq, int64_t k0, int64_t bk)
{
    FOR_ROW_CHUNKS(op->B * op->H * bq, probs_rows(op, s, lse, q0, bq, k0, bk, r0, r1));
}

void kern_simd_attn_dscores(const struct kern_attention *op, float *dp, const float *p,
                            const float *delta, int64_t q0, int64_t bq, int64_t k0, int64_t bk)
{
    FOR_ROW_CHUNKS(op->B * op->H * bq, dscores_rows(op, dp, p, delta, q0, bq, k0, bk, r0, r1));
}

/* ---- layer normalization: one pass per row each way ------------------------------------------
 * Forward: mean and biased variance (two passes over the row while it is in L1), then
 * y = (x - mean) rstd gamma + beta.  Backward (with g = dy gamma, xhat = (x - mean) rstd):
 * dx (+)= rstd (g - mean(g) - xhat mean(g xhat)); the column sums dgamma = sum dy xhat and
 * dbeta = sum dy go into one partial row pair per chunk of ROW_CHUNK rows, which are then added
 * up in chunk order: deterministic and independent of the thread count. */

KERN_CLONES static void ln_forward_rows(const struct kern_layernorm *op, void *y, float *mean,
                                        float *var, const float *x, const float *gamma,
                                        const float *beta, int64_t r0, int64_t r1)
{
    const int64_t n = op->cols;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * n;
        float *yr = (float *)y + r * n;
        kern_bf16 *hr = (kern_bf16 *)y + r * n;
        float s = 0.0f, v = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < n; j++)
            s += xr[j];
        float mu = s / (float)n;
#pragma omp simd reduction(+ : v)
        for (int64_t j = 0; j < n; j++)
            v += (xr[j] - mu) * (xr[j] - mu);
        v /= (float)n;
        float rstd = 1.0f / sqrtf(v + op->eps);
        if (op->bf16_out) {
#pragma omp simd
            for (int64_t j = 0; j < n; j++)
                hr[j] = bf16_rne((xr[j] - mu) * rstd * gamma[j] + beta[j]);
        } else {
#pragma omp simd
            for (int64_t j = 0; j < n; j++)
                yr[j] = (xr[j] - mu) * rstd * gamma[j] + beta[j];
        }
        mean[r] = mu;
        var[r] = v;
    }
}

/* Rows [r0, r1): dx, and this chunk's partial dgamma, dbeta (cols each, overwritten). */
KERN_CLONES static void ln_backward_rows(const struct kern_layernorm *op, float *dx,
                                         float *pgamma, float *pbeta, const float *dy,
                                         const float *x, const float *mean, const float *var,
                                         const float *gamma, bool accumulate_dx, int64_t r0,
                                         int64_t r1)
{
    const int64_t n = op->cols;
    memset(pgamma, 0, (size_t)n * sizeof *pgamma);
    memset(pbeta, 0, (size_t)n * sizeof *pbeta);
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float mu = mean[r], rstd = 1.0f / sqrtf(var[r] + op->eps), mg = 0.0f, mgx = 0.0f;
#pragma omp simd reduction(+ : mg, mgx)
        for (int64_t j = 0; j < n; j++) {
            float g = dyr[j] * gamma[j];
            mg += g;
            mgx += g * ((xr[j] - mu) * rstd);
        }
        mg /= (float)n;
        mgx /= (float)n;
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            float xhat = (xr[j] - mu) * rstd;
            float d = rstd * (dyr[j] * gamma[j] - mg - xhat * mgx);
            dxr[j] = accumulate_dx ? dxr[j] + d : d;
            pgamma[j] += dyr[j] * xhat;
            pbeta[j] += dyr[j];
        }
    }
}

void kern_simd_layernorm_forward(struct kern_layernorm *op, void *y, float *mean, float *var,
                                 const float *x, const float *gamma, const float *beta)
{
    FOR_ROW_CHUNKS(op->rows, ln_forward_rows(op, y, mean, var, x, gamma, beta, r0, r1));
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
    FOR_ROW_CHUNKS(op->rows, ln_backward_rows(op, dx, pg + r0 / ROW_CHUNK * n,
                                              pb + r0 / ROW_CHUNK * n, dy, x, mean, var, gamma,
                                              accumulate_dx, r0, r1));
    sum_partials(dgamma, pg, chunks, n);
    sum_partials(dbeta, pb, chunks, n);
}

/* ---- rounding to bfloat16 ------------------------------------------------------------------ */

KERN_CLONES static void round_bf16_range(kern_bf16 *dst, const float *src, int64_t i0, int64_t i1)
{
    round_row(dst + i0, src + i0, i1 - i0);
}

/* Elements per parallel block: large enough that the fork costs nothing. */
#define BF16_BLOCK 16384

kern_bf16 kern_simd_bf16(float f)
{
    return bf16_rne(f);
}

void kern_simd_round_bf16(kern_bf16 *dst, const float *src, int64_t n)
{
    int64_t blocks = (n + BF16_BLOCK - 1) / BF16_BLOCK;
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t end = (b + 1) * BF16_BLOCK;
        round_bf16_range(dst, src, b * BF16_BLOCK, end < n ? end : n);
    }
}
