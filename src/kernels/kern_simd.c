/* kern_simd.c: the oneDNN backend's own row kernels, for what oneDNN has no primitive for (or
 * none that fits), on a vectorized exp: the softmax cross-entropy, and the row steps of the
 * blocked causal attention (online softmax, normalization, recomputed probabilities, score
 * gradients) that kern_xsmm.c runs between its tile matmuls.
 *
 * The attention's steps work on one head's tiles and open no parallel region: kern_xsmm.c runs
 * them inside its loop over heads.
 * The cross-entropy computes the loss as logsumexp - z[t] (-log p is inf once p underflows);
 * measured on 1 thread (Xeon, AVX-512), 2048x2048 fwd ~2.7 ms vs oneDNN's softmax alone ~2.4 ms
 * without the loss.  Masked attention scores come out as exact zeros.
 *
 * Each row kernel is compiled for AVX-512, AVX2 and the baseline (target_clones); the loader
 * picks one per machine, so results are bit-identical run to run, and independent of the thread
 * count (rows are independent and go to threads in fixed chunks).  The clones are written to
 * agree with each other too: elementwise code is the same arithmetic at any vector width (C11
 * mode: no FMA contraction), and row sums and maxima fold 16 lanes by one fixed tree (below).
 * Across machines a run still differs in the last bits, because oneDNN's kernels differ per
 * ISA.  Deliberately not here: oneDNN (kern_dnnl.c) and argument validation (kern_common.c). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "kernels/kern_impl.h"

/* Each row kernel is compiled for AVX-512, AVX2 and the baseline; the loader picks one per
 * machine, so results are bit-identical run to run (and independent of the thread count: rows
 * are independent).  A row kernel sees the visible prefix [0, len) of a row through a window
 * [0, n) padded to whole vectors, with the columns past len masked, so there is no scalar
 * remainder loop (a causal row has any length 1..cols).  The helpers are inlined into one clone
 * per row range, so constants stay in registers across rows. */
#define KERN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* Every helper is forced inline: one left out of line is compiled for the baseline ISA only (it
 * is not a clone), and its vector loops then run in SSE registers (seen: tile_exp, 3x slower). */
#define ROW_INLINE static inline __attribute__((always_inline))
#define ROW_PAD 16

/* exp(x) for x <= 88 (larger x is clamped): Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2,
 * and the Cephes expf polynomial (~1 ulp); 2^n is built in the exponent bits.  Results below
 * FLT_MIN (x < -87.33654) are flushed to exactly 0, so exp(-inf) = 0; NaN propagates.  The
 * clamps come first so the float-to-int conversion is always defined. */
ROW_INLINE float exp_approx(float x)
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
ROW_INLINE kern_bf16 bf16_rne(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (kern_bf16)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
}

/* dst (n) = src rounded to bf16 */
ROW_INLINE void round_row(kern_bf16 *dst, const float *src, int64_t n)
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

/* ---- sixteen lanes: the row reductions ------------------------------------------------------
 * A row's max and sums are taken in 16 lanes of GCC's vector extension (one zmm register in the
 * AVX-512 clone, two ymm in the AVX2 one, four xmm in the baseline) and folded by a fixed tree,
 * so every clone adds in the same order and gives the same bits.  `#pragma omp simd reduction`
 * did the arithmetic in vectors too, but GCC 12 folds its lanes with a scalar loop through the
 * stack: 16 dependent maxss or addss per row, about 64 cycles, which on the attention's 64-key
 * rows cost more than the row itself (measured: 28% of kern_simd_attn_online's samples). */
#pragma GCC diagnostic ignored "-Wpsabi" /* the helpers below are static and inlined into each
                                          * clone: no call ever passes a v16f across the ABI */
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
#define V16 16

ROW_INLINE v16f v16_load(const float *p)
{
    v16f v;
    memcpy(&v, p, sizeof v);
    return v;
}

ROW_INLINE v16f v16_splat(float f)
{
    return (v16f){0} + f;
}

/* the lanes j0 + [0, 16) that are < len: all ones, else zero */
ROW_INLINE v16i v16_below(int64_t j0, int64_t len)
{
    const v16i iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    return iota + (int32_t)j0 < (v16i){0} + (int32_t)len; /* rows are far below 2^31 */
}

/* where `mask` a, else b */
ROW_INLINE v16f v16_select(v16i mask, v16f a, v16f b)
{
    v16i ai, bi;
    memcpy(&ai, &a, sizeof ai);
    memcpy(&bi, &b, sizeof bi);
    v16i r = (ai & mask) | (bi & ~mask);
    v16f out;
    memcpy(&out, &r, sizeof out);
    return out;
}

/* lane-wise b > a ? b : a (a NaN in b is skipped, as by the scalar form) */
ROW_INLINE v16f v16_max(v16f a, v16f b)
{
    return v16_select(b > a, b, a);
}

/* Stage k (0 to 3) of the fold tree: v with its lanes swapped in blocks of 8 >> k, so that
 * combining the two gives each pair of blocks their combination. */
ROW_INLINE v16f v16_swapped(v16f v, int k)
{
    switch (k) {
    case 0: return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5,
                                           6, 7);
    case 1: return __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9,
                                           10, 11);
    case 2: return __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15,
                                           12, 13);
    default: return __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12,
                                            15, 14);
    }
}

ROW_INLINE float v16_hsum(v16f v)
{
    for (int k = 0; k < 4; k++)
        v += v16_swapped(v, k);
    return v[0];
}

ROW_INLINE float v16_hmax(v16f v)
{
    for (int k = 0; k < 4; k++)
        v = v16_max(v, v16_swapped(v, k));
    return v[0];
}

/* sum of x[0, n): whole vectors in lanes, then the tail in order */
ROW_INLINE float sum_row(const float *x, int64_t n)
{
    v16f acc = {0};
    int64_t j = 0;
    for (; j + V16 <= n; j += V16)
        acc += v16_load(x + j);
    float s = v16_hsum(acc);
    for (; j < n; j++)
        s += x[j];
    return s;
}

/* max of x[0, len), reading the window x[0, n) (lanes past len count as -inf) */
ROW_INLINE float row_max(const float *x, int64_t len, int64_t n)
{
    const v16f ninf = v16_splat(-INFINITY);
    v16f acc = ninf;
    int64_t j = 0;
    for (; j + V16 <= n; j += V16)
        acc = v16_max(acc, v16_select(v16_below(j, len), v16_load(x + j), ninf));
    float m = v16_hmax(acc);
    for (; j < len; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

/* y = exp(x - shift) on [0, len) and 0 on [len, n); returns sum(y).  y may alias x. */
ROW_INLINE float exp_shift_sum(float *y, const float *x, int64_t len, int64_t n, float shift)
{
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        y[j] = exp_approx((j < len ? x[j] : -INFINITY) - shift);
    return sum_row(y, n);
}

ROW_INLINE void scale_row(float *y, const float *x, int64_t n, float a)
{
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        y[j] = a * x[j];
}

/* sum of x * y over [0, n) */
ROW_INLINE float dot_row(const float *x, const float *y, int64_t n)
{
    v16f acc = {0};
    int64_t j = 0;
    for (; j + V16 <= n; j += V16)
        acc += v16_load(x + j) * v16_load(y + j);
    float s = v16_hsum(acc);
    for (; j < n; j++)
        s += x[j] * y[j];
    return s;
}

/* The padded window of a causal row of visible length len. */
ROW_INLINE int64_t window(int64_t len, int64_t cols)
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
ROW_INLINE void xent_grad(float *d, float *psum, const float *p, int32_t t, float scale,
                          int32_t j0, int32_t n, const bool sum)
{
#pragma omp simd
    for (int32_t j = 0; j < n; j++) {
        float g = scale * (p[j] - (j0 + j == t ? 1.0f : 0.0f)); /* p - 0 is p: exact */
        if (sum)
            psum[j] += g;
        d[j] = g;
    }
}

/* The bf16 outputs of the cross-entropy and the GELU go through this many floats on the stack,
 * then are rounded (round_row): with the rounding in the same loop GCC 12 left the GELU's loops
 * scalar (measured 8.2 ms a call at 2048 x 512 against 1.1 in fp32). */
#define ROUND_PIECE 1024

KERN_CLONES static void xent_backward_rows(void *dlogits, bool bf16, float *psum,
                                           const float *probs, const int32_t *targets,
                                           float scale, int64_t r0, int64_t r1, int64_t v)
{
    if (psum != NULL)
        memset(psum, 0, (size_t)v * sizeof *psum);
    float piece[ROUND_PIECE];
    for (int64_t r = r0; r < r1; r++) {
        const float *p = probs + r * v;
        int32_t t = targets[r];
        for (int32_t j0 = 0; j0 < (int32_t)v; j0 += ROUND_PIECE) {
            int32_t n = (int32_t)v - j0 < ROUND_PIECE ? (int32_t)v - j0 : ROUND_PIECE;
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

/* ---- attention: the row steps of one head between its tile matmuls (kern_impl.h) ---------- */

/* Visible keys of row r of the tile: all bk, or up to the query on the diagonal. */
ROW_INLINE int64_t tile_len(const struct kern_attn_tile *t, int64_t r)
{
    return t->k0 == t->q0 ? r + 1 : t->bk;
}

/* p = exp(scale * s - shift) on the visible keys [0, len), exactly 0 on the rest of [0, bk);
 * returns sum(p). */
ROW_INLINE float tile_exp(float *s, int64_t len, int64_t bk, float scale, float shift)
{
    int64_t n = window(len, bk);
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        s[j] = exp_approx((j < len ? scale * s[j] : -INFINITY) - shift);
    memset(s + n, 0, (size_t)(bk - n) * sizeof *s);
    return sum_row(s, n);
}

KERN_CLONES void kern_simd_attn_online(const struct kern_attn_tile *t, float scale, float *m,
                                       float *l, float *y, int64_t ldy, int64_t D)
{
    for (int64_t r = 0; r < t->bq; r++) {
        float *sr = t->s + r * t->ld, *yr = y + (t->q0 + r) * ldy;
        int64_t len = tile_len(t, r);
        float mx = scale * row_max(sr, len, window(len, t->bk)); /* scale > 0 */
        if (t->k0 == 0) { /* the first key tile: no earlier sums to rescale */
            l[r] = tile_exp(sr, len, t->bk, scale, mx);
            m[r] = mx;
            continue;
        }
        float m_new = mx > m[r] ? mx : m[r];
        float alpha = exp_approx(m[r] - m_new);
        l[r] = l[r] * alpha + tile_exp(sr, len, t->bk, scale, m_new);
        m[r] = m_new;
        scale_row(yr, yr, D, alpha);
    }
}

KERN_CLONES void kern_simd_attn_finish(float *y, int64_t ldy, int64_t D, float *lse,
                                       const float *m, const float *l, int64_t q0, int64_t bq)
{
    for (int64_t r = 0; r < bq; r++) {
        float *yr = y + (q0 + r) * ldy;
        scale_row(yr, yr, D, 1.0f / l[r]);
        lse[q0 + r] = (float)((double)m[r] + log((double)l[r]));
    }
}

KERN_CLONES void kern_simd_attn_delta(float *delta, const float *dy, const float *y, int64_t ld,
                                      int64_t D, int64_t T)
{
    for (int64_t t = 0; t < T; t++)
        delta[t] = dot_row(dy + t * ld, y + t * ld, D);
}

KERN_CLONES void kern_simd_attn_probs(const struct kern_attn_tile *t, float scale,
                                      const float *lse)
{
    for (int64_t r = 0; r < t->bq; r++)
        tile_exp(t->s + r * t->ld, tile_len(t, r), t->bk, scale, lse[t->q0 + r]);
}

KERN_CLONES void kern_simd_attn_dscores(const struct kern_attn_tile *t, const float *p,
                                        const float *delta, float scale)
{
    for (int64_t r = 0; r < t->bq; r++) {
        float *ds = t->s + r * t->ld, d = delta[t->q0 + r];
        const float *pr = p + r * t->ld;
#pragma omp simd
        for (int64_t c = 0; c < t->bk; c++)
            ds[c] = scale * (pr[c] * (ds[c] - d)); /* 0 where masked: p is exactly 0 there */
    }
}

/* ---- layer normalization: one pass per row each way ------------------------------------------
 * Forward: mean and biased variance (two passes over the row while it is in L1), then
 * y = (x - mean) rstd gamma + beta.  Backward (with g = dy gamma, xhat = (x - mean) rstd):
 * dx (+)= rstd (g - mean(g) - xhat mean(g xhat)); the column sums dgamma = sum dy xhat and
 * dbeta = sum dy go into one partial row pair per chunk of ROW_CHUNK rows, which are then added
 * up in chunk order: deterministic and independent of the thread count. */

/* sum of (x - mu)^2 over [0, n) */
ROW_INLINE float sq_dev_row(const float *x, int64_t n, float mu)
{
    v16f acc = {0};
    int64_t j = 0;
    for (; j + V16 <= n; j += V16) {
        v16f d = v16_load(x + j) - mu;
        acc += d * d;
    }
    float s = v16_hsum(acc);
    for (; j < n; j++)
        s += (x[j] - mu) * (x[j] - mu);
    return s;
}

/* With g = dy gamma and xhat = (x - mu) rstd: *mg = sum g, *mgx = sum g xhat over [0, n). */
ROW_INLINE void ln_grad_sums(float *mg, float *mgx, const float *dy, const float *x,
                                const float *gamma, float mu, float rstd, int64_t n)
{
    v16f a = {0}, b = {0};
    int64_t j = 0;
    for (; j + V16 <= n; j += V16) {
        v16f g = v16_load(dy + j) * v16_load(gamma + j);
        a += g;
        b += g * ((v16_load(x + j) - mu) * rstd);
    }
    float sa = v16_hsum(a), sb = v16_hsum(b);
    for (; j < n; j++) {
        float g = dy[j] * gamma[j];
        sa += g;
        sb += g * ((x[j] - mu) * rstd);
    }
    *mg = sa;
    *mgx = sb;
}

KERN_CLONES static void ln_forward_rows(const struct kern_layernorm *op, void *y, float *mean,
                                        float *var, const float *x, const float *gamma,
                                        const float *beta, int64_t r0, int64_t r1)
{
    const int64_t n = op->cols;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * n;
        float *yr = (float *)y + r * n;
        kern_bf16 *hr = (kern_bf16 *)y + r * n;
        float mu = sum_row(xr, n) / (float)n;
        float v = sq_dev_row(xr, n, mu) / (float)n;
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
        float mu = mean[r], rstd = 1.0f / sqrtf(var[r] + op->eps), mg, mgx;
        ln_grad_sums(&mg, &mgx, dyr, xr, gamma, mu, rstd, n);
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

/* ---- column sums (a bias gradient), with the bf16 rounding in the same pass ------------------ */

/* Columns [j0, j1) of src (rows, cols): sums[j] += src[r][j] for r in order; with dst, dst gets
 * src rounded as it streams by. */
KERN_CLONES static void colsum_cols(float *sums, kern_bf16 *dst, const float *src, int64_t rows,
                                    int64_t cols, int64_t j0, int64_t j1)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *row = src + r * cols;
        if (dst != NULL) {
            kern_bf16 *out = dst + r * cols;
#pragma omp simd
            for (int64_t j = j0; j < j1; j++) {
                sums[j] += row[j];
                out[j] = bf16_rne(row[j]);
            }
        } else {
#pragma omp simd
            for (int64_t j = j0; j < j1; j++)
                sums[j] += row[j];
        }
    }
}

/* The parallel loop of the column sums: each thread takes a band of columns (whole vectors)
 * through all rows, so every column is summed in row order whatever the thread count: the bits
 * never depend on it.  `call` sees its band as columns [j0, j1). */
#define FOR_COL_BANDS(rows, cols, call)                                                           \
    do {                                                                                          \
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
    FOR_COL_BANDS(rows, cols, colsum_cols(sums, dst, src, rows, cols, j0, j1));
}

/* ---- GELU ------------------------------------------------------------------------------------
 * Phi(x) = 0.5 (1 + erf(x / sqrt 2)) through erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5))))
 * exp(-z^2), t = 1 / (1 + p z), z = |x| / sqrt 2: Abramowitz & Stegun 7.1.26, absolute error
 * <= 1.5e-7 (the form oneDNN's gelu_erf uses too).  exp(-z^2) = exp(-x^2 / 2) is also the
 * normal density that gelu'(x) = Phi(x) + x phi(x) needs: one exp per element, either way.
 * Forward: rows in fixed chunks.  Backward: column bands through all rows, so the bias gradient
 * is each column's sum in row order (as kern_colsum_round's). */

/* Phi(x), given ez = exp(-x^2 / 2): 0.5 + sign(x) (0.5 - 0.5 erfc(|x| / sqrt 2)).  Written
 * without a branch (fabsf, copysignf): with `x < 0 ? tail : 1 - tail` GCC 12 computed the
 * polynomial twice under complementary masks. */
ROW_INLINE float gelu_cdf(float x, float ez)
{
    float z = fabsf(x) * 0.70710678118654752f;
    float t = 1.0f / (1.0f + 0.3275911f * z);
    float poly = 1.061405429f;
    poly = poly * t - 1.453152027f;
    poly = poly * t + 1.421413741f;
    poly = poly * t - 0.284496736f;
    poly = poly * t + 0.254829592f;
    float tail = 0.5f * (poly * t) * ez; /* 0.5 erfc(z) = P(N(0, 1) > |x|) */
    return 0.5f + copysignf(0.5f - tail, x);
}

/* gelu(x) = x Phi(x) */
ROW_INLINE float gelu_value(float x)
{
    return x * gelu_cdf(x, exp_approx(-0.5f * (x * x)));
}

/* gelu'(x) = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi) */
ROW_INLINE float gelu_slope(float x)
{
    float ez = exp_approx(-0.5f * (x * x));
    return gelu_cdf(x, ez) + x * (ez * 0.39894228040143268f);
}

/* y (n) = gelu(x) */
ROW_INLINE void gelu_piece(float *y, const float *x, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] = gelu_value(x[i]);
}

KERN_CLONES static void gelu_forward_rows(const struct kern_gelu *op, void *y, const float *x,
                                          int64_t r0, int64_t r1)
{
    float piece[ROUND_PIECE];
    const int64_t end = r1 * op->cols;
    for (int64_t i = r0 * op->cols; i < end; i += ROUND_PIECE) {
        int64_t n = end - i < ROUND_PIECE ? end - i : ROUND_PIECE;
        if (!op->bf16_out) {
            gelu_piece((float *)y + i, x + i, n);
            continue;
        }
        gelu_piece(piece, x + i, n);
        round_row((kern_bf16 *)y + i, piece, n);
    }
}

/* d (n) = dy gelu'(x), added into sums when `sum` (inlined with a constant flag: one
 * branch-free loop each way). */
ROW_INLINE void gelu_grad_piece(float *d, float *sums, const float *dy, const float *x,
                                int64_t n, const bool sum)
{
#pragma omp simd
    for (int64_t j = 0; j < n; j++) {
        float g = dy[j] * gelu_slope(x[j]);
        if (sum)
            sums[j] += g;
        d[j] = g;
    }
}

/* Columns [j0, j1) of every row, in row order. */
KERN_CLONES static void gelu_backward_cols(const struct kern_gelu *op, void *dx, float *sums,
                                           const float *dy, const float *x, int64_t j0,
                                           int64_t j1)
{
    float piece[ROUND_PIECE];
    for (int64_t r = 0; r < op->rows; r++) {
        for (int64_t j = j0; j < j1; j += ROUND_PIECE) {
            int64_t n = j1 - j < ROUND_PIECE ? j1 - j : ROUND_PIECE, at = r * op->cols + j;
            float *d = op->bf16_out ? piece : (float *)dx + at;
            if (sums != NULL)
                gelu_grad_piece(d, sums + j, dy + at, x + at, n, true);
            else
                gelu_grad_piece(d, NULL, dy + at, x + at, n, false);
            if (op->bf16_out)
                round_row((kern_bf16 *)dx + at, piece, n);
        }
    }
}

void kern_simd_gelu_forward(struct kern_gelu *op, void *y, const float *x)
{
    FOR_ROW_CHUNKS(op->rows, gelu_forward_rows(op, y, x, r0, r1));
}

void kern_simd_gelu_backward(struct kern_gelu *op, void *dx, float *dbias, const float *dy,
                             const float *x)
{
    FOR_COL_BANDS(op->rows, op->cols, gelu_backward_cols(op, dx, dbias, dy, x, j0, j1));
}
