/* check_kernels_norm: layer normalization and GELU, in check_kernels' test cases
 * (check_kernels.c builds the suite): hand-computed values of the reference backend, in "core";
 * and, for the row kernels at every level, oneDNN against the reference, finite-difference
 * gradients and GELU's accuracy.  Fixtures from kernels_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kern_impl.h"
#include "kernels/kernels.h"

#include "kernels_fixtures.h"

/* ---- layer normalization ------------------------------------------------------------------- */

START_TEST(test_ref_layernorm_hand)
{
    /* x = [1 2 3 4]: mean 2.5, biased var 1.25, xhat = [-3 -1 1 3] / sqrt(5) */
    const float x[] = {1, 2, 3, 4}, gamma[] = {2, 2, 2, 2}, beta[] = {1, 1, 1, 1};
    float y[4], mean, var;
    struct kern_layernorm *op = ln_new(g_ref, 1, 4, 0.0f);
    kern_layernorm_forward(op, y, &mean, &var, x, gamma, beta);
    ck_assert(mean == 2.5f);
    ck_assert(var == 1.25f);
    const double s5 = sqrt(5.0);
    const double want[] = {1 - 6 / s5, 1 - 2 / s5, 1 + 2 / s5, 1 + 6 / s5};
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol((double)y[i], want[i], 1e-6);
    kern_layernorm_destroy(op);
}
END_TEST

static void compare_layernorm(int64_t rows, int64_t cols, uint32_t seed)
{
    size_t n = (size_t)(rows * cols);
    float *x = random_vec(n, seed), *dy = random_vec(n, seed + 1);
    float *gamma = random_vec((size_t)cols, seed + 2), *beta = random_vec((size_t)cols, seed + 3);
    float *y[2], *mean[2], *var[2], *dx[2], *dg[2], *db[2], *acc[2];
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    for (int i = 0; i < 2; i++) {
        y[i] = vec(n), dx[i] = vec(n), mean[i] = vec((size_t)rows), var[i] = vec((size_t)rows);
        dg[i] = random_vec((size_t)cols, seed + 4), db[i] = random_vec((size_t)cols, seed + 5);
        acc[i] = random_vec(n, seed + 6);
        struct kern_layernorm *op = ln_new(ctx[i], rows, cols, 1e-5f);
        kern_layernorm_forward(op, y[i], mean[i], var[i], x, gamma, beta);
        /* both backwards from the reference statistics, so only the backward is compared;
         * dgamma and dbeta add to what they held, acc gets dx added */
        kern_layernorm_backward(op, dx[i], dg[i], db[i], dy, x, mean[0], var[0], gamma, false);
        kern_layernorm_backward(op, acc[i], dg[i], db[i], dy, x, mean[0], var[0], gamma, true);
        kern_layernorm_destroy(op);
    }
    float *want = random_vec(n, seed + 6); /* acc's initial values + dx */
    for (size_t j = 0; j < n; j++)
        want[j] += dx[0][j];
    assert_close(acc[0], want, n, 1e-6, "ref layernorm dx accumulated");
    assert_close(acc[1], want, n, TOL_DNNL, "dnnl layernorm dx accumulated");
    free(want), free(acc[0]), free(acc[1]);
    assert_close(y[1], y[0], n, TOL_DNNL, "layernorm y");
    assert_close(mean[1], mean[0], (size_t)rows, TOL_DNNL, "layernorm mean");
    assert_close(var[1], var[0], (size_t)rows, TOL_DNNL, "layernorm var");
    assert_close(dx[1], dx[0], n, TOL_DNNL, "layernorm dx");
    assert_close(dg[1], dg[0], (size_t)cols, TOL_DNNL, "layernorm dgamma");
    assert_close(db[1], db[0], (size_t)cols, TOL_DNNL, "layernorm dbeta");
    for (int i = 0; i < 2; i++) {
        free(y[i]), free(dx[i]), free(mean[i]), free(var[i]), free(dg[i]), free(db[i]);
    }
    free(x), free(dy), free(gamma), free(beta);
}

START_TEST(test_layernorm_dnnl_vs_ref)
{
    compare_layernorm(2048, 256, 10);
    compare_layernorm(3, 5, 20);
}
END_TEST

/* L = sum(w * layernorm(x; gamma, beta)) for the FD checks. */
static double ln_loss(struct kern_layernorm *op, const float *w, const float *x,
                      const float *gamma, const float *beta, size_t n)
{
    float y[15], mean[3], var[3];
    kern_layernorm_forward(op, y, mean, var, x, gamma, beta);
    return dot_d(w, y, n);
}

/* Central difference of ln_loss in p[i] (p is x, gamma or beta). */
static double ln_fd(struct kern_layernorm *op, const float *w, float *x, float *gamma,
                    float *beta, size_t n, float *p, size_t i)
{
    float p0 = p[i];
    p[i] = p0 + FD_H;
    double up = (double)p[i], lp = ln_loss(op, w, x, gamma, beta, n);
    p[i] = p0 - FD_H;
    double um = (double)p[i], lm = ln_loss(op, w, x, gamma, beta, n);
    p[i] = p0;
    return (lp - lm) / (up - um);
}

START_TEST(test_layernorm_grad_fd)
{
    enum { R = 3, C = 5, N = R * C };
    float x[N], w[N], gamma[C], beta[C], y[N], mean[R], var[R], dx[N], dg[C] = {0}, db[C] = {0};
    fill(x, N, 1, -2.0f, 2.0f);
    fill(w, N, 2, -1.0f, 1.0f);
    fill(gamma, C, 3, 0.5f, 1.5f);
    fill(beta, C, 4, -1.0f, 1.0f);
    struct kern_layernorm *op = ln_new(g_ref, R, C, 1e-5f);
    kern_layernorm_forward(op, y, mean, var, x, gamma, beta);
    kern_layernorm_backward(op, dx, dg, db, w, x, mean, var, gamma, false);
    for (size_t i = 0; i < N; i++)
        assert_grad(ln_fd(op, w, x, gamma, beta, N, x, i), (double)dx[i], "layernorm dx", i);
    for (size_t j = 0; j < C; j++) {
        assert_grad(ln_fd(op, w, x, gamma, beta, N, gamma, j), (double)dg[j], "dgamma", j);
        assert_grad(ln_fd(op, w, x, gamma, beta, N, beta, j), (double)db[j], "dbeta", j);
    }
    kern_layernorm_destroy(op);
}
END_TEST

/* ---- GELU ---------------------------------------------------------------------------------- */

START_TEST(test_ref_gelu_hand)
{
    /* gelu(x) = x Phi(x): Phi(1) = 0.8413447461, Phi(-1) = 0.1586552539, Phi(2) = 0.9772498681 */
    const float x[] = {0, 1, -1, 2};
    const double want[] = {0, 0.8413447461, -0.1586552539, 1.9544997361};
    float y[4], dx[4], db[2] = {0.25f, 0};
    const float dy[] = {1, 1, 1, 1};
    struct kern_gelu *op = gelu_new(g_ref, 2, 2);
    kern_gelu_forward(op, y, x);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol((double)y[i], want[i], 1e-6);
    kern_gelu_backward(op, dx, db, dy, x);
    ck_assert_double_eq_tol((double)dx[0], 0.5, 1e-7);
    /* gelu'(1) = Phi(1) + phi(1) = 0.8413447461 + 0.2419707245 */
    ck_assert_double_eq_tol((double)dx[1], 1.0833154706, 1e-6);
    /* the bias gradient adds each column: 0.25 + gelu'(0) + gelu'(-1), 0 + gelu'(1) + gelu'(2) */
    ck_assert_double_eq_tol((double)db[0], 0.25 + 0.5 + (1.0 - 1.0833154706), 1e-6);
    ck_assert_double_eq_tol((double)db[1], 1.0833154706 + (double)dx[3], 1e-6);
    kern_gelu_destroy(op);
}
END_TEST

/* The oneDNN backend's GELU against the reference: outputs within TOL_DNNL; its bias gradient is
 * each column of its own dx summed in row order, to the bit (what kern_colsum_round gives). */
static void compare_gelu(int64_t rows, int64_t cols, uint32_t seed)
{
    size_t n = (size_t)(rows * cols);
    float *x = vec(n), *dy = random_vec(n, seed + 1);
    fill(x, n, seed, -6.0f, 6.0f);
    float *y[2], *dx[2], *db[2];
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    for (int i = 0; i < 2; i++) {
        y[i] = vec(n), dx[i] = vec(n), db[i] = vec((size_t)cols);
        fill(db[i], (size_t)cols, seed + 2, -1.0f, 1.0f);
        struct kern_gelu *op = gelu_new(ctx[i], rows, cols);
        kern_gelu_forward(op, y[i], x);
        kern_gelu_backward(op, dx[i], db[i], dy, x);
        kern_gelu_destroy(op);
    }
    assert_close(y[1], y[0], n, TOL_DNNL, "gelu y");
    assert_close(dx[1], dx[0], n, TOL_DNNL, "gelu dx");
    assert_close(db[1], db[0], (size_t)cols, TOL_DNNL, "gelu dbias");
    float *sums = vec((size_t)cols);
    fill(sums, (size_t)cols, seed + 2, -1.0f, 1.0f);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            sums[j] += dx[1][r * cols + j];
    ck_assert(memcmp(sums, db[1], (size_t)cols * sizeof *sums) == 0);
    for (int i = 0; i < 2; i++)
        free(y[i]), free(dx[i]), free(db[i]);
    free(x), free(dy), free(sums);
}

START_TEST(test_gelu_dnnl_vs_ref)
{
    compare_gelu(2048, 512, 30);
    compare_gelu(1, 7, 40);
    compare_gelu(65, 37, 41); /* a partial chunk of rows, a band that is not whole vectors */
}
END_TEST

/* The oneDNN backend's own GELU (kern_simd.c: erf by Abramowitz & Stegun 7.1.26 on the
 * vectorized exp) against libm in double on a dense grid over [-12, 12], where the GELU leaves
 * x or 0 within fp32's resolution: |gelu error| <= 2e-7 (1 + |x|), |gelu' error| <= 4e-7
 * (measured: 1.02e-7 and 2.85e-7). */
START_TEST(test_gelu_accuracy)
{
    enum { N = 240001 };
    float *x = vec(N), *y = vec(N), *dx = vec(N), *ones = vec(N);
    for (int i = 0; i < N; i++) {
        x[i] = -12.0f + 24.0f * (float)i / (float)(N - 1);
        ones[i] = 1.0f;
    }
    struct kern_gelu *op = gelu_new(g_dnnl, 1, N);
    kern_gelu_forward(op, y, x);
    kern_gelu_backward(op, dx, NULL, ones, x);
    double worst_y = 0.0, worst_d = 0.0;
    for (int i = 0; i < N; i++) {
        double v = (double)x[i], cdf = 0.5 * (1.0 + erf(v / sqrt(2.0)));
        double slope = cdf + v * exp(-0.5 * v * v) * 0.39894228040143267794;
        worst_y = fmax(worst_y, fabs((double)y[i] - v * cdf) / (1.0 + fabs(v)));
        worst_d = fmax(worst_d, fabs((double)dx[i] - slope));
    }
    ck_assert_msg(worst_y <= 2e-7, "gelu: max |error| / (1 + |x|) = %g", worst_y);
    ck_assert_msg(worst_d <= 4e-7, "gelu': max |error| = %g", worst_d);
    x[0] = 0.0f, x[1] = -INFINITY, x[2] = INFINITY, x[3] = NAN, x[4] = -30.0f;
    kern_gelu_forward(op, y, x);
    ck_assert(y[0] == 0.0f && y[2] == INFINITY && isnan(y[3]) && y[4] == 0.0f);
    kern_gelu_destroy(op);
    free(x), free(y), free(dx), free(ones);
}
END_TEST

START_TEST(test_gelu_grad_fd)
{
    enum { N = 9 };
    float x[N] = {0, 0.5f, -0.5f, 1, -1, 2.5f, -2.5f, 3, -4}, w[N], y[N], dx[N];
    fill(w, N, 5, -1.0f, 1.0f);
    struct kern_gelu *op = gelu_new(g_ref, 3, 3);
    kern_gelu_backward(op, dx, NULL, w, x);
    for (size_t i = 0; i < N; i++) {
        float x0 = x[i];
        x[i] = x0 + FD_H;
        double up = (double)x[i];
        kern_gelu_forward(op, y, x);
        double lp = dot_d(w, y, N);
        x[i] = x0 - FD_H;
        double um = (double)x[i];
        kern_gelu_forward(op, y, x);
        double lm = dot_d(w, y, N);
        x[i] = x0;
        assert_grad((lp - lm) / (up - um), (double)dx[i], "gelu dx", i);
    }
    kern_gelu_destroy(op);
}
END_TEST

void kernels_norm_core_tests(TCase *tc)
{
    tcase_add_test(tc, test_ref_layernorm_hand);
    tcase_add_test(tc, test_ref_gelu_hand);
}

void kernels_norm_row_tests(TCase *tc)
{
    tcase_add_test(tc, test_layernorm_dnnl_vs_ref);
    tcase_add_test(tc, test_layernorm_grad_fd);
    tcase_add_test(tc, test_gelu_dnnl_vs_ref);
    tcase_add_test(tc, test_gelu_accuracy);
    tcase_add_test(tc, test_gelu_grad_fd);
}
