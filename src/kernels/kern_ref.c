/* kern_ref.c: the reference backend: plain C11 loops that are obviously correct, accumulate in
 * double, and call libm's exp/log/erf.  The tests use it as ground truth for the oneDNN backend.
 *
 * It deliberately does not try to be fast (no blocking, no threads, no hand vectorization) and
 * does no argument validation (kern_common.c does that at create time).  Its ops table,
 * kern_ref_ops, is at the end of the file; only the matmul and the attention plan anything
 * (buffers in double). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kern_impl.h"

/* ---- matmul -------------------------------------------------------------------------------- */

/* The plan of a matmul: one allocation, the widened op(B_b) (k, n) followed by one output row
 * accumulator (n), both in double. */
static enum rz_status matmul_init(struct kern_matmul *op, struct rz_err *err)
{
    const struct kern_matmul_desc *d = &op->desc;
    op->impl = malloc(((size_t)d->k + 1) * (size_t)d->n * sizeof(double));
    if (op->impl == NULL)
        return rz_fail(err, RZ_ENOMEM, "matmul (ref) m=%lld n=%lld k=%lld: out of memory",
                       (long long)d->m, (long long)d->n, (long long)d->k);
    return RZ_OK;
}

/* Element i of a matmul operand: a float, or a bf16 (exact in double: its bits are the upper
 * half of a float's). */
static double operand(const void *x, int64_t i, bool bf16)
{
    if (!bf16)
        return (double)((const float *)x)[i];
    uint32_t bits = (uint32_t)((const kern_bf16 *)x)[i] << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
}

/* ref_b (k, n) = op(B_b) in double, so the inner loop below is contiguous for both layouts. */
static void widen_b(double *ref_b, const void *b, const struct kern_matmul_desc *d)
{
    for (int64_t p = 0; p < d->k; p++) {
        for (int64_t j = 0; j < d->n; j++)
            ref_b[p * d->n + j] = operand(b, d->trans_b ? j * d->k + p : p * d->n + j, d->bf16);
    }
}

/* C_b (m, n) = alpha * op(A_b) (m, k) @ ref_b (k, n) [+ bias (n)] [+ C_b], row by row. */
static void matmul_one(struct kern_matmul *op, float *c, const void *a, const float *bias)
{
    const struct kern_matmul_desc *d = &op->desc;
    const double *ref_b = op->impl;
    double *acc = (double *)op->impl + d->k * d->n;
    for (int64_t i = 0; i < d->m; i++) {
        for (int64_t j = 0; j < d->n; j++)
            acc[j] = 0.0;
        for (int64_t p = 0; p < d->k; p++) {
            double aip = operand(a, d->trans_a ? p * d->m + i : i * d->k + p, d->bf16);
            const double *brow = ref_b + p * d->n;
            for (int64_t j = 0; j < d->n; j++)
                acc[j] += aip * brow[j];
        }
        for (int64_t j = 0; j < d->n; j++) {
            double v = (double)d->alpha * acc[j];
            if (d->bias)
                v += (double)bias[j];
            if (d->accumulate)
                v += (double)c[i * d->n + j];
            c[i * d->n + j] = (float)v;
        }
    }
}

static void matmul_run(struct kern_matmul *op, float *c, const void *a, const void *b,
                       const float *bias)
{
    const struct kern_matmul_desc *d = &op->desc;
    const size_t size = d->bf16 ? sizeof(kern_bf16) : sizeof(float);
    for (int64_t bi = 0; bi < d->batch; bi++) {
        widen_b(op->impl, (const char *)b + (size_t)(bi * d->k * d->n) * size, d);
        matmul_one(op, c + bi * d->m * d->n, (const char *)a + (size_t)(bi * d->m * d->k) * size,
                   bias);
    }
}

/* ---- layer normalization ------------------------------------------------------------------- */

/* y[i] = v, as a float or rounded to bf16. */
static void store(void *y, int64_t i, float v, bool bf16)
{
    if (bf16)
        ((kern_bf16 *)y)[i] = kern_simd_bf16(v);
    else
        ((float *)y)[i] = v;
}

static void layernorm_forward(struct kern_layernorm *op, void *y, float *mean, float *var,
                              const float *x, const float *gamma, const float *beta)
{
    const int64_t cols = op->cols;
    for (int64_t r = 0; r < op->rows; r++) {
        const float *xr = x + r * cols;
        double mu = 0.0, v = 0.0;
        for (int64_t j = 0; j < cols; j++)
            mu += (double)xr[j];
        mu /= (double)cols;
        for (int64_t j = 0; j < cols; j++)
            v += ((double)xr[j] - mu) * ((double)xr[j] - mu);
        v /= (double)cols; /* biased variance, as PyTorch */
        double rstd = 1.0 / sqrt(v + (double)op->eps);
        for (int64_t j = 0; j < cols; j++) {
            double xhat = ((double)xr[j] - mu) * rstd;
            store(y, r * cols + j, (float)(xhat * (double)gamma[j] + (double)beta[j]),
                  op->bf16_out);
        }
        mean[r] = (float)mu;
        var[r] = (float)v;
    }
}

/* dx (+)= rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma,
 * xhat = (x - mean) rstd. */
static void layernorm_dx_row(float *dx, const float *dy, const float *x, double mu, double rstd,
                             const float *gamma, int64_t cols, bool accumulate)
{
    double mg = 0.0, mgx = 0.0;
    for (int64_t j = 0; j < cols; j++) {
        double g = (double)dy[j] * (double)gamma[j];
        mg += g;
        mgx += g * ((double)x[j] - mu) * rstd;
    }
    mg /= (double)cols;
    mgx /= (double)cols;
    for (int64_t j = 0; j < cols; j++) {
        double g = (double)dy[j] * (double)gamma[j];
        double d = rstd * (g - mg - ((double)x[j] - mu) * rstd * mgx);
        dx[j] = (float)(accumulate ? (double)dx[j] + d : d);
    }
}

static void layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma,
                               float *dbeta, const float *dy, const float *x,
                               const float *mean, const float *var, const float *gamma,
                               bool accumulate_dx)
{
    const int64_t rows = op->rows, cols = op->cols;
    for (int64_t r = 0; r < rows; r++) {
        double rstd = 1.0 / sqrt((double)var[r] + (double)op->eps);
        layernorm_dx_row(dx + r * cols, dy + r * cols, x + r * cols, (double)mean[r], rstd, gamma,
                         cols, accumulate_dx);
    }
    for (int64_t j = 0; j < cols; j++) {
        double dg = 0.0, db = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            double rstd = 1.0 / sqrt((double)var[r] + (double)op->eps);
            double xhat = ((double)x[r * cols + j] - (double)mean[r]) * rstd;
            dg += (double)dy[r * cols + j] * xhat;
            db += (double)dy[r * cols + j];
        }
        dgamma[j] = (float)((double)dgamma[j] + dg);
        dbeta[j] = (float)((double)dbeta[j] + db);
    }
}

/* ---- GELU ---------------------------------------------------------------------------------- */

static void gelu_forward(struct kern_gelu *op, void *y, const float *x)
{
    for (int64_t i = 0; i < op->rows * op->cols; i++) {
        double v = (double)x[i];
        store(y, i, (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0)))), op->bf16_out);
    }
}

/* dy gelu'(x), with gelu'(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi) */
static float gelu_grad(const float *dy, const float *x, int64_t i)
{
    const double inv_sqrt_2pi = 0.39894228040143267794;
    double v = (double)x[i];
    double d = 0.5 * (1.0 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) * inv_sqrt_2pi;
    return (float)((double)dy[i] * d);
}

static void gelu_backward(struct kern_gelu *op, void *dx, float *dbias, const float *dy,
                          const float *x)
{
    const int64_t cols = op->cols;
    for (int64_t j = 0; dbias != NULL && j < cols; j++) { /* first: dx may alias dy */
        double s = 0.0;
        for (int64_t r = 0; r < op->rows; r++)
            s += (double)gelu_grad(dy, x, r * cols + j);
        dbias[j] = (float)((double)dbias[j] + s);
    }
    for (int64_t i = 0; i < op->rows * cols; i++)
        store(dx, i, gelu_grad(dy, x, i), op->bf16_out);
}

/* ---- attention ----------------------------------------------------------------------------- */

/* Scratch of the reference attention, in double: one row of probabilities (T), one row of their
 * gradients (T), and one head's key and value gradients (T, D) each. */
static enum rz_status attention_init(struct kern_attention *op, struct rz_err *err)
{
    op->impl = malloc(2 * (size_t)op->T * ((size_t)op->D + 1) * sizeof(double));
    if (op->impl == NULL)
        return rz_fail(err, RZ_ENOMEM, "attention (ref) T=%lld D=%lld: out of memory",
                       (long long)op->T, (long long)op->D);
    return RZ_OK;
}

/* Row t of q (part 0), k (1) or v (2) of head h of sequence b, in qkv (B, T, 3C). */
static const float *qkv_row(const struct kern_attention *op, const float *qkv, int part,
                            int64_t b, int64_t t, int64_t h)
{
    int64_t C = op->H * op->D;
    return qkv + (b * op->T + t) * 3 * C + part * C + h * op->D;
}

static double dot_fd(const float *x, const float *y, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)x[i] * (double)y[i];
    return s;
}

/* p (t + 1) = softmax over keys 0..t of query t's scores q_t k_u / sqrt(D) (Vaswani et al. 2017,
 * eq. 1); returns their log-sum-exp. */
static double attention_row(const struct kern_attention *op, double *p, const float *qkv,
                            int64_t b, int64_t h, int64_t t)
{
    const double scale = 1.0 / sqrt((double)op->D);
    const float *q = qkv_row(op, qkv, 0, b, t, h);
    double mx = -INFINITY, sum = 0.0;
    for (int64_t u = 0; u <= t; u++) {
        p[u] = scale * dot_fd(q, qkv_row(op, qkv, 1, b, u, h), op->D);
        mx = fmax(mx, p[u]);
    }
    for (int64_t u = 0; u <= t; u++) {
        p[u] = exp(p[u] - mx);
        sum += p[u];
    }
    for (int64_t u = 0; u <= t; u++)
        p[u] /= sum;
    return mx + log(sum);
}

static void attention_forward(struct kern_attention *op, float *y, float *lse, const float *qkv)
{
    const int64_t T = op->T, H = op->H, D = op->D;
    double *p = op->impl;
    for (int64_t b = 0; b < op->B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                lse[(b * H + h) * T + t] = (float)attention_row(op, p, qkv, b, h, t);
                float *yt = y + (b * T + t) * H * D + h * D;
                for (int64_t d = 0; d < D; d++) {
                    double acc = 0.0;
                    for (int64_t u = 0; u <= t; u++)
                        acc += p[u] * (double)qkv_row(op, qkv, 2, b, u, h)[d];
                    yt[d] = (float)acc;
                }
            }
}

/* One query row's share of the backward, with the probabilities p and dp = dO v^T recomputed:
 * ds = p (dp - sum p dp), dq = scale ds k, dk += scale ds^T q, dv += p^T dO. */
static void attention_backward_row(const struct kern_attention *op, float *dqkv, double *dk,
                                   double *dv, const float *dy, const float *qkv, int64_t b,
                                   int64_t h, int64_t t)
{
    const int64_t T = op->T, D = op->D, C = op->H * D;
    const double scale = 1.0 / sqrt((double)D);
    double *p = op->impl, *dp = p + T;
    const float *q = qkv_row(op, qkv, 0, b, t, h), *dyt = dy + (b * T + t) * C + h * D;
    attention_row(op, p, qkv, b, h, t);
    double delta = 0.0;
    for (int64_t u = 0; u <= t; u++) {
        dp[u] = dot_fd(dyt, qkv_row(op, qkv, 2, b, u, h), D);
        delta += p[u] * dp[u];
    }
    float *dq = dqkv + (b * T + t) * 3 * C + h * D;
    for (int64_t d = 0; d < D; d++) {
        double acc = 0.0;
        for (int64_t u = 0; u <= t; u++)
            acc += p[u] * (dp[u] - delta) * (double)qkv_row(op, qkv, 1, b, u, h)[d];
        dq[d] = (float)(scale * acc);
    }
    for (int64_t u = 0; u <= t; u++)
        for (int64_t d = 0; d < D; d++) {
            dk[u * D + d] += scale * p[u] * (dp[u] - delta) * (double)q[d];
            dv[u * D + d] += p[u] * (double)dyt[d];
        }
}

static void attention_backward(struct kern_attention *op, float *dqkv, const float *dy,
                               const float *qkv, const float *y, const float *lse)
{
    (void)y, (void)lse; /* recomputed here, the obvious way */
    const int64_t T = op->T, H = op->H, D = op->D, C = H * D;
    double *dk = (double *)op->impl + 2 * T, *dv = dk + T * D;
    for (int64_t b = 0; b < op->B; b++)
        for (int64_t h = 0; h < H; h++) {
            memset(dk, 0, 2 * (size_t)(T * D) * sizeof *dk);
            for (int64_t t = 0; t < T; t++)
                attention_backward_row(op, dqkv, dk, dv, dy, qkv, b, h, t);
            for (int64_t u = 0; u < T; u++)
                for (int64_t d = 0; d < D; d++) {
                    float *row = dqkv + (b * T + u) * 3 * C + h * D;
                    row[C + d] = (float)dk[u * D + d];
                    row[2 * C + d] = (float)dv[u * D + d];
                }
        }
}

/* ---- cross-entropy ------------------------------------------------------------------------- */

/* loss = logsumexp(z) - z[t], computed as log(sum exp(z - max)) + max - z[t]. probs may alias
 * logits: each element is read before it is written. */
static void xent_forward(struct kern_xent *op, float *losses, float *probs,
                         const float *logits, const int32_t *targets)
{
    const int64_t v = op->vocab;
    for (int64_t r = 0; r < op->rows; r++) {
        const float *zr = logits + r * v;
        double mx = (double)zr[0], sum = 0.0;
        for (int64_t j = 1; j < v; j++)
            mx = fmax(mx, (double)zr[j]);
        for (int64_t j = 0; j < v; j++)
            sum += exp((double)zr[j] - mx);
        losses[r] = (float)(log(sum) + mx - (double)zr[targets[r]]);
        for (int64_t j = 0; j < v; j++)
            probs[r * v + j] = (float)(exp((double)zr[j] - mx) / sum);
    }
}

/* d loss / d logit (r, j), before any rounding. */
static float xent_grad(const struct kern_xent *op, const float *probs, const int32_t *targets,
                       float scale, int64_t r, int64_t j)
{
    double onehot = j == targets[r] ? 1.0 : 0.0;
    return (float)((double)scale * ((double)probs[r * op->vocab + j] - onehot));
}

static void xent_backward(struct kern_xent *op, void *dlogits, float *dbias, const float *probs,
                          const int32_t *targets, float scale)
{
    const int64_t v = op->vocab;
    for (int64_t j = 0; dbias != NULL && j < v; j++) { /* first: dlogits may alias probs */
        double s = 0.0;
        for (int64_t r = 0; r < op->rows; r++)
            s += (double)xent_grad(op, probs, targets, scale, r, j);
        dbias[j] = (float)((double)dbias[j] + s);
    }
    for (int64_t r = 0; r < op->rows; r++) {
        for (int64_t j = 0; j < v; j++)
            store(dlogits, r * v + j, xent_grad(op, probs, targets, scale, r, j), op->bf16_out);
    }
}

/* ---- the ops table ------------------------------------------------------------------------- */

static const char *isa(const struct kern_ctx *ctx)
{
    (void)ctx;
    return "reference C";
}

/* bf16 is emulated: operands are rounded by the caller and multiplied exactly in double. */
static enum rz_status check_bf16(const struct kern_ctx *ctx, struct rz_err *err)
{
    (void)ctx, (void)err;
    return RZ_OK;
}

const struct kern_ops kern_ref_ops = {
    .name = "ref",
    .isa = isa,
    .check_bf16 = check_bf16,
    .matmul_init = matmul_init,
    .matmul_run = matmul_run,
    .layernorm_forward = layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .gelu_forward = gelu_forward,
    .gelu_backward = gelu_backward,
    .attention_init = attention_init,
    .attention_forward = attention_forward,
    .attention_backward = attention_backward,
    .xent_forward = xent_forward,
    .xent_backward = xent_backward,
};
