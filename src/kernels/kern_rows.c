/* kern_rows.c: our row kernels (kern_rows.h), written on sixteen-lane vectors (core/v16.h) and
 * compiled once per vector level: RZ_ROWS_LEVEL (0 baseline, 1 AVX2, 2 AVX-512, as enum rz_isa)
 * and the -march that goes with it come from Makefile.am, and the build defines that level's
 * table, kern_rows_<name>.
 *
 * What they are: the softmax cross-entropy, the row steps of the blocked causal attention
 * (online softmax, normalization, recomputed probabilities, score gradients) that kern_xsmm.c
 * runs between its tile matmuls, layer normalization, GELU, the bf16 rounding, column sums and
 * the residual adds, and the matrix-vector product of a linear layer on one row (decoding's
 * matmuls).  The cross-entropy computes the loss as logsumexp - z[t] (-log p is inf once p
 * underflows).  Masked attention scores come out as exact zeros.
 *
 * Every elementwise step is the same arithmetic in every lane, and row sums and maxima run in
 * sixteen logical lanes folded by one fixed tree (core/v16.h), so all levels give the same bits, and a
 * run's bits do not depend on the thread count either (rows are independent; column sums run in
 * row order).  A causal row of visible length len is read through a window padded to whole
 * vectors, with the lanes past len masked; anything else ends in one shorter piece
 * (V16_PIECES). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/v16.h"
#include "kernels/kern_rows.h"

#if RZ_ROWS_LEVEL == 2
#ifndef __AVX512F__
#error "the AVX-512 build of kern_rows.c needs -march=x86-64-v4"
#endif
#define ROWS_TABLE kern_rows_avx512
#elif RZ_ROWS_LEVEL == 1
#if !defined(__AVX2__) || defined(__AVX512F__)
#error "the AVX2 build of kern_rows.c needs -march=x86-64-v3"
#endif
#define ROWS_TABLE kern_rows_avx2
#elif RZ_ROWS_LEVEL == 0
#ifdef __AVX__
#error "the baseline build of kern_rows.c must not use AVX"
#endif
#define ROWS_TABLE kern_rows_baseline
#else
#error "RZ_ROWS_LEVEL must be 0, 1 or 2 (Makefile.am)"
#endif

#define ROW_INLINE V16_INLINE
#define ROW_PAD V16

/* ---- exp and bf16, lane by lane ------------------------------------------------------------ */

/* exp(x) for x <= 88 (larger x is clamped): Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2,
 * and the Cephes expf polynomial (~1 ulp); 2^n is built in the exponent bits.  Results below
 * FLT_MIN (x < -87.33654) are flushed to exactly 0, so exp(-inf) = 0; NaN propagates.  The
 * clamps come first so the float-to-int conversion is always defined. */
ROW_INLINE vf vf_exp(vf x)
{
    const vf lo = vf_splat(-87.33654f), hi = vf_splat(88.0f);
    vf xc = vf_select(x > lo, x, lo); /* NaN -> lo */
    xc = vf_select(xc < hi, xc, hi);
    vf n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    vf r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
    vf p = vf_splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    vi bits = (__builtin_convertvector(n, vi) + 127) * (1 << 23);
    vf e = p * (vf)bits;
    return vf_select(x < lo, (vf){0}, vf_select(x == x, e, x));
}

/* exp of one value, by the same lanes: the same bits as the rows get */
ROW_INLINE float exp1(float x)
{
    return vf_exp(vf_splat(x))[0];
}

/* Round to nearest, ties to even, on the bits: add 0x7fff plus the lowest kept bit and cut.  A
 * NaN keeps its sign and upper payload and is made quiet (the cut could leave an infinity).
 * Stores k of them. */
ROW_INLINE void bf16_storen(kern_bf16 *p, vf f, int64_t k)
{
    vu u = (vu)f;
    vu r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    vu nan = (vu)((vi)(u & 0x7fffffffu) > 0x7f800000);
    vu_store16(p, (((u >> 16) | 0x40u) & nan) | (r & ~nan), k);
}

/* A piece out: float, or rounded to bf16. */
ROW_INLINE void store_out(void *dst, bool bf16, int64_t at, vf v, int64_t k)
{
    if (bf16)
        bf16_storen((kern_bf16 *)dst + at, v, k);
    else
        vf_storen((float *)dst + at, v, k);
}

static void exp_rows(float *y, const float *x, int64_t n)
{
    V16_PIECES(n, vf_storen(y + j, vf_exp(vf_loadn(x + j, k)), k));
}

static void round_bf16(kern_bf16 *dst, const float *src, int64_t n)
{
    V16_PIECES(n, bf16_storen(dst + j, vf_loadn(src + j, k), k));
}

static void vec_add(float *y, const float *a, const float *b, int64_t n)
{
    V16_PIECES(n, vf_storen(y + j, vf_loadn(a + j, k) + vf_loadn(b + j, k), k));
}

static void vec_acc(float *y, const float *x, int64_t n)
{
    V16_PIECES(n, vf_storen(y + j, vf_loadn(y + j, k) + vf_loadn(x + j, k), k));
}

static void sum_partials(float *acc, const float *parts, int64_t count, int64_t n)
{
    for (int64_t c = 0; c < count; c++) {
        const float *part = parts + c * n;
        V16_PIECES(n, vf_storen(acc + j, vf_loadn(acc + j, k) + vf_loadn(part + j, k), k));
    }
}

static void colsum(float *sums, kern_bf16 *dst, const float *src, int64_t rows, int64_t cols,
                   int64_t j0, int64_t j1)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *row = src + r * cols + j0;
        float *s = sums + j0;
        kern_bf16 *out = dst != NULL ? dst + r * cols + j0 : NULL;
        V16_PIECES(j1 - j0, {
            vf x = vf_loadn(row + j, k);
            vf_storen(s + j, vf_loadn(s + j, k) + x, k);
            if (out != NULL)
                bf16_storen(out + j, x, k);
        });
    }
}

/* ---- row reductions, in sixteen logical lanes ------------------------------------------------ */

/* sum of x[0, n) */
ROW_INLINE float sum_row(const float *x, int64_t n)
{
    vf acc[NP] = {{0}};
    V16_PIECES(n, acc[q] += vf_loadn(x + j, k));
    return v16_fold_sum(acc);
}

/* max of x[0, len), reading the window x[0, n), n >= len (lanes past len count as -inf) */
ROW_INLINE float row_max(const float *x, int64_t len, int64_t n)
{
    const vf ninf = vf_splat(-INFINITY);
    vf acc[NP];
    for (int q = 0; q < NP; q++)
        acc[q] = ninf;
    V16_PIECES(n, acc[q] = vf_max(acc[q], vf_select(vf_below(j, len), vf_loadn(x + j, k), ninf)));
    return v16_fold_max(acc);
}

/* y = exp(a x - shift) on [0, len) and 0 on [len, n); returns sum(y).  y may alias x. */
ROW_INLINE float exp_shift_sum(float *y, const float *x, int64_t len, int64_t n, float a,
                               float shift)
{
    const vf ninf = vf_splat(-INFINITY);
    vf acc[NP] = {{0}};
    V16_PIECES(n, {
        vf e = vf_exp(vf_select(vf_below(j, len), a * vf_loadn(x + j, k), ninf) - shift);
        vf_storen(y + j, e, k);
        acc[q] += e; /* lanes past n are past len too: 0 */
    });
    return v16_fold_sum(acc);
}

ROW_INLINE void scale_row(float *y, const float *x, int64_t n, float a)
{
    V16_PIECES(n, vf_storen(y + j, a * vf_loadn(x + j, k), k));
}

/* sum of x * y over [0, n) */
ROW_INLINE float dot_row(const float *x, const float *y, int64_t n)
{
    vf acc[NP] = {{0}};
    V16_PIECES(n, acc[q] += vf_loadn(x + j, k) * vf_loadn(y + j, k));
    return v16_fold_sum(acc);
}

/* The padded window of a causal row of visible length len. */
ROW_INLINE int64_t window(int64_t len, int64_t cols)
{
    int64_t n = (len + ROW_PAD - 1) / ROW_PAD * ROW_PAD;
    return n < cols ? n : cols;
}

/* ---- softmax cross-entropy ----------------------------------------------------------------- */

/* Rows [r0, r1): losses[r] = logsumexp(z_r) - z_r[t]; probs_r = softmax(z_r), probs may alias
 * logits (the target logit is read first). */
static void xent_forward_rows(float *losses, float *probs, const float *logits,
                              const int32_t *targets, int64_t r0, int64_t r1, int64_t v)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *z = logits + r * v;
        float *p = probs + r * v;
        float zt = z[targets[r]], m = row_max(z, v, v);
        float s = exp_shift_sum(p, z, v, v, 1.0f, m);
        losses[r] = (float)(log((double)s) + (double)m - (double)zt);
        scale_row(p, p, v, 1.0f / s);
    }
}

/* dlogits = scale (p - onehot(t)) per row, float or bf16; psum, if not NULL, gets the rows'
 * sum (the bias gradient's partial). */
static void xent_backward_rows(void *dlogits, bool bf16, float *psum, const float *probs,
                               const int32_t *targets, float scale, int64_t r0, int64_t r1,
                               int64_t v)
{
    if (psum != NULL)
        memset(psum, 0, (size_t)v * sizeof *psum);
    for (int64_t r = r0; r < r1; r++) {
        const float *p = probs + r * v;
        const int64_t t = targets[r];
        V16_PIECES(v, {
            /* p - 0 is p: exact; the target's lane gets p - 1 */
            vf one = vf_select(vf_below(j, t + 1) & ~vf_below(j, t), vf_splat(1.0f), (vf){0});
            vf g = scale * (vf_loadn(p + j, k) - one);
            if (psum != NULL)
                vf_storen(psum + j, vf_loadn(psum + j, k) + g, k);
            store_out(dlogits, bf16, r * v + j, g, k);
        });
    }
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
    float sum = exp_shift_sum(s, s, len, n, scale, shift);
    memset(s + n, 0, (size_t)(bk - n) * sizeof *s);
    return sum;
}

static void attn_online(const struct kern_attn_tile *t, float scale, float *m, float *l,
                        float *y, int64_t ldy, int64_t D)
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
        float alpha = exp1(m[r] - m_new);
        l[r] = l[r] * alpha + tile_exp(sr, len, t->bk, scale, m_new);
        m[r] = m_new;
        scale_row(yr, yr, D, alpha);
    }
}

static void attn_finish(float *y, int64_t ldy, int64_t D, float *lse, const float *m,
                        const float *l, int64_t q0, int64_t bq)
{
    for (int64_t r = 0; r < bq; r++) {
        float *yr = y + (q0 + r) * ldy;
        scale_row(yr, yr, D, 1.0f / l[r]);
        lse[q0 + r] = (float)((double)m[r] + log((double)l[r]));
    }
}

static void attn_delta(float *delta, const float *dy, const float *y, int64_t ld, int64_t D,
                       int64_t T)
{
    for (int64_t t = 0; t < T; t++)
        delta[t] = dot_row(dy + t * ld, y + t * ld, D);
}

static void attn_probs(const struct kern_attn_tile *t, float scale, const float *lse)
{
    for (int64_t r = 0; r < t->bq; r++)
        tile_exp(t->s + r * t->ld, tile_len(t, r), t->bk, scale, lse[t->q0 + r]);
}

static void attn_dscores(const struct kern_attn_tile *t, const float *p, const float *delta,
                         float scale)
{
    for (int64_t r = 0; r < t->bq; r++) {
        float *ds = t->s + r * t->ld;
        const float *pr = p + r * t->ld;
        const float d = delta[t->q0 + r];
        /* 0 where masked: p is exactly 0 there */
        V16_PIECES(t->bk, vf_storen(ds + j,
                                    scale * (vf_loadn(pr + j, k) * (vf_loadn(ds + j, k) - d)),
                                    k));
    }
}

/* ---- layer normalization: one pass per row each way ------------------------------------------
 * Forward: mean and biased variance (two passes over the row while it is in L1), then
 * y = (x - mean) rstd gamma + beta.  Backward (with g = dy gamma, xhat = (x - mean) rstd):
 * dx (+)= rstd (g - mean(g) - xhat mean(g xhat)); the column sums dgamma = sum dy xhat and
 * dbeta = sum dy go into one partial row pair per chunk of rows (kern_simd.c adds them up in
 * chunk order: deterministic and independent of the thread count). */

/* sum of (x - mu)^2 over [0, n) (the last piece's padding lanes are masked) */
ROW_INLINE float sq_dev_row(const float *x, int64_t n, float mu)
{
    vf acc[NP] = {{0}};
    V16_PIECES(n, {
        vf d = vf_select(vf_below(j, n), vf_loadn(x + j, k) - mu, (vf){0});
        acc[q] += d * d;
    });
    return v16_fold_sum(acc);
}

/* With g = dy gamma and xhat = (x - mu) rstd: *mg = sum g, *mgx = sum g xhat over [0, n). */
ROW_INLINE void ln_grad_sums(float *mg, float *mgx, const float *dy, const float *x,
                             const float *gamma, float mu, float rstd, int64_t n)
{
    vf a[NP] = {{0}}, b[NP] = {{0}};
    V16_PIECES(n, {
        vf g = vf_loadn(dy + j, k) * vf_loadn(gamma + j, k); /* 0 in the padding */
        a[q] += g;
        b[q] += g * ((vf_loadn(x + j, k) - mu) * rstd);
    });
    *mg = v16_fold_sum(a);
    *mgx = v16_fold_sum(b);
}

static void ln_forward_rows(const struct kern_layernorm *op, void *y, float *mean, float *var,
                            const float *x, const float *gamma, const float *beta, int64_t r0,
                            int64_t r1)
{
    const int64_t n = op->cols;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * n;
        float mu = sum_row(xr, n) / (float)n;
        float v = sq_dev_row(xr, n, mu) / (float)n;
        float rstd = 1.0f / sqrtf(v + op->eps);
        V16_PIECES(n, store_out(y, op->bf16_out, r * n + j,
                                (vf_loadn(xr + j, k) - mu) * rstd * vf_loadn(gamma + j, k) +
                                    vf_loadn(beta + j, k),
                                k));
        mean[r] = mu;
        var[r] = v;
    }
}

static void ln_backward_rows(const struct kern_layernorm *op, float *dx, float *pgamma,
                             float *pbeta, const float *dy, const float *x, const float *mean,
                             const float *var, const float *gamma, bool accumulate_dx,
                             int64_t r0, int64_t r1)
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
        V16_PIECES(n, {
            vf dyv = vf_loadn(dyr + j, k);
            vf xhat = (vf_loadn(xr + j, k) - mu) * rstd;
            vf d = rstd * (dyv * vf_loadn(gamma + j, k) - mg - xhat * mgx);
            vf_storen(dxr + j, accumulate_dx ? vf_loadn(dxr + j, k) + d : d, k);
            vf_storen(pgamma + j, vf_loadn(pgamma + j, k) + dyv * xhat, k);
            vf_storen(pbeta + j, vf_loadn(pbeta + j, k) + dyv, k);
        });
    }
}

/* ---- GELU ------------------------------------------------------------------------------------
 * Phi(x) = 0.5 (1 + erf(x / sqrt 2)) through erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5))))
 * exp(-z^2), t = 1 / (1 + p z), z = |x| / sqrt 2: Abramowitz & Stegun 7.1.26, absolute error
 * <= 1.5e-7 (the form oneDNN's gelu_erf uses too).  exp(-z^2) = exp(-x^2 / 2) is also the
 * normal density that gelu'(x) = Phi(x) + x phi(x) needs: one exp per element, either way.
 * Forward: rows in fixed chunks.  Backward: column bands through all rows, so the bias gradient
 * is each column's sum in row order (as kern_colsum_round's). */

/* Phi(x), given ez = exp(-x^2 / 2): 0.5 + sign(x) (0.5 - 0.5 erfc(|x| / sqrt 2)). */
ROW_INLINE vf gelu_cdf(vf x, vf ez)
{
    vf z = vf_abs(x) * 0.70710678118654752f;
    vf t = 1.0f / (1.0f + 0.3275911f * z);
    vf poly = vf_splat(1.061405429f);
    poly = poly * t - 1.453152027f;
    poly = poly * t + 1.421413741f;
    poly = poly * t - 0.284496736f;
    poly = poly * t + 0.254829592f;
    vf tail = 0.5f * (poly * t) * ez; /* 0.5 erfc(z) = P(N(0, 1) > |x|) */
    return 0.5f + vf_copysign(0.5f - tail, x);
}

/* gelu(x) = x Phi(x) */
ROW_INLINE vf gelu_value(vf x)
{
    return x * gelu_cdf(x, vf_exp(-0.5f * (x * x)));
}

/* gelu'(x) = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi) */
ROW_INLINE vf gelu_slope(vf x)
{
    vf ez = vf_exp(-0.5f * (x * x));
    return gelu_cdf(x, ez) + x * (ez * 0.39894228040143268f);
}

static void gelu_forward_rows(const struct kern_gelu *op, void *y, const float *x, int64_t r0,
                              int64_t r1)
{
    const int64_t at = r0 * op->cols;
    const float *xs = x + at;
    V16_PIECES((r1 - r0) * op->cols,
               store_out(y, op->bf16_out, at + j, gelu_value(vf_loadn(xs + j, k)), k));
}

static void gelu_backward_cols(const struct kern_gelu *op, void *dx, float *sums,
                               const float *dy, const float *x, int64_t j0, int64_t j1)
{
    for (int64_t r = 0; r < op->rows; r++) {
        const int64_t at = r * op->cols + j0;
        const float *dyr = dy + at, *xr = x + at;
        float *s = sums != NULL ? sums + j0 : NULL;
        V16_PIECES(j1 - j0, {
            vf g = vf_loadn(dyr + j, k) * gelu_slope(vf_loadn(xr + j, k));
            if (s != NULL)
                vf_storen(s + j, vf_loadn(s + j, k) + g, k);
            store_out(dx, op->bf16_out, at + j, g, k);
        });
    }
}

/* ---- matrix-vector product: a linear layer on one row (decoding) ---------------------------- */

/* y (rows) = w (rows, n) x (n) [+ b (rows)] for `rows` consecutive rows (a constant 1 or
 * GEMV_ROWS once inlined): each piece of x is loaded once for all of them, and each dot product
 * runs in the sixteen logical lanes, folded by the fixed tree, then the bias is added.  Eight
 * rows keep eight independent sums in flight in as many zmm registers (measured faster than four
 * on the gpt2 shape's decoding); four where a row's sum takes two or four registers. */
enum { GEMV_ROWS = VW == 16 ? 8 : 4 };
ROW_INLINE void gemv_block(float *y, const float *w, const float *x, const float *b, int64_t n,
                           int rows)
{
    vf acc[GEMV_ROWS][NP];
    memset(acc, 0, sizeof acc);
    V16_PIECES(n, {
        vf xv = vf_loadn(x + j, k);
        _Pragma("GCC unroll 8")
        for (int i = 0; i < rows; i++)
            acc[i][q] = acc[i][q] + vf_loadn(w + i * n + j, k) * xv;
    });
    for (int i = 0; i < rows; i++)
        y[i] = b != NULL ? v16_fold_sum(acc[i]) + b[i] : v16_fold_sum(acc[i]);
}

/* Rows [r0, r1) of y = w x [+ b]: the matrix is streamed once, row after row (memory bound). */
static void gemv_rows(float *y, const float *w, const float *x, const float *b, int64_t n,
                      int64_t r0, int64_t r1)
{
    int64_t r = r0;
    for (; r + GEMV_ROWS <= r1; r += GEMV_ROWS)
        gemv_block(y + r, w + r * n, x, b != NULL ? b + r : NULL, n, GEMV_ROWS);
    for (; r < r1; r++)
        gemv_block(y + r, w + r * n, x, b != NULL ? b + r : NULL, n, 1);
}

/* ---- the table ------------------------------------------------------------------------------ */

const struct kern_rows ROWS_TABLE = {
    .isa = (enum rz_isa)RZ_ROWS_LEVEL,
    .exp = exp_rows,
    .round_bf16 = round_bf16,
    .colsum = colsum,
    .sum_partials = sum_partials,
    .add = vec_add,
    .acc = vec_acc,
    .xent_forward = xent_forward_rows,
    .xent_backward = xent_backward_rows,
    .ln_forward = ln_forward_rows,
    .ln_backward = ln_backward_rows,
    .gelu_forward = gelu_forward_rows,
    .gelu_backward = gelu_backward_cols,
    .attn_online = attn_online,
    .attn_finish = attn_finish,
    .attn_delta = attn_delta,
    .attn_probs = attn_probs,
    .attn_dscores = attn_dscores,
    .gemv = gemv_rows,
};
