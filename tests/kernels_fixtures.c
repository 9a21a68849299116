/* kernels_fixtures.c: the fixtures of check_kernels (see kernels_fixtures.h), used by
 * check_kernels.c and its other files. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kernels/kern_impl.h"
#include "kernels/kernels.h"

#include "kernels_fixtures.h"

struct kern_ctx *g_ref, *g_dnnl;

void setup(void)
{
    struct rz_err err;
    ck_assert_int_eq(kern_ctx_create(&g_ref, KERN_REF, &err), RZ_OK);
    ck_assert_msg(kern_ctx_create(&g_dnnl, KERN_DNNL, &err) == RZ_OK, "%s", err.msg);
}

void teardown(void)
{
    kern_ctx_destroy(g_ref);
    kern_ctx_destroy(g_dnnl);
    g_ref = g_dnnl = NULL;
}

float *vec(size_t n)
{
    float *p = rz_alloc_aligned(n * sizeof(float));
    ck_assert_ptr_nonnull(p);
    return p;
}

float *copy_of(const float *x, size_t n)
{
    float *p = vec(n);
    memcpy(p, x, n * sizeof *p);
    return p;
}

void fill(float *x, size_t n, uint32_t seed, float lo, float hi)
{
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * ((float)(s >> 8) / 16777216.0f);
    }
}

float *random_vec(size_t n, uint32_t seed)
{
    float *p = vec(n);
    fill(p, n, seed, -1.0f, 1.0f);
    return p;
}

static double max_abs(const float *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)x[i]));
    return m;
}

void assert_close(const float *got, const float *ref, size_t n, double tol,
                         const char *what)
{
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        if (!(d <= worst)) {
            worst = d;
            at = i;
        }
    }
    double bound = tol * (1.0 + max_abs(ref, n));
    ck_assert_msg(worst <= bound, "%s: max |got - ref| = %g at %zu (got %g, ref %g) > %g", what,
                  worst, at, (double)got[at], (double)ref[at], bound);
}

void assert_grad(double fd, double an, const char *what, size_t i)
{
    ck_assert_msg(fabs(fd - an) <= TOL_FD * (1.0 + fabs(an)),
                  "%s[%zu]: finite difference %.8g vs analytic %.8g", what, i, fd, an);
}

double dot_d(const float *w, const float *y, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)w[i] * (double)y[i];
    return s;
}

struct kern_matmul *mm_new(struct kern_ctx *ctx, const struct kern_matmul_desc *d)
{
    struct kern_matmul *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_matmul_create(&op, ctx, d, &err) == RZ_OK, "%s", err.msg);
    return op;
}

const struct kern_matmul_desc seed_mm[] = {
    /* forward Y (BT, out) = X (BT, in) W^T + b */
    {1, 2048, 768, 256, false, true, 1.0f, true, false, false},
    {1, 2048, 256, 256, false, true, 1.0f, true, false, false},
    {1, 2048, 512, 256, false, true, 1.0f, true, false, false},
    {1, 2048, 256, 512, false, true, 1.0f, true, false, false},
    {1, 2048, 2048, 256, false, true, 1.0f, true, false, false},
    /* backward data dX (BT, in) = dY (BT, out) W (out, in) */
    {1, 2048, 256, 768, false, false, 1.0f, false, false, false},
    {1, 2048, 256, 512, false, false, 1.0f, false, false, false},
    {1, 2048, 512, 256, false, false, 1.0f, false, false, false},
    {1, 2048, 256, 2048, false, false, 1.0f, false, false, false},
    /* backward weights dW (out, in) += dY^T (out, BT) X (BT, in) */
    {1, 768, 256, 2048, true, false, 1.0f, false, true, false},
    {1, 256, 256, 2048, true, false, 1.0f, false, true, false},
    {1, 512, 256, 2048, true, false, 1.0f, false, true, false},
    {1, 256, 512, 2048, true, false, 1.0f, false, true, false},
    {1, 2048, 256, 2048, true, false, 1.0f, false, true, false},
    /* attention: S = Q K^T / 8; O = P V and dQ = dS K; dP = dO V^T; dV = P^T dO and dK = dS^T Q */
    {64, 128, 128, 64, false, true, 0.125f, false, false, false},
    {64, 128, 64, 128, false, false, 1.0f, false, false, false},
    {64, 128, 128, 64, false, true, 1.0f, false, false, false},
    {64, 128, 64, 128, true, false, 1.0f, false, false, false},
};

struct kern_layernorm *ln_new(struct kern_ctx *ctx, int64_t rows, int64_t cols, float eps)
{
    struct kern_layernorm *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_layernorm_create(&op, ctx, rows, cols, eps, false, &err) == RZ_OK, "%s", err.msg);
    return op;
}

struct kern_gelu *gelu_new(struct kern_ctx *ctx, int64_t rows, int64_t cols)
{
    struct kern_gelu *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_gelu_create(&op, ctx, rows, cols, false, &err) == RZ_OK, "%s", err.msg);
    return op;
}

int32_t *random_targets(int64_t rows, int64_t vocab, uint32_t seed)
{
    int32_t *t = malloc((size_t)rows * sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint32_t s = seed;
    for (int64_t r = 0; r < rows; r++) {
        s = s * 1664525u + 1013904223u;
        t[r] = (int32_t)((s >> 8) % (uint32_t)vocab);
    }
    return t;
}
