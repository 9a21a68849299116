/* check_kernels_xent: the cross-entropy, in check_kernels' test cases (check_kernels.c builds
 * the suite): hand-computed values of the reference backend and bit-identical reruns of layer
 * norm, GELU and cross-entropy together, in "core"; and, for the row kernels at every level,
 * oneDNN against the reference, finite-difference gradients and extreme logits.  Fixtures from
 * kernels_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kern_impl.h"
#include "kernels/kernels.h"

#include "kernels_fixtures.h"

static struct kern_xent *xent_new(struct kern_ctx *ctx, int64_t rows, int64_t vocab)
{
    struct kern_xent *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_xent_create(&op, ctx, rows, vocab, false, &err) == RZ_OK, "%s", err.msg);
    return op;
}

START_TEST(test_ref_xent_hand)
{
    /* row 0: uniform over 4 -> loss ln 4; row 1: [0, ln 3, -inf-ish...]: p = [1/4, 3/4, 0, 0]
     * roughly, with two very negative logits contributing ~e^-100 */
    const float logits[] = {0, 0, 0, 0, 0, (float)log(3.0), -100, -100};
    const int32_t targets[] = {2, 1};
    float losses[2], probs[8], dl[8];
    struct kern_xent *op = xent_new(g_ref, 2, 4);
    kern_xent_forward(op, losses, probs, logits, targets);
    ck_assert_double_eq_tol((double)losses[0], log(4.0), 1e-7);
    ck_assert_double_eq_tol((double)losses[1], log(4.0 / 3.0), 1e-7);
    ck_assert_double_eq_tol((double)probs[2], 0.25, 1e-7);
    ck_assert_double_eq_tol((double)probs[5], 0.75, 1e-7);
    kern_xent_backward(op, dl, NULL, probs, targets, 0.5f);
    ck_assert_double_eq_tol((double)dl[2], 0.5 * (0.25 - 1), 1e-7);
    ck_assert_double_eq_tol((double)dl[4], 0.5 * 0.25, 1e-7);
    ck_assert_double_eq_tol((double)dl[5], 0.5 * (0.75 - 1), 1e-7);
    kern_xent_destroy(op);
}
END_TEST

/* Compares the backends; the dnnl run is in place (probs and dlogits alias logits). */
static void compare_xent(int64_t rows, int64_t vocab, uint32_t seed)
{
    size_t n = (size_t)(rows * vocab);
    float *logits = vec(n), *probs = vec(n), *dl = vec(n);
    fill(logits, n, seed, -10.0f, 10.0f);
    int32_t *t = random_targets(rows, vocab, seed);
    float *inplace = copy_of(logits, n), *loss_r = vec((size_t)rows), *loss_d = vec((size_t)rows);
    float *db_r = random_vec((size_t)vocab, seed + 1), *db_d = copy_of(db_r, (size_t)vocab);
    float *want = copy_of(db_r, (size_t)vocab);
    struct kern_xent *r = xent_new(g_ref, rows, vocab), *o = xent_new(g_dnnl, rows, vocab);
    kern_xent_forward(r, loss_r, probs, logits, t);
    kern_xent_backward(r, dl, db_r, probs, t, 1.0f / (float)rows);
    kern_xent_forward(o, loss_d, inplace, inplace, t);
    assert_close(inplace, probs, n, TOL_DNNL, "xent probs");
    assert_close(loss_d, loss_r, (size_t)rows, TOL_DNNL, "xent losses");
    kern_xent_backward(o, inplace, db_d, inplace, t, 1.0f / (float)rows);
    assert_close(inplace, dl, n, TOL_DNNL, "xent dlogits");
    for (int64_t j = 0; j < vocab; j++) { /* dbias += column sums of dlogits */
        double sum = 0.0;
        for (int64_t i = 0; i < rows; i++)
            sum += (double)dl[i * vocab + j];
        want[j] = (float)((double)want[j] + sum);
    }
    assert_close(db_r, want, (size_t)vocab, 1e-6, "ref xent dbias");
    assert_close(db_d, want, (size_t)vocab, TOL_DNNL, "dnnl xent dbias");
    free(db_r), free(db_d), free(want);
    kern_xent_destroy(r);
    kern_xent_destroy(o);
    free(logits), free(probs), free(dl), free(t), free(inplace), free(loss_r), free(loss_d);
}

START_TEST(test_xent_dnnl_vs_ref)
{
    compare_xent(2048, 2048, 90);
    compare_xent(3, 7, 91);
}
END_TEST

static double xent_loss(struct kern_xent *op, const float *logits, const int32_t *t, int64_t rows,
                        float *probs, float scale)
{
    float losses[4];
    kern_xent_forward(op, losses, probs, logits, t);
    double s = 0.0;
    for (int64_t r = 0; r < rows; r++)
        s += (double)scale * (double)losses[r];
    return s;
}

START_TEST(test_xent_grad_fd)
{
    enum { R = 3, V = 6, N = R * V };
    float z[N], p[N], dl[N], losses[R];
    const int32_t t[R] = {0, 5, 2};
    const float scale = 1.0f / R;
    fill(z, N, 13, -3.0f, 3.0f);
    struct kern_xent *op = xent_new(g_ref, R, V);
    kern_xent_forward(op, losses, p, z, t);
    kern_xent_backward(op, dl, NULL, p, t, scale);
    for (size_t i = 0; i < N; i++) {
        float z0 = z[i];
        z[i] = z0 + FD_H;
        double up = (double)z[i], lp = xent_loss(op, z, t, R, p, scale);
        z[i] = z0 - FD_H;
        double um = (double)z[i], lm = xent_loss(op, z, t, R, p, scale);
        z[i] = z0;
        assert_grad((lp - lm) / (up - um), (double)dl[i], "xent dlogits", i);
    }
    kern_xent_destroy(op);
}
END_TEST

START_TEST(test_xent_extreme_logits)
{
    /* a target logit 200 below the max: the loss must be ~200, finite, on both backends */
    float z[4] = {100, -100, 0, 0}, p[4], loss;
    const int32_t t = 1;
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    for (int i = 0; i < 2; i++) {
        struct kern_xent *op = xent_new(ctx[i], 1, 4);
        kern_xent_forward(op, &loss, p, z, &t);
        ck_assert_double_eq_tol((double)loss, 200.0, 1e-4);
        ck_assert(p[0] == 1.0f && p[1] == 0.0f);
        kern_xent_destroy(op);
    }
}
END_TEST

START_TEST(test_layernorm_gelu_xent_deterministic)
{
    const int64_t rows = 2048, v = 2048;
    size_t n = (size_t)(rows * v);
    float *z = random_vec(n, 14), *p1 = vec(n), *p2 = vec(n), *l1 = vec(2048), *l2 = vec(2048);
    int32_t *t = random_targets(rows, v, 15);
    struct kern_xent *xo = xent_new(g_dnnl, rows, v);
    kern_xent_forward(xo, l1, p1, z, t);
    kern_xent_forward(xo, l2, p2, z, t);
    ck_assert(memcmp(p1, p2, n * sizeof *p1) == 0 && memcmp(l1, l2, 2048 * sizeof *l1) == 0);
    kern_xent_destroy(xo);
    struct kern_gelu *go = gelu_new(g_dnnl, rows, v);
    kern_gelu_forward(go, p1, z);
    kern_gelu_forward(go, p2, z);
    ck_assert(memcmp(p1, p2, n * sizeof *p1) == 0);
    kern_gelu_destroy(go);
    struct kern_layernorm *lo = ln_new(g_dnnl, rows, v, 1e-5f);
    float *gamma = random_vec((size_t)v, 16), *beta = random_vec((size_t)v, 17);
    kern_layernorm_forward(lo, p1, l1, l2, z, gamma, beta);
    kern_layernorm_forward(lo, p2, l1, l2, z, gamma, beta);
    ck_assert(memcmp(p1, p2, n * sizeof *p1) == 0);
    kern_layernorm_destroy(lo);
    free(z), free(p1), free(p2), free(l1), free(l2), free(t), free(gamma), free(beta);
}
END_TEST

void kernels_xent_core_tests(TCase *tc)
{
    tcase_add_test(tc, test_ref_xent_hand);
    tcase_add_test(tc, test_layernorm_gelu_xent_deterministic);
}

void kernels_xent_row_tests(TCase *tc)
{
    tcase_add_test(tc, test_xent_dnnl_vs_ref);
    tcase_add_test(tc, test_xent_grad_fd);
    tcase_add_test(tc, test_xent_extreme_logits);
}
