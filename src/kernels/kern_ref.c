/* kern_ref.c: the reference backend: plain C11 loops that are obviously correct, accumulate in
 * double, and call libm's exp/log/erf.  The tests use it as ground truth for the oneDNN backend.
 *
 * It deliberately does not try to be fast (no blocking, no threads, no hand vectorization) and
 * does no argument validation (kern_common.c does that at create time).  Its ops table,
 * kern_ref_ops, is at the end of the file; only the matmul plans anything (a double buffer). */
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

/* ref_b (k, n) = op(B_b) in double, so the inner loop below is contiguous for both layouts. */
static void widen_b(double *ref_b, const float *b, const struct kern_matmul_desc *d)
{
    for (int64_t p = 0; p < d->k; p++) {
        for (int64_t j = 0; j < d->n; j++)
            ref_b[p * d->n + j] = d->trans_b ? b[j * d->k + p] : b[p * d->n + j];
    }
}

/* C_b (m, n) = alpha * op(A_b) (m, k) @ ref_b (k, n) [+ bias (n)] [+ C_b], row by row. */
static void matmul_one(struct kern_matmul *op, float *c, const float *a, const float *bias)
{
    const struct kern_matmul_desc *d = &op->desc;
    const double *ref_b = op->impl;
    double *acc = (double *)op->impl + d->k * d->n;
    for (int64_t i = 0; i < d->m; i++) {
        for (int64_t j = 0; j < d->n; j++)
            acc[j] = 0.0;
        for (int64_t p = 0; p < d->k; p++) {
            double aip = d->trans_a ? (double)a[p * d->m + i] : (double)a[i * d->k + p];
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

static void matmul_run(struct kern_matmul *op, float *c, const float *a, const float *b,
                       const float *bias)
{
    const struct kern_matmul_desc *d = &op->desc;
    for (int64_t bi = 0; bi < d->batch; bi++) {
        widen_b(op->impl, b + bi * d->k * d->n, d);
        matmul_one(op, c + bi * d->m * d->n, a + bi * d->m * d->k, bias);
    }
}

/* ---- layer normalization ------------------------------------------------------------------- */

static void layernorm_forward(struct kern_layernorm *op, float *y, float *mean, float *var,
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
            y[r * cols + j] = (float)(xhat * (double)gamma[j] + (double)beta[j]);
        }
        mean[r] = (float)mu;
        var[r] = (float)v;
    }
}

/* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, xhat = (x - mean) rstd. */
static void layernorm_dx_row(float *dx, const float *dy, const float *x, double mu, double rstd,
                             const float *gamma, int64_t cols)
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
        dx[j] = (float)(rstd * (g - mg - ((double)x[j] - mu) * rstd * mgx));
    }
}

static void layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma,
                               float *dbeta, const float *dy, const float *x,
                               const float *mean, const float *var, const float *gamma)
{
    const int64_t rows = op->rows, cols = op->cols;
    for (int64_t r = 0; r < rows; r++) {
        double rstd = 1.0 / sqrt((double)var[r] + (double)op->eps);
        layernorm_dx_row(dx + r * cols, dy + r * cols, x + r * cols, (double)mean[r], rstd, gamma,
                         cols);
    }
    for (int64_t j = 0; j < cols; j++) {
        double dg = 0.0, db = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            double rstd = 1.0 / sqrt((double)var[r] + (double)op->eps);
            double xhat = ((double)x[r * cols + j] - (double)mean[r]) * rstd;
            dg += (double)dy[r * cols + j] * xhat;
            db += (double)dy[r * cols + j];
        }
        dgamma[j] = (float)dg;
        dbeta[j] = (float)db;
    }
}

/* ---- GELU ---------------------------------------------------------------------------------- */

static void gelu_forward(struct kern_gelu *op, float *y, const float *x)
{
    for (int64_t i = 0; i < op->n; i++) {
        double v = (double)x[i];
        y[i] = (float)(0.5 * v * (1.0 + erf(v / sqrt(2.0))));
    }
}

/* gelu'(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi) */
static void gelu_backward(struct kern_gelu *op, float *dx, const float *dy, const float *x)
{
    const double inv_sqrt_2pi = 0.39894228040143267794;
    for (int64_t i = 0; i < op->n; i++) {
        double v = (double)x[i];
        double d = 0.5 * (1.0 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) * inv_sqrt_2pi;
        dx[i] = (float)((double)dy[i] * d);
    }
}

/* ---- softmax ------------------------------------------------------------------------------- */

/* Number of visible columns of row r: all, or the causal prefix c <= r % cols. */
static int64_t visible(const struct kern_softmax *op, int64_t r)
{
    return op->causal ? r % op->cols + 1 : op->cols;
}

static void softmax_forward(struct kern_softmax *op, float *y, const float *x)
{
    const int64_t cols = op->cols;
    for (int64_t r = 0; r < op->rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        int64_t len = visible(op, r);
        double mx = (double)xr[0], sum = 0.0;
        for (int64_t j = 1; j < len; j++)
            mx = fmax(mx, (double)xr[j]);
        for (int64_t j = 0; j < len; j++)
            sum += exp((double)xr[j] - mx);
        for (int64_t j = 0; j < len; j++)
            yr[j] = (float)(exp((double)xr[j] - mx) / sum);
        for (int64_t j = len; j < cols; j++)
            yr[j] = 0.0f;
    }
}

static void softmax_backward(struct kern_softmax *op, float *dx, const float *dy,
                             const float *y)
{
    const int64_t cols = op->cols;
    for (int64_t r = 0; r < op->rows; r++) {
        const float *yr = y + r * cols, *dyr = dy + r * cols;
        int64_t len = visible(op, r);
        double dot = 0.0;
        for (int64_t j = 0; j < len; j++)
            dot += (double)yr[j] * (double)dyr[j];
        for (int64_t j = 0; j < len; j++)
            dx[r * cols + j] = (float)((double)yr[j] * ((double)dyr[j] - dot));
        for (int64_t j = len; j < cols; j++)
            dx[r * cols + j] = 0.0f;
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

static void xent_backward(struct kern_xent *op, float *dlogits, const float *probs,
                          const int32_t *targets, float scale)
{
    const int64_t v = op->vocab;
    for (int64_t r = 0; r < op->rows; r++) {
        for (int64_t j = 0; j < v; j++) {
            double onehot = j == targets[r] ? 1.0 : 0.0;
            dlogits[r * v + j] = (float)((double)scale * ((double)probs[r * v + j] - onehot));
        }
    }
}

/* ---- the ops table ------------------------------------------------------------------------- */

static const char *isa(const struct kern_ctx *ctx)
{
    (void)ctx;
    return "reference C";
}

const struct kern_ops kern_ref_ops = {
    .name = "ref",
    .isa = isa,
    .op_free = free,
    .matmul_init = matmul_init,
    .matmul_run = matmul_run,
    .layernorm_forward = layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .gelu_forward = gelu_forward,
    .gelu_backward = gelu_backward,
    .softmax_forward = softmax_forward,
    .softmax_backward = softmax_backward,
    .xent_forward = xent_forward,
    .xent_backward = xent_backward,
};
