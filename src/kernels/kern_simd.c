/* kern_simd.c: the oneDNN backend's own row kernels, for what oneDNN has no primitive for (or
 * none that fits): the causal softmax and the softmax cross-entropy, on a vectorized exp.
 *
 * They skip the masked half of each causal row, produce exact zeros there, and compute the loss as
 * logsumexp - z[t].  Measured on 1 thread (Xeon, AVX-512): own causal 8192x128 fwd ~0.9-1.0 ms /
 * bwd ~0.4 ms vs oneDNN full-row softmax ~0.5-0.6 / ~0.43 ms, which for the causal case would
 * still need a -inf masked copy of x and a pass re-zeroing the masked outputs; own xent 2048x2048
 * fwd ~2.7 ms vs oneDNN softmax alone ~2.4 ms without the loss (and -log p is inf once p
 * underflows).
 *
 * Each row kernel is compiled for AVX-512, AVX2 and the baseline (target_clones); the loader
 * picks one per machine, so results are bit-identical run to run, and independent of the thread
 * count (rows are independent and go to threads in fixed chunks).  Deliberately not here: oneDNN
 * (kern_dnnl.c) and argument validation (kern_common.c). */
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

/* sum of y * dy over [0, len), reading the window [0, n) */
static inline float dot_row(const float *y, const float *dy, int64_t len, int64_t n)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; j++)
        s += j < len ? y[j] * dy[j] : 0.0f;
    return s;
}

/* The padded window of a causal row of visible length len. */
static inline int64_t window(int64_t len, int64_t cols)
{
    int64_t n = (len + ROW_PAD - 1) / ROW_PAD * ROW_PAD;
    return n < cols ? n : cols;
}

/* Rows [r0, r1) of the causal softmax; y is exactly 0 past the visible prefix. */
KERN_CLONES static void causal_forward_rows(float *y, const float *x, int64_t r0, int64_t r1,
                                            int64_t cols)
{
    for (int64_t r = r0; r < r1; r++) {
        int64_t len = r % cols + 1, n = window(len, cols);
        float *yr = y + r * cols;
        float m = row_max(x + r * cols, len, n);
        float s = exp_shift_sum(yr, x + r * cols, len, n, m);
        scale_row(yr, yr, n, 1.0f / s);
        memset(yr + n, 0, (size_t)(cols - n) * sizeof *yr);
    }
}

/* Rows [r0, r1) of dx = y * (dy - sum(y * dy)) over the visible prefix, 0 past it. */
KERN_CLONES static void causal_backward_rows(float *dx, const float *dy, const float *y,
                                             int64_t r0, int64_t r1, int64_t cols)
{
    for (int64_t r = r0; r < r1; r++) {
        int64_t len = r % cols + 1, n = window(len, cols), o = r * cols;
        float dot = dot_row(y + o, dy + o, len, n);
#pragma omp simd
        for (int64_t j = 0; j < n; j++)
            dx[o + j] = j < len ? y[o + j] * (dy[o + j] - dot) : 0.0f;
        memset(dx + o + n, 0, (size_t)(cols - n) * sizeof *dx);
    }
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

/* Rows [r0, r1): dlogits = scale * (probs - onehot(targets)); dlogits may alias probs. */
KERN_CLONES static void xent_backward_rows(float *dlogits, const float *probs,
                                           const int32_t *targets, float scale, int64_t r0,
                                           int64_t r1, int64_t v)
{
    for (int64_t r = r0; r < r1; r++) {
        float pt = probs[r * v + targets[r]];
        scale_row(dlogits + r * v, probs + r * v, v, scale);
        dlogits[r * v + targets[r]] = scale * (pt - 1.0f);
    }
}

/* Rows go to threads in fixed chunks; each row is computed the same way by any thread. */
#define ROW_CHUNK 64

static int64_t chunk_end(int64_t c, int64_t rows)
{
    return (c + 1) * ROW_CHUNK < rows ? (c + 1) * ROW_CHUNK : rows;
}

void kern_simd_causal_forward(const struct kern_softmax *op, float *y, const float *x)
{
    int64_t chunks = (op->rows + ROW_CHUNK - 1) / ROW_CHUNK;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++)
        causal_forward_rows(y, x, c * ROW_CHUNK, chunk_end(c, op->rows), op->cols);
}

void kern_simd_causal_backward(const struct kern_softmax *op, float *dx, const float *dy,
                               const float *y)
{
    int64_t chunks = (op->rows + ROW_CHUNK - 1) / ROW_CHUNK;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++)
        causal_backward_rows(dx, dy, y, c * ROW_CHUNK, chunk_end(c, op->rows), op->cols);
}

void kern_simd_xent_forward(struct kern_xent *op, float *losses, float *probs,
                            const float *logits, const int32_t *targets)
{
    int64_t chunks = (op->rows + ROW_CHUNK - 1) / ROW_CHUNK;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++)
        xent_forward_rows(losses, probs, logits, targets, c * ROW_CHUNK, chunk_end(c, op->rows),
                          op->vocab);
}

void kern_simd_xent_backward(struct kern_xent *op, float *dlogits, const float *probs,
                             const int32_t *targets, float scale)
{
    int64_t chunks = (op->rows + ROW_CHUNK - 1) / ROW_CHUNK;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++)
        xent_backward_rows(dlogits, probs, targets, scale, c * ROW_CHUNK, chunk_end(c, op->rows),
                           op->vocab);
}
